//! Integration tests: the built `schedlab` binary, each test in its own temporary directory.

#[macro_use]
mod util;

mod absurd_numbers;
mod adaptive;
mod cli_errors;
mod contention;
mod disturb;
mod docs;
mod edges;
mod engine;
mod export_formats;
mod fleet;
mod full_disk;
mod generated_docs;
mod groups;
mod import;
mod interrupt;
mod iosched;
mod kept_files;
mod kernel_dirs;
mod killed;
mod knobs;
mod layers;
mod mock_records;
mod nothing_lost;
mod old_database;
mod readable;
mod report;
mod rt;
mod rt_cgroup;
mod rt_context;
mod rtreport;
mod run_output;
mod scx;
mod shown_facts;
mod sim_rt_schedules;
mod sim_schedules;
mod simulate;
mod simulate_demand;
mod skips;
mod slice;
mod slurm_paths;
mod slurm_util;
mod spec_input;
mod stdout_errors;
mod trace;
mod trace_export;
mod unprivileged;
mod within_run;

mod architecture;
mod bpf;
mod free_figures;
mod noise;
mod sets;
