// SPDX-License-Identifier: GPL-2.0
// schedlab's scheduler observer: per worker and per CPU aggregates of a cell, kept in the
// kernel. The tasks followed are the engine's descendants (its children and all they
// create): each child of the engine roots a tree of tasks (a worker, its threads and
// children) whose figures are added up in one slot of `aggs`. Four programs: the fork that
// makes a task followed, the switch, and the two wake-ups (sched_wakeup, sched_wakeup_new)
// that start a wake-up's latency, attached only when user space asks for wake-ups to be
// timed (`config.wakeups`). Each pid has an entry in `pids`: the row + 1 of the followed
// task that has it (its own row in `task_rows`), and its last wake-up's time. Timing
// wake-ups, the switch finds the entry and row of the task it switches to, once: the CPU
// keeps the row for that task's switch-out, and a wake-up latency runs from the entry's stamp
// to that switch-in. Otherwise it looks up only the task leaving. A wake-up writes its stamp
// without reading anything; only switches to or from the idle task read the clock, besides
// the switch-ins that end a wake-up. Array reads, dense for a cell's tasks,
// where task storage costs a chain of cache misses and a helper call per event. A task's
// figures stay in its row and join its slot once, at its last switch; everything the kernel
// counts itself (on-CPU time, runnable wait, switches, migrations) is read from the task
// then. User space (crates/bpf/src/lib.rs) reads the maps after the cell, and adds the rows
// of tasks still alive then; nothing is streamed.
//
// Build: crates/bpf/build-bpf.sh (the object is committed; check-bpf.sh says when stale).

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __s32 s32;
typedef __u64 u64;
typedef __s64 s64;

// The kernel's types, only the fields read: CO-RE relocates them against the running
// kernel's BTF when the object is loaded.
struct sched_entity {
	u64 sum_exec_runtime;
	u64 nr_migrations;
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

// A followed task's last switch-out: on a CPU or runnable (preempted), or asleep; a new
// task has not run yet. Only a task asleep or new can be woken: a sched_wakeup of a task
// that ran last is one of a task still on its run queue (woken before it slept, or
// preempted before it could).
enum { STATE_RAN = 0, STATE_ASLEEP = 1, STATE_NEW = 2 };
enum { ROLE_UNKNOWN = 0, ROLE_WORKER = 1, ROLE_ENGINE = 2 };

// Set by user space before the programs are attached; next_slot counted up by them.
struct config {
	u32 engine_tgid;
	u32 max_slots;
	u64 window_start;
	u32 next_slot;
	u32 max_rows;
	u32 next_row;
	u32 lost_tasks; // followed tasks given no row (rows or pids exhausted)
	u32 wakeups;    // 1: the wake-up programs are attached, and wake-ups are timed
	u32 pad;
};

// One followed task's row: what the kernel does not count for it, until its last switch
// (the layout user space reads for tasks alive at the end: `TaskRow` in convert.rs). The
// first 64 bytes are all a switch or a wake-up touches.
struct task_st {
	u32 slot;
	u32 root;
	u8 role;
	u8 state;
	u16 pad;
	u32 wakeups;
	u64 spare;
	u64 nivcsw_seen; // nivcsw at its last switch-out
	u64 wake_max;
	u64 cpus_lo;    // CPUs 0-63 it ran on
	u32 by_worker;
	u32 by_engine;
	u32 by_kernel;
	u32 by_other;
	u64 start;      // when it was created
	u32 pid;
	u32 live;       // 1 until its last switch
	u64 cpus_hi[3]; // CPUs 64-255
	u64 pad2[3];
};

// One tree's figures (the layout user space reads: `Agg` in convert.rs).
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

// Wake-up latencies wait per CPU, as (slot << 11 | bucket), until 64 have come: then they
// are counted into `hist` at once, where each on its own would be a cache miss in a switch
// (their misses overlap in a batch). User space counts those left at the end.
#define STAGE 64

// One CPU's state (the layout user space reads: `PerCpu` in lib.rs): its idle time since
// the window began (busy is the rest), the time of its last switch timed, and its staged
// wake-up latencies. One lookup per switch finds all of it.
struct cpu_st {
	u64 last;     // its last switch to or from the idle task (the window's start before one)
	u64 busy;
	u64 idle;
	u32 cur_idle;
	u32 seen;
	u32 n;        // latencies staged
	u32 pad;
	u32 e[STAGE];
	u32 cur_pid;  // the task it switched to last, and that task's row + 1 (0: not followed)
	u32 cur_row;
	u32 wakeups;  // the configuration's, read at its first switch
	u32 pad2;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct config);
} config SEC(".maps");

