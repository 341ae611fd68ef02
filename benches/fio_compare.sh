#!/usr/bin/env bash
# The par_write cross-check of docs/BENCHMARKS.md: the same job (5 files x 100 MB, 5 threads,
# 4 KiB write(2) calls, fsync before close) by schedlab and by fio, on one loop device made
# exactly as schedlab makes its own (ext4, lazy init off), alternating, the page cache dropped
# before each. Needs root, fio and a release build. Usage: benches/fio_compare.sh [REPS [BUFFER_BYTES]]
set -euo pipefail
reps=${1:-5}
bs=${2:-4096}
bin=${SCHEDLAB:-target/release/schedlab}
work=$(mktemp -d /var/tmp/schedlab-fio.XXXXXX)
img=$work/img; mnt=$work/mnt; mkdir "$mnt"
fallocate -l 1536M "$img"
dev=$(losetup --find --show "$img")
cleanup() { umount "$mnt" 2>/dev/null || true; losetup -d "$dev" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
mount -o nosuid,nodev "$dev" "$mnt"
name=$(basename "$dev")
cat > "$work/spec.toml" <<SPEC
name = "fio-compare"
repetitions = 1
[device]
path = "$mnt"
confirm_device = "$name"
[workloads.five-medium]
kind = "par_write"
files = 5
file_bytes = 100_000_000
threads = 5
buffer_bytes = $bs
mode = "fsync"
[matrix]
workload = ["five-medium"]
SPEC
for i in $(seq "$reps"); do
  "$bin" --db "$work/db" run "$work/spec.toml" -q
  "$bin" --db "$work/db" export --format json | python3 -c "
import json,sys
for r in json.load(sys.stdin): print('schedlab rep $i: %.1f MB/s (%d bytes in %.3f s)' % (r['io_bytes']/r['cell_makespan_s']/1e6, r['io_bytes'], r['cell_makespan_s']))"
  sync; echo 3 > /proc/sys/vm/drop_caches
  fio --name=pw --directory="$mnt" --numjobs=5 --thread --nrfiles=1 --size=100000000 --bs=$bs --rw=write \
      --ioengine=psync --end_fsync=1 --fallocate=none --create_on_open=1 --group_reporting --output-format=json ${FIO_EXTRA:-} \
      > "$work/fio-$i.json"
  rm -f "$mnt"/pw.*
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); w=j['jobs'][0]['write']; print('fio rep $i: %.1f MB/s (%d bytes in %d ms)' % (w['io_bytes']/w['runtime']/1e3, w['io_bytes'], w['runtime']))" "$work/fio-$i.json"
done
