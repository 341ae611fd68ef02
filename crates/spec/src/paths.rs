//! Paths in a spec: each resolves against the spec file's directory, so a run finds the
//! same files from any working directory, and each is checked against the filesystem
//! before anything runs.

use crate::error::SpecError;
use crate::validate::Location;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What a path in the spec must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKey {
    /// `dir`: the parent of the experiment's directory: a directory, or creatable as one.
    Dir,
    /// `[device] path`: an existing directory or block device.
    Device,
    /// A command workload's `argv[0]` with a '/': an executable file.
    Program,
    /// The bare `argv[0]` of a command whose output is parsed (an original benchmark): an
    /// executable file in a directory of `PATH`.
    Original(schedlab_plan::OutputParser),
}

impl PathKey {
    /// The key as written in the spec.
    pub fn name(self) -> &'static str {
        match self {
            PathKey::Dir => "dir",
            PathKey::Device => "[device] path",
            PathKey::Program | PathKey::Original(_) => "argv[0]",
        }
    }
}

/// One path of the spec, resolved, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathUse {
    /// Which key it is.
    pub key: PathKey,
    /// The path, resolved against the spec's directory.
    pub path: PathBuf,
    /// The value's span in the source.
    pub span: Location,
}

/// `written` resolved against `base` (the spec file's directory); `.` components and
/// doubled slashes dropped. An absolute path stays as it is.
pub(crate) fn resolve(base: &Path, written: &str) -> PathBuf {
    base.join(written).components().collect()
}

/// The kernel interfaces that look like directories but are no storage, by the filesystem
/// type `/proc/self/mountinfo` gives them: a directory made there is a cgroup, a tracing
/// instance or nothing at all, and what schedlab creates in it cannot be removed as files are.
const KERNEL_FS: [(&str, &str); 10] = [
    ("proc", "proc"),
    ("sysfs", "sysfs"),
    ("cgroup", "cgroupfs"),
    ("cgroup2", "cgroupfs"),
    ("tracefs", "tracefs"),
    ("debugfs", "debugfs"),
    ("securityfs", "securityfs"),
    ("configfs", "configfs"),
    ("bpf", "bpffs"),
    ("pstore", "pstore"),
];

/// Which kernel interface (proc, sysfs, cgroupfs, tracefs, debugfs, ...) holds `path`, or
/// its nearest existing ancestor when it does not exist yet; None on an ordinary filesystem.
pub fn kernel_fs(path: &Path) -> Option<&'static str> {
    let existing = path.ancestors().find(|a| std::fs::symlink_metadata(a).is_ok())?;
    let real = std::fs::canonicalize(existing).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    fs_type_of(&mounts, &real)
        .and_then(|t| KERNEL_FS.iter().find(|(name, _)| *name == t))
        .map(|(_, shown)| *shown)
}

/// The filesystem type of the mount that holds `path` (canonical), from mountinfo's text:
/// the mount point that is its longest prefix, the last such line when mounts are stacked.
fn fs_type_of<'a>(mountinfo: &'a str, path: &Path) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(point), Some(dash)) = (fields.get(4), fields.iter().position(|f| *f == "-"))
        else {
            continue;
        };
        let Some(fs) = fields.get(dash + 1) else { continue };
        // mountinfo escapes a space, tab, newline and backslash in octal.
        let point = point
            .replace("\\040", " ")
            .replace("\\011", "\t")
            .replace("\\012", "\n")
            .replace("\\134", "\\");
        let point = Path::new(&point);
        if path.starts_with(point) && best.is_none_or(|(len, _)| point.as_os_str().len() >= len) {
            best = Some((point.as_os_str().len(), fs));
        }
    }
    best.map(|(_, fs)| fs)
}

/// A directory on a kernel interface (proc, sysfs, cgroupfs, tracefs, ...), refused for the
/// experiment's files; the message names the key or flag, the path and the filesystem.
#[derive(Debug, Clone, PartialEq)]
pub struct OnKernelFs(String);

impl std::fmt::Display for OnKernelFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OnKernelFs {}

/// Refuses a directory for the experiment's files on a kernel interface (`what` names the key
/// or flag that gave it, e.g. `--dir`).
pub fn not_kernel_fs(what: &str, dir: &Path) -> Result<(), OnKernelFs> {
    match kernel_fs(dir) {
        Some(fs) => Err(OnKernelFs(format!(
            "{what}: {} is on {fs}, a kernel interface, not storage: what schedlab would create there could not be removed as files are; choose a directory on a real filesystem",
            dir.display()
        ))),
        None => Ok(()),
    }
}

