/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Native XDP through libxdp's multi-program dispatcher, so that sluice
 * shares its interface with other libxdp programs (xdp-filter, ...). libxdp
 * attaches and pins the dispatcher (under /sys/fs/bpf/xdp), so enforcement
 * outlives the agent as the pinned link did. sluice's program in a
 * dispatcher is the one that uses the interface's pinned sluice_ctl. The
 * older single-program bpf_link and the TC filter stay in loader.c.
 */
#ifndef SLUICE_DISPATCH_H
#define SLUICE_DISPATCH_H

struct bpf_object;

/*
 * The run priority in the dispatcher, lower first: before xdp-filter (10)
 * and libxdp's default (50), so that a flood is limited before any other
 * program spends time on it (docs/decisions.md).
 */
#define DISPATCH_PRIORITY_DEFAULT 5

#define DISPATCH_ALONE 1 /* dispatch_attach(): libxdp attached the program alone */

/*
 * Add the XDP program of @loaded (a loaded sluice skeleton object, whose
 * maps are shared) to the dispatcher of @ifindex at @priority, creating the
 * dispatcher if there is none; a sluice program of @ctl_fd's interface
 * already there is replaced after the new one runs, so there is no gap.
 * On a kernel that refuses the dispatcher, libxdp attaches the program
 * alone; a later start replaces it in place with @prog_fd, @loaded's XDP
 * program.
 * Refuses, naming it, an XDP program that is not libxdp's (-EEXIST).
 * 0 in the dispatcher, DISPATCH_ALONE when attached alone, or -errno;
 * failures other than the refusal are left to the caller.
 */
int dispatch_attach(struct bpf_object *loaded, int prog_fd, const char *iface, int ifindex,
		    unsigned int priority, int ctl_fd);

/* Remove sluice's program (the one using @ctl_fd) from @ifindex's dispatcher. 0, -ENOENT or -errno.
 */
int dispatch_detach(int ifindex, int ctl_fd);

/* The run priority of sluice's program in @ifindex's dispatcher; -ENOENT if not there (or alone).
 */
int dispatch_priority(int ifindex, int ctl_fd);

#endif /* SLUICE_DISPATCH_H */
