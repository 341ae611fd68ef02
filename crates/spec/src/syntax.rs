//! A location for the TOML errors the parser reports without one.

use toml_parser::parser::{parse_document, Event, EventKind};

/// Where a TOML error without a span points, and its message: the parser's "recursion
/// limit" is a key of more than 80 dotted parts, so it points at the most deeply dotted key;
/// anything else at the start of the file.
pub(crate) fn locate(text: &str, message: &str) -> (usize, String) {
    if !message.contains("recursion") {
        return (0, message.to_string());
    }
    let source = toml_parser::Source::new(text);
    let tokens = source.lex().into_vec();
    let mut events: Vec<Event> = Vec::new();
    parse_document(&tokens, &mut events, &mut ());
    let significant: Vec<&Event> =
        events.iter().filter(|e| e.kind() != EventKind::Whitespace).collect();
    let (mut best_at, mut best_parts) = (0, 1);
    let mut i = 0;
    while i < significant.len() {
        if significant[i].kind() != EventKind::SimpleKey {
            i += 1;
            continue;
        }
        let at = significant[i].span().start();
        let mut parts = 1;
        i += 1;
        while i + 1 < significant.len()
            && significant[i].kind() == EventKind::KeySep
            && significant[i + 1].kind() == EventKind::SimpleKey
        {
            parts += 1;
            i += 2;
        }
        if parts > best_parts {
            (best_at, best_parts) = (at, parts);
        }
    }
    if best_parts > 1 {
        (best_at, format!("{message}: this key has {best_parts} dotted parts, more than the TOML parser nests"))
    } else {
        (0, message.to_string())
    }
}
