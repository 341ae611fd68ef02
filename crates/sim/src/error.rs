//! Why a simulation input was refused.

use schedlab_policy::{Duration, PolicyError};

/// An invalid simulation input; each variant says which task and what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// There is nothing to simulate.
    #[error("the task set is empty: add at least one task")]
    EmptyTaskSet,
    /// A simulation needs at least one CPU.
    #[error("the number of CPUs must be at least 1")]
    NoCpus,
    /// The policy's own parameters are invalid.
    #[error("invalid policy parameters: {0}")]
    Policy(#[source] PolicyError),
    /// A task's scheduling parameters are invalid (e.g. a window with x > y).
    #[error("task `{task}`: {source}")]
    InvalidParams {
        /// The task's name.
        task: String,
        /// What is wrong.
        source: PolicyError,
    },
    /// A periodic task with period 0.
    #[error("task `{task}`: the period must be greater than zero")]
    ZeroPeriod {
        /// The task's name.
        task: String,
    },
    /// A periodic task with C = 0.
    #[error("task `{task}`: the execution time C must be greater than zero")]
    ZeroWcet {
        /// The task's name.
        task: String,
    },
    /// A periodic task that can never meet its deadline.
    #[error(
        "task `{task}`: execution time C = {wcet} exceeds the relative deadline D = {deadline}"
    )]
    WcetExceedsDeadline {
        /// The task's name.
        task: String,
        /// C.
        wcet: Duration,
        /// D.
        deadline: Duration,
    },
    /// `min_exec` must lie in 1..=C.
    #[error("task `{task}`: min_exec {min_exec} must be between 1 and C = {wcet}")]
    BadMinExec {
        /// The task's name.
        task: String,
        /// The given minimum.
        min_exec: Duration,
        /// C.
        wcet: Duration,
    },
    /// A compute or I/O phase of length zero, or no phase at all.
    #[error("task `{task}`: every phase must have a length greater than zero, and there must be at least one")]
    ZeroWork {
        /// The task's name.
        task: String,
    },
    /// A send or receive on a channel the configuration does not have.
    #[error("task `{task}`: channel {channel} does not exist (the configuration has {channels})")]
    UnknownChannel {
        /// The task's name.
        task: String,
        /// The channel it names.
        channel: u32,
        /// How many channels there are.
        channels: usize,
    },
    /// A channel that can hold no message.
    #[error("channel {channel}: its capacity must be at least 1 message")]
    ZeroCapacity {
        /// The channel.
        channel: usize,
    },
    /// A repeated sequence run zero times.
    #[error("task `{task}`: a repeated sequence needs at least 1 round")]
    ZeroRounds {
        /// The task's name.
        task: String,
    },
    /// A job limit of zero.
    #[error("task `{task}`: a job limit of 0 releases nothing; omit it or give at least 1")]
    ZeroJobs {
        /// The task's name.
        task: String,
    },
    /// A partition assignment that names a CPU that does not exist.
    #[error("task `{task}` is assigned to CPU {cpu}, but there are only {cpus} CPUs (more partitions than CPUs)")]
    MorePartitionsThanCpus {
        /// The task's name.
        task: String,
        /// The CPU it was assigned to.
        cpu: usize,
        /// The number of CPUs.
        cpus: usize,
    },
    /// A partition assignment that does not cover exactly the tasks.
    #[error("the partition assignment has {got} entries for {tasks} tasks: give one CPU per task")]
    PartitionLength {
        /// Number of tasks.
        tasks: usize,
        /// Number of entries.
        got: usize,
    },
    /// A tick that takes its whole period, or more: nothing else would ever run.
    #[error("the tick costs {tick} every {period}: it must be shorter than its period")]
    TickTooLong {
        /// The tick's cost.
        tick: Duration,
        /// Its period.
        period: Duration,
    },
    /// A tick without a horizon would tick forever.
    #[error("a periodic interrupt (tick) needs a horizon")]
    TickWithoutHorizon,
    /// A periodic task without job limit and no horizon would run forever.
    #[error("task `{task}` releases jobs forever: set a horizon or a job limit")]
    Unbounded {
        /// The task's name.
        task: String,
    },
}