/// What is wrong with `u` on this machine, if anything.
fn problem(u: &PathUse) -> Option<String> {
    let p = u.path.display();
    if matches!(u.key, PathKey::Dir | PathKey::Device) {
        if let Err(e) = not_kernel_fs(u.key.name(), &u.path) {
            return Some(e.to_string());
        }
    }
    match u.key {
        PathKey::Dir => match std::fs::metadata(&u.path) {
            Ok(m) if m.is_dir() => None,
            Ok(_) => Some(format!("dir: {p} is not a directory")),
            Err(_) => {
                // Created with its parents at the run's start: the nearest existing ancestor
                // must be a directory.
                let ancestor =
                    u.path.ancestors().skip(1).find(|a| std::fs::symlink_metadata(a).is_ok())?;
                match std::fs::metadata(ancestor) {
                    Ok(m) if m.is_dir() => None,
                    _ => Some(format!(
                        "dir: {p} cannot be created: {} is not a directory",
                        ancestor.display()
                    )),
                }
            }
        },
        PathKey::Device => match std::fs::metadata(&u.path) {
            Ok(m) if m.is_dir() || m.file_type().is_block_device() => None,
            Ok(_) => Some(format!("device path {p} is neither a directory nor a block device")),
            Err(e) => Some(format!("device path {p}: {e}")),
        },
        PathKey::Original(parser) => {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let found = std::env::split_paths(&path).any(|d| {
                std::fs::metadata(d.join(&u.path))
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            });
            let how = match parser {
                schedlab_plan::OutputParser::Hackbench => "hackbench is in rt-tests (apt-get install rt-tests); perf bench sched messaging in linux-perf",
                schedlab_plan::OutputParser::PerfBenchPipe => "perf is in linux-perf (apt-get install linux-perf)",
                schedlab_plan::OutputParser::Schbench => "schbench is in no package: build it from github.com/masoncl/schbench (one C file, `make`) and put it on PATH",
            };
            (!found).then(|| {
                format!(
                    "the original `{p}` (parse = \"{}\") is not on PATH: {how}; or give its path",
                    parser.name()
                )
            })
        }
        PathKey::Program => match std::fs::metadata(&u.path) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => None,
            Ok(m) if m.is_file() => Some(format!("program {p} is not executable")),
            Ok(_) => Some(format!("program {p} is not a file")),
            Err(e) => Some(format!("program {p}: {e}")),
        },
    }
}

/// Checks every path of the spec; `skip_dir` when `--dir` replaces the spec's `dir`.
pub(crate) fn check(
    path: &str,
    src: &str,
    uses: &[PathUse],
    skip_dir: bool,
) -> Result<(), SpecError> {
    for u in uses.iter().filter(|u| !(skip_dir && u.key == PathKey::Dir)) {
        if let Some(msg) = problem(u) {
            return Err(SpecError::at(path, src, u.span.clone(), msg));
        }
    }
    Ok(())
}

/// True when a command's `argv[0]` names a file by path (not through PATH) that the spec
/// can resolve: `{dir}` is the cell's directory, known only at run time.
pub(crate) fn is_program_path(argv0: &str) -> bool {
    argv0.contains('/') && !argv0.starts_with("{dir}")
}

#[cfg(test)]
mod tests {
    use crate::{parse_at, PathKey, SpecError, Workload};
    use std::path::Path;

    #[test]
    fn a_paths_filesystem_is_its_longest_mount_points() {
        let info = "22 1 0:21 / / rw - ext4 /dev/vda rw\n\
                    23 22 0:22 / /proc rw - proc proc rw\n\
                    24 22 0:23 / /sys rw - sysfs sysfs rw\n\
                    25 24 0:24 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n\
                    26 25 0:25 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n\
                    27 22 0:26 / /mnt/a\\040b rw - tracefs tracefs rw\n";
        let of = |p: &str| super::fs_type_of(info, Path::new(p));
        assert_eq!(of("/home/x"), Some("ext4"));
        assert_eq!(of("/proc/1/x"), Some("proc"));
        assert_eq!(of("/sys/fs/cgroup"), Some("tmpfs"));
        assert_eq!(of("/sys/fs/cgroup/cpu/schedlab"), Some("cgroup"));
        assert_eq!(of("/sys/fs/cgroupx"), Some("sysfs"), "a prefix is whole components");
        assert_eq!(of("/mnt/a b/instances"), Some("tracefs"), "mountinfo's octal escapes are read");
    }

    const CMD: &str =
        "name = \"t\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"command\"\n";

    fn spec(text: &str, base: &Path) -> crate::Spec {
        parse_at("t.toml", text, base).unwrap_or_else(|e| panic!("{e}"))
    }

    fn argv(s: &crate::Spec) -> Vec<String> {
        match &s.plan.cells[0].groups[0].workload {
            Workload::Command { argv, .. } => argv.clone(),
            w => panic!("{w:?}"),
        }
    }

    #[test]
    fn relative_paths_resolve_against_the_base_and_absolute_ones_stay() {
        let base = Path::new("/srv/specs");
        let s = spec(
            &format!("dir = \"runs/./x\"\n{CMD}argv = [\"./bin/tool\", \"./arg\", \"{{dir}}\"]\n[device]\npath = \"../data\"\n"),
            base,
        );
        assert_eq!(s.plan.dir.as_deref(), Some(Path::new("/srv/specs/runs/x")));
        assert_eq!(
            argv(&s),
            ["/srv/specs/bin/tool", "./arg", "{dir}"],
            "only the program is a path the spec knows"
        );
        assert!(
            matches!(&s.plan.device.as_ref().unwrap().target, crate::DeviceTarget::Dir { path } if path == "/srv/specs/../data")
        );
        let keys: Vec<PathKey> = s.locations.paths.iter().map(|u| u.key).collect();
        assert_eq!(keys, [PathKey::Dir, PathKey::Program, PathKey::Device]);
        let s = spec(&format!("dir = \"/var/tmp\"\n{CMD}argv = [\"/bin/true\"]\n"), base);
        assert_eq!(s.plan.dir.as_deref(), Some(Path::new("/var/tmp")));
        assert_eq!(argv(&s), ["/bin/true"]);
    }

