// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Loading and attaching. With LIBBPF_PIN_BY_NAME and a pin_root_path per
 * set of pins (sluice/abi.h, "Pins"), libbpf reuses the maps of a set of
 * this ABI, or pins new ones. We read the ABI version in the pinned
 * sluice_ctl first, because a same-sized but reordered struct would be
 * "compatible" to libbpf: a set of another ABI is replaced, never reused.
 *
 * A replacement, or a first start, builds its set in a staging directory:
 * load, copy the old set's entries (carry_set), take over its attachment
 * (adopt_attachment); the agent applies the policy and attaches, which
 * swaps the program on the old link or TC filter; attachment__commit()
 * renames the set into place and removes the old pins. Until then,
 * attachment__close() puts everything back (roll_back).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "sluice.skel.h"
#include "sluice/deny.h"
#include "sluice/frag.h"
#include "kernel/bans.h"
#include "kernel/dispatch.h"
#include "kernel/loader.h"
#include "base/clock.h"
#include "base/log.h"
#include "kernel/probe.h"
#include "base/names.h"

#define PIN_DIR_MODE 0700
#define REFUSAL_LEN  256 /* probe_refusal()'s sentence */

/*
 * sluice's filter on clsact ingress, named by handle and priority: first,
 * as XDP runs before everything else; it passes with TC_ACT_UNSPEC, so
 * filters after it still run.
 */
#define TC_HANDLE   0x51ce
#define TC_PRIORITY 1

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
 * @dir, or the nearest of its parents that exists, must be on bpffs: pins
 * fail on any other filesystem (with EPERM, which looks like a verifier's
 * refusal). 0, or -ENOTDIR after printing what to do.
 */
static int check_bpffs(const char *dir)
{
	char path[PATH_MAX];
	struct statfs fs;
	char *slash;
	int err;

	snprintf(path, sizeof(path), "%s", dir);
	while ((err = statfs(path, &fs)) && errno == ENOENT && (slash = strrchr(path, '/')) &&
	       slash > path)
		*slash = '\0';
	if (err || fs.f_type == BPF_FS_MAGIC) /* cannot tell: creating it will say why */
		return 0;
	pr_warn("'%s' is not on bpffs; mount bpffs there (mount -t bpf bpf %s) or choose a "
		"--pin-root under /sys/fs/bpf",
		dir, dir);
	return -ENOTDIR;
}

/* Say that sluice needs privilege it lacks (-@err from @what): run it with sudo. */
static void report_privilege(const char *what, int err)
{
	pr_warn("%s: %s; sluice needs root (CAP_BPF and CAP_NET_ADMIN): run it with sudo", what,
		strerror(-err));
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
	pr_warn("refusing pin directory '%s': owned by uid %u with mode %04o, so another user "
		"could remove the pins; make it uid %u's and writable by no one else, or give "
		"another --pin-root",
		dir, (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777),
		(unsigned int)geteuid());
	return -EUCLEAN; /* not -EPERM: sudo would not help (cmd.h, EXIT_NOPERM) */
}

/*
 * The pid that holds a flock() on @fd's file, as /proc/locks names it in
 * this pid namespace; 0 when it names none.
 */
static int lock_holder(int fd)
{
	unsigned int maj, min;
	unsigned long ino;
	char line[256], type[16];
	struct stat st;
	int pid = 0, p;
	FILE *f;

	if (fstat(fd, &st))
		return 0;
	f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	/* "1: FLOCK  ADVISORY  WRITE 1234 00:1f:5678 0 EOF"; a waiter's is "1: -> FLOCK ..." */
	while (!pid && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%lu", type, &p, &maj, &min, &ino) ==
			    5 &&
		    !strcmp(type, "FLOCK") && ino == st.st_ino && maj == major(st.st_dev) &&
		    min == minor(st.st_dev))
			pid = p > 0 ? p : 0;
	fclose(f);
	return pid;
}

