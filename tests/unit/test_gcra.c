/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of include/sluice/gcra.h, the rate arithmetic, with time as a
 * parameter (never the wall clock): the exact burst and retry delay, the
 * long-run rate, the bound "admitted cost ≤ burst + rate·t over every
 * window" on long random arrival sequences, precision against the error
 * gcra.h documents, clock edges (idle keys, steps backwards, skew between
 * CPUs, the tick wrap) and overflow edges of sluice_gcra_admit() and
 * sluice_gcra_incr(), and the increment of a GRO aggregate
 * (sluice_gcra_incr_cost(), saturating). The parameters come from params_derive(), this
 * file's own oracle of what compile.c must derive; compile.c itself is
 * tested in test_compile.c. Each table row is a cmocka test of its own,
 * named "<test>: <row>".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sluice/policy.h"
#include "sluice/gcra.h"
#include "rows.h"

#define KILO	      1000ULL
#define MEGA	      (KILO * KILO)
#define GIGA	      (KILO * MEGA)
#define KIB	      1024ULL
#define BITS_PER_BYTE 8ULL
#define ETH_MIN_FRAME 64ULL   /* bytes: the smallest Ethernet frame without FCS */
#define ETH_MTU_FRAME 1500ULL /* bytes: a full-size frame, as the precision rows use */

#define TICKS_PER_NS (1ULL << SLUICE_GCRA_TICK_SHIFT)
#define NS_BITS	     64
/* ns values from here up have their top SLUICE_GCRA_TICK_SHIFT bits set. */
#define NS_TOP_BITS_SET (~0ULL << (NS_BITS - SLUICE_GCRA_TICK_SHIFT))
/* A ns clock crossing a multiple of this wraps the tick counter. */
#define NS_TICK_WRAP (1ULL << (NS_BITS - SLUICE_GCRA_TICK_SHIFT))
#define MUL_LIMIT    ((unsigned __int128)1 << 63) /* cost × interval_mant stays below (gcra.h) */
#define PRODUCT_MAX  ((1ULL << 63) - 1)		  /* so the largest cost × interval_mant allowed */

#define NOW_BASE_NS SLUICE_NSEC_PER_HOUR  /* uptime of the runs that are away from any wrap */
#define UNWRITTEN   0xa5a5a5a5a5a5a5a5ULL /* canary for an output that must stay untouched */

#define LONG_RUN_ARRIVALS  1000000ULL /* arrivals per steady run (cases 2 and 4) */
#define OVERLOAD_FACTOR	   2	      /* steady overload arrives at (at least) this × the rate */
#define RANDOM_ARRIVALS	   200000ULL  /* arrivals per random run (cases 3 and 5) */
#define RANDOM_INCR_TRIALS 100000ULL  /* random (cost, mant, shift) triples */
#define IDLE_TICKS_HOURS   ((3 * SLUICE_NSEC_PER_HOUR) << SLUICE_GCRA_TICK_SHIFT)

/* A policy as the policy file states it. */
struct policy {
	enum sluice_cost cost;
	__u64 amount; /* cost units (packets or bytes) per period */
	__u64 period_ns;
	__u64 burst; /* cost units */
};

/* What compile.c stores in struct sluice_policy for it. */
struct params {
	__u64 mant;  /* interval_mant: ticks << shift per cost unit */
	__u32 shift; /* interval_shift */
	__u64 tol;   /* tolerance, ticks */
};

/* One key's stored state and its policy's parameters. */
struct cell {
	struct params prm;
	__u64 tat;
};

/*
 * The bound, checked exactly over every window between admitted packets:
 * with P the period in ticks, A the amount and S_k the admitted cost up to
 * and including packet k in time order, every i ≤ j must satisfy
 *   (S_j − S_{i−1})·P ≤ burst·P + (t_j − t_i)·A,
 * integers only, so no rounding helps either side. Rearranged,
 *   (S_j·P − t_j·A) − (S_{i−1}·P − t_i·A) ≤ burst·P,
 * so the smallest S_{i−1}·P − t_i·A seen so far makes it one pass. A window
 * between any two arrival times holds the same admitted cost as the window
 * between the first and last admitted packet inside it, and is no shorter.
 */
struct window {
	__int128 period_ticks; /* P */
	__int128 amount;       /* A */
	__int128 sum;	       /* admitted cost so far */
	__int128 min_start;    /* min over admitted i of S_{i−1}·P − t_i·A */
	__int128 max_excess;   /* max over windows of cost·P − t·A; ≤ burst·P */
	int is_empty;
};

/* One arrival of a recorded sequence. */
struct arrival {
	__u64 t_ns; /* from the start of the run; never decreases unless jittered */
	__u64 cost;
};

/* Random traffic shaped by the policy: overload, idle gaps and back-to-back runs. */
struct traffic {
	__u64 rng;	  /* xorshift64 state, never 0 */
	__u64 pkt_gap_ns; /* the interval of a mean-cost packet, ≥ 1 */
	__u64 refill_ns;  /* time to refill the whole burst */
	__u64 run_max;	  /* longest back-to-back run, in packets */
	__u64 run_left;
	__u64 min_cost, max_cost;
};

/* What comes before a run of back-to-back packets. */
enum traffic_idle {
	TRAFFIC_IDLE_OVERLOAD = 0, /* shorter than one packet interval */
	TRAFFIC_IDLE_NEAR_RATE,	   /* up to four packet intervals */
	TRAFFIC_IDLE_PARTIAL,	   /* refills part of the burst */
	TRAFFIC_IDLE_FULL,	   /* refills all of it, and more */
	TRAFFIC_IDLE_MAX,
};

#define TRAFFIC_NEAR_RATE_GAPS 4 /* packet intervals of TRAFFIC_IDLE_NEAR_RATE */
#define TRAFFIC_RUN_SPACED     4 /* one in this many packets of a run comes a little later */
#define TRAFFIC_RUN_GAP_DIV    8 /* by up to this fraction of a packet interval */
#define TRAFFIC_RUN_BURSTS     2 /* a run is up to this many bursts long */

/* Marsaglia's xorshift64 shift triple (13, 7, 17): full period 2^64 − 1. */
#define XORSHIFT_A 13
#define XORSHIFT_B 7
#define XORSHIFT_C 17

static __u64 xorshift64(__u64 *s)
{
	__u64 x = *s;

	x ^= x << XORSHIFT_A;
	x ^= x >> XORSHIFT_B;
	x ^= x << XORSHIFT_C;
	*s = x;
	return x;
}

/* Uniform in 0 .. @n (inclusive); the modulo bias is irrelevant here. */
static __u64 rand_upto(__u64 *s, __u64 n)
{
	return n == ~0ULL ? xorshift64(s) : xorshift64(s) % (n + 1);
}

static unsigned __int128 div_ceil(unsigned __int128 n, unsigned __int128 d)
{
	return (n + d - 1) / d;
}

/* P: the exact interval of one cost unit is P / amount ticks. */
static unsigned __int128 policy_period_ticks(const struct policy *p)
{
	return (unsigned __int128)p->period_ns << SLUICE_GCRA_TICK_SHIFT;
}

static __u64 policy_max_cost(const struct policy *p)
{
	return p->cost == SLUICE_COST_BYTES ? SLUICE_COST_BYTES_MAX : 1;
}

