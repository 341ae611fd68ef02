#!/usr/bin/env bash
# What tracing costs a cell: each pa3 cell and a traced twin of it (the same workload with
# `trace = true`) run REPS times each in one run, in random order, so both sides meet the
# same machine; per cell the median makespan (release to last reap) of each side, their
# ratio, and on the traced side the events captured and the most lost in any repetition.
# Needs root and a release build (cargo build --release).
#
#   benches/trace_overhead.sh [REPS] [SCALE] [SPEC]     # DB=FILE keeps the run's database
set -euo pipefail
REPS=${1:-5}
SCALE=${2:-0.1}
SPEC=${3:-$(dirname "$0")/../experiments/pa3.toml}
BIN=${SCHEDLAB:-$(dirname "$0")/../target/release/schedlab}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The spec with a `NAME_traced` twin of each workload, both in the matrix, order random.
python3 - "$SPEC" "$WORK/twins.toml" <<'PY'
import re, sys, tomllib
text = open(sys.argv[1]).read()
spec = tomllib.loads(text)
names = spec["matrix"]["workload"]
lines, twins, section = [], [], None
for line in text.splitlines():
    m = re.match(r"\[workloads\.(\w+)\]", line)
    if m:
        section = m.group(1)
    elif line.startswith("["):
        section = None
    if line.startswith("workload = "):
        line = "workload = " + repr([n for w in names for n in (w, w + "_traced")]).replace("'", '"')
    if line.startswith("repetitions") or line.startswith("order"):
        continue
    lines.append(line)
    if section in names:
        twins.append(line.replace(f"[workloads.{section}]", f"[workloads.{section}_traced]\ntrace = true"))
head = ['order = "random"']
open(sys.argv[2], "w").write("\n".join(head + lines + [""] + twins) + "\n")
PY
DB=${DB:-$WORK/b.db}
"$BIN" --db "$DB" run -q "$WORK/twins.toml" --scale "$SCALE" --repetitions "$REPS"
python3 - "$DB" "$REPS" "$SCALE" <<'PY'
import collections, json, sqlite3, statistics, sys
c = sqlite3.connect(sys.argv[1])
d = collections.defaultdict(lambda: collections.defaultdict(list))
for key, m, t in c.execute("select key, makespan_s, trace_json from cells where warmup = 0"):
    w, rest = key.split("/", 1)
    side = "traced" if w.endswith("_traced") else "plain"
    t = json.loads(t) if t else {}
    d[w.removesuffix("_traced") + "/" + rest][side].append((m, t.get("events", 0), t.get("lost_events", 0)))
print(f"--scale {sys.argv[3]}, {sys.argv[2]} repetitions of each cell and of its traced twin, in random order")
print("| cell | plain [s] | traced [s] | traced / plain | events (traced) | lost |")
print("|---|---|---|---|---|---|")
ratios = []
for key, v in d.items():
    p = statistics.median(x[0] for x in v["plain"])
    t = statistics.median(x[0] for x in v["traced"])
    ev = statistics.median(x[1] for x in v["traced"])
    ratios.append(t / p)
    print(f"| {key} | {p:.3f} | {t:.3f} | {t / p:.3f} | {ev:,.0f} | {max(x[2] for x in v['traced'])} |")
print(f"median ratio over cells {statistics.median(ratios):.3f}; largest {max(ratios):.3f}")
PY
