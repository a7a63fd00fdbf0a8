/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Kernel feature probes: what the XDP object and the map code need of the
 * running kernel, asked of the kernel itself before the object is loaded, so
 * that an old kernel gets a refusal naming the missing feature and the Linux
 * release that introduced it, not a verifier log. No libbpf object here.
 */
#ifndef SLUICE_PROBE_H
#define SLUICE_PROBE_H

#include <stddef.h>

/* Newest first: the first feature absent is the release to upgrade to. */
enum probe_id {
	PROBE_CMPXCHG = 0,  /* limit.bpf.h's compare-and-swap */
	PROBE_COARSE_CLOCK, /* limit.bpf.h's clock */
	PROBE_XDP_LINK,	    /* loader.c attaches and pins a link */
	PROBE_BATCH,	    /* maps.c, leases.c */
	PROBE_MMAPABLE,	    /* sluice_class, written through mmap() */
	PROBE_JIFFIES64,
	PROBE_LPM_TRIE,
	PROBE_LRU_HASH,
	PROBE_PERCPU_ARRAY,
	PROBE_MAX,
};

struct probe_feature {
	const char *name;      /* the kernel's name for it, as the refusal quotes it */
	int (*probe)(int arg); /* 1: present, 0: absent, or -errno: cannot tell */
	int arg;	       /* a map type, a helper id, map flags, or 0 */
	const char *since;     /* the Linux release that introduced it, "5.11" */
};

extern const struct probe_feature probe_features[PROBE_MAX];

/*
 * Probe the features of probe_features, once per process. Needs root
 * (CAP_BPF and CAP_NET_ADMIN); creates and closes a few maps and programs,
 * attaches nothing. 0: every feature is present. -EOPNOTSUPP: *@missing
 * names the newest feature absent. Any other -errno (-EPERM when not
 * root): a probe could not tell. Reports nothing but debug lines, one per
 * feature.
 */
int probe_kernel(const struct probe_feature **missing);

/*
 * The refusal for missing feature @f, into @buf of @len bytes:
 * "this kernel (<uname -r>) lacks '<name>', which sluice needs (Linux <since>+)".
 * 0, -ENAMETOOLONG when truncated, or -errno from uname().
 */
int probe_refusal(char *buf, size_t len, const struct probe_feature *f);

#endif /* SLUICE_PROBE_H */
