//! schedlab: a laboratory for the Linux schedulers.
//!
//! `main` is thin: parse arguments, run the subcommand, print the whole error chain and
//! map the outcome to an exit status (0 ok, 1 failed cells or an error, 2 bad input, 128+N stopped by signal N).

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    // The engine execs this binary as its workers; they must not pay for clap.
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == schedlab_runner::protocol::WORKER_SUBCOMMAND {
        return ExitCode::from(schedlab_runner::worker::main(&args[2]) as u8);
    }
    if args.len() == 5 && args[1] == schedlab_runner::rt::DISPATCH_SUBCOMMAND {
        return ExitCode::from(
            schedlab_runner::rt::dispatcher_main(&args[2], &args[3], &args[4]) as u8
        );
    }
    let outcome = cli::run();
    if let Some(line) = schedlab_sys::phases::line() {
        eprintln!("{line}");
    }
    match outcome {
        Ok(code) => code,
        Err(e) => {
            if let Some(io) = e.root_cause().downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            let code = e
                .downcast_ref::<cli::Exit>()
                .map(|x| x.code)
                .or_else(|| e.downcast_ref::<schedlab_session::Error>().map(|x| x.exit_code()))
                .unwrap_or(1);
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(code)
        }
    }
}