/*
 * One agent per interface: an exclusive flock() on the interface's pin
 * directory, which every release has locked, held until the attachment
 * closes (or the process ends). A second agent is told the pid that holds
 * it (/proc/locks), else the pid the first wrote into the sluice_ctl of
 * the set in @set_dir if that one is alive, and changes nothing.
 */
static int lock_pin_dir(struct attachment *a, const char *set_dir)
{
	char path[PATH_MAX];
	struct sluice_ctl ctl = { 0 };
	__u32 zero = 0;
	int fd, pid;

	a->lock_fd = open(a->iface_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (a->lock_fd < 0)
		return -errno;
	if (!flock(a->lock_fd, LOCK_EX | LOCK_NB))
		return 0;
	if (errno != EWOULDBLOCK)
		return -errno;
	fd = !set_dir[0] || pin_path(path, set_dir, sluice_map_names[SLUICE_MAP_CTL])
		     ? -1
		     : bpf_obj_get(path);
	if (fd >= 0 && bpf_map_lookup_elem(fd, &zero, &ctl))
		ctl.agent_pid = 0;
	if (fd >= 0)
		close(fd);
	pid = lock_holder(a->lock_fd);
	if (!pid && ctl.agent_pid && (!kill((pid_t)ctl.agent_pid, 0) || errno == EPERM))
		pid = (int)ctl.agent_pid;
	if (pid)
		pr_warn("'%s' is served by another agent (pid %d; pins in '%s'): one agent per "
			"interface; stop it first, or change its policy with 'sluice reload'",
			a->iface, pid, a->iface_dir);
	else
		pr_warn("'%s' is locked by a process not visible here (pins in '%s'): one agent "
			"per interface; find it with 'fuser -v %s'",
			a->iface, a->iface_dir, a->iface_dir);
	return -EBUSY;
}

/* "<iface_dir>/abi<abi>", with @staging its "-new" twin; 0 or -ENAMETOOLONG. */
static int set_dir(char *buf, const char *iface_dir, __u32 abi, int staging)
{
	int n = snprintf(buf, PATH_MAX, "%s/" SLUICE_PIN_SET "%u%s", iface_dir, abi,
			 staging ? SLUICE_PIN_STAGING : "");

	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* The ABI version a set's directory is named for ("abi<N>"), or 0 for any other name. */
static __u32 set_abi(const char *name)
{
	size_t len = strlen(SLUICE_PIN_SET);
	unsigned long abi;
	char *end;

	if (strncmp(name, SLUICE_PIN_SET, len) != 0 || name[len] < '0' || name[len] > '9')
		return 0;
	errno = 0;
	abi = strtoul(name + len, &end, 10);
	return *end || errno || abi > UINT32_MAX ? 0 : (__u32)abi;
}

/* Whether @dir holds a set: its sluice_ctl is pinned. */
static int has_set(const char *dir)
{
	char path[PATH_MAX];

	return !pin_path(path, dir, sluice_map_names[SLUICE_MAP_CTL]) && !access(path, F_OK);
}

int loader_find_set(char *buf, const char *iface_dir)
{
	char dir[PATH_MAX];
	struct dirent *e;
	__u32 abi, best = 0;
	DIR *d = opendir(iface_dir);

	if (!d)
		return -errno;
	/* readdir_r() is deprecated (glibc 2.24); readdir() on a DIR of our own is safe. */
	/* cppcheck-suppress readdirCalled */
	while ((e = readdir(d))) {
		abi = set_abi(e->d_name);
		if (!abi || best == SLUICE_ABI_VERSION || set_dir(dir, iface_dir, abi, 0) ||
		    !has_set(dir))
			continue;
		if (abi == SLUICE_ABI_VERSION || abi > best)
			best = abi;
	}
	closedir(d);
	if (best)
		return set_dir(buf, iface_dir, best, 0);
	if (!has_set(iface_dir)) /* a release before ABI 8 pinned its set here */
		return -ENOENT;
	return snprintf(buf, PATH_MAX, "%s", iface_dir) >= PATH_MAX ? -ENAMETOOLONG : 0;
}

int loader_set_dir(char *buf, const char *pin_root, const char *iface)
{
	char iface_dir[PATH_MAX];

	return loader_pin_dir(iface_dir, sizeof(iface_dir), pin_root, iface)
		       ?: loader_find_set(buf, iface_dir);
}

/*
 * Remove a set's pins, its link's included, and its directory unless it
 * is the interface's own (a release before ABI 8). Gone already is no error.
 */
static int unpin_set(const char *dir, int keep_dir)
{
	char path[PATH_MAX];
	int i, err = 0;

	if (pin_path(path, dir, SLUICE_PIN_LINK))
		return -ENAMETOOLONG;
	if (unlink(path) && errno != ENOENT)
		err = -errno;
	for (i = 0; i < SLUICE_MAP_MAX; i++) {
		if (pin_path(path, dir, sluice_map_names[i]))
			return -ENAMETOOLONG;
		if (unlink(path) && errno != ENOENT && !err)
			err = -errno;
	}
	if (!err && !keep_dir && rmdir(dir) && errno != ENOENT)
		err = -errno;
	return err;
}

/* The size of map @i pinned in @dir; 0 when there is none. */
static __u32 pinned_size(const char *dir, int i)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), size;
	char path[PATH_MAX];
	int fd = pin_path(path, dir, sluice_map_names[i]) ? -1 : bpf_obj_get(path);

	size = fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len) ? info.max_entries : 0;
	if (fd >= 0)
		close(fd);
	return size;
}

