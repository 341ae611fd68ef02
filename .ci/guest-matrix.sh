#!/usr/bin/env bash
# One configuration of the guest matrix (issue #38): run by `.ci/scx-guest.sh matrix` inside
# a TCG guest (or, for rtzero-host, on this machine itself), it lays out the configuration's
# cgroups, runs schedlab's env, the built-in experiment and slices of pa3 and lab1, and checks
# what they did. Every log, a line per step (name, exit status, seconds) and every failed
# check go to OUT; the last line written is OUT/status (0: every check held).
#
#   guest-matrix.sh CONFIG OUT SCHEDLAB REPO
#   guest-matrix.sh plans DIR SCHEDLAB REPO   # on the host first: each experiment's cell keys
#
# CONFIG: cpu1, cpu4, cpu16 (the CPUs are the guest's; cgroups as systemd's hybrid mode lays
# them out, like this CI host), cgroup2 (booted with cgroup_no_v1=all; the shell in a leaf
# cgroup, as in a user session), rtzero (hybrid; the shell in a new v1 cpu cgroup, whose RT
# runtime is 0 where the kernel has RT group scheduling), rtzero-host (the same on this
# machine's own kernel and cgroups, where it has RT group scheduling), container (hybrid; a
# container's limits, issue #47: the shell in a v1 cpu cgroup with half a CPU of quota and 300
# ms of RT runtime a second where the kernel has RT group scheduling, every run in a private
# mount namespace whose /sys and the mounts below it are read-only bind mounts), container-host
# (the same on this machine).
set -uo pipefail
# One group, which bash reads whole before it runs any of it: a run under way (a guest boots
# for minutes) goes on with the script as it was, whatever happens to the file meanwhile.
{
config=$1 out=$2 bin=$3 repo=$4
# The experiments each configuration runs: name, --scale, file (- for the built-in one, whose
# text is experiments/quick.toml) and the experiment a slice is cut from.
EXPERIMENTS=("quick 0.02 - -" "pa3-slice 0.01 tests/fixtures/guest/pa3-slice.toml experiments/pa3.toml"
  "lab1-slice 0.01 tests/fixtures/guest/lab1-slice.toml experiments/lab1.toml")
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# The cell keys of each experiment's plan, as `check` prints them where every policy may be
# applied: what a run must have measured or skipped with a reason, cell for cell.
if [ "$config" = plans ]; then
  mkdir -p "$out"
  for e in "${EXPERIMENTS[@]}"; do
    read -r name scale file source <<<"$e"
    [ "$file" = - ] && file=experiments/quick.toml
    # A slice keeps its experiment's workloads, policies and groups as they are, and only
    # values of its matrix: a change there must reach the slice too.
    [ "$source" = - ] || "$PY" -c '
import sys, tomllib
slice, source = (tomllib.load(open(f, "rb")) for f in sys.argv[1:3])
bad = [f"[{t}.{k}]" for t in ("workloads", "policies", "groups") for k, v in slice.get(t, {}).items()
       if source.get(t, {}).get(k) != v]
def axes(m, s, at):
    for k, v in m.items():
        if isinstance(v, dict):
            axes(v, s.get(k, {}), f"{at}.{k}")
        elif not (isinstance(v, list) and set(v) <= set(s.get(k, []))):
            bad.append(f"{at}.{k} = {v}")
axes(slice.get("matrix", {}), source.get("matrix", {}), "matrix")
if bad:
    sys.exit(f"{sys.argv[1]} is no slice of {sys.argv[2]}: " + ", ".join(bad) + " differ")
' "$repo/$file" "$repo/$source" || exit 1
    "$bin" check "$repo/$file" --scale "$scale" --repetitions 1 >"$out/$name.plan" 2>&1 || { cat "$out/$name.plan" >&2; exit 1; }
    "$PY" -c '
import re, sys
keys = []
for line in open(sys.argv[1]):
    cols = [c.strip() for c in re.split("[│┆]", line)[1:-1]]
    if len(cols) < 2 or not cols[1] or cols[0] == "cell":
        continue
    if cols[0].isdigit():
        keys.append(cols[1])
    elif keys and " " not in cols[1]:
        keys[-1] += cols[1]  # a key wrapped in its column
print("\n".join(keys))
' "$out/$name.plan" >"$out/$name.keys"
    [ -s "$out/$name.keys" ] || { echo "no cell keys in $out/$name.plan" >&2; exit 1; }
  done
  exit 0
fi
plans=$(dirname "$out")/plans
work=$(mktemp -d /tmp/schedlab-matrix.XXXXXX)
export TMPDIR=$work SCHEDLAB_STATE_DIR=$work/state SCHEDLAB_DB=$work/schedlab.db
mkdir -p "$out"
: >"$out/steps"
: >"$out/failures"
: >"$out/notes"

fail() { echo "$*" >>"$out/failures"; }
note() { echo "$*" >>"$out/notes"; }

# step NAME ALLOWED CMD...: runs CMD into OUT/NAME.log, records its status and time, and
# fails the configuration unless the status is one of ALLOWED (a space-separated list).
step() {
  local name=$1 allowed=$2 t0 rc ms
  shift 2
  t0=$(date +%s%N)
  "$@" >"$out/$name.log" 2>&1
  rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  echo "$name $rc $((ms / 1000)).$(printf %03d $((ms % 1000))) s" >>"$out/steps"
  case " $allowed " in
    *" $rc "*) ;;
    *) fail "$name: exit status $rc (expected $allowed): $(tail -3 "$out/$name.log" | tr '\n' ' ')" ;;
  esac
  return $rc
}