/*
 * The oracle of compile.c. Packets: shift 0, mant = ⌈P / amount⌉ and
 * tol = burst × mant, so exactly burst packets fit at once. Bytes: the
 * largest shift ≤ SLUICE_GCRA_SHIFT_MAX with ⌈P·2^shift / amount⌉ ×
 * SLUICE_COST_BYTES_MAX < 2^63, and tol = ⌊burst × P / amount⌋. Every row
 * must also lie in the range gcra.h states.
 */
static void params_derive(const struct policy *p, struct params *out)
{
	unsigned __int128 period_ticks = policy_period_ticks(p), mant, tol;
	__u32 shift = 0;

	if (p->cost == SLUICE_COST_BYTES) {
		for (shift = SLUICE_GCRA_SHIFT_MAX; shift > 0; shift--)
			if (div_ceil(period_ticks << shift, p->amount) * SLUICE_COST_BYTES_MAX <
			    MUL_LIMIT)
				break;
	}
	mant = div_ceil(period_ticks << shift, p->amount);
	if (p->cost == SLUICE_COST_BYTES)
		tol = p->burst * period_ticks / p->amount;
	else
		tol = p->burst * mant;
	assert_true(mant * policy_max_cost(p) < MUL_LIMIT);
	assert_true(tol <= SLUICE_GCRA_TOL_MAX);
	out->mant = (__u64)mant;
	out->shift = shift;
	out->tol = (__u64)tol;
	assert_true(sluice_gcra_incr(policy_max_cost(p), out->mant, out->shift) <=
		    SLUICE_GCRA_INCR_MAX);
}

static void cell_init(struct cell *c, const struct policy *p, __u64 now)
{
	params_derive(p, &c->prm);
	c->tat = now; /* a key with no state */
}

/*
 * Offer one packet of @cost at @now (ticks). On admit the stored TAT
 * advances; on deny *@retry gets the delay and new_tat must stay unwritten.
 */
static int cell_offer(struct cell *c, __u64 now, __u64 cost, __u64 *retry)
{
	__u64 incr = sluice_gcra_incr(cost, c->prm.mant, c->prm.shift);
	__u64 new_tat = UNWRITTEN, retry_ticks = UNWRITTEN;

	if (!sluice_gcra_admit(c->tat, now, incr, c->prm.tol, &new_tat, &retry_ticks)) {
		assert_int_equal(new_tat, UNWRITTEN);
		assert_int_not_equal(retry_ticks, UNWRITTEN);
		if (retry)
			*retry = retry_ticks;
		return 0;
	}
	c->tat = new_tat;
	return 1;
}

/*
 * Admissions of @cost at @now until the first denial; *@retry is that
 * denial's. No correct limiter admits more than tol / incr at one instant,
 * so a broken one stops one past that instead of looping for ever.
 */
static __u64 cell_fill(struct cell *c, __u64 now, __u64 cost, __u64 *retry)
{
	__u64 most = c->prm.tol / sluice_gcra_incr(cost, c->prm.mant, c->prm.shift), n = 0;

	while (n <= most && cell_offer(c, now, cost, retry))
		n++;
	return n;
}

static void window_init(struct window *w, const struct policy *p)
{
	memset(w, 0, sizeof(*w));
	w->period_ticks = (__int128)policy_period_ticks(p);
	w->amount = p->amount;
	w->is_empty = 1;
}

/* Record an admitted packet; @t_ticks unwrapped, not less than the last one's. */
static void window_admit(struct window *w, __int128 t_ticks, __u64 cost)
{
	__int128 start = w->sum * w->period_ticks - t_ticks * w->amount, end;

	if (w->is_empty || start < w->min_start)
		w->min_start = start;
	w->is_empty = 0;
	w->sum += cost;
	end = w->sum * w->period_ticks - t_ticks * w->amount;
	if (end - w->min_start > w->max_excess)
		w->max_excess = end - w->min_start;
}

static void window_assert_bound(const struct window *w, const struct policy *p)
{
	assert_false(w->is_empty);
	assert_true(w->max_excess <= (__int128)p->burst * w->period_ticks);
}

static __int128 ns_to_ticks_wide(__u64 ns)
{
	return (__int128)ns << SLUICE_GCRA_TICK_SHIFT;
}

/* ---- Case 1: exact burst and the retry delay ---------------------------- */

struct burst_row {
	const char *name;
	struct policy pol;
};

static const struct burst_row burst_rows[] = {
	{ "1/h burst 1",
	  { SLUICE_COST_PKTS, .amount = 1, .period_ns = SLUICE_NSEC_PER_HOUR, .burst = 1 } },
	{ "1/h burst 5000",
	  { SLUICE_COST_PKTS, .amount = 1, .period_ns = SLUICE_NSEC_PER_HOUR, .burst = 5000 } },
	{ "10/min burst 5",
	  { SLUICE_COST_PKTS, .amount = 10, .period_ns = SLUICE_NSEC_PER_MIN, .burst = 5 } },
	{ "100/s burst 200",
	  { SLUICE_COST_PKTS, .amount = 100, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 200 } },
	{ "3/s burst 1 (interval not whole ticks)",
	  { SLUICE_COST_PKTS, .amount = 3, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 1 } },
	{ "1e6/s burst 64",
	  { SLUICE_COST_PKTS, .amount = MEGA, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 64 } },
	{ "100e6/s burst 1000",
	  { SLUICE_COST_PKTS, .amount = 100 * MEGA, .period_ns = SLUICE_NSEC_PER_SEC,
	    .burst = 1000 } },
};

/*
 * Exactly burst packets at one instant pass and the next is denied; its
 * retry delay is exact: denied one tick earlier, admitted then.
 */
static void assert_exact_burst(struct cell *c, const struct policy *p, __u64 now)
{
	__u64 retry = 0, tat;

	assert_int_equal(cell_fill(c, now, 1, &retry), p->burst);
	tat = c->tat;
	assert_true(retry > 0);
	assert_int_equal(cell_offer(c, now + retry - 1, 1, NULL), 0);
	assert_int_equal(c->tat, tat);
	assert_int_equal(cell_offer(c, now + retry, 1, NULL), 1);
	assert_int_equal(c->tat, tat + c->prm.mant);
	assert_int_equal(cell_offer(c, now + retry, 1, NULL), 0);
}

static void test_exact_burst(void **state)
{
	const struct burst_row *row = *state;
	__u64 now = sluice_gcra_ticks(NOW_BASE_NS);
	struct cell c;

	cell_init(&c, &row->pol, now);
	assert_exact_burst(&c, &row->pol, now);
}

/* ---- Case 2 and 4: long-run rate and precision --------------------------- */

struct steady {
	__u64 admitted; /* packets */
	__u64 span_ns;	/* first admitted arrival to the last arrival */
	struct window win;
};

/* @n arrivals of @cost, @gap_ns apart, from @base_ns, on a fresh key. */
static void steady_run(const struct policy *p, __u64 base_ns, __u64 gap_ns, __u64 cost, __u64 n,
		       struct steady *out)
{
	__u64 i, first_ns = 0, t_ns = 0;
	struct cell c;

