#!/usr/bin/env bash
# `schedlab bisect` against a small slowdown (issue 45, item 6): TRIALS times, a generated git
# repository of COMMITS commits whose work.sh does a fixed amount of work (an awk loop of WORK
# iterations, about 0.1 s), one commit at a random position making it SLOWDOWN longer; each
# trial bisects the whole range (first commit good, last bad) with the default settings
# (EXTRA adds options) and is right when it names that commit. Prints each trial, then how
# many were right and the time per bisect (median, max). Run it on a quiet machine, as root,
# with a release build (cargo build --release --bin schedlab).
#
#   benches/bisect.sh                 # TRIALS=20 COMMITS=64 SLOWDOWN=0.05 WORK=3000000
#   TRIALS=2 benches/bisect.sh        # a check of the script
#   EXTRA="--same-within 2%" benches/bisect.sh
set -euo pipefail
cd "$(dirname "$0")/.."
TRIALS=${TRIALS:-20}
COMMITS=${COMMITS:-64}
SLOWDOWN=${SLOWDOWN:-0.05}
WORK=${WORK:-3000000}
EXTRA=${EXTRA:-}
BIN=$(realpath "${SCHEDLAB:-target/release/schedlab}")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@localhost

cat >"$TMP/bisect.toml" <<'EOF'
name = "bisect-bench"
[matrix]
workload = ["work"]
[workloads.work]
kind = "command"
argv = ["sh", "{worktree}/work.sh"]
EOF

# repo DIR SLOW: the repository, commit SLOW (1 .. COMMITS-1) and every later one slower.
repo() {
    local dir=$1 slow=$2 work
    local slower
    slower=$(awk -v w="$WORK" -v s="$SLOWDOWN" 'BEGIN { printf "%d", w * (1 + s) }')
    git init --quiet --initial-branch=main "$dir"
    for ((i = 0; i < COMMITS; i++)); do
        work=$WORK
        ((i >= slow)) && work=$slower
        echo "awk 'BEGIN { for (i = 0; i < $work; i++) s += i }'" >"$dir/work.sh"
        echo "commit $i" >"$dir/history.txt"
        git -C "$dir" add --all
        git -C "$dir" commit --quiet -m "commit $i"
    done
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "before: load average $(cut -d' ' -f1-3 /proc/loadavg)"
right=0
times=()
for ((t = 1; t <= TRIALS; t++)); do
    slow=$((1 + RANDOM % (COMMITS - 1)))
    dir=$TMP/repo$t
    repo "$dir" "$slow"
    want=$(git -C "$dir" rev-parse "HEAD~$((COMMITS - 1 - slow))")
    good=$(git -C "$dir" rev-list --max-parents=0 HEAD)
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    out=$("$BIN" --db "$TMP/bisect.db" bisect "$TMP/bisect.toml" --repo "$dir" --good "$good" \
        --bad main $EXTRA 2>"$TMP/stderr" || true)
    t1=$(date +%s.%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    times+=("$secs")
    found=$(sed -n 's/^first bad commit: //p' <<<"$out")
    steps=$(grep -c '^\[' "$TMP/stderr" || true)
    reps=$(sed -n 's/.*(\([0-9]*\) per arm)$/\1/p' "$TMP/stderr" | awk '{ s += $1 } END { print s + 0 }')
    if [ "$found" = "$want" ]; then
        right=$((right + 1))
        verdict=right
    else
        verdict="WRONG (found ${found:-no commit})"
    fi
    echo "trial $t: commit $slow slower: $verdict in $secs s, $steps steps, $reps repetitions per arm in all"
    [ "$found" = "$want" ] || grep '^\[' "$TMP/stderr" | sed 's/^/    /'
    [ "$found" = "$want" ] || sed 's/^/    /' <<<"$out"
    rm -rf "$dir"
done
sorted=$(printf '%s\n' "${times[@]}" | sort -g)
median=$(awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }' <<<"$sorted")
echo "after: load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "found the right commit in $right of $TRIALS trials ($COMMITS commits, +$(awk -v s="$SLOWDOWN" 'BEGIN { print s * 100 }')% from a random one on); time per bisect: median $median s, max $(tail -1 <<<"$sorted") s"
