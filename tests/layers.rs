//! The direction of the crates' dependencies, read from `cargo metadata`: the TOML parser
//! belongs to the CLI alone, and the crates at the bottom name nothing above them.

use std::collections::BTreeMap;
use std::process::Command;

/// The parser crate and the TOML crates only it may use.
const PARSER: &str = "schedlab-spec";
const TOML_CRATES: [&str; 3] = ["toml", "toml_parser", "serde_spanned"];
/// The root package: the CLI.
const CLI: &str = "schedlab";

/// Every workspace package with its dependencies as (name, kind: normal, dev or build).
fn workspace_deps() -> BTreeMap<String, Vec<(String, String)>> {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline", "--manifest-path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let mut deps = BTreeMap::new();
    for p in meta["packages"].as_array().expect("packages") {
        let list = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .map(|d| (d["name"].as_str().unwrap().to_string(), d["kind"].as_str().unwrap_or("normal").to_string()))
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
            assert!(!(dep == PARSER && pkg != CLI), "{pkg} depends on {PARSER} ({kind}); only {CLI} may: use schedlab-plan");
            assert!(
                !(TOML_CRATES.contains(&dep.as_str()) && pkg != PARSER && pkg != CLI),
                "{pkg} depends on {dep} ({kind}); TOML is parsed in {PARSER} only"
            );
        }
    }
}

#[test]
fn bottom_crates_depend_on_nothing_above_them() {
    // (package, workspace crates it may use, and those its tests alone may add). testkit is
    // test support (a steal meter over sys's /proc/stat reader), never built into the tool.
    let allowed: [(&str, &[&str], &[&str]); 7] = [
        ("schedlab-model", &[], &[]),
        ("schedlab-policy", &[], &[]),
        ("schedlab-sim", &["schedlab-policy"], &[]),
        ("schedlab-periodic", &["schedlab-policy"], &["schedlab-testkit"]),
        ("schedlab-plan", &["schedlab-model", "schedlab-periodic"], &[]),
        ("schedlab-sys", &["schedlab-model", "schedlab-plan"], &[]),
        ("schedlab-workloads", &["schedlab-model", "schedlab-plan"], &[]),
    ];
    let deps = workspace_deps();
    for (pkg, normal, dev_only) in allowed {
        let list = deps.get(pkg).unwrap_or_else(|| panic!("no workspace package {pkg}"));
        for (dep, kind) in list.iter().filter(|(d, _)| deps.contains_key(d)) {
            let ok = normal.contains(&dep.as_str()) || (kind == "dev" && dev_only.contains(&dep.as_str()));
            assert!(ok, "{pkg} depends on {dep} ({kind}), which is above it; it may use {normal:?} (tests also {dev_only:?})");
        }
    }
}
