// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice as one program of libxdp's dispatcher. libxdp loads a component
 * program as BPF_PROG_TYPE_EXT, verified against the dispatcher's slot, so
 * the skeleton's program (loaded as XDP, for tc mode, tests and an older
 * pinned link) cannot be used: a second object is opened from the same ELF
 * bytes, every one of its maps reusing the skeleton's (pinned or not, so
 * read-only data and key state are the same), and handed to libxdp, which
 * loads it. Here and nowhere else sluice calls libxdp.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/if_link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xdp/libxdp.h>
#include <xdp/prog_dispatcher.h>

#include "sluice.skel.h"
#include "sluice/abi.h"
#include "base/log.h"
#include "kernel/dispatch.h"

#define PROG_NAME    "sluice_xdp"
#define PROG_MAP_IDS (2 * SLUICE_MAP_MAX) /* more than sluice's maps and libbpf's .rodata */

/* One level lower than ours, as libbpf's lines are (base/log.c). */
static int libxdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	return log_vlibrary(NULL, level == LIBXDP_WARN, fmt, ap); /* it names itself */
}

/* The id of the map behind @fd, or 0. */
static __u32 map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* Whether program @prog_fd uses the map of id @id. */
static int prog_uses_map(int prog_fd, __u32 id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), ids[PROG_MAP_IDS] = { 0 }, i;

	info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return 0;
	for (i = 0; i < info.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]); i++)
		if (ids[i] == id)
			return 1;
	return 0;
}

/*
 * @ifindex's dispatcher, NULL when the hook is empty; an ERR_PTR-style
 * pointer is never returned (*err has the cause, 0 for empty).
 */
static struct xdp_multiprog *multiprog_get(int ifindex, int *err)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	long e = libxdp_get_error(mp);

	*err = e == -ENOENT ? 0 : (int)e;
	return e ? NULL : mp;
}

/*
 * sluice's program in @mp, the one using map @ctl_id, except the one of id
 * @except. A lone program (libxdp's fallback when the kernel refuses the
 * dispatcher) is @mp's main program.
 */
static struct xdp_program *multiprog_find(const struct xdp_multiprog *mp, __u32 ctl_id,
					  __u32 except)
{
	struct xdp_program *p;

	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		return p && xdp_program__id(p) != except &&
				       prog_uses_map(xdp_program__fd(p), ctl_id)
			       ? p
			       : NULL;
	}
	for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
		if (xdp_program__id(p) != except && prog_uses_map(xdp_program__fd(p), ctl_id))
			return p;
	return NULL;
}

/* -EEXIST, naming it, when @mp is a lone program: not libxdp's dispatcher. */
static int refuse_foreign(const struct xdp_multiprog *mp, const char *iface)
{
	const struct xdp_program *p = xdp_multiprog__main_prog(mp);

	if (!xdp_multiprog__is_legacy(mp))
		return 0;
	/* libxdp's dispatcher runs each program as an freplace (EXT) program. */
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_EXT, NULL) == 1)
		pr_warn("cannot add sluice to the XDP programs of '%s': it holds program '%s' "
			"(id %u), which was not attached through libxdp and cannot share the "
			"interface; detach it (ip link set dev %s xdp off) and load it with "
			"xdp-loader, or run sluice with --mode tc",
			iface, p ? xdp_program__name(p) : "?", p ? xdp_program__id(p) : 0, iface);
	else
		pr_warn("cannot add sluice to the XDP programs of '%s': it holds program '%s' "
			"(id %u) alone, as this kernel refuses libxdp's dispatcher (freplace "
			"programs) and so any second XDP program; run sluice with --mode tc, or "
			"detach it (ip link set dev %s xdp off) and run without --xdp-share",
			iface, p ? xdp_program__name(p) : "?", p ? xdp_program__id(p) : 0, iface);
	return -EEXIST;
}

/* A second, unloaded object of sluice's ELF whose maps are @loaded's. NULL with errno. */
static struct bpf_object *open_twin(struct bpf_object *loaded)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .object_name = bpf_object__name(loaded));
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map, *theirs;
	size_t sz = 0;
	const void *elf = sluice_bpf__elf_bytes(&sz);
	int err = 0;

	obj = bpf_object__open_mem(elf, sz, &opts);
	if (!obj)
		return NULL;
	bpf_object__for_each_map(map, obj)
	{
		theirs = bpf_object__find_map_by_name(loaded, bpf_map__name(map));
		err = theirs ? bpf_map__reuse_fd(map, bpf_map__fd(theirs)) : -ENOENT;
		/* Pinned already, by @loaded; left set, libbpf would pin again in its default root.
		 */
		if (!err)
			err = bpf_map__set_pin_path(map, NULL);
		if (err)
			break;
	}
	bpf_object__for_each_program(prog, obj)
	{
		if (!err && strcmp(bpf_program__name(prog), PROG_NAME) != 0)
			err = bpf_program__set_autoload(prog, false);
	}
	if (!err)
		return obj;
	bpf_object__close(obj);
	errno = -err;
	return NULL;
}

