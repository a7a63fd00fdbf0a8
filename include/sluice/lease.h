/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Leases of the shared budget (docs/shared-budget.md): what the agent got
 * from the store for a hot key (sluice_lease), what the program spent of
 * it (sluice_spend), and the keys asking to become hot (sluice_hot).
 *
 * Part of the ABI: abi.h says how it may change.
 */
#ifndef SLUICE_ABI_LEASE_H
#define SLUICE_ABI_LEASE_H

#include "key.h"

#define SLUICE_LEASE_ENTRIES	  65536 /* hot keys of cluster-scoped policies holding a lease */
#define SLUICE_HOT_ENTRIES	  8192 /* cold keys asking to become hot, until the agent reads them */
#define SLUICE_LEASE_KERNEL_SYNCS 2    /* a written lease lives this many sync intervals */

/*
 * The shared budget's kernel side (docs/shared-budget.md). A hot key of a
 * cluster-scoped policy spends a lease of the fleet's budget that the agent
 * got from the store. Every field has one writer: sluice_lease is written
 * only by the agent, as whole values; sluice_spend only by the XDP program,
 * by atomic operations (the agent creates entries zeroed and deletes them,
 * never updates them). Both are keyed like sluice_state.
 *
 * The XDP program admits a packet of cost c while now < expires,
 * spent + c <= granted, reported <= spent and spent + c - reported <=
 * sluice_policy.lease_max (a lease lets no more be spent than the fleet
 * could ever grant one node, whatever the agent wrote), counting c into
 * spent by compare-and-swap, so
 * concurrent CPUs never spend more than granted in total; a packet it
 * denies adds c to denied (local demand the lease did not cover). With no
 * live lease the key is cold: the policy's share (sluice_fail_state.share)
 * decides, or with SLUICE_POLICY_F_COLD_STRICT the packet is dropped.
 */
struct sluice_lease {
	__u64 granted;	       /* units: spend while spent + cost <= granted (both only grow) */
	__u64 expires;	       /* ticks (gcra.h): spend nothing from then on; set before the
				* store's own expiry of the lease */
	__u64 reported;	       /* agent's: spent as last reported to the store */
	__u64 seen;	       /* agent's: spent + denied at the last sync, for the demand */
	__u64 want;	       /* agent's: units asked to hold at the last sync */
	__u64 topup_seen;      /* agent's: spent + denied at the last top-up */
	__u32 idle;	       /* agent's: consecutive syncs without local demand */
	__u32 flags;	       /* agent's: enum sluice_lease_flag */
	struct sluice_key key; /* the entry's own key: see lease_live() in the program */
	__u32 reserved;
};
SLUICE_ASSERT_SIZE(struct sluice_lease, 80);

enum sluice_lease_flag {
	SLUICE_LEASE_F_FROZEN = 1 << 0,	  /* idle: granted lowered to spent, no call */
	SLUICE_LEASE_F_RELEASED = 1 << 1, /* frozen, and what was left handed back */
	SLUICE_LEASE_F_STARVED = 1 << 2,  /* the last answer held less than wanted */
	SLUICE_LEASE_F_RATE = 1 << 3,	  /* written from a rate lease, not a lump */
};

struct sluice_spend {
	__u64 spent;  /* units admitted from the lease */
	__u64 denied; /* units denied for want of lease */
};
SLUICE_ASSERT_SIZE(struct sluice_spend, 16);

/*
 * Value of sluice_hot: a key of a cluster-scoped policy without a live
 * lease whose local demand crossed the hot threshold (half its share's
 * burst used, or a drop; in strict mode, any packet). Written by the XDP
 * program (create only), read and deleted by the agent.
 */
struct sluice_hot {
	__u64 since; /* ticks (gcra.h) of the first such packet */
};
SLUICE_ASSERT_SIZE(struct sluice_hot, 8);

#endif /* SLUICE_ABI_LEASE_H */
