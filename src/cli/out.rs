//! Standard output that can fail: a full disk or a closed descriptor under stdout is an error
//! the command returns (exit 1, one line), never a panic of `println!`. A reader that went
//! away (`| head`) stays a broken pipe, which `main` counts as success.

/// `println!` that returns the error from the enclosing function when stdout refuses the line.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err($crate::cli::out::stdout_error)?
    }};
}

/// [`outln!`] for prose: a line longer than [`WIDTH`] wraps ([`wrap`]).
macro_rules! sayln {
    ($($arg:tt)*) => {
        outln!("{}", $crate::cli::out::wrap(&format!($($arg)*)))
    };
}

/// An error writing to standard output, for the user: a broken pipe keeps its `io::Error` as
/// the root cause (main's test for it), any other says what could not be written.
pub fn stdout_error(e: std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::BrokenPipe => anyhow::Error::new(e),
        _ => anyhow::anyhow!("cannot write to standard output: {e}"),
    }
}

/// Writes what is still buffered for standard output (a `print!` without a newline).
pub fn flush() -> anyhow::Result<()> {
    use std::io::Write as _;
    std::io::stdout().flush().map_err(stdout_error)
}

/// The widest a line of prose is printed (tables stay within it too).
pub const WIDTH: usize = 160;

/// `text` with each line longer than [`WIDTH`] broken at spaces, the continuation indented
/// by two spaces (a word longer than the width stays whole).
pub fn wrap(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut width = 0;
        for (j, word) in line.split(' ').enumerate() {
            let n = word.chars().count();
            if j > 0 && width + 1 + n > WIDTH {
                out.push_str("\n  ");
                width = 2;
            } else if j > 0 {
                out.push(' ');
                width += 1;
            }
            out.push_str(word);
            width += n;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_wrap_at_spaces_and_short_ones_stay() {
        assert_eq!(wrap("a b\nc"), "a b\nc");
        let long = vec!["word"; 60].join(" ");
        let wrapped = wrap(&long);
        assert!(wrapped.lines().all(|l| l.chars().count() <= WIDTH), "{wrapped}");
        assert_eq!(wrapped.replace("\n  ", " "), long);
    }
}
