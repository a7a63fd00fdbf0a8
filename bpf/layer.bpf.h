/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The layers: what every policy that matches a packet makes of it. One
 * policy's step (layer_apply()) finds whether it applies, then lets the
 * key's live lease decide (lease.bpf.h) or, with none, the policy's fail
 * mode and its own limit (limit.bpf.h), and turns a shadow policy's drop
 * into a pass it counts. The walk (walk_layers()) takes the layers most
 * specific first: the first drop decides, and a dropped packet is charged
 * nowhere. Their answer goes into the entry's struct verdict, which
 * verdict_xdp() turns into the XDP verdict; the entry counts it.
 *
 * Both are global functions, verified once each (see their comments), so
 * this header is included by sluice.bpf.c alone.
 */
#ifndef SLUICE_LAYER_BPF_H
#define SLUICE_LAYER_BPF_H

#include "sluice/deny.h"
#include "sluice/fail.h"
#include "sluice/gcra.h"
#include "sluice/key.h"
#include "bitmap.bpf.h"
#include "classify.bpf.h"
#include "frag.bpf.h"
#include "lease.bpf.h"
#include "limit.bpf.h"
#include "maps.bpf.h"
#include "parse.bpf.h"
#include "stats.bpf.h"

/*
 * What the limit stage made of a packet, owned by the entry (sluice_xdp()),
 * which alone writes result. Each other field has one writer, or two
 * saying the same: id the walk (the layer that dropped) or the entry (a
 * cached drop's policy); deny_ticks layer_cold(); no_cache layer_apply()
 * (a layer that needs every packet) or the walk (past its peek pass);
 * state_err, noted and peeked the walk; match_slot the caller of the walk.
 */
struct verdict {
	__u64 deny_ticks; /* the deny cache may keep this drop so long (ticks); 0: not */
	__u32 id;	  /* the policy that dropped the packet */
	__s32 result;	  /* enum limit_result */
	__u8 no_cache;	  /* a drop from here on is not to be cached */
	__u8 state_err;	  /* a layer could not store a new key (passed, uncharged) */
	__u8 noted;	  /* a first fragment's policies are noted (frag_note()) */
	__u8 peeked;	  /* the walk peeked first (walk_layers()) */
	__u8 pad;
	__u16 match_slot; /* the list of policies walked: its slot in sluice_match */
};

/* Is the address with @sets in set @set (1 + bit; 0 means any address)? */
static __always_inline int in_set(__u64 sets, __u8 set)
{
	return !set || (set <= SLUICE_MAX_SETS && ((sets >> (set - 1)) & 1));
}

/*
 * The policy @id of @env's generation, or NULL when it does not apply to @m.
 * Only byte-cost policies apply to a later fragment: its datagram is one
 * packet, counted with its first fragment (an orphan's, if it ever comes).
 * A later fragment's policies (@op LIMIT_OP_CHARGE) were chosen by its
 * first; an orphan's (`orphan: pass`) by its addresses, as unparsed's.
 */
static __always_inline struct sluice_policy *
policy_for(const struct pkt_meta *m, const struct limit_env *env, __u32 id, int op)
{
	__u32 slot = env->gen * SLUICE_MAX_POLICIES + id;
	struct sluice_policy *p;

	if (id >= SLUICE_MAX_POLICIES)
		return NULL;
	p = bpf_map_lookup_elem(&sluice_policy, &slot);
	if (!p || (m->frag == PKT_FRAG_LATER && p->cost != SLUICE_COST_BYTES))
		return NULL;
	if (op == LIMIT_OP_CHARGE)
		return p;
	if ((p->flags & SLUICE_POLICY_F_TCP_SYN) && !m->is_syn)
		return NULL;
	if (!in_set(env->src_sets, p->src_set) || !in_set(env->dst_sets, p->dst_set))
		return NULL;
	return p;
}

/*
 * What a frame costs under policy @p, in its units: its wire packets or
 * bytes (a GRO aggregate's are all of its segments', struct pkt_meta).
 */
static __always_inline __u64 policy_cost(const struct sluice_policy *p, const struct pkt_meta *m)
{
	return p->cost == SLUICE_COST_BYTES ? m->len_bytes : m->segs;
}

