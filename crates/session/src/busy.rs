//! The look at the machine that names a busy one before the first cell: begun when the
//! preflight begins, ended just before the first release ([`schedlab_runner::Progress::prepared`]),
//! so its window is time the run spends anyway (the preflight, the database, the first
//! cell's spawn), waited out only where that is too short to judge
//! ([`schedlab_analysis::noise::LOOK_LEAST`]).

use schedlab_sys::look::Started;
use schedlab_sys::Root;

/// A busy-machine look under way.
#[derive(Debug)]
pub struct BusyLook {
    started: Started,
    root: Root,
}

impl BusyLook {
    /// Begins the look at the machine under `root`; None without /proc/stat.
    pub fn start(root: &Root) -> Option<BusyLook> {
        let started = schedlab_sys::look::start(root)?;
        Some(BusyLook { started, root: root.clone() })
    }

    /// Ends the look on a machine of `cpus` CPUs: the warning that names a busy machine's
    /// busiest processes, if it was busy. The phase marks split the time before it (the
    /// first cell's spawn) from its own (the second snapshot and any wait).
    pub fn finish(self, cpus: usize) -> Option<String> {
        schedlab_sys::phases::mark("first spawn");
        let warning = self
            .started
            .finish(&self.root, schedlab_analysis::noise::LOOK_LEAST)
            .and_then(|l| schedlab_analysis::noise::busy(&l, cpus))
            .and_then(|b| schedlab_report::noise::busy_warning(&b));
        schedlab_sys::phases::mark("look");
        warning
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preflight::Checked;
    use crate::tests::Lab;
    use crate::Observer;
    use schedlab_model::{CellRecord, Environment};
    use schedlab_runner::{MockExecutor, Progress};
    use schedlab_spec::{Plan, Step};
    use std::path::{Path, PathBuf};

    /// A fake /proc: the machine's counters, and a busy loop `sh` 4711 with `ticks` so far.
    fn write_proc(dir: &Path, cpu: &str, ticks: u64) {
        std::fs::create_dir_all(dir.join("proc/4711")).unwrap();
        std::fs::write(dir.join("proc/stat"), format!("cpu  {cpu}\nprocs_running 2\n")).unwrap();
        let stat =
            format!("4711 (sh) R 1 4711 4711 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 500 0 0\n");
        std::fs::write(dir.join("proc/4711/stat"), stat).unwrap();
    }

    /// What the run said, in order; the loop spins in the fake /proc once the first step has
    /// started (after the preflight and the database).
    struct Spun {
        proc: PathBuf,
        said: Vec<String>,
    }

    impl Progress for Spun {
        fn step_started(&mut self, _: &Plan, _: &Step, done: usize, _: usize) {
            if done == 0 {
                // 100 ms of 2 CPUs: 19 of 20 ticks busy, 19 of them the loop's.
                write_proc(&self.proc, "1019 0 500 8001 0 0 0 0", 119);
            }
            self.said.push(format!("start {done}"));
        }
        fn step_finished(&mut self, rec: &CellRecord) {
            self.said.push(format!("finished {}", rec.ordinal));
        }
        fn warn(&mut self, msg: &str) {
            self.said.push(msg.to_string());
        }
    }

    impl Observer for Spun {}

    #[test]
    fn the_look_spans_the_preflight_to_the_first_release_and_is_said_before_its_record() {
        let lab = Lab::new();
        let proc = lab.dir.path().join("fake");
        write_proc(&proc, "1000 0 500 8000 0 0 0 0", 100);
        let look = BusyLook::start(&Root::new(&proc));
        let (session, o) = (lab.session(), lab.options());
        let env = Environment { cpus: 2, ..Default::default() };
        let mut p = session.prepare_checked(lab.spec(), &o, |_| Ok(Checked::assumed(env))).unwrap();
        p.look = look;
        let mut spun = Spun { proc, said: Vec::new() };
        let m = session.measure(p, &o, &mut MockExecutor::new(), &mut spun).unwrap();
        let busy = "the machine is busy before the first cell: 1 process uses 190% of 200% CPU \
                    (sh 4711 190%); the run queue holds 1 task besides schedlab; results may be \
                    inaccurate";
        assert_eq!(spun.said[..3], ["start 0", busy, "finished 0"], "{:?}", spun.said);
        assert_eq!(spun.said.iter().filter(|s| s.contains("busy")).count(), 1, "said once");
        let run = m.store.run(m.run_id).unwrap().unwrap();
        assert!(run.warnings.iter().any(|w| w == busy), "stored: {:?}", run.warnings);
    }
}
