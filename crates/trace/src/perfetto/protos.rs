//! The messages of Perfetto's trace format that an export writes, declared with prost's
//! derive. Field numbers and types are Perfetto's own (protos/perfetto/trace/...: the file
//! is named on each message); only the fields schedlab writes are declared, and a `oneof`
//! of the real format is spelled as separate optional fields where the wire form is the
//! same. The integration test decodes the output with the `perfetto` Python package's
//! compiled definitions, so a wrong number fails there.

/// A whole trace: packets back to back (trace.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    /// The packets.
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// One packet (trace_packet.proto): a timestamp and one kind of data.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// When, on `timestamp_clock_id` (boot time when unset).
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// The clock of `timestamp` (a `BuiltinClock`).
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    /// The writer's sequence.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// `SEQ_INCREMENTAL_STATE_CLEARED` on a sequence's first packet.
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// Kernel events of one CPU.
    #[prost(message, optional, tag = "1")]
    pub ftrace_events: Option<FtraceEventBundle>,
    /// Processes and threads with their names.
    #[prost(message, optional, tag = "2")]
    pub process_tree: Option<ProcessTree>,
    /// Clocks read at one instant.
    #[prost(message, optional, tag = "6")]
    pub clock_snapshot: Option<ClockSnapshot>,
    /// The machine.
    #[prost(message, optional, tag = "45")]
    pub system_info: Option<SystemInfo>,
    /// A track for track events.
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
    /// An event on a track.
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
}

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `BuiltinClock.BUILTIN_CLOCK_REALTIME` (builtin_clock.proto).
pub const CLOCK_REALTIME: u32 = 1;
/// `BuiltinClock.BUILTIN_CLOCK_MONOTONIC`.
pub const CLOCK_MONOTONIC: u32 = 3;
/// `BuiltinClock.BUILTIN_CLOCK_BOOTTIME`: the clock ftrace bundles are read in.
pub const CLOCK_BOOTTIME: u32 = 6;

/// Clocks read at one instant (clock_snapshot.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    /// The clocks.
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<ClockReading>,
    /// The clock the trace's timeline is drawn in.
    #[prost(uint32, optional, tag = "2")]
    pub primary_trace_clock: Option<u32>,
}

/// One clock's reading.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockReading {
    /// A `BuiltinClock`.
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    /// Its value, ns.
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
}

/// The machine (system_info.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SystemInfo {
    /// uname(2).
    #[prost(message, optional, tag = "1")]
    pub utsname: Option<Utsname>,
    /// CPUs.
    #[prost(uint32, optional, tag = "8")]
    pub num_cpus: Option<u32>,
}

/// uname(2)'s fields; Perfetto reads the kernel's `prev_state` layout from `release`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Utsname {
    /// "Linux".
    #[prost(string, optional, tag = "1")]
    pub sysname: Option<String>,
    /// The kernel's build string.
    #[prost(string, optional, tag = "2")]
    pub version: Option<String>,
    /// The kernel release (`6.18.0`).
    #[prost(string, optional, tag = "3")]
    pub release: Option<String>,
    /// The architecture.
    #[prost(string, optional, tag = "4")]
    pub machine: Option<String>,
}

/// Processes and threads (ps/process_tree.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessTree {
    /// Processes.
    #[prost(message, repeated, tag = "1")]
    pub processes: Vec<TreeProcess>,
    /// Threads other than each process's main thread.
    #[prost(message, repeated, tag = "2")]
    pub threads: Vec<Thread>,
}

/// A process.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TreeProcess {
    /// Its pid.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// Its parent's.
    #[prost(int32, optional, tag = "2")]
    pub ppid: Option<i32>,
    /// Its command line; the first word names it.
    #[prost(string, repeated, tag = "3")]
    pub cmdline: Vec<String>,
}

