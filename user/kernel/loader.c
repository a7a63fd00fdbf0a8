// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Loading and attaching. With LIBBPF_PIN_BY_NAME and a per-interface
 * pin_root_path, libbpf reuses a compatible pinned map or pins a new one;
 * before that we check the ABI version in the pinned sluice_ctl, because a
 * same-sized but reordered struct would be "compatible" to libbpf.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "sluice.skel.h"
#include "sluice/deny.h"
#include "sluice/frag.h"
#include "kernel/dispatch.h"
#include "kernel/loader.h"
#include "base/log.h"
#include "kernel/probe.h"
#include "base/names.h"

#define PIN_DIR_MODE 0700
#define REFUSAL_LEN  256 /* probe_refusal()'s sentence */

int loader_pin_dir(char *buf, size_t len, const char *pin_root, const char *iface)
{
	int n = snprintf(buf, len, "%s/%s", pin_root, iface);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int mkdir_p(const char *dir)
{
	char path[PATH_MAX];
	char *p;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, PIN_DIR_MODE) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(path, PIN_DIR_MODE) && errno != EEXIST ? -errno : 0;
}

/*
 * A pin directory must be ours: owned by our user and writable by nobody
 * else. Another user who can write it can remove the pins, and with the
 * link's pin the XDP program (#12: a squatter's directory, reused).
 */
