#!/usr/bin/env bash
# The simulator core against SimSo 0.8.5 on the same task set (10 periodic tasks, U = 1.6,
# 2 CPUs, global EDF, 100,000 ms: 76,121 jobs, no miss on either side), run alternately,
# ROUNDS times each: SimSo's model.run_model() (benches/simso_edf.py) and the "edf global"
# line of `cargo bench -p schedlab-sim` (best of its 10 runs, recording off). Prints every
# round, then the medians and their ratio.
#
#   python3 -m venv /tmp/simso && /tmp/simso/bin/pip install simso
#   SIMSO_PYTHON=/tmp/simso/bin/python benches/simso_compare.sh [ROUNDS]
set -euo pipefail
ROUNDS=${1:-5}
PY=${SIMSO_PYTHON:-python3}
HERE=$(dirname "$0")
"$PY" -c 'import simso' 2>/dev/null || { echo "SimSo missing: pip install simso (SIMSO_PYTHON=...)" >&2; exit 1; }
cargo bench -q -p schedlab-sim --bench sim >/dev/null 2>&1
S=(); C=()
for r in $(seq "$ROUNDS"); do
    s=$("$PY" "$HERE/simso_edf.py" | awk '/^simso/ { print $NF }')
    c=$(cargo bench -q -p schedlab-sim --bench sim 2>/dev/null | awk '/^edf global / { for (i = 1; i <= NF; i++) if ($i == "jobs/s" && $(i-1) == "M") print $(i-2) * 1e6 }')
    S+=("$s"); C+=("$c")
    awk -v r="$r" -v s="$s" -v c="$c" 'BEGIN { printf "round %d: SimSo %.0f jobs/s | schedlab core %.2f M jobs/s (%.0fx)\n", r, s, c / 1e6, c / s }'
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms=$(median "${S[@]}"); mc=$(median "${C[@]}")
awk -v s="$ms" -v c="$mc" 'BEGIN { printf "median of rounds: SimSo %.0f jobs/s, schedlab core %.2f M jobs/s, %.0fx\n", s, c / 1e6, c / s }'