/*
 * The increment of a frame under limit @g of @p. An aggregate is charged
 * as a whole: its segments together fit the limit, or it is denied whole,
 * so it never admits more than the limit would packet by packet.
 */
static __always_inline __u64 policy_incr(const struct sluice_policy *p, const struct sluice_gcra *g,
					 const struct pkt_meta *m)
{
	return sluice_gcra_incr_cost(policy_cost(p, m), g->interval_mant, g->interval_shift,
				     p->cost == SLUICE_COST_BYTES ? SLUICE_COST_BYTES_SHIFT : 0);
}

/*
 * What the agent keeps for policy @id (sluice_fail): only cluster-scoped
 * policies have it, so a generation without any skips the lookup.
 */
static __always_inline const struct sluice_fail_state *policy_runtime(__u32 id,
								      const struct limit_env *env)
{
	if (!(env->gen_flags & SLUICE_GEN_F_STORE))
		return NULL;
	return bpf_map_lookup_elem(&sluice_fail, &id);
}

/* The fail mode of policy @p now; see include/sluice/fail.h. */
static __always_inline int policy_fail_mode(const struct sluice_policy *p,
					    const struct sluice_fail_state *rt,
					    const struct limit_env *env)
{
	return sluice_fail_mode(p->on_agent_loss, p->closed_after_ns, env->agent_lost_ns,
				rt ? rt->mode : SLUICE_FAIL_NONE);
}

/*
 * One packet's increment under limit @g: a cluster-scoped limit is shared
 * by the live nodes (rt->share), an explicit local_limit is not.
 */
static __always_inline __u64 layer_incr(const struct sluice_policy *p, const struct sluice_gcra *g,
					const struct sluice_fail_state *rt, int fail,
					const struct pkt_meta *m)
{
	__u64 incr = policy_incr(p, g, m);

	if (!rt || rt->share <= 1 ||
	    (fail == SLUICE_FAIL_DEGRADED && (p->flags & SLUICE_POLICY_F_LOCAL_LIMIT)))
		return incr;
	/* The agent bounds share × one unit's increment; an aggregate's saturates. */
	return sluice_gcra_mul_sat(rt->share, incr);
}

/*
 * How long every packet of a key that just denied one of @incr will be
 * denied, from its @retry: until even the cheapest packet would fit, one
 * byte or one segment (the denied frame may have been a GRO aggregate;
 * bpf/deny.bpf.h). 0: not even one tick.
 */
static __always_inline __u64 layer_deny_ticks(const struct sluice_gcra *g, __u64 incr, __u64 retry)
{
	__u64 least = sluice_gcra_incr(1, g->interval_mant, g->interval_shift);

	return retry > incr - least ? retry - (incr - least) : 0;
}

/* The policy's limit for its fail mode, or NULL when it takes no decision. */
static __always_inline const struct sluice_gcra *layer_limit(const struct sluice_policy *p,
							     int fail)
{
	return fail == SLUICE_FAIL_DEGRADED ? &p->degraded : &p->limit;
}

/*
 * A key with no live lease: the policy's fail mode, then its limit (for a
 * cluster-scoped policy, the share). A cluster key whose demand crosses the
 * hot threshold — more than half its burst used, or a drop — asks the agent
 * for a lease; in cold_mode strict any packet does, and is dropped until
 * the lease comes (while the store is healthy). A denial that the deny
 * cache may keep sets v->deny_ticks, the only place that does: the layer
 * returns LIMIT_DENY, so the walk ends at it.
 */