/* The ABI version and sluice_state size of the set in @dir; 0 or -errno. */
static int read_set(const char *dir, __u32 *abi, __u32 *keys)
{
	char path[PATH_MAX];
	struct bpf_map_info info = {};
	__u32 zero = 0, len = sizeof(info);
	void *val = NULL;
	int fd, err;

	/* Any release's ctl starts with abi_version; read it whole whatever its size. */
	fd = pin_path(path, dir, sluice_map_names[SLUICE_MAP_CTL]) ? -1 : bpf_obj_get(path);
	err = fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	if (!err && info.value_size < sizeof(*abi))
		err = -EPROTO;
	if (!err && !(val = calloc(1, info.value_size)))
		err = -ENOMEM;
	if (!err && bpf_map_lookup_elem(fd, &zero, val))
		err = -errno;
	if (!err)
		memcpy(abi, val, sizeof(*abi));
	free(val);
	if (fd >= 0)
		close(fd);
	*keys = err ? 0 : pinned_size(dir, SLUICE_MAP_STATE);
	if (err)
		pr_warn("cannot read the pinned maps in '%s': %s", dir, strerror(-err));
	return err;
}

/*
 * Pick where this load pins: the set of this ABI, reused, or a new one in
 * a staging directory, replacing the set found (a->old_dir) on commit. A
 * staging directory a crashed start left is removed first (we hold the lock).
 */
