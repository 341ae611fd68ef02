#!/usr/bin/env bash
# The sched_ext harness: boots Debian's trixie-backports kernel (sched_ext enabled) under
# QEMU's TCG emulation with virtme-ng, sharing this machine's filesystem, and runs schedlab's
# sched_ext integration tests (tests/scx.rs) inside it. Results come back through
# target/scx-guest/ in the checkout (the guest's /tmp is its own).
#
#   .ci/scx-guest.sh provision   # kernel, virtme-ng, scx_bpfland and schedlab-scx into $SCX_CACHE
#   .ci/scx-guest.sh run         # provision, build the tests, boot the guest, run them
#   .ci/scx-guest.sh matrix [CONFIG...]  # schedlab on other machines: one boot per configuration
#   .ci/scx-guest.sh floor [SPEC [SCALE]] # the A/A noise floor of a 2-vCPU TCG guest
#
# The kernel, scx_bpfland and virtme-ng are pinned in .ci/guest-versions (printed at the
# start); the cache holds each under its version, so a new pin provisions anew and the same
# pin reuses what is there without touching the network.
# Nothing here changes the machine's apt configuration: the kernel package comes from a
# private sources list and `apt-get download`, unpacked with dpkg-deb -x into the cache.
# Caches live outside the repo (and outside /tmp, which the guest does not share).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=guest-versions
. .ci/guest-versions
CACHE=${SCX_CACHE:-/opt/schedlab-scx}
SUITE=$GUEST_KERNEL_SUITE
MIRROR=${SCX_MIRROR:-http://deb.debian.org/debian}
OUT=target/scx-guest
# The pinned kernel's unpacked tree, and its vmlinuz, config and modules inside it.
KVER=$GUEST_KERNEL_ABI
KTREE="$CACHE/kernel/${KVER}_$GUEST_KERNEL_VERSION"
KDIR="$KTREE/usr/lib/modules/$KVER"
VENV="$CACHE/virtme-ng/$GUEST_VIRTME_NG_VERSION"
SCX_ROOT="$CACHE/scx_bpfland/$GUEST_SCX_BPFLAND_VERSION"

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

# The pinned linux-image of $SUITE, unpacked under $KTREE (its vmlinuz, config and modules
# in usr/lib/modules/<ABI>/, as Debian lays out 7.x kernels). Once there, no network is used.
provision_kernel() {
  if [ ! -e "$KDIR/vmlinuz" ]; then
    local apt="$CACHE/apt"
    mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$CACHE/kernel"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main" >"$apt/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=-" -o "Dir::State::Lists=$apt/lists"
      -o "Dir::Cache=$apt" -o "Dir::Cache::archives=$apt/archives" -o "Dir::State::status=$apt/status" -o "APT::Architecture=amd64"
      -o "Debug::NoLocking=1" -o "APT::Get::List-Cleanup=0")
    : >"$apt/status"
    log "apt-get update ($SUITE, private lists)"
    apt-get "${opts[@]}" update -qq
    # The signed image (the unsigned packages are for building); since 7.x it is split into
    # linux-binary (vmlinuz), linux-modules and linux-base (config), all of one version.
    local pkg="linux-image-$KVER" p parts=()
    if ! apt-cache "${opts[@]}" madison "$pkg" | awk -F' [|] ' -v v="$GUEST_KERNEL_VERSION" '$2 == v {f=1} END {exit !f}'; then
      log "$SUITE no longer has $pkg $GUEST_KERNEL_VERSION, the pin in .ci/guest-versions; it has:"
      apt-cache "${opts[@]}" madison linux-image-amd64 >&2 || true
      log "move GUEST_KERNEL_ABI and GUEST_KERNEL_VERSION to the image that linux-image-amd64 depends on"
      exit 1
    fi
    parts=("$pkg")
    mapfile -t -O 1 parts < <(apt-cache "${opts[@]}" depends "$pkg=$GUEST_KERNEL_VERSION" | awk -v v="$KVER" '/Depends: linux-(binary|modules|base)-/ && index($2, v) {print $2}')
    log "downloading ${parts[*]} $GUEST_KERNEL_VERSION"
    (cd "$apt/archives" && apt-get "${opts[@]}" download "${parts[@]/%/=$GUEST_KERNEL_VERSION}" 2>&1 | grep -v 'unsandboxed' >&2 || true)
    rm -rf "$KTREE.partial"
    for p in "${parts[@]}"; do
      dpkg-deb -x "$(ls "$apt/archives/${p}_"*.deb)" "$KTREE.partial"
    done
    rm -f "$apt/archives/"*.deb
    rm -rf "$KTREE" && mv "$KTREE.partial" "$KTREE"
  fi
  grep -q '^CONFIG_SCHED_CLASS_EXT=y' "$KDIR/config" || { log "linux-image-$KVER has no CONFIG_SCHED_CLASS_EXT"; exit 1; }
}

