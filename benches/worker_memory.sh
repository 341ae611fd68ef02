#!/usr/bin/env bash
# The private memory of schedlab's workers, for the limit check's per-worker estimate
# (crates/spec/src/limits.rs): runs one cell per workload kind, 2 processes each, and samples
# /proc/PID/status of the engine's children every 20 ms. Prints per kind the largest VmHWM,
# RssAnon (private), RssFile (shared page cache: the binary), VmPTE (page tables), KiB, and
# threads. Usage: benches/worker_memory.sh [SCHEDLAB_BINARY] (default: the release build).
set -euo pipefail
BIN=${1:-$(dirname "$0")/../target/release/schedlab}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/mem.toml" <<'SPEC'
name = "worker-memory"
repetitions = 1
warmup = 0
[matrix]
workload = ["pi", "copy", "mixed", "hash", "pw", "pr", "cmd", "flood", "irq", "periodic"]
processes = [2]
[workloads.pi]
kind = "pi"
iterations = 300000000
[workloads.copy]
kind = "copy"
transfer_bytes = 1048576
block_bytes = 1024
[workloads.mixed]
kind = "mixed"
iterations = 300000000
write_every = 500000
[workloads.hash]
kind = "hash"
hashes = 1000000
[workloads.pw]
kind = "par_write"
files = 4
file_bytes = 67108864
threads = 2
[workloads.pr]
kind = "par_read"
files = 4
file_bytes = 67108864
threads = 2
[workloads.cmd]
kind = "command"
argv = ["/bin/sleep", "1"]
[workloads.flood]
kind = "udp_flood"
packets = 2000000
[workloads.irq]
kind = "io_interrupts"
reads = 20000
file_bytes = 67108864
[workloads.periodic]
kind = "periodic"
duration_s = 1.5
tasks = [{ c_ms = 2, t_ms = 20 }, { c_ms = 3, t_ms = 30 }]
SPEC
SCHEDLAB_STATE_DIR="$WORK/state" TMPDIR="$WORK" "$BIN" --db "$WORK/r.db" run -q "$WORK/mem.toml" &
ENGINE=$!
while kill -0 $ENGINE 2>/dev/null; do
  for d in /proc/[0-9]*; do
    grep -q "^PPid:	$ENGINE\$" "$d/status" 2>/dev/null || continue
    kind=$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null | grep -o '"kind":"[a-z_]*"\|^/bin/sleep' | head -1) || continue
    awk -v k="$kind" '/^(VmHWM|RssAnon|RssFile|VmPTE|Threads):/ {a[$1] = $2}
      END {print k, a["VmHWM:"], a["RssAnon:"], a["RssFile:"], a["VmPTE:"], a["Threads:"]}' "$d/status" 2>/dev/null || true
  done >> "$WORK/samples"
  sleep 0.02
done
wait $ENGINE
echo "kind VmHWM RssAnon RssFile VmPTE threads (KiB, largest seen)"
awk 'NF == 6 {k = $1; n[k] = 1; for (i = 2; i <= 6; i++) if ($i > m[k, i]) m[k, i] = $i}
  END {for (k in n) print k, m[k, 2], m[k, 3], m[k, 4], m[k, 5], m[k, 6]}' "$WORK/samples" | sort
