/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A policy as the XDP program reads it: the value of sluice_policy, its
 * GCRA limits, and the enums of its fields. user/policy/compile.c writes
 * it from the policy file.
 *
 * Part of the ABI: abi.h says how it may change.
 */
#ifndef SLUICE_ABI_POLICY_H
#define SLUICE_ABI_POLICY_H

#include "compiler.h"
#include "fail.h"

/* Limits that size the policy maps. */
#define SLUICE_MAX_POLICIES 4096 /* policy ids are 0 .. SLUICE_MAX_POLICIES - 1 */
#define SLUICE_POLICY_GENS  2	 /* policy and match tables are double-buffered */
#define SLUICE_NAME_LEN	    32	 /* policy name including the terminating NUL */

/* Cost unit of a policy: what one GCRA "cell" is. */
enum sluice_cost {
	SLUICE_COST_PKTS = 0,  /* every packet costs 1 */
	SLUICE_COST_BYTES = 1, /* a packet costs its L2 frame length (no FCS) */
	SLUICE_COST_MAX,
};

/* What a policy does with a packet its limit denies. */
enum sluice_mode {
	SLUICE_MODE_ENFORCE = 0, /* drop it */
	SLUICE_MODE_SHADOW = 1,	 /* count it as would-drop, pass it, leave the key untouched */
	SLUICE_MODE_MAX,
};

/* Where a policy's limit holds (struct sluice_policy.scope). */
enum sluice_scope {
	SLUICE_SCOPE_NODE = 0,	  /* this node's own limit */
	SLUICE_SCOPE_CLUSTER = 1, /* one limit across the fleet, through the store */
	SLUICE_SCOPE_MAX,
};

/* What a limit is for; it sets the default fail modes (docs/fail-modes.md). */
enum sluice_class {
	SLUICE_CLASS_SHEDDING = 0, /* protects capacity: fails degraded, never closed by default */
	SLUICE_CLASS_ABUSE = 1,	   /* makes an attack uneconomical: degraded, then closed */
	SLUICE_CLASS_MAX,
};

/*
 * The unit of a byte limit's arithmetic: compile.c bounds the increment of
 * a cost this large, and larger ones (a GRO aggregate) are charged in whole
 * units of it (gcra.h, sluice_gcra_incr_cost()).
 */
#define SLUICE_COST_BYTES_SHIFT 16
#define SLUICE_COST_BYTES_MAX	(1ULL << SLUICE_COST_BYTES_SHIFT)

/* Bits of struct sluice_policy.flags. */
enum sluice_policy_flag {
	SLUICE_POLICY_F_TCP_SYN = 1 << 0,     /* only TCP segments with SYN set and ACK clear */
	SLUICE_POLICY_F_LOCAL_LIMIT = 1 << 1, /* degraded is an explicit local_limit: not shared */
	SLUICE_POLICY_F_COLD_STRICT = 1 << 2, /* cluster scope: a key without a lease is dropped
					       * (cold_mode: strict), not held to the share */
};

/*
 * One GCRA limit. The emission interval of one cost unit is
 * interval_mant / 2^interval_shift ticks; tolerance is burst × that
 * interval. compile.c derives both and guarantees the bounds gcra.h states.
 * batch: how many cost units a CPU may take from a key at once and spend
 * on its own (bpf/limit.bpf.h, "Per-CPU batches"); 0 takes none ahead,
 * what a program older than the field did.
 */
struct sluice_gcra {
	__u64 interval_mant; /* ticks << interval_shift per cost unit */
	__u64 tolerance;     /* ticks: burst × interval, at most SLUICE_GCRA_TOL_MAX */
	__u8 interval_shift; /* 0 .. SLUICE_GCRA_SHIFT_MAX */
	__u8 reserved[3];
	__u32 batch; /* 0 .. SLUICE_BATCH_MAX cost units (gcra.h) */
};
SLUICE_ASSERT_SIZE(struct sluice_gcra, 24);
SLUICE_ASSERT_OFFSET(struct sluice_gcra, batch, 20);

/* Value of sluice_policy, indexed by gen * SLUICE_MAX_POLICIES + id. */
struct sluice_policy {
	struct sluice_gcra limit;    /* normal enforcement */
	struct sluice_gcra degraded; /* the local bound, in SLUICE_FAIL_DEGRADED */
	__u64 closed_after_ns;	     /* agent lost and degraded this long: closed; 0 never */
	__u32 id;		     /* stable policy id: sluice_key.policy_id and stats index */
	__u8 cost;		     /* enum sluice_cost */
	__u8 prefix4;		     /* key bits of an IPv4 source, counted in the mapped address:
				      * SLUICE_V4MAPPED_BITS + IPv4 prefix; 0 = one key for all */
	__u8 prefix6;		     /* key bits of an IPv6 source, 0 .. 128; 0 = one key for all */
	__u8 flags;		     /* enum sluice_policy_flag */
	__u8 mode;		     /* enum sluice_mode */
	__u8 on_agent_loss;	     /* enum sluice_fail, applied by the XDP program itself */
	__u8 src_set;		     /* 1 + bit of sluice_addr_val.sets the source needs; 0: any */
	__u8 dst_set;		     /* likewise for the destination */
	__u8 on_store_error;	     /* enum sluice_fail; the agent applies it (sluice_fail) */
	__u8 class;		     /* enum sluice_class, for status */
	__u8 scope;		     /* enum sluice_scope */
	__u8 reserved[1];
	char name[SLUICE_NAME_LEN]; /* NUL-terminated, for status without the agent */
	__u64 lease_max;	    /* cluster scope, cost units: the most one written lease lets
				     * the program spend past its reported, whatever its granted:
				     * burst + rate × SLUICE_LEASE_KERNEL_SYNCS sync intervals */
};
SLUICE_ASSERT_SIZE(struct sluice_policy, 112);
SLUICE_ASSERT_OFFSET(struct sluice_policy, name, 72);
SLUICE_ASSERT_OFFSET(struct sluice_policy, lease_max, 104);

#endif /* SLUICE_ABI_POLICY_H */
