/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The map side of GCRA: the clock (this is the only reader of
 * bpf_ktime_get_ns()), the key lookup, the compare-and-swap and refunds,
 * and the answers they give (enum limit_result). The arithmetic itself is
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
 * Charge @incr on @key under tolerance @tol; on LIMIT_ADMIT *@tat is the
 * key's new TAT, on LIMIT_DENY *@retry how long until it would admit.
 */
static __always_inline enum limit_result limit_key(const struct sluice_key *key, __u64 now,
						   __u64 incr, __u64 tol, __u64 *tat, __u64 *retry)
{
	struct sluice_state fresh, *st;
	__u64 old, new_tat;
	int err; /* not long: see below */
	int i;

	for (i = 0; i < SLUICE_CAS_RETRIES; i++) {
		st = bpf_map_lookup_elem(&sluice_state, key);
		if (!st) {
			if (!sluice_gcra_admit(now, now, incr, tol, &new_tat, retry))
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
		if (!sluice_gcra_admit(old, now, incr, tol, &new_tat, retry))
			return LIMIT_DENY;
		*tat = new_tat;
		if (__sync_val_compare_and_swap(&st->tat, old, new_tat) == old)
			return LIMIT_ADMIT;
	}
	return LIMIT_CAS_EXHAUSTED;
}

/*
 * Decide without writing: LIMIT_ADMIT or LIMIT_DENY for a packet of @incr
 * on @key now, and on LIMIT_DENY *@retry as limit_key() does. A key with
 * no state would admit (a fresh key's full burst).
 */
static __always_inline enum limit_result limit_peek(const struct sluice_key *key, __u64 now,
						    __u64 incr, __u64 tol, __u64 *retry)
{
	struct sluice_state *st = bpf_map_lookup_elem(&sluice_state, key);
	__u64 tat = st ? *(volatile __u64 *)&st->tat : now, new_tat;

	return sluice_gcra_admit(tat, now, incr, tol, &new_tat, retry) ? LIMIT_ADMIT : LIMIT_DENY;
}

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
