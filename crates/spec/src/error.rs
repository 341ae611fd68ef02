//! Spec errors that point at the file, line and column of the offending text.

use std::fmt;
use std::ops::Range;

/// The most characters of one name or value a message echoes, and of the source line the
/// caret display shows: a 10 KB key must not become 10 KB of stderr.
pub const ECHO_CHARS: usize = 80;
/// The most characters of a whole message (a list of alternatives can be long).
const MESSAGE_CHARS: usize = 1000;

/// An error in an experiment file, with the location of the offending text.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecError {
    /// File name as given by the user (or `<built-in>`).
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub col: usize,
    /// What is wrong and, where possible, what to do; names and values cut to
    /// [`ECHO_CHARS`].
    pub message: String,
    /// The source line, for the caret display (cut around the column when shown).
    pub source_line: Option<String>,
}

impl SpecError {
    /// An error at a byte span of `src`.
    pub fn at(path: &str, src: &str, span: Range<usize>, message: impl Into<String>) -> Self {
        let (line, col) = line_col(src, span.start);
        let source_line =
            src.split('\n').nth(line - 1).map(|l| l.strip_suffix('\r').unwrap_or(l).to_string());
        SpecError { path: path.to_string(), line, col, message: tidy(&message.into()), source_line }
    }

    /// The first invalid UTF-8 byte of a file that is not text, at its line and column.
    pub fn not_utf8(path: &str, bytes: &[u8], e: std::str::Utf8Error) -> Self {
        let good = e.valid_up_to();
        let line_start = bytes[..good].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let line = bytes[..good].iter().filter(|&&b| b == b'\n').count() + 1;
        let col =
            std::str::from_utf8(&bytes[line_start..good]).map_or(1, |s| s.chars().count() + 1);
        let line_end = bytes[line_start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| line_start + i);
        let source_line = Some(String::from_utf8_lossy(&bytes[line_start..line_end]).into_owned());
        let message = format!(
            "invalid UTF-8 (byte 0x{:02x}): an experiment file must be UTF-8 text",
            bytes[good]
        );
        SpecError { path: path.to_string(), line, col, message, source_line }
    }
}

/// 1-based (line, column) of a byte offset; columns count characters, not bytes. An
/// offset past the end or inside a character counts from the character it falls in.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(src.len());
    while !src.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let col = src[line_start..offset].chars().count() + 1;
    (line, col)
}

/// `s` cut to `max` characters, with an ellipsis when something was left out.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A message fit for a terminal: control characters escaped, every quoted name or value
/// and every unbroken run of characters cut to [`ECHO_CHARS`], the whole to
/// `MESSAGE_CHARS`. Messages quote what they echo ("…" or `…`), which is what lets one
/// rule cover every message, the TOML parser's included.
fn tidy(message: &str) -> String {
    let mut chars: Vec<char> = Vec::with_capacity(message.len());
    for c in message.chars() {
        match c.is_control() {
            true => chars.extend(c.escape_default()),
            false => chars.push(c),
        }
    }
    let mut out = String::with_capacity(chars.len().min(MESSAGE_CHARS + 8));
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let quoted =
            (c == '"' || c == '`').then(|| chars[i + 1..].iter().position(|&d| d == c)).flatten();
        let end = match quoted {
            // The quoted text, without its quotes.
            Some(len) => {
                out.push(c);
                i += 1;
                i + len
            }
            None if c.is_whitespace() => {
                out.push(c);
                i += 1;
                continue;
            }
            None => {
                i + chars[i..]
                    .iter()
                    .position(|d| d.is_whitespace() || *d == '"' || *d == '`')
                    .unwrap_or(chars.len() - i)
                    .max(1)
            }
        };
        let part: String = chars[i..end].iter().collect();
        out.push_str(&cut(&part, ECHO_CHARS));
        i = end;
        if quoted.is_some() {
            out.push(c);
            i += 1;
        }
    }
    cut(&out, MESSAGE_CHARS)
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.path, self.line, self.col, self.message)?;
        if let Some(text) = &self.source_line {
            let (shown, caret) = window(text, self.col);
            let pad: String =
                shown.chars().take(caret).map(|ch| if ch == '\t' { '\t' } else { ' ' }).collect();
            write!(f, "\n  | {shown}\n  | {pad}^")?;
        }
        Ok(())
    }
}

/// At most [`ECHO_CHARS`] characters of a source line around 1-based column `col`, control
/// characters shown as '?', and the caret's offset in what is shown.
fn window(line: &str, col: usize) -> (String, usize) {
    let chars: Vec<char> =
        line.chars().map(|c| if c.is_control() && c != '\t' { '?' } else { c }).collect();
    let at = col.saturating_sub(1).min(chars.len());
    if chars.len() <= ECHO_CHARS {
        return (chars.into_iter().collect(), at);
    }
    let start = at.saturating_sub(ECHO_CHARS / 2).min(chars.len() - ECHO_CHARS);
    let end = start + ECHO_CHARS;
    let mut shown = String::new();
    if start > 0 {
        shown.push('…');
    }
    shown.extend(&chars[start..end]);
    if end < chars.len() {
        shown.push('…');
    }
    (shown, at - start + usize::from(start > 0))
}

impl std::error::Error for SpecError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_in_messages_are_cut_to_80_characters() {
        let long = "k".repeat(10_000);
        let e = SpecError::at(
            "t.toml",
            "x",
            0..0,
            format!("unknown field `{long}`, expected \"{long} {long}\" or [w.{long}]"),
        );
        assert!(e.message.len() < 400, "{}", e.message);
        assert!(
            e.message.starts_with(&format!("unknown field `{}…`", "k".repeat(80))),
            "{}",
            e.message
        );
        assert!(e.message.contains(&format!("[w.{}…", "k".repeat(77))), "{}", e.message);
    }

    #[test]
    fn messages_keep_short_quoted_values_and_escape_control_characters() {
        let e = SpecError::at(
            "t.toml",
            "x",
            0..0,
            "unknown workload \"a b\"; use one of: pi, copy\u{1b}[2J",
        );
        assert_eq!(e.message, "unknown workload \"a b\"; use one of: pi, copy\\u{1b}[2J");
    }

    #[test]
    fn a_long_source_line_is_shown_around_the_column() {
        let line = format!("{} = 1{}", "a".repeat(5000), "b".repeat(5000));
        let shown = SpecError::at("t.toml", &line, 5003..5004, "here").to_string();
        assert!(shown.len() < 400, "{shown}");
        let mut lines = shown.lines().skip(1);
        let (text, caret) = (lines.next().unwrap(), lines.next().unwrap());
        let at = caret.chars().count() - 1;
        assert_eq!(text.chars().nth(at), Some('1'), "{shown}");
    }

    #[test]
    fn invalid_utf8_is_located_at_its_first_bad_byte() {
        let bytes = b"name = \"x\"\nd\xc3\xa9sc = \"\xff\"\n";
        let e = crate::decode("t.toml", bytes).unwrap_err();
        assert_eq!((e.line, e.col), (2, 9), "{e}");
        assert!(e.to_string().starts_with("t.toml:2:9: invalid UTF-8 (byte 0xff)"), "{e}");
    }

    #[test]
    fn offsets_inside_a_character_do_not_panic() {
        assert_eq!(line_col("é", 1), (1, 1));
        assert_eq!(line_col("a\nb", 99), (2, 2));
    }
}