	cell_init(&c, p, sluice_gcra_ticks(base_ns));
	window_init(&out->win, p);
	out->admitted = 0;
	for (i = 0; i < n; i++, t_ns += gap_ns) {
		if (!cell_offer(&c, sluice_gcra_ticks(base_ns + t_ns), cost, NULL))
			continue;
		if (!out->admitted)
			first_ns = t_ns;
		out->admitted++;
		window_admit(&out->win, ns_to_ticks_wide(t_ns), cost);
	}
	out->span_ns = t_ns - gap_ns - first_ns;
}

/*
 * Overload at @gap_ns: never more than the bound (every window), and no
 * less than it allows minus the error gcra.h documents, one tick per
 * packet. Derivation: while the TAT stays ahead of the clock (true when
 * tol ≥ incr + gap) it grows by exactly incr per admission, so N packets
 * admitted and the next one never means t_first + (N + 1)·incr − tol >
 * t_last, i.e. N ≥ ⌊(span + tol) / incr⌋. With incr ≤ cost·P/A + 1 that
 * gives N ≥ ⌊(span + tol)·A / (cost·P + A)⌋, which is (burst + rate·t) ×
 * (1 − 1/(cost·P/A + 1)) rounded down to whole packets.
 */
static void assert_steady_overload(const struct policy *p, __u64 gap_ns, __u64 cost)
{
	unsigned __int128 period_ticks = policy_period_ticks(p), span_ticks, least;
	struct params prm;
	struct steady s;

	params_derive(p, &prm);
	assert_true(prm.tol >= sluice_gcra_incr(cost, prm.mant, prm.shift) +
				       (gap_ns << SLUICE_GCRA_TICK_SHIFT));
	assert_true((unsigned __int128)gap_ns * p->amount * OVERLOAD_FACTOR <=
		    (unsigned __int128)cost * p->period_ns);
	steady_run(p, NOW_BASE_NS, gap_ns, cost, LONG_RUN_ARRIVALS, &s);
	window_assert_bound(&s.win, p);
	span_ticks = (unsigned __int128)s.span_ns << SLUICE_GCRA_TICK_SHIFT;
	least = (span_ticks + prm.tol) * p->amount / (cost * period_ticks + p->amount);
	assert_true(s.admitted >= least);
	assert_true(s.admitted < LONG_RUN_ARRIVALS); /* the overload was real */
}

/* A packet interval over OVERLOAD_FACTOR, rounded down to whole ns. */
static __u64 overload_gap_ns(const struct policy *p, __u64 cost)
{
	return cost * p->period_ns / p->amount / OVERLOAD_FACTOR;
}

struct rate_row {
	const char *name;
	struct policy pol;
	__u64 pkt_cost;	  /* cost of every packet: 1, or its frame bytes */
	__u64 quoted_ppm; /* the error gcra.h quotes for this rate, parts per million; 0: none */
};

#define PPM 1000000ULL

/* Case 2: bursts ≥ 2, so 2× overload keeps the TAT ahead (see assert_steady_overload). */
static const struct rate_row long_run_rows[] = {
	{ "1/h burst 5",
	  { SLUICE_COST_PKTS, .amount = 1, .period_ns = SLUICE_NSEC_PER_HOUR, .burst = 5 },
	  .pkt_cost = 1 },
	{ "10/min burst 5",
	  { SLUICE_COST_PKTS, .amount = 10, .period_ns = SLUICE_NSEC_PER_MIN, .burst = 5 },
	  .pkt_cost = 1 },
	{ "100/s burst 200",
	  { SLUICE_COST_PKTS, .amount = 100, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 200 },
	  .pkt_cost = 1 },
	{ "3/s burst 2",
	  { SLUICE_COST_PKTS, .amount = 3, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 2 },
	  .pkt_cost = 1 },
	{ "1e6/s burst 64",
	  { SLUICE_COST_PKTS, .amount = MEGA, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 64 },
	  .pkt_cost = 1 },
	{ "100e6/s burst 1000",
	  { SLUICE_COST_PKTS, .amount = 100 * MEGA, .period_ns = SLUICE_NSEC_PER_SEC,
	    .burst = 1000 },
	  .pkt_cost = 1 },
};

static void test_long_run_overload(void **state)
{
	const struct rate_row *row = *state;

	assert_steady_overload(&row->pol, overload_gap_ns(&row->pol, row->pkt_cost), row->pkt_cost);
}

/* At the rate or below (the interval rounded up to whole ns), everything passes. */
static void test_long_run_at_rate(void **state)
{
	const struct burst_row *row = *state;
	__u64 gap_ns = div_ceil(row->pol.period_ns, row->pol.amount);
	struct steady s;

	steady_run(&row->pol, NOW_BASE_NS, gap_ns, 1, LONG_RUN_ARRIVALS, &s);
	assert_int_equal(s.admitted, LONG_RUN_ARRIVALS);
	window_assert_bound(&s.win, &row->pol);
}

/* Case 4: the rates gcra.h quotes its error for, and the extremes. */
static const struct rate_row precision_rows[] = {
	{ "100e6/s burst 1000",
	  { SLUICE_COST_PKTS, .amount = 100 * MEGA, .period_ns = SLUICE_NSEC_PER_SEC,
	    .burst = 1000 },
	  .pkt_cost = 1,
	  .quoted_ppm = 400 },
	{ "1e6/s burst 64",
	  { SLUICE_COST_PKTS, .amount = MEGA, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 64 },
	  .pkt_cost = 1 },
	{ "3/s burst 2",
	  { SLUICE_COST_PKTS, .amount = 3, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 2 },
	  .pkt_cost = 1 },
	{ "1/h burst 2",
	  { SLUICE_COST_PKTS, .amount = 1, .period_ns = SLUICE_NSEC_PER_HOUR, .burst = 2 },
	  .pkt_cost = 1 },
	{ "100 Gbit/s burst 64 KiB, 64-byte frames",
	  { SLUICE_COST_BYTES, .amount = 100 * GIGA / BITS_PER_BYTE,
	    .period_ns = SLUICE_NSEC_PER_SEC, .burst = 64 * KIB },
	  .pkt_cost = ETH_MIN_FRAME,
	  .quoted_ppm = 800 },
	{ "10 Mbit/s burst 64 KiB, 1500-byte frames",
	  { SLUICE_COST_BYTES, .amount = 10 * MEGA / BITS_PER_BYTE,
	    .period_ns = SLUICE_NSEC_PER_SEC, .burst = 64 * KIB },
	  .pkt_cost = ETH_MTU_FRAME },
};

/*
 * Within the error gcra.h documents (see assert_steady_overload); where it
 * quotes that error as a percentage, one tick per packet is within it.
 */
static void test_precision(void **state)
{
	const struct rate_row *row = *state;

	if (row->quoted_ppm)
		assert_true((unsigned __int128)row->pol.amount * PPM <=
			    (unsigned __int128)row->quoted_ppm * row->pkt_cost *
				    policy_period_ticks(&row->pol));
	assert_steady_overload(&row->pol, overload_gap_ns(&row->pol, row->pkt_cost), row->pkt_cost);
}

/* ---- Case 3 and 5: the bound on random arrivals --------------------------- */

struct random_row {
	const char *name;
	struct policy pol;
	__u64 min_cost, max_cost; /* packet cost range: 1..1, or bytes */
	__u64 seed;
	__u64 jitter_ns; /* each clock reading up to this much behind (< skew) */
};

