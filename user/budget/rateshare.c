// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A node's side of a rate lease; see budget/rateshare.h. Demands are in
 * units × 2^RATE_LEASE_SHIFT a rate period, as the store's shares are.
 */
#include "sluice/compiler.h"
#include "budget/rateshare.h"

typedef unsigned __int128 u128; /* a product of two values below 2^64, before its division */

static __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

/* A unit in a demand's scale, times the rate period: what a unit a µs is. */
static __u64 unit_of(const struct lease_key *k)
{
	return k->rate_period_us << RATE_LEASE_SHIFT;
}

/* Drop a share past its until_ns at @now_ns: nothing is enforced from then. */
static void lapse(struct rs_key *s, __u64 now_ns)
{
	if (s->until_ns && now_ns >= s->until_ns)
		s->rate = s->burst = s->fair_rate = s->until_ns = 0;
}

/* Note the traffic up to @now_ns: @act = spent + denied. */
static void note_act(struct rs_key *s, __u64 now_ns, __u64 act)
{
	if (act != s->act || !s->active_ns)
		s->active_ns = now_ns;
	s->act = act;
}

/* Whether @s's traffic has been quiet for RS_QUIET_UNITS of its demand at @now_ns. */
static int is_quiet(const struct rs_key *s, const struct lease_key *k, __u64 now_ns)
{
	__u64 quiet_us = (now_ns - s->active_ns) / SLUICE_NSEC_PER_USEC;

	return s->demand && (u128)s->demand * quiet_us >= (u128)RS_QUIET_UNITS * k->rate_period_us
								  << RATE_LEASE_SHIFT;
}

/* The demand since the last measure, up to @now_ns, and a new measure from there. */
static void measure(struct rs_key *s, const struct lease_key *k, __u64 now_ns)
{
	__u64 dt_us = 0, m;

	if (now_ns > s->seen_ns)
		dt_us = (now_ns - s->seen_ns) / SLUICE_NSEC_PER_USEC;
	if (!dt_us)
		return;
	m = (__u64)min_u64((__u64)((u128)(s->act - s->seen) * unit_of(k) / dt_us),
			   RATE_LEASE_UNITS_MAX << RATE_LEASE_SHIFT);
	/* Up at once, down at once when quiet, else by 1/RS_DECAY_DIV of the fall: a sparse key. */
	if (m >= s->demand || is_quiet(s, k, now_ns))
		s->demand = m;
	else
		s->demand -= (s->demand - m) / RS_DECAY_DIV;
	s->seen = s->act;
	s->seen_ns += dt_us * SLUICE_NSEC_PER_USEC;
}

/* The mean demand since call_ns, or the measure where there is none. */
static __u64 mean_demand(const struct rs_key *s, const struct lease_key *k)
{
	__u64 span_us = (s->seen_ns - s->call_ns) / SLUICE_NSEC_PER_USEC;

	if (!s->call_ns || !span_us)
		return s->demand;
	return (__u64)((u128)(s->seen - s->call_seen) * unit_of(k) / span_us);
}

/*
 * Whether @s's demand outgrew a share granted all it asked, below the
 * whole rate: the kernel denied units since the last refill (@denied),
 * and the demand, its measure and its mean, is above the share. Then
 * asking again raises it. A fresh share's bucket starts empty, so an
 * interval's measure a unit high is denied a unit: the mean keeps that
 * from calling.
 */
static int outgrown(const struct rs_key *s, const struct lease_key *k, __u64 denied)
{
	return denied > s->denied && s->demand > s->rate && mean_demand(s, k) > s->rate &&
	       s->rate >= s->asked && s->asked < k->rate_units << RATE_LEASE_SHIFT;
}

void rs_refill(struct rs_key *s, const struct lease_key *k, __u64 now_ns, __u64 spent, __u64 denied)
{
	if (!s->last_ns) {
		s->last_ns = s->seen_ns = now_ns;
		s->seen = spent + denied;
		s->denied = denied;
		note_act(s, now_ns, spent + denied);
		return;
	}
	s->last_ns = now_ns;
	note_act(s, now_ns, spent + denied);
	measure(s, k, now_ns);
	lapse(s, now_ns);
	s->outgrown = outgrown(s, k, denied);
	s->denied = denied;
}

