//! Runs one periodic spin task and prints its summary as JSON, e.g. to compare the wake-up
//! latency with cyclictest at the same interval and priority:
//!
//! ```text
//! cargo run --release -p schedlab-periodic --example periodic -- C_US T_US JOBS [FIFO_PRIORITY]
//! cyclictest -m -q -t1 -p PRIORITY -i T_US -l JOBS -h 1000   # compare the medians
//! ```

use schedlab_periodic::{now_ns, RunOptions, Runner, SpinBody, TaskParams};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<u64> =
        match std::env::args().skip(1).map(|a| a.parse::<u64>()).collect::<Result<Vec<u64>, _>>() {
            Ok(a) if (3..=4).contains(&a.len()) => a,
            _ => {
                eprintln!("usage: periodic C_US T_US JOBS [FIFO_PRIORITY]");
                return ExitCode::from(2);
            }
        };
    let params = TaskParams::new(args[0] * 1000, args[1] * 1000);
    // SAFETY: geteuid cannot fail.
    let lock_memory = unsafe { libc::geteuid() } == 0;
    let mut runner = match Runner::prepare(
        params,
        args[2] as usize,
        SpinBody::new(params.c_ns),
        RunOptions { lock_memory, ..Default::default() },
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("periodic: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(&priority) = args.get(3) {
        let param = libc::sched_param { sched_priority: priority as i32 };
        // SAFETY: pid 0 is the calling thread; param is valid.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            eprintln!("periodic: SCHED_FIFO {priority}: {}", std::io::Error::last_os_error());
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = runner.run(now_ns() + params.t_ns) {
        eprintln!("periodic: {e}");
        return ExitCode::FAILURE;
    }
    println!("{}", serde_json::to_string_pretty(&runner.summary()).expect("a summary serialises"));
    ExitCode::SUCCESS
}