    #[test]
    fn programs_from_path_or_the_cell_directory_are_left_alone() {
        for program in ["true", "{dir}/run.sh"] {
            let s = spec(&format!("{CMD}argv = [\"{program}\"]\n"), Path::new("/srv"));
            assert_eq!(argv(&s), [program]);
            assert!(s.locations.paths.is_empty(), "{program}");
        }
        let s = spec(&format!("{CMD}argv = [\"./w{{index}}\"]\n"), Path::new("/srv"));
        assert_eq!(argv(&s), ["/srv/w{index}"]);
        assert!(
            s.locations.paths.is_empty(),
            "a per-worker program cannot be checked before the run"
        );
    }

    #[test]
    fn an_empty_path_is_an_error_at_its_value() {
        let e =
            parse_at("t.toml", &format!("dir = \"\"\n{CMD}argv = [\"true\"]\n"), Path::new("/"))
                .unwrap_err();
        assert_eq!((e.line, e.col), (1, 7), "{e}");
    }

    fn check(text: &str, base: &Path) -> Result<(), SpecError> {
        spec(text, base).check_paths(false)
    }

    #[test]
    fn check_paths_points_at_the_key_whose_path_is_wrong() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        std::fs::write(base.join("file"), "x").unwrap();
        std::fs::write(base.join("tool"), "#!/bin/sh\n").unwrap();
        std::os::unix::fs::symlink("/bin/true", base.join("linked")).unwrap();
        for good in ["dir = \"new/deeper\"", "dir = \".\""] {
            check(&format!("{good}\n{CMD}argv = [\"./linked\"]\n"), base)
                .unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        // (before the tables, after them, line, column, what)
        let cases = [
            ("dir = \"file\"\n", "", 1, 7, "is not a directory"),
            ("dir = \"file/sub\"\n", "", 1, 7, "cannot be created"),
            ("", "[device]\npath = \"file\"\n", 8, 8, "neither a directory nor a block device"),
            ("", "[device]\npath = \"nowhere\"\n", 8, 8, "No such file"),
        ];
        for (top, tail, line, col, what) in cases {
            let e = check(&format!("{top}{CMD}argv = [\"true\"]\n{tail}"), base).expect_err(what);
            assert_eq!((e.line, e.col), (line, col), "{e}");
            assert!(e.message.contains(what), "{e}");
        }
        let e = check(&format!("{CMD}argv = [\"./tool\"]\n"), base).unwrap_err();
        assert_eq!((e.line, e.col, e.message.contains("not executable")), (6, 9, true), "{e}");
        let e = check(&format!("{CMD}argv = [\"./missing\"]\n"), base).unwrap_err();
        assert!(e.message.contains(&format!("{}/missing", base.display())), "{e}");
        let s = spec(&format!("dir = \"file\"\n{CMD}argv = [\"true\"]\n"), base);
        assert!(s.check_paths(true).is_ok(), "--dir replaces the spec's dir");
    }

    #[test]
    fn a_dir_on_cgroupfs_tracefs_proc_sysfs_or_debugfs_is_refused_at_its_value() {
        let mut tried = 0;
        for (dir, fs) in [
            ("/sys/fs/cgroup/cpu", "cgroupfs"),
            ("/sys/kernel/tracing/instances", "tracefs"),
            ("/proc/1/x", "proc"),
            ("/proc", "proc"),
            ("/sys/block/new", "sysfs"),
            ("/sys/kernel/debug/sched", "debugfs"),
        ] {
            // The machine may lack one of them (no tracefs mounted): only what is there counts.
            if crate::kernel_fs(Path::new(dir)) != Some(fs) {
                continue;
            }
            tried += 1;
            let e = check(&format!("dir = \"{dir}\"\n{CMD}argv = [\"true\"]\n"), Path::new("/"))
                .expect_err(dir);
            assert_eq!((e.line, e.col), (1, 7), "{e}");
            assert!(e.message.contains(&format!("is on {fs}, a kernel interface")), "{e}");
            let e = check(
                &format!("{CMD}argv = [\"true\"]\n[device]\npath = \"{dir}\"\n"),
                Path::new("/"),
            )
            .expect_err(dir);
            assert_eq!((e.line, e.col), (8, 8), "{e}");
        }
        assert!(tried >= 3, "proc and sysfs are mounted on any Linux machine that runs schedlab");
        assert_eq!(crate::kernel_fs(&std::env::temp_dir()), None);
    }
}