# systemd's hybrid layout: a tmpfs at /sys/fs/cgroup, each v1 controller this kernel has on
# its own directory, and the v2 hierarchy at unified/ (with the controllers no v1 hierarchy
# took: a 7.x kernel without CONFIG_CPUSETS_V1 keeps cpuset there).
hybrid() {
  umount /sys/fs/cgroup || return 1
  mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup || return 1
  local c
  for c in $(awk 'NR > 1 && $4 == 1 {print $1}' /proc/cgroups); do
    mkdir -p "/sys/fs/cgroup/$c"
    mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c" 2>/dev/null || rmdir "/sys/fs/cgroup/$c"
  done
  mkdir -p /sys/fs/cgroup/unified
  mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
}

# A v2-only machine with the shell in a leaf cgroup below the root, as systemd puts a login
# shell (user.slice/user-0.slice/session-1.scope), the controllers enabled down to it.
v2_session() {
  grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts || { fail "no cgroup2 at /sys/fs/cgroup"; return 1; }
  local d=/sys/fs/cgroup c ctl
  ctl=$(sed 's/\([a-z_]*\)/+\1/g' "$d/cgroup.controllers")
  for c in user.slice user-0.slice session-1.scope; do
    echo "$ctl" >"$d/cgroup.subtree_control" 2>/dev/null || true
    d=$d/$c
    mkdir -p "$d"
  done
  echo $$ >"$d/cgroup.procs"
}

# rtzero: the issue's reproduction. The shell goes into a new v1 cpu cgroup, which holds no
# RT runtime where the kernel has RT group scheduling; without it (Debian's kernels) no cgroup
# refuses RT, and the nearest refusal a root shell meets is a container's: no CAP_SYS_NICE
# (dropped from its bounding set) and RLIMIT_RTPRIO 0.
RT_CG= FROM_CG=
WRAP=()
rtzero() {
  local cpu=/sys/fs/cgroup/cpu
  [ -d "$cpu" ] || { fail "no v1 cpu hierarchy at $cpu"; return 1; }
  FROM_CG=$cpu$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' /proc/self/cgroup)
  RT_CG=$cpu/schedlab-rtzero-$$
  mkdir "$RT_CG" || { fail "cannot make $RT_CG"; return 1; }
  echo $$ >"$RT_CG/cgroup.procs"
  if [ -e "$RT_CG/cpu.rt_runtime_us" ]; then
    cat "$RT_CG/cpu.rt_runtime_us" >"$out/rt_runtime_us.before"
    rt_snapshot >"$out/rt_snapshot.before"
    note "rtzero: the shell is in $RT_CG, cpu.rt_runtime_us $(cat "$out/rt_runtime_us.before") (RT group scheduling)"
  else
    note "rtzero: $(uname -r) has no CONFIG_RT_GROUP_SCHED ($RT_CG has no cpu.rt_runtime_us): no cgroup refuses RT here;" \
      "the refusal is a container's instead: root without CAP_SYS_NICE, RLIMIT_RTPRIO 0"
    WRAP=(setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice --)
    ulimit -r 0
  fi
}

