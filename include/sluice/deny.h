/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The deny cache's entries and slot hash, shared by the XDP program
 * (bpf/deny.bpf.h, which explains the cache) and the tests that read it.
 * Not ABI: the cache is per program and never pinned, so only one build
 * ever reads what it wrote.
 */
#ifndef SLUICE_DENY_H
#define SLUICE_DENY_H

#include "addr.h"
#include "classify.h"
#include "gcra.h"
#include "key.h"
#include "policy.h"

#define SLUICE_DENY_SLOT_BITS  13 /* 2^13 flows per CPU */
#define SLUICE_DENY_SLOTS      (1U << SLUICE_DENY_SLOT_BITS)
#define SLUICE_DENY_TTL_NS     (100 * SLUICE_NSEC_PER_MSEC) /* longest a cached drop stands */
#define SLUICE_DENY_TTL_TICKS  (SLUICE_DENY_TTL_NS << SLUICE_GCRA_TICK_SHIFT)
#define SLUICE_DENY_HASH_MUL   0x9e3779b1U /* 2^32 / golden ratio: Fibonacci hashing */
#define SLUICE_DENY_WORD_SLOTS 64	   /* slots per word of the bitmap */

enum sluice_flow_flag {
	SLUICE_FLOW_F_IPV4 = 1 << 0,
	SLUICE_FLOW_F_PORTS = 1 << 1,
	SLUICE_FLOW_F_SYN = 1 << 2,
};

/*
 * What decides a packet's policies: its flow. Not the destination port
 * but the list of policies its port (or protocol) selects, the slot
 * sluice_class names in sluice_match: a source spraying ports that the same
 * policies cover is one flow (#16), and ports that select other policies
 * are other flows.
 */
struct sluice_flow {
	__u32 src[SLUICE_ADDR_LEN / 4]; /* network order, IPv4 mapped */
	__u16 match_slot;		/* its service's slot in sluice_match; 0: none */
	__u8 proto;			/* IPPROTO_* */
	__u8 flags;			/* enum sluice_flow_flag */
};
SLUICE_ASSERT_SIZE(struct sluice_flow, 20);
_Static_assert(SLUICE_MATCH_SLOTS <= 1U << 16, "a match slot must fit sluice_flow.match_slot");

#define SLUICE_FLOW_WORDS (sizeof(struct sluice_flow) / sizeof(__u32))

/* sluice_deny.policy_id of a flow a ban drops (bpf/ban.bpf.h): no policy. */
#define SLUICE_DENY_BAN 0xffffffffU
_Static_assert(SLUICE_DENY_BAN >= SLUICE_MAX_POLICIES, "a ban's drop must not name a policy");

/* Value of sluice_deny: a flow some policy or a ban denied, and until when. */
struct sluice_deny {
	struct sluice_flow flow;
	__u32 policy_id; /* the policy that dropped it, for its counters; or SLUICE_DENY_BAN */
	__u64 stamp;	 /* sluice_deny_stamp() of the policies it was decided by */
	__u64 until;	 /* GCRA ticks: drop without looking before then */
	__u64 ban_epoch; /* a ban's drop: sluice_ban_gate.epoch it was decided in */
	__u64 ban_drops; /* a ban's drop: packets dropped since, not yet in the ban's count */
	__u32 ev_left;	 /* a policy's drop: its sampled events' countdown (bpf/events.bpf.h) */
	__u32 ev_every;	 /* likewise, what it starts again from after an event; 0: not sampled */
};
SLUICE_ASSERT_SIZE(struct sluice_deny, 64);

/* Value of sluice_deny_bits: which slots may hold a live drop, a bit each. */
struct sluice_deny_bits {
	__u64 w[SLUICE_DENY_SLOTS / SLUICE_DENY_WORD_SLOTS];
};

/*
 * Value of sluice_walk: the policy lists (sluice_match slots) this CPU walks
 * peeking first, a bit each (bpf/layer.bpf.h, walk_layers()). Like the
 * cache, only a cost: either way of walking gives the same verdict.
 */
struct sluice_walk_bits {
	__u64 peek[SLUICE_MATCH_SLOTS / SLUICE_DENY_WORD_SLOTS];
};

/*
 * Value of sluice_credit: what this CPU holds of a key's per-CPU batch
 * (bpf/limit.bpf.h), in a slot of 2^SLUICE_CREDIT_SLOT_BITS per CPU
 * (sluice_slot_hash() of the key). Like the deny cache, never pinned.
 */
#define SLUICE_CREDIT_SLOT_BITS 10
#define SLUICE_KEY_WORDS	(sizeof(struct sluice_key) / sizeof(__u32))

struct sluice_credit {
	struct sluice_key key; /* the key whose increments these are */
	__u32 pad;
	__u64 ticks; /* charged to the key's TAT, not yet spent */
};
SLUICE_ASSERT_SIZE(struct sluice_credit, 32);

/*
 * Which policies decided: sluice_ctl.generation and the half (active_gen)
 * the packet read. A reload writes both in one map update, which a packet
 * may see half done; an entry decided on one half is then never valid
 * under the other.
 */
SLUICE_INLINE __u64 sluice_deny_stamp(__u64 generation, __u32 half)
{
	return generation * SLUICE_POLICY_GENS + half;
}

/*
 * A slot of 2^@bits for the @n words at @w: the top bits of a
 * multiplicative hash, which mix best. Also the per-CPU batches' slot
 * (bpf/limit.bpf.h).
 */
SLUICE_INLINE __u32 sluice_slot_hash(const __u32 *w, __u32 n, __u32 bits)
{
	__u32 h = 0, i;

#ifdef __clang__
#pragma unroll
#endif
	for (i = 0; i < n; i++)
		h = (h ^ w[i]) * SLUICE_DENY_HASH_MUL;
	return h >> (32 - bits);
}

/* @key's slot of sluice_credit. */
SLUICE_INLINE __u32 sluice_credit_slot(const struct sluice_key *key)
{
	return sluice_slot_hash((const __u32 *)key, SLUICE_KEY_WORDS, SLUICE_CREDIT_SLOT_BITS);
}

/* @f's slot. */
SLUICE_INLINE __u32 sluice_deny_slot(const struct sluice_flow *f)
{
	return sluice_slot_hash((const __u32 *)f, SLUICE_FLOW_WORDS, SLUICE_DENY_SLOT_BITS);
}

#endif /* SLUICE_DENY_H */
