//! The map stays true and short: every crate has a one-paragraph README that
//! docs/ARCHITECTURE.md links to, the crate table lists every crate and nothing else, bottom
//! up as `tests/layers.rs` does, its cells are one line each, every name the map and the
//! READMEs mention in code spans is still defined where they say, every dependency has its
//! line, and the numbers the map states are the code's.

use std::path::{Path, PathBuf};

/// The longest crate-table cell, in words: a cell is one line, the detail is in the README.
const CELL_WORDS: usize = 16;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The directory names under `crates/`.
fn crates() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target" && n != "fixtures") {
                sources(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The `code spans` of a Markdown text, fenced blocks left out.
fn code_spans(text: &str) -> Vec<String> {
    let mut spans = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(span), Some(_)) = (parts.next(), parts.next()) {
            spans.push(span.to_string());
        }
    }
    spans
}

/// True if `word` occurs in `text` with no identifier character on either side.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(ident)
            && !text[i + word.len()..].chars().next().is_some_and(ident)
    })
}

#[test]
fn every_crate_has_a_one_paragraph_readme_that_the_map_links_to() {
    let map = read(&root().join("docs/ARCHITECTURE.md"));
    let names = crates();
    assert!(
        names.len() >= 17,
        "only {} crates found: is the layout still crates/<name>?",
        names.len()
    );
    for name in &names {
        let text = read(&root().join("crates").join(name).join("README.md"));
        let (title, body) = text.split_once('\n').unwrap_or((&text, ""));
        assert_eq!(
            title,
            format!("# schedlab-{name}"),
            "crates/{name}/README.md: the title names the package"
        );
        let body = body.trim();
        assert!(
            !body.is_empty() && !body.contains("\n\n"),
            "crates/{name}/README.md is one paragraph under its title:\n{body}"
        );
        assert!(
            body.contains("never") || body.contains("only"),
            "crates/{name}/README.md says what the crate never does"
        );
        let link = format!("(../crates/{name}/README.md)");
        assert!(map.contains(&link), "docs/ARCHITECTURE.md's crate table does not link {link}");
    }
}

#[test]
fn the_crate_table_cells_are_one_line_each() {
    let map = read(&root().join("docs/ARCHITECTURE.md"));
    let table =
        map.split("## Crates").nth(1).expect("a ## Crates section").split("\n## ").next().unwrap();
    let rows: Vec<&str> =
        table.lines().filter(|l| l.starts_with('|') && !l.starts_with("|---")).collect();
    assert!(rows.len() > crates().len(), "the crate table has a row per crate and the CLI");
    for row in rows {
        for cell in row.trim_matches('|').split(" | ") {
            let words = cell.split_whitespace().count();
            assert!(words <= CELL_WORDS, "a crate-table cell of {words} words (at most {CELL_WORDS}: the rest goes in the README): {cell}");
        }
    }
}

