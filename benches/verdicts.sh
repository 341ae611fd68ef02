#!/usr/bin/env bash
# The error rates of `compare`'s verdicts (issue 45), measured on runs no threshold was tuned
# on, beside the kernel test robot's (LKP), Chromium Pinpoint's, mmtests' and an uncorrected
# Welch test's rules on the same draws (benches/verdict_rates.rs):
#   1. `schedlab noise SPEC --runs NOISE_RUNS --per-arm NOISE_N`: this machine's floor (two
#      interleaved arms in each run, and the drift between the runs);
#   2. RUNS ordinary runs and SLOW runs at `--scale 1+INJECT` (every work amount longer by
#      INJECT: time figures of pi, mixed, messaging and pipe cells), made alternately, each
#      with REPS repetitions in random order;
#   3. TRIALS A/A trials (two different ordinary runs, N repetitions of each cell drawn from
#      each) and TRIALS slowdown trials (an ordinary run against a slow one).
# Needs root for the fifo cells and a release build (cargo build --release --bin schedlab
# --example verdict_rates). Run it on a quiet machine: it prints the load average and the
# hypervisor's steal before and after.
#
#   benches/verdicts.sh [SPEC]   # RUNS=6 SLOW=4 REPS=20 N=10 TRIALS=200 INJECT=0.03 NOISE_RUNS=4 NOISE_N=5 DB=FILE
#
# WITHIN=1 measures the verdicts of an A/B in one run instead (`compare RUN --by`,
# `run --until-decided`): the floor from `schedlab noise SPEC --runs 1 --per-arm N`, then one
# run per slowdown in LEVELS (default "1.03 1.1") of SPEC with `work_scale = [1.0, LEVEL]`
# added to its matrix, REPS repetitions of each level in random order; A/A trials split 2N
# repetitions of level 1 of one run, slowdown trials set N of level 1 against N of LEVEL.
set -euo pipefail
cd "$(dirname "$0")/.."
SPEC=${1:-experiments/ci.toml}
RUNS=${RUNS:-6}
SLOW=${SLOW:-4}
REPS=${REPS:-20}
N=${N:-10}
TRIALS=${TRIALS:-200}
INJECT=${INJECT:-0.03}
NOISE_RUNS=${NOISE_RUNS:-4}
NOISE_N=${NOISE_N:-5}
BIN=${SCHEDLAB:-target/release/schedlab}
RATES=${RATES:-target/release/examples/verdict_rates}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
DB=${DB:-$WORK/verdicts.db}
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
steal() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
read -r s0 t0 < <(steal)
echo "before: load average $(cut -d' ' -f1-3 /proc/loadavg)"
t_start=$(date +%s)
last() { sqlite3 "$DB" 'select coalesce(max(id), 0) from runs' 2>/dev/null || echo 0; }
before=$(last)
if [ -n "${WITHIN:-}" ]; then
  "$BIN" --db "$DB" noise "$SPEC" --runs 1 --per-arm "$N" -q
  floor=$(last)
  ab=()
  for level in ${LEVELS:-1.03 1.1}; do
    sed "s/^\[matrix\]\$/[matrix]\nwork_scale = [1.0, $level]/" "$SPEC" >"$WORK/ab.toml"
    grep -q "^work_scale = \[1.0, $level\]" "$WORK/ab.toml"
    "$BIN" --db "$DB" run -q "$WORK/ab.toml" --repetitions "$REPS" >/dev/null
    ab+=("$(last)")
  done
  read -r s1 t1 < <(steal)
  echo "after $(( $(date +%s) - t_start )) s: load average $(cut -d' ' -f1-3 /proc/loadavg); hypervisor steal during the runs $(awk -v a=$((s1-s0)) -v b=$((t1-t0)) 'BEGIN{printf "%.3f", 100*a/b}')%"
  echo "floor: run $floor; A/B runs ${ab[*]} (levels 1 and ${LEVELS:-1.03 1.1}); database $DB"
  ids=$(IFS=,; echo "${ab[*]}")
  exec "$RATES" "$DB" "$floor" "$ids" --within --per-arm "$N" --trials "$TRIALS"
fi
"$BIN" --db "$DB" noise "$SPEC" --runs "$NOISE_RUNS" --per-arm "$NOISE_N" -q
floor=$(seq -s, $((before + 1)) "$(last)")
normal=()
slow=()
scale=$(awk -v i="$INJECT" 'BEGIN{print 1 + i}')
for ((k = 0; k < RUNS || k < SLOW; k++)); do
  if ((k < RUNS)); then
    "$BIN" --db "$DB" run -q "$SPEC" --repetitions "$REPS" >/dev/null
    normal+=("$(last)")
  fi
  if ((k < SLOW)); then
    "$BIN" --db "$DB" run -q "$SPEC" --repetitions "$REPS" --scale "$scale" >/dev/null
    slow+=("$(last)")
  fi
done
read -r s1 t1 < <(steal)
echo "after $(( $(date +%s) - t_start )) s: load average $(cut -d' ' -f1-3 /proc/loadavg); hypervisor steal during the runs $(awk -v a=$((s1-s0)) -v b=$((t1-t0)) 'BEGIN{printf "%.3f", 100*a/b}')%"
echo "floor: run $floor; ordinary runs ${normal[*]}; slow runs (scale $scale) ${slow[*]}; database $DB"
join() { local IFS=,; echo "$*"; }
"$RATES" "$DB" "$floor" "$(join "${normal[@]}")" "$(join "${slow[@]}")" --per-arm "$N" --trials "$TRIALS"
echo "the same draws judged without the floor's drift between runs (NO_DRIFT):"
NO_DRIFT=1 "$RATES" "$DB" "$floor" "$(join "${normal[@]}")" "$(join "${slow[@]}")" --per-arm "$N" --trials "$TRIALS" | tail -6
