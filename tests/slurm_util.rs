//! A real one-node Slurm (munged, slurmctld, slurmd) in a temporary directory, stopped on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The daemons, and the SLURM_CONF their clients use.
pub struct Slurm {
    pub conf: PathBuf,
    children: Vec<Child>,
}

/// Why a Slurm cannot be started here, if it cannot.
pub fn missing() -> Option<String> {
    if !crate::util::is_root() {
        return Some("slurmd and munged run as root here".into());
    }
    for p in [
        "/usr/sbin/munged",
        "/usr/sbin/mungekey",
        "/usr/sbin/slurmctld",
        "/usr/sbin/slurmd",
        "/usr/bin/sbatch",
    ] {
        if !Path::new(p).exists() {
            return Some(format!("{p} is missing (apt-get install slurm-wlm munge)"));
        }
    }
    None
}

/// A free TCP port on localhost.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn spawn(cmd: &mut Command, log: &Path) -> Child {
    let out = std::fs::File::create(log).unwrap();
    cmd.stdout(out.try_clone().unwrap())
        .stderr(out)
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

impl Slurm {
    /// Starts munged on its own socket, then slurmctld and slurmd in the foreground, all
    /// under `dir`; waits until the node is idle.
    pub fn start(dir: &Path) -> Slurm {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
        for d in ["state", "spool"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let key = dir.join("munge.key");
        let ok = Command::new("/usr/sbin/mungekey")
            .arg("--create")
            .arg(format!("--keyfile={}", key.display()))
            .status()
            .unwrap();
        assert!(ok.success(), "mungekey failed");
        let sock = dir.join("munge.sock");
        let mut children = vec![spawn(
            Command::new("/usr/sbin/munged")
                .args(["-F", "-f"])
                .arg(format!("--socket={}", sock.display()))
                .arg(format!("--key-file={}", key.display()))
                .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
                .arg(format!("--log-file={}", dir.join("munged.log").display()))
                .arg(format!("--seed-file={}", dir.join("munged.seed").display())),
            &dir.join("munged.out"),
        )];
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let d = dir.display();
        let conf = dir.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=schedlabtest\nSlurmctldHost={host}\nAuthType=auth/munge\nAuthInfo=socket={}\nCredType=cred/munge\n\
                 SlurmUser=root\nSlurmdUser=root\nSlurmctldPort={}\nSlurmdPort={}\nStateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
                 SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\nSlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
                 ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\nSchedulerType=sched/builtin\n\
                 ReturnToService=2\nMpiDefault=none\nJobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n\
                 NodeName={host} CPUs={cpus} State=UNKNOWN\nPartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
                sock.display(),
                free_port(),
                free_port()
            ),
        )
        .unwrap();
        let wait = Instant::now();
        while !sock.exists() {
            assert!(
                wait.elapsed() < Duration::from_secs(20),
                "munged did not create {}",
                sock.display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        children.push(spawn(
            Command::new("/usr/sbin/slurmctld").args(["-D", "-i"]).env("SLURM_CONF", &conf),
            &dir.join("slurmctld.out"),
        ));
        children.push(spawn(
            Command::new("/usr/sbin/slurmd").arg("-D").env("SLURM_CONF", &conf),
            &dir.join("slurmd.out"),
        ));
        let slurm = Slurm { conf, children };
        let wait = Instant::now();
        loop {
            let out = Command::new("sinfo")
                .args(["-h", "-o", "%t"])
                .env("SLURM_CONF", &slurm.conf)
                .output()
                .unwrap();
            if String::from_utf8_lossy(&out.stdout).trim() == "idle" {
                break;
            }
            assert!(
                wait.elapsed() < Duration::from_secs(60),
                "the Slurm node never became idle: {}",
                slurm.logs(dir)
            );
            std::thread::sleep(Duration::from_millis(300));
        }
        slurm
    }

    /// The daemons' logs, for a failing assertion.
    pub fn logs(&self, dir: &Path) -> String {
        ["munged.out", "slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"]
            .iter()
            .map(|f| {
                format!("--- {f}\n{}", std::fs::read_to_string(dir.join(f)).unwrap_or_default())
            })
            .collect()
    }

    /// Waits until none of `jobs` is queued or running (squeue -j lists finished jobs too,
    /// for MinJobAge: ask for the unfinished states).
    pub fn wait(&self, jobs: &[String], limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            let out = Command::new("squeue")
                .args(["-h", "-o", "%i", "-t", "PD,CF,R,CG,S", "-j", &jobs.join(",")])
                .env("SLURM_CONF", &self.conf)
                .output()
                .unwrap();
            if out.status.success() && String::from_utf8_lossy(&out.stdout).trim().is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        false
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        // slurmd first, munged last: each stops by its own pid.
        for c in self.children.iter_mut().rev() {
            // SAFETY: signalling a child this helper started and has not reaped.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let _ = c.wait();
        }
    }
}