static void traffic_init(struct traffic *tr, const struct random_row *row)
{
	__u64 mean_cost = (row->min_cost + row->max_cost) / 2;

	memset(tr, 0, sizeof(*tr));
	tr->rng = row->seed;
	tr->pkt_gap_ns = mean_cost * row->pol.period_ns / row->pol.amount;
	if (!tr->pkt_gap_ns)
		tr->pkt_gap_ns = 1;
	tr->refill_ns = row->pol.burst * row->pol.period_ns / row->pol.amount;
	tr->run_max = TRAFFIC_RUN_BURSTS * (row->pol.burst / mean_cost + 1);
	tr->min_cost = row->min_cost;
	tr->max_cost = row->max_cost;
}

static __u64 traffic_next_gap(struct traffic *tr)
{
	if (tr->run_left) {
		tr->run_left--;
		if (rand_upto(&tr->rng, TRAFFIC_RUN_SPACED - 1))
			return 0;
		return rand_upto(&tr->rng, tr->pkt_gap_ns / TRAFFIC_RUN_GAP_DIV);
	}
	tr->run_left = rand_upto(&tr->rng, tr->run_max - 1);
	switch (rand_upto(&tr->rng, TRAFFIC_IDLE_MAX - 1)) {
	case TRAFFIC_IDLE_OVERLOAD: return rand_upto(&tr->rng, tr->pkt_gap_ns);
	case TRAFFIC_IDLE_NEAR_RATE:
		return rand_upto(&tr->rng, TRAFFIC_NEAR_RATE_GAPS * tr->pkt_gap_ns);
	case TRAFFIC_IDLE_PARTIAL: return rand_upto(&tr->rng, tr->refill_ns);
	default: return tr->refill_ns + rand_upto(&tr->rng, tr->refill_ns);
	}
}

/* @n arrivals; with jitter, each t_ns is a clock reading up to jitter_ns behind. */
static struct arrival *traffic_record(const struct random_row *row, __u64 n)
{
	struct arrival *arr = calloc(n, sizeof(*arr));
	struct traffic tr;
	__u64 i, t_ns = row->jitter_ns;

	assert_non_null(arr);
	traffic_init(&tr, row);
	for (i = 0; i < n; i++) {
		t_ns += traffic_next_gap(&tr);
		arr[i].t_ns = t_ns - rand_upto(&tr.rng, row->jitter_ns);
		arr[i].cost = tr.min_cost + rand_upto(&tr.rng, tr.max_cost - tr.min_cost);
	}
	return arr;
}

/* Offer @arr in order from @base_ns; admitted[i] is the decision on arr[i]. */
static void traffic_replay(const struct random_row *row, __u64 base_ns, const struct arrival *arr,
			   __u64 n, unsigned char *admitted)
{
	struct cell c;
	__u64 i;

	cell_init(&c, &row->pol, sluice_gcra_ticks(base_ns + arr[0].t_ns));
	for (i = 0; i < n; i++)
		admitted[i] =
			cell_offer(&c, sluice_gcra_ticks(base_ns + arr[i].t_ns), arr[i].cost, NULL);
}

static int cmp_arrival_time(const void *a, const void *b)
{
	const struct arrival *x = a, *y = b;

	return x->t_ns < y->t_ns ? -1 : x->t_ns > y->t_ns;
}

/*
 * The bound over every window of the admitted packets, in time order (a
 * jittered clock offers them out of order), and proof that the run came
 * close to it: some window used all of the burst but one packet, less what
 * the rate refills while jitter spreads one instant's packets apart.
 */
static void assert_random_bound(const struct random_row *row, const struct arrival *arr, __u64 n,
				const unsigned char *admitted)
{
	struct arrival *ok = calloc(n, sizeof(*ok));
	__u64 i, n_ok = 0;
	struct window w;

	assert_non_null(ok);
	for (i = 0; i < n; i++)
		if (admitted[i])
			ok[n_ok++] = arr[i];
	assert_true(n_ok > 0 && n_ok < n);
	qsort(ok, n_ok, sizeof(*ok), cmp_arrival_time);
	window_init(&w, &row->pol);
	for (i = 0; i < n_ok; i++)
		window_admit(&w, ns_to_ticks_wide(ok[i].t_ns), ok[i].cost);
	free(ok);
	window_assert_bound(&w, &row->pol);
	assert_true(w.max_excess >= (__int128)(row->pol.burst - row->max_cost) * w.period_ticks -
					    ns_to_ticks_wide(row->jitter_ns) * w.amount);
}

static const struct random_row random_rows[] = {
	{ "100/s burst 10",
	  { SLUICE_COST_PKTS, .amount = 100, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 10 },
	  .min_cost = 1,
	  .max_cost = 1,
	  .seed = 0x9e3779b97f4a7c15ULL },
	{ "3/s burst 1",
	  { SLUICE_COST_PKTS, .amount = 3, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 1 },
	  .min_cost = 1,
	  .max_cost = 1,
	  .seed = 0x2545f4914f6cdd1dULL },
	{ "1/h burst 5000",
	  { SLUICE_COST_PKTS, .amount = 1, .period_ns = SLUICE_NSEC_PER_HOUR, .burst = 5000 },
	  .min_cost = 1,
	  .max_cost = 1,
	  .seed = 0x1b873593ULL },
	{ "1e6/s burst 64",
	  { SLUICE_COST_PKTS, .amount = MEGA, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 64 },
	  .min_cost = 1,
	  .max_cost = 1,
	  .seed = 0xcc9e2d51ULL },
	{ "100e6/s burst 1000",
	  { SLUICE_COST_PKTS, .amount = 100 * MEGA, .period_ns = SLUICE_NSEC_PER_SEC,
	    .burst = 1000 },
	  .min_cost = 1,
	  .max_cost = 1,
	  .seed = 0x85ebca6bULL },
	{ "100 Gbit/s burst 64 KiB, 64-byte frames",
	  { SLUICE_COST_BYTES, .amount = 100 * GIGA / BITS_PER_BYTE,
	    .period_ns = SLUICE_NSEC_PER_SEC, .burst = 64 * KIB },
	  .min_cost = ETH_MIN_FRAME,
	  .max_cost = ETH_MIN_FRAME,
	  .seed = 0xc2b2ae35ULL },
	{ "100 Gbit/s burst 1 MiB, 64..65536-byte frames",
	  { SLUICE_COST_BYTES, .amount = 100 * GIGA / BITS_PER_BYTE,
	    .period_ns = SLUICE_NSEC_PER_SEC, .burst = KIB * KIB },
	  .min_cost = ETH_MIN_FRAME,
	  .max_cost = SLUICE_COST_BYTES_MAX,
	  .seed = 0x27d4eb2fULL },
	{ "10 Mbit/s burst 256 KiB, 64..65536-byte frames",
	  { SLUICE_COST_BYTES, .amount = 10 * MEGA / BITS_PER_BYTE,
	    .period_ns = SLUICE_NSEC_PER_SEC, .burst = 256 * KIB },
	  .min_cost = ETH_MIN_FRAME,
	  .max_cost = SLUICE_COST_BYTES_MAX,
	  .seed = 0x165667b1ULL },
	{ "1 kbit/s burst 128 KiB, 64..65536-byte frames",
	  { SLUICE_COST_BYTES, .amount = KILO / BITS_PER_BYTE, .period_ns = SLUICE_NSEC_PER_SEC,
	    .burst = 128 * KIB },
	  .min_cost = ETH_MIN_FRAME,
	  .max_cost = SLUICE_COST_BYTES_MAX,
	  .seed = 0xd3a2646cULL },
};