# container: Docker's limits for a root shell. The quota and the RT runtime are set on a new
# v1 cpu cgroup the shell moves into; the read-only /sys is made per command (WRAP), in a
# private mount namespace, so the machine's own /sys stays writable.
container() {
  local cpu=/sys/fs/cgroup/cpu
  [ -d "$cpu" ] || { fail "no v1 cpu hierarchy at $cpu"; return 1; }
  FROM_CG=$cpu$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' /proc/self/cgroup)
  RT_CG=$cpu/schedlab-container-$$
  mkdir "$RT_CG" || { fail "cannot make $RT_CG"; return 1; }
  { echo 100000 >"$RT_CG/cpu.cfs_period_us" && echo 50000 >"$RT_CG/cpu.cfs_quota_us"; } ||
    { fail "cannot set a quota on $RT_CG"; return 1; }
  if [ -e "$RT_CG/cpu.rt_runtime_us" ]; then
    echo 300000 >"$RT_CG/cpu.rt_runtime_us" || { fail "cannot give $RT_CG 300 ms of RT runtime"; return 1; }
    cat "$RT_CG/cpu.rt_runtime_us" >"$out/rt_runtime_us.before"
    rt_snapshot >"$out/rt_snapshot.before"
  fi
  echo $$ >"$RT_CG/cgroup.procs"
  note "container: the shell is in $RT_CG: cpu.cfs_quota_us 50000 of 100000, cpu.rt_runtime_us $(cat "$RT_CG/cpu.rt_runtime_us" 2>/dev/null || echo 'absent (no RT group scheduling)'); /sys read-only per command"
  # shellcheck disable=SC2016
  WRAP=(unshare -m -- sh -c 'mount --make-rprivate / && mount --rbind /sys /sys &&
    for m in $(awk '\''$2 == "/sys" || $2 ~ "^/sys/" {print $2}'\'' /proc/self/mounts | sort -u); do
      mount -o remount,bind,ro "$m" || exit 125; done && exec "$@"' read-only-sys)
}

# What a container run must say: the limits named in env, check and show, and the I/O study
# refused before anything changes (exit 2), naming the read-only path; no loop device left.
container_checks() {
  grep -qi 'quota' "$out/env.log" || fail "env: names no CPU quota: $(grep -i cgroup "$out/env.log" | head -2 | tr '\n' ' ')"
  grep -qi 'quota' "$out/quick-show.log" || fail "quick-show: the run's header names no CPU quota"
  local loops_before
  loops_before=$(losetup -a 2>/dev/null | wc -l)
  step iosched-ro 2 "${WRAP[@]}" "$bin" run "$repo/experiments/iosched.toml" --scale 0.002 --repetitions 1
  grep -q 'read-only' "$out/iosched-ro.log" || fail "iosched-ro: the refusal does not say read-only: $(head -3 "$out/iosched-ro.log" | tr '\n' ' ')"
  grep -q '/sys/' "$out/iosched-ro.log" || fail "iosched-ro: the refusal names no path under /sys"
  [ "$(losetup -a 2>/dev/null | wc -l)" = "$loops_before" ] || fail "iosched-ro: a loop device was left: $(losetup -a | tail -1)"
}

# Every cgroup of the v1 cpu hierarchy with its RT runtime, to compare after the runs: a run
# may lend RT runtime while it runs, and must give every cgroup its own back.
rt_snapshot() {
  find /sys/fs/cgroup/cpu -name cpu.rt_runtime_us -exec grep -H . {} + | sort
}

# Every cell of the experiment's plan (the keys `check` printed on the host) was measured with
# the policies its stored plan names and none failed, or (where skipping is allowed) it was
# left out by a warning of the run that names it and says why.
check_cells() {
  local name=$1 may_skip=$2
  "$PY" - "$SCHEDLAB_DB" "$may_skip" "$plans/$name.keys" >"$out/$name.cells" 2>&1 <<'PY'
import json, sqlite3, sys
db, may_skip, keys = sys.argv[1], sys.argv[2] == "1", open(sys.argv[3]).read().split()
c = sqlite3.connect(db)
run, plan, warnings = c.execute("SELECT id, plan_json, warnings_json FROM runs ORDER BY id DESC LIMIT 1").fetchone()
plan, warnings = json.loads(plan), json.loads(warnings)
planned = {cell["key"]: sorted({g["policy"]["class"] for g in cell["groups"]}) for cell in plan["cells"]}
stored = {}
for key, cls, status, msg in c.execute("SELECT key, class, status, message FROM cells WHERE run_id = ? AND warmup = 0", (run,)):
    stored.setdefault(key, []).append((cls, status, msg))
bad = [f"{k}: stored, but not in the plan `check` printed" for k in stored if k not in keys]
for key in keys:
    classes = planned.get(key, [])
    rows = stored.get(key, [])
    # "skipped N cells (not run, not failed), WHY: KEY, KEY"
    skipped = [w for w in warnings if w.startswith("skipped ") and key in w.rsplit(": ", 1)[-1].split(", ")]
    failed = [r for r in rows if r[1] != "ok"]
    if failed:
        bad.append(f"{key}: {len(failed)} FAILED: {failed[0][2]}")
    elif rows:
        wrong = [r[0] for r in rows if r[0] not in classes]
        if wrong:
            bad.append(f"{key}: stored as {wrong[0]}, planned {classes}")
        print(f"{key}: measured {len(rows)}x as {'+'.join(classes)}")
    elif skipped and may_skip:
        print(f"{key}: skipped: {skipped[0]}")
    elif skipped:
        bad.append(f"{key}: skipped: {skipped[0]}")
    else:
        bad.append(f"{key}: neither measured nor skipped with a reason")
for b in bad:
    print("BAD " + b)
sys.exit(1 if bad else 0)
PY
  local rc=$?
  [ $rc = 0 ] || fail "$name: $(grep -c '^BAD' "$out/$name.cells") cells not as they must be: $(grep -m3 '^BAD' "$out/$name.cells" | tr '\n' ' ')"
  if grep -q 'FAILED' "$out/$name.log"; then fail "$name: its output says FAILED: $(grep -m2 FAILED "$out/$name.log" | tr '\n' ' ')"; fi
}

# `env --json` tells the policies this process may apply: the built-in experiment's fifo and
# rr cells were measured where it says they may be, and skipped where it says not.
policies_agree() {
  "$PY" - "$out/env-json.log" "$out/quick.cells" >"$out/policies" 2>&1 <<'PY' || fail "env --json and the built-in run disagree: $(head -2 "$out/policies" | tr '\n' ' ')"
import json, sys
# Entries such as "fifo, rr at priority 1-98", "deadline", "no fifo or rr (RLIMIT_RTPRIO is 0)".
policies = json.load(open(sys.argv[1]))["policies"]
allowed = {n.strip() for p in policies if not p.startswith("no ") for n in p.split(" at ")[0].split(",")}
bad = []
for line in open(sys.argv[2]):
    key, _, what = line.removeprefix("BAD ").partition(": ")
    policy = key.split("/")[1] if "/" in key else ""
    if policy in ("fifo", "rr") and (policy in allowed) != what.startswith("measured"):
        bad.append(f"{key}: {what.strip()}")
print(f"env --json: {policies}; the run's fifo and rr cells that disagree: {len(bad)}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}

# experiment NAME MAY_SKIP SCALE [FILE]: a run (the built-in experiment without FILE) exits 0
# with every cell as check_cells wants it, and `show` of it has no FAILED. Where MAY_SKIP
# (rtzero), an experiment file of the user's own may instead be refused before anything
# changes: exit 2, no run stored, the refusal naming a real-time cell.
experiment() {
  local name=$1 may_skip=$2 scale=$3 file=${4:-} runs_before rc
  runs_before=$(runs)
  step "$name" "0 1 2" "${WRAP[@]}" "$bin" run ${file:+"$file"} --scale "$scale" --repetitions 1
  rc=$?
  if [ $rc = 2 ] && [ "$may_skip" = 1 ] && [ -n "$file" ]; then
    [ "$(runs)" = "$runs_before" ] || fail "$name: refused (exit 2) after storing a run"
    grep -Eq 'fifo|rr' "$out/$name.log" || fail "$name: refused (exit 2) without naming a real-time cell"
    note "$name: refused before anything changed: $(grep -m1 -E 'fifo|rr' "$out/$name.log")"
    return
  fi
  [ $rc = 0 ] || fail "$name: exit status $rc: $(grep -m3 -E 'FAILED|error|cannot' "$out/$name.log" | tr '\n' ' ')"
  [ "$(runs)" != "$runs_before" ] || { fail "$name: stored no run"; return; }
  check_cells "$name" "$may_skip"
  step "$name-show" 0 "$bin" show --wide
  ! grep -q FAILED "$out/$name-show.log" || fail "$name-show: lists FAILED cells"
}
runs() { "$PY" -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM runs").fetchone()[0])' "$SCHEDLAB_DB" 2>/dev/null || echo 0; }

{
  echo "config $config: $(nproc) CPUs, kernel $(uname -r), $(tr -d '\n' </proc/cmdline | grep -o 'cgroup_no_v1=[a-z]*' || echo 'v1 allowed')"
} >>"$out/notes"
setup=0
case "$config" in
  cpu1 | cpu4 | cpu16) hybrid || setup=1 ;;
  cgroup2) v2_session || setup=1 ;;
  rtzero) { hybrid && rtzero; } || setup=1 ;;
  rtzero-host) rtzero || setup=1 ;;
  container) { hybrid && container; } || setup=1 ;;
  container-host) container || setup=1 ;;
  *) fail "unknown configuration $config"; setup=1 ;;
