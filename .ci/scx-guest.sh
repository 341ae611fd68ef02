#!/usr/bin/env bash
# The sched_ext harness: boots Debian's trixie-backports kernel (sched_ext enabled) under
# QEMU's TCG emulation with virtme-ng, sharing this machine's filesystem, and runs schedlab's
# sched_ext integration tests (tests/scx.rs) inside it. Results come back through
# target/scx-guest/ in the checkout (the guest's /tmp is its own).
#
#   .ci/scx-guest.sh provision   # kernel, virtme-ng, scx_bpfland and schedlab-scx into $SCX_CACHE
#   .ci/scx-guest.sh run         # provision, build the tests, boot the guest, run them
#
# Nothing here changes the machine's apt configuration: the kernel package comes from a
# private sources list and `apt-get download`, unpacked with dpkg-deb -x into the cache.
# Caches live outside the repo (and outside /tmp, which the guest does not share).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${SCX_CACHE:-/opt/schedlab-scx}
SUITE=${SCX_SUITE:-trixie-backports}
MIRROR=${SCX_MIRROR:-http://deb.debian.org/debian}
SCX_VERSION=${SCX_BPFLAND_VERSION:-}   # empty: the newest on crates.io
OUT=target/scx-guest

log() { echo "scx-guest: $*" >&2; }

apt_install() {
  local need=()
  command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
  command -v clang-19 >/dev/null || command -v clang-18 >/dev/null || need+=(clang-19)  # scx_utils 1.1 builds BPF for -mcpu=v4: clang 18+
  command -v pkg-config >/dev/null || need+=(pkg-config)
  [ -e /usr/include/libelf.h ] || need+=(libelf-dev)
  [ -e /usr/include/zlib.h ] || need+=(zlib1g-dev)
  command -v busybox >/dev/null || need+=(busybox-static)
  command -v depmod >/dev/null || [ -x /sbin/depmod ] || need+=(kmod)  # virtme-ng indexes the unpacked modules
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${need[@]}" >/dev/null
  fi
}

# The newest linux-image of $SUITE, unpacked under $CACHE/kernel/<version>/ (its vmlinuz,
# config and modules in usr/lib/modules/<version>/, as Debian lays out 7.x kernels).
provision_kernel() {
  local apt="$CACHE/apt"
  mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$CACHE/kernel"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main" >"$apt/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=-" -o "Dir::State::Lists=$apt/lists"
    -o "Dir::Cache=$apt" -o "Dir::Cache::archives=$apt/archives" -o "Dir::State::status=$apt/status" -o "APT::Architecture=amd64"
    -o "Debug::NoLocking=1" -o "APT::Get::List-Cleanup=0")
  : >"$apt/status"
  if [ -z "$(find "$apt/lists" -name '*Packages*' -mmin -1440 2>/dev/null | head -1)" ]; then
    log "apt-get update ($SUITE, private lists)"
    apt-get "${opts[@]}" update -qq
  fi
  # The signed (unsigned packages are for building) meta package's image, e.g. linux-image-6.16.3+deb13-amd64.
  local pkg
  pkg=$(apt-cache "${opts[@]}" depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  [ -n "$pkg" ] || { log "no linux-image-amd64 in $SUITE"; exit 1; }
  local ver=${pkg#linux-image-}
  if [ ! -e "$CACHE/kernel/$ver/usr/lib/modules/$ver/vmlinuz" ]; then
    # Since 7.x the image is split: linux-binary (vmlinuz), linux-modules, linux-base (config).
    local parts=("$pkg")
    mapfile -t -O 1 parts < <(apt-cache "${opts[@]}" depends "$pkg" | awk -v v="$ver" '/Depends: linux-(binary|modules|base)-/ && index($2, v) {print $2}')
    log "downloading ${parts[*]}"
    (cd "$apt/archives" && apt-get "${opts[@]}" download "${parts[@]}" 2>&1 | grep -v 'unsandboxed' >&2 || true)
    rm -rf "$CACHE/kernel/$ver.partial"
    for p in "${parts[@]}"; do
      dpkg-deb -x "$(ls "$apt/archives/${p}"_*.deb)" "$CACHE/kernel/$ver.partial"
    done
    rm -f "$apt/archives/"*.deb
    mv "$CACHE/kernel/$ver.partial" "$CACHE/kernel/$ver"
  fi
  ln -sfn "$ver" "$CACHE/kernel/current"
  grep -q '^CONFIG_SCHED_CLASS_EXT=y' "$CACHE/kernel/$ver/usr/lib/modules/$ver/config" || { log "$pkg has no CONFIG_SCHED_CLASS_EXT"; exit 1; }
}

provision_vng() {
  if [ ! -x "$CACHE/venv/bin/vng" ]; then
    log "installing virtme-ng into $CACHE/venv"
    python3 -m venv "$CACHE/venv"
    "$CACHE/venv/bin/pip" install -q virtme-ng
  fi
}

# scx_bpfland from crates.io; its BPF part needs clang 18 or newer as `clang`.
provision_scx() {
  [ -x "$CACHE/cargo/bin/scx_bpfland" ] && return 0
  local clang
  clang=$(command -v clang-19 || command -v clang-18) || { log "scx_bpfland needs clang 18 or newer (Debian 12: apt-get install clang-19)"; exit 1; }
  mkdir -p "$CACHE/clang-bin"
  ln -sfn "$clang" "$CACHE/clang-bin/clang"
  local llvm_strip
  llvm_strip=$(command -v "llvm-strip-${clang##*-}" || true)
  [ -n "$llvm_strip" ] && ln -sfn "$llvm_strip" "$CACHE/clang-bin/llvm-strip"
  log "cargo install scx_bpfland (about 8 minutes on 2 cores)"
  PATH="$CACHE/clang-bin:$PATH" BPF_CLANG="$CACHE/clang-bin/clang" CARGO_TARGET_DIR="$CACHE/scx-target" \
    cargo install scx_bpfland --locked --root "$CACHE/cargo" ${SCX_VERSION:+--version "$SCX_VERSION"} -q
  rm -rf "$CACHE/scx-target"
}

# schedlab-scx (crates/scx-dwcs, outside the workspace: clang builds its BPF side), built
# once per version of its sources and of the crates it links, into $CACHE/schedlab-scx/<hash>/.
SCX_DWCS_SOURCES=(crates/scx-dwcs crates/dispatch crates/policy crates/plan crates/sys crates/model)
scx_dwcs_bin() {
  local hash
  hash=$(find "${SCX_DWCS_SOURCES[@]}" -type f -not -path '*/target/*' -print0 | sort -z \
    | xargs -0 sha256sum | sha256sum | cut -c1-16)
  echo "$CACHE/schedlab-scx/$hash"
}

provision_scx_dwcs() {
  local dir
  dir=$(scx_dwcs_bin)
  [ -x "$dir/schedlab-scx" ] && return 0
  log "building schedlab-scx with clang ($(basename "$dir"))"
  PATH="$CACHE/clang-bin:$PATH" BPF_CLANG="$CACHE/clang-bin/clang" CARGO_TARGET_DIR="$CACHE/scx-dwcs-target" \
    cargo build -q --manifest-path crates/scx-dwcs/Cargo.toml
  mkdir -p "$dir.partial"
  cp "$CACHE/scx-dwcs-target/debug/schedlab-scx" "$dir.partial/"
  rm -rf "$dir" && mv "$dir.partial" "$dir"
}

provision() {
  mkdir -p "$CACHE"
  [ "$(id -u)" = 0 ] && apt_install
  provision_kernel
  provision_vng
  provision_scx
  provision_scx_dwcs
}

# Builds the integration tests here, boots the guest on them (TCG: no KVM needed) and
# brings back their output and exit status through $OUT.
run() {
  provision
  local ver kdir bin
  ver=$(readlink "$CACHE/kernel/current")
  kdir="$CACHE/kernel/$ver/usr/lib/modules/$ver"
  # scx_bpfland reads the running kernel's config from /boot/config-$(uname -r).
  mkdir -p "$CACHE/boot"
  cp "$kdir/config" "$CACHE/boot/config-$ver"
  bin=$(cargo test --test tests --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "tests"][-1])')
  cargo build -q
  rm -rf "$OUT" && mkdir -p "$OUT"
  cat >"$OUT/inside.sh" <<INSIDE
export SCHEDLAB_SCX_GUEST=1 PATH="$CACHE/cargo/bin:$(scx_dwcs_bin):\$PATH" RUST_BACKTRACE=1
cd "$PWD"
uname -r >"$OUT/kernel"
"$bin" ${SCX_TESTS:-scx::} --test-threads=1 --nocapture >"$OUT/tests.log" 2>&1
echo \$? >"$OUT/status"
dmesg >"$OUT/dmesg" 2>&1 || true
INSIDE
  # A guest that ends without writing its status died (its kernel or QEMU: seen twice in
  # five full runs, with nothing on its console), which says nothing about the tests: it is
  # said and booted once more. A test that fails is never rerun.
  local boot
  for boot in 1 2; do
    log "booting $ver under TCG (no KVM)"
    rm -f "$OUT/status" "$OUT/tests.log"
    PATH="$CACHE/venv/bin:$PATH:/usr/sbin:/sbin" timeout "${SCX_GUEST_TIMEOUT:-1800}" vng --run "$kdir/vmlinuz" --disable-kvm \
      --cpus 2 --memory 2G --rwdir "$PWD/$OUT" --rodir "/boot=$CACHE/boot" --exec "sh $PWD/$OUT/inside.sh" >"$OUT/guest.log" 2>&1 || true
    [ -e "$OUT/status" ] && break
    log "the guest ended without a result (boot $boot): its tests got as far as:"
    tail -5 "$OUT/tests.log" 2>/dev/null || true
  done
  cat "$OUT/tests.log" 2>/dev/null || { log "the guest ran no tests:"; tail -30 "$OUT/guest.log"; exit 1; }
  [ "$(cat "$OUT/status" 2>/dev/null)" = 0 ] || { log "sched_ext tests failed in the guest ($(cat "$OUT/kernel" 2>/dev/null))"; exit 1; }
  # A test that skipped would pass here without proving anything.
  if grep '^SKIPPED' "$OUT/tests.log" | grep -vq 'this kernel has sched_ext'; then
    log "a guest test skipped"; exit 1
  fi
  log "sched_ext tests passed in the guest ($(cat "$OUT/kernel"))"
}

case "${1:-run}" in
  provision) provision ;;
  run) run ;;
  *) echo "usage: $0 [provision|run]" >&2; exit 2 ;;
esac
