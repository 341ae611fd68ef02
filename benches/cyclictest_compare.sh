#!/usr/bin/env bash
# Wake-up latency of a periodic SCHED_FIFO task: schedlab against cyclictest (rt-tests),
# same interval, priority and CPU, run alternately, ROUNDS times each.
#
#   benches/cyclictest_compare.sh [ROUNDS] [SECONDS] [INTERVAL_US] [CPU]
#
# schedlab: one periodic task (fifo-rm gives the only task priority 90), C = 10 us of spin,
# T = INTERVAL_US, pinned to CPU; the wake-up latency is start - release of each job
# (clock_nanosleep TIMER_ABSTIME, then clock_gettime). cyclictest: -m -p 90 -i INTERVAL -a CPU,
# clock_nanosleep (the default -n) on CLOCK_MONOTONIC, histogram in us.
# schedlab runs twice a round: as it runs by default, holding /dev/cpu_dma_latency at 0 as
# cyclictest does, and with cpu_dma_latency = "off" (the machine's idle states as they are).
# Prints per round the medians and p99s, then the medians of the rounds. Needs root,
# a release build (cargo build --release) and cyclictest (apt install rt-tests).
set -euo pipefail
ROUNDS=${1:-5}
SECS=${2:-10}
INTERVAL=${3:-1000}
CPU=${4:-1}
BIN=${SCHEDLAB:-$(dirname "$0")/../target/release/schedlab}
command -v cyclictest >/dev/null || { echo "cyclictest missing: apt install rt-tests" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/lat.toml" <<TOML
name = "cyclictest-compare"
[matrix]
workload = ["one"]
scheduler = ["fifo-rm"]
[workloads.one]
kind = "periodic"
duration_s = $SECS
cpu = $CPU
work_fraction = 1.0
tasks = [{ c_ms = 0.01, t_ms = $(awk "BEGIN{print $INTERVAL/1000}") }]
TOML
{ echo 'cpu_dma_latency = "off"'; cat "$WORK/lat.toml"; } > "$WORK/lat-off.toml"
LOOPS=$(( SECS * 1000000 / INTERVAL ))
S50=(); O50=(); C50=()
# The wake-up latency median and p99 (us) of one schedlab run of spec $1.
schedlab_round() {
  rm -f "$WORK/db"
  "$BIN" --db "$WORK/db" run -q "$1"
  "$BIN" --db "$WORK/db" export --format json | python3 -c '
import json,sys
r=json.load(sys.stdin)[0]; w=json.loads(r["extra"])["rt"]["wakeup"]
print(w["p50"]/1000, w["p99"]/1000)'
}
for r in $(seq 1 "$ROUNDS"); do
  read -r s50 s99 < <(schedlab_round "$WORK/lat.toml")
  read -r o50 o99 < <(schedlab_round "$WORK/lat-off.toml")
  cyclictest -m -q -p 90 -i "$INTERVAL" -a "$CPU" -t 1 -l "$LOOPS" -h 10000 > "$WORK/ct.txt"
  read -r c50 c99 < <(python3 - "$WORK/ct.txt" <<'PY'
import sys
h=[]
for line in open(sys.argv[1]):
    if line.startswith('#') or not line.strip(): continue
    us, n = line.split()[:2]; h.append((int(us), int(n)))
tot=sum(n for _,n in h); acc=0; p50=p99=None
for us,n in h:
    acc+=n
    if p50 is None and acc>=tot*0.5: p50=us
    if p99 is None and acc>=tot*0.99: p99=us
print(p50, p99)
PY
)
  echo "round $r: schedlab p50 ${s50} us p99 ${s99} us | schedlab dma off p50 ${o50} us p99 ${o99} us | cyclictest p50 ${c50} us p99 ${c99} us"
  S50+=("$s50"); O50+=("$o50"); C50+=("$c50")
done
python3 -c "
import statistics,sys
s=[float(x) for x in sys.argv[1].split()]; o=[float(x) for x in sys.argv[2].split()]; c=[float(x) for x in sys.argv[3].split()]
m=statistics.median
print(f'median of rounds: schedlab {m(s):.1f} us, schedlab dma off {m(o):.1f} us, cyclictest {m(c):.1f} us, difference {m(s)-m(c):+.1f} us')
" "${S50[*]}" "${O50[*]}" "${C50[*]}"
