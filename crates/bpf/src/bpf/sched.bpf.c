// SPDX-License-Identifier: GPL-2.0
// schedlab's scheduler observer: per worker and per CPU aggregates of a cell, kept in the
// kernel. The tasks followed are the engine's descendants (its children and all they
// create): each child of the engine roots a tree of tasks (a worker, its threads and
// children) whose figures are added up in one slot of `aggs`. Every other task costs one
// task-storage lookup and the per-CPU busy/idle sums. User space (crates/bpf/src/lib.rs)
// reads the maps after the cell; nothing is streamed.
//
// Build: crates/bpf/build-bpf.sh (the object is committed; check-bpf.sh says when stale).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

typedef __u8 u8;
typedef __u32 u32;
typedef __s32 s32;
typedef __u64 u64;
typedef __s64 s64;

// The kernel's types, only the fields read: CO-RE relocates them against the running
// kernel's BTF when the object is loaded.
struct sched_entity {
	u64 sum_exec_runtime;
} __attribute__((preserve_access_index));

struct sched_info {
	unsigned long long run_delay;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	int pid;
	int tgid;
	struct sched_entity se;
	struct sched_info sched_info;
	unsigned long nvcsw;
	unsigned long nivcsw;
} __attribute__((preserve_access_index));

#define PF_KTHREAD 0x00200000
#define TASK_DEAD 0x00000080

// Log-linear wake-up latency buckets: values below 2^7 ns exactly, then 64 per power of two
// (a bucket is at most 1/64 of its value wide) up to 2^36 ns; longer ones in the last.
#define HIST_EXACT 128
#define HIST_SUB 64
#define HIST_BUCKETS 1984

enum { STATE_RUNNING = 0, STATE_RUNNABLE = 1, STATE_BLOCKED = 2 };
enum { ROLE_UNKNOWN = 0, ROLE_WORKER = 1, ROLE_ENGINE = 2 };

// Set by user space before the programs are attached; next_slot counted up by them.
struct config {
	u32 engine_tgid;
	u32 max_slots;
	u64 window_start;
	u32 next_slot;
	u32 pad;
};

// One followed task.
struct task_st {
	u32 slot;
	u32 root;
	u32 role;
	u32 state;
	u64 waking;     // its pending sched_waking, until sched_wakeup
	u64 wake_start; // when it became runnable by a wake-up, until it runs
	u64 start;      // when it was created
	u64 exec_seen;  // se.sum_exec_runtime, sched_info.run_delay, nvcsw, nivcsw
	u64 delay_seen; //   as last added to its slot
	u64 nvcsw_seen;
	u64 nivcsw_seen;
};

// One tree's figures (the layout user space reads: `Agg` in lib.rs).
struct agg {
	u32 root;
	u32 tasks;
	u64 run_ns;
	u64 runnable_ns;
	u64 life_ns;        // lifetimes of its ended tasks
	u64 open_start_sum; // creation times of its live tasks
	s64 alive;
	u64 involuntary;
	u64 voluntary;
	u64 by_worker;
	u64 by_engine;
	u64 by_kernel;
	u64 by_other;
	u64 wakeups;
	u64 wake_max;
	u64 migrations;
	u64 cpus[4];
};

// One CPU's time since the window began.
struct cpu_acc {
	u64 last;
	u64 busy;
	u64 idle;
	u32 cur_idle;
	u32 seen;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_st);
} tasks SEC(".maps");

// Sized by the loader: one entry per slot.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct agg);
} aggs SEC(".maps");

struct hist_row {
	u32 n[HIST_BUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct hist_row);
} hist SEC(".maps");

// Roles user space gives the trees' roots (workers, dispatchers): pid -> ROLE_*.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} roles SEC(".maps");

// Involuntary switch-outs to a followed task whose role was not known yet:
// (slot << 32 | preemptor's root) -> count, sorted out by user space.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, u64);
	__type(value, u64);
} unresolved SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct cpu_acc);
} cpus SEC(".maps");

static __always_inline u32 msb(u64 v)
{
	u32 m = 0;
	if (v >> 32) { v >>= 32; m += 32; }
	if (v >> 16) { v >>= 16; m += 16; }
	if (v >> 8) { v >>= 8; m += 8; }
	if (v >> 4) { v >>= 4; m += 4; }
	if (v >> 2) { v >>= 2; m += 2; }
	if (v >> 1) { m += 1; }
	return m;
}

