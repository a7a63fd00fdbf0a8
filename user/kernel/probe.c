// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Each probe asks the running kernel to accept a small map, program or
 * command, and never reads its version: distributions backport BPF features.
 * libbpf's probes cannot tell a missing feature from a missing privilege
 * (EPERM reads as an absent map type but a present helper), so
 * probe_kernel() first checks that it may create a map at all.
 *
 * Not probed, being older than any feature here: hash and array maps,
 * BPF_F_NO_PREALLOC, BPF-to-BPF calls (4.16), JMP32 (-mcpu=v3, 5.1),
 * global data (5.2, which libbpf checks itself), and what tc mode needs:
 * clsact (4.5), gso_segs (5.1) and gso_size (5.7) in struct __sk_buff.
 * Native XDP is the driver's to offer: the attach finds out.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/log.h"
#include "kernel/probe.h"

#define PROBE_LICENSE "Dual BSD/GPL"
#define PROBE_IFACE   "lo" /* has no native XDP: the link probe's attach stops short */
#define ENOTSUPP      524  /* the kernel's, not in UAPI: a map type without the operation */
#define STACK_SLOT    (-(int)sizeof(__u64)) /* the cmpxchg probe's one stack slot, off r10 */

#define INSN_MOV_IMM(dst, val)                                                                     \
	{                                                                                          \
		.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = (dst), .imm = (val)                \
	}
#define INSN_EXIT                                                                                  \
	{                                                                                          \
		.code = BPF_JMP | BPF_EXIT                                                         \
	}

/* An XDP program of @insns_bytes of @insns: its fd, or -errno. */
static int load_xdp(const struct bpf_insn *insns, size_t insns_bytes)
{
	int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, NULL, PROBE_LICENSE, insns,
			       insns_bytes / sizeof(*insns), NULL);

	return fd < 0 ? -errno : fd;
}

/* A one-entry array with @flags: its fd, or -errno. */
static int create_array(__u32 flags)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = flags);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, sizeof(__u32), sizeof(__u64), 1, &opts);

	return fd < 0 ? -errno : fd;
}

/* What an fd (or -errno) the kernel gave back says: -EINVAL is its "unknown". */
static int fd_verdict(int fd)
{
	if (fd == -EINVAL)
		return 0;
	if (fd < 0)
		return fd;
	return close(fd) ? -errno : 1;
}

static int probe_map_type(int type)
{
	return libbpf_probe_bpf_map_type(type, NULL);
}

static int probe_helper(int id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_XDP, id, NULL);
}

static int probe_map_flags(int flags)
{
	return fd_verdict(create_array(flags));
}

/* Before 5.12 the verifier rejects it: "BPF_XADD uses reserved fields". */
static int probe_cmpxchg(int unused)
{
	static const struct bpf_insn insns[] = {
		INSN_MOV_IMM(BPF_REG_1, 0),
		{ .code = BPF_STX | BPF_DW | BPF_MEM,
		  .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_1,
		  .off = STACK_SLOT },
		INSN_MOV_IMM(BPF_REG_0, 0),
		{ .code = BPF_STX | BPF_DW | BPF_ATOMIC,
		  .dst_reg = BPF_REG_10,
		  .src_reg = BPF_REG_1,
		  .off = STACK_SLOT,
		  .imm = BPF_CMPXCHG },
		INSN_MOV_IMM(BPF_REG_0, XDP_PASS),
		INSN_EXIT,
	};

	(void)unused;
	return fd_verdict(load_xdp(insns, sizeof(insns)));
}

/* -ENOENT: the whole map was read. Before 5.6 the command is unknown. */
static int probe_batch(int unused)
{
	__u32 key, out_batch, count = 1;
	__u64 value;
	int fd = create_array(0), err;

	(void)unused;
	if (fd < 0)
		return fd;
	err = bpf_map_lookup_batch(fd, NULL, &out_batch, &key, &value, &count, NULL) ? -errno : 0;
	if (close(fd))
		return -errno;
	if (!err || err == -ENOENT)
		return 1;
	return err == -EINVAL || err == -ENOTSUPP ? 0 : err;
}

