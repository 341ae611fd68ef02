/* SPDX-License-Identifier: GPL-2.0 */
/*
 * schedlab-scx: the actuator of schedlab's dispatcher as a sched_ext scheduler.
 *
 * The decisions are made in user space by the dispatcher (the schedlab-policy crate's DWCS
 * or EDF, one dispatcher thread per CPU at SCHED_FIFO 98). This side only enforces them:
 *
 *  - A controlled task (a worker of a dispatcher, in the `controlled` map: pid -> CPU) is
 *    never put on a CPU's local DSQ by enqueue: it always waits in its CPU's control DSQ.
 *  - chosen[cpu] (in .bss, which libbpf maps into user space: the dispatcher writes it with
 *    a plain store) is the pid the dispatcher of that CPU gave the CPU, 0 for none. The
 *    CPU's dispatch takes the chosen task from the control DSQ first (infinite slice: it runs
 *    until the dispatcher preempts it or it blocks), then a fair task, and only then a
 *    parked controlled task (it finds its run bit clear and goes back to sleep at once:
 *    the workers' run bit keeps the control strict, as under the priority actuator).
 *  - When the dispatcher wakes, the FIFO 98 thread takes the CPU from sched_ext, and
 *    cpu_release sends whatever sat on the local DSQ back through enqueue, so a task the
 *    dispatcher parks meanwhile cannot resume when the dispatcher sleeps. A chosen task
 *    that becomes runnable kicks its CPU.
 *  - Every other task is scheduled fair: weighted virtual time on one shared DSQ.
 *
 * Counted for the run's end: per controlled pid, its dispatches as the chosen task and as a
 * parked one (`dispatched`, zeroed by user space when it registers the pid); and
 * nr_unchosen_runs, controlled tasks that started with the chosen task's infinite slice while
 * their CPU's choice was another (0 when the dispatcher's choice is enforced).
 */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/* The pid each CPU's dispatcher chose, 0 for none (written by user space). */
u32 chosen[MAX_CPUS];

/* Counters, read by user space at the end. */
u64 nr_chosen_dispatches, nr_parked_dispatches, nr_fair_dispatches, nr_kicks, nr_wrong_runs;
u64 nr_unchosen_runs;

static u64 vtime_now;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, u32);
} controlled SEC(".maps");

struct dispatch_count {
	u64 chosen;
	u64 parked;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u32);
	__type(value, struct dispatch_count);
} dispatched SEC(".maps");

static __always_inline void count_dispatch(struct task_struct *p, bool chosen)
{
	u32 pid = p->pid;
	struct dispatch_count *c = bpf_map_lookup_elem(&dispatched, &pid);

	if (!c)
		return;
	if (chosen)
		__sync_fetch_and_add(&c->chosen, 1);
	else
		__sync_fetch_and_add(&c->parked, 1);
}

static __always_inline u64 ctl_dsq(s32 cpu)
{
	return CTL_DSQ_BASE + (u64)cpu;
}

static __always_inline u32 chosen_on(s32 cpu)
{
	u32 i = (u32)cpu;

	if (i >= MAX_CPUS)
		return 0;
	/* The mask keeps the bound where the verifier sees it (MAX_CPUS is a power of two). */
	return READ_ONCE(chosen[i & (MAX_CPUS - 1)]);
}

static __always_inline bool is_controlled(struct task_struct *p)
{
	u32 pid = p->pid;

	return bpf_map_lookup_elem(&controlled, &pid) != NULL;
}

s32 BPF_STRUCT_OPS(schedlab_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool is_idle = false;
	s32 cpu;

	/* A controlled task is pinned with its dispatcher; enqueue decides where it waits. */
	if (is_controlled(p))
		return prev_cpu;
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (is_idle)
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, SCX_SLICE_DFL, 0);
	return cpu;
}

void BPF_STRUCT_OPS(schedlab_enqueue, struct task_struct *p, u64 enq_flags)
{
	u64 vtime = p->scx.dsq_vtime;
	s32 cpu;

	if (is_controlled(p)) {
		cpu = scx_bpf_task_cpu(p);
		scx_bpf_dsq_insert(p, ctl_dsq(cpu), SCX_SLICE_INF, enq_flags);
		if (chosen_on(cpu) == p->pid) {
			__sync_fetch_and_add(&nr_kicks, 1);
			scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		}
		return;
	}
	/* A task that slept long gets at most one slice of credit. */
	if (time_before(vtime, vtime_now - SCX_SLICE_DFL))
		vtime = vtime_now - SCX_SLICE_DFL;
	scx_bpf_dsq_insert_vtime(p, FAIR_DSQ, SCX_SLICE_DFL, vtime, enq_flags);
}

