"""Reads a Perfetto trace with Perfetto's own compiled protobuf definitions (the `perfetto`
Python package) and prints what the integration tests check, as JSON: sched_switch events
per CPU, the other ftrace events by name, the named processes and threads, the tracks and
their marks, the clock snapshot, and each kind's time range on the boot-time axis.

Usage: python3 perfetto_check.py FILE.pftrace
Exit status 3 when the perfetto or protobuf package is missing (the test skips then)."""

import json
import sys

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as e:  # the test says what is missing and skips
    print(f"cannot import Perfetto's protos: {e}", file=sys.stderr)
    sys.exit(3)

BOOTTIME, MONOTONIC = 6, 3


def main(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    out = {
        "switches": {},
        "events": {},
        "processes": {},
        "threads": {},
        "tracks": {},
        "marks": [],
        "lost_bundles": 0,
        "clocks": {},
        "ftrace_range": None,
        "marks_range": None,
        "bundles_with_clock": 0,
    }
    offset = None  # boot - mono, from the snapshot
    switch_ins = {}
    switch_outs = {}
    wakings = {}
    lo, hi = None, None
    for p in trace.packet:
        kind = p.WhichOneof("data")
        if kind == "clock_snapshot":
            clocks = {c.clock_id: c.timestamp for c in p.clock_snapshot.clocks}
            out["clocks"] = {str(k): v for k, v in clocks.items()}
            if BOOTTIME in clocks and MONOTONIC in clocks:
                offset = clocks[BOOTTIME] - clocks[MONOTONIC]
        elif kind == "ftrace_events":
            b = p.ftrace_events
            if b.HasField("ftrace_clock"):
                out["bundles_with_clock"] += 1
            if b.lost_events:
                out["lost_bundles"] += 1
            cpu = str(b.cpu)
            for e in b.event:
                name = e.WhichOneof("event")
                if name == "sched_switch":
                    out["switches"][cpu] = out["switches"].get(cpu, 0) + 1
                    switch_ins.setdefault(e.sched_switch.next_pid, []).append(e.timestamp)
                    switch_outs.setdefault(e.sched_switch.prev_pid, []).append(e.timestamp)
                    for pid, comm in ((e.sched_switch.prev_pid, e.sched_switch.prev_comm), (e.sched_switch.next_pid, e.sched_switch.next_comm)):
                        if pid and str(pid) not in out["threads"]:
                            out["threads"][str(pid)] = comm
                if name == "sched_waking":
                    wakings.setdefault(e.sched_waking.pid, []).append(e.timestamp)
                out["events"][name] = out["events"].get(name, 0) + 1
                lo = e.timestamp if lo is None else min(lo, e.timestamp)
                hi = e.timestamp if hi is None else max(hi, e.timestamp)
        elif kind == "process_tree":
            for pr in p.process_tree.processes:
                out["processes"][str(pr.pid)] = " ".join(pr.cmdline)
            for t in p.process_tree.threads:
                out["threads"][str(t.tid)] = f"thread of {t.tgid}"
        elif kind == "track_descriptor":
            d = p.track_descriptor
            out["tracks"][str(d.uuid)] = {"name": d.name, "pid": d.process.pid if d.HasField("process") else None}
        elif kind == "track_event":
            e = p.track_event
            ts = p.timestamp
            if p.timestamp_clock_id == MONOTONIC and offset is not None:
                ts += offset  # onto the boot-time axis, as Perfetto's clock tracker does
            elif p.HasField("timestamp_clock_id") and p.timestamp_clock_id != BOOTTIME:
                raise SystemExit(f"track event on clock {p.timestamp_clock_id} without a snapshot")
            kinds = {1: "begin", 2: "end", 3: "instant"}
            out["marks"].append({"track": str(e.track_uuid), "type": kinds.get(e.type, str(e.type)), "name": e.name, "ts": ts})
    out["ftrace_range"] = [lo, hi]
    # When each named process was switched in, for the marks' alignment.
    out["switch_ins"] = {pid: sorted(switch_ins.get(int(pid), [])) for pid in out["processes"]}
    # When each left a CPU: its last switch-out is its exit, after its own end.
    out["switch_outs"] = {pid: sorted(switch_outs.get(int(pid), [])) for pid in out["processes"]}
    # When each was woken: some guests record no switch away from the idle task, so a task
    # woken on an idle CPU may show its waking but not its switch-in.
    out["wakings"] = {pid: sorted(wakings.get(int(pid), [])) for pid in out["processes"]}
    if out["marks"]:
        ts = [m["ts"] for m in out["marks"]]
        out["marks_range"] = [min(ts), max(ts)]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
