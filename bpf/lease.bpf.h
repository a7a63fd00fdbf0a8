/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Leases of the shared budget and requests for them (docs/shared-budget.md).
 * A key of a cluster-scoped policy is cold, held by its node's share of the
 * limit (layer_cold()), until its demand asks the agent to make it hot
 * (hot_request(), sluice_hot); the agent then grants the node a lease
 * (sluice_lease) and the packets spend it (sluice_spend), one
 * compare-and-swap each, until it expires. The agent writes the leases and
 * drains the requests; this side reads the leases, spends them and asks.
 */
#ifndef SLUICE_LEASE_BPF_H
#define SLUICE_LEASE_BPF_H

#include "limit.bpf.h"
#include "maps.bpf.h"

static __always_inline int key_equal(const struct sluice_key *a, const struct sluice_key *b)
{
	return a->policy_id == b->policy_id && a->addr32[0] == b->addr32[0] &&
	       a->addr32[1] == b->addr32[1] && a->addr32[2] == b->addr32[2] &&
	       a->addr32[3] == b->addr32[3];
}

/* What a live lease lets the program spend (lease_live()). */
struct lease_view {
	union {
		struct {		/* a lump: */
			__u64 granted;	/* spend while spent + cost <= granted */
			__u64 reported; /* ... and spent + cost - reported <= the policy's lease_max
					 */
		};
		struct {	     /* a rate lease: */
			__u64 clock; /* its share's clock now */
			__u64 tol;   /* its burst share, at most the policy's tolerance */
		};
	};
	__u64 floor; /* a rate lease's: its TAT is at least this */
	__u32 rate;  /* SLUICE_LEASE_F_RATE */
};

/*
 * The live lease of @key at @now (ticks), or NULL: none, expired (the agent
 * or the store is late: the key is cold again), or being torn down. A rate
 * lease's burst share is capped at @tol_max, the policy's tolerance.
 *
 * A hash map recycles a replaced or deleted element at once (kernel 6.1+,
 * per-CPU free lists), so a pointer we hold may meanwhile carry another
 * key's lease: the agent replacing one key's lease and then writing the
 * next one does exactly that. The kernel writes a new element's key before
 * its value, so reading the fields first and the entry's own key last
 * tells: a key that is still ours means the fields we read were ours.
 */
static __always_inline struct sluice_spend *lease_live(const struct sluice_key *key, __u64 now,
						       __u64 tol_max, struct lease_view *v)
{
	const struct sluice_lease *l = bpf_map_lookup_elem(&sluice_lease, key);
	__u64 expires;

	if (!l)
		return NULL;
	expires = *(volatile __u64 *)&l->expires;
	v->rate = *(volatile __u32 *)&l->flags & SLUICE_LEASE_F_RATE;
	if (v->rate) {
		v->clock = sluice_share_clock(l, now);
		v->tol = *(volatile __u64 *)&l->tol;
		v->tol = v->tol < tol_max ? v->tol : tol_max;
		v->floor = *(volatile __u64 *)&l->floor;
	} else {
		v->granted = *(volatile __u64 *)&l->granted;
		v->reported = *(volatile __u64 *)&l->reported;
	}
	asm volatile("" ::: "memory"); /* the fields before the key */
	if ((__s64)(expires - now) <= 0 || !key_equal(&l->key, key))
		return NULL;
	return bpf_map_lookup_elem(&sluice_spend, key);
}

/*
 * Spend @cost units of a live lump lease (@s, as @v allows), or only look
 * when @peek. The compare-and-swap makes concurrent CPUs spend at most
 * granted in total; a lost race re-reads and decides again. A denial adds
 * @cost to the local demand the agent reads (denied).
 *
 * The ceiling (#12): whatever granted says, a lease lets no more than
 * @lease_max be spent past its reported (the spent the agent last told the
 * store of, which it writes as granted's base), and a reported beyond what
 * was spent is no lease the agent writes: nothing passes. So no lease
 * written into the map, by a bug or by hand, lifts the limit by more than
 * the policy's burst plus its rate over a lease's life.
 */
