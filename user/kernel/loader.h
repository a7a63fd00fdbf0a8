/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Skeleton open/load/attach, pinning, and reuse or replacement of pinned
 * maps. Maps are pinned by name in a set, <pin_root>/<iface>/abi<N>/
 * (sluice/abi.h, "Pins"). A native XDP attachment is one program of the
 * interface's libxdp dispatcher, which libxdp pins (or, when an earlier
 * sluice left one, a bpf_link pinned beside the maps); a TC attachment is
 * a filter on the interface's clsact ingress, which is no link and stays
 * until removed. Either way enforcement and key state outlive the agent;
 * only loader_detach() removes them.
 */
#ifndef SLUICE_LOADER_H
#define SLUICE_LOADER_H

#include <limits.h>

#include "kernel/maps.h"

struct sluice_bpf;

struct attachment {
	char iface[POLICY_IFNAME_LEN];
	int ifindex;
	char iface_dir[PATH_MAX]; /* <pin_root>/<iface>: the lock */
	char pin_dir[PATH_MAX];	  /* this set: a staging directory until committed */
	char old_dir[PATH_MAX];	  /* the set being replaced; "" none */
	__u32 old_abi;		  /* its ABI version */
	int staged;		  /* pin_dir is new: attachment__close() removes it */
	int carried;		  /* the replaced set's entries were copied */
	__u64 copy_ns;		  /* how long the copy took */
	int made_dir;		  /* iface_dir was made by this load */
	int prev_prog_fd;	  /* the replaced set's program, while prev_mode is set */
	int prev_mode;		  /* enum sluice_attach: how the replaced set was attached */
	struct sluice_bpf *skel;
	struct sluice_maps maps; /* borrowed from skel: do not close */
	int prog_fd;		 /* the XDP program, borrowed from skel */
	int tc_prog_fd;		 /* the TC program, borrowed from skel */
	int link_fd;		 /* an earlier sluice's pinned link; else -1 */
	__u32 xdp_priority;	 /* dispatcher priority: asked (0: default), then as attached */
	int xdp_share;		 /* native: join libxdp's dispatcher, not a link of our own */
	int mode;		 /* enum sluice_attach: as attached */
	int reused;		 /* maps came from pins: key state was kept */
	int lock_fd;		 /* the pin directory, flock()ed: one agent per interface */
};

/* <pin_root>/<iface>, or -ENAMETOOLONG. */
int loader_pin_dir(char *buf, size_t len, const char *pin_root, const char *iface);

/*
 * The set of pins in use under @iface_dir into @buf (PATH_MAX bytes): this
 * ABI's, else the newest other ABI's, else one a release before ABI 8
 * pinned in @iface_dir itself. 0, -ENOENT when there is none, or -errno.
 */
int loader_find_set(char *buf, const char *iface_dir);

/* loader_find_set() of <pin_root>/<iface>: what status, top and reload open. */
int loader_set_dir(char *buf, const char *pin_root, const char *iface);

/* What a load may set; a zero field keeps the default. */
struct load_opts {
	__u32 max_keys;	     /* sluice_state's size: the default, or the pinned size */
	__u64 deny_ttl_ns;   /* the longest a cached drop stands: SLUICE_DENY_TTL_NS */
	__u32 max_datagrams; /* sluice_frags' size: SLUICE_FRAG_ENTRIES_DEFAULT (not pinned) */
	__u32 max_bans;	     /* each ban map's size: SLUICE_BAN_ENTRIES, or the pinned size */
};

/*
 * Open and load the XDP object for @iface (its index may be 0 when the
 * object will only be test-run), under the lock of <pin_root>/<iface>/.
 * Reuses the set of this ABI pinned there (@o->max_keys must equal its
 * size); otherwise pins a new set in a staging directory, copies into it
 * the entries of a set of another ABI where the layouts allow
 * (SLUICE_ABI_CARRY_SINCE; else it starts fresh and logs upgrade_fresh),
 * and takes over that set's link. 0 or -errno, with the cause already
 * reported; on failure attachment__close() removes what was created.
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

/*
 * After the policy is applied and attachment__attach() succeeded, make a
 * new set the one in use: merge the keys the old program charged since the
 * copy, rename the set into <iface>/abi<SLUICE_ABI_VERSION>/, and remove
 * the replaced set's pins. A reused set needs nothing. 0 or -errno,
 * reported; on failure the start has failed.
 */
int attachment__commit(struct attachment *a);

/*
 * Release fds and memory; enforcement stays through the pinned link.
 * Before attachment__commit(), first put back the replaced set's program
 * (or remove the attachment this start made) and remove the new set's
 * pins: a failed start leaves what ran before. Accepts NULL.
 */
void attachment__close(struct attachment *a);

/*
 * Detach the program of @iface, from the dispatcher, link or TC filter,
 * and remove its pins: every set under <pin_root>/<iface>/, older
 * releases' included; other programs in the dispatcher stay. The
 * dispatcher and the TC filter are found by the interface's name in the
 * caller's network namespace. 0 or -errno, reported.
 */
int loader_detach(const char *pin_root, const char *iface);

/*
 * How @iface's native program is attached, for status and metrics: its run
 * priority in the libxdp dispatcher (>= 0), or -ENOENT when it is not there
 * (a pinned link, tc mode, or the interface is not in this namespace).
 */
int loader_xdp_priority(const char *pin_dir, const char *iface);

/*
 * Remove the pins of the set in @pin_dir, its link's included, those of
 * every set below it (an interface's directory: abi<N>/, abi<N>-new/), and
 * the directory. 0 or -errno.
 */
int loader_unpin(const char *pin_dir);

#endif /* SLUICE_LOADER_H */