static __always_inline int layer_cold(const struct pkt_meta *m, const struct limit_env *env,
				      struct verdict *v, const struct sluice_policy *p,
				      const struct sluice_fail_state *rt,
				      const struct sluice_key *key, int op, int *fail)
{
	int cluster = rt && p->scope == SLUICE_SCOPE_CLUSTER, r;
	const struct sluice_gcra *g;
	__u64 incr, tat = 0, retry = 0;

	*fail = policy_fail_mode(p, rt, env);
	if (*fail == SLUICE_FAIL_OPEN)
		return LIMIT_PASS_UNCHARGED;
	if (*fail == SLUICE_FAIL_CLOSED)
		return LIMIT_CLOSED;
	g = layer_limit(p, *fail);
	incr = layer_incr(p, g, rt, *fail, m);
	if (op == LIMIT_OP_REFUND || op == LIMIT_OP_CHARGE) {
		limit_move(key, env->now, incr, op);
		return op == LIMIT_OP_CHARGE ? LIMIT_ADMIT : LIMIT_SKIP;
	}
	if (cluster && *fail == SLUICE_FAIL_NONE && (p->flags & SLUICE_POLICY_F_COLD_STRICT)) {
		hot_request(key, env->now);
		return LIMIT_DENY;
	}
	r = op == LIMIT_OP_PEEK ? limit_peek(key, env->now, incr, g, &retry)
				: limit_key(key, env->now, incr, g, &tat, &retry);
	if (cluster && (r == LIMIT_DENY || (r == LIMIT_ADMIT && op == LIMIT_OP_ADMIT &&
					    tat - env->now > g->tolerance / 2)))
		hot_request(key, env->now);
	/*
	 * Only a node's own limit, as it is, stays a denial until retry
	 * (deny.bpf.h); no_cache rules out shadow and cluster-scoped layers.
	 */
	if (r == LIMIT_DENY && *fail == SLUICE_FAIL_NONE && !v->no_cache)
		v->deny_ticks = layer_deny_ticks(g, incr, retry);
	return r;
}

/*
 * What a layer counts of a packet that passes, the enum sluice_pstat bits
 * an admitting layer_apply() returns above its enum limit_result: the walk
 * counts them when the packet passes (walk_layers()), so that a packet a
 * later layer drops counts none, whether that layer was found by a peek
 * or after a charge. Beside a policy id, in the walk's list of layers.
 */
#define LAYER_COUNTS_SHIFT 16
#define LAYER_LOW_MASK	   ((1U << LAYER_COUNTS_SHIFT) - 1) /* the result, or the id */
#define LAYER_COUNT(pstat) (1U << (pstat))
_Static_assert(SLUICE_MAX_POLICIES <= 1U << LAYER_COUNTS_SHIFT &&
		       LIMIT_COLD < 1U << LAYER_COUNTS_SHIFT,
	       "a policy id and a limit_result fit below the counts");
_Static_assert(LAYER_COUNTS_SHIFT + SLUICE_PSTAT_MAX < 31, "the counts fit a positive int");

/* Answer @r, and count @pstat if the packet passes. */
static __always_inline int layer_counts(int r, enum sluice_pstat pstat)
{
	return r | LAYER_COUNT(pstat) << LAYER_COUNTS_SHIFT;
}

/*
 * One policy for one packet, as @op says (enum limit_op): returns an enum
 * limit_result, and admitting, the counts it leaves to the walk
 * (layer_counts(): fail-open, degraded, leased). A shadow layer's would-drop
 * is counted here, and a drop's degraded or leased; the walk counts passes,
 * the entry drops. A refund undoes an admit's charge (LIMIT_SKIP), and a charge
 * adds a later fragment's bytes (see limit_move; LIMIT_SKIP when the policy
 * counts no bytes, else not). Reads the clock into @env; sets
 * v->no_cache, and v->deny_ticks (layer_cold()).
 *
 * Verifier: a global (non-static, noinline) function is verified once, on
 * its own. Inlined into the layer loop, SLUICE_MAX_LAYERS × SLUICE_CAS_RETRIES
 * iterations made kernel 6.18 with clang 14 spend 0.65 s per load exploring
 * states (see walk_layers() for the rest of the story).
 */
__attribute__((noinline)) int layer_apply(const struct pkt_meta *m, struct limit_env *env,
					  struct verdict *v, __u32 id, int op)
{
	int fail = SLUICE_FAIL_NONE, r, peek = op == LIMIT_OP_PEEK, stat = SLUICE_PSTAT_DEGRADED;
	const struct sluice_fail_state *rt;
	const struct sluice_policy *p;
	struct sluice_key key;