static void test_random_bound(void **state)
{
	const struct random_row *row = *state;
	struct arrival *arr = traffic_record(row, RANDOM_ARRIVALS);
	unsigned char *admitted = calloc(RANDOM_ARRIVALS, sizeof(*admitted));

	assert_non_null(admitted);
	traffic_replay(row, NOW_BASE_NS, arr, RANDOM_ARRIVALS, admitted);
	assert_random_bound(row, arr, RANDOM_ARRIVALS, admitted);
	free(admitted);
	free(arr);
}

/*
 * Case 5: CPUs whose clocks disagree by less than the skew, each reading
 * taken up to jitter_ns late: still the bound. The jitter stays below the
 * time to refill the burst, so the sharpness check still means something.
 */
static const struct random_row jitter_rows[] = {
	{ "100/s burst 10, clocks 10 ms apart",
	  { SLUICE_COST_PKTS, .amount = 100, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 10 },
	  .min_cost = 1,
	  .max_cost = 1,
	  .seed = 0x2545f4914f6cdd1dULL,
	  .jitter_ns = 10 * SLUICE_NSEC_PER_MSEC },
	{ "1e6/s burst 64, clocks 20 us apart",
	  { SLUICE_COST_PKTS, .amount = MEGA, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 64 },
	  .min_cost = 1,
	  .max_cost = 1,
	  .seed = 0x9e3779b97f4a7c15ULL,
	  .jitter_ns = 20 * SLUICE_NSEC_PER_USEC },
	{ "10/min burst 5, clocks 900 ms apart",
	  { SLUICE_COST_PKTS, .amount = 10, .period_ns = SLUICE_NSEC_PER_MIN, .burst = 5 },
	  .min_cost = 1,
	  .max_cost = 1,
	  .seed = 0xcc9e2d51ULL,
	  .jitter_ns = 900 * SLUICE_NSEC_PER_MSEC },
	{ "10 Mbit/s burst 256 KiB, clocks 100 us apart",
	  { SLUICE_COST_BYTES, .amount = 10 * MEGA / BITS_PER_BYTE,
	    .period_ns = SLUICE_NSEC_PER_SEC, .burst = 256 * KIB },
	  .min_cost = ETH_MIN_FRAME,
	  .max_cost = SLUICE_COST_BYTES_MAX,
	  .seed = 0x27d4eb2fULL,
	  .jitter_ns = 100 * SLUICE_NSEC_PER_USEC },
};

/* ---- Case 5: clock edges --------------------------------------------------- */

struct idle_row {
	const char *name;
	__u64 past_ticks; /* how far the TAT is behind the clock */
	int is_longest;	  /* instead: 2^63, half a wrap, the longest idle gcra.h
			   * still tells from a TAT ahead of the clock */
};

static const struct idle_row idle_rows[] = {
	{ "one tick", .past_ticks = 1 },
	{ "three hours", .past_ticks = IDLE_TICKS_HOURS },
	{ "half a tick wrap", .past_ticks = 1ULL << (NS_BITS - 1) },
	{ "the longest idle still seen as idle", .is_longest = 1 },
};

/*
 * A key idle for hours (its TAT far in the past, by any amount up to what
 * gcra.h can tell apart from a TAT ahead of the clock) has its whole burst
 * again, and no more.
 */
static void test_idle(void **state)
{
	const struct burst_row *row = *state;
	__u64 now = sluice_gcra_ticks(NOW_BASE_NS), past, i;
	struct cell c;

	cell_init(&c, &row->pol, now);
	assert_int_equal(cell_fill(&c, now, 1, NULL), row->pol.burst);
	for (i = 0; i < ARRAY_SIZE(idle_rows); i++) {
		past = idle_rows[i].past_ticks;
		if (idle_rows[i].is_longest)
			past = 1ULL << 63;
		now = c.tat + past;
		assert_exact_burst(&c, &row->pol, now);
	}
}

struct step_row {
	const char *name;
	struct policy pol;
	__u64 used;	  /* packets admitted before the clock steps back */
	__u64 back_ticks; /* < SLUICE_GCRA_SKEW_TICKS */
};

static const struct step_row step_rows[] = {
	{ "100/s burst 200, all used, back 1 tick",
	  { SLUICE_COST_PKTS, .amount = 100, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 200 },
	  .used = 200,
	  .back_ticks = 1 },
	{ "100/s burst 200, 150 used, back 1 ns",
	  { SLUICE_COST_PKTS, .amount = 100, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 200 },
	  .used = 150,
	  .back_ticks = TICKS_PER_NS },
	{ "100/s burst 200, 150 used, back 200 ms",
	  { SLUICE_COST_PKTS, .amount = 100, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 200 },
	  .used = 150,
	  .back_ticks = (200 * SLUICE_NSEC_PER_MSEC) << SLUICE_GCRA_TICK_SHIFT },
	{ "3/s burst 5, 2 used, back 1 ns",
	  { SLUICE_COST_PKTS, .amount = 3, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 5 },
	  .used = 2,
	  .back_ticks = TICKS_PER_NS },
	{ "1e6/s burst 64, 10 used, back skew − 1 tick",
	  { SLUICE_COST_PKTS, .amount = MEGA, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 64 },
	  .used = 10,
	  .back_ticks = SLUICE_GCRA_SKEW_TICKS - 1 },
	{ "1/h burst 5000, 1 used, back skew − 1 tick",
	  { SLUICE_COST_PKTS, .amount = 1, .period_ns = SLUICE_NSEC_PER_HOUR, .burst = 5000 },
	  .used = 1,
	  .back_ticks = SLUICE_GCRA_SKEW_TICKS - 1 },
};

/*
 * The clock steps back by δ < skew after @used admissions: what is left is
 * burst − used − ⌈δ / interval⌉ (never below 0), so the window [now − δ,
 * now] holds no more than the burst; the retry delay stays exact.
 */
static void test_clock_step_back(void **state)
{
	const struct step_row *row = *state;
	__u64 now = sluice_gcra_ticks(NOW_BASE_NS), i, lost, left, retry = 0, tat;
	struct cell c;

	cell_init(&c, &row->pol, now);
	for (i = 0; i < row->used; i++)
		assert_int_equal(cell_offer(&c, now, 1, NULL), 1);
	lost = div_ceil(row->back_ticks, c.prm.mant);
	left = row->pol.burst - row->used > lost ? row->pol.burst - row->used - lost : 0;
	now -= row->back_ticks;
	assert_int_equal(cell_fill(&c, now, 1, &retry), left);
	tat = c.tat;
	assert_int_equal(cell_offer(&c, now + retry - 1, 1, NULL), 0);
	assert_int_equal(cell_offer(&c, now + retry, 1, NULL), 1);
	assert_int_equal(c.tat, tat + c.prm.mant);
}