/// A thread.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Thread {
    /// Its tid.
    #[prost(int32, optional, tag = "1")]
    pub tid: Option<i32>,
    /// Its process.
    #[prost(int32, optional, tag = "3")]
    pub tgid: Option<i32>,
    /// Its name.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// One CPU's kernel events (ftrace/ftrace_event_bundle.proto). Without `ftrace_clock`
/// Perfetto reads the timestamps as boot time.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FtraceEventBundle {
    /// The CPU.
    #[prost(uint32, optional, tag = "1")]
    pub cpu: Option<u32>,
    /// Its events in order.
    #[prost(message, repeated, tag = "2")]
    pub event: Vec<FtraceEvent>,
    /// The kernel dropped events on this CPU before these.
    #[prost(bool, optional, tag = "3")]
    pub lost_events: Option<bool>,
}

/// One kernel event (ftrace/ftrace_event.proto): the common fields and one event.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FtraceEvent {
    /// When, ns.
    #[prost(uint64, optional, tag = "1")]
    pub timestamp: Option<u64>,
    /// The task that was running on the CPU (the event's common_pid).
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    /// The event.
    #[prost(oneof = "Ftrace", tags = "4, 17, 20, 45, 114, 125, 237, 238, 239, 491")]
    pub event: Option<Ftrace>,
}

/// The events an export writes (FtraceEvent's `oneof event`).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Ftrace {
    /// sched_switch.
    #[prost(message, tag = "4")]
    SchedSwitch(SchedSwitch),
    /// sched_wakeup.
    #[prost(message, tag = "17")]
    SchedWakeup(SchedWake),
    /// sched_waking.
    #[prost(message, tag = "20")]
    SchedWaking(SchedWake),
    /// block_rq_issue.
    #[prost(message, tag = "45")]
    BlockRqIssue(BlockRqIssue),
    /// sched_wakeup_new.
    #[prost(message, tag = "114")]
    SchedWakeupNew(SchedWake),
    /// block_rq_complete.
    #[prost(message, tag = "125")]
    BlockRqComplete(BlockRqComplete),
    /// sched_process_exec.
    #[prost(message, tag = "237")]
    SchedProcessExec(SchedProcessExec),
    /// sched_process_exit.
    #[prost(message, tag = "238")]
    SchedProcessExit(SchedProcessExit),
    /// sched_process_fork.
    #[prost(message, tag = "239")]
    SchedProcessFork(SchedProcessFork),
    /// sched_migrate_task.
    #[prost(message, tag = "491")]
    SchedMigrateTask(SchedMigrateTask),
}

/// ftrace/sched.proto: SchedSwitchFtraceEvent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedSwitch {
    /// Leaving task's comm.
    #[prost(string, optional, tag = "1")]
    pub prev_comm: Option<String>,
    /// Leaving task.
    #[prost(int32, optional, tag = "2")]
    pub prev_pid: Option<i32>,
    /// Its priority.
    #[prost(int32, optional, tag = "3")]
    pub prev_prio: Option<i32>,
    /// Its state, as the kernel reported it.
    #[prost(int64, optional, tag = "4")]
    pub prev_state: Option<i64>,
    /// Arriving task's comm.
    #[prost(string, optional, tag = "5")]
    pub next_comm: Option<String>,
    /// Arriving task.
    #[prost(int32, optional, tag = "6")]
    pub next_pid: Option<i32>,
    /// Its priority.
    #[prost(int32, optional, tag = "7")]
    pub next_prio: Option<i32>,
}

/// ftrace/sched.proto: SchedWaking-, SchedWakeup- and SchedWakeupNewFtraceEvent (one layout).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedWake {
    /// The woken task's comm.
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    /// The woken task.
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    /// Its priority.
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    /// Always 1 on current kernels.
    #[prost(int32, optional, tag = "4")]
    pub success: Option<i32>,
    /// The CPU it will run on.
    #[prost(int32, optional, tag = "5")]
    pub target_cpu: Option<i32>,
}

