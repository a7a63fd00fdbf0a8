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
	__u64 granted;	/* spend while spent + cost <= granted */
	__u64 reported; /* ... and spent + cost - reported <= the policy's lease_max */
};

/*
 * The live lease of @key at @now (ticks), or NULL: none, expired (the agent
 * or the store is late: the key is cold again), or being torn down.
 *
 * A hash map recycles a replaced or deleted element at once (kernel 6.1+,
 * per-CPU free lists), so a pointer we hold may meanwhile carry another
 * key's lease: the agent replacing one key's lease and then writing the
 * next one does exactly that. The kernel writes a new element's key before
 * its value, so reading the fields first and the entry's own key last
 * tells: a key that is still ours means the fields we read were ours.
 */
static __always_inline struct sluice_spend *lease_live(const struct sluice_key *key, __u64 now,
						       struct lease_view *v)
{
	const struct sluice_lease *l = bpf_map_lookup_elem(&sluice_lease, key);
	__u64 expires;

	if (!l)
		return NULL;
	expires = *(volatile __u64 *)&l->expires;
	v->granted = *(volatile __u64 *)&l->granted;
	v->reported = *(volatile __u64 *)&l->reported;
	asm volatile("" ::: "memory"); /* the fields before the key */
	if ((__s64)(expires - now) <= 0 || !key_equal(&l->key, key))
		return NULL;
	return bpf_map_lookup_elem(&sluice_spend, key);
}

/*
 * Spend @cost units of a live lease (@s, as @v allows), or only look when
 * @peek. The compare-and-swap makes concurrent CPUs spend at most granted
 * in total; a lost race re-reads and decides again. A denial adds @cost to
 * the local demand the agent reads (denied).
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
 * A packet of @cost units on a key of a cluster-scoped policy whose leases
 * are capped at @lease_max, as @op says
 * (enum limit_op): while the key has a live lease, the lease decides,
 * whatever the fail mode, since the agent set its expiry before the
 * store's (docs/shared-budget.md). LIMIT_COLD when the key has none. A
 * refund gives nothing back to a lease (LIMIT_SKIP): the unit stays spent,
 * which can only under-admit; a generation with cluster-scoped policies
 * always walks its layers peeking first (walk_layers()), which makes it
 * rare. A later
 * fragment's charge is spent whatever is left (LIMIT_ADMIT).
 */
static __always_inline int lease_apply(const struct sluice_key *key, __u64 now, __u64 lease_max,
				       __u64 cost, int op)
{
	struct lease_view v = { 0 };
	struct sluice_spend *s;

	s = lease_live(key, now, &v);
	if (!s)
		return LIMIT_COLD;
	if (op == LIMIT_OP_REFUND)
		return LIMIT_SKIP;
	if (op == LIMIT_OP_CHARGE) {
		__sync_fetch_and_add(&s->spent, cost); /* past granted: the agent's debt to sync */
		return LIMIT_ADMIT;
	}
	return lease_spend(s, &v, lease_max, cost, op == LIMIT_OP_PEEK);
}

#endif /* SLUICE_LEASE_BPF_H */
