#!/usr/bin/env bash
# A cell of N trivial workers against the fork+exec+wait4 floor for the same binary and the
# same worker (benches/spawn_floor.rs), run alternately ROUNDS times at each size.
#
#   cargo build --release --bin schedlab --example spawn_floor
#   benches/spawn_floor.sh [ROUNDS] [SIZES...]     # default: 5 rounds, 500 1000 2000 5000 10000
#
# schedlab: `schedlab run` of one cell of N `pi` workers with 1 iteration each (the cheapest
# work: the worker starts, says it is ready, waits, computes one point and reports), one
# repetition; its wall time from the first spawn to the last reap is the stored
# `cells.spawn_s + cells.makespan_s`, its CPU `cells.engine_user_s + engine_sys_s` (first
# spawn to last reap), its peak RSS `cells.engine_max_rss_kb`, its workers' CPU the sum of
# their wait4 rusage (`samples.user_s + sys_s`). The floor spawns the same
# binary as the same worker (the same argv, pipes and cwd), waits until all are ready,
# releases them and reaps them, timed the same way, three ways: fork + exec as an ordinary
# process (`fork`), the same raised as the engine raises itself (SCHED_FIFO 99, reset on
# fork: `fork_rt`), and posix_spawn raised (`spawn_rt`: what the engine does). A round runs
# the four in turn, each round in another order; the script prints each run, then per size
# the medians, the ratio of schedlab's median to the lowest floor median, the CPU time
# medians (the floor's own; the engine's for the cell), the workers' CPU medians (the same
# worker both ways: what the machine must run whoever spawns them) and the engine's largest
# peak RSS. Each side's whole command is timed too, from its exec to its exit (schedlab's
# with its preflight, database, busy-machine look and tables; issue 47 bounds it at 1.25x
# the floor's whole command), with its own median ratio.
# Needs root (SCHED_FIFO) and python3.
set -euo pipefail
ROUNDS=${1:-5}
shift || true
SIZES=${*:-500 1000 2000 5000 10000}
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${SCHEDLAB:-$HERE/../target/release/schedlab}
FLOOR=${SPAWN_FLOOR:-$HERE/../target/release/examples/spawn_floor}
[ -x "$BIN" ] && [ -x "$FLOOR" ] || { echo "build first: cargo build --release --bin schedlab --example spawn_floor" >&2; exit 1; }
SEED=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Nanoseconds now, for the whole commands' wall times.
now_ns() { date +%s%N; }

# Prints "spawn_to_reap_s cpu_s max_rss_kb workers_cpu_s command_s" of one schedlab run of N
# workers.
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
  # The limit check refuses (exit 2) while MemAvailable is short of the cell's estimate
  # (2 MiB a worker: 10,000 need 22.2 GB available); the memory of the previous run's
  # workers comes back within seconds, other work's perhaps later: a minute of retries.
  local tries=0 rc=0 t0 t1
  while :; do
    rm -f "$WORK/db" "$WORK/db-wal" "$WORK/db-shm"
    rc=0
    t0=$(now_ns)
    SCHEDLAB_STATE_DIR="$WORK/state" TMPDIR="$WORK" "$BIN" --db "$WORK/db" run -q "$WORK/n.toml" > /dev/null 2> "$WORK/err" || rc=$?
    t1=$(now_ns)
    (( rc == 2 && ++tries < 12 )) || break
    sleep 5
  done
  (( rc == 0 )) || { cat "$WORK/err" >&2; echo "schedlab refused or failed the cell of $n workers" >&2; return 1; }
  python3 - "$WORK/db" "$(( t1 - t0 ))" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
status, spawn, makespan, cpu, rss = db.execute(
    "SELECT status, spawn_s, makespan_s, engine_user_s + engine_sys_s, engine_max_rss_kb FROM cells").fetchone()
assert status == "ok", status
(workers,) = db.execute("SELECT sum(user_s + sys_s) FROM samples").fetchone()
print(f"{spawn + makespan:.6f} {cpu:.6f} {rss} {workers:.6f} {int(sys.argv[2]) / 1e9:.6f}")
PY
}

# Prints "spawn_to_reap_s cpu_s max_rss_kb workers_cpu_s command_s" of one floor run of N
# workers; $2: its options.
floor_once() {
  rm -rf "$WORK/floor" && mkdir "$WORK/floor"
  local t0 t1 line
  t0=$(now_ns)
  # shellcheck disable=SC2086 # the options are words
  line=$("$FLOOR" "$BIN" "$1" 1 "$SEED" "$WORK/floor" $2)
  t1=$(now_ns)
  echo "$line" |
    sed -n 's/.*spawn_to_reap_s=\([0-9.]*\).*max_rss_kb=\([0-9]*\) cpu_s=\([0-9.]*\) workers_cpu_s=\([0-9.]*\).*/\1 \3 \2 \4/p' |
    awk -v ns="$(( t1 - t0 ))" '{ printf "%s %.6f\n", $0, ns / 1e9 }'
}

SIDES=(fork fork_rt spawn_rt schedlab)
echo "size round side spawn_to_reap_s cpu_s max_rss_kb workers_cpu_s command_s"
for n in $SIZES; do
  for r in $(seq 1 "$ROUNDS"); do
    for k in 0 1 2 3; do
      side=${SIDES[$(( (k + r) % 4 ))]}
      case $side in
        schedlab) line=$(schedlab_once "$n") || exit 1 ;;
        fork) line=$(floor_once "$n" fork) ;;
        fork_rt) line=$(floor_once "$n" "fork rt") ;;
        spawn_rt) line=$(floor_once "$n" rt) ;;
      esac
      echo "$n $r $side $line"
    done
  done
done | tee "$WORK/runs"
echo
echo "size | fork | fork_rt | spawn_rt | schedlab (median s) | ratio | CPU s: fork fork_rt spawn_rt schedlab | workers' CPU s: same | engine peak RSS MiB | whole commands: fork fork_rt spawn_rt schedlab (median s) | ratio"
python3 - "$WORK/runs" <<'PY'
import collections, statistics as st, sys
t = collections.defaultdict(list); c = collections.defaultdict(list); w = collections.defaultdict(list)
cmd = collections.defaultdict(list)
rss = collections.defaultdict(int)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 8 or not f[0].isdigit():
        continue
    n, side = int(f[0]), f[2]
    t[n, side].append(float(f[3])); c[n, side].append(float(f[4])); w[n, side].append(float(f[6]))
    cmd[n, side].append(float(f[7]))
    if side == "schedlab":
        rss[n] = max(rss[n], int(f[5]))
sides = ("fork", "fork_rt", "spawn_rt", "schedlab")
for n in sorted({k[0] for k in t}):
    m = {s: st.median(t[n, s]) for s in sides}
    cpu = {s: st.median(c[n, s]) for s in sides}
    wcpu = {s: st.median(w[n, s]) for s in sides}
    whole = {s: st.median(cmd[n, s]) for s in sides}
    floor = min(m[s] for s in sides[:3])
    whole_floor = min(whole[s] for s in sides[:3])
    print(f"{n} | {m['fork']:.3f} | {m['fork_rt']:.3f} | {m['spawn_rt']:.3f} | {m['schedlab']:.3f} | {m['schedlab'] / floor:.3f} | "
          + " ".join(f"{cpu[s]:.3f}" for s in sides) + " | " + " ".join(f"{wcpu[s]:.2f}" for s in sides) + f" | {rss[n] / 1024:.1f} | "
          + " ".join(f"{whole[s]:.3f}" for s in sides) + f" | {whole['schedlab'] / whole_floor:.3f}")
PY