// A pid's entry: the row of the followed task that has it, and its last wake-up.
struct pid_st {
	u32 row;   // row + 1 of a followed task, else 0
	u32 pad;
	u64 woken; // its last sched_wakeup (ktime), 0 once a switch-in took it
};

// Sized by the loader: one entry per pid (pid_max).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct pid_st);
} pids SEC(".maps");

// Sized by the loader: one entry per task a cell may create.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct task_st);
} task_rows SEC(".maps");

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
	__type(value, struct cpu_st);
} cpus SEC(".maps");

// The count a staged latency (slot << 11 | bucket) goes to.
static __always_inline u32 *hist_at(u32 e)
{
	u32 s = e >> 11, b = e & 2047;
	struct hist_row *h = bpf_map_lookup_elem(&hist, &s);
	return h && b < HIST_BUCKETS ? &h->n[b] : 0;
}

// Counts the staged latencies into `hist`: a first pass reads each count it will add to,
// so that their cache misses overlap (an atomic add waits for its line, and the next one
// for it), the second adds.
static __always_inline void flush(struct cpu_st *c)
{
	u32 seen = 0;
	for (int i = 0; i < STAGE; i++) {
		u32 *n = hist_at(c->e[i]);
		if (n)
			seen += *(volatile u32 *)n;
	}
	c->pad = seen;
	for (int i = 0; i < STAGE; i++) {
		u32 *n = hist_at(c->e[i]);
		if (n)
			__sync_fetch_and_add(n, 1);
	}
}

static __always_inline void stage_put(struct cpu_st *c, u32 slot, u32 b)
{
	u32 n = c->n;
	if (n >= STAGE) {
		flush(c);
		n = 0;
	}
	c->e[n & (STAGE - 1)] = slot << 11 | b;
	c->n = n + 1;
}

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
// flags, which the scheduler has just read, spare the lookups for those.
static __always_inline struct task_st *followed(struct task_struct *t)
{
	if (t->flags & PF_KTHREAD)
		return 0;
	u32 pid = t->pid;
	struct pid_st *e = bpf_map_lookup_elem(&pids, &pid);
	if (!e || !e->row)
		return 0;
	u32 r = e->row - 1;
	return bpf_map_lookup_elem(&task_rows, &r);
}

static __always_inline struct config *cfg(void)
{
	u32 zero = 0;
	return bpf_map_lookup_elem(&config, &zero);
}

// The CPU's busy and idle time: only a switch to or from the idle task is timed (`last`
// is the latest), so a switch between two tasks costs no clock read. Returns the time read,
// 0 when none was.
static __always_inline u64 cpu_account(struct cpu_st *c, struct task_struct *prev,
				       struct task_struct *next)
{
	if (!c->seen) {
		struct config *g = cfg();
		c->seen = 1;
		c->last = g ? g->window_start : 0;
		c->wakeups = g ? g->wakeups : 0;
	}
	bool from_idle = prev->pid == 0, to_idle = next->pid == 0;
	if (!from_idle && !to_idle)
		return 0;
	u64 now = bpf_ktime_get_ns();
	u64 d = now > c->last ? now - c->last : 0;
	if (from_idle)
		c->idle += d;
	else
		c->busy += d;
	c->last = now;
	c->cur_idle = to_idle;
	return now;
}