provision_vng() {
  if [ ! -x "$VENV/bin/vng" ]; then
    log "installing virtme-ng $GUEST_VIRTME_NG_VERSION into $VENV"
    rm -rf "$VENV" && python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q "virtme-ng==$GUEST_VIRTME_NG_VERSION"
  fi
}

# scx_bpfland from crates.io; its BPF part needs clang 18 or newer as `clang`.
provision_scx() {
  [ -x "$SCX_ROOT/bin/scx_bpfland" ] && return 0
  local clang
  clang=$(command -v clang-19 || command -v clang-18) || { log "scx_bpfland needs clang 18 or newer (Debian 12: apt-get install clang-19)"; exit 1; }
  mkdir -p "$CACHE/clang-bin"
  ln -sfn "$clang" "$CACHE/clang-bin/clang"
  local llvm_strip
  llvm_strip=$(command -v "llvm-strip-${clang##*-}" || true)
  [ -n "$llvm_strip" ] && ln -sfn "$llvm_strip" "$CACHE/clang-bin/llvm-strip"
  log "cargo install scx_bpfland $GUEST_SCX_BPFLAND_VERSION (about 8 minutes on 2 cores)"
  PATH="$CACHE/clang-bin:$PATH" BPF_CLANG="$CACHE/clang-bin/clang" CARGO_TARGET_DIR="$CACHE/scx-target" \
    cargo install scx_bpfland --locked --version "=$GUEST_SCX_BPFLAND_VERSION" --root "$SCX_ROOT" -q
  rm -rf "$CACHE/scx-target"
}

# schedlab-scx (crates/scx-dwcs, outside the workspace: clang builds its BPF side), built
# once per version of its sources and of the crates it links, into $CACHE/schedlab-scx/<hash>/.
SCX_DWCS_SOURCES=(crates/scx-dwcs crates/dispatch crates/policy crates/plan crates/schedulability crates/sys crates/model)
scx_dwcs_bin() {
  local hash
  hash=$(find "${SCX_DWCS_SOURCES[@]}" -type f -not -path '*/target/*' -print0 | sort -z \
    | xargs -0 sha256sum | sha256sum | cut -c1-16)
  echo "$CACHE/schedlab-scx/$hash"
}

