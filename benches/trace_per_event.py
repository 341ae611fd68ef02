#!/usr/bin/env python3
# usage: python3 benches/trace_per_event.py DB   (DB from `DB=DB benches/trace_cost.sh 9 0.25`)
# The BPF observer's cost per program run and per event the timeline recorded of the same
# cell: the `_timeline` twin runs both, so its BPF cost over its own tracefs events is one
# execution; the `_bpf` twin's cost per second over the timeline twins' events per second
# is the other estimate. Medians over the repetitions.
import sqlite3, json, collections, statistics, sys
c = sqlite3.connect(sys.argv[1])
d = collections.defaultdict(lambda: collections.defaultdict(list))
for key, t in c.execute("select key, trace_json from cells where warmup = 0 and status = 'ok' and trace_json is not null"):
    w, rest = key.split("/", 1)
    t = json.loads(t)
    if w.endswith("_timeline"):
        o = t["bpf"]["observer"]; ns = sum(p["run_time_ns"] for p in o["programs"]); calls = o["events"]
        d[w[:-9] + "/" + rest]["tl"].append((t["events"], t["span_s"], ns, calls))
    elif w.endswith("_bpf"):
        o = t["observer"]; ns = sum(p["run_time_ns"] for p in o["programs"]); calls = o["events"]
        d[w[:-4] + "/" + rest]["bpf"].append((ns, calls, t["span_s"]))
order = [f"{w}/{p}/n{n}" for w in ("cpu", "io", "mixed") for p in ("other", "fifo:98", "rr:98") for n in (10, 50, 500)]
print("| cell | program runs/s | scheduler events/s (timeline) | ns per program run | ns per scheduler event (same run, beside tracefs) | ns per scheduler event (BPF twin) |")
print("|---|---|---|---|---|---|")
for k in order:
    v = d.get(k)
    if not v: continue
    tl, b = v["tl"], v["bpf"]
    ev_rate = statistics.median(e / s for e, s, _, _ in tl)
    same = statistics.median(ns / e for e, _, ns, _ in tl)
    per_run = statistics.median(ns / max(calls, 1) for ns, calls, _ in b)
    runs_s = statistics.median(calls / s for _, calls, s in b)
    twin = statistics.median(ns / s for ns, _, s in b) / ev_rate
    print(f"| {k} | {runs_s:,.0f} | {ev_rate:,.0f} | {per_run:.0f} | {same:.0f} | {twin:.0f} |")