static int choose_set(struct attachment *a, __u32 *max_keys, __u32 *max_bans)
{
	__u32 keys = 0, bans;
	int err;

	if (a->old_dir[0] && (err = read_set(a->old_dir, &a->old_abi, &keys)))
		return err;
	if (a->old_dir[0] && a->old_abi == SLUICE_ABI_VERSION &&
	    strcmp(a->old_dir, a->iface_dir) != 0) {
		snprintf(a->pin_dir, sizeof(a->pin_dir), "%s", a->old_dir);
		a->old_dir[0] = '\0';
		a->reused = 1;
		if (!*max_keys)
			*max_keys = keys;
		bans = pinned_size(a->pin_dir, SLUICE_MAP_BAN_HOST);
		if (*max_bans && bans && *max_bans != bans) {
			pr_warn("cannot resize pinned ban table '%s/%s' from %u to %u entries; "
				"run without --max-bans, or detach first (sluice detach --iface "
				"%s; the bans in the state dir are restored at the next start)",
				a->pin_dir, sluice_map_names[SLUICE_MAP_BAN_HOST], bans, *max_bans,
				a->iface);
			return -EINVAL;
		}
		*max_bans = bans ?: *max_bans;
		if (*max_keys == keys)
			return 0;
		pr_warn("cannot resize pinned map '%s/%s' from %u to %u keys: key state would be "
			"lost; run without --max-keys, or detach first (sluice detach --iface %s) "
			"to change it",
			a->pin_dir, sluice_map_names[SLUICE_MAP_STATE], keys, *max_keys, a->iface);
		return -EINVAL;
	}
	if (!*max_keys)
		*max_keys = keys ? keys : SLUICE_STATE_ENTRIES_DEFAULT;
	err = set_dir(a->pin_dir, a->iface_dir, SLUICE_ABI_VERSION, 1);
	if (!err)
		err = unpin_set(a->pin_dir, 0);
	if (!err && mkdir(a->pin_dir, PIN_DIR_MODE))
		err = -errno;
	if (err) {
		pr_warn("cannot create pin directory '%s': %s", a->pin_dir, strerror(-err));
		return err;
	}
	a->staged = 1;
	return 0;
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

/*
 * Copy the replaced set's maps into the new ones where their layouts are
 * this ABI's; otherwise start fresh and say so. A copy that fails half way
 * fails the load: half a state is worse than none, and nothing old changed.
 */
static int carry_set(struct attachment *a)
{
	struct sluice_maps old;
	const char *why = "its maps have other layouts";
	int bad = SLUICE_MAP_CTL, err = -EPROTO;
	__u64 start_ns;

	if (a->old_abi >= SLUICE_ABI_CARRY_SINCE && a->old_abi <= SLUICE_ABI_VERSION) {
		err = maps__open_pinned_n(&old, a->old_dir, sluice_maps_of_abi(a->old_abi));
		why = err ? "a map of it cannot be opened" : "a map of it has another layout";
	}
	if (!err) {
		start_ns = mono_ns();
		err = maps__copy(&old, &a->maps, &bad);
		if (!err && a->maps.fd[SLUICE_MAP_BAN_GATE] >= 0)
			err = bans__sync_gate(
				&a->maps); /* what the copied bans count, in an epoch */
		a->copy_ns = mono_ns() - start_ns;
		maps__close(&old);
	}
	a->carried = !err;
	if (err && err != -EPROTO && err != -ENOENT) {
		pr_warn("cannot copy pinned map '%s/%s' into '%s': %s", a->old_dir,
			sluice_map_names[bad], a->pin_dir, strerror(-err));
		return err;
	}
	if (err)
		log_event(LOG_WARN, "upgrade_fresh",
			  "iface=%s from_abi=%u to_abi=%u pins=%s reason=\"%s\" key_state=new",
			  a->iface, a->old_abi, SLUICE_ABI_VERSION, a->old_dir, why);
	return 0;
}

/*
 * Take over the replaced set's attachment: pin its XDP link in the new set
 * too, so that attachment__attach() swaps the program on it, or find its
 * TC filter; either way keep its program, to swap back if the start fails.
 */
static int adopt_attachment(struct attachment *a)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = a->ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, tc, .handle = TC_HANDLE, .priority = TC_PRIORITY);
	struct bpf_link_info info = {};
	char from[PATH_MAX], to[PATH_MAX];
	__u32 len = sizeof(info);
	int fd, err = 0;

	if (pin_path(from, a->old_dir, SLUICE_PIN_LINK) ||
	    pin_path(to, a->pin_dir, SLUICE_PIN_LINK))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(from);
	if (fd < 0 && errno != ENOENT)
		return -errno;
	if (fd < 0 && (!a->ifindex || bpf_tc_query(&hook, &tc)))
		return 0; /* neither: nothing runs that a failed start must put back */
	if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	a->prev_prog_fd = err ? -1 : bpf_prog_get_fd_by_id(fd >= 0 ? info.prog_id : tc.prog_id);
	if (!err && a->prev_prog_fd < 0)
		err = -errno;
	if (!err) /* from here attachment__close() closes prev_prog_fd */
		a->prev_mode = fd >= 0 ? SLUICE_ATTACH_NATIVE : SLUICE_ATTACH_TC;
	if (!err && fd >= 0 && bpf_obj_pin(fd, to))
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (err)
		pr_warn("cannot take over the attachment of '%s' from '%s': %s", a->iface,
			a->old_dir, strerror(-err));
	return err;
}

