//! The direction of the crates' dependencies, read from `cargo metadata`: the TOML parser
//! belongs to the CLI alone, every crate names only crates below it, and the pure crates
//! forbid `unsafe`.

use std::collections::BTreeMap;
use std::process::Command;

/// The parser crate and the TOML crates only it may use.
const PARSER: &str = "schedlab-spec";
const TOML_CRATES: [&str; 3] = ["toml", "toml_parser", "serde_spanned"];
/// The root package: the CLI.
pub(crate) const CLI: &str = "schedlab";
/// The CLI's library half (one run or simulation as a whole): it checks the spec against
/// the machine, so it reads the parser's `Spec` too.
const SESSION: &str = "schedlab-session";

/// The packages under `crates/` outside the workspace (they need what the default build must
/// not, e.g. clang): their own manifests are read, and ALLOWED holds them like the rest.
const OUTSIDE: [&str; 1] = ["schedlab-scx-dwcs"];

/// Every workspace package with its dependencies as (name, kind: normal, dev or build).
pub(crate) fn workspace_deps() -> BTreeMap<String, Vec<(String, String)>> {
    manifest_deps(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
}

/// Each package of `OUTSIDE`, read from `crates/<name without schedlab->/Cargo.toml`.
pub(crate) fn outside_deps() -> BTreeMap<String, Vec<(String, String)>> {
    let mut deps = BTreeMap::new();
    for pkg in OUTSIDE {
        let dir = pkg.strip_prefix("schedlab-").expect("a schedlab- package");
        let manifest = format!("{}/crates/{dir}/Cargo.toml", env!("CARGO_MANIFEST_DIR"));
        let found = manifest_deps(&manifest);
        assert!(found.contains_key(pkg), "{manifest} is not the manifest of {pkg}");
        deps.extend(found);
    }
    deps
}

/// The packages of the manifest's workspace with their dependencies, from `cargo metadata`.
fn manifest_deps(manifest: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline", "--manifest-path"])
        .arg(manifest)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata of {manifest}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let mut deps = BTreeMap::new();
    for p in meta["packages"].as_array().expect("packages") {
        let list = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .map(|d| {
                (
                    d["name"].as_str().unwrap().to_string(),
                    d["kind"].as_str().unwrap_or("normal").to_string(),
                )
            })
            .collect();
        deps.insert(p["name"].as_str().unwrap().to_string(), list);
    }
    deps
}

#[test]
fn only_the_cli_depends_on_the_toml_parser() {
    let deps = workspace_deps();
    let names = |pkg: &str| deps[pkg].iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    // The graph is really there: the CLI uses the parser, the parser uses toml.
    assert!(names(CLI).iter().any(|n| n == PARSER), "{CLI} should depend on {PARSER}");
    assert!(names(PARSER).iter().any(|n| n == "toml"), "{PARSER} should depend on toml");
    for (pkg, list) in &deps {
        for (dep, kind) in list {
            assert!(
                !(dep == PARSER && pkg != CLI && pkg != SESSION),
                "{pkg} depends on {PARSER} ({kind}); only {CLI} and {SESSION} may: use schedlab-plan"
            );
            assert!(
                !(TOML_CRATES.contains(&dep.as_str()) && pkg != PARSER && pkg != CLI),
                "{pkg} depends on {dep} ({kind}); TOML is parsed in {PARSER} only"
            );
        }
    }
}

/// Every workspace package, bottom up, with the workspace crates it may use and those its
/// tests alone may add. A crate may only name crates listed before it, so the table is the
/// house's floor plan: a new edge upwards fails here until it is argued for and listed.
/// testkit is test support (a steal meter over sys's /proc/stat reader), never built into
/// the tool. docs/ARCHITECTURE.md's crate table lists the crates in this order.
pub(crate) const ALLOWED: [(&str, &[&str], &[&str]); 23] = [
    ("schedlab-policy", &[], &[]),
    ("schedlab-model", &["schedlab-policy"], &[]),
    ("schedlab-sim", &["schedlab-policy"], &[]),
    ("schedlab-schedulability", &["schedlab-policy"], &["schedlab-sim"]),
    ("schedlab-analysis", &["schedlab-model"], &[]),
    // The verdicts' statistics (issue 45): pure, over per-repetition values.
    ("schedlab-verdict", &["schedlab-analysis"], &[]),
    ("schedlab-store", &["schedlab-model"], &[]),
    // plan places fifo-rm and fifo-dm sets by RTA admission, one function for the engine
    // and the simulator (issue 40 item 3).
    ("schedlab-plan", &["schedlab-model", "schedlab-policy", "schedlab-schedulability"], &[]),
    ("schedlab-spec", &["schedlab-plan"], &["schedlab-model"]),
    ("schedlab-import", &["schedlab-plan"], &[]),
    (
        "schedlab-report",
        &["schedlab-analysis", "schedlab-model", "schedlab-plan", "schedlab-verdict"],
        &[],
    ),
    (
        "schedlab-simrun",
        &[
            "schedlab-model",
            "schedlab-plan",
            "schedlab-policy",
            "schedlab-schedulability",
            "schedlab-sim",
        ],
        &[],
    ),
    ("schedlab-sys", &["schedlab-model", "schedlab-plan"], &[]),
    ("schedlab-testkit", &["schedlab-sys"], &[]),
    ("schedlab-workloads", &["schedlab-model", "schedlab-plan"], &[]),
    ("schedlab-periodic", &["schedlab-plan", "schedlab-policy"], &["schedlab-testkit"]),
    ("schedlab-trace", &["schedlab-model", "schedlab-sys"], &["schedlab-testkit"]),
    ("schedlab-bpf", &["schedlab-model", "schedlab-sys"], &["schedlab-testkit"]),
    (
        "schedlab-dispatch",
        &["schedlab-model", "schedlab-plan", "schedlab-policy", "schedlab-sys"],
        &["schedlab-sim", "schedlab-testkit"],
    ),
    (
        "schedlab-runner",
        &[
            "schedlab-analysis",
            "schedlab-bpf",
            "schedlab-dispatch",
            "schedlab-model",
            "schedlab-periodic",
            "schedlab-plan",
            "schedlab-sys",
            "schedlab-trace",
            "schedlab-workloads",
        ],
        &[],
    ),
    // Outside the workspace (OUTSIDE): the dispatcher with a sched_ext actuator.
    ("schedlab-scx-dwcs", &["schedlab-dispatch"], &[]),
    (
        SESSION,
        &[
            "schedlab-analysis",
            "schedlab-bpf",
            "schedlab-model",
            "schedlab-periodic",
            "schedlab-policy",
            "schedlab-report",
            "schedlab-runner",
            "schedlab-schedulability",
            "schedlab-simrun",
            "schedlab-spec",
            "schedlab-store",
            "schedlab-sys",
            "schedlab-trace",
            "schedlab-verdict",
            "schedlab-workloads",
        ],
        &[],
    ),
    (
        CLI,
        &[
            "schedlab-analysis",
            "schedlab-bpf",
            "schedlab-dispatch",
            "schedlab-import",
            "schedlab-model",
            "schedlab-periodic",
            "schedlab-policy",
            "schedlab-report",
            "schedlab-runner",
            "schedlab-schedulability",
            "schedlab-session",
            "schedlab-simrun",
            "schedlab-spec",
            "schedlab-store",
            "schedlab-sys",
            "schedlab-trace",
            "schedlab-verdict",
            "schedlab-workloads",
        ],
        &["schedlab-testkit"],
    ),
];

/// The crates that make no system call of their own (files, if any, through std or their
/// libraries): they forbid `unsafe` in their root, so none creeps in unnoticed.
const PURE: [&str; 13] = [
    "model",
    "plan",
    "policy",
    "sim",
    "schedulability",
    "analysis",
    "report",
    "spec",
    "simrun",
    "store",
    "import",
    "session",
    "verdict",
];

#[test]
fn every_crate_depends_only_on_crates_below_it() {
    let mut deps = workspace_deps();
    let outside = outside_deps();
    for pkg in outside.keys() {
        assert!(!deps.contains_key(pkg), "{pkg} is in OUTSIDE but a workspace package");
    }
    deps.extend(outside);
    let listed: Vec<&str> = ALLOWED.iter().map(|(p, _, _)| *p).collect();
    for pkg in deps.keys() {
        assert!(
            listed.contains(&pkg.as_str()),
            "{pkg} is not in tests/layers.rs's ALLOWED: list it with the crates it may use"
        );
    }
    for (at, (pkg, normal, dev_only)) in ALLOWED.iter().enumerate() {
        for dep in normal.iter().chain(dev_only.iter()) {
            assert!(listed[..at].contains(dep), "ALLOWED lets {pkg} use {dep}, which is not listed before it: the table must go bottom up");
        }
        let list = deps.get(*pkg).unwrap_or_else(|| {
            panic!("ALLOWED names {pkg}, which is no workspace package nor in OUTSIDE")
        });
        for (dep, kind) in list.iter().filter(|(d, _)| deps.contains_key(d)) {
            let ok = normal.contains(&dep.as_str())
                || (kind == "dev" && dev_only.contains(&dep.as_str()));
            assert!(
                ok,
                "{pkg} depends on {dep} ({kind}), which is not below it: it may use {normal:?} (its tests also {dev_only:?}); \
                 move the code, or argue for the edge and add it to ALLOWED and docs/ARCHITECTURE.md"
            );
        }
    }
}

#[test]
fn the_crate_outside_the_workspace_is_read_with_its_path_dependencies() {
    let outside = outside_deps();
    let scx = &outside["schedlab-scx-dwcs"];
    assert!(
        scx.iter().any(|(d, k)| d == "schedlab-dispatch" && k == "normal"),
        "schedlab-scx-dwcs runs the dispatcher: {scx:?}"
    );
    assert!(scx.iter().any(|(d, k)| d == "scx_cargo" && k == "build"), "{scx:?}");
}

/// Libraries return typed errors: anyhow is for the binaries, which print the whole chain.
#[test]
fn only_binaries_depend_on_anyhow() {
    let mut deps = workspace_deps();
    deps.extend(outside_deps());
    let binaries = [CLI, "schedlab-scx-dwcs"];
    assert!(deps[CLI].iter().any(|(d, _)| d == "anyhow"), "the CLI prints anyhow's chains");
    for (pkg, list) in &deps {
        for (dep, kind) in list {
            assert!(
                dep != "anyhow" || kind != "normal" || binaries.contains(&pkg.as_str()),
                "{pkg} depends on anyhow: a library returns a typed error (thiserror or a small struct)"
            );
        }
    }
}

#[test]
fn pure_crates_forbid_unsafe_code() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    for krate in PURE {
        let lib = root.join(krate).join("src/lib.rs");
        let text =
            std::fs::read_to_string(&lib).unwrap_or_else(|e| panic!("{}: {e}", lib.display()));
        assert!(
            text.lines().any(|l| l.trim() == "#![forbid(unsafe_code)]"),
            "{} lacks #![forbid(unsafe_code)]: {krate} is on the PURE list (no system calls of its own)",
            lib.display()
        );
    }
}