static void test_clock_jitter(void **state)
{
	const struct random_row *row = *state;

	assert_true(row->jitter_ns << SLUICE_GCRA_TICK_SHIFT < SLUICE_GCRA_SKEW_TICKS);
	test_random_bound(state);
}

struct skew_row {
	const char *name;
	__u64 beyond_tol; /* the stored TAT is tol + this ahead of our clock */
	int is_full;	  /* beyond what any tolerance holds: a full key */
};

static const struct skew_row skew_rows[] = {
	{ "1 tick beyond tolerance: deny", 1, 0 },
	{ "half the skew beyond tolerance: deny", SLUICE_GCRA_SKEW_TICKS / 2, 0 },
	{ "the whole skew beyond tolerance: deny", SLUICE_GCRA_SKEW_TICKS, 0 },
	{ "past the skew: a tightened limit, full", SLUICE_GCRA_SKEW_TICKS + 1, 1 },
	{ "three hours past the tolerance: full", IDLE_TICKS_HOURS, 1 },
};

/*
 * Another CPU stored a TAT from a slightly later clock: beyond the
 * tolerance but within the skew it is debt (deny, retry exact, no reset).
 * Further ahead it is a debt the tolerance cannot hold, a limit tightened
 * under the key: full, never fresh. It denies (retry one increment, the TAT
 * untouched) until the agent carries the TAT to now + tol, from which the
 * key drains as any full key.
 */
static void test_skew(void **state)
{
	const struct burst_row *row = *state;
	__u64 now = sluice_gcra_ticks(NOW_BASE_NS), retry = 0, tat, i;
	struct cell c;

	cell_init(&c, &row->pol, now);
	for (i = 0; i < ARRAY_SIZE(skew_rows); i++) {
		c.tat = now + c.prm.tol + skew_rows[i].beyond_tol;
		if (skew_rows[i].is_full) {
			tat = c.tat;
			assert_int_equal(cell_offer(&c, now, 1, &retry), 0);
			assert_int_equal(retry, c.prm.mant);
			assert_int_equal(cell_offer(&c, now + 1, 1, NULL), 0);
			assert_int_equal(c.tat, tat);
			c.tat = now + c.prm.tol; /* the agent's conversion */
			assert_int_equal(cell_offer(&c, now + c.prm.mant - 1, 1, NULL), 0);
			assert_int_equal(cell_offer(&c, now + c.prm.mant, 1, NULL), 1);
			continue;
		}
		assert_int_equal(cell_offer(&c, now, 1, &retry), 0);
		assert_int_equal(retry, skew_rows[i].beyond_tol + c.prm.mant);
		assert_int_equal(cell_offer(&c, now + retry - 1, 1, NULL), 0);
		assert_int_equal(cell_offer(&c, now + retry, 1, NULL), 1);
		assert_int_equal(c.tat, now + c.prm.tol + skew_rows[i].beyond_tol + c.prm.mant);
	}
}

/* Where a run starts: away from any wrap, or so that it crosses one halfway. */
enum wrap_base {
	WRAP_BASE_TICKS = 0, /* the tick counter wraps past 0 */
	WRAP_BASE_TOP_BITS,  /* the ns clock gets its top 8 bits set */
	WRAP_BASE_MAX,
};

static __u64 wrap_base_ns(enum wrap_base base, __u64 span_ns)
{
	return (base == WRAP_BASE_TICKS ? NS_TICK_WRAP : NS_TOP_BITS_SET) - span_ns / 2;
}

/*
 * Exact burst across the wrap: the burst starts a few ticks before the tick
 * counter wraps, so every new TAT lands past 0; and the same random arrivals
 * get the same decisions across either wrap as away from it.
 */
static void test_wrap(void **state)
{
	const struct random_row *row = *state;
	struct arrival *arr = traffic_record(row, RANDOM_ARRIVALS);
	unsigned char *away = calloc(RANDOM_ARRIVALS, sizeof(*away));
	unsigned char *across = calloc(RANDOM_ARRIVALS, sizeof(*across));
	__u64 span_ns = arr[RANDOM_ARRIVALS - 1].t_ns, now;
	int base;
	struct cell c;

	assert_non_null(away);
	assert_non_null(across);
	now = 0 - TICKS_PER_NS;
	cell_init(&c, &row->pol, now);
	if (row->pol.cost == SLUICE_COST_PKTS)
		assert_exact_burst(&c, &row->pol, now);
	traffic_replay(row, NOW_BASE_NS, arr, RANDOM_ARRIVALS, away);
	for (base = 0; base < WRAP_BASE_MAX; base++) {
		__u64 base_ns = wrap_base_ns(base, span_ns);

		assert_true(sluice_gcra_ticks(base_ns + span_ns) < sluice_gcra_ticks(base_ns));
		traffic_replay(row, base_ns, arr, RANDOM_ARRIVALS, across);
		assert_memory_equal(away, across, RANDOM_ARRIVALS);
	}
	assert_random_bound(row, arr, RANDOM_ARRIVALS, across);
	free(across);
	free(away);
	free(arr);
}

static const struct random_row wrap_rows[] = {
	{ "100/s burst 200",
	  { SLUICE_COST_PKTS, .amount = 100, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 200 },
	  .min_cost = 1,
	  .max_cost = 1,
	  .seed = 0x85ebca6bULL },
	{ "3/s burst 1",
	  { SLUICE_COST_PKTS, .amount = 3, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 1 },
	  .min_cost = 1,
	  .max_cost = 1,
	  .seed = 0xc2b2ae35ULL },
	{ "10 Mbit/s burst 256 KiB, 64..65536-byte frames",
	  { SLUICE_COST_BYTES, .amount = 10 * MEGA / BITS_PER_BYTE,
	    .period_ns = SLUICE_NSEC_PER_SEC, .burst = 256 * KIB },
	  .min_cost = ETH_MIN_FRAME,
	  .max_cost = SLUICE_COST_BYTES_MAX,
	  .seed = 0x1b873593ULL },
};

/* sluice_gcra_ticks() drops the top 8 bits of ns; differences survive. */
static void test_ticks_top_bits(void **state)
{
	static const __u64 offsets_ns[] = { 1, 2, SLUICE_NSEC_PER_SEC, SLUICE_NSEC_PER_HOUR };
	__u64 i, j;

	(void)state;
	assert_int_equal(sluice_gcra_ticks(NS_TOP_BITS_SET), 0);
	assert_int_equal(sluice_gcra_ticks(NS_TICK_WRAP), 0);
	assert_int_equal(sluice_gcra_ticks(NS_TOP_BITS_SET - 1), 0 - TICKS_PER_NS);
	for (i = 0; i < ARRAY_SIZE(offsets_ns); i++) {
		for (j = 0; j < ARRAY_SIZE(offsets_ns); j++) {
			__u64 a = NS_TOP_BITS_SET - offsets_ns[i],
			      b = NS_TOP_BITS_SET + offsets_ns[j];

			assert_int_equal(sluice_gcra_ticks(b) - sluice_gcra_ticks(a),
					 (b - a) << SLUICE_GCRA_TICK_SHIFT);
			assert_int_equal(
				sluice_gcra_ns(sluice_gcra_ticks(b) - sluice_gcra_ticks(a)), b - a);
		}
	}
}

/* ---- Case 6: overflow edges ---------------------------------------------- */

struct extreme_row {
	const char *name;
	__u64 now;
};