/*
 * A new set's ctl carries our ABI version; one that replaced a set without
 * its entries starts in the replaced set's attach mode, so that attaching
 * swaps the program instead of adding a second one.
 */
static int init_ctl(struct attachment *a)
{
	struct sluice_ctl ctl;
	int err;

	if (!a->staged)
		return 0;
	err = maps__read_ctl(&a->maps, &ctl);
	if (err)
		return err;
	ctl.abi_version = SLUICE_ABI_VERSION;
	if (!a->carried)
		ctl.attach = a->prev_mode;
	return maps__write_ctl(&a->maps, &ctl);
}

/* Take the replaced set's entries and attachment, and mark the new set ours. */
static int take_over(struct attachment *a)
{
	int err = a->old_dir[0] ? carry_set(a) : 0;

	if (!err && a->old_dir[0])
		err = adopt_attachment(a);
	if (!err)
		err = init_ctl(a);
	if (err)
		pr_warn("cannot initialise maps in '%s': %s", a->pin_dir, strerror(-err));
	return err;
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
	else if (err == -EPERM || err == -EACCES)
		report_privilege("cannot probe the kernel's BPF features", err);
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

/*
 * Make and check <pin_root>/<iface>, find the set pinned there, and lock
 * the interface. Nothing else is created before the lock is held.
 */
static int open_iface_dir(struct attachment *a, const char *pin_root)
{
	int err = loader_pin_dir(a->iface_dir, sizeof(a->iface_dir), pin_root, a->iface);

	if (!err)
		err = check_bpffs(pin_root);
	if (err)
		return err;
	a->made_dir = access(a->iface_dir, F_OK);
	err = mkdir_p(a->iface_dir);
	if (err == -EPERM || err == -EACCES) {
		report_privilege("cannot create the pin directory", err);
		return err;
	}
	if (err) {
		pr_warn("cannot create pin directory '%s/%s': %s; is bpffs mounted on %s?",
			pin_root, a->iface, strerror(-err), pin_root);
		return err;
	}
	err = check_owned(pin_root) ?: check_owned(a->iface_dir);
	if (err)
		return err;
	err = loader_find_set(a->old_dir, a->iface_dir);
	if (err == -ENOENT)
		a->old_dir[0] = '\0';
	else if (err)
		return err;
	return lock_pin_dir(a, a->old_dir);
}

/* Open the object with its maps pinned in a->pin_dir, size them, and load it. */
static int load_object(struct attachment *a, __u32 max_keys, __u32 max_bans,
		       const struct load_opts *o)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = a->pin_dir);
	__u64 ttl_ns = o->deny_ttl_ns ? o->deny_ttl_ns : SLUICE_DENY_TTL_NS;
	int err;

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
		err = bpf_map__set_max_entries(a->skel->maps.sluice_ban_host,
					       max_bans ?: SLUICE_BAN_ENTRIES);
	if (!err)
		err = bpf_map__set_max_entries(a->skel->maps.sluice_ban,
					       max_bans ?: SLUICE_BAN_ENTRIES);
	if (!err)
		err = sluice_bpf__load(a->skel);
	if (err) {
		report_rejection(a->iface, err);
		return err;
	}
	a->prog_fd = bpf_program__fd(a->skel->progs.sluice_xdp);
	a->tc_prog_fd = bpf_program__fd(a->skel->progs.sluice_tc);
	err = borrow_maps(a);
	if (err)
		pr_warn("cannot find the maps of the XDP object: %s", strerror(-err));
	return err;
}

