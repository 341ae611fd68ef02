//! Spec files from anywhere and of any content: paths resolve against the spec's own
//! directory whatever the working directory, and a mutated experiment never panics the
//! parser or `schedlab check` and never gets an error without file:line:col.

use crate::util::{is_root, measuring, Lab};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::path::{Path, PathBuf};
use std::process::Output;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `schedlab args...` run from `cwd` instead of the lab's own directory.
fn run_in(lab: &Lab, cwd: &Path, args: &[&str]) -> Output {
    lab.cmd(args).current_dir(cwd).output().expect("schedlab runs")
}

/// A lab with `specs/` (where the spec goes) and `elsewhere/` (the working directory).
fn two_dirs() -> (Lab, PathBuf, PathBuf) {
    let lab = Lab::new();
    let (specs, cwd) = (lab.path("specs"), lab.path("elsewhere"));
    std::fs::create_dir(&specs).unwrap();
    std::fs::create_dir(&cwd).unwrap();
    (lab, specs, cwd)
}

/// A relative `dir` resolves against the spec file: workers run in their cell's directory,
/// where a path relative to the working directory would name nothing.
#[test]
fn a_relative_dir_resolves_against_the_spec_file_from_any_working_directory() {
    require!(is_root(), "a periodic task set's job loop locks its memory and needs root");
    let _turn = measuring();
    let (lab, specs, cwd) = two_dirs();
    let spec = specs.join("p.toml");
    std::fs::write(
        &spec,
        "name = \"relative\"\ndir = \"scratch\"\n[matrix]\nworkload = [\"set\"]\nscheduler = [\"fifo-rm\"]\nutilisation = [0.2]\n\
         [workloads.set]\nkind = \"periodic\"\nbody = \"spin\"\nduration_s = 0.5\n\
         generate = { tasks = 2, x = 1, y = 2, seed = 3, canonical = true }\n",
    )
    .unwrap();
    // Kept files show where the experiment directory was (a parent made for it goes with it).
    let out = run_in(&lab, &cwd, &["run", "-q", "--keep-files", "../specs/p.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(specs.join("scratch").is_dir(), "the experiment directory's parent is beside the spec");
    assert!(!cwd.join("scratch").exists(), "nothing is made relative to the working directory");
    let rows = lab.samples();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r["exit_code"], 0, "every task ran its job loop: {r}");
        assert!(r["rt_jobs"].as_u64().unwrap_or(0) > 0, "every task did jobs: {r}");
    }
}