/// The crates records travel through, from a worker's report to analysis.
const RECORD_PATH: [&str; 9] =
    ["model", "runner", "workloads", "periodic", "dispatch", "analysis", "store", "sim", "simrun"];
/// What untyped JSON looks like in code.
const UNTYPED: [&str; 5] = [
    "serde_json::Value",
    "json!",
    "serde_json::Map",
    "serde_json::to_value",
    "serde_json::from_value",
];

/// The lines of `text` outside `#[cfg(test)]` items, and the names of the test-only modules
/// it declares (`#[cfg(test)] mod name;`, whose files are test code too).
fn non_test_lines(text: &str) -> (Vec<(usize, &str)>, Vec<String>) {
    let mut out = Vec::new();
    let mut test_mods = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        if line.trim() != "#[cfg(test)]" {
            out.push((n + 1, line));
            continue;
        }
        // The item after the attribute: a one-line declaration, or a block to its closing brace.
        let Some((_, item)) = lines.next() else { break };
        if let Some(name) = item.trim().strip_prefix("mod ").and_then(|m| m.strip_suffix(';')) {
            test_mods.push(name.trim().to_string());
            continue;
        }
        let mut depth = item.matches('{').count() as i64 - item.matches('}').count() as i64;
        while depth > 0 {
            let Some((_, l)) = lines.next() else { break };
            depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
        }
    }
    (out, test_mods)
}

