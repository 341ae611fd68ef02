#!/usr/bin/env bash
# Where the cost of `run --trace` lies: rounds of the spec run three ways, in a random order
# in each round: plain; untraced while a tracefs instance of this script's own records
# the events `--trace` enables (same options: mono clock, norecord-cmd; a 64 MiB buffer per
# CPU that no reader empties: when full it overwrites its oldest pages, the same work for
# the writer): the kernel's cost alone; and with `--trace`: all of it (the kernel's and
# schedlab's reader; the decoding comes after the last reap, outside the makespan). Prints
# each cell's median makespan each way, and per round the events recorded and overwritten.
# Needs root and tracefs mounted at /sys/kernel/tracing.
#
#   benches/trace_cost_split.sh SPEC [ROUNDS] [SCALE]
set -euo pipefail
SPEC=$1
ROUNDS=${2:-6}
SCALE=${3:-0.05}
BIN=${SCHEDLAB:-$(dirname "$0")/../target/release/schedlab}
T=/sys/kernel/tracing
I=$T/instances/schedlab-bench-kernel-cost
[ -d "$T/instances" ] || { echo "tracefs is not mounted at $T (mount -t tracefs nodev $T)" >&2; exit 2; }
WORK=$(mktemp -d)
off() { if [ -d "$I" ]; then echo 0 > "$I/tracing_on"; rmdir "$I"; fi; }
trap 'off; rm -rf "$WORK"' EXIT
on() {
    mkdir "$I"
    echo 0 > "$I/tracing_on"
    echo mono > "$I/trace_clock"
    echo 65536 > "$I/buffer_size_kb"
    echo norecord-cmd > "$I/trace_options"
    for e in sched_switch sched_waking sched_wakeup_new sched_migrate_task sched_process_fork sched_process_exec sched_process_exit; do
        echo 1 > "$I/events/sched/$e/enable"
    done
    echo 1 > "$I/tracing_on"
}
for r in $(seq "$ROUNDS"); do
    for side in $(shuf -e plain recorded traced); do
        [ $side = recorded ] && on
        flag=(); [ $side = traced ] && flag=(--trace)
        "$BIN" --db "$WORK/$side.db" run -q "$SPEC" --scale "$SCALE" "${flag[@]}" > /dev/null
        if [ $side = recorded ]; then
            echo "round $r: $(cat "$I"/per_cpu/cpu*/stats | awk '/^entries/ {e += $2} /^overrun/ {o += $2} END {print e " events recorded, " o " overwritten"}')"
            off
        fi
    done
done
python3 - "$WORK" <<'PY'
import collections, sqlite3, statistics, sys
d = collections.defaultdict(dict)
for side in ["plain", "recorded", "traced"]:
    c = sqlite3.connect(f"{sys.argv[1]}/{side}.db")
    v = collections.defaultdict(list)
    for key, m in c.execute("select key, makespan_s from cells where warmup = 0 and makespan_s is not null"):
        v[key].append(m)
    for key, ms in v.items():
        d[key][side] = ms
print("| cell | plain [s] | events recorded, no reader [s] | `--trace` [s] | recorded / plain | traced / plain | repetitions each |")
print("|---|---|---|---|---|---|---|")
for key in sorted(d):
    p, k, t = (statistics.median(d[key][s]) for s in ["plain", "recorded", "traced"])
    print(f"| {key} | {p:.3f} | {k:.3f} | {t:.3f} | {k / p:.3f} | {t / p:.3f} | {len(d[key]['plain'])} |")
PY
