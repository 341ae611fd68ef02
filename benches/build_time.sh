#!/usr/bin/env bash
# Cold `cargo build --release` of two commits, interleaved, each in a checkout and target
# directory of its own (crates already downloaded: the registry cache is kept). Prints one
# line per build: commit, wall seconds, user+sys CPU seconds, the binary's size, the load
# average before it and the hypervisor's steal during it (% of CPU time, from /proc/stat).
#
#   benches/build_time.sh BASE NEW [ROUNDS]     e.g. benches/build_time.sh 64784f4 HEAD 1
set -euo pipefail
base=$(git rev-parse --short "$1")
new=$(git rev-parse --short "$2")
rounds=${3:-1}
work=$(mktemp -d /tmp/schedlab-build-time.XXXXXX)
trap 'for r in "$base" "$new"; do git worktree remove --force "$work/$r" 2>/dev/null || true; done; rm -rf "$work"' EXIT
for rev in "$base" "$new"; do git worktree add -q --detach "$work/$rev" "$rev"; done

cpu_ticks() { awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8+$9, $9}' /proc/stat; }

echo "nproc=$(nproc) kernel=$(uname -r) cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "commit wall_s cpu_s binary_mb load1_before steal_pct"
for _ in $(seq "$rounds"); do
  for rev in "$base" "$new"; do
    target="$work/target-$rev"
    rm -rf "$target"
    load=$(cut -d' ' -f1 /proc/loadavg)
    read -r t0 s0 < <(cpu_ticks)
    TIMEFORMAT='%R %U %S'
    { time env CARGO_TARGET_DIR="$target" cargo build --release --quiet \
        --manifest-path "$work/$rev/Cargo.toml" >/dev/null 2>&1; } 2>"$work/time"
    read -r t1 s1 < <(cpu_ticks)
    read -r wall user sys <"$work/time"
    mb=$(stat -c %s "$target/release/schedlab" | awk '{printf "%.1f", $1 / 1e6}')
    steal=$(awk -v a="$((s1 - s0))" -v b="$((t1 - t0))" 'BEGIN{printf "%.1f", b ? 100 * a / b : 0}')
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.0f", u + s}')
    printf '%s %.0f %s %s %s %s\n' "$rev" "$wall" "$cpu" "$mb" "$load" "$steal"
  done
done
