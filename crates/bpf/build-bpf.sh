#!/usr/bin/env bash
# Compiles crates/bpf/src/bpf/sched.bpf.c into sched.bpf.o beside it (or into the directory
# given), byte for byte the same on every machine with Debian's clang-19 and libbpf-dev.
# The object is committed: building schedlab needs no clang (check-bpf.sh says when stale).
# To try a change without rebuilding schedlab, build into another directory and run a traced
# cell with SCHEDLAB_BPF_OBJECT=DIR/sched.bpf.o: the cell's `observer` record has each
# program's runs and run time.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/src/bpf}"
clang="${CLANG:-clang-19}"
arch_include="/usr/include/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)"
cd "$here/src/bpf"
"$clang" -O2 -g -target bpf -mcpu=v3 \
  -I"$arch_include" \
  -ffile-prefix-map="$here/src/bpf"=. -fdebug-compilation-dir=. \
  -c sched.bpf.c -o "$out/sched.bpf.o"