#[test]
fn every_name_the_map_and_the_readmes_mention_exists_where_they_say() {
    let mut files = Vec::new();
    for dir in ["crates", "src", "tests", "benches"] {
        sources(&root().join(dir), &mut files);
    }
    let texts: Vec<(PathBuf, String)> = files.iter().map(|p| (p.clone(), read(p))).collect();
    let code: String = texts.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join("\n");
    let crate_dirs = crates();
    let mut docs =
        vec![root().join("docs/ARCHITECTURE.md"), root().join("docs/ADDING-A-FIGURE.md")];
    docs.extend(crates().iter().map(|c| root().join("crates").join(c).join("README.md")));
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in &docs {
        for span in code_spans(&read(doc)) {
            let name = span.trim_end_matches("()").trim_end_matches('!');
            let is_path = name.ends_with(".rs")
                || name.ends_with(".sh")
                || (name.contains('/') && !name.contains(' '));
            if is_path {
                if name.starts_with('/') || name.contains('<') || name.contains('*') {
                    continue; // a path on the machine, or a pattern
                }
                let found = [root().join(name), root().join("crates").join(name)]
                    .iter()
                    .any(|p| p.exists())
                    || files.iter().any(|f| f.ends_with(name));
                checked += 1;
                if !found {
                    missing.push(format!("{}: file `{name}`", doc.display()));
                }
                continue;
            }
            let is_name = !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && (name.contains("::")
                    || name.contains('_')
                    || name.chars().any(|c| c.is_ascii_uppercase()));
            if !is_name {
                continue; // a command, a value, a word of prose
            }
            checked += 1;
            // A type or a path must be defined where it says; a field or function name
            // must at least occur.
            let why = if name.contains("::") || name.chars().any(|c| c.is_ascii_uppercase()) {
                undefined(name, &texts, &crate_dirs)
            } else {
                (!has_word(&code, name)).then(|| "not in the code".to_string())
            };
            if let Some(why) = why {
                missing.push(format!("{}: `{span}`: {why}", doc.display()));
            }
        }
    }
    assert!(checked > 100, "only {checked} names checked: are the code spans still read?");
    assert!(
        missing.is_empty(),
        "names the docs mention that the code no longer has:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_code_span_reader_skips_fences_and_finds_words() {
    let spans = code_spans("a `b` c `d::e()`\n```\n`f`\n```\n`g`");
    assert_eq!(spans, ["b", "d::e()", "g"]);
    assert!(
        has_word("fn judge(x)", "judge")
            && !has_word("fn judged(x)", "judge")
            && !has_word("misjudge", "judge")
    );
}

/// The crate table's rows, in order: the linked crate directory (`None` for the CLI's row).
fn table_rows(map: &str) -> Vec<Option<String>> {
    let table =
        map.split("## Crates").nth(1).expect("a ## Crates section").split("\n## ").next().unwrap();
    table
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| crate |"))
        .map(|l| {
            l.split_once("(../crates/")
                .and_then(|(_, rest)| rest.split_once('/'))
                .map(|(dir, _)| dir.to_string())
        })
        .collect()
}

#[test]
fn the_crate_table_lists_every_crate_bottom_up_as_the_layers_do() {
    let map = read(&root().join("docs/ARCHITECTURE.md"));
    let rows = table_rows(&map);
    let named: Vec<String> = rows
        .iter()
        .map(|r| r.as_ref().map_or(super::layers::CLI.to_string(), |d| format!("schedlab-{d}")))
        .collect();
    let allowed: Vec<&str> = super::layers::ALLOWED.iter().map(|(p, _, _)| *p).collect();
    assert_eq!(
        named, allowed,
        "docs/ARCHITECTURE.md's crate table is not tests/layers.rs's ALLOWED, bottom up"
    );
    for dir in rows.iter().flatten() {
        assert!(
            root().join("crates").join(dir).join("Cargo.toml").is_file(),
            "the crate table names crates/{dir}, which does not exist"
        );
    }
    let mut packages: Vec<String> = super::layers::workspace_deps().into_keys().collect();
    packages.extend(super::layers::outside_deps().into_keys());
    packages.sort();
    let mut tabled = named.clone();
    tabled.sort();
    assert_eq!(tabled, packages, "the crate table and the packages (workspace and outside) differ");
}

/// Names the docs mention that are not ours: the toml crate's parsed-document table.
const EXTERNAL: [&str; 1] = ["DeTable"];

/// True if `text` defines `name`: an item, a re-export (`as name`), or a field or variant (a
/// line that starts with the name and a `:`, `(`, `{`, `,` or `=`, a call statement aside).
fn defines(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    const ITEMS: [&str; 10] = [
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "fn ",
        "const ",
        "static ",
        "mod ",
        "as ",
        "macro_rules! ",
    ];
    let after_item = text.match_indices(name).any(|(i, _)| {
        let before = &text[..i];
        !text[i + name.len()..].chars().next().is_some_and(ident)
            && ITEMS.iter().any(|k| {
                before.ends_with(k)
                    && !before[..before.len() - k.len()].chars().next_back().is_some_and(ident)
            })
    });
    after_item
        || text.lines().any(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("pub(crate) ").or(l.strip_prefix("pub ")).unwrap_or(l);
            l.strip_prefix(name).is_some_and(|rest| {
                let rest = rest.trim_start();
                rest.starts_with(':') && !rest.starts_with("::")
                    || (rest.starts_with('(') && !l.trim_end().ends_with(';'))
                    || rest.starts_with('{')
                    || rest.starts_with(',')
                    || rest.is_empty()
                    || (rest.starts_with('=') && !rest.starts_with("=>") && !rest.starts_with("=="))
            })
        })
}

