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