static const struct extreme_row extreme_rows[] = {
	{ "now away from the wrap", NOW_BASE_NS << SLUICE_GCRA_TICK_SHIFT },
	{ "now 1 tick before the wrap", ~0ULL },
	{ "now at the wrap", 0 },
};

/*
 * The largest increment with the largest tolerance: the TAT ahead by
 * tol + skew still counts as debt and the retry delay is exact, so
 * ahead + incr did not wrap; the tolerance fits exactly.
 */
static void test_overflow_admit(void **state)
{
	const struct extreme_row *row = *state;
	const __u64 incr = SLUICE_GCRA_INCR_MAX, tol = SLUICE_GCRA_TOL_MAX;
	__u64 now = row->now, new_tat = UNWRITTEN, retry = UNWRITTEN;

	assert_int_equal(sluice_gcra_admit(now + tol + SLUICE_GCRA_SKEW_TICKS, now, incr, tol,
					   &new_tat, &retry),
			 0);
	assert_int_equal(new_tat, UNWRITTEN);
	assert_int_equal(retry, SLUICE_GCRA_SKEW_TICKS + incr);

	assert_int_equal(sluice_gcra_admit(now + tol - incr + 1, now, incr, tol, &new_tat, &retry),
			 0);
	assert_int_equal(retry, 1);

	assert_int_equal(sluice_gcra_admit(now + tol - incr, now, incr, tol, &new_tat, &retry), 1);
	assert_int_equal(new_tat, now + tol);

	assert_int_equal(sluice_gcra_admit(now, now, incr, tol, &new_tat, &retry), 1);
	assert_int_equal(new_tat, now + incr);
}

/* ---- Case 7: sluice_gcra_incr rounding --------------------------------- */

struct incr_row {
	const char *name;
	__u64 cost, mant;
	__u32 shift;
};

/* Products just under 2^63 with the largest shift: the rounding term must not overflow. */
static const struct incr_row incr_rows[] = {
	{ "largest frame, largest mant, shift 32", SLUICE_COST_BYTES_MAX,
	  PRODUCT_MAX / SLUICE_COST_BYTES_MAX, SLUICE_GCRA_SHIFT_MAX },
	{ "one unit, mant 2^63 − 1, shift 32", 1, PRODUCT_MAX, SLUICE_GCRA_SHIFT_MAX },
	{ "3 units, mant ⌊(2^63 − 1)/3⌋, shift 32", 3, PRODUCT_MAX / 3, SLUICE_GCRA_SHIFT_MAX },
	{ "largest frame, largest mant, shift 0", SLUICE_COST_BYTES_MAX,
	  PRODUCT_MAX / SLUICE_COST_BYTES_MAX, 0 },
	{ "exact multiple, shift 32", 2, 1ULL << SLUICE_GCRA_SHIFT_MAX, SLUICE_GCRA_SHIFT_MAX },
};

static void assert_incr_ceiling(__u64 cost, __u64 mant, __u32 shift)
{
	unsigned __int128 product = (unsigned __int128)cost * mant;

	assert_true(product < MUL_LIMIT);
	assert_int_equal(sluice_gcra_incr(cost, mant, shift),
			 (__u64)div_ceil(product, (unsigned __int128)1 << shift));
}

static void test_incr_extreme(void **state)
{
	const struct incr_row *row = *state;

	assert_incr_ceiling(row->cost, row->mant, row->shift);
}

static void test_incr_random(void **state)
{
	__u64 rng = 0x9e3779b97f4a7c15ULL, i, cost, mant;
	__u32 shift;

	(void)state;
	for (i = 0; i < RANDOM_INCR_TRIALS; i++) {
		cost = 1 + rand_upto(&rng, SLUICE_COST_BYTES_MAX - 1);
		mant = 1 + rand_upto(&rng, PRODUCT_MAX / cost - 1);
		shift = rand_upto(&rng, SLUICE_GCRA_SHIFT_MAX);
		assert_incr_ceiling(cost, mant, shift);
	}
}

/* Every rate row of the file, bytes and packets. */
static const struct policy incr_policies[] = {
	{ SLUICE_COST_PKTS, .amount = 1, .period_ns = SLUICE_NSEC_PER_HOUR, .burst = 1 },
	{ SLUICE_COST_PKTS, .amount = 3, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 1 },
	{ SLUICE_COST_PKTS, .amount = 100 * MEGA, .period_ns = SLUICE_NSEC_PER_SEC, .burst = 1 },
	{ SLUICE_COST_BYTES, .amount = 100 * GIGA / BITS_PER_BYTE, .period_ns = SLUICE_NSEC_PER_SEC,
	  .burst = SLUICE_COST_BYTES_MAX },
	{ SLUICE_COST_BYTES, .amount = 10 * MEGA / BITS_PER_BYTE, .period_ns = SLUICE_NSEC_PER_SEC,
	  .burst = SLUICE_COST_BYTES_MAX },
	{ SLUICE_COST_BYTES, .amount = KILO / BITS_PER_BYTE, .period_ns = SLUICE_NSEC_PER_SEC,
	  .burst = SLUICE_COST_BYTES_MAX },
	{ SLUICE_COST_BYTES, .amount = 3, .period_ns = SLUICE_NSEC_PER_SEC,
	  .burst = SLUICE_COST_BYTES_MAX },
};

/*
 * With compiled parameters, incr(cost) ≥ cost × the exact interval P/A
 * (it charges up), and the excess is below 1 + cost/2^shift ticks: one
 * tick from the final ceiling, cost/2^shift from the ceiling in mant.
 * gcra.h says "one tick per packet"; at slow byte rates the second term
 * is not negligible in ticks (3 B/s, 65536 bytes: 42.7 ticks), though it
 * is as a fraction of the increment (< 10^-14).
 */
static void assert_incr_charges_up(const struct policy *p, const struct params *prm,
				   unsigned __int128 period_ticks)
{
	static const __u64 costs[] = { 1,
				       2,
				       ETH_MIN_FRAME - 1,
				       ETH_MIN_FRAME,
				       ETH_MTU_FRAME,
				       SLUICE_COST_BYTES_MAX - 1,
				       SLUICE_COST_BYTES_MAX };
	unsigned __int128 incr;
	__u64 j, cost;

	for (j = 0; j < ARRAY_SIZE(costs) && costs[j] <= policy_max_cost(p); j++) {
		cost = costs[j];
		incr = sluice_gcra_incr(cost, prm->mant, prm->shift);
		assert_true(incr * p->amount >= cost * period_ticks);
		assert_true((incr * p->amount) << prm->shift <
			    ((cost * period_ticks + p->amount) << prm->shift) +
				    (unsigned __int128)cost * p->amount);
	}
}

/* Run @check on every rate row of incr_policies, with its parameters and P. */
static void each_incr_policy(void (*check)(const struct policy *p, const struct params *prm,
					   unsigned __int128 period_ticks))
{
	struct params prm;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(incr_policies); i++) {
		params_derive(&incr_policies[i], &prm);
		check(&incr_policies[i], &prm, policy_period_ticks(&incr_policies[i]));
	}
}

static void test_incr_charges_up(void **state)
{
	(void)state;
	each_incr_policy(assert_incr_charges_up);
}