static __always_inline u32 bucket(u64 v)
{
	if (v < HIST_EXACT)
		return v;
	u32 m = msb(v);
	if (m > 35)
		return HIST_BUCKETS - 1;
	return HIST_EXACT + (m - 7) * HIST_SUB + ((v >> (m - 6)) - HIST_SUB);
}

// A followed task is never a kernel thread (nor the idle task, which counts as one): its
// flags, which the scheduler has just read, spare a task-storage lookup for those.
static __always_inline struct task_st *followed(struct task_struct *t)
{
	if (t->flags & PF_KTHREAD)
		return 0;
	return bpf_task_storage_get(&tasks, t, 0, 0);
}

static __always_inline struct config *cfg(void)
{
	u32 zero = 0;
	return bpf_map_lookup_elem(&config, &zero);
}

static __always_inline void cpu_account(struct task_struct *prev, struct task_struct *next,
					u64 now)
{
	u32 zero = 0;
	struct cpu_acc *c = bpf_map_lookup_elem(&cpus, &zero);
	if (!c)
		return;
	if (!c->seen) {
		struct config *g = cfg();
		c->seen = 1;
		c->last = g ? g->window_start : now;
	}
	u64 d = now > c->last ? now - c->last : 0;
	if (prev->pid == 0)
		c->idle += d;
	else
		c->busy += d;
	c->last = now;
	c->cur_idle = next->pid == 0;
}

// The kind of task `next` is, for the slot it took the CPU from.
static __always_inline void preempted_by(struct agg *a, u32 slot, struct task_struct *next,
					 struct task_st *n)
{
	if (next->pid == 0 || (next->flags & PF_KTHREAD)) {
		__sync_fetch_and_add(&a->by_kernel, 1);
		return;
	}
	if (n) {
		if (n->role == ROLE_UNKNOWN) {
			u32 *r = bpf_map_lookup_elem(&roles, &n->root);
			if (r)
				n->role = *r;
		}
		if (n->role == ROLE_WORKER) {
			__sync_fetch_and_add(&a->by_worker, 1);
		} else if (n->role == ROLE_ENGINE) {
			__sync_fetch_and_add(&a->by_engine, 1);
		} else {
			u64 key = ((u64)slot << 32) | n->root;
			u64 one = 1;
			u64 *v = bpf_map_lookup_elem(&unresolved, &key);
			if (v)
				__sync_fetch_and_add(v, 1);
			else
				bpf_map_update_elem(&unresolved, &key, &one, BPF_NOEXIST);
		}
		return;
	}
	struct config *g = cfg();
	if (g && next->tgid == g->engine_tgid)
		__sync_fetch_and_add(&a->by_engine, 1);
	else
		__sync_fetch_and_add(&a->by_other, 1);
}

static __always_inline void switch_out(struct task_st *p, struct task_struct *prev,
				       struct task_struct *next, struct task_st *n, bool preempt,
				       unsigned int prev_state, u64 now)
{
	u32 slot = p->slot;
	struct agg *a = bpf_map_lookup_elem(&aggs, &slot);
	if (!a)
		return;
	u64 exec = prev->se.sum_exec_runtime;
	u64 delay = prev->sched_info.run_delay;
	u64 nv = prev->nvcsw;
	u64 niv = prev->nivcsw;
	__sync_fetch_and_add(&a->run_ns, exec - p->exec_seen);
	__sync_fetch_and_add(&a->runnable_ns, delay - p->delay_seen);
	p->exec_seen = exec;
	p->delay_seen = delay;
	bool dead = prev_state == TASK_DEAD;
	// The kernel's own counts: nivcsw is wait4's ru_nivcsw; the last switch of a dying
	// task is not a sleep.
	if (niv != p->nivcsw_seen) {
		__sync_fetch_and_add(&a->involuntary, niv - p->nivcsw_seen);
		p->nivcsw_seen = niv;
		preempted_by(a, slot, next, n);
	}
	if (nv != p->nvcsw_seen) {
		u64 d = nv - p->nvcsw_seen;
		p->nvcsw_seen = nv;
		if (dead)
			d -= 1;
		if (d)
			__sync_fetch_and_add(&a->voluntary, d);
	}
	if (dead) {
		__sync_fetch_and_add(&a->alive, -1);
		__sync_fetch_and_add(&a->life_ns, now - p->start);
		__sync_fetch_and_add(&a->open_start_sum, -p->start);
		return;
	}
	p->state = (preempt || prev_state == 0) ? STATE_RUNNABLE : STATE_BLOCKED;
}