	/* A global function's pointer arguments may be NULL for the verifier. */
	if (!m || !env || !v)
		return LIMIT_SKIP;
	p = policy_for(m, env, id, op);
	if (!p)
		return LIMIT_SKIP;
	clock_read(env);
	/*
	 * A shadow layer counts its would-drops, a cluster layer its leases'
	 * demand: skipped by a cached drop, they would miss packets.
	 */
	if (p->mode == SLUICE_MODE_SHADOW || p->scope == SLUICE_SCOPE_CLUSTER)
		v->no_cache = 1;
	rt = policy_runtime(id, env);
	sluice_key_derive(&key, p, m->src, m->is_ipv4);
	r = rt && p->scope == SLUICE_SCOPE_CLUSTER
		    ? lease_apply(&key, env->now, p, policy_cost(p, m),
				  policy_incr(p, &p->limit, m), op)
		    : LIMIT_COLD;
	if (r == LIMIT_COLD)
		r = layer_cold(m, env, v, p, rt, &key, op, &fail);
	else
		stat = SLUICE_PSTAT_LEASED;
	if (op == LIMIT_OP_REFUND || op == LIMIT_OP_CHARGE)
		return r;
	if (r == LIMIT_PASS_UNCHARGED) /* failed open */
		return peek ? r : layer_counts(r, SLUICE_PSTAT_FAIL_OPEN);
	if ((r == LIMIT_DENY || r == LIMIT_CLOSED) && p->mode == SLUICE_MODE_SHADOW) {
		/* A shadow policy never drops, closed or not. */
		if (peek)
			return LIMIT_WOULD_DROP;
		count_policy(id, SLUICE_PSTAT_SHADOW, m);
		r = LIMIT_PASS_UNCHARGED;
	}
	if (stat != SLUICE_PSTAT_LEASED && fail != SLUICE_FAIL_DEGRADED)
		return r;
	/* The layer that drops the packet counts at once; one that passes it, if it passes. */
	if (is_layer_drop(r))
		count_policy(id, stat, m);
	else if (!peek)
		r = layer_counts(r, stat);
	return r;
}

/* Attribute a drop to the policy @id that decided it with @r. */
static __always_inline void count_drop(__u32 id, int r, const struct pkt_meta *m)
{
	count_policy(id, r == LIMIT_CLOSED ? SLUICE_PSTAT_FAIL_CLOSED : SLUICE_PSTAT_DROPPED, m);
}

/*
 * Count what the @n layers in @a (ids with their counts) left to a packet
 * that passed, and leave in @a the ids of those that charged it, the
 * policies a first fragment's later fragments are charged to. Returns 1
 * when those are noted for them (frag_note()).
 */
static __always_inline int walk_count(const struct pkt_meta *m, struct frag_ids *a, __u32 n)
{
	__u32 i, j = 0, id, counts;

	for (i = 0; i < n && i < SLUICE_MAX_LAYERS; i++) {
		id = a->id[i] & LAYER_LOW_MASK;
		counts = a->id[i] >> LAYER_COUNTS_SHIFT;
		if (counts & LAYER_COUNT(SLUICE_PSTAT_PASSED) && j < SLUICE_MAX_LAYERS) {
			count_policy(id, SLUICE_PSTAT_PASSED, m);
			a->id[j++] = id;
		}
		if (!(counts & ~LAYER_COUNT(SLUICE_PSTAT_PASSED)))
			continue;
		if (counts & LAYER_COUNT(SLUICE_PSTAT_FAIL_OPEN))
			count_policy(id, SLUICE_PSTAT_FAIL_OPEN, m);
		if (counts & LAYER_COUNT(SLUICE_PSTAT_DEGRADED))
			count_policy(id, SLUICE_PSTAT_DEGRADED, m);
		if (counts & LAYER_COUNT(SLUICE_PSTAT_LEASED))
			count_policy(id, SLUICE_PSTAT_LEASED, m);
	}
	return m->frag == PKT_FRAG_FIRST ? frag_note(m, a, j) : 0;
}

/* Which policy lists this CPU walks peeking first (walk_layers()); not pinned. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_walk_bits);
} sluice_walk SEC(".maps");

/* This CPU's word of sluice_walk that holds list @slot's bit, or NULL. */
static __always_inline __u64 *walk_word(__u32 slot)
{
	return bitmap_word(&sluice_walk, ARRAY_SIZE(((struct sluice_walk_bits *)0)->peek), slot);
}

/* Does this CPU walk list @slot peeking first? */
static __always_inline int walk_peeks(__u32 slot)
{
	__u64 *word = walk_word(slot);

	return word && (*word & BITMAP_BIT(slot));
}