/* ---- Case 8: aggregates, sluice_gcra_mul_sat and sluice_gcra_incr_cost --- */

#define MUL_SAT_TRIALS 200000ULL
#define N_BITS_MAX     34 /* random factors reach past the 2^32 the splitting needs */

static __u64 mul_sat_oracle(__u64 n, __u64 x)
{
	unsigned __int128 product = (unsigned __int128)n * x;

	return product > SLUICE_GCRA_INCR_SAT ? SLUICE_GCRA_INCR_SAT : (__u64)product;
}

/* Exactly min(n × x, SAT), at the edges of each partial product and at random. */
static void test_mul_sat(void **state)
{
	static const __u64 edges[][2] = {
		{ 0, SLUICE_GCRA_INCR_SAT },
		{ 1ULL << 40, 0 },
		{ 1, SLUICE_GCRA_INCR_SAT },
		{ 2, SLUICE_GCRA_TOL_MAX / 2 },
		{ 2, SLUICE_GCRA_TOL_MAX / 2 + 1 },
		{ 0xffffffffULL, SLUICE_GCRA_INCR_SAT },
		{ 0xffffffffULL, 0xffffffffULL },
		{ 1ULL << 32, 1 },
		{ 3, 1ULL << 61 },
		{ 1ULL << 31, 1ULL << 31 },
		{ UINT64_MAX, 1 },
		{ UINT64_MAX, 2 },
		{ 1ULL << 32, 1ULL << 32 },
	};
	__u64 rng = 0x243f6a8885a308d3ULL, i, n, x;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(edges); i++)
		assert_int_equal(sluice_gcra_mul_sat(edges[i][0], edges[i][1]),
				 mul_sat_oracle(edges[i][0], edges[i][1]));
	for (i = 0; i < MUL_SAT_TRIALS; i++) {
		n = xorshift64(&rng) >> (NS_BITS - 1 - rand_upto(&rng, N_BITS_MAX - 1));
		x = xorshift64(&rng) >> rand_upto(&rng, NS_BITS - 1);
		assert_int_equal(sluice_gcra_mul_sat(n, x), mul_sat_oracle(n, x));
	}
}

/*
 * An aggregate's increment under rate row @p: a cost of at most one unit
 * gets sluice_gcra_incr() itself; a larger one at least the exact
 * cost × P/A, at most one tick per whole unit (and one) above cost × mant,
 * or SAT when that is larger.
 */
static void assert_incr_cost(const struct policy *p, const struct params *prm,
			     unsigned __int128 period_ticks)
{
	static const __u64 costs[] = { 1,	  2,	 45,	    ETH_MTU_FRAME,   65535,
				       65536,	  65537, 45 * 1514, 512 * KIB + 999, 1ULL << 31,
				       UINT32_MAX };
	__u32 unit_shift = p->cost == SLUICE_COST_BYTES ? SLUICE_COST_BYTES_SHIFT : 0;
	unsigned __int128 exact;
	__u64 j, cost, incr;

	for (j = 0; j < ARRAY_SIZE(costs); j++) {
		cost = costs[j];
		incr = sluice_gcra_incr_cost(cost, prm->mant, prm->shift, unit_shift);
		if (cost <= policy_max_cost(p)) {
			assert_int_equal(incr, sluice_gcra_incr(cost, prm->mant, prm->shift));
			continue;
		}
		exact = div_ceil((unsigned __int128)cost * period_ticks, p->amount);
		if (exact >= SLUICE_GCRA_INCR_SAT) {
			assert_int_equal(incr, SLUICE_GCRA_INCR_SAT);
			continue;
		}
		assert_true(incr >= exact);
		if (p->cost == SLUICE_COST_PKTS)
			assert_int_equal(incr, mul_sat_oracle(cost, prm->mant));
		else
			assert_true(incr == SLUICE_GCRA_INCR_SAT ||
				    incr <= div_ceil((unsigned __int128)cost * prm->mant,
						     (unsigned __int128)1 << prm->shift) +
						    (cost >> unit_shift) + 1);
	}
}

static void test_incr_cost(void **state)
{
	(void)state;
	each_incr_policy(assert_incr_cost);
}

#define N_SINGLE_TESTS	  6 /* tests without rows */
#define N_BURST_ROW_TESTS 4 /* tests that run over burst_rows */
#define N_TESTS                                                                                    \
	(ARRAY_SIZE(burst_rows) * N_BURST_ROW_TESTS + ARRAY_SIZE(long_run_rows) +                  \
	 ARRAY_SIZE(precision_rows) + ARRAY_SIZE(random_rows) + ARRAY_SIZE(jitter_rows) +          \
	 ARRAY_SIZE(step_rows) + ARRAY_SIZE(wrap_rows) + ARRAY_SIZE(extreme_rows) +                \
	 ARRAY_SIZE(incr_rows) + N_SINGLE_TESTS)

/* A retry delay in ns is never shorter than the ticks it came from. */
static void test_ns_rounds_up(void **state)
{
	const __u64 tick_per_ns = 1ULL << SLUICE_GCRA_TICK_SHIFT;

	(void)state;
	assert_int_equal(sluice_gcra_ns(0), 0);
	assert_int_equal(sluice_gcra_ns(1), 1);
	assert_int_equal(sluice_gcra_ns(tick_per_ns - 1), 1);
	assert_int_equal(sluice_gcra_ns(tick_per_ns), 1);
	assert_int_equal(sluice_gcra_ns(tick_per_ns + 1), 2);
	assert_int_equal(sluice_gcra_ns(sluice_gcra_ticks(SLUICE_NSEC_PER_SEC)),
			 SLUICE_NSEC_PER_SEC);
}

int main(void)
{
	struct CMUnitTest tests[N_TESTS];
	char names[N_TESTS][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_exact_burst, burst_rows);
	SUITE_ADD_ROWS(&s, test_long_run_overload, long_run_rows);
	SUITE_ADD_ROWS(&s, test_long_run_at_rate, burst_rows);
	SUITE_ADD_ROWS(&s, test_random_bound, random_rows);
	SUITE_ADD_ROWS(&s, test_precision, precision_rows);
	SUITE_ADD_ROWS(&s, test_idle, burst_rows);
	SUITE_ADD_ROWS(&s, test_clock_step_back, step_rows);
	SUITE_ADD_ROWS(&s, test_clock_jitter, jitter_rows);
	SUITE_ADD_ROWS(&s, test_skew, burst_rows);
	SUITE_ADD_ROWS(&s, test_wrap, wrap_rows);
	SUITE_ADD(&s, test_ticks_top_bits);
	SUITE_ADD_ROWS(&s, test_overflow_admit, extreme_rows);
	SUITE_ADD_ROWS(&s, test_incr_extreme, incr_rows);
	SUITE_ADD(&s, test_incr_random);
	SUITE_ADD(&s, test_incr_charges_up);
	SUITE_ADD(&s, test_mul_sat);
	SUITE_ADD(&s, test_incr_cost);
	SUITE_ADD(&s, test_ns_rounds_up);
	if (s.n != N_TESTS) {
		fprintf(stderr, "test table holds %zu tests, expected %zu\n", s.n, (size_t)N_TESTS);
		return EXIT_FAILURE;
	}
	return _cmocka_run_group_tests("gcra", tests, s.n, NULL, NULL);
}