static int check_owned(const char *dir)
{
	struct stat st;

	if (stat(dir, &st))
		return -errno;
	if (st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	pr_warn("refusing pin directory '%s': owned by uid %u with mode %04o; it must be owned by "
		"uid %u and writable by no one else, or another user could remove the pins",
		dir, (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777),
		(unsigned int)geteuid());
	return -EPERM;
}

/*
 * One agent per interface: an exclusive flock() on its pin directory, held
 * until the attachment closes (or the process ends). A second agent is
 * told the pid the first wrote into sluice_ctl, and changes nothing.
 */
static int lock_pin_dir(struct attachment *a)
{
	char path[PATH_MAX];
	struct sluice_ctl ctl = { 0 };
	__u32 zero = 0;
	int fd;

	a->lock_fd = open(a->pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (a->lock_fd < 0)
		return -errno;
	if (!flock(a->lock_fd, LOCK_EX | LOCK_NB))
		return 0;
	if (errno != EWOULDBLOCK)
		return -errno;
	fd = pin_path(path, a->pin_dir, sluice_map_names[SLUICE_MAP_CTL]) ? -1 : bpf_obj_get(path);
	if (fd >= 0 && bpf_map_lookup_elem(fd, &zero, &ctl))
		ctl.agent_pid = 0;
	if (fd >= 0)
		close(fd);
	pr_warn("'%s' is served by another agent (pid %u; pins in '%s'): one agent per interface",
		a->iface, ctl.agent_pid, a->pin_dir);
	return -EBUSY;
}

/* If @pin_dir holds maps, they must be ours: same ABI, and their state size. */
static int check_pinned(const char *pin_dir, __u32 *pinned_keys)
{
	char path[PATH_MAX];
	struct sluice_ctl ctl;
	struct bpf_map_info info = {};
	__u32 zero = 0, len = sizeof(info);
	int fd, err = 0;

	*pinned_keys = 0;
	if (pin_path(path, pin_dir, sluice_map_names[SLUICE_MAP_CTL]))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (bpf_map_lookup_elem(fd, &zero, &ctl) || ctl.abi_version != SLUICE_ABI_VERSION) {
		pr_warn("cannot reuse pinned maps in '%s': they are ABI version %u, this sluice is "
			"%u; "
			"detach first (sluice detach --iface <iface>)",
			pin_dir, ctl.abi_version, SLUICE_ABI_VERSION);
		err = -EPROTO;
	}
	close(fd);
	fd = pin_path(path, pin_dir, sluice_map_names[SLUICE_MAP_STATE]) ? -1 : bpf_obj_get(path);
	if (!err && fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
		*pinned_keys = info.max_entries;
	if (fd >= 0)
		close(fd);
	return err;
}

static int borrow_maps(struct attachment *a)
{
	struct bpf_map *map;
	int i;

	for (i = 0; i < SLUICE_MAP_MAX; i++) {
		map = bpf_object__find_map_by_name(a->skel->obj, sluice_map_names[i]);
		if (!map)
			return -ENOENT;
		a->maps.fd[i] = bpf_map__fd(map);
	}
	return 0;
}

/* A fresh ctl carries our ABI version from the start. */
static int init_ctl(struct attachment *a)
{
	struct sluice_ctl ctl;
	int err = maps__read_ctl(&a->maps, &ctl);

	if (err || ctl.abi_version)
		return err;
	ctl.abi_version = SLUICE_ABI_VERSION;
	return maps__write_ctl(&a->maps, &ctl);
}

/*
 * Refuse, before the object is opened, a kernel that lacks what it needs,
 * naming the feature and the release that brought it (user/kernel/probe.c).
 */
static int check_kernel(const char *iface)
{
	const struct probe_feature *missing;
	char why[REFUSAL_LEN];
	int err = probe_kernel(&missing);

	if (err == -EOPNOTSUPP && !probe_refusal(why, sizeof(why), missing))
		pr_warn("cannot load the XDP program for '%s': %s", iface, why);
	else if (err)
		pr_warn("cannot probe the kernel's BPF features: %s", strerror(-err));
	return err;
}

/* The load failed on a kernel with every feature: its verifier said no. */
static void report_rejection(const char *iface, int err)
{
	struct utsname u;

	if (err != -EACCES && err != -EINVAL) {
		pr_warn("cannot load the XDP program for '%s': %s", iface, strerror(-err));
		return;
	}
	pr_warn("cannot load the XDP program for '%s': the verifier of this kernel (%s) rejected "
		"it; docs/kernels.md lists the kernels sluice is tested on; run with -v for the "
		"verifier log",
		iface, uname(&u) ? "?" : u.release);
}

int attachment__load(struct attachment *a, const char *pin_root, const char *iface,
		     const struct load_opts *o)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts);
	__u32 pinned_keys, max_keys = o->max_keys;
	__u64 ttl_ns = o->deny_ttl_ns ? o->deny_ttl_ns : SLUICE_DENY_TTL_NS;
	int err;

	memset(a, 0, sizeof(*a));
	a->link_fd = -1;
	a->lock_fd = -1;
	maps__init(&a->maps);
	snprintf(a->iface, sizeof(a->iface), "%s", iface);
	a->ifindex = if_nametoindex(iface);
	err = check_kernel(iface); /* before anything is created */
	if (err)
		return err;
	err = loader_pin_dir(a->pin_dir, sizeof(a->pin_dir), pin_root, iface);
	if (!err)
		err = mkdir_p(a->pin_dir);
	if (err) {
		pr_warn("cannot create pin directory '%s/%s': %s; is bpffs mounted on %s?",
			pin_root, iface, strerror(-err), pin_root);
		return err;
	}
	err = check_owned(pin_root);
	if (!err)
		err = check_owned(a->pin_dir);
	if (!err)
		err = lock_pin_dir(a);
	if (err)
		return err;
	err = check_pinned(a->pin_dir, &pinned_keys);
	if (err)
		return err;
	a->reused = pinned_keys != 0;
	if (!max_keys)
		max_keys = pinned_keys ? pinned_keys : SLUICE_STATE_ENTRIES_DEFAULT;
	if (pinned_keys && max_keys != pinned_keys) {
		pr_warn("cannot resize pinned map '%s/%s' from %u to %u keys: key state would be "
			"lost; "
			"detach first to change it",
			a->pin_dir, sluice_map_names[SLUICE_MAP_STATE], pinned_keys, max_keys);
		return -EINVAL;
	}
	opts.pin_root_path = a->pin_dir;
	a->skel = sluice_bpf__open_opts(&opts);
	if (!a->skel) {
		err = -errno;
		pr_warn("cannot open the XDP object: %s", strerror(-err));
		return err;
	}
	a->skel->rodata->sluice_deny_ttl_ticks = sluice_gcra_ticks(ttl_ns);
	err = bpf_map__set_max_entries(a->skel->maps.sluice_state, max_keys);
	if (!err)
		err = bpf_map__set_max_entries(a->skel->maps.sluice_frags,
					       o->max_datagrams ? o->max_datagrams
								: SLUICE_FRAG_ENTRIES_DEFAULT);
	if (!err)
		err = sluice_bpf__load(a->skel);
	if (err) {
		report_rejection(iface, err);
		return err;
	}
	a->prog_fd = bpf_program__fd(a->skel->progs.sluice_xdp);
	a->tc_prog_fd = bpf_program__fd(a->skel->progs.sluice_tc);
	err = borrow_maps(a);
	if (!err)
		err = init_ctl(a);
	if (err)
		pr_warn("cannot initialise maps in '%s': %s", a->pin_dir, strerror(-err));
	return err;
}

/*
 * sluice's filter on clsact ingress, named by handle and priority: first,
 * as XDP runs before everything else; it passes with TC_ACT_UNSPEC, so
 * filters after it still run.
 */
#define TC_HANDLE   0x51ce
#define TC_PRIORITY 1

/*
 * Attach natively. An interface attached by an earlier sluice through a
 * pinned bpf_link keeps it: the program is replaced on the link, with no
 * gap, and sharing the interface waits for a detach. Otherwise sluice
 * joins (or creates) the interface's libxdp dispatcher (kernel/dispatch.c).
 */
static int attach_native(struct attachment *a)
{
	char path[PATH_MAX];
	__u32 prio = a->xdp_priority ? a->xdp_priority : DISPATCH_PRIORITY_DEFAULT;
	int err = pin_path(path, a->pin_dir, SLUICE_PIN_LINK);

	if (err)
		return err;
	a->xdp_priority = 0; /* until it is in a dispatcher */
	a->link_fd = bpf_obj_get(path);
	if (a->link_fd >= 0) {
		if (!bpf_link_update(a->link_fd, a->prog_fd, NULL)) {
			log_event(LOG_INFO, "xdp_link_kept",
				  "iface=%s link=%s hint=\"this interface is attached through a "
				  "bpf_link of an earlier sluice; to share it with other XDP "
				  "programs through libxdp, run sluice detach and start again\"",
				  a->iface, path);
			return 0;
		}
		/* A link whose interface went away: start over. */
		close(a->link_fd);
		a->link_fd = -1;
		unlink(path);
	}
	err = dispatch_attach(a->skel->obj, a->prog_fd, a->iface, a->ifindex, prio,
			      a->maps.fd[SLUICE_MAP_CTL]);
	if (err < 0)
		return err;
	a->xdp_priority = err == DISPATCH_ALONE ? 0 : prio;
	return 0;
}

/* Attach on clsact ingress, creating the qdisc if needed, or replace our filter's program. */
static int attach_tc(struct attachment *a)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = a->ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = TC_HANDLE, .priority = TC_PRIORITY,
		    .prog_fd = a->tc_prog_fd, .flags = BPF_TC_F_REPLACE);
	int err = bpf_tc_hook_create(&hook);

	if (err && err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

static int attach_mode(struct attachment *a, int mode)
{
	return mode == SLUICE_ATTACH_TC ? attach_tc(a) : attach_native(a);
}

/*
 * Auto: native, else TC, saying why. Not when the hook is another
 * program's (-EBUSY, -EEXIST): that is for the operator to resolve.
 */
static int attach_auto(struct attachment *a)
{
	int err = attach_native(a);

	if (!err) {
		a->mode = SLUICE_ATTACH_NATIVE;
		return 0;
	}
	if (err == -EBUSY || err == -EEXIST)
		return err;
	log_event(LOG_INFO, "attach_fallback", "iface=%s from=native to=tc err=\"%s\"", a->iface,
		  strerror(-err));
	a->mode = SLUICE_ATTACH_TC;
	return attach_tc(a);
}

/* The mode @a's interface is attached in (sluice_ctl), or -errno. */
static int attached_mode(struct attachment *a, struct sluice_ctl *ctl)
{
	int err = maps__read_ctl(&a->maps, ctl);

	return err ? err : (int)ctl->attach;
}

int attachment__attach(struct attachment *a, int mode)
{
	struct sluice_ctl ctl;
	int was, err;

	if (!a->ifindex) {
		pr_warn("cannot attach to '%s': no such interface", a->iface);
		return -ENODEV;
	}
	was = attached_mode(a, &ctl);
	if (was < 0)
		return was;
	if (was && mode && mode != was) {
		pr_warn("cannot attach to '%s' in %s mode: it is attached in %s mode; detach first "
			"(sluice detach --iface %s)",
			a->iface, sluice_name(sluice_attach_names, SLUICE_ATTACH_MAX, mode),
			sluice_name(sluice_attach_names, SLUICE_ATTACH_MAX, was), a->iface);
		return -EBUSY;
	}
	a->mode = mode ? mode : was;
	err = a->mode ? attach_mode(a, a->mode) : attach_auto(a);
	if (err) {
		pr_warn("cannot attach the %s program to '%s': %s%s",
			a->mode == SLUICE_ATTACH_TC ? "TC" : "XDP", a->iface, strerror(-err),
			err == -EBUSY || err == -EEXIST
				? "; another program is attached (ip link show dev <iface>)"
				: "");
		return err;
	}
	ctl.attach = a->mode;
	err = maps__write_ctl(&a->maps, &ctl);
	if (err) {
		pr_warn("cannot record the mode of '%s': %s", a->iface, strerror(-err));
		return err;
	}
	log_event(LOG_INFO, was ? "reattach" : "attach", "iface=%s mode=%s", a->iface,
		  sluice_name(sluice_attach_names, SLUICE_ATTACH_MAX, a->mode));
	return 0;
}

void attachment__close(struct attachment *a)
{
	if (!a)
		return;
	if (a->link_fd >= 0)
		close(a->link_fd);
	a->link_fd = -1;
	sluice_bpf__destroy(a->skel);
	a->skel = NULL;
	if (a->lock_fd >= 0)
		close(a->lock_fd);
	a->lock_fd = -1;
}

int loader_unpin(const char *pin_dir)
{
	char path[PATH_MAX];
	int i, err = 0;

	for (i = 0; i < SLUICE_MAP_MAX; i++) {
		if (pin_path(path, pin_dir, sluice_map_names[i]))
			return -ENAMETOOLONG;
		if (unlink(path) && errno != ENOENT && !err)
			err = -errno;
	}
	if (!err && rmdir(pin_dir))
		err = -errno;
	return err;
}

/* The mode recorded in @pin_dir's sluice_ctl, or SLUICE_ATTACH_NONE. */
static int pinned_attach(const char *pin_dir)
{
	char path[PATH_MAX];
	struct sluice_ctl ctl = {};
	__u32 zero = 0;
	int fd;

	fd = pin_path(path, pin_dir, sluice_map_names[SLUICE_MAP_CTL]) ? -1 : bpf_obj_get(path);
	if (fd < 0)
		return SLUICE_ATTACH_NONE;
	if (bpf_map_lookup_elem(fd, &zero, &ctl))
		ctl.attach = SLUICE_ATTACH_NONE;
	close(fd);
	return ctl.attach;
}

/*
 * Remove sluice's TC filter from @iface, leaving the clsact qdisc: other
 * filters may share it, and an empty one costs nothing. Gone already is
 * no error.
 */
static void detach_tc(const char *iface)
{
	int ifindex = if_nametoindex(iface), err;
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = TC_HANDLE, .priority = TC_PRIORITY);

	if (!ifindex) {
		pr_warn("cannot detach the TC filter of '%s': no such interface in this network "
			"namespace; run detach where the interface is",
			iface);
		return;
	}
	err = bpf_tc_detach(&hook, &opts);
	if (err && err != -ENOENT)
		pr_warn("cannot detach the TC filter of '%s': %s", iface, strerror(-err));
}

