/* What the BPF side and the user side of schedlab-scx share. */
#ifndef __SCHEDLAB_SCX_INTF_H
#define __SCHEDLAB_SCX_INTF_H

enum consts {
	/* Most CPUs the chosen[] array covers. */
	MAX_CPUS = 1024,
	/* The shared DSQ every task not controlled by a dispatcher goes to (fair, by vtime). */
	FAIR_DSQ = 0,
	/* CPU c's controlled tasks wait in DSQ CTL_DSQ_BASE + c. */
	CTL_DSQ_BASE = 0x1000,
};

#endif /* __SCHEDLAB_SCX_INTF_H */
