#!/usr/bin/env bash
# Parity of schedlab's native messaging, pipe and schbench kinds with the originals
# (issue #39 item 3): experiments/field.toml runs each native kind beside its original
# with the same options, REPS repetitions in random order (so the two sides alternate and
# meet the same machine), and this prints, per figure, the median over the repetitions of
# each side, their ratio (native / original) and the issue's bound. Needs root, hackbench
# (rt-tests), perf (linux-perf) and schbench on PATH, and a release build.
#
#   benches/field_parity.sh [REPS]          # DB=FILE keeps the run's database
set -euo pipefail
REPS=${1:-7}
BIN=${SCHEDLAB:-$(dirname "$0")/../target/release/schedlab}
SPEC=$(dirname "$0")/../experiments/field.toml
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)"
echo "originals: $(hackbench --help 2>&1 | head -1 | cut -c1-60 || true); perf $(perf --version 2>/dev/null | cut -d' ' -f3); schbench $(command -v schbench)"
steal() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
read -r s0 t0 < <(steal)
echo "before: load average $(cut -d' ' -f1-3 /proc/loadavg)"
DB=${DB:-$WORK/p.db}
"$BIN" --db "$DB" run -q "$SPEC" --repetitions "$REPS"
read -r s1 t1 < <(steal)
echo "after: load average $(cut -d' ' -f1-3 /proc/loadavg); hypervisor steal during the run $(awk -v a=$((s1-s0)) -v b=$((t1-t0)) 'BEGIN{printf "%.2f", 100*a/b}')%"
python3 - "$DB" <<'PY'
import json, sqlite3, statistics, sys
c = sqlite3.connect(sys.argv[1])
run = c.execute("SELECT max(id) FROM runs").fetchone()[0]
vals = {}
for workload, extra in c.execute(
        "SELECT c.workload, s.extra_json FROM samples s JOIN cells c ON c.id = s.cell_row "
        "WHERE c.run_id = ? AND c.warmup = 0 AND c.status = 'ok'", (run,)):
    b = json.loads(extra).get("bench")
    if not b:
        continue
    flat = {k: v for k, v in b.items() if isinstance(v, (int, float))}
    for group in ("wakeup_us", "request_us", "rps"):
        for p, v in (b.get(group) or {}).items():
            if p != "samples":
                flat[f"{group}.{p}"] = v
    for k, v in flat.items():
        vals.setdefault(workload, {}).setdefault(k, []).append(v)
# (figure, native, original, bound: relative, absolute or None)
checks = [
    ("time_s", "messaging", "hackbench", 0.10, None),
    ("us_per_op", "pipe", "perf-pipe", 0.10, None),
    ("rps.p50", "schbench", "schbench-original", 0.10, None),
    ("wakeup_us.p50", "schbench", "schbench-original", 0.20, 5.0),
    ("wakeup_us.p99", "schbench", "schbench-original", 0.25, 20.0),
    ("request_us.p50", "schbench", "schbench-original", None, None),
    ("request_us.p99", "schbench", "schbench-original", None, None),
]
print(f"{'figure':<16} {'native':>12} {'original':>12} {'ratio':>7}  n  bound")
for fig, nat, orig, rel, ab in checks:
    a, b = vals.get(nat, {}).get(fig, []), vals.get(orig, {}).get(fig, [])
    if not a or not b:
        print(f"{fig:<16} missing ({nat}: {len(a)}, {orig}: {len(b)})")
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    ratio = ma / mb if mb else float("nan")
    if rel is None:
        verdict = "(no bound)"
    else:
        ok = abs(ratio - 1) <= rel or (ab is not None and abs(ma - mb) <= ab)
        verdict = f"within {rel:.0%}" + (f" or {ab:g}" if ab else "") + (": holds" if ok else ": MISSED")
    print(f"{fig:<16} {ma:>12.3f} {mb:>12.3f} {ratio:>7.3f} {min(len(a), len(b)):>2}  {verdict}")
PY