int attachment__load(struct attachment *a, const char *pin_root, const char *iface,
		     const struct load_opts *o)
{
	__u32 max_keys = o->max_keys, max_bans = o->max_bans;
	int err;

	memset(a, 0, sizeof(*a));
	a->link_fd = -1;
	a->lock_fd = -1;
	a->prev_prog_fd = -1;
	maps__init(&a->maps);
	snprintf(a->iface, sizeof(a->iface), "%s", iface);
	a->ifindex = if_nametoindex(iface);
	err = check_kernel(iface); /* before anything is created */
	if (!err)
		err = open_iface_dir(a, pin_root);
	if (!err)
		err = choose_set(a, &max_keys, &max_bans);
	if (!err)
		err = load_object(a, max_keys, max_bans, o);
	if (!err)
		err = take_over(a);
	if (a->carried)
		a->reused = 1;
	return err;
}

/* Which way merge_pinned() merges key state, and whether the target is written meanwhile. */
enum merge_way {
	MERGE_TO_NEW_IDLE, /* the old set's into the new one, whose program is not attached */
	MERGE_TO_NEW,	   /* the old set's into the new one, whose program runs */
	MERGE_TO_OLD,	   /* the new set's into the old one (a swap back) */
};

/*
 * The keys one program charged while the other set's program ran count
 * in the set that runs: maps__merge_state() between the set pinned in
 * @dir (the old one) and @maps (the new one), just before a swap and
 * again after it. What a key is charged between its merge and the swap
 * is lost: for each key, at most what its rate admits in that time. A
 * failure costs at most those charges, so it is reported and the swap
 * stands.
 */
static void merge_pinned(const char *dir, const struct sluice_maps *maps, enum merge_way way,
			 const char *iface)
{
	struct sluice_maps pinned;
	int err = maps__open_pinned(&pinned, dir);
	__u64 now;

	if (!err) {
		now = sluice_gcra_ticks(mono_ns());
		err = way == MERGE_TO_OLD
			      ? maps__merge_state(maps, &pinned, now, 0)
			      : maps__merge_state(&pinned, maps, now, way == MERGE_TO_NEW_IDLE);
		maps__close(&pinned);
	}
	if (err)
		pr_warn("cannot merge the keys charged while the program of '%s' was swapped: %s",
			iface, strerror(-err));
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

/*
 * Put back what a start that failed changed: the replaced set's program
 * on its link or TC filter, or, when no set was replaced, the attachment
 * this start made; then remove the new set's pins and, if this start made
 * it, the interface's directory. The replaced set's pins were never touched.
 */
static void detach_tc(const char *iface);

static void roll_back(struct attachment *a)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = a->ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, tc, .handle = TC_HANDLE, .priority = TC_PRIORITY,
		    .prog_fd = a->prev_prog_fd, .flags = BPF_TC_F_REPLACE);
	int err = 0, swapped = a->carried && a->mode;

	if (swapped) /* what the new program charged: just before the swap back, and after */
		merge_pinned(a->old_dir, &a->maps, MERGE_TO_OLD, a->iface);
	if (a->prev_mode == SLUICE_ATTACH_NATIVE && a->link_fd >= 0)
		err = bpf_link_update(a->link_fd, a->prev_prog_fd, NULL) ? -errno : 0;
	else if (a->prev_mode == SLUICE_ATTACH_TC && a->mode == SLUICE_ATTACH_TC)
		err = bpf_tc_attach(&hook, &tc);
	else if (a->prev_mode == SLUICE_ATTACH_NONE && a->link_fd >= 0)
		err = bpf_link_detach(a->link_fd) ? -errno : 0;
	else if (a->prev_mode == SLUICE_ATTACH_NONE && a->mode == SLUICE_ATTACH_TC)
		detach_tc(a->iface);
	if (!err && a->xdp_share && a->mode == SLUICE_ATTACH_NATIVE && a->link_fd < 0)
		err = dispatch_detach(a->ifindex, a->maps.fd[SLUICE_MAP_CTL]);
	if (err == -ENOENT)
		err = 0;
	if (err)
		pr_warn("cannot put back the program of '%s' after a failed start: %s", a->iface,
			strerror(-err));
	else if (swapped)
		merge_pinned(a->old_dir, &a->maps, MERGE_TO_OLD, a->iface);
	err = unpin_set(a->pin_dir, 0);
	if (err)
		pr_warn("cannot remove the pins of a failed start in '%s': %s", a->pin_dir,
			strerror(-err));
	if (a->made_dir && rmdir(a->iface_dir) && errno != ENOTEMPTY)
		pr_warn("cannot remove '%s': %s", a->iface_dir, strerror(errno));
	log_event(LOG_INFO, "rollback", "iface=%s pins=%s enforcement=%s", a->iface, a->pin_dir,
		  a->old_dir[0] ? "previous" : "none");
	a->staged = 0;
}