/// `--dir` relative to the working directory reaches the workers too (they run in their
/// cell's directory), as does a program named relative to the spec.
#[test]
fn relative_paths_reach_the_workers_from_the_spec_and_the_command_line() {
    let (lab, specs, cwd) = two_dirs();
    let script = specs.join("probe.sh");
    // The worker's {dir} must be a directory it can see from its own working directory.
    std::fs::write(&script, "#!/bin/sh\ntest -d \"$1\"\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let spec = specs.join("c.toml");
    std::fs::write(
        &spec,
        "name = \"probe\"\n[matrix]\nworkload = [\"p\"]\n[workloads.p]\nkind = \"command\"\nargv = [\"./probe.sh\", \"{dir}\"]\n",
    )
    .unwrap();
    let out =
        run_in(&lab, &cwd, &["run", "-q", "--keep-files", "--dir", "parent", "../specs/c.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(cwd.join("parent").is_dir(), "--dir is relative to the working directory");
    let rows = lab.samples();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["exit_code"], 0, "the program ran and saw its cell directory: {}", rows[0]);
    // Without --keep-files the parent made for the run goes with it.
    let out = run_in(&lab, &cwd, &["run", "-q", "--dir", "fresh/parent", "../specs/c.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!cwd.join("fresh").exists(), "the parents made for the run are removed with it");
}

#[test]
fn check_refuses_a_bad_path_at_its_key() {
    let (lab, specs, cwd) = two_dirs();
    std::fs::write(specs.join("plain"), "not a directory").unwrap();
    let head = "name = \"p\"\n[matrix]\nworkload = [\"w\"]\n[workloads.w]\nkind = \"command\"\n";
    let cases = [
        (
            format!("dir = \"plain/sub\"\n{head}argv = [\"true\"]\n"),
            "b.toml:1:7:",
            "cannot be created",
        ),
        (
            format!("{head}argv = [\"./missing.sh\", \"x\"]\n"),
            "b.toml:6:9:",
            "/specs/missing.sh: No such file",
        ),
        (format!("{head}argv = [\"./plain\"]\n"), "b.toml:6:9:", "specs/plain is not executable"),
        (
            format!("{head}argv = [\"true\"]\n[device]\npath = \"nowhere\"\n"),
            "b.toml:8:8:",
            "specs/nowhere",
        ),
    ];
    for (text, at, what) in cases {
        std::fs::write(specs.join("b.toml"), &text).unwrap();
        let out = run_in(&lab, &cwd, &["check", "../specs/b.toml"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text}\n{err}");
        assert!(err.contains(&format!("../specs/{at}")) && err.contains(what), "{text}\n{err}");
    }
    std::fs::write(specs.join("ok.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(
        specs.join("ok.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(
        specs.join("g.toml"),
        format!("dir = \"new/deeper\"\n{head}argv = [\"./ok.sh\"]\n"),
    )
    .unwrap();
    let out = run_in(&lab, &cwd, &["check", "../specs/g.toml"]);
    assert!(
        out.status.success(),
        "a creatable dir and a program beside the spec are fine: {}",
        stderr(&out)
    );
    assert!(!specs.join("new").exists(), "check creates nothing");
}

/// Cases the mutation test makes. Each is parsed and checked in-process (every spec check,
/// under a privileged and an unprivileged view of the machine) and by `schedlab check`:
/// 2,400 runs of the debug binary took 16 s here (a valid spec costs `check` its ~10 ms pi
/// calibration), so all of them go through it.
const CASES: usize = 2400;
const MAX_STDERR: usize = 8 * 1024;

/// One random change to a spec file's bytes.
fn mutate(rng: &mut Xoshiro256PlusPlus, text: &mut Vec<u8>) -> &'static str {
    let lines =
        |t: &[u8]| -> Vec<Vec<u8>> { t.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect() };
    let join = |ls: Vec<Vec<u8>>| ls.join(&b'\n');
    let at = |rng: &mut Xoshiro256PlusPlus, t: &[u8]| rng.random_range(0..=t.len());
    // Offsets of numbers (a digit not inside a word) and of `=` signs.
    let numbers: Vec<usize> = (0..text.len())
        .filter(|&i| text[i].is_ascii_digit() && (i == 0 || !text[i - 1].is_ascii_alphanumeric()))
        .collect();
    match rng.random_range(0..16) {
        0 => {
            if !text.is_empty() {
                let i = rng.random_range(0..text.len());
                text[i] ^= 1 << rng.random_range(0..8);
            }
            "bit flip"
        }
        1 => {
            let i = at(rng, text);
            text.insert(i, rng.random());
            "random byte"
        }
        2 => {
            let mut ls = lines(text);
            ls.remove(rng.random_range(0..ls.len()));
            *text = join(ls);
            "deleted line"
        }
        3 => {
            let mut ls = lines(text);
            let i = rng.random_range(0..ls.len());
            ls.insert(i, ls[i].clone());
            *text = join(ls);
            "duplicated line"
        }
        4 => {
            let bad: &[&[u8]] =
                &[b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"];
            let i = at(rng, text);
            text.splice(i..i, bad[rng.random_range(0..bad.len())].iter().copied());
            "invalid UTF-8"
        }
        5 | 6 => {
            let Some(&i) = numbers.get(rng.random_range(0..numbers.len().max(1))) else {
                return "no number";
            };
            let end = (i..text.len())
                .find(|&j| !(text[j].is_ascii_alphanumeric() || b"._".contains(&text[j])))
                .unwrap_or(text.len());
            let huge: &[&str] = &[
                "99999999999999999999",
                "9223372036854775807",
                "-9223372036854775808",
                "1e309",
                "-0",
                "0",
                "inf",
                "nan",
                "-1",
                "4294967296",
            ];
            let v = if rng.random_bool(0.5) {
                format!("-{}", String::from_utf8_lossy(&text[i..end]))
            } else {
                huge[rng.random_range(0..huge.len())].to_string()
            };
            text.splice(i..end, v.bytes());
            "number"
        }
        7 | 8 => {
            // A 10 KB name: a key, or the inside of a string.
            let long = "n".repeat(10 * 1024);
            let quotes: Vec<usize> = (0..text.len()).filter(|&i| text[i] == b'"').collect();
            let starts: Vec<usize> = lines(text)
                .iter()
                .scan(0, |off, l| {
                    let s = *off;
                    *off += l.len() + 1;
                    Some(s)
                })
                .collect();
            let i = if rng.random_bool(0.5) && !quotes.is_empty() {
                quotes[rng.random_range(0..quotes.len())] + 1
            } else {
                starts[rng.random_range(0..starts.len())]
            }
            .min(text.len());
            text.splice(i..i, long.bytes());
            "long name"
        }
        9 => {
            let depth = rng.random_range(60..400);
            let key = vec!["k"; depth].join(".");
            let line = match rng.random_range(0..3) {
                0 => format!("{key} = 1\n"),
                1 => format!("[{key}]\n"),
                _ => format!("x = {{ {key} = 1 }}\n"),
            };
            let starts: Vec<usize> = std::iter::once(0)
                .chain((0..text.len()).filter(|&i| text[i] == b'\n').map(|i| i + 1))
                .collect();
            let i = starts[rng.random_range(0..starts.len())];
            text.splice(i..i, line.bytes());
            "deeply dotted key"
        }
        10 => {
            let depth = rng.random_range(60..3000);
            let i = (0..text.len())
                .filter(|&i| text[i] == b'=')
                .nth(rng.random_range(0..8))
                .map(|i| i + 1)
                .unwrap_or(0);
            let v = format!(" {}1{}", "[".repeat(depth), "]".repeat(depth));
            text.splice(i..i, v.bytes());
            "deep nesting"
        }
        11 => {
            // Swap the values of two `key = value` lines.
            let mut ls = lines(text);
            let kv: Vec<usize> = (0..ls.len())
                .filter(|&i| ls[i].contains(&b'=') && !ls[i].starts_with(b"#"))
                .collect();
            if kv.len() >= 2 {
                let (a, b) = (kv[rng.random_range(0..kv.len())], kv[rng.random_range(0..kv.len())]);
                let split = |l: &[u8]| {
                    let e = l.iter().position(|&c| c == b'=').unwrap();
                    (l[..=e].to_vec(), l[e + 1..].to_vec())
                };
                let ((ka, va), (kb, vb)) = (split(&ls[a]), split(&ls[b]));
                ls[a] = [ka, vb].concat();
                ls[b] = [kb, va].concat();
            }
            *text = join(ls);
            "swapped values"
        }
        12 => {
            let i = at(rng, text);
            text.truncate(i);
            "truncated"
        }
        13 => {
            let mut ls = lines(text);
            let (a, b) = (rng.random_range(0..ls.len()), rng.random_range(0..ls.len()));
            ls.swap(a, b);
            *text = join(ls);
            "swapped lines"
        }
        14 => {
            // Another type where a value was.
            let kinds: &[&str] = &[
                "true",
                "1.5",
                "[]",
                "{}",
                "\"s\"",
                "[1, \"a\"]",
                "{ a = 1 }",
                "1979-05-27T07:32:00Z",
                "'''\nx'''",
            ];
            let eqs: Vec<usize> = (0..text.len()).filter(|&i| text[i] == b'=').collect();
            if let Some(&e) = eqs.get(rng.random_range(0..eqs.len().max(1))) {
                let end = (e..text.len()).find(|&j| text[j] == b'\n').unwrap_or(text.len());
                text.splice(
                    e + 1..end,
                    format!(" {}", kinds[rng.random_range(0..kinds.len())]).bytes(),
                );
            }
            "retyped value"
        }
        _ => {
            let junk: &[&str] = &[
                "\0",
                "\r",
                "\t",
                "\u{1b}[2J",
                "\"",
                "'",
                "[",
                "]]",
                "=",
                "#",
                "\\u0000",
                "\u{feff}",
                "é",
                "\u{202e}",
            ];
            let i = at(rng, text);
            let i = (0..=i)
                .rev()
                .find(|&j| j == 0 || j == text.len() || text[j] < 0x80 || text[j] >= 0xc0)
                .unwrap_or(0);
            text.splice(i..i, junk[rng.random_range(0..junk.len())].bytes());
            "junk"
        }
    }
}

/// `line:col: ` right after `prefix` in `s`: the error's location.
fn location_after(s: &str, prefix: &str) -> Option<(usize, usize)> {
    let rest = &s[s.find(prefix)? + prefix.len()..];
    let mut parts = rest.splitn(3, ':');
    let line = parts.next()?.parse().ok()?;
    let col = parts.next()?.parse().ok()?;
    parts.next()?.starts_with(' ').then_some((line, col))
}

#[derive(Default, Debug)]
struct Tally {
    cases: usize,
    ok: usize,
    errors: usize,
    panics: usize,
    unlocated: usize,
    too_long: usize,
    binary_runs: usize,
    binary_ok: usize,
    binary_bad_input: usize,
    binary_other: usize,
}

/// Every spec-derived check the CLI makes, in-process, under a privileged and an
/// unprivileged view of the machine; the errors they return.
fn every_check(spec: &schedlab_spec::Spec) -> Vec<schedlab_spec::SpecError> {
    use schedlab_spec::{Capabilities, DeviceFacts, MachineLimits};
    let root = Capabilities::root();
    let user = Capabilities::unprivileged();
    // A small machine, so the limit check refuses many mutants too.
    let small = MachineLimits {
        pid_max: Some(2_000),
        threads_max: Some(4_000),
        tasks: Some(200),
        nproc: Some(500),
        user_tasks: Some(50),
        mem_available_kib: Some(64 << 10),
    };
    let broken = DeviceFacts {
        privileged: true,
        path_error: Some("not mounted".into()),
        disk: Some("vda".into()),
        offered: Some(vec!["none".into()]),
        free_bytes: Some(0),
        mkfs_error: Some("no mkfs".into()),
        loop_unavailable: Some("no /dev/loop-control".into()),
        drop_caches_unwritable: Some("/proc/sys is read-only".into()),
        queue_unwritable: Some("/sys is read-only".into()),
    };
    let mut out = Vec::new();
    out.extend(spec.check_allowed(&root).err());
    out.extend(spec.check_allowed(&user).err());
    out.extend(spec.check_cpus(&[0]).err());
    out.extend(spec.check_paths(false).err());
    out.extend(spec.check_limits(&small).err());
    out.extend(spec.check_device(&DeviceFacts::default(), None).err());
    out.extend(
        spec.check_device(
            &DeviceFacts {
                path_error: None,
                mkfs_error: None,
                loop_unavailable: None,
                drop_caches_unwritable: None,
                ..broken.clone()
            },
            None,
        )
        .err(),
    );
    out.extend(spec.check_device(&broken, None).err());
    out
}

/// Issue 15: 268 of 2,400 mutated specs got errors without file:line:col (invalid UTF-8,
/// deeply dotted keys) and stderr reached 600 KB by echoing long names.
#[test]
fn mutated_experiments_never_panic_and_every_error_is_located_and_short() {
    let lab = Lab::new();
    let shipped: Vec<(String, Vec<u8>)> =
        std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/experiments"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .map(|p| {
                (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap())
            })
            .collect();
    assert!(shipped.len() >= 5, "the shipped experiments are the seeds");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(15);
    let mut t = Tally::default();
    let mut failures: Vec<String> = Vec::new();
    let started = std::time::Instant::now();
    for case in 0..CASES {
        let (name, original) = &shipped[case % shipped.len()];
        let mut text = original.clone();
        let changes: Vec<&str> =
            (0..rng.random_range(1..=3)).map(|_| mutate(&mut rng, &mut text)).collect();
        let file = lab.path(&format!("m{case}-{name}"));
        let path = file.to_string_lossy().into_owned();
        let what = || format!("case {case} ({name}: {})", changes.join(", "));
        let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            schedlab_spec::decode(&path, &text)
                .and_then(|s| schedlab_spec::parse_at(&path, s, lab.dir.path()))
                .map(|s| (every_check(&s), s))
        }));
        t.cases += 1;
        let errors = match parsed {
            Err(_) => {
                t.panics += 1;
                failures.push(format!("{}: the parser panicked", what()));
                Vec::new()
            }
            Ok(Ok((errors, _))) => {
                t.ok += 1;
                errors
            }
            Ok(Err(e)) => {
                t.errors += 1;
                vec![e]
            }
        };
        let lines = text.split(|&b| b == b'\n').count();
        for e in errors {
            let shown = e.to_string();
            if location_after(&shown, &format!("{path}:")) != Some((e.line, e.col))
                || e.line == 0
                || e.line > lines
                || e.col == 0
            {
                t.unlocated += 1;
                failures.push(format!(
                    "{}: no location in the file: {}",
                    what(),
                    schedlab_spec::cut(&shown, 300)
                ));
            }
            if shown.len() >= MAX_STDERR / 2 {
                t.too_long += 1;
                failures.push(format!("{}: a {} byte error", what(), shown.len()));
            }
        }
        // The binary: exit status, stderr's size and the location as printed.
        std::fs::write(&file, &text).unwrap();
        let out = lab.run(&["check", &path]);
        std::fs::remove_file(&file).unwrap();
        let err = stderr(&out);
        t.binary_runs += 1;
        match out.status.code() {
            Some(0) => t.binary_ok += 1,
            Some(2) => {
                t.binary_bad_input += 1;
                if location_after(&err, &format!("error: {path}:")).is_none() {
                    t.unlocated += 1;
                    failures.push(format!(
                        "{}: check printed no location: {}",
                        what(),
                        schedlab_spec::cut(&err, 300)
                    ));
                }
            }
            code => {
                t.binary_other += 1;
                failures.push(format!(
                    "{}: check exited {code:?}: {}",
                    what(),
                    schedlab_spec::cut(&err, 300)
                ));
            }
        }
        if err.contains("panicked") {
            t.panics += 1;
            failures.push(format!("{}: check panicked: {}", what(), schedlab_spec::cut(&err, 600)));
        }
        if err.len() >= MAX_STDERR {
            t.too_long += 1;
            failures.push(format!("{}: {} bytes of stderr", what(), err.len()));
        }
    }
    eprintln!("spec mutations in {:.1} s: {t:?}", started.elapsed().as_secs_f64());
    assert!(t.cases >= 2000 && t.binary_runs == t.cases, "{t:?}");
    assert!(
        t.errors > t.cases / 4 && t.ok > t.cases / 20,
        "mutations should give both valid and invalid specs: {t:?}"
    );
    assert!(
        failures.is_empty(),
        "{} failures, first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(15)].join("\n")
    );
}