/* This CPU walks list @slot peeking first from now on (@peek), or not. */
static __always_inline void walk_mark(__u32 slot, int peek)
{
	__u64 *word = walk_word(slot);

	if (word && peek)
		*word |= BITMAP_BIT(slot);
	else if (word)
		*word &= ~BITMAP_BIT(slot);
}

/*
 * Apply every matching policy (the list in @match, slot v->match_slot of
 * sluice_match), most specific first. The first drop decides and is
 * attributed to its policy, and a dropped packet consumes no budget
 * anywhere (docs/decisions.md). A passed packet is counted as passed by
 * every policy that admitted it. Returns the packet's enum limit_result:
 * the deciding drop (its policy in v->id), else LIMIT_ADMIT, or LIMIT_SKIP
 * when no policy applied.
 *
 * With several layers there are two ways to keep a drop from spending,
 * and each is cheap where the other is dear; this CPU's bit for the list
 * (sluice_walk) says which it takes:
 * - charge first (bit clear): admit layer by layer, and when one drops,
 *   give the layers before it their charge back. A passed packet costs
 *   one step per layer; a drop past the first layer costs a charge and a
 *   refund per layer before it, and may insert their keys.
 * - peek first (bit set): find a drop without writing anything, then
 *   admit for real. A drop costs reads only (under a flood, what nearly
 *   every packet meets); a passed packet costs two steps per layer.
 * A charge-first walk that refunds sets the bit, a peek-first walk that
 * passes clears it: a list that keeps dropping past a layer that admitted
 * is peeked, a list that passes is charged. Either way the packet gets the
 * same verdict and counts (layer_counts()). Between a charge and its
 * refund another CPU sees the charge, as it does when it spends a layer
 * between this CPU's peek and admit (then the admit pass refunds the
 * same way): docs/decisions.md, "Layers", gives the bound. A generation
 * with cluster-scoped policies always peeks first: a lease's spend is not
 * given back (lease_apply()).
 *
 * Verifier: a global function, verified once. Inlined, the layer loop was
 * verified again for every path through the header parser (VLANs, IPv6
 * extension chains, fragments): kernel 6.18 with clang 14 processed 639513
 * instructions, 1.04 s per load, near the 1M limit; global, 58627 (77 ms),
 * at no measurable cost per packet (make bench: 137 vs 136 ns). With the
 * peek pass, 74197 (108 ms).
 */
__attribute__((noinline)) int walk_layers(const struct pkt_meta *m, struct limit_env *env,
					  const struct sluice_match *match, struct verdict *v)
{
	/*
	 * One after the other: shadowed in the peek pass; in the admit pass,
	 * the layers that passed the packet, each id with its counts.
	 */
	union {
		__u32 shadowed[SLUICE_MAX_LAYERS];
		struct frag_ids admitted;
	} u;
	__u32 i, n = 0, count, id, counts;
	int r = LIMIT_SKIP, applied = 0, refunded;

	if (!m || !env || !match || !v)
		return LIMIT_PASS_UNCHARGED;
	count = match->count; /* read once: user space may rewrite the entry meanwhile */
	/* In v, not locals: a frame that grows past 6.1's 512 bytes of stack does not load. */
	v->peeked =
		count > 1 && ((env->gen_flags & SLUICE_GEN_F_STORE) || walk_peeks(v->match_slot));
	for (i = 0; v->peeked && i < SLUICE_MAX_LAYERS && i < count; i++) {
		id = match->ids[i];
		r = layer_apply(m, env, v, id, LIMIT_OP_PEEK);
		if (r == LIMIT_WOULD_DROP && n < SLUICE_MAX_LAYERS)
			u.shadowed[n++] = id; /* counted as would-drops if the packet drops */
		if (is_layer_drop(r)) {
			v->id = id;
			for (i = 0; i < n && i < SLUICE_MAX_LAYERS; i++)
				count_policy(u.shadowed[i], SLUICE_PSTAT_SHADOW, m);
			return r;
		}
	}
	/* Past a peek, a drop lost a race with it: not worth caching. */
	if (v->peeked)
		v->no_cache = 1;
	n = 0;
	for (i = 0; i < SLUICE_MAX_LAYERS && i < count; i++) {
		id = match->ids[i];
		r = layer_apply(m, env, v, id, LIMIT_OP_ADMIT);
		counts = (__u32)r >> LAYER_COUNTS_SHIFT;
		r &= LAYER_LOW_MASK;
		applied |= r != LIMIT_SKIP;
		if (r == LIMIT_ADMIT)
			counts |= LAYER_COUNT(SLUICE_PSTAT_PASSED);
		else if (r == LIMIT_STATE_ERR)
			v->state_err = 1;
		else if (is_layer_drop(r))
			break;
		if (counts && n < SLUICE_MAX_LAYERS)
			u.admitted.id[n++] = id | counts << LAYER_COUNTS_SHIFT;
	}
	if (is_layer_drop(r)) {
		v->id = id;
		refunded = 0;
		for (i = 0; i < n && i < SLUICE_MAX_LAYERS; i++) {
			if (!(u.admitted.id[i] >> LAYER_COUNTS_SHIFT &
			      LAYER_COUNT(SLUICE_PSTAT_PASSED)))
				continue;
			layer_apply(m, env, v, u.admitted.id[i] & LAYER_LOW_MASK, LIMIT_OP_REFUND);
			refunded = 1;
		}
		if (refunded)
			walk_mark(v->match_slot, 1);
		return r;
	}
	if (v->peeked)
		walk_mark(v->match_slot, 0);
	v->noted = walk_count(m, &u.admitted, n);
	/* No policy applied: the port matched, but sets or tcp_syn ruled out all. */
	return applied ? LIMIT_ADMIT : LIMIT_SKIP;
}

