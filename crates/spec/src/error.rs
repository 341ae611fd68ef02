//! Spec errors that point at the file, line and column of the offending text.

use std::fmt;
use std::ops::Range;

/// An error in an experiment file, with the location of the offending text.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecError {
    /// File name as given by the user (or `<built-in>`).
    pub path: String,
    /// 1-based line, if the error has a location.
    pub line: Option<usize>,
    /// 1-based column (in characters), if the error has a location.
    pub col: Option<usize>,
    /// What is wrong and, where possible, what to do.
    pub message: String,
    /// The source line, for the caret display.
    pub source_line: Option<String>,
}

impl SpecError {
    /// An error at a byte span of `src`.
    pub fn at(path: &str, src: &str, span: Option<Range<usize>>, message: impl Into<String>) -> Self {
        let message = message.into();
        match span {
            Some(span) => {
                let (line, col) = line_col(src, span.start);
                let source_line = src.lines().nth(line - 1).map(str::to_string);
                SpecError { path: path.to_string(), line: Some(line), col: Some(col), message, source_line }
            }
            None => SpecError { path: path.to_string(), line: None, col: None, message, source_line: None },
        }
    }
}

/// 1-based (line, column) of a byte offset; columns count characters, not bytes.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let col = src[line_start..offset].chars().count() + 1;
    (line, col)
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.col) {
            (Some(l), Some(c)) => {
                write!(f, "{}:{}:{}: {}", self.path, l, c, self.message)?;
                if let Some(text) = &self.source_line {
                    let pad: String = text.chars().take(c - 1).map(|ch| if ch == '\t' { '\t' } else { ' ' }).collect();
                    write!(f, "\n  | {}\n  | {}^", text, pad)?;
                }
                Ok(())
            }
            _ => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

impl std::error::Error for SpecError {}