esac
[ $setup = 0 ] || fail "$config: could not lay out its cgroups"
note "cgroups: $(grep cgroup /proc/mounts | awk '{print $2 " (" $3 ")"}' | tr '\n' ' ')"
note "this shell: $(tr '\n' ' ' </proc/self/cgroup)"
may_skip=0
case "$config" in rtzero* | container*) may_skip=1 ;; esac

if [ $setup = 0 ]; then
  step env 0 "${WRAP[@]}" "$bin" env
  step env-json 0 "${WRAP[@]}" "$bin" env --json &&
    { "$PY" -m json.tool "$out/env-json.log" >/dev/null || fail "env --json: not JSON"; }
  for e in "${EXPERIMENTS[@]}"; do
    read -r name scale file _ <<<"$e"
    experiment "$name" "$may_skip" "$scale" "$([ "$file" = - ] || echo "$repo/$file")"
  done
  policies_agree
  case "$config" in container*) container_checks ;; esac
fi

if [ -n "$RT_CG" ]; then
  if [ -e "$out/rt_runtime_us.before" ]; then
    after=$(cat "$RT_CG/cpu.rt_runtime_us")
    [ "$after" = "$(cat "$out/rt_runtime_us.before")" ] || fail "$config: cpu.rt_runtime_us was $(cat "$out/rt_runtime_us.before"), is $after after the runs"
    rt_snapshot >"$out/rt_snapshot.after"
    diff "$out/rt_snapshot.before" "$out/rt_snapshot.after" >"$out/rt_snapshot.diff" ||
      fail "rtzero: the cpu hierarchy's cgroups or RT runtimes differ after the runs: $(head -4 "$out/rt_snapshot.diff" | tr '\n' ' ')"
  fi
  # Back where the shell came from, and the cgroup gone (schedlab's own children of it too).
  echo $$ >"$FROM_CG/cgroup.procs" && rmdir "$RT_CG" 2>/dev/null || note "rtzero: could not remove $RT_CG: $(ls "$RT_CG" | grep -v '\.' | head -3)"
fi
cp "$SCHEDLAB_DB" "$out/schedlab.db" 2>/dev/null || true
rm -rf "$work"
dmesg >"$out/dmesg" 2>&1 || true
if [ -s "$out/failures" ]; then echo 1 >"$out/status"; else echo 0 >"$out/status"; fi
exit
}