void rs_tick(struct rs_key *s, __u64 now_ns, __u64 spent, __u64 denied)
{
	if (!s->last_ns)
		return;
	note_act(s, now_ns, spent + denied);
	lapse(s, now_ns);
	if (!s->rate && s->act == s->seen && now_ns > s->seen_ns)
		s->seen_ns =
			now_ns; /* no share and no traffic: its measure starts with the traffic */
}

/*
 * Whether @s is short of its fair share by more than its headroom: others
 * still hold it. Short by less, it holds its demand, and the next timed
 * renewal brings the rest.
 */
static int below_fair(const struct rs_key *s)
{
	return s->fair_rate > s->rate && s->fair_rate - s->rate > s->fair_rate / RS_HEADROOM_DIV;
}

int rs_early(struct rs_key *s, const struct lease_key *k, __u64 now_ns)
{
	if (!s->last_ns)
		return 0;
	if (!s->rate) {
		if (s->act == s->seen)
			return s->until_ns && s->fair_rate > 0; /* others are giving it up */
		measure(s, k, now_ns);				/* traffic started */
		return 1;
	}
	if (below_fair(s))
		return 1;
	if (!is_quiet(s, k, now_ns))
		return 0;
	/* Traffic stopped: hand the share back, and measure afresh from now. */
	s->demand = 0;
	s->seen = s->act;
	s->seen_ns = now_ns;
	return 1;
}

/* @units (scaled, at most the burst) in ticks of the policy's increments, rounded down. */
static __u64 ticks_of(const struct lease_key *k, __u64 units)
{
	return (__u64)((u128)k->tolerance * units / (k->burst << RATE_LEASE_SHIFT));
}

void rs_share(const struct rs_key *s, const struct lease_key *k, struct sluice_lease *l, __u64 now,
	      int live)
{
	const __u64 r = k->rate_units << RATE_LEASE_SHIFT, b = k->burst << RATE_LEASE_SHIFT;
	const __u64 rate = s->until_ns ? min_u64(s->rate, r) : 0,
		    burst = s->until_ns ? min_u64(s->burst, b) : 0;

	/* Rounded down: the share's clock runs slow and its burst holds no more. */
	sluice_share_set(l, now, live, (__u64)((u128)rate * SLUICE_SHARE_ONE / r),
			 ticks_of(k, burst));
}

__u64 rs_level_cut(const struct lease_key *k, const struct sluice_lease *was,
		   const struct sluice_lease *l, __u64 tat, __u64 now)
{
	const __u64 before = sluice_share_level(was, tat, now),
		    after = sluice_share_level(l, tat, now);

	if (before <= after || !k->tolerance)
		return 0;
	return (__u64)((u128)(before - after) * (k->burst << RATE_LEASE_SHIFT) / k->tolerance);
}

void rs_credit(const struct lease_key *k, struct sluice_lease *l, __u64 credit)
{
	sluice_share_credit(l, ticks_of(k, min_u64(credit, k->burst << RATE_LEASE_SHIFT)));
}

/* Whether @s's lease will be RS_RENEW_SYNCS intervals old @ahead_ns from @now_ns. */
static int aged(const struct rs_key *s, __u64 now_ns, __u64 interval_ns, __u64 ahead_ns)
{
	return now_ns - s->renewed_ns + ahead_ns >= RS_RENEW_SYNCS * interval_ns;
}

/* A share handed back: no demand and nothing held, to lapse without calls. */
static int handed_back(const struct rs_key *s)
{
	return !s->demand && !s->rate && !s->burst;
}

int rs_due_soon(const struct rs_key *s, __u64 now_ns, __u64 interval_ns)
{
	return s->until_ns && !handed_back(s) &&
	       aged(s, now_ns, interval_ns, RS_TTL_SYNCS * interval_ns / RS_ALIGN_DIV);
}

