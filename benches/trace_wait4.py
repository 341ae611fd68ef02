#!/usr/bin/env python3
"""Every traced worker of a run against wait4: trace CPU time (run_s, and run_s + untraced_s)
against user + sys, involuntary switch-outs against ru_nivcsw. Prints per cell and in total
how many workers agree within 2% or 10 ms and within 2 switches, and the worst cases.

    benches/trace_wait4.py DATABASE [RUN_ID]     # the newest run without RUN_ID
"""
import json
import sqlite3
import sys


def main():
    db = sqlite3.connect(sys.argv[1])
    run = int(sys.argv[2]) if len(sys.argv) > 2 else db.execute("select max(id) from runs").fetchone()[0]
    total = {"workers": 0, "run": 0, "bounds": 0, "invol": 0}
    worst = []
    print(f"| cell | workers | lost | untraced switches | run_s within 2%/10 ms | wait4 in [run_s, run_s + untraced_s] +-tol | involuntary within 2 | largest untraced_s [ms] |")
    print("|---|---|---|---|---|---|---|---|")
    rows = db.execute(
        "select id, key, trace_json from cells where run_id = ? and warmup = 0 and trace_json is not null order by id", (run,)
    ).fetchall()
    for cell, key, text in rows:
        t = json.loads(text)
        wait4 = {p: (cpu, niv) for p, cpu, niv in db.execute("select pid, user_s + sys_s, involuntary_csw from samples where cell_row = ?", (cell,))}
        n = run_ok = bounds_ok = invol_ok = 0
        most = 0.0
        for w in t["workers"]:
            cpu, niv = wait4[w["pid"]]
            run_s, untraced = w["run_s"], w.get("untraced_s", 0.0)
            tol = max(0.02 * cpu, 0.010)
            n += 1
            run_ok += abs(run_s - cpu) <= tol
            inside = run_s - tol <= cpu <= run_s + untraced + tol
            bounds_ok += inside
            invol_ok += abs(w["involuntary"] - niv) <= 2
            most = max(most, untraced)
            worst.append((abs(run_s - cpu), key, w["pid"], run_s, untraced, cpu, inside))
        for k, v in (("workers", n), ("run", run_ok), ("bounds", bounds_ok), ("invol", invol_ok)):
            total[k] += v
        print(f"| {key} | {n} | {t['lost_events']} | {t.get('untraced_switches', 0)} | {run_ok} | {bounds_ok} | {invol_ok} | {most * 1e3:.1f} |")
    print(
        f"\n{total['workers']} workers: run_s within 2%/10 ms {total['run']}; wait4 within [run_s, run_s + untraced_s] "
        f"{total['bounds']}; involuntary within 2 {total['invol']}"
    )
    print("largest |run_s - wait4|:")
    for d, key, pid, run_s, untraced, cpu, inside in sorted(worst, reverse=True)[:8]:
        print(f"  {key} pid {pid}: run_s {run_s:.4f} s + untraced {untraced:.4f} s, wait4 {cpu:.4f} s ({'inside' if inside else 'OUTSIDE'} the bounds)")


if __name__ == "__main__":
    main()
