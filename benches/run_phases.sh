#!/usr/bin/env bash
# Where the fixed time of a one-cell run goes (issue 38, item 5): `schedlab run -q` of one
# cell of N trivial workers (pi, 1 iteration), ROUNDS times, with SCHEDLAB_PHASES=1 (each
# phase's end marked on CLOCK_MONOTONIC, `sys::phases`), and the whole command's wall time
# taken outside it. Prints each round's phase line, then per phase the median in ms.
#
#   cargo build --release
#   benches/run_phases.sh [ROUNDS] [N]        # default: 11 rounds, 1 worker
set -euo pipefail
ROUNDS=${1:-11}
N=${2:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${SCHEDLAB:-$HERE/../target/release/schedlab}
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/one.toml" <<TOML
name = "one-cell"
repetitions = 1
warmup = 0
[matrix]
workload = ["tiny"]
processes = [$N]
[workloads.tiny]
kind = "pi"
iterations = 1
TOML
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); steal (jiffies): $(awk '/^cpu /{print $9}' /proc/stat)"
for i in $(seq "$ROUNDS"); do
  rm -f "$WORK"/db*
  t0=$(date +%s%N)
  SCHEDLAB_PHASES=1 SCHEDLAB_STATE_DIR="$WORK/state" TMPDIR="$WORK" \
    "$BIN" --db "$WORK/db" run -q "$WORK/one.toml" > /dev/null 2> "$WORK/err"
  t1=$(date +%s%N)
  line=$(grep '^phases:' "$WORK/err" || true)
  echo "wall $(( (t1 - t0) / 1000 )) us; $line" | tee -a "$WORK/all"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); steal (jiffies): $(awk '/^cpu /{print $9}' /proc/stat)"
python3 - "$WORK/all" <<'PY'
import re, statistics, sys
rows = [l for l in open(sys.argv[1])]
walls = [int(re.match(r"wall (\d+) us", l).group(1)) / 1000 for l in rows]
phases = {}
for l in rows:
    for name, ms in re.findall(r"([a-z_ -]+?) ([\d.]+) ms", l.split("phases: ", 1)[-1].split(" (total")[0]):
        phases.setdefault(name.strip(" ,"), []).append(float(ms))
print(f"median over {len(rows)} rounds: wall {statistics.median(walls):.1f} ms")
for name, v in phases.items():
    print(f"  {name:<24} {statistics.median(v):7.2f} ms")
PY
