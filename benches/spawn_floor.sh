#!/usr/bin/env bash
# A cell of N trivial workers against the fork+exec+wait4 floor for the same binary and the
# same worker (benches/spawn_floor.rs), run alternately ROUNDS times at each size.
#
#   cargo build --release --example spawn_floor    # builds target/release/schedlab too
#   benches/spawn_floor.sh [ROUNDS] [SIZES...]     # default: 5 rounds, 500 1000 2000 5000 10000
#
# schedlab: `schedlab run` of one cell of N `pi` workers with 1 iteration each (the cheapest
# work: the worker starts, says it is ready, waits, computes one point and reports), one
# repetition; its wall time from the first spawn to the last reap is the stored
# `cells.spawn_s + cells.makespan_s`, its peak RSS `cells.engine_max_rss_kb`. The floor spawns
# the same binary as the same worker (the same argv, pipes and cwd), waits until all are
# ready, releases them and reaps them, timed the same way. The two alternate (which goes
# first alternates too); the script prints each round, then per size the medians, their
# ratio and the engine's largest peak RSS. Needs root (the engine raises itself to
# SCHED_FIFO 99 as in any run) and python3.
set -euo pipefail
ROUNDS=${1:-5}
shift || true
SIZES=${*:-500 1000 2000 5000 10000}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${SCHEDLAB:-$HERE/../target/release/schedlab}
FLOOR=${SPAWN_FLOOR:-$HERE/../target/release/examples/spawn_floor}
[ -x "$BIN" ] && [ -x "$FLOOR" ] || { echo "build first: cargo build --release --example spawn_floor" >&2; exit 1; }
SEED=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Prints "spawn_to_reap_s engine_cpu_s max_rss_kb" of one schedlab run of N workers.
schedlab_once() {
  local n=$1
  cat > "$WORK/n.toml" <<TOML
name = "spawn-floor"
repetitions = 1
warmup = 0
seed = $SEED
[matrix]
workload = ["tiny"]
processes = [$n]
[workloads.tiny]
kind = "pi"
iterations = 1
TOML
  rm -f "$WORK/db" "$WORK/db-wal" "$WORK/db-shm"
  SCHEDLAB_STATE_DIR="$WORK/state" TMPDIR="$WORK" "$BIN" --db "$WORK/db" run -q "$WORK/n.toml" > /dev/null
  python3 - "$WORK/db" <<'PY'
import sqlite3, sys
status, spawn, makespan, cpu, rss = sqlite3.connect(sys.argv[1]).execute(
    "SELECT status, spawn_s, makespan_s, engine_user_s + engine_sys_s, engine_max_rss_kb FROM cells").fetchone()
assert status == "ok", status
print(f"{spawn + makespan:.6f} {cpu:.6f} {rss}")
PY
}

# Prints "spawn_to_reap_s cpu_s" of one floor run of N workers.
floor_once() {
  rm -rf "$WORK/floor" && mkdir "$WORK/floor"
  "$FLOOR" "$BIN" "$1" 1 "$SEED" "$WORK/floor" | sed -n 's/.*spawn_to_reap_s=\([0-9.]*\).*cpu_s=\([0-9.]*\).*/\1 \2/p'
}

echo "size round floor_s schedlab_s ratio floor_cpu_s engine_cpu_s engine_rss_kb"
SUMMARY=()
for n in $SIZES; do
  F=(); S=(); R=()
  for r in $(seq 1 "$ROUNDS"); do
    if (( r % 2 )); then
      read -r f fc < <(floor_once "$n"); read -r s sc rss < <(schedlab_once "$n")
    else
      read -r s sc rss < <(schedlab_once "$n"); read -r f fc < <(floor_once "$n")
    fi
    F+=("$f"); S+=("$s"); R+=("$rss")
    echo "$n $r $f $s $(python3 -c "print(f'{$s/$f:.3f}')") $fc $sc $rss"
  done
  SUMMARY+=("$(python3 -c "
import statistics as st, sys
f=[float(x) for x in sys.argv[2].split()]; s=[float(x) for x in sys.argv[3].split()]; r=[int(x) for x in sys.argv[4].split()]
print(f'{sys.argv[1]} {st.median(f):.3f} {st.median(s):.3f} {st.median(s)/st.median(f):.3f} {max(r)/1024:.1f}')
" "$n" "${F[*]}" "${S[*]}" "${R[*]}")")
done
echo
echo "size floor_median_s schedlab_median_s ratio engine_peak_rss_mib"
printf '%s\n' "${SUMMARY[@]}"
