/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Skeleton open/load/attach, pinning, and reuse of pinned maps. Maps are
 * pinned by name under <pin_root>/<iface>/. A native XDP attachment is one
 * program of the interface's libxdp dispatcher, which libxdp pins (or, when
 * an earlier sluice left one, a bpf_link pinned beside the maps); a TC
 * attachment is a filter on the interface's clsact ingress, which is no
 * link and stays until removed. Either way enforcement and key state
 * outlive the agent; only loader_detach() removes them.
 */
#ifndef SLUICE_LOADER_H
#define SLUICE_LOADER_H

#include <limits.h>

#include "kernel/maps.h"

struct sluice_bpf;

struct attachment {
	char iface[POLICY_IFNAME_LEN];
	int ifindex;
	char pin_dir[PATH_MAX];
	struct sluice_bpf *skel;
	struct sluice_maps maps; /* borrowed from skel: do not close */
	int prog_fd;		 /* the XDP program, borrowed from skel */
	int tc_prog_fd;		 /* the TC program, borrowed from skel */
	int link_fd;		 /* an earlier sluice's pinned link; else -1 */
	__u32 xdp_priority;	 /* dispatcher priority: asked (0: default), then as attached */
	int mode;		 /* enum sluice_attach: as attached */
	int reused;		 /* maps came from pins: key state was kept */
	int lock_fd;		 /* the pin directory, flock()ed: one agent per interface */
};

/* <pin_root>/<iface>, or -ENAMETOOLONG. */
int loader_pin_dir(char *buf, size_t len, const char *pin_root, const char *iface);

/* What a load may set; a zero field keeps the default. */
struct load_opts {
	__u32 max_keys;	     /* sluice_state's size: the default, or the pinned size */
	__u64 deny_ttl_ns;   /* the longest a cached drop stands: SLUICE_DENY_TTL_NS */
	__u32 max_datagrams; /* sluice_frags' size: SLUICE_FRAG_ENTRIES_DEFAULT (not pinned) */
};

/*
 * Open and load the XDP object for @iface (its index may be 0 when the
 * object will only be test-run), pinning its maps in <pin_root>/<iface>/ or
 * reusing the ones already there; refuses pins of another ABI version.
 * @o->max_keys must equal the pinned size when reusing. 0 or -errno, with
 * the cause already reported.
 */
int attachment__load(struct attachment *a, const char *pin_root, const char *iface,
		     const struct load_opts *o);

/*
 * Attach the loaded program in @mode (enum sluice_attach; NONE: auto,
 * native XDP, else TC), or as the interface is attached already: replace
 * the program of the pinned link, or of sluice's TC filter. Refuses a
 * @mode other than the one attached. Records the mode in sluice_ctl and
 * a->mode. 0 or -errno, reported.
 */
int attachment__attach(struct attachment *a, int mode);

/* Release fds and memory; enforcement stays through the pinned link. Accepts NULL. */
void attachment__close(struct attachment *a);

/*
 * Detach the program of @iface, from the dispatcher, link or TC filter, and
 * remove its pins; other programs in the dispatcher stay. The dispatcher
 * and the TC filter are found by the interface's name in the caller's
 * network namespace. 0 or -errno, reported.
 */
int loader_detach(const char *pin_root, const char *iface);

/*
 * How @iface's native program is attached, for status and metrics: its run
 * priority in the libxdp dispatcher (>= 0), or -ENOENT when it is not there
 * (a pinned link, tc mode, or the interface is not in this namespace).
 */
int loader_xdp_priority(const char *pin_dir, const char *iface);

/* Remove the map pins and the directory of @pin_dir (after a detach). */
int loader_unpin(const char *pin_dir);

#endif /* SLUICE_LOADER_H */