int attachment__commit(struct attachment *a)
{
	char final[PATH_MAX];
	int err;

	if (!a->staged)
		return 0;
	err = set_dir(final, a->iface_dir, SLUICE_ABI_VERSION, 0);
	if (!err && a->carried)
		merge_pinned(a->old_dir, &a->maps, MERGE_TO_NEW, a->iface);
	if (!err && rename(a->pin_dir, final))
		err = -errno;
	if (err) {
		pr_warn("cannot move the pins of '%s' into '%s': %s", a->iface, final,
			strerror(-err));
		return err;
	}
	a->staged = 0;
	if (a->old_dir[0]) {
		log_event(
			LOG_INFO, "upgrade",
			"iface=%s from_abi=%u to_abi=%u from=%s pins=%s key_state=%s copy_ms=%llu",
			a->iface, a->old_abi, SLUICE_ABI_VERSION, a->old_dir, final,
			a->carried ? "carried" : "new",
			(unsigned long long)(a->copy_ns / SLUICE_NSEC_PER_MSEC));
		if (a->xdp_share && a->link_fd < 0)
			detach_dispatched(a->old_dir, a->iface);
		err = unpin_set(a->old_dir, !strcmp(a->old_dir, a->iface_dir));
		if (err)
			pr_warn("cannot remove the replaced pins in '%s': %s; remove them by hand",
				a->old_dir, strerror(-err));
	}
	snprintf(a->pin_dir, sizeof(a->pin_dir), "%s", final);
	a->old_dir[0] = '\0'; /* replaced: a later attach has nothing to merge */
	a->carried = 0;
	return 0;
}

/* Create the native XDP link, sluice's own, and pin it at @path; -errno. */
static int create_link(struct attachment *a, const char *path)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = XDP_FLAGS_DRV_MODE);
	int err;

	a->link_fd = bpf_link_create(a->prog_fd, a->ifindex, BPF_XDP, &opts);
	if (a->link_fd < 0) {
		err = -errno;
		a->link_fd = -1;
		return err;
	}
	if (bpf_obj_pin(a->link_fd, path)) {
		err = -errno;
		pr_warn("cannot pin XDP link at '%s': %s", path, strerror(-err));
		bpf_link_detach(a->link_fd);
		close(a->link_fd);
		a->link_fd = -1;
		return err;
	}
	return 0;
}

/*
 * Attach natively. An interface attached through a pinned bpf_link of
 * sluice's keeps it: the program is replaced on the link, with no gap (an
 * upgrade re-pins the old set's link in the new set first), and sharing
 * the interface waits for a detach. Otherwise sluice creates and pins a
 * link of its own, or with --xdp-share joins (or creates) the interface's
 * libxdp dispatcher (kernel/dispatch.c).
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
			if (a->xdp_share)
				log_event(
					LOG_WARN, "xdp_link_kept",
					"iface=%s link=%s hint=\"this interface is attached "
					"through sluice's own bpf_link; to share it with other XDP "
					"programs through libxdp, run sluice detach and start "
					"again\"",
					a->iface, path);
			return 0;
		}
		/* A link whose interface went away: start over. */
		close(a->link_fd);
		a->link_fd = -1;
		unlink(path);
	}
	if (!a->xdp_share)
		return create_link(a, path);
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
	if (a->carried) /* what the old program charged since the copy: just before the swap */
		merge_pinned(a->old_dir, &a->maps, MERGE_TO_NEW_IDLE, a->iface);
	err = a->mode ? attach_mode(a, a->mode) : attach_auto(a);
	if (err == -EEXIST && a->xdp_share)
		return err; /* dispatch.c named the program that holds the hook */
	if (err && a->mode != SLUICE_ATTACH_TC && (err == -EBUSY || err == -EEXIST))
		pr_warn("cannot attach the XDP program to '%s': another XDP program is attached "
			"(ip link show dev %s); add --xdp-share to run beside it in libxdp's "
			"dispatcher, or use --mode tc",
			a->iface, a->iface);
	else if (err)
		pr_warn("cannot attach the %s program to '%s': %s",
			a->mode == SLUICE_ATTACH_TC ? "TC" : "XDP", a->iface, strerror(-err));
	if (err)
		return err;
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
	if (a->staged)
		roll_back(a);
	if (a->link_fd >= 0)
		close(a->link_fd);
	a->link_fd = -1;
	if (a->prev_mode != SLUICE_ATTACH_NONE)
		close(a->prev_prog_fd);
	a->prev_mode = SLUICE_ATTACH_NONE;
	sluice_bpf__destroy(a->skel);
	a->skel = NULL;
	if (a->lock_fd >= 0)
		close(a->lock_fd);
	a->lock_fd = -1;
}