#[test]
fn records_are_typed_on_their_whole_path() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut found = Vec::new();
    let mut files = 0;
    for krate in RECORD_PATH {
        let mut stack = vec![root.join(krate).join("src")];
        let mut sources = Vec::new();
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    sources.push(p);
                }
            }
        }
        let mut test_files = Vec::new();
        let texts: Vec<(std::path::PathBuf, String)> = sources
            .into_iter()
            .map(|p| (p.clone(), std::fs::read_to_string(&p).unwrap()))
            .collect();
        for (_, text) in &texts {
            test_files.extend(non_test_lines(text).1);
        }
        for (path, text) in &texts {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            if test_files.contains(&stem) {
                continue;
            }
            files += 1;
            for (n, line) in non_test_lines(text).0 {
                if UNTYPED.iter().any(|u| line.contains(u)) && !line.trim_start().starts_with("//")
                {
                    found.push(format!(
                        "{}:{n}: {}",
                        path.strip_prefix(&root).unwrap().display(),
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(files > 50, "only {files} source files found: is the layout still crates/<name>/src?");
    assert!(
        found.is_empty(),
        "untyped JSON on the record path (type it in schedlab-model):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_test_code_filter_keeps_code_and_drops_test_items() {
    let text =
        "fn a() {}\n#[cfg(test)]\nmod run_tests;\nfn b() { json!(1) }\n#[cfg(test)]\nmod tests {\n    fn t() { json!({}) }\n}\nfn c() {}\n";
    let (lines, mods) = non_test_lines(text);
    let kept: Vec<&str> = lines.iter().map(|(_, l)| *l).collect();
    assert_eq!(kept, vec!["fn a() {}", "fn b() { json!(1) }", "fn c() {}"]);
    assert_eq!(mods, vec!["run_tests".to_string()]);
}