/// ftrace/sched.proto: SchedMigrateTaskFtraceEvent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedMigrateTask {
    /// The task's comm.
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    /// The task.
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    /// Its priority.
    #[prost(int32, optional, tag = "3")]
    pub prio: Option<i32>,
    /// From.
    #[prost(int32, optional, tag = "4")]
    pub orig_cpu: Option<i32>,
    /// To.
    #[prost(int32, optional, tag = "5")]
    pub dest_cpu: Option<i32>,
}

/// ftrace/sched.proto: SchedProcessForkFtraceEvent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedProcessFork {
    /// The parent's comm.
    #[prost(string, optional, tag = "1")]
    pub parent_comm: Option<String>,
    /// The parent.
    #[prost(int32, optional, tag = "2")]
    pub parent_pid: Option<i32>,
    /// The child's comm.
    #[prost(string, optional, tag = "3")]
    pub child_comm: Option<String>,
    /// The child.
    #[prost(int32, optional, tag = "4")]
    pub child_pid: Option<i32>,
}

/// ftrace/sched.proto: SchedProcessExitFtraceEvent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedProcessExit {
    /// The task's comm.
    #[prost(string, optional, tag = "1")]
    pub comm: Option<String>,
    /// The task.
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    /// Its process, when known (a process's main thread: its pid).
    #[prost(int32, optional, tag = "3")]
    pub tgid: Option<i32>,
}

/// ftrace/sched.proto: SchedProcessExecFtraceEvent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SchedProcessExec {
    /// The program.
    #[prost(string, optional, tag = "1")]
    pub filename: Option<String>,
    /// The task.
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
    /// Its pid before the exec (the same unless a thread exec'd).
    #[prost(int32, optional, tag = "3")]
    pub old_pid: Option<i32>,
}

/// ftrace/block.proto: BlockRqIssueFtraceEvent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BlockRqIssue {
    /// Device (dev_t).
    #[prost(uint64, optional, tag = "1")]
    pub dev: Option<u64>,
    /// First sector.
    #[prost(uint64, optional, tag = "2")]
    pub sector: Option<u64>,
    /// Sectors.
    #[prost(uint32, optional, tag = "3")]
    pub nr_sector: Option<u32>,
    /// Bytes.
    #[prost(uint32, optional, tag = "4")]
    pub bytes: Option<u32>,
    /// RWBS flags.
    #[prost(string, optional, tag = "5")]
    pub rwbs: Option<String>,
}

/// ftrace/block.proto: BlockRqCompleteFtraceEvent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BlockRqComplete {
    /// Device (dev_t).
    #[prost(uint64, optional, tag = "1")]
    pub dev: Option<u64>,
    /// First sector.
    #[prost(uint64, optional, tag = "2")]
    pub sector: Option<u64>,
    /// Sectors.
    #[prost(uint32, optional, tag = "3")]
    pub nr_sector: Option<u32>,
    /// RWBS flags.
    #[prost(string, optional, tag = "5")]
    pub rwbs: Option<String>,
    /// Error.
    #[prost(int32, optional, tag = "7")]
    pub error: Option<i32>,
}

/// A track (track_event/track_descriptor.proto); with `process` set it is that process's
/// own track.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    /// Its id in this trace.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// Its name.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// The process it belongs to.
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
}

/// A process a track belongs to (track_event/process_descriptor.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    /// Its pid.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// Its name.
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// An event on a track (track_event/track_event.proto).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    /// `TYPE_SLICE_BEGIN` (1), `TYPE_SLICE_END` (2) or `TYPE_INSTANT` (3).
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    /// The track.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// Its name.
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
}

/// `TrackEvent.Type.TYPE_SLICE_BEGIN`.
pub const SLICE_BEGIN: i32 = 1;
/// `TrackEvent.Type.TYPE_SLICE_END`.
pub const SLICE_END: i32 = 2;
/// `TrackEvent.Type.TYPE_INSTANT`.
pub const INSTANT: i32 = 3;