static __always_inline enum limit_result lease_spend(struct sluice_spend *s,
						     const struct lease_view *v, __u64 lease_max,
						     __u64 cost, int peek)
{
	__u64 old;
	int i;

	for (i = 0; i < SLUICE_CAS_RETRIES; i++) {
		old = *(volatile __u64 *)&s->spent;
		if (old + cost > v->granted || old < v->reported ||
		    old + cost - v->reported > lease_max) {
			__sync_fetch_and_add(&s->denied, cost);
			return LIMIT_DENY;
		}
		if (peek)
			return LIMIT_ADMIT;
		if (__sync_val_compare_and_swap(&s->spent, old, old + cost) == old)
			return LIMIT_ADMIT;
	}
	return LIMIT_CAS_EXHAUSTED;
}

/*
 * Decide @cost units of increment @incr on a live rate lease (@s, as @v
 * allows): the policy's GCRA at the share, its TAT moved by
 * compare-and-swap, and what it admits counted into spent, or only look
 * when @peek. A denial adds @cost to denied. The ceiling: the share's
 * clock runs at most at the kernel's and its burst is at most the
 * policy's, so no lease written into the map lets a node admit more than
 * the policy's own limit.
 */
static __always_inline enum limit_result
share_spend(struct sluice_spend *s, const struct lease_view *v, __u64 incr, __u64 cost, int peek)
{
	__u64 old, tat;
	int i;

	for (i = 0; i < SLUICE_CAS_RETRIES; i++) {
		old = *(volatile __u64 *)&s->tat;
		if (!sluice_share_admit(old, v->floor, v->clock, incr, v->tol, &tat)) {
			__sync_fetch_and_add(&s->denied, cost);
			return LIMIT_DENY;
		}
		if (peek)
			return LIMIT_ADMIT;
		if (__sync_val_compare_and_swap(&s->tat, old, tat) == old) {
			__sync_fetch_and_add(&s->spent, cost);
			return LIMIT_ADMIT;
		}
	}
	return LIMIT_CAS_EXHAUSTED;
}

/*
 * Ask the agent to make @key hot: one entry per key until the agent takes
 * it, so a flood costs a lookup per packet, not an update.
 */
static __always_inline void hot_request(const struct sluice_key *key, __u64 now)
{
	struct sluice_hot h = { .since = now };

	if (!bpf_map_lookup_elem(&sluice_hot, key))
		bpf_map_update_elem(&sluice_hot, key, &h, BPF_NOEXIST);
}

/*
 * A packet of @cost units, of increment @incr under the policy's own
 * limit, on a key of cluster-scoped policy @p, as @op says (enum
 * limit_op): while the key has a live lease, the lease decides, whatever
 * the fail mode, since the agent set its expiry before the store's
 * (docs/shared-budget.md). LIMIT_COLD when the key has none. A refund
 * gives nothing back to a lease (LIMIT_SKIP): the unit stays spent, which
 * can only under-admit; a generation with cluster-scoped policies always
 * walks its layers peeking first (walk_layers()), which makes it rare. A
 * later fragment's charge is spent whatever is left (LIMIT_ADMIT): a rate
 * lease's TAT moves as a cold key's does (limit_move()), once.
 */
static __always_inline int lease_apply(const struct sluice_key *key, __u64 now,
				       const struct sluice_policy *p, __u64 cost, __u64 incr,
				       int op)
{
	struct lease_view v = { 0 };
	struct sluice_spend *s;
	__u64 old;

	s = lease_live(key, now, p->limit.tolerance, &v);
	if (!s)
		return LIMIT_COLD;
	if (op == LIMIT_OP_REFUND)
		return LIMIT_SKIP;
	if (op == LIMIT_OP_CHARGE) {
		__sync_fetch_and_add(&s->spent, cost); /* past granted: the agent's debt to sync */
		if (v.rate) {
			old = *(volatile __u64 *)&s->tat;
			__sync_val_compare_and_swap(
				&s->tat, old,
				sluice_gcra_charge(sluice_ticks_after(v.floor, old) ? v.floor : old,
						   v.clock, incr));
		}
		return LIMIT_ADMIT;
	}
	if (v.rate)
		return share_spend(s, &v, incr, cost, op == LIMIT_OP_PEEK);
	return lease_spend(s, &v, p->lease_max, cost, op == LIMIT_OP_PEEK);
}

#endif /* SLUICE_LEASE_BPF_H */