/// Where a name the docs mention should be defined: `crate::module::Item` in that crate (each
/// module a file, a directory or a `mod`), `module::item` in that module's file, `Type::member`
/// as a type and a member, a bare type name anywhere. None if it is defined there, else why not.
fn undefined(name: &str, files: &[(PathBuf, String)], crate_dirs: &[String]) -> Option<String> {
    let segs: Vec<&str> = name.split("::").collect();
    let last = *segs.last().unwrap();
    let all = |pred: &dyn Fn(&Path) -> bool| -> String {
        files
            .iter()
            .filter(|(p, _)| pred(p))
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let short = segs[0].strip_prefix("schedlab_").unwrap_or(segs[0]);
    if segs.len() > 1 && crate_dirs.iter().any(|c| c == short) {
        let dir = root().join("crates").join(short);
        let text = all(&|p| p.starts_with(&dir));
        for m in &segs[1..segs.len() - 1] {
            let file = format!("{m}.rs");
            let is_module = files.iter().any(|(p, _)| {
                p.starts_with(&dir)
                    && (p.ends_with(&file) || p.components().any(|c| c.as_os_str() == *m))
            }) || defines(&text, m);
            if !is_module {
                return Some(format!("crate {short} has no module {m}"));
            }
        }
        return (!defines(&text, last)).then(|| format!("crate {short} does not define {last}"));
    }
    if segs.len() > 1 && segs[0].starts_with(|c: char| c.is_ascii_lowercase()) {
        let file = format!("{}.rs", segs[0]);
        let text = all(&|p| p.ends_with(&file) || p.components().any(|c| c.as_os_str() == segs[0]));
        if text.is_empty() {
            return Some(format!("no module {}", segs[0]));
        }
        return (!defines(&text, last))
            .then(|| format!("module {} does not define {last}", segs[0]));
    }
    let everything = all(&|_| true);
    if segs.len() > 1 {
        return segs
            .iter()
            .find(|s| !defines(&everything, s))
            .map(|s| format!("{s} is not defined"));
    }
    let camel = last.chars().any(|c| c.is_ascii_uppercase())
        && last.chars().any(|c| c.is_ascii_lowercase());
    if camel {
        return (!EXTERNAL.contains(&last) && !defines(&everything, last))
            .then(|| format!("no type {last}"));
    }
    (!has_word(&everything, last)).then(|| format!("{last} is not in the code"))
}

#[test]
fn the_definition_finder_tells_items_from_mentions() {
    let text = "pub struct Run {\n    pub id: u32,\n}\nenum E {\n    Stop,\n}\npub use x::Y as Z;\nfn f() { g(Run::new()) }\n";
    for name in ["Run", "id", "Stop", "Z", "f"] {
        assert!(defines(text, name), "{name}");
    }
    for name in ["g", "new", "Y", "Ru", "E2"] {
        assert!(!defines(text, name), "{name}");
    }
    let files =
        vec![(root().join("crates/runner/src/adaptive.rs"), "pub struct AdaptiveSteps;".into())];
    let dirs = vec!["runner".to_string()];
    assert_eq!(undefined("runner::adaptive::AdaptiveSteps", &files, &dirs), None);
    assert!(undefined("runner::adaptive::FixedSteps", &files, &dirs).is_some());
    assert!(undefined("runner::engine::AdaptiveSteps", &files, &dirs).is_some());
    assert!(undefined("NoSuchType", &files, &dirs).is_some());
}

#[test]
fn every_dependency_has_its_line_in_the_map() {
    let map = read(&root().join("docs/ARCHITECTURE.md"));
    let section = map
        .split("## Dependencies (one line each)")
        .nth(1)
        .expect("a ## Dependencies section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut deps = super::layers::workspace_deps();
    deps.extend(super::layers::outside_deps());
    let ours: Vec<String> = deps.keys().cloned().collect();
    let dep_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let mut missing = Vec::new();
    for (pkg, list) in &deps {
        for (dep, kind) in list.iter().filter(|(d, _)| !ours.contains(d)) {
            let named = section.match_indices(dep.as_str()).any(|(i, _)| {
                !section[..i].chars().next_back().is_some_and(dep_char)
                    && !section[i + dep.len()..].chars().next().is_some_and(dep_char)
            });
            if !named {
                missing.push(format!("{dep} ({kind}, used by {pkg})"));
            }
        }
    }
    assert!(deps.len() > 20, "only {} packages read", deps.len());
    assert!(
        missing.is_empty(),
        "dependencies without their line in docs/ARCHITECTURE.md's Dependencies:\n{}",
        missing.join("\n")
    );
}

/// The numbers docs/ARCHITECTURE.md states, each with the line of code that makes it true:
/// (what the map says, the file, what the file says).
const NUMBERS: [(&str, &str, &str); 11] = [
    ("FIFO 97 for the\nchosen worker", "crates/plan/src/rt.rs", "DISPATCH_RUN_PRIORITY: u32 = 97;"),
    ("at SCHED_FIFO 99", "crates/sys/src/sched.rs", "ENGINE_PRIORITY: u32 = 99;"),
    ("(workers may use at most 98)", "crates/plan/src/policy.rs", "MAX_WORKER_PRIORITY: i64 = 98;"),
    ("more than 0.5 s late", "crates/runner/src/engine/supervise.rs", "from_millis(500);"),
    ("kills 60+ runs", "tests/killed.rs", "const KILLS: usize = 60;"),
    ("counted 64 at a time", "crates/bpf/src/bpf/sched.bpf.c", "#define STAGE 64"),
    ("(level 3:", "crates/trace/src/raw.rs", "KEEP_LEVEL: i32 = 3;"),
    ("aya (0.14,", "crates/bpf/Cargo.toml", "aya = { version = \"0.14."),
    ("Rust to 1.87", "Cargo.toml", "rust-version = \"1.87\""),
    ("libbpf-rs 0.27, scx_utils 1.1.4", "crates/scx-dwcs/Cargo.toml", "libbpf-rs = \"=0.27."),
    ("clang-19", "crates/bpf/build-bpf.sh", "clang-19"),
];

#[test]
fn the_numbers_the_map_states_are_the_codes() {
    let map = read(&root().join("docs/ARCHITECTURE.md"));
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let map = flat(&map);
    for (said, file, code) in NUMBERS {
        assert!(
            map.contains(&flat(said)),
            "docs/ARCHITECTURE.md no longer says \"{said}\": update NUMBERS"
        );
        let text = read(&root().join(file));
        assert!(
            text.contains(code),
            "docs/ARCHITECTURE.md says \"{said}\", but {file} no longer has \"{code}\": correct the map"
        );
    }
    // "Its programs ... are four": sched_process_fork, sched_switch, sched_wakeup and
    // sched_wakeup_new.
    let bpf = read(&root().join("crates/bpf/src/bpf/sched.bpf.c"));
    let programs: Vec<&str> = bpf.lines().filter(|l| l.starts_with("SEC(\"")).collect();
    assert!(
        map.contains("are four: sched_process_fork gives"),
        "the map's count of BPF programs moved"
    );
    assert_eq!(programs.len(), 4, "the map says the BPF observer has four programs: {programs:?}");
    let scx = read(&root().join("crates/scx-dwcs/Cargo.toml"));
    assert!(scx.contains("scx_utils = \"=1.1.4\"") && scx.contains("scx_cargo = \"=1.1.4\""));
}

/// The parameters and return type of each `fn` in `text`: from `fn` to its body or `;`.
fn signatures(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("fn ") {
        let starts_word =
            !rest[..i].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        let tail = &rest[i..];
        let end = tail.find(['{', ';']).unwrap_or(tail.len());
        if starts_word {
            out.push(&tail[..end]);
        }
        rest = &tail[3..];
    }
    out
}

/// True if a signature returns or takes `Result<_, String>` (or `&str`).
fn string_error(sig: &str) -> bool {
    let flat: String = sig.chars().filter(|c| !c.is_whitespace()).collect();
    flat.match_indices("Result<").any(|(i, _)| {
        let mut depth = 0;
        let mut last_comma = None;
        for (j, c) in flat[i + 6..].char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        let err = last_comma.map(|k| &flat[i + 6 + k + 1..i + 6 + j]);
                        return matches!(err, Some("String" | "&str" | "&'staticstr"));
                    }
                }
                ',' if depth == 1 => last_comma = Some(j),
                _ => {}
            }
        }
        false
    })
}

