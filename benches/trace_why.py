#!/usr/bin/env python3
# usage: python3 benches/trace_why.py DB   (DB from `DB=DB benches/trace_cost.sh 9 0.25`)
# The "Why" tables of docs/FINDINGS.md from the trace_cost.sh database: per pa3 cell, the
# free figures of the plain twin and the BPF figures of the `_bpf` twin, 9 repetitions each.
import collections, json, sqlite3, statistics, sys
c = sqlite3.connect(sys.argv[1])
cells = collections.defaultdict(lambda: collections.defaultdict(list))
for cid, key, m, tj in c.execute(
        "select id, key, makespan_s, trace_json from cells where warmup = 0 and status = 'ok'"):
    w, rest = key.split("/", 1)
    side = "plain"
    for s in ("_bpf", "_timeline"):
        if w.endswith(s):
            side, w = s[1:], w.removesuffix(s)
    rows = c.execute("select run_delay_s, oncpu_s, user_s + sys_s, involuntary_csw, migrations "
                     "from samples where cell_row = ? and background = 0", (cid,)).fetchall()
    cells[w + "/" + rest][side].append((m, json.loads(tj) if tj else None, rows))
order = [f"{w}/{p}/n{n}" for w in ("cpu", "io", "mixed") for p in ("other", "fifo:98", "rr:98") for n in (10, 50, 500)]
mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
print("| cell | runnable / process, free [s] | runnable / process, BPF [s] | involuntary / process | preempted by: worker / engine / kernel / other | wake-up p50 / p99 [us] | migrations / process | BPF ns/event | events/s |")
print("|---|---|---|---|---|---|---|---|---|")
agree = {"runnable": [0, 0], "run": [0, 0], "invol": [0, 0]}
for key in order:
    v = cells.get(key)
    if not v:
        continue
    free = mean([r[0] for _, _, rows in v["plain"] for r in rows if r[0] is not None])
    ws, by, p50, p99, nsev, evs = [], collections.Counter(), [], [], [], []
    for m, t, rows in v["bpf"]:
        if not t:
            continue
        o = t["observer"]
        nsev.append(o["ns_per_event"]); evs.append(o["events_per_s"])
        for w, r in zip(t["workers"], rows):
            ws.append(w)
            for k, n in w["preempted_by"].items():
                by[k] += n
            if w.get("wakeup_p50_us") is not None:
                p50.append(w["wakeup_p50_us"]); p99.append(w["wakeup_p99_us"])
            # BPF against the kernel's accounting of the same worker (free figures, wait4).
            rd, oncpu, cpu, invol, _ = r
            if rd is not None:
                agree["runnable"][1] += 1
                agree["runnable"][0] += abs(w["runnable_s"] - rd) <= max(0.02 * rd, 0.002)
            agree["run"][1] += 1
            agree["run"][0] += abs(w["run_s"] - cpu) <= max(0.01 * cpu, 0.002)
            agree["invol"][1] += 1
            agree["invol"][0] += w["involuntary"] == invol
    n = len(ws)
    if not n:
        continue
    print(f"| {key} | {free:.3f} | {mean([w['runnable_s'] for w in ws]):.3f} | "
          f"{mean([w['involuntary'] for w in ws]):.2f} | "
          f"{by['worker']} / {by['engine']} / {by['kernel']} / {by['other']} | "
          f"{statistics.median(p50) if p50 else float('nan'):.1f} / {statistics.median(p99) if p99 else float('nan'):.0f} | "
          f"{mean([w['migrations'] for w in ws]):.2f} | {statistics.median(nsev):.0f} | {statistics.median(evs):,.0f} |")
print()
for k, (ok, n) in agree.items():
    print(f"{k}: {ok} of {n} workers agree")
