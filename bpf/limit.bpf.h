/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The map side of GCRA: the clock (this is the only reader of
 * bpf_ktime_get_ns()), the key lookup, the compare-and-swap and refunds,
 * the per-CPU batches of a shared key, and the answers they give (enum
 * limit_result). The arithmetic itself is
 * include/sluice/gcra.h; which key a packet is charged on, and how much,
 * is the layers' business (layer.bpf.h).
 *
 * A denied packet only reads the key's cache line; writes happen at the
 * admitted rate. A CAS lost to another CPU means that CPU admitted a packet
 * on the same key, so we re-read and decide again; after SLUICE_CAS_RETRIES
 * lost races the packet is denied (counted as CAS_EXHAUSTED): dropping one
 * packet of a key that is being admitted at full speed on other CPUs keeps
 * the bound, passing it would not.
 */
#ifndef SLUICE_LIMIT_BPF_H
#define SLUICE_LIMIT_BPF_H

#include <linux/errno.h>

#include "maps.bpf.h"
#include "sluice/deny.h"
#include "sluice/fail.h"
#include "sluice/gcra.h"

/*
 * The coarse clock as this CPU last read it, and the jiffy it read it in
 * (coarse_ns()). A cache, so not pinned: a new program starts it empty.
 */
struct sluice_clock {
	__u64 jiffies;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_clock);
} sluice_clock SEC(".maps");

/*
 * What the limit stage makes of a packet: the answer of a key (limit_key(),
 * limit_peek()), of a lease, of a policy and of all the layers: one
 * vocabulary from a key's map entry up to the entry, where verdict_xdp()
 * alone turns it into an XDP verdict. The answers that drop the packet are
 * the odd ones, so that is_drop(), asked on every packet's path, is one
 * test (three compares before, issue #16).
 */
enum limit_result {
	LIMIT_ADMIT = 0,	  /* admitted and charged */
	LIMIT_DENY = 1,		  /* over the limit: drop */
	LIMIT_STATE_ERR = 2,	  /* the new key could not be stored: pass, uncharged */
	LIMIT_CAS_EXHAUSTED = 3,  /* lost SLUICE_CAS_RETRIES races: drop */
	LIMIT_SKIP = 4,		  /* the policy does not apply */
	LIMIT_CLOSED = 5,	  /* failed closed: drop */
	LIMIT_PASS_UNCHARGED = 6, /* a shadow policy's would-drop, or failed open: pass */
	LIMIT_REFUSED = 7,	  /* dropped before any policy: a tiny fragment, an orphan, or
				   * unparsed (the entry counts which); no policy's drop */
	LIMIT_WOULD_DROP = 8,	  /* peek only: a shadow policy would drop */
	LIMIT_COLD = 10,	  /* the key has no live lease: its own limit decides */
};

#define LIMIT_DROP_BIT 1 /* set in every enum limit_result that drops */
_Static_assert((LIMIT_DENY | LIMIT_DROP_BIT) == LIMIT_DENY &&
		       (LIMIT_CAS_EXHAUSTED | LIMIT_DROP_BIT) == LIMIT_CAS_EXHAUSTED &&
		       (LIMIT_CLOSED | LIMIT_DROP_BIT) == LIMIT_CLOSED &&
		       (LIMIT_REFUSED | LIMIT_DROP_BIT) == LIMIT_REFUSED,
	       "every answer that drops is odd");
_Static_assert(!((LIMIT_ADMIT | LIMIT_STATE_ERR | LIMIT_SKIP | LIMIT_PASS_UNCHARGED |
		  LIMIT_WOULD_DROP | LIMIT_COLD) &
		 LIMIT_DROP_BIT),
	       "every answer that passes is even");

/* An answer that drops the packet. */
static __always_inline int is_drop(int r)
{
	return r & LIMIT_DROP_BIT;
}

/*
 * A layer's answer that drops the packet (a layer never answers
 * LIMIT_REFUSED), for walk_layers(): is_drop() there costs its frame a
 * spill, 80 → 88 bytes of the 512 the call chain has on 6.1.
 */