/*
 * A later fragment (frag.bpf.h): the verdict of its first fragment into
 * @v, or a drop (LIMIT_REFUSED) past its datagram (frag_within()); when it
 * passes, its bytes charged to the byte-cost policies that admitted the
 * first, and counted as passed by each of them. A packet-cost policy
 * counted the datagram with its first. Returns the total to count:
 * SLUICE_TOTAL_FRAGMENTS, or SLUICE_TOTAL_FRAG_ORPHAN with @v untouched
 * when its first is not tracked. Reads the clock into @env.
 *
 * Verifier: a global function, like walk_layers(), for the same reason;
 * its frame sits beside walk_layers() in the 512 bytes of the call chain
 * (sluice_xdp → frag_layers → layer_apply), so it keeps nothing on it.
 */
__attribute__((noinline)) int frag_layers(const struct pkt_meta *m, struct limit_env *env,
					  struct verdict *v)
{
	struct sluice_frag *f;
	__u32 i, n, id;

	if (!m || !env || !v)
		return SLUICE_TOTAL_FRAG_ORPHAN;
	clock_read(env);
	f = frag_lookup(m, env->now);
	if (!f)
		return SLUICE_TOTAL_FRAG_ORPHAN;
	v->result = f->result;
	v->id = f->drop_id;
	if (is_drop(v->result))
		return SLUICE_TOTAL_FRAGMENTS;
	if (!frag_within(f, m)) {
		v->result = LIMIT_REFUSED;
		return SLUICE_TOTAL_FRAGMENTS;
	}
	n = f->n_ids;
	for (i = 0; i < n && i < SLUICE_MAX_LAYERS; i++) {
		id = f->ids[i];
		if (layer_apply(m, env, v, id, LIMIT_OP_CHARGE) != LIMIT_SKIP)
			count_policy(id, SLUICE_PSTAT_PASSED, m);
	}
	return SLUICE_TOTAL_FRAGMENTS;
}

/*
 * The XDP verdict for what the layers made of a packet (@v), and the only
 * place an enum limit_result becomes one. Sets *@why to a total to count
 * besides it, or leaves it alone.
 */
static __always_inline int verdict_xdp(const struct verdict *v, enum sluice_total *why)
{
	if (v->result == LIMIT_CAS_EXHAUSTED)
		*why = SLUICE_TOTAL_CAS_EXHAUSTED;
	else if (v->state_err)
		*why = SLUICE_TOTAL_STATE_ERR;
	else if (v->result == LIMIT_SKIP)
		*why = SLUICE_TOTAL_NO_MATCH;
	return is_drop(v->result) ? XDP_DROP : XDP_PASS;
}

#endif /* SLUICE_LAYER_BPF_H */
