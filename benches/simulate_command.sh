#!/usr/bin/env bash
# The whole `schedlab simulate` command on SimSo's 10-task set (crates/sim/benches/sim.rs:
# C/T = 1/5 ... 6/50 ms, U = 1.6) on 2 CPUs under global EDF (scheduler "deadline": EDF with
# CBS reservations of C per T, which never throttle a job here), 100 s of simulated time,
# no switch or migration cost (SimSo's default model has none). Two builds run alternately,
# ROUNDS times each; each run stores into a copy of the same database, which already holds
# one run (a user's schedlab.db) stored by the same build, and prints its tables to /dev/null.
#
#   benches/simulate_command.sh [ROUNDS] [BEFORE_BINARY] [AFTER_BINARY]
#
# jobs/s = the jobs simulated (rows of `export --jobs`) / the command's wall time (bash's
# EPOCHREALTIME around it: exec to exit, start-up, calibration, storing and printing all in).
# Checks that both builds store the same samples and jobs. Prints every round, then medians.
# The before binary defaults to the after one; build the base commit's into its own target
# directory to compare, e.g.
#   git worktree add /tmp/base BASE && cargo build --release --manifest-path /tmp/base/Cargo.toml
set -euo pipefail
ROUNDS=${1:-11}
AFTER_DEFAULT=$(dirname "$0")/../target/release/schedlab
BEFORE=$(realpath "${2:-$AFTER_DEFAULT}")
AFTER=$(realpath "${3:-$AFTER_DEFAULT}")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/simso.toml" <<'TOML'
name = "simso-set"
[matrix]
workload = ["set"]
scheduler = ["deadline"]
[workloads.set]
kind = "periodic"
duration_s = 100
work_fraction = 1.0
tasks = [
  { c_ms = 1, t_ms = 5 }, { c_ms = 1, t_ms = 7 }, { c_ms = 2, t_ms = 10 }, { c_ms = 2, t_ms = 12 },
  { c_ms = 3, t_ms = 15 }, { c_ms = 3, t_ms = 20 }, { c_ms = 4, t_ms = 25 }, { c_ms = 4, t_ms = 30 },
  { c_ms = 5, t_ms = 40 }, { c_ms = 6, t_ms = 50 },
]
TOML
ARGS=(simulate "$WORK/simso.toml" --cpus 2 --switch-cost-us 0 --migration-cost-us 0)
# The database every timed run starts from: one run stored, checkpointed; each build makes
# its own, so neither pays for migrating the other's schema.
for side in before after; do
    bin=$BEFORE; [ $side = after ] && bin=$AFTER
    "$bin" --db "$WORK/template-$side.db" "${ARGS[@]}" >/dev/null 2>&1
    cp "$WORK/template-$side.db" "$WORK/$side-check.db"
    "$bin" --db "$WORK/$side-check.db" "${ARGS[@]}" >/dev/null 2>&1
    "$bin" --db "$WORK/$side-check.db" export --jobs 2 > "$WORK/$side.jobs"
    "$bin" --db "$WORK/$side-check.db" export 2 | cut -d, -f1-40 > "$WORK/$side.samples"
done
cmp -s "$WORK/before.jobs" "$WORK/after.jobs" || { echo "the two builds stored different jobs" >&2; exit 1; }
cmp -s "$WORK/before.samples" "$WORK/after.samples" || { echo "the two builds stored different samples" >&2; exit 1; }
JOBS=$(( $(wc -l < "$WORK/after.jobs") - 1 ))
echo "$JOBS jobs a run; before: $BEFORE; after: $AFTER"

# Wall seconds of one command run with binary $1.
timed() {
    local side=after; [ "$1" = "$BEFORE" ] && [ "$1" != "$AFTER" ] && side=before
    cp "$WORK/template-$side.db" "$WORK/run.db"
    local t0=$EPOCHREALTIME
    "$1" --db "$WORK/run.db" "${ARGS[@]}" >/dev/null 2>&1
    local t1=$EPOCHREALTIME
    rm -f "$WORK"/run.db*
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }'
}
B=(); A=()
for r in $(seq "$ROUNDS"); do
    # Alternate which goes first, so neither always follows the other.
    if (( r % 2 )); then b=$(timed "$BEFORE"); a=$(timed "$AFTER"); else a=$(timed "$AFTER"); b=$(timed "$BEFORE"); fi
    B+=("$b"); A+=("$a")
    awk -v r="$r" -v a="$a" -v b="$b" -v j="$JOBS" \
        'BEGIN { printf "round %d: before %.1f ms (%.2f M jobs/s) | after %.1f ms (%.2f M jobs/s)\n", r, b * 1e3, j / b / 1e6, a * 1e3, j / a / 1e6 }'
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mb=$(median "${B[@]}"); ma=$(median "${A[@]}")
awk -v a="$ma" -v b="$mb" -v j="$JOBS" \
    'BEGIN { printf "median of rounds: before %.1f ms, %.2f M jobs/s | after %.1f ms, %.2f M jobs/s | %.2fx\n", b * 1e3, j / b / 1e6, a * 1e3, j / a / 1e6, b / a }'
