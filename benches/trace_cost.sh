#!/usr/bin/env bash
# What observing costs a cell, three ways side by side: each cell of SPEC plain, with the
# BPF observer (`trace = true`: figures aggregated in the kernel) and with the timeline
# (`trace = "timeline"`: the tracefs capture, with the BPF observer beside it). The three
# twins of each workload run REPS times each in one run in random order (`order =
# "random"`), so every side meets the same machine. Per cell: the median makespan (release
# to last reap) of each side and their ratios to plain; on the BPF side the events per second
# and the programs' own cost per event from the kernel's BPF statistics (run_time_ns /
# run_cnt of every program together), and the programs' run time against the workers' CPU
# time (wait4's user + sys of the cell's measured workers). Needs root and a release build.
#
#   benches/trace_cost.sh [REPS] [SCALE] [SPEC]     # DB=FILE keeps the run's database
#
# THIRD=plain makes the third twin a second plain copy (`NAME_again`, `trace = false`): an A/A
# control, whose ratio to plain is what the machine's noise alone gives.
set -euo pipefail
REPS=${1:-9}
SCALE=${2:-0.25}
SPEC=${3:-$(dirname "$0")/../experiments/pa3.toml}
BIN=${SCHEDLAB:-$(dirname "$0")/../target/release/schedlab}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
steal() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
read -r s0 t0 < <(steal)
echo "before: load average $(cut -d' ' -f1-3 /proc/loadavg)"
# The spec with `NAME_bpf` and `NAME_timeline` twins of each workload, all in the matrix.
python3 - "$SPEC" "$WORK/twins.toml" <<'PY'
import os, re, sys, tomllib
text = open(sys.argv[1]).read()
spec = tomllib.loads(text)
names = spec["matrix"]["workload"]
third = ("_again", "false") if os.environ.get("THIRD") == "plain" else ("_timeline", '"timeline"')
sides = [("", None), ("_bpf", "true"), third]
lines, twins, section = [], {s: [] for s, _ in sides[1:]}, None
for line in text.splitlines():
    m = re.match(r"\[workloads\.([\w-]+)\]", line)
    if m:
        section = m.group(1)
    elif line.startswith("["):
        section = None
    if line.startswith("workload = "):
        line = "workload = " + repr([w + s for w in names for s, _ in sides]).replace("'", '"')
    if line.startswith("repetitions") or line.startswith("order") or line.startswith("trace"):
        continue
    lines.append(line)
    if section in names:
        for s, v in sides[1:]:
            twins[s].append(line.replace(f"[workloads.{section}]", f"[workloads.{section}{s}]\ntrace = {v}"))
out = ['order = "random"'] + lines + [""]
for s in twins:
    out += twins[s] + [""]
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
DB=${DB:-$WORK/b.db}
"$BIN" --db "$DB" run -q "$WORK/twins.toml" --scale "$SCALE" --repetitions "$REPS"
read -r s1 t1 < <(steal)
echo "after: load average $(cut -d' ' -f1-3 /proc/loadavg); hypervisor steal during the run $(awk -v a=$((s1-s0)) -v b=$((t1-t0)) 'BEGIN{printf "%.2f", 100*a/b}')%"
python3 - "$DB" "$REPS" "$SCALE" <<'PY'
import collections, json, sqlite3, statistics, sys
c = sqlite3.connect(sys.argv[1])
d = collections.defaultdict(lambda: collections.defaultdict(list))
for cid, key, m, t in c.execute("select id, key, makespan_s, trace_json from cells where warmup = 0 and status = 'ok'"):
    w, rest = key.split("/", 1)
    side = "plain"
    for s in ("_bpf", "_timeline", "_again"):
        if w.endswith(s):
            side, w = s[1:], w.removesuffix(s)
    t = json.loads(t) if t else {}
    obs = t.get("observer") or (t.get("bpf") or {}).get("observer") or {}
    cpu = c.execute("select sum(user_s + sys_s) from samples where cell_row = ? and background = 0", (cid,)).fetchone()[0] or 0
    bpf_s = sum(p["run_time_ns"] for p in obs.get("programs", [])) / 1e9
    share = 100 * bpf_s / cpu if obs and cpu > 0 else None
    d[w + "/" + rest][side].append((m, obs.get("ns_per_event"), obs.get("events_per_s"), t.get("lost_events", 0), share))
third = "again" if any("again" in v for v in d.values()) else "timeline"
print(f"--scale {sys.argv[3]}, {sys.argv[2]} repetitions of each cell and of its two twins, in random order")
print(f"| cell | plain [s] | BPF [s] | BPF / plain | {third} [s] | {third} / plain | BPF events/s | BPF ns/event (max) | lost ({third}) | BPF run time / workers' CPU [%] |")
print("|---|---|---|---|---|---|---|---|---|---|")
rb, rt, worst, shares = [], [], 0.0, []
for key, v in d.items():
    med = lambda side: statistics.median(x[0] for x in v[side])
    p, b, tl = med("plain"), med("bpf"), med(third)
    rb.append(b / p); rt.append(tl / p)
    ns = [x[1] for x in v["bpf"] if x[1] is not None]
    worst = max(worst, max(ns, default=0))
    evs = statistics.median(x[2] for x in v["bpf"] if x[2] is not None) if ns else 0
    share = [x[4] for x in v["bpf"] if x[4] is not None]
    share = statistics.median(share) if share else float("nan")
    shares.append((share, key))
    print(f"| {key} | {p:.3f} | {b:.3f} | {b / p:.3f} | {tl:.3f} | {tl / p:.3f} | {evs:,.0f} | {statistics.median(ns) if ns else 0:.0f} ({max(ns, default=0):.0f}) | {max(x[3] for x in v[third])} | {share:.2f} |")
print(f"BPF / plain: median over cells {statistics.median(rb):.3f}, largest {max(rb):.3f}; "
      f"{third} / plain: median {statistics.median(rt):.3f}, largest {max(rt):.3f}; "
      f"BPF cost per event, largest in any repetition: {worst:.0f} ns")
top = max((x for x in shares if x[0] == x[0]), default=None)
if top:
    print(f"BPF run time against the workers' CPU time: median over cells {statistics.median(x[0] for x in shares if x[0] == x[0]):.2f}%, largest {top[0]:.2f}% ({top[1]})")
if third == "again":
    # Against both plain copies pooled (2 x REPS repetitions per cell).
    rp = [statistics.median(x[0] for x in v["bpf"]) / statistics.median([x[0] for x in v["plain"] + v["again"]]) for v in d.values()]
    print(f"BPF / both plain copies: median {statistics.median(rp):.3f}, largest {max(rp):.3f}, "
          f"cells above 1.03: {sum(r > 1.03 for r in rp)} of {len(rp)}")
PY
