#!/bin/sh
# Times `trace-cmd report` against schedlab's decoder on the same capture: the capture's
# pages are written as a trace.dat (examples/tracedat.rs), so both read the same bytes.
# Three timings, best of 5 each:
#   trace-cmd report -i X.dat > /dev/null       libtraceevent: decode + print a line per event
#   report X.sltrace > /dev/null                 ours: decode + print a line per event
#   report --summary X.sltrace > /dev/null       ours: decode (and count) only
# It also checks that both print the same number of lines of each event.
#
#   crates/trace/benches/trace_cmd_compare.sh [CAPTURE.sltrace]
#
# A capture of any command: cargo run --release -p schedlab-trace --example capture -- \
#   --block -o X.sltrace -- schedlab run SPEC ...
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$(cd "$here/../.." && pwd)/target}
in=${1:-$here/tests/fixtures/io-other-50.sltrace}
command -v trace-cmd >/dev/null || { echo "trace-cmd is not installed (apt-get install trace-cmd)"; exit 2; }
cargo build --quiet --release -p schedlab-trace --examples
bin=$target/release/examples
dat=$(mktemp --suffix .dat)
trap 'rm -f "$dat"' EXIT
"$bin/tracedat" "$in" "$dat"

best() { # best wall time of 5 runs of "$@" (output discarded), seconds
    b=
    for _ in 1 2 3 4 5; do
        t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N)
        t=$(( t1 - t0 ))
        if [ -z "$b" ] || [ "$t" -lt "$b" ]; then b=$t; fi
    done
    echo "$b" | awk '{ printf "%.3f", $1 / 1e9 }'
}

events=$("$bin/report" --summary "$in" | awk 'NR == 1 { print $1 }')
# A comm may hold spaces: the event is the word after the first timestamp-shaped one.
theirs=$(trace-cmd report -i "$dat" 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { e = $(i + 1); sub(":", "", e); n[e]++; break } } END { for (k in n) print k, n[k] }' | sort)
ours=$("$bin/report" "$in" | awk '{ sub(":", "", $3); if ($3 != "LOST") n[$3]++ } END { for (k in n) print k, n[k] }' | sort)
if [ "$theirs" != "$ours" ]; then
    echo "the two decoders disagree:"; echo "trace-cmd:"; echo "$theirs"; echo "schedlab:"; echo "$ours"; exit 1
fi
tc=$(best trace-cmd report -i "$dat")
text=$(best "$bin/report" "$in")
dec=$(best "$bin/report" --summary "$in")
echo "$in: $events events ($(du -h "$dat" | cut -f1) trace.dat), the same events of each kind in both"
rate() { awk -v n="$events" -v t="$1" 'BEGIN { printf "%.2f M events/s", n / t / 1e6 }'; }
echo "  trace-cmd report            $tc s  $(rate "$tc")"
echo "  schedlab report (text)      $text s  $(rate "$text")"
echo "  schedlab decode (no text)   $dec s  $(rate "$dec")"
