#!/usr/bin/env bash
# Schedulability at scale (issue #32): SETS generated sets (default 1,000) x 10 utilisation
# points (0.1 ... 1.0, plain sum C/T) x 4 schedulers (fifo-rm, fifo-dm, edf, dwcs) of 8 tasks
# each, periods 10-100 ms (log-uniform, whole ms), each set simulated over 10 s or its
# hyperperiod if shorter, one CPU: the wall time of the whole `schedlab simulate` command
# (release binary; generation, analysis, simulation and storage), with 1 and 2 threads
# interleaved, ROUNDS rounds (default 3). Each line also gives the jobs simulated, the load
# average before it and the hypervisor's steal during it (% of CPU time, /proc/stat).
# Then, in the same run, SimSo's jobs per second on its benchmark set (benches/simso_edf.py,
# SIMSO_MS simulated ms, default 20,000) and the time SimSo would take for the same jobs.
# Prints the medians, the 1 -> 2 thread speed-up and SimSo's extrapolation.
#
#   python3 -m venv /tmp/simso && /tmp/simso/bin/pip install simso   # optional
#   SIMSO_PYTHON=/tmp/simso/bin/python benches/schedulability_speed.sh [SETS] [ROUNDS]
# SCHEDLAB=path uses that binary instead of building target/release/schedlab.
set -euo pipefail
SETS=${1:-1000}
ROUNDS=${2:-3}
PY=${SIMSO_PYTHON:-python3}
SIMSO_MS=${SIMSO_MS:-20000}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "${SCHEDLAB:-}" ]; then
    cargo build --release --quiet --manifest-path "$HERE/../Cargo.toml"
    SCHEDLAB="$HERE/../target/release/schedlab"
fi
work=$(mktemp -d /tmp/schedlab-sets-speed.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/sets.toml" <<TOML
name = "schedulability-speed"
repetitions = 1
[matrix]
workload = ["set"]
scheduler = ["fifo-rm", "fifo-dm", "edf", "dwcs"]
utilisation = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
[workloads.set]
kind = "periodic"
duration_s = 10
quantum_ms = 1
work_fraction = 1
cpu = 0
generate = { tasks = 8, min_period_ms = 10, max_period_ms = 100, c_granularity_ms = 1, measure = "plain", x = 1, y = 2, seed = 1, sets = $SETS, horizon = "hyperperiod" }
TOML

cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8+$9, $9}' /proc/stat; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# Jobs of every stored set of the database's run: the `jobs` column of `export --per set`.
jobs_of() {
    "$SCHEDLAB" --db "$1" export --per set --format csv |
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "jobs") c = i; next } { s += $c } END { print s + 0 }'
}
simso() {
    "$PY" -c 'import simso' 2>/dev/null || return 0
    "$PY" "$HERE/simso_edf.py" "$SIMSO_MS" | awk '/^simso/ { print $NF }'
}

echo "nproc=$(nproc) kernel=$(uname -r) cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "$SETS sets x 10 utilisations x 4 schedulers = $((SETS * 40)) sets; $SCHEDLAB"
echo "round threads wall_s jobs jobs_per_s load1_before steal_pct"
W1=(); W2=(); S=(); jobs=0
for r in $(seq "$ROUNDS"); do
    for threads in 1 2; do
        db="$work/r$r-t$threads.db"
        load=$(cut -d' ' -f1 /proc/loadavg)
        read -r t0 s0 < <(cpu_ticks)
        start=$(date +%s.%N)
        "$SCHEDLAB" --db "$db" simulate "$work/sets.toml" -q --cpus 1 --threads "$threads"
        end=$(date +%s.%N)
        read -r t1 s1 < <(cpu_ticks)
        wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
        steal=$(awk -v a="$((s1 - s0))" -v b="$((t1 - t0))" 'BEGIN { printf "%.1f", b ? 100 * a / b : 0 }')
        jobs=$(jobs_of "$db")
        awk -v r="$r" -v t="$threads" -v w="$wall" -v j="$jobs" -v l="$load" -v s="$steal" \
            'BEGIN { printf "%d %d %s %d %.0f %s %s\n", r, t, w, j, j / w, l, s }'
        if [ "$threads" = 1 ]; then W1+=("$wall"); else W2+=("$wall"); fi
        rm -f "$db" "$db-wal" "$db-shm"
    done
    s=$(simso)
    if [ -n "$s" ]; then
        S+=("$s")
        awk -v r="$r" -v s="$s" 'BEGIN { printf "round %d: SimSo %.0f jobs/s\n", r, s }'
    fi
done
m1=$(median "${W1[@]}"); m2=$(median "${W2[@]}")
awk -v a="$m1" -v b="$m2" -v j="$jobs" 'BEGIN { printf "median wall: 1 thread %.2f s, 2 threads %.2f s, speed-up %.2fx; %d jobs, %.2f M jobs/s on 2 threads\n", a, b, a / b, j, j / b / 1e6 }'
if [ "${#S[@]}" -gt 0 ]; then
    ms=$(median "${S[@]}")
    awk -v s="$ms" -v j="$jobs" -v b="$m2" 'BEGIN { printf "SimSo (median %.0f jobs/s): the same %d jobs would take %.0f s, %.0fx the 2-thread wall time\n", s, j, j / s, j / s / b }'
else
    echo "SimSo not found ($PY -c 'import simso' failed): no extrapolation; set SIMSO_PYTHON"
fi