#[test]
fn no_signature_returns_a_string_error() {
    let map = read(&root().join("docs/ARCHITECTURE.md"));
    assert!(map.contains("No signature returns `Result<_, String>`"), "the map's claim moved");
    let mut paths = Vec::new();
    for dir in ["crates", "src"] {
        sources(&root().join(dir), &mut paths);
    }
    let mut found = Vec::new();
    for p in &paths {
        let text = read(p);
        for sig in signatures(&text).into_iter().filter(|s| string_error(s)) {
            found.push(format!(
                "{}: {}",
                p.display(),
                sig.split_whitespace().collect::<Vec<_>>().join(" ")
            ));
        }
    }
    assert!(paths.len() > 100, "only {} sources read", paths.len());
    assert!(
        found.is_empty(),
        "signatures with a String error (give them a typed one):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_signature_reader_finds_string_errors() {
    let text = "pub fn a(x: u8) -> Result<Vec<u8>, String> {}\nfn b() -> Result<(), MyError>;\nfn c(f: impl Fn() -> Result<u8, &'static str>) {}\nfn d() -> io::Result<BTreeMap<u8, String>> {}\n";
    let sigs = signatures(text);
    assert_eq!(sigs.len(), 4);
    let flagged: Vec<bool> = sigs.iter().map(|s| string_error(s)).collect();
    assert_eq!(flagged, [true, false, true, false]);
}
