"""SimSo (pip install simso) on the simulator benchmark's task set: 10 periodic tasks,
C/T = 1/5 ... 6/50 ms (U = 1.6), 2 CPUs, SimSo's global EDF, 100,000 ms. Prints the jobs
completed, the deadlines missed and jobs/s over model.run_model() alone (configuration and
start-up not counted). Used by benches/simso_compare.sh."""
import sys
import time

from simso.configuration import Configuration
from simso.core import Model

SET = [(1, 5), (1, 7), (2, 10), (2, 12), (3, 15), (3, 20), (4, 25), (4, 30), (5, 40), (6, 50)]
MS = float(sys.argv[1]) if len(sys.argv) > 1 else 100000

cfg = Configuration()
cfg.duration = int(MS * cfg.cycles_per_ms)
for i, (c, t) in enumerate(SET):
    cfg.add_task(name="t%d" % i, identifier=i + 1, period=t, activation_date=0, wcet=c, deadline=t)
for p in range(2):
    cfg.add_processor(name="CPU %d" % p, identifier=p + 1)
cfg.scheduler_info.clas = "simso.schedulers.EDF"
cfg.check_all()
model = Model(cfg)
# SimSo's EDF prints a line per preemption; keep it out of the report, not out of the work.
out, sys.stdout = sys.stdout, open("/dev/null", "w")
t0 = time.perf_counter()
model.run_model()
dt = time.perf_counter() - t0
sys.stdout = out
done = [j for t in model.task_list for j in t.jobs if j.end_date is not None]
missed = sum(1 for j in done if j.exceeded_deadline)
print("simso jobs %d missed %d seconds %.3f jobs/s %.0f" % (len(done), missed, dt, len(done) / dt))
