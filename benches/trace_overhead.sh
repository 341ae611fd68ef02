#!/usr/bin/env bash
# What tracing costs a cell: the makespan (release to last reap) of the same pa3 cells run
# with and without --trace, alternately, ROUNDS times each; per cell the median of each side
# and their ratio. Needs root and a release build (cargo build --release).
#
#   benches/trace_overhead.sh [ROUNDS] [SCALE]
set -euo pipefail
ROUNDS=${1:-5}
SCALE=${2:-0.1}
BIN=${SCHEDLAB:-$(dirname "$0")/../target/release/schedlab}
SPEC=$(dirname "$0")/../experiments/pa3.toml
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# One line per cell: key and makespan, of the newest run in database $1.
makespans() {
  python3 - "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
run = c.execute("select max(id) from runs").fetchone()[0]
for key, m in c.execute("select key, makespan_s from cells where run_id = ? and warmup = 0", (run,)):
    print(key, m)
PY
}
for r in $(seq 1 "$ROUNDS"); do
  "$BIN" --db "$WORK/plain.db" run -q "$SPEC" --scale "$SCALE" --repetitions 1
  makespans "$WORK/plain.db" | sed 's/^/plain /' >> "$WORK/all.txt"
  "$BIN" --db "$WORK/traced.db" run -q "$SPEC" --scale "$SCALE" --repetitions 1 --trace
  makespans "$WORK/traced.db" | sed 's/^/traced /' >> "$WORK/all.txt"
  echo "round $r done" >&2
done
python3 - "$WORK/all.txt" "$ROUNDS" "$SCALE" <<'PY'
import statistics, sys, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    side, key, m = line.split()
    d[key][side].append(float(m))
print(f"pa3 --scale {sys.argv[3]}, {sys.argv[2]} alternating rounds: median makespan per cell")
print(f"{'cell':22} {'plain [s]':>10} {'traced [s]':>11} {'traced/plain':>13}")
ratios = []
for key in d:
    p, t = statistics.median(d[key]['plain']), statistics.median(d[key]['traced'])
    ratios.append(t / p)
    print(f"{key:22} {p:10.3f} {t:11.3f} {t / p:13.3f}")
print(f"median ratio over cells {statistics.median(ratios):.3f}; largest {max(ratios):.3f}")
PY
