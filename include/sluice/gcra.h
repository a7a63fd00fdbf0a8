/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The rate arithmetic: the generic cell rate algorithm (GCRA), pure and
 * header-only, compiled into the XDP program and into the unit tests. No
 * clock, no map, no loop, no division: compile.c turns a policy into an
 * interval and a tolerance, bpf/limit.bpf.h supplies the clock and the
 * compare-and-swap.
 *
 * Time is counted in ticks of 2^-SLUICE_GCRA_TICK_SHIFT ns (1/256 ns), so
 * a 64-byte frame at 100 Gbit/s (5.12 ns) is still 1310 ticks. A tick
 * counter wraps every 2^56 ns (2.28 years of uptime); all comparisons are
 * on differences modulo 2^64, as with TCP sequence numbers, so the wrap is
 * harmless.
 *
 * Range (enforced by compile.c, tested in tests/unit/test_gcra.c):
 * - an increment (one packet's cost × interval) is at most
 *   SLUICE_GCRA_INCR_MAX ticks (2^53 ns, 104 days);
 * - a tolerance (burst × interval) is at most SLUICE_GCRA_TOL_MAX ticks
 *   (2^54 ns, 208 days): 1/h admits a burst of up to 5000;
 * - cost × interval_mant < 2^63 for the policy's largest cost (1 packet,
 *   or SLUICE_COST_BYTES_MAX bytes): its unit. A larger cost (a GRO
 *   aggregate's segments or bytes, up to 2^32 units) goes through
 *   sluice_gcra_incr_cost(), whose increment saturates at
 *   SLUICE_GCRA_INCR_SAT, more than any tolerance admits.
 * So tol + skew + incr < 2^64 and nothing below overflows. Rounding always
 * charges up (increments are ceilings, tolerances floors): a packet is
 * charged less than 1 + cost / 2^interval_shift ticks above its exact
 * increment, so the admitted rate errs low, by 0.04 % at 100 Mpps and
 * 0.08 % for 64-byte frames at 100 Gbit/s (under 10^-14 for slow byte
 * rates), and never exceeds the limit.
 *
 * The bound: over any interval of length t, admitted cost ≤ burst + rate·t.
 *
 * Per-CPU batches: a CPU that admits a key's packets takes up to
 * struct sluice_gcra.batch cost units' increments from the key at once and
 * spends them on its own (bpf/limit.bpf.h). What a CPU holds was charged
 * before the window began, at most batch units, so the bound becomes
 * burst + rate·t + CPUs × batch. compile.c chooses the batch as the
 * policy's cost per SLUICE_BATCH_WINDOW_NS, at most 1/SLUICE_BATCH_BURST_DIV
 * of its burst and SLUICE_BATCH_MAX packets; below SLUICE_BATCH_MIN, none
 * (0): a slow limit (10/min, or anything under 2000/s) stays exact. A byte
 * limit counts its batch in full-size frames of SLUICE_BATCH_FRAME_BYTES:
 * at most 64 of them, none under 2 (about 24.2 Mbit/s).
 */
#ifndef SLUICE_GCRA_H
#define SLUICE_GCRA_H

#include "compiler.h"

#define SLUICE_GCRA_TICK_SHIFT 8			 /* ticks per ns = 2^8 */
#define SLUICE_GCRA_SHIFT_MAX  32			 /* largest interval_shift */
#define SLUICE_GCRA_INCR_MAX   (1ULL << 61)		 /* ticks */
#define SLUICE_GCRA_TOL_MAX    (1ULL << 62)		 /* ticks */
#define SLUICE_GCRA_INCR_SAT   (SLUICE_GCRA_TOL_MAX + 1) /* denied under any tolerance */
#define SLUICE_GCRA_LOW_BITS   32 /* sluice_gcra_mul_sat() splits a factor here */

#define SLUICE_BATCH_WINDOW_NS	 SLUICE_NSEC_PER_MSEC /* a batch is at most this much of the rate */
#define SLUICE_BATCH_BURST_DIV	 16		      /* and at most this part of the burst */
#define SLUICE_BATCH_MAX	 64		      /* packets */
#define SLUICE_BATCH_MIN	 2		      /* smaller: no batch */
#define SLUICE_BATCH_FRAME_BYTES 1514 /* a byte limit's batch unit: 1500 B of MTU + Ethernet */

/*
 * How far a stored TAT may be ahead of our clock beyond the tolerance and
 * still be taken as it is: another CPU read a slightly later clock before
 * it stored. Anything further ahead is a debt the current tolerance cannot
 * hold (a limit tightened by a reload, a degraded or shared limit) and
 * counts as a full key. 1 s in ticks: < 2^38.
 */
#define SLUICE_GCRA_SKEW_TICKS (SLUICE_NSEC_PER_SEC << SLUICE_GCRA_TICK_SHIFT)

/* Ticks of a nanosecond clock; wraps (the top 8 bits of the ns count fall off). */
SLUICE_INLINE __u64 sluice_gcra_ticks(__u64 now_ns)
{
	return now_ns << SLUICE_GCRA_TICK_SHIFT;
}

/*
 * Ticks back to nanoseconds, rounded up, for a duration (a retry delay):
 * waiting the returned time is always enough.
 */
SLUICE_INLINE __u64 sluice_gcra_ns(__u64 ticks)
{
	return (ticks + (1ULL << SLUICE_GCRA_TICK_SHIFT) - 1) >> SLUICE_GCRA_TICK_SHIFT;
}

/*
 * The increment one packet of @cost units adds to the TAT, rounded up.
 * cost × mant < 2^63 (compile.c), and the rounding term is < 2^32.
 */
SLUICE_INLINE __u64 sluice_gcra_incr(__u64 cost, __u64 interval_mant, __u32 interval_shift)
{
	__u64 round = (1ULL << interval_shift) - 1;

	return (cost * interval_mant + round) >> interval_shift;
}

/*
 * @n × @x, or SLUICE_GCRA_INCR_SAT when the product is larger: an increment
 * that big is denied anyway, so saturating changes no decision. No
 * division, no 128-bit product: the smaller factor, then below 2^32 or the
 * product past 2^64, times each 32-bit half of the larger.
 */
SLUICE_INLINE __u64 sluice_gcra_mul_sat(__u64 n, __u64 x)
{
	__u64 hi, lo;

	if (n > x) {
		hi = n;
		n = x;
		x = hi;
	}
	if (!n)
		return 0;
	if (n >> SLUICE_GCRA_LOW_BITS || x > SLUICE_GCRA_INCR_SAT)
		return SLUICE_GCRA_INCR_SAT;
	hi = n * (x >> SLUICE_GCRA_LOW_BITS);		     /* < 2^32 · 2^31 */
	lo = n * (x & ((1ULL << SLUICE_GCRA_LOW_BITS) - 1)); /* < 2^64 */
	if (hi >> (63 - SLUICE_GCRA_LOW_BITS) || lo >> 63)
		return SLUICE_GCRA_INCR_SAT;	/* the product is ≥ 2^63 */
	hi = (hi << SLUICE_GCRA_LOW_BITS) + lo; /* < 2^63 + 2^63 */
	return hi > SLUICE_GCRA_INCR_SAT ? SLUICE_GCRA_INCR_SAT : hi;
}

/*
 * The increment of @cost units of any size below 2^32, for a limit whose
 * unit (the largest cost compile.c bounds: 1 packet, or
 * SLUICE_COST_BYTES_MAX bytes) is 2^@unit_shift: the whole units times the
 * unit's increment, plus the rest's. Each part is rounded up, so it
 * charges less than one tick per whole unit, plus one, more than the exact
 * product, never less; a cost of at most one unit gets exactly
 * sluice_gcra_incr(), by one branch: every packet XDP sees, and every
 * frame that is not a GRO aggregate, takes it (the split cost 16
 * instructions per layer, issue #16).
 * Saturates at SLUICE_GCRA_INCR_SAT.
 */
SLUICE_INLINE __u64 sluice_gcra_incr_cost(__u64 cost, __u64 interval_mant, __u32 interval_shift,
					  __u32 unit_shift)
{
	__u64 units, rest, incr;

	if (cost <= 1ULL << unit_shift)
		return sluice_gcra_incr(cost, interval_mant, interval_shift);
	units = cost >> unit_shift;
	rest = cost & ((1ULL << unit_shift) - 1);
	incr = sluice_gcra_mul_sat(
		units, sluice_gcra_incr(1ULL << unit_shift, interval_mant, interval_shift));
	/* ≤ INCR_SAT + INCR_MAX < 2^63 */
	incr += sluice_gcra_incr(rest, interval_mant, interval_shift);
	return incr > SLUICE_GCRA_INCR_SAT ? SLUICE_GCRA_INCR_SAT : incr;
}

/*
 * How far @tat is ahead of @now in ticks (mod 2^64): a key's debt under
 * tolerance @tol. 0 for a TAT in the past: behind the clock by up to half a
 * wrap (1.14 years). A TAT further ahead than tol + skew is a key the
 * tolerance cannot hold: it is full (@tol), never fresh, so tightening a
 * limit hands no key a new burst. Cost: a key idle for between half and a
 * whole wrap looks full, once, for at most its tolerance.
 */
SLUICE_INLINE __u64 sluice_gcra_ahead(__u64 tat, __u64 now, __u64 tol)
{
	__u64 ahead = tat - now;

	if (ahead >> 63)
		return 0;
	return ahead > tol + SLUICE_GCRA_SKEW_TICKS ? tol : ahead;
}

/*
 * Decide one packet. @tat is the stored TAT (pass @now for a key with no
 * state), @incr the packet's increment, @tol the policy's tolerance, all in
 * ticks. Returns 1 and sets *@new_tat to admit; returns 0 and sets
 * *@retry_ticks (how long until the same packet would be admitted) to deny,
 * in which case the caller must leave the stored TAT untouched.
 */
SLUICE_INLINE int sluice_gcra_admit(__u64 tat, __u64 now, __u64 incr, __u64 tol, __u64 *new_tat,
				    __u64 *retry_ticks)
{
	__u64 ahead = sluice_gcra_ahead(tat, now, tol);

	/* ahead ≤ tol + 2^38 ≤ 2^62 + 2^38 and incr ≤ 2^62 + 1: the sum cannot wrap. */
	if (ahead + incr > tol) {
		*retry_ticks = ahead + incr - tol;
		return 0;
	}
	*new_tat = now + ahead + incr;
	return 1;
}

/*
 * Charge @incr on a key whatever its debt: the TAT a later fragment of an
 * admitted datagram leaves (bpf/limit.bpf.h). A TAT in the past counts from
 * @now; the debt is capped at SLUICE_GCRA_TOL_MAX ticks, so it never wraps
 * (debt ≤ 2^62 and incr ≤ 2^61 before the cap). A debt beyond the tolerance
 * is a full key (sluice_gcra_ahead()) until the clock catches up with it.
 */
SLUICE_INLINE __u64 sluice_gcra_charge(__u64 tat, __u64 now, __u64 incr)
{
	__u64 ahead = tat - now;

	if (ahead >> 63)
		ahead = 0;
	if (ahead > SLUICE_GCRA_TOL_MAX)
		ahead = SLUICE_GCRA_TOL_MAX;
	ahead += incr;
	return now + (ahead > SLUICE_GCRA_TOL_MAX ? SLUICE_GCRA_TOL_MAX : ahead);
}

#endif /* SLUICE_GCRA_H */
