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

#include "gcra.h"
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
 * A lump lease (no SLUICE_LEASE_F_RATE): the XDP program admits a packet
 * of cost c while now < expires, spent + c <= granted, reported <= spent
 * and spent + c - reported <= sluice_policy.lease_max (a lease lets no
 * more be spent than the fleet could ever grant one node, whatever the
 * agent wrote), counting c into spent by compare-and-swap, so concurrent
 * CPUs never spend more than granted in total.
 *
 * A rate lease (SLUICE_LEASE_F_RATE): while now < expires the program runs
 * the policy's own GCRA on the key at the node's share of the rate and
 * burst (sluice_share_admit()), its TAT in sluice_spend.tat, and counts
 * what it admits into spent.
 *
 * Either way a packet denied adds c to denied (local demand the lease did
 * not cover). With no live lease the key is cold: the policy's share
 * (sluice_fail_state.share) decides, or with SLUICE_POLICY_F_COLD_STRICT
 * the packet is dropped.
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
	/* A rate lease's share (sluice_share_set()), in the share's clock: */
	__u64 share; /* of the policy's rate, in 2^-SLUICE_SHARE_SHIFT */
	__u64 tol;   /* the burst share: ticks of the policy's increments */
	__u64 vbase; /* the share's clock at base */
	__u64 base;  /* ticks of the kernel's clock */
	__u64 floor; /* the TAT is at least this (a raised burst arrives spent) */
};
SLUICE_ASSERT_SIZE(struct sluice_lease, 120);

enum sluice_lease_flag {
	SLUICE_LEASE_F_FROZEN = 1 << 0,	  /* idle: granted lowered to spent, no call */
	SLUICE_LEASE_F_RELEASED = 1 << 1, /* frozen, and what was left handed back */
	SLUICE_LEASE_F_STARVED = 1 << 2,  /* the last answer held less than wanted */
	SLUICE_LEASE_F_RATE = 1 << 3,	  /* written from a rate lease, not a lump */
};

struct sluice_spend {
	__u64 spent;  /* units admitted from the lease */
	__u64 denied; /* units denied for want of lease */
	__u64 tat;    /* a rate lease's TAT, in its share's clock */
};
SLUICE_ASSERT_SIZE(struct sluice_spend, 24);

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

/*
 * A rate lease's share runs the policy's GCRA on a clock of its own, which
 * runs at the share's part of the kernel's: share / 2^SLUICE_SHARE_SHIFT
 * of a tick a tick, so the policy's increments refill at the share's rate
 * and a tolerance of b units' increments holds b units. When the agent
 * changes a share it moves the clock, not the TAT (which the program
 * owns): by the tolerance's change, backwards for a raise and forwards
 * for a lowering, and raises the floor to where the clock was. So the
 * level (units the key may still spend) is kept when the burst rises and
 * cut to the new burst when it falls, and a share that starts, starts
 * empty (docs/shared-budget.md, "How the kernel enforces a share").
 */
#define SLUICE_SHARE_SHIFT 32
#define SLUICE_SHARE_ONE   (1ULL << SLUICE_SHARE_SHIFT) /* the whole rate */

/* Whether tick @a is after tick @b (mod 2^64). */
SLUICE_INLINE int sluice_ticks_after(__u64 a, __u64 b)
{
	return (__s64)(a - b) > 0;
}

/*
 * The share's clock of @l at @now (ticks): vbase, plus the ticks since
 * base times the share, rounded down. A @now before base reads vbase, a
 * share above the whole rate counts as the whole rate. The ticks since
 * base (< 2^63) are multiplied in two halves, each product < 2^64.
 */
SLUICE_INLINE __u64 sluice_share_clock(const struct sluice_lease *l, __u64 now)
{
	__u64 d = sluice_ticks_after(now, l->base) ? now - l->base : 0;
	__u64 share = l->share < SLUICE_SHARE_ONE ? l->share : SLUICE_SHARE_ONE;

	return l->vbase + (d >> SLUICE_SHARE_SHIFT) * share +
	       (((d & (SLUICE_SHARE_ONE - 1)) * share) >> SLUICE_SHARE_SHIFT);
}

/*
 * Decide a packet of increment @incr (the policy's own) on a rate lease
 * whose key's TAT is @tat, at its share's clock @clock, under its @floor
 * and burst share @tol. As sluice_gcra_admit(): 1 and *@new_tat to admit.
 */
SLUICE_INLINE int sluice_share_admit(__u64 tat, __u64 floor, __u64 clock, __u64 incr, __u64 tol,
				     __u64 *new_tat)
{
	__u64 retry;

	return sluice_gcra_admit(sluice_ticks_after(floor, tat) ? floor : tat, clock, incr, tol,
				 new_tat, &retry);
}

/*
 * What @l lets its key spend at once at @now (ticks), its TAT @tat: its
 * level, in ticks of the policy's increments (at most its tol). The agent
 * reads it when it gives a share up, for the store's bank
 * (docs/shared-budget.md, "The bank").
 */
SLUICE_INLINE __u64 sluice_share_level(const struct sluice_lease *l, __u64 tat, __u64 now)
{
	__u64 ahead = sluice_gcra_ahead(sluice_ticks_after(l->floor, tat) ? l->floor : tat,
					sluice_share_clock(l, now), l->tol);

	return ahead < l->tol ? l->tol - ahead : 0;
}

/*
 * Give @l, at @now (ticks), the share @share of the rate and the burst
 * share @tol (ticks of the policy's increments). A live rate lease's
 * clock goes on from where it is; any other starts at @now, its burst
 * spent. Nothing changes when the share is the same.
 */
SLUICE_INLINE void sluice_share_set(struct sluice_lease *l, __u64 now, int live, __u64 share,
				    __u64 tol)
{
	__u64 clock = live ? sluice_share_clock(l, now) : now, old_tol = live ? l->tol : 0;

	if (live && share == l->share && tol == l->tol)
		return;
	if (!live || sluice_ticks_after(clock, l->floor))
		l->floor = clock;
	l->vbase = clock + old_tol - tol;
	l->base = now;
	l->share = share;
	l->tol = tol;
}

/*
 * Let @l's key spend @credit ticks of the policy's increments more at
 * once: the share's clock moves on by that much. The program's GCRA caps
 * the level at the burst share, so a credit never lets the key hold more.
 */
SLUICE_INLINE void sluice_share_credit(struct sluice_lease *l, __u64 credit)
{
	l->vbase += credit;
}

#endif /* SLUICE_ABI_LEASE_H */