static __always_inline void switch_in(struct task_st *n, u64 now)
{
	u32 slot = n->slot;
	struct agg *a = bpf_map_lookup_elem(&aggs, &slot);
	if (!a)
		return;
	u32 cpu = bpf_get_smp_processor_id();
	if (cpu < 256) {
		u64 bit = 1ULL << (cpu & 63);
		u64 *word = &a->cpus[(cpu >> 6) & 3];
		if (!(*word & bit))
			__sync_fetch_and_or(word, bit);
	}
	n->state = STATE_RUNNING;
	u64 start = n->wake_start;
	if (!start)
		return;
	n->wake_start = 0;
	u64 lat = now > start ? now - start : 0;
	struct hist_row *h = bpf_map_lookup_elem(&hist, &slot);
	u32 b = bucket(lat);
	if (h && b < HIST_BUCKETS)
		__sync_fetch_and_add(&h->n[b], 1);
	__sync_fetch_and_add(&a->wakeups, 1);
	for (int i = 0; i < 4; i++) {
		u64 old = a->wake_max;
		if (lat <= old || __sync_val_compare_and_swap(&a->wake_max, old, lat) == old)
			break;
	}
}

SEC("tp_btf/sched_switch")
int schedlab_switch(u64 *ctx)
{
	bool preempt = ctx[0];
	struct task_struct *prev = (void *)ctx[1];
	struct task_struct *next = (void *)ctx[2];
	unsigned int prev_state = ctx[3];
	u64 now = bpf_ktime_get_ns();

	cpu_account(prev, next, now);
	struct task_st *p = followed(prev);
	struct task_st *n = followed(next);
	if (p)
		switch_out(p, prev, next, n, preempt, prev_state, now);
	if (n)
		switch_in(n, now);
	return 0;
}

// The start of a wake-up: kept until its sched_wakeup, which always follows.
SEC("tp_btf/sched_waking")
int schedlab_waking(u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	struct task_st *t = followed(p);
	if (t && !t->waking)
		t->waking = bpf_ktime_get_ns();
	return 0;
}

// The end of a wake-up. A task that had switched out asleep is runnable from its waking,
// even when the waking came while it was still on its CPU (before the switch-out); one
// running or runnable all along was not asleep.
SEC("tp_btf/sched_wakeup")
int schedlab_wakeup(u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	struct task_st *t = followed(p);
	if (!t)
		return 0;
	if (t->state == STATE_BLOCKED) {
		t->state = STATE_RUNNABLE;
		t->wake_start = t->waking ? t->waking : bpf_ktime_get_ns();
	}
	t->waking = 0;
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int schedlab_wk_new(u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	struct task_st *t = followed(p);
	if (t) {
		t->state = STATE_RUNNABLE;
		t->wake_start = bpf_ktime_get_ns();
	}
	return 0;
}

SEC("tp_btf/sched_migrate_task")
int schedlab_migr(u64 *ctx)
{
	struct task_struct *p = (void *)ctx[0];
	struct task_st *t = followed(p);
	if (!t)
		return 0;
	u32 slot = t->slot;
	struct agg *a = bpf_map_lookup_elem(&aggs, &slot);
	if (a)
		__sync_fetch_and_add(&a->migrations, 1);
	return 0;
}

// A new task of a followed tree joins it; a child of the engine roots a new tree.
SEC("tp_btf/sched_process_fork")
int schedlab_fork(u64 *ctx)
{
	struct task_struct *parent = (void *)ctx[0];
	struct task_struct *child = (void *)ctx[1];
	u32 child_pid = child->pid;
	u32 child_tgid = child->tgid;
	struct task_st *pt = followed(parent);
	u32 slot, root, role = ROLE_UNKNOWN;
	if (pt) {
		slot = pt->slot;
		root = pt->root;
		role = pt->role;
	} else {
		struct config *g = cfg();
		if (!g || parent->tgid != g->engine_tgid || child_tgid == g->engine_tgid)
			return 0;
		slot = __sync_fetch_and_add(&g->next_slot, 1);
		if (slot >= g->max_slots)
			return 0;
		root = child_pid;
	}
	struct agg *a = bpf_map_lookup_elem(&aggs, &slot);
	if (!a)
		return 0;
	struct task_st *ct = bpf_task_storage_get(&tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ct)
		return 0;
	u64 now = bpf_ktime_get_ns();
	ct->slot = slot;
	ct->root = root;
	ct->role = role;
	ct->state = STATE_RUNNABLE;
	ct->start = now;
	if (!pt)
		a->root = root;
	__sync_fetch_and_add(&a->tasks, 1);
	__sync_fetch_and_add(&a->alive, 1);
	__sync_fetch_and_add(&a->open_start_sum, now);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