/* Add a program of @obj at @priority, continuing the chain on XDP_PASS only. */
static int add_program(struct bpf_object *obj, int ifindex, unsigned int priority, __u32 *id)
{
	LIBBPF_OPTS(xdp_program_opts, xo, /* libxdp's options are libbpf's kind */ .obj = obj,
		    .prog_name = PROG_NAME);
	struct xdp_program *p = xdp_program__create(&xo);
	int err = (int)libxdp_get_error(p), action;

	if (err)
		return err;
	err = xdp_program__set_run_prio(p, priority);
	for (action = XDP_ABORTED; !err && action <= XDP_REDIRECT; action++)
		err = xdp_program__set_chain_call_enabled(p, action, action == XDP_PASS);
	if (!err)
		err = xdp_program__attach(p, ifindex, XDP_MODE_NATIVE, 0);
	if (!err)
		*id = xdp_program__id(p);
	xdp_program__close(p);
	return err;
}

/*
 * Detach every sluice program of @ctl_id from @ifindex but @keep_id, one a
 * round (a dispatcher has MAX_DISPATCHER_ACTIONS slots); 0, -ENOENT when
 * there was none, or -errno.
 */
static int remove_others(int ifindex, __u32 ctl_id, __u32 keep_id)
{
	struct xdp_multiprog *mp;
	struct xdp_program *old;
	int err = 0, found = 0, round;

	for (round = 0; round < MAX_DISPATCHER_ACTIONS; round++) {
		mp = multiprog_get(ifindex, &err);
		old = mp ? multiprog_find(mp, ctl_id, keep_id) : NULL;
		if (old) {
			found = 1;
			err = xdp_program__detach(old, ifindex, XDP_MODE_NATIVE, 0);
		}
		xdp_multiprog__close(mp);
		if (!old || err)
			break;
	}
	return err ? err : found ? 0 : -ENOENT;
}

/*
 * sluice alone on the hook: libxdp attached it so when the kernel refused
 * its dispatcher (its freplace programs). Replace it in place with the XDP
 * program @prog_fd, atomically, as a link update would.
 */
static int replace_lone(const struct xdp_program *old, int ifindex, int prog_fd)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = xdp_program__fd(old));

	return bpf_xdp_attach(ifindex, prog_fd, XDP_FLAGS_DRV_MODE | XDP_FLAGS_REPLACE, &opts);
}

int dispatch_attach(struct bpf_object *loaded, int prog_fd, const char *iface, int ifindex,
		    unsigned int priority, int ctl_fd)
{
	struct xdp_multiprog *mp;
	struct xdp_program *own;
	struct bpf_object *twin;
	__u32 ctl_id = map_id(ctl_fd), new_id = 0;
	int err;

	libxdp_set_print(libxdp_print);
	mp = multiprog_get(ifindex, &err);
	own = mp && xdp_multiprog__is_legacy(mp) ? multiprog_find(mp, ctl_id, 0) : NULL;
	if (own)
		err = replace_lone(own, ifindex, prog_fd);
	else if (mp)
		err = refuse_foreign(mp, iface);
	xdp_multiprog__close(mp);
	if (err || own)
		return err ? err : DISPATCH_ALONE;
	twin = open_twin(loaded);
	if (!twin)
		return -errno;
	err = add_program(twin, ifindex, priority, &new_id);
	bpf_object__close(twin);
	if (err)
		return err;
	/* The earlier program ran beside the new one until now: no packet went unlimited. */
	err = remove_others(ifindex, ctl_id, new_id);
	if (err && err != -ENOENT)
		pr_warn("cannot remove the earlier sluice program from '%s': %s", iface,
			strerror(-err));
	return dispatch_priority(ifindex, ctl_fd) < 0 ? DISPATCH_ALONE : 0;
}

int dispatch_detach(int ifindex, int ctl_fd)
{
	libxdp_set_print(libxdp_print);
	return remove_others(ifindex, map_id(ctl_fd), 0);
}

int dispatch_priority(int ifindex, int ctl_fd)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p;
	int err, prio;

	libxdp_set_print(libxdp_print);
	mp = multiprog_get(ifindex, &err);
	p = mp && !xdp_multiprog__is_legacy(mp) ? multiprog_find(mp, map_id(ctl_fd), 0) : NULL;
	prio = p ? (int)xdp_program__run_prio(p) : -ENOENT;
	xdp_multiprog__close(mp);
	return prio;
}