static __always_inline int is_layer_drop(int r)
{
	return r == LIMIT_DENY || r == LIMIT_CAS_EXHAUSTED || r == LIMIT_CLOSED;
}

/* What the limit stage does with a packet on a key. */
enum limit_op {
	LIMIT_OP_PEEK = 0,   /* decide only: write no state, count nothing but a drop's */
	LIMIT_OP_ADMIT = 1,  /* decide and charge, and count what only it sees */
	LIMIT_OP_REFUND = 2, /* give back what LIMIT_OP_ADMIT charged this packet */
	LIMIT_OP_CHARGE = 3, /* charge a later fragment's bytes, whatever the key's debt */
};

/*
 * What a packet is decided under, besides its headers: the policy
 * generation and what the entry copied of it from sluice_ctl, the prefix
 * sets of its addresses (the entry's classify_addrs()), and the clock
 * (clock_read(), the only writer of now and agent_lost_ns). Each field has
 * that one writer.
 */
struct limit_env {
	__u64 src_sets;		/* sluice_addr_val.sets of the source */
	__u64 dst_sets;		/* likewise of the destination */
	__u64 heartbeat_ns;	/* sluice_ctl's */
	__u64 agent_timeout_ns; /* likewise */
	__u64 now;		/* GCRA ticks; 0 until the clock is read */
	__u64 agent_lost_ns;	/* how long the agent has been lost; 0: it is not */
	__u32 gen;		/* the half of the policy maps in use (sluice_ctl.active_gen) */
	__u32 gen_flags;	/* sluice_ctl.gen_flags of that half */
};

/*
 * Move @key's TAT by @incr outside a decision, as @op says. LIMIT_OP_REFUND
 * gives back what a packet was charged, when a later layer dropped it: as
 * if it had never arrived. Packets admitted on the key since then were
 * judged against a higher TAT, so the bound still holds. Not below now:
 * the key had no older debt to forgive. LIMIT_OP_CHARGE adds a later
 * fragment's cost whatever the debt (gcra.h, sluice_gcra_charge()): its
 * datagram was admitted whole with its first fragment. A key with no state
 * (evicted) is left alone. Out of retries, the TAT stays (a refund then
 * under-admits; a charge can lose the race only to packets admitted on
 * the key meanwhile).
 */
static __always_inline void limit_move(const struct sluice_key *key, __u64 now, __u64 incr, int op)
{
	struct sluice_state *st;
	__u64 old, new_tat;
	int i;

	for (i = 0; i < SLUICE_CAS_RETRIES; i++) {
		st = bpf_map_lookup_elem(&sluice_state, key);
		if (!st)
			return;
		old = *(volatile __u64 *)&st->tat;
		if (op == LIMIT_OP_CHARGE) {
			new_tat = sluice_gcra_charge(old, now, incr);
		} else {
			new_tat = old - incr;
			if ((__s64)(new_tat - now) < 0)
				new_tat = now;
		}
		if (__sync_val_compare_and_swap(&st->tat, old, new_tat) == old)
			return;
	}
}

/*
 * Per-CPU batches. A key that many CPUs admit (one limit for a whole
 * service, a /24 spread over every receive queue) is one cache line, and
 * a compare-and-swap on it per packet made two CPUs pay 1.5 to 4.4 times
 * what distinct keys cost (make bench, issue #32). So a CPU that admits a
 * second packet of a key takes, with the same compare-and-swap, the
 * increments of up to the limit's batch of packets more (struct
 * sluice_gcra.batch, chosen by compile.c) and keeps them in its slot of
 * sluice_credit: the next packets of the key on this CPU spend them
 * without touching the key. A key's first packet on a CPU only claims the
 * slot, so a source seen once is charged exactly.
 *
 * The bound (gcra.h): what a CPU holds was charged to the key before it
 * is spent, at most batch packets, so over any window the host admits at
 * most burst + rate·t + CPUs × batch. Nothing is lost: a slot taken by
 * another key gives back what it held (limit_move(), as a refund), and a
 * packet the batch does not fit is charged alone, as without batches. A
 * CPU holds a key's credit until it spends it or the slot changes hands,
 * so the rest of the host may see at most CPUs × batch packets fewer.
 * Only ticks are held, not packets: a reload that slows the limit leaves
 * credit too small for one packet, which is given back with the slot.
 * The same ticks spend a byte limit's batch, which compile.c counts in
 * bytes: there, read bytes for packets above.
 */