void BPF_STRUCT_OPS(schedlab_dispatch, s32 cpu, struct task_struct *prev)
{
	struct task_struct *p;
	u32 want = chosen_on(cpu);
	u64 dsq = ctl_dsq(cpu);

	/* The chosen task, still running: it keeps the CPU. */
	if (want && prev && prev->pid == want && (prev->scx.flags & SCX_TASK_QUEUED)) {
		scx_bpf_task_set_slice(prev, SCX_SLICE_INF);
		return;
	}
	if (want && scx_bpf_dsq_nr_queued(dsq)) {
		bpf_for_each(scx_dsq, p, dsq, 0) {
			if (p->pid != want)
				continue;
			scx_bpf_dsq_move_set_slice(BPF_FOR_EACH_ITER, SCX_SLICE_INF);
			if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
				__sync_fetch_and_add(&nr_chosen_dispatches, 1);
				count_dispatch(p, true);
				return;
			}
			break;
		}
	}
	if (scx_bpf_dsq_move_to_local(FAIR_DSQ, 0)) {
		__sync_fetch_and_add(&nr_fair_dispatches, 1);
		return;
	}
	/* Nothing else wants the CPU: a parked worker may run to see its run bit is clear. */
	if (scx_bpf_dsq_nr_queued(dsq)) {
		bpf_for_each(scx_dsq, p, dsq, 0) {
			scx_bpf_dsq_move_set_slice(BPF_FOR_EACH_ITER, SCX_SLICE_DFL);
			if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
				__sync_fetch_and_add(&nr_parked_dispatches, 1);
				count_dispatch(p, false);
			}
			break;
		}
	}
}

void BPF_STRUCT_OPS(schedlab_cpu_release, s32 cpu, struct scx_cpu_release_args *args)
{
	/* The dispatcher (or another higher class) took the CPU: empty its local DSQ. */
	scx_bpf_reenqueue_local();
}

void BPF_STRUCT_OPS(schedlab_running, struct task_struct *p)
{
	s32 cpu;

	if (is_controlled(p)) {
		cpu = scx_bpf_task_cpu(p);
		if (p->scx.slice == SCX_SLICE_INF && chosen_on(cpu) != p->pid)
			__sync_fetch_and_add(&nr_unchosen_runs, 1);
		/* A parked task started while the chosen one is runnable: hand the CPU back. */
		if (chosen_on(cpu) != p->pid && chosen_on(cpu) && scx_bpf_dsq_nr_queued(ctl_dsq(cpu))) {
			__sync_fetch_and_add(&nr_wrong_runs, 1);
			scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		}
		return;
	}
	if (time_before(vtime_now, p->scx.dsq_vtime))
		vtime_now = p->scx.dsq_vtime;
}

void BPF_STRUCT_OPS(schedlab_stopping, struct task_struct *p, bool runnable)
{
	if (is_controlled(p) || p->scx.slice > SCX_SLICE_DFL)
		return;
	/* Charge the slice used, scaled by the inverse of the task's weight. */
	scx_bpf_task_set_dsq_vtime(p, p->scx.dsq_vtime +
				   (SCX_SLICE_DFL - p->scx.slice) * 100 / p->scx.weight);
}

void BPF_STRUCT_OPS(schedlab_enable, struct task_struct *p)
{
	scx_bpf_task_set_dsq_vtime(p, vtime_now);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(schedlab_init)
{
	s32 err, cpu, n = scx_bpf_nr_cpu_ids();

	err = scx_bpf_create_dsq(FAIR_DSQ, -1);
	if (err)
		return err;
	bpf_for(cpu, 0, n) {
		err = scx_bpf_create_dsq(ctl_dsq(cpu), -1);
		if (err)
			return err;
	}
	return 0;
}

void BPF_STRUCT_OPS(schedlab_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(schedlab_ops,
	       .select_cpu	= (void *)schedlab_select_cpu,
	       .enqueue		= (void *)schedlab_enqueue,
	       .dispatch	= (void *)schedlab_dispatch,
	       .cpu_release	= (void *)schedlab_cpu_release,
	       .running		= (void *)schedlab_running,
	       .stopping	= (void *)schedlab_stopping,
	       .enable		= (void *)schedlab_enable,
	       .init		= (void *)schedlab_init,
	       .exit		= (void *)schedlab_exit,
	       .flags		= SCX_OPS_ENQ_LAST,
	       .name		= "schedlab");
