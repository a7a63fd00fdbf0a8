/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The deny cache: a flood's packets dropped for the price of one array
 * read. When a policy denies a packet, GCRA also says how long any packet
 * of the same key will be denied (the retry time: a key's TAT only grows
 * while nobody is admitted). Everything that chose that policy and key is
 * in the packet's flow — source, protocol, the list of policies its
 * destination port selects (not the port: a port spray at one policy is
 * one flow), SYN, family — so the next packets of the flow can be dropped
 * without looking up policies or reading the key, until then. Finding the
 * list is one inlined array read (classify_slot()), which the full path
 * needs anyway.
 *
 * A slot per flow hash in a per-CPU array: no helper call, no lock, one
 * writer per slot; two flows on one slot just take turns (a miss costs the
 * full path plus a few stores). A bitmap of the slots in use (1 KiB, stays
 * in the CPU's cache) keeps the slots out of the way of traffic that was
 * never denied: with 10^5 sources passing, reading a slot for each packet
 * cost a cache miss, 76 ns (make bench). A cached drop counts exactly what
 * the full path would: the packet dropped, by that policy.
 *
 * A drop is cached only when nothing else could change it before `until`:
 * - only a node-scoped policy in enforce mode denying with its own limit
 *   (no lease, no cluster share, no fail mode), and only when no shadow or
 *   cluster-scoped layer was looked at before it: a shadow layer counts
 *   each would-drop, a cluster layer the demand its lease is sized by;
 * - the policies stay what they were: an entry is valid only in the policy
 *   generation (sluice_ctl.generation, and the half of the policy maps the
 *   packet read: sluice_deny_stamp) it was decided in;
 * - the agent is not lost (fail modes apply at once);
 * - generations with destination sets are not cached (the flow has no
 *   destination address).
 * What can still shorten a denial is a refund (another packet admitted on
 * the key and given back when a later layer dropped it) or a key removed
 * by the agent; sluice_deny_ttl_ticks (SLUICE_DENY_TTL_NS unless the loader
 * says otherwise) caps how long a drop stands for those.
 * A cached drop is thus never an admission the full path would not make,
 * and at worst an over-drop of one flow for 100 ms after such a refund.
 *
 * A ban's drop is cached too (ban.bpf.h, deny_store_ban()), under the
 * same stamp (so the same allowlist) and the ban gate's epoch.
 *
 * Layered, the full path attributes a drop to the most specific layer that
 * denies. A more specific layer that starts denying while a less specific
 * one's drop is cached (other flows used up its key) gets the flow's drops
 * only when the entry ends: the verdict and the totals are the same, the
 * split between the two policies' counters lags by up to `until`.
 */
#ifndef SLUICE_DENY_BPF_H
#define SLUICE_DENY_BPF_H

#include "bitmap.bpf.h"
#include "events.bpf.h"
#include "limit.bpf.h"
#include "maps.bpf.h"
#include "parse.bpf.h"
#include "sluice/deny.h"
#include "sluice/gcra.h"

/* A cache, per CPU so that a slot has one writer; not pinned. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_DENY_SLOTS);
	__type(key, __u32);
	__type(value, struct sluice_deny);
} sluice_deny SEC(".maps");

/* Which slots of this CPU's sluice_deny may hold a live drop. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_deny_bits);
} sluice_deny_bits SEC(".maps");

/*
 * The longest a cached drop stands, in GCRA ticks: a constant the loader
 * may set before load (struct load_opts). The BPF tests lengthen it, so
 * that a step sequence on a slow machine (under QEMU's emulation a step
 * takes a third of a second) runs inside one entry's life.
 */
const volatile __u64 sluice_deny_ttl_ticks = SLUICE_DENY_TTL_TICKS;

/*
 * @m's flow, but f->match_slot, which the caller sets first
 * (classify_slot()): kept there, it costs the pipeline no stack of its
 * own, which 6.1's verifier has none of to spare (docs/kernels.md).
 */
static __always_inline void flow_of(const struct pkt_meta *m, struct sluice_flow *f)
{
	__builtin_memcpy(f->src, m->src, SLUICE_ADDR_LEN);
	f->proto = m->proto;
	f->flags = (m->is_ipv4 ? SLUICE_FLOW_F_IPV4 : 0) |
		   (m->has_ports ? SLUICE_FLOW_F_PORTS : 0) | (m->is_syn ? SLUICE_FLOW_F_SYN : 0);
}

/* The word of this CPU's bitmap that holds slot @slot's bit, or NULL. */
static __always_inline __u64 *deny_word(__u32 slot)
{
	return bitmap_word(&sluice_deny_bits, ARRAY_SIZE(((struct sluice_deny_bits *)0)->w), slot);
}

static __always_inline int flow_equal(const struct sluice_flow *a, const struct sluice_flow *b)
{
	return words_equal((const __u32 *)a, (const __u32 *)b, SLUICE_FLOW_WORDS);
}

/*
 * Or'ed into the policy id deny_cached() returns: this drop is the one in
 * N its entry samples (event_due_cached()), above every policy id and
 * SLUICE_DENY_BAN.
 */
#define DENY_SAMPLED (1L << 32)

/* The key of sluice_ban_gate's one entry, in memory: the pipeline's stack has no room. */
static const __u32 deny_gate_key = 0;

/*
 * A ban's drop of @d's flow, if the ban maps are still what they were when
 * it was decided (the gate's epoch): counted in @d, until the next look at
 * the ban adds it to the ban's own count (deny_store_ban()).
 */
static __always_inline long deny_banned(struct sluice_deny *d, __u64 *word, __u32 slot)
{
	struct sluice_ban_gate *gate = bpf_map_lookup_elem(&sluice_ban_gate, &deny_gate_key);

	if (!gate || gate->epoch != d->ban_epoch) {
		*word &= ~BITMAP_BIT(slot);
		return -1;
	}
	d->ban_drops++;
	return SLUICE_DENY_BAN;
}

/*
 * The policy that denies flow @f (in @slot, sluice_deny_slot) now without
 * looking (its id, with DENY_SAMPLED when the drop is to be sampled),
 * SLUICE_DENY_BAN for a ban, or -1. Reads @env's clock
 * only when the slot's bit is set. An entry past its time or of another
 * generation clears the bit,
 * whichever flow it holds: left set, a slot whose flow never came back
 * cost every other flow hashed to it a read of the slot per packet, and a
 * flood of many sources left the bitmap full of them for good. A ban's
 * drop stands while the agent is lost, as the ban itself does.
 */
static __always_inline long deny_cached(struct limit_env *env, const struct sluice_flow *f,
					__u32 slot, __u64 stamp)
{
	__u64 *word = deny_word(slot);
	struct sluice_deny *d;

	if (!word || !(*word & BITMAP_BIT(slot)))
		return -1;
	d = bpf_map_lookup_elem(&sluice_deny, &slot);
	if (!d)
		return -1;
	clock_read(env);
	if (d->stamp != stamp || (__s64)(d->until - env->now) <= 0) {
		*word &= ~BITMAP_BIT(slot);
		event_disarm(d, stamp);
		return -1;
	}
	if (!flow_equal(&d->flow, f))
		return -1; /* another flow's live drop: it keeps the bit */
	if (d->policy_id == SLUICE_DENY_BAN)
		return deny_banned(d, word, slot);
	if (env->agent_lost_ns)
		return -1;
	return (long)d->policy_id | (event_due_cached(d) ? DENY_SAMPLED : 0); /* not a __u32 -1 */
}

/*
 * Remember in @slot that policy @id denies @f from @now (GCRA ticks) for
 * @deny_ticks (struct verdict, layer.bpf.h), or sluice_deny_ttl_ticks if
 * that is shorter.
 */
static __always_inline void deny_store(const struct sluice_flow *f, __u32 slot, __u64 stamp,
				       __u32 id, __u64 now, __u64 deny_ticks)
{
	__u64 ttl = deny_ticks < sluice_deny_ttl_ticks ? deny_ticks : sluice_deny_ttl_ticks;
	__u64 *word = deny_word(slot);
	struct sluice_deny *d = bpf_map_lookup_elem(&sluice_deny, &slot);

	if (!d || !word)
		return;
	event_disarm(d, stamp); /* another flow's, whose drop ends early */
	d->flow = *f;
	d->policy_id = id;
	d->stamp = stamp;
	d->until = now + ttl;
	d->ev_left = 0; /* until event_arm() */
	*word |= BITMAP_BIT(slot);
}

/*
 * Give @slot's entry, a drop of policy @id just stored, its countdown of
 * sampled events (event_arm()) in policy-map half @gen, @stamp.
 */
static __always_inline void deny_arm(__u32 slot, __u32 id, __u32 gen, __u64 stamp)
{
	struct sluice_deny *d = bpf_map_lookup_elem(&sluice_deny, &slot);

	if (d && id < SLUICE_MAX_POLICIES && gen < SLUICE_POLICY_GENS)
		event_arm(d, id, gen * SLUICE_EVENT_SLOTS + id, stamp);
}

/*
 * Remember in @slot that a ban decided in gate epoch @epoch drops @f from
 * @now (GCRA ticks), for sluice_deny_ttl_ticks or until the ban expires at
 * @expires_ns (0: never), whichever is sooner. Returns the drops the slot
 * held for @f's last such entry, which the caller adds to the ban's count;
 * another flow's are lost with its entry.
 */
static __always_inline __u64 deny_store_ban(const struct sluice_flow *f, __u32 slot, __u64 stamp,
					    __u64 epoch, __u64 expires_ns, __u64 now)
{
	__u64 until = now + sluice_deny_ttl_ticks, held = 0;
	__u64 *word = deny_word(slot);
	struct sluice_deny *d = bpf_map_lookup_elem(&sluice_deny, &slot);

	if (!d || !word)
		return 0;
	if (d->policy_id == SLUICE_DENY_BAN && flow_equal(&d->flow, f))
		held = d->ban_drops;
	event_disarm(d, stamp);
	if (expires_ns && (__s64)(sluice_gcra_ticks(expires_ns) - until) < 0)
		until = sluice_gcra_ticks(expires_ns);
	d->flow = *f;
	d->policy_id = SLUICE_DENY_BAN;
	d->stamp = stamp;
	d->until = until;
	d->ban_epoch = epoch;
	d->ban_drops = 0;
	d->ev_left = 0; /* a ban's drops count down sluice_ev_tick's (event_counted_cached()) */
	*word |= BITMAP_BIT(slot);
	return held;
}

#endif /* SLUICE_DENY_BPF_H */