/* Per CPU, so that a slot has one writer; not pinned: an upgrade strands what it held. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1U << SLUICE_CREDIT_SLOT_BITS);
	__type(key, __u32);
	__type(value, struct sluice_credit);
} sluice_credit SEC(".maps");

/* Are the @n words at @x and @y equal? */
static __always_inline int words_equal(const __u32 *x, const __u32 *y, __u32 n)
{
	__u32 diff = 0, i;

#pragma unroll
	for (i = 0; i < n; i++)
		diff |= x[i] ^ y[i];
	return !diff;
}

/* This CPU's slot of sluice_credit for @key, or NULL. */
static __always_inline struct sluice_credit *credit_slot(const struct sluice_key *key)
{
	__u32 slot = sluice_credit_slot(key);

	return bpf_map_lookup_elem(&sluice_credit, &slot);
}

/* Does @c hold @key's credit? */
static __always_inline int credit_is(const struct sluice_credit *c, const struct sluice_key *key)
{
	return words_equal((const __u32 *)&c->key, (const __u32 *)key, SLUICE_KEY_WORDS);
}

/* The ticks of limit @g's batch. */
static __always_inline __u64 credit_batch(const struct sluice_gcra *g)
{
	return sluice_gcra_incr(g->batch, g->interval_mant, g->interval_shift);
}

/*
 * Charge @incr on @key under limit @g; on LIMIT_ADMIT *@tat is the key's
 * new TAT (now when the packet spent this CPU's batch), on LIMIT_DENY
 * *@retry how long until it would admit.
 */
static __always_inline enum limit_result limit_key(const struct sluice_key *key, __u64 now,
						   __u64 incr, const struct sluice_gcra *g,
						   __u64 *tat, __u64 *retry)
{
	/* Kept only while a batch is to be taken: 6.1 has no stack for more locals here. */
	struct sluice_credit *c = g->batch ? credit_slot(key) : NULL;
	struct sluice_state fresh, *st;
	__u64 old, new_tat;
	int err; /* not long: see below */
	int i;

	if (c && !credit_is(c, key)) {
		if (c->ticks)
			limit_move(&c->key, now, c->ticks, LIMIT_OP_REFUND);
		c->key = *key;
		c->ticks = 0;
		c = NULL;
	} else if (c && c->ticks >= incr) {
		c->ticks -= incr;
		*tat = now;
		return LIMIT_ADMIT;
	}
	for (i = 0; i < SLUICE_CAS_RETRIES; i++) {
		st = bpf_map_lookup_elem(&sluice_state, key);
		if (!st) {
			if (!sluice_gcra_admit(now, now, incr, g->tolerance, &new_tat, retry))
				return LIMIT_DENY;
			fresh.tat = new_tat;
			*tat = new_tat;
			/*
			 * Before Linux 6.4 a map's update returned int, and the
			 * verifier calls it directly: the error is in the low
			 * 32 bits of r0 only (-EEXIST read as 4294967279 on
			 * 6.1), so compare it as an int.
			 */
			err = (int)bpf_map_update_elem(&sluice_state, key, &fresh, BPF_NOEXIST);
			if (!err)
				return LIMIT_ADMIT;
			if (err != -EEXIST)
				return LIMIT_STATE_ERR;
			continue; /* another CPU created it first: decide on its value */
		}
		old = *(volatile __u64 *)&st->tat;
		/* A batch that does not fit: this packet alone, as without batches. */
		if (c && !sluice_gcra_admit(old, now, incr + credit_batch(g), g->tolerance,
					    &new_tat, retry))
			c = NULL;
		if (!c && !sluice_gcra_admit(old, now, incr, g->tolerance, &new_tat, retry))
			return LIMIT_DENY;
		*tat = new_tat;
		if (__sync_val_compare_and_swap(&st->tat, old, new_tat) == old) {
			if (c)
				c->ticks += credit_batch(g);
			return LIMIT_ADMIT;
		}
	}
	return LIMIT_CAS_EXHAUSTED;
}