/*
 * A native-mode link on lo: since 5.9 the kernel gets as far as the device,
 * which has no native XDP (-EOPNOTSUPP), or a program in the other mode
 * (-EEXIST, -EBUSY); before, BPF_LINK_CREATE knows no BPF_XDP (-EINVAL).
 * Should lo ever take it, closing the unpinned link detaches it.
 */
static int probe_xdp_link(int unused)
{
	static const struct bpf_insn insns[] = { INSN_MOV_IMM(BPF_REG_0, XDP_PASS), INSN_EXIT };
	LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = XDP_FLAGS_DRV_MODE);
	int ifindex = if_nametoindex(PROBE_IFACE), prog_fd, fd, err;

	(void)unused;
	if (!ifindex)
		return -errno;
	prog_fd = load_xdp(insns, sizeof(insns));
	if (prog_fd < 0)
		return prog_fd;
	fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &opts);
	err = fd < 0 ? -errno : 0;
	if (fd >= 0 && close(fd))
		err = -errno;
	if (close(prog_fd))
		return -errno;
	if (!err || err == -EOPNOTSUPP || err == -EEXIST || err == -EBUSY)
		return 1;
	return err == -EINVAL ? 0 : err;
}

/* The name, probe and arg of a row, from the kernel's own identifier. */
#define MAP_TYPE(type) #type, probe_map_type, type
#define HELPER(func)   "bpf_" #func "()", probe_helper, BPF_FUNC_##func

const struct probe_feature probe_features[PROBE_MAX] = {
	/* name, probe, arg, since */
	[PROBE_CMPXCHG] = { "BPF_CMPXCHG", probe_cmpxchg, 0, "5.12" },
	[PROBE_COARSE_CLOCK] = { HELPER(ktime_get_coarse_ns), "5.11" },
	[PROBE_XDP_LINK] = { "XDP bpf_link", probe_xdp_link, 0, "5.9" },
	[PROBE_BATCH] = { "BPF_MAP_LOOKUP_BATCH", probe_batch, 0, "5.6" },
	[PROBE_MMAPABLE] = { "BPF_F_MMAPABLE", probe_map_flags, BPF_F_MMAPABLE, "5.5" },
	[PROBE_JIFFIES64] = { HELPER(jiffies64), "5.5" },
	[PROBE_LPM_TRIE] = { MAP_TYPE(BPF_MAP_TYPE_LPM_TRIE), "4.11" },
	[PROBE_LRU_HASH] = { MAP_TYPE(BPF_MAP_TYPE_LRU_HASH), "4.10" },
	[PROBE_PERCPU_ARRAY] = { MAP_TYPE(BPF_MAP_TYPE_PERCPU_ARRAY), "4.6" },
};

static int probe_all(const struct probe_feature **missing)
{
	const struct probe_feature *f;
	int i, ret, fd = create_array(0);

	*missing = NULL;
	if (fd < 0)
		return fd;
	if (close(fd))
		return -errno;
	for (i = 0; i < PROBE_MAX; i++) {
		f = &probe_features[i];
		ret = f->probe(f->arg);
		if (ret < 0) {
			pr_debug("cannot probe kernel feature '%s': %s", f->name, strerror(-ret));
			return ret;
		}
		pr_debug("kernel feature '%s' (Linux %s+): %s", f->name, f->since,
			 ret ? "present" : "absent");
		if (!ret && !*missing)
			*missing = f;
	}
	return *missing ? -EOPNOTSUPP : 0;
}

int probe_kernel(const struct probe_feature **missing)
{
	static const struct probe_feature *absent;
	static int done, err;

	if (!done) {
		err = probe_all(&absent);
		done = 1;
	}
	*missing = absent;
	return err;
}

int probe_refusal(char *buf, size_t len, const struct probe_feature *f)
{
	struct utsname u;
	int n;

	if (uname(&u))
		return -errno;
	n = snprintf(buf, len, "this kernel (%s) lacks '%s', which sluice needs (Linux %s+)",
		     u.release, f->name, f->since);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
