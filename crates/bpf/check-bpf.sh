#!/usr/bin/env bash
# Fails when the committed crates/bpf/src/bpf/sched.bpf.o is not what its source compiles to
# (bpf2go's convention): rebuilds it into a temporary directory and compares byte for byte.
# Fix a failure with crates/bpf/build-bpf.sh and commit the object.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$here/build-bpf.sh" "$tmp"
if ! cmp -s "$tmp/sched.bpf.o" "$here/src/bpf/sched.bpf.o"; then
  echo "crates/bpf/src/bpf/sched.bpf.o is stale: run crates/bpf/build-bpf.sh and commit it" >&2
  exit 1
fi
echo "crates/bpf/src/bpf/sched.bpf.o matches its source"
