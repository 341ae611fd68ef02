//! The map stays true and short: every crate has a one-paragraph README that
//! docs/ARCHITECTURE.md links to, the crate table's cells are one line each, and every name the
//! map and the READMEs mention in code spans still exists in the code.

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
fn every_name_the_map_and_the_readmes_mention_exists() {
    let mut files = Vec::new();
    for dir in ["crates", "src", "tests", "benches"] {
        sources(&root().join(dir), &mut files);
    }
    let code: String = files.iter().map(|p| read(p)).collect::<Vec<_>>().join("\n");
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
            let last = name.rsplit("::").next().unwrap();
            checked += 1;
            if !has_word(&code, last) {
                missing.push(format!("{}: `{span}`", doc.display()));
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