int rs_due(const struct rs_key *s, __u64 now_ns, __u64 interval_ns)
{
	__u64 moved = s->demand > s->reported ? s->demand - s->reported : s->reported - s->demand;

	if (!s->until_ns)
		return s->demand > 0;
	if (s->confirm || below_fair(s) || s->outgrown)
		return 1;
	if (handed_back(s))
		return 0; /* let it lapse */
	if (now_ns < s->join_end_ns)
		return 1; /* the others join the share asked on a guess */
	if (aged(s, now_ns, interval_ns, 0))
		return 1;
	return moved > s->reported / RS_DEMAND_DIV;
}

/*
 * The demand a call reports (rs_request()): the lower of the measure and
 * the mean since call_ns, or the measure at a node's first call, where the
 * last call reported no demand, or where the share was outgrown; the mean
 * starts afresh from there. The last call reporting none handed the share
 * back (its traffic stopped): a mean since then spans the idle time, a
 * small part of a demand that just came back (rotating over 2 nodes asked
 * for 41/s of 1200/s), which would hold until the next sync. The mean also
 * starts afresh when the measure fell by more than 1/RS_DEMAND_DIV below
 * it, or once it spans a lease's life, so that it follows a drift. A rise
 * does not restart it: a measure is noisy (a unit an interval, and more
 * between syncs), and a real rise is denied and then outgrown.
 */
static __u64 call_demand(struct rs_key *s, const struct lease_key *k)
{
	const __u64 mean = mean_demand(s, k);
	const __u64 life_ns = s->until_ns > s->renewed_ns ? s->until_ns - s->renewed_ns : 0;
	const int fresh = !s->call_ns || !s->reported || s->outgrown;
	const __u64 d = fresh ? s->demand : min_u64(s->demand, mean);

	if (fresh || s->demand + s->demand / RS_DEMAND_DIV < mean ||
	    s->seen_ns - s->call_ns >= life_ns) {
		s->call_seen = s->seen;
		s->call_ns = s->seen_ns;
	}
	return d;
}

void rs_request(struct rs_key *s, const struct lease_key *k, struct rate_lease_req *q)
{
	const __u64 r = k->rate_units << RATE_LEASE_SHIFT, b = k->burst << RATE_LEASE_SHIFT;
	const __u64 d = call_demand(s, k);
	const __u64 want = min_u64(d + d / RS_HEADROOM_DIV, r);
	/* in whole units: the store grants a burst share in those (RATE_LEASE_UNIT) */
	const __u64 want_b = min_u64((__u64)(((u128)b * want + r - 1) / r + RATE_LEASE_UNIT - 1) /
					     RATE_LEASE_UNIT * RATE_LEASE_UNIT,
				     b);

	s->rate = min_u64(s->rate, want);
	s->burst = min_u64(s->burst, want_b);
	*q = (struct rate_lease_req){
		.k = k, .want_rate = want, .want_burst = want_b, .settled = s->answered
	};
	s->reported = s->demand;
	s->asked = want;
}

void rs_answer(struct rs_key *s, const struct lease_key *k, const struct rate_lease_grant *g,
	       __u64 sent_ns, __u64 ttl_us, __u64 interval_ns)
{
	const __u64 life_ns = ttl_us * SLUICE_NSEC_PER_USEC,
		    margin_ns = RS_KERNEL_MARGIN_SYNCS * interval_ns;

	s->confirm = g->rate < s->rate || g->burst < s->burst;
	s->rate = g->rate;
	s->burst = g->burst;
	s->fair_rate = g->fair_rate;
	s->until_ns = sent_ns + (life_ns > margin_ns ? life_ns - margin_ns : 0);
	s->renewed_ns = sent_ns;
	s->credit = fs_bank_level(&g->taken, g->now_us, k->rate_period_us);
	s->answered = 1;
	if (s->guessed)
		s->join_end_ns = sent_ns + RS_JOIN_SYNCS * interval_ns;
	s->guessed = 0;
}

void rs_failed(struct rs_key *s)
{
	s->answered = 0;
}