/*
 * Decide without writing: LIMIT_ADMIT or LIMIT_DENY for a packet of @incr
 * on @key now under limit @g, and on LIMIT_DENY *@retry as limit_key()
 * does. A key with no state would admit (a fresh key's full burst), and so
 * would this CPU's batch of the key.
 */
static __always_inline enum limit_result limit_peek(const struct sluice_key *key, __u64 now,
						    __u64 incr, const struct sluice_gcra *g,
						    __u64 *retry)
{
	struct sluice_credit *c = g->batch ? credit_slot(key) : NULL;
	struct sluice_state *st;
	__u64 tat, new_tat;

	if (c && credit_is(c, key) && c->ticks >= incr)
		return LIMIT_ADMIT;
	st = bpf_map_lookup_elem(&sluice_state, key);
	tat = st ? *(volatile __u64 *)&st->tat : now;
	return sluice_gcra_admit(tat, now, incr, g->tolerance, &new_tat, retry) ? LIMIT_ADMIT
										: LIMIT_DENY;
}

/*
 * The coarse clock (CLOCK_MONOTONIC as of the last scheduler tick) for the
 * price of two loads. bpf_ktime_get_coarse_ns() is a helper call, and a
 * call costs ~23 ns here (make bench: the kernel's return thunks);
 * bpf_jiffies64() is inlined by the verifier into one load. The tick that
 * advances jiffies also advances the coarse clock, so while jiffies stay
 * what they were at this CPU's last read, that read is the coarse clock's
 * value still. The kernel advances jiffies a moment before the clock: a
 * read in between returns the old value, which is not cached when it is
 * the one cached already (the next packet reads again); but a CPU whose
 * cache is older than the last tick (it idled) keeps it for this tick,
 * one tick behind. So the lag of this clock varies by up to
 * SLUICE_COARSE_LAG_TICKS ticks, where the coarse clock's own varies by one
 * (docs/decisions.md, "The clock").
 */
static __always_inline __u64 coarse_ns(void)
{
	__u32 zero = 0;
	struct sluice_clock *c = bpf_map_lookup_elem(&sluice_clock, &zero);
	__u64 jiffies = bpf_jiffies64(), ns;

	if (c && c->jiffies == jiffies)
		return c->ns;
	ns = bpf_ktime_get_coarse_ns();
	if (c && ns != c->ns) {
		c->jiffies = jiffies;
		c->ns = ns;
	}
	return ns;
}

/*
 * Read the clock once per packet, and only for a packet some policy (or a
 * deny cache entry) needs it for: the coarse clock, whose varying lag
 * loosens a key's bound by rate × SLUICE_COARSE_LAG_TICKS ticks at worst
 * (docs/decisions.md, "The clock"). bpf_ktime_get_ns() costs ~36 ns here
 * (make bench); a generation with a policy that asked for `clock: precise`
 * reads it for every packet. Also decides whether the agent is lost: its
 * heartbeat older than the timeout.
 *
 * Verifier: the heartbeat and timeout are read from @env's memory
 * (volatile), not where the entry got them. Otherwise clang 14 carries
 * them in registers from sluice_ctl across the deny cache's helper calls,
 * spilling them, and sluice_xdp()'s frame grew from 232 to 272 bytes:
 * 6.1 rounds each frame of a call chain up to 32 bytes and allows 512 in
 * all, and sluice_xdp, walk_layers and layer_apply then came to 544
 * ("combined stack size of 3 calls").
 */
static __always_inline void clock_read(struct limit_env *env)
{
	__u64 now_ns;

	if (env->now)
		return;
	now_ns = env->gen_flags & SLUICE_GEN_F_PRECISE ? bpf_ktime_get_ns() : coarse_ns();
	env->now = sluice_gcra_ticks(now_ns);
	env->agent_lost_ns =
		sluice_agent_lost_ns(*(volatile __u64 *)&env->heartbeat_ns,
				     *(volatile __u64 *)&env->agent_timeout_ns, now_ns);
}

#endif /* SLUICE_LIMIT_BPF_H */