int loader_unpin(const char *pin_dir)
{
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(pin_dir);
	int err = 0;

	/* readdir_r() is deprecated (glibc 2.24); readdir() on a DIR of our own is safe. */
	/* cppcheck-suppress readdirCalled */
	while (d && (e = readdir(d)) && !err)
		if (e->d_type == DT_DIR &&
		    !strncmp(e->d_name, SLUICE_PIN_SET, strlen(SLUICE_PIN_SET)))
			err = pin_path(dir, pin_dir, e->d_name) ?: unpin_set(dir, 0);
	if (d)
		closedir(d);
	return err ? err : unpin_set(pin_dir, 0);
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

int loader_xdp_priority(const char *pin_dir, const char *iface)
{
	int ifindex = if_nametoindex(iface), fd = open_pinned_ctl(pin_dir), prio;

	if (fd < 0)
		return fd;
	prio = ifindex ? dispatch_priority(ifindex, fd) : -ENOENT;
	close(fd);
	return prio;
}

/* Detach the program of the set in @dir and remove its pins. */
static int detach_set(const char *iface, const char *iface_dir, const char *dir)
{
	char path[PATH_MAX];
	int fd, mode = pinned_attach(dir);

	fd = pin_path(path, dir, SLUICE_PIN_LINK) ? -1 : bpf_obj_get(path);
	if (fd >= 0) {
		/* Force the detach even while an agent still holds the link. */
		if (bpf_link_detach(fd) && errno != ENOLINK)
			pr_warn("cannot detach XDP link of '%s': %s", iface, strerror(errno));
		close(fd);
	} else if (mode == SLUICE_ATTACH_NATIVE) {
		detach_dispatched(dir, iface);
	}
	if (mode == SLUICE_ATTACH_TC)
		detach_tc(iface);
	return unpin_set(dir, !strcmp(dir, iface_dir));
}

int loader_detach(const char *pin_root, const char *iface)
{
	char iface_dir[PATH_MAX], dir[PATH_MAX];
	int err;

	err = loader_pin_dir(iface_dir, sizeof(iface_dir), pin_root, iface);
	if (err || loader_find_set(dir, iface_dir)) {
		pr_warn("cannot detach from '%s': nothing pinned in '%s/%s'; is sluice attached to "
			"'%s'? ('sluice status' lists the interfaces it is attached to)",
			iface, pin_root, iface, iface);
		return -ENOENT;
	}
	/* Every set: this release's, and any an older one or a crash left. */
	do
		err = detach_set(iface, iface_dir, dir);
	while (!err && !loader_find_set(dir, iface_dir));
	if (!err && !set_dir(dir, iface_dir, SLUICE_ABI_VERSION, 1))
		err = unpin_set(dir, 0);
	if (!err && rmdir(iface_dir))
		err = -errno;
	if (err)
		pr_warn("cannot remove pins in '%s': %s", iface_dir, strerror(-err));
	else
		log_event(LOG_INFO, "detach", "iface=%s", iface);
	return err;
}