/* The fd of @pin_dir's pinned sluice_ctl, or -errno. */
static int open_pinned_ctl(const char *pin_dir)
{
	char path[PATH_MAX];
	int fd;

	if (pin_path(path, pin_dir, sluice_map_names[SLUICE_MAP_CTL]))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

int loader_xdp_priority(const char *pin_dir, const char *iface)
{
	int ifindex = if_nametoindex(iface), fd = open_pinned_ctl(pin_dir), prio;

	if (fd < 0)
		return fd;
	prio = ifindex ? dispatch_priority(ifindex, fd) : -ENOENT;
	close(fd);
	return prio;
}

/* Remove sluice's program from the dispatcher of @iface; the others stay. */
static void detach_dispatched(const char *dir, const char *iface)
{
	int ifindex = if_nametoindex(iface), fd, err;

	if (!ifindex) {
		pr_warn("cannot remove sluice from the XDP programs of '%s': no such interface in "
			"this network namespace; run detach where the interface is",
			iface);
		return;
	}
	fd = open_pinned_ctl(dir);
	err = fd < 0 ? fd : dispatch_detach(ifindex, fd);
	if (fd >= 0)
		close(fd);
	if (err && err != -ENOENT)
		pr_warn("cannot remove sluice from the XDP programs of '%s': %s", iface,
			strerror(-err));
}

int loader_detach(const char *pin_root, const char *iface)
{
	char dir[PATH_MAX], path[PATH_MAX];
	int fd, err, mode;

	err = loader_pin_dir(dir, sizeof(dir), pin_root, iface);
	if (err || access(dir, F_OK)) {
		pr_warn("cannot detach from '%s': nothing pinned in '%s/%s'; is sluice attached to "
			"'%s'?",
			iface, pin_root, iface, iface);
		return -ENOENT;
	}
	mode = pinned_attach(dir);
	fd = pin_path(path, dir, SLUICE_PIN_LINK) ? -1 : bpf_obj_get(path);
	if (fd >= 0) {
		/* Force the detach even while an agent still holds the link. */
		if (bpf_link_detach(fd) && errno != ENOLINK)
			pr_warn("cannot detach XDP link of '%s': %s", iface, strerror(errno));
		close(fd);
		unlink(path);
	} else if (mode == SLUICE_ATTACH_NATIVE) {
		detach_dispatched(dir, iface);
	}
	if (mode == SLUICE_ATTACH_TC)
		detach_tc(iface);
	err = loader_unpin(dir);
	if (err)
		pr_warn("cannot remove pins in '%s': %s", dir, strerror(-err));
	else
		log_event(LOG_INFO, "detach", "iface=%s", iface);
	return err;
}