// Who took the CPU from a followed task at an involuntary switch-out: `next`, whose row is
// `n` when it is followed (looked up here unless `looked`).
static __always_inline void preempted_by(struct task_st *p, struct task_struct *next,
					 struct task_st *n, bool looked)
{
	if (next->pid == 0 || (next->flags & PF_KTHREAD)) {
		p->by_kernel++;
		return;
	}
	if (!looked)
		n = followed(next);
	if (n) {
		if (n->role == ROLE_UNKNOWN) {
			u32 *r = bpf_map_lookup_elem(&roles, &n->root);
			if (r)
				n->role = *r;
		}
		if (n->role == ROLE_WORKER) {
			p->by_worker++;
		} else if (n->role == ROLE_ENGINE) {
			p->by_engine++;
		} else {
			u64 key = ((u64)p->slot << 32) | n->root;
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
		p->by_engine++;
	else
		p->by_other++;
}

// A followed task's last switch: its figures, the kernel's and its own, join its slot.
static __always_inline void fold(struct task_st *p, struct task_struct *prev)
{
	u32 slot = p->slot;
	struct agg *a = bpf_map_lookup_elem(&aggs, &slot);
	if (!a)
		return;
	u64 now = bpf_ktime_get_ns();
	__sync_fetch_and_add(&a->run_ns, prev->se.sum_exec_runtime);
	__sync_fetch_and_add(&a->runnable_ns, prev->sched_info.run_delay);
	__sync_fetch_and_add(&a->involuntary, prev->nivcsw);
	// Its last switch counted as a sleep (nvcsw): it is none.
	__sync_fetch_and_add(&a->voluntary, prev->nvcsw - 1);
	__sync_fetch_and_add(&a->migrations, prev->se.nr_migrations);
	__sync_fetch_and_add(&a->by_worker, p->by_worker);
	__sync_fetch_and_add(&a->by_engine, p->by_engine);
	__sync_fetch_and_add(&a->by_kernel, p->by_kernel);
	__sync_fetch_and_add(&a->by_other, p->by_other);
	__sync_fetch_and_add(&a->wakeups, p->wakeups);
	if (p->cpus_lo & ~a->cpus[0])
		__sync_fetch_and_or(&a->cpus[0], p->cpus_lo);
	for (int i = 0; i < 3; i++) {
		if (p->cpus_hi[i] & ~a->cpus[i + 1])
			__sync_fetch_and_or(&a->cpus[i + 1], p->cpus_hi[i]);
	}
	for (int i = 0; i < 4; i++) {
		u64 old = a->wake_max;
		if (p->wake_max <= old ||
		    __sync_val_compare_and_swap(&a->wake_max, old, p->wake_max) == old)
			break;
	}
	__sync_fetch_and_add(&a->alive, -1);
	__sync_fetch_and_add(&a->life_ns, now - p->start);
	__sync_fetch_and_add(&a->open_start_sum, -p->start);
	// Its pid may be reused: it no longer leads here.
	p->live = 0;
	u32 pid = prev->pid;
	struct pid_st *e = bpf_map_lookup_elem(&pids, &pid);
	if (e)
		e->row = 0;
}

static __always_inline void switch_out(struct task_st *p, struct task_struct *prev,
				       struct task_struct *next, struct task_st *n, bool looked,
				       bool preempt, unsigned int prev_state)
{
	u32 cpu = bpf_get_smp_processor_id();
	if (cpu < 64)
		p->cpus_lo |= 1ULL << cpu;
	else if (cpu < 256)
		p->cpus_hi[((cpu >> 6) - 1) % 3] |= 1ULL << (cpu & 63);
	// The kernel's own count: nivcsw is wait4's ru_nivcsw.
	u64 niv = prev->nivcsw;
	if (niv != p->nivcsw_seen) {
		p->nivcsw_seen = niv;
		preempted_by(p, next, n, looked);
	}
	if (prev_state == TASK_DEAD) {
		fold(p, prev);
		return;
	}
	p->state = (preempt || prev_state == 0) ? STATE_RAN : STATE_ASLEEP;
}

// A followed task gets the CPU at `now`: the wake-up `w` (its last sched_wakeup, 0 if none)
// ends here if it came while the task was asleep or new. A stamp left by a wake-up of a task
// that had not slept yet, or was preempted, is older than its sleep: a real wake-up, which
// always comes before the switch-in, overwrites it.
static __always_inline void switch_in(struct cpu_st *c, struct task_st *n, u64 w, u64 now)
{
	if (w > now)
		return;
	u64 lat = now - w;
	stage_put(c, n->slot, bucket(lat));
	n->wakeups++;
	if (lat > n->wake_max)
		n->wake_max = lat;
}

// `prev` leaves the CPU, `next` gets it. Each followed task's entry and row are found once,
// at its switch-in: the CPU keeps the row for its switch-out, and the wake-up that ends at the
// switch-in is in the entry.
SEC("tp_btf/sched_switch")
int schedlab_switch(u64 *ctx)
{
	bool preempt = ctx[0];
	struct task_struct *prev = (void *)ctx[1];
	struct task_struct *next = (void *)ctx[2];
	unsigned int prev_state = ctx[3];
	u32 zero = 0;
	struct cpu_st *c = bpf_map_lookup_elem(&cpus, &zero);
	if (!c)
		return 0;
	u64 now = cpu_account(c, prev, next);
	// Without the wake-up programs nothing happens at a switch-in: the task leaving is looked
	// up (and the one arriving only if it preempted a followed task).
	if (!c->wakeups) {
		struct task_st *p = followed(prev);
		if (p)
			switch_out(p, prev, next, 0, false, preempt, prev_state);
		return 0;
	}
	struct task_st *n = 0;
	u64 w = 0;
	u32 row = 0, next_pid = next->pid;
	if (!(next->flags & PF_KTHREAD)) {
		struct pid_st *e = bpf_map_lookup_elem(&pids, &next_pid);
		if (e && e->row) {
			row = e->row;
			w = e->woken;
			if (w)
				e->woken = 0;
			u32 r = row - 1;
			n = bpf_map_lookup_elem(&task_rows, &r);
		}
	}
	// `prev` got this CPU at the last switch here, unless that one was not seen (the first
	// after attaching): then it is looked up.
	struct task_st *p = 0;
	if (c->cur_pid == (u32)prev->pid) {
		if (c->cur_row) {
			u32 r = c->cur_row - 1;
			p = bpf_map_lookup_elem(&task_rows, &r);
		}
	} else {
		p = followed(prev);
	}
	if (p)
		switch_out(p, prev, next, n, true, preempt, prev_state);
	c->cur_pid = next_pid;
	c->cur_row = row;
	if (n && w && n->state != STATE_RAN)
		switch_in(c, n, w, now ? now : bpf_ktime_get_ns());
	return 0;
}

// A wake-up: its time, in the task's entry, for the switch-in that ends it. Kernel threads
// are never followed; any other task's entry is written without reading it.
static __always_inline void woken(struct task_struct *t)
{
	if (t->flags & PF_KTHREAD)
		return;
	u32 pid = t->pid;
	struct pid_st *e = bpf_map_lookup_elem(&pids, &pid);
	if (e)
		e->woken = bpf_ktime_get_ns();
}

SEC("tp_btf/sched_wakeup")
int schedlab_wakeup(u64 *ctx)
{
	woken((void *)ctx[0]);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int schedlab_wakeup_new(u64 *ctx)
{
	woken((void *)ctx[0]);
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
	struct config *g = cfg();
	if (!g)
		return 0;
	u32 r = __sync_fetch_and_add(&g->next_row, 1);
	u32 key = child_pid;
	struct pid_st *entry = bpf_map_lookup_elem(&pids, &key);
	struct task_st *ct = r < g->max_rows ? bpf_map_lookup_elem(&task_rows, &r) : 0;
	if (!entry || !ct) {
		__sync_fetch_and_add(&g->lost_tasks, 1);
		return 0;
	}
	u64 now = bpf_ktime_get_ns();
	ct->slot = slot;
	ct->root = root;
	ct->role = role;
	ct->state = STATE_NEW;
	ct->start = now;
	ct->pid = child_pid;
	ct->live = 1;
	entry->woken = 0;
	entry->row = r + 1;
	if (!pt)
		a->root = root;
	__sync_fetch_and_add(&a->tasks, 1);
	__sync_fetch_and_add(&a->alive, 1);
	__sync_fetch_and_add(&a->open_start_sum, now);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