# SCX_DWCS_DIR: where provision put schedlab-scx (the guest's PATH gets this very directory).
provision_scx_dwcs() {
  local dir
  dir=$(scx_dwcs_bin)
  SCX_DWCS_DIR=$dir
  [ -x "$dir/schedlab-scx" ] && return 0
  log "building schedlab-scx with clang ($(basename "$dir"))"
  PATH="$CACHE/clang-bin:$PATH" BPF_CLANG="$CACHE/clang-bin/clang" CARGO_TARGET_DIR="$CACHE/scx-dwcs-target" \
    cargo build -q --locked --manifest-path crates/scx-dwcs/Cargo.toml
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

versions() {
  log "pinned in .ci/guest-versions: kernel linux-image-$GUEST_KERNEL_ABI $GUEST_KERNEL_VERSION ($SUITE)," \
    "scx_bpfland $GUEST_SCX_BPFLAND_VERSION, virtme-ng $GUEST_VIRTME_NG_VERSION; cache $CACHE"
}

# boot DIR CPUS APPEND COMMAND: boots the pinned kernel under TCG (no KVM needed) with $OUT
# writable, runs COMMAND in it and waits for DIR/status, with BOOT_OPTS given to vng. The
# sched_ext tests run TCG in one host thread with the kernel's console kept in
# DIR/guest.log: with one thread per vCPU (QEMU's default) a vCPU could run a text-patching
# breakpoint another had already removed ("Oops: int3" in patched code, killing the guest:
# at boot with a verbose console, and with nothing on the console while sched_ext flipped
# static keys). The matrix does the same: with a thread per vCPU and a quiet console, CI's
# 16-vCPU guest died twice at boot leaving an empty console, and one thread costs it
# 150 s against 135 s. A guest that ends without writing its status
# died, which says nothing about what ran in it: it is said, with the end of its console, and
# booted once more. Nothing that failed is ever rerun. Returns 1 when neither boot wrote a
# status.
boot() {
  local dir=$1 cpus=$2 append=$3 command=$4 n
  for n in 1 2; do
    log "booting $KVER under TCG (no KVM), $cpus vCPU(s)${append:+, $append}"
    rm -f "$dir/status"
    PATH="$VENV/bin:$PATH:/usr/sbin:/sbin" timeout "${SCX_GUEST_TIMEOUT:-1800}" vng --run "$KDIR/vmlinuz" --disable-kvm "${BOOT_OPTS[@]}" \
      --cpus "$cpus" --memory 2G ${append:+--append "$append"} --rwdir "$PWD/$OUT" --rodir "/boot=$CACHE/boot" \
      --exec "$command" >"$dir/guest.log" 2>&1 || true
    [ -e "$dir/status" ] && return 0
    log "the guest ended without a result (boot $n); the end of its console ($dir/guest.log):"
    tail -40 "$dir/guest.log" >&2
    cp "$dir/guest.log" "$dir/guest.boot$n.log"
  done
  return 1
}

# scx_bpfland reads the running kernel's config from /boot/config-$(uname -r).
boot_dir() {
  mkdir -p "$CACHE/boot"
  cp "$KDIR/config" "$CACHE/boot/config-$KVER"
}

# Builds the integration tests here, boots the guest on them (TCG: no KVM needed) and
# brings back their output and exit status through $OUT.
run() {
  versions
  provision
  boot_dir
  local bin
  bin=$(cargo test --test tests --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys; print([m["executable"] for m in map(json.loads, sys.stdin) if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "tests"][-1])')
  cargo build -q
  # The matrix's results stay (its own subcommand clears them).
  mkdir -p "$OUT" && find "$OUT" -mindepth 1 -maxdepth 1 ! -name matrix -exec rm -rf {} +
  cat >"$OUT/inside.sh" <<INSIDE
# No RUST_BACKTRACE: symbolising a panic's backtrace from the debug binary's 300 MB takes
# minutes under TCG and most of the guest's memory.
export SCHEDLAB_SCX_GUEST=1 PATH="$SCX_ROOT/bin:$SCX_DWCS_DIR:\$PATH" RUST_BACKTRACE=0
cd "$PWD"
uname -r >"$OUT/kernel"
# A periodic worker's mlockall faults in the whole schedlab binary (debug: about 300 MB),
# here over the guest's 9p share: read it into the page cache once, before any cell waits.
cat "$PWD/target/debug/schedlab" >/dev/null
"$bin" ${SCX_TESTS:-scx::} --test-threads=1 --nocapture >"$OUT/tests.log" 2>&1
echo \$? >"$OUT/status"
dmesg >"$OUT/dmesg" 2>&1 || true
INSIDE
  BOOT_OPTS=(--verbose "--qemu-opts=-accel tcg,thread=single")
  boot "$OUT" 2 "" "sh $PWD/$OUT/inside.sh" || log "the sched_ext tests got as far as: $(tail -5 "$OUT/tests.log" 2>/dev/null)"
  cat "$OUT/tests.log" 2>/dev/null || { log "the guest ran no tests:"; tail -30 "$OUT/guest.log"; exit 1; }
  [ "$(cat "$OUT/status" 2>/dev/null)" = 0 ] || { log "sched_ext tests failed in the guest ($(cat "$OUT/kernel" 2>/dev/null))"; exit 1; }
  # A test that skipped would pass here without proving anything.
  if grep -o 'SKIPPED .*' "$OUT/tests.log" | grep -vq 'this kernel has sched_ext'; then
    log "a guest test skipped"; exit 1
  fi
  log "sched_ext tests passed in the guest ($(cat "$OUT/kernel"))"
}

# What a guest that runs schedlab needs: the kernel and virtme-ng provisioned, TCG's boot
# options, and `bin` (the caller's local) set to the schedlab to run there: MATRIX_SCHEDLAB,
# or this checkout's release build.
schedlab_guest() {
  BOOT_OPTS=(--verbose "--qemu-opts=-accel tcg,thread=single")
  versions
  mkdir -p "$CACHE"
  [ "$(id -u)" = 0 ] && apt_install
  provision_kernel
  provision_vng
  boot_dir
  bin=${MATRIX_SCHEDLAB:-}
  if [ -z "$bin" ]; then
    cargo build --release -q --bin schedlab
    bin=$PWD/target/release/schedlab
  fi
}

# The guest matrix (issue #38): each configuration boots once (rtzero-host runs on this
# machine, where its kernel has RT group scheduling) and runs .ci/guest-matrix.sh, which
# runs schedlab's env, the built-in experiment and slices of pa3 and lab1 (release build)
# and checks them. Logs in $OUT/matrix/<config>/; a line per configuration with its time.
MATRIX_CONFIGS=(cpu1 cpu4 cpu16 cgroup2 rtzero rtzero-host container container-host)
matrix_cpus() {
  case $1 in cpu1) echo 1 ;; cpu4) echo 4 ;; cpu16) echo 16 ;; *) echo 2 ;; esac
}
matrix() {
  local configs=("$@") c dir t0 secs failed=() summary=()
  [ ${#configs[@]} -gt 0 ] || configs=("${MATRIX_CONFIGS[@]}")
  for c in "${configs[@]}"; do
    [[ " ${MATRIX_CONFIGS[*]} " == *" $c "* ]] || { log "unknown configuration $c (${MATRIX_CONFIGS[*]})"; exit 2; }
  done
  # A guest that hangs gives up its boot sooner than the sched_ext tests' (each boot is
  # expected to take 2 to 8 minutes).
  local SCX_GUEST_TIMEOUT=${SCX_GUEST_TIMEOUT:-1200}
  local bin
  schedlab_guest
  rm -rf "$OUT/matrix"
  bash .ci/guest-matrix.sh plans "$PWD/$OUT/matrix/plans" "$bin" "$PWD"
  for c in "${configs[@]}"; do
    dir=$OUT/matrix/$c
    mkdir -p "$dir"
    t0=$(date +%s)
    case $c in
      rtzero-host | container-host)
        if ! ls /sys/fs/cgroup/cpu/cpu.rt_runtime_us >/dev/null 2>&1; then
          log "matrix $c: skipped, this machine's kernel has no RT group scheduling on a v1 cpu hierarchy"
          summary+=("$c: skipped (no RT group scheduling here)")
          continue
        fi
        bash .ci/guest-matrix.sh "$c" "$PWD/$dir" "$bin" "$PWD" ;;
      *)
        local append=""
        [ "$c" = cgroup2 ] && append="cgroup_no_v1=all"
        boot "$dir" "$(matrix_cpus "$c")" "$append" "bash $PWD/.ci/guest-matrix.sh $c $PWD/$dir $bin $PWD" || true ;;
    esac
    secs=$(($(date +%s) - t0))
    if [ "$(cat "$dir/status" 2>/dev/null)" = 0 ]; then
      summary+=("$c: passed in ${secs} s")
    else
      failed+=("$c")
      summary+=("$c: FAILED in ${secs} s")
      log "matrix $c failed ($dir):"
      cat "$dir/failures" >&2 2>/dev/null || tail -20 "$dir/guest.log" >&2
    fi
    cat "$dir/notes" >&2 2>/dev/null || true
  done
  log "matrix: ${summary[*]/%/;}"
  [ ${#failed[@]} = 0 ] || { log "matrix: ${failed[*]} failed"; exit 1; }
}

# The A/A floor of a TCG guest (issue #45, docs/CI.md): `schedlab noise` of an experiment
# (default experiments/ci.toml at --scale 0.1, 5 repetitions per arm) in a 2-vCPU guest,
# then its floor table, into $OUT/floor/. Not part of CI: run it to learn how wide the
# guest's noise is before judging a sched_ext scheduler there.
floor() {
  local spec=${1:-experiments/ci.toml} scale=${2:-0.1} dir=$OUT/floor
  local bin
  schedlab_guest
  rm -rf "$dir" && mkdir -p "$dir"
  # The database lives in the guest's /tmp (SQLite locks fail on the shared directory) and
  # comes back as a copy.
  local db=/tmp/floor.db out=$PWD/$dir
  boot "$dir" 2 "" "cd $PWD && mkdir -p /tmp/st && export SCHEDLAB_STATE_DIR=/tmp/st TMPDIR=/tmp && $bin --db $db noise $spec --scale $scale --per-arm 5 -q >$out/noise.log 2>&1; rc=\$?; $bin --db $db show >$out/show.log 2>&1; cp $db $out/; echo \$rc >$out/status" || true
  log "floor: exit $(cat "$dir/status" 2>/dev/null || echo none); $(tail -1 "$dir/noise.log" 2>/dev/null)"
}

case "${1:-run}" in
  provision) versions; provision ;;
  run) run ;;
  matrix) shift; matrix "$@" ;;
  floor) shift; floor "$@" ;;
  *) echo "usage: $0 [provision|run|matrix [CONFIG...]|floor [SPEC [SCALE]]]" >&2; exit 2 ;;
esac
