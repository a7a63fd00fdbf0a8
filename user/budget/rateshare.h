/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A node's side of one hot key's rate lease (docs/shared-budget.md, "Rate
 * leases"): the share the store granted it, what it asks the store for,
 * and when. Pure arithmetic on what the planner reads from the kernel, no
 * I/O.
 *
 * The kernel enforces the share: the planner writes rs_share() into the
 * key's sluice_lease, and the XDP program runs the policy's GCRA on the
 * key at that share of its rate and burst (sluice_share_admit(),
 * include/sluice/lease.h), so the node admits at most burst share + rate
 * share · t, and the fleet burst + rate·t while the store keeps the
 * shares' sums within them.
 */
#ifndef SLUICE_RATESHARE_H
#define SLUICE_RATESHARE_H

#include <linux/types.h>

#include "sluice/lease.h"
#include "budget/backend.h"

#define RS_TTL_SYNCS 30 /* a rate lease lives this many sync intervals (3 s at 100 ms) */
/*
 * Renew a lease once it is this many sync intervals old: a third of its
 * life is left for a renewal that fails to be tried again (10 syncs at
 * RS_TTL_SYNCS 30), and a steady key costs a call every 2 s, not 1.5.
 */
#define RS_RENEW_SYNCS 20
_Static_assert(RS_RENEW_SYNCS < RS_TTL_SYNCS, "a lease renews before it expires");
#define RS_DEMAND_DIV 4 /* ask again when demand moves by more than 1/this */
/*
 * A renewal that the lease's age would call for within 1/this of the
 * lease goes with a call of other keys made anyway: the renewals of a
 * node's keys fall in step, and a call's own commands (EVALSHA, TIME)
 * are paid once a slot for all of them, not once a key.
 */
#define RS_ALIGN_DIV 6
_Static_assert(RS_TTL_SYNCS / RS_ALIGN_DIV < RS_RENEW_SYNCS,
	       "a renewal due soon is one that is not due yet");
#define RS_KERNEL_MARGIN_SYNCS 2 /* enforce a share until this many intervals before its expiry */
/*
 * A call asks for its demand and 1/this. A node granted all it asked
 * holds that headroom unspent, and where others are starved no one else
 * may spend it: the satisfied nodes' headroom is at most 1/this of R in
 * all, 3 %. A demand that outgrows it is seen by the denials it brings
 * (rs_due()), not by the headroom covering it until the next renewal.
 */
#define RS_HEADROOM_DIV 32
/*
 * Between syncs, a share whose traffic has been quiet for as long as its
 * last demand takes to bring this many units is handed back (rs_early()):
 * at its demand a quiet spell that long comes by chance with probability
 * about e^-RS_QUIET_UNITS, so a node whose flood moved away frees its
 * share within a round or two, and a sparse key keeps its share.
 */
#define RS_QUIET_UNITS 8
/*
 * A measured demand below the last one lowers it by 1/this of the fall: a
 * key of a few packets an interval measures 0 in many intervals, and would
 * hand its share back and be denied its next packet. Traffic that stops is
 * seen between syncs (RS_QUIET_UNITS).
 */
#define RS_DECAY_DIV 2
/*
 * A key that turned hot here asks for the whole rate before any demand is
 * measured (budget/planrate.c), and holds what it got while the other
 * nodes join and ask for their fair shares: they hear of the key at their
 * next sync by the fleet's news counter (budget/planner.h,
 * RATE_BEAT_SYNCS), read the hot set and ask at the sync after it, and a
 * share below its fair share asks again every early round (rs_early()).
 * So a share answered to such a guess is renewed at every sync for this
 * many intervals (those two, the sync that gives back, and three for a
 * late or busy node), and gives back what the others ask for within an
 * interval of their asking, not when the lease ages (RS_RENEW_SYNCS),
 * which its demand would otherwise wait for when it is about the whole
 * rate.
 */
#define RS_JOIN_SYNCS 6

/* One hot key's rate lease on this node. */
struct rs_key {
	__u64 rate, burst; /* the share enforced now, scaled by 2^RATE_LEASE_SHIFT */
	__u64 fair_rate;   /* the last answer's fair share: below it, ask every interval */
	__u64 until_ns;	   /* local time from which the share is not enforced (0: none) */
	__u64 last_ns;	   /* local time of the last refill (0: none yet) */
	__u64 seen_ns;	   /* local time of the last demand measure (rs_refill()) */
	__u64 act;	   /* spent + denied at the last refill or tick */
	__u64 active_ns;   /* local time at which act last moved */
	__u64 seen;	   /* the kernel's spent + denied at the last measure */
	__u64 demand;	   /* spent + denied over the last interval: scaled units a period */
	__u64 reported;	   /* the measure at the last call, which asked for it or its mean */
	__u64 asked;	   /* the rate share the last call asked for */
	__u64 call_seen;   /* seen at the mean's start (a call's measure) ... */
	__u64 call_ns;	   /* ... and its seen_ns (0: no call yet) */
	__u64 denied;	   /* the kernel's denied at the last refill */
	int outgrown;	   /* units denied in the last interval, demand above a full grant */
	__u64 renewed_ns;  /* local send time of the last answered call */
	int answered;	   /* the last call's answer arrived: the next call is settled */
	int confirm;	   /* the last answer lowered the share: ask once more to confirm */
	int guessed;	   /* the demand is the first call's guess, not a measure */
	__u64 join_end_ns; /* local time until which every sync renews (RS_JOIN_SYNCS) */
	__u64 credit;	   /* scaled units the last answer took from the store's bank:
			    * spendable from the next write of the entry (rs_credit()) */
};

/*
 * The interval up to @now_ns: measure the demand from the kernel's
 * counters @spent and @denied now; a share past its until_ns is dropped
 * (nothing enforced).
 */
void rs_refill(struct rs_key *s, const struct lease_key *k, __u64 now_ns, __u64 spent,
	       __u64 denied);

/*
 * Between two syncs: note the traffic up to @now_ns, as rs_refill() does,
 * without measuring the demand, and drop a share past its until_ns. A key
 * without a share and without traffic moves the start of its next measure
 * up to @now_ns, so that a node whose traffic starts measures it from
 * then, not across its idle time. Nothing before the first rs_refill().
 */
void rs_tick(struct rs_key *s, __u64 now_ns, __u64 spent, __u64 denied);

/*
 * Whether to call the store for @s between syncs, after rs_tick(): a share
 * below its fair share (others are giving it up); a key without a rate
 * share whose traffic started (its demand measured since the last
 * measure); or a share whose traffic stopped (RS_QUIET_UNITS: its demand
 * is then 0, measured afresh from now). Each call's rs_request() follows.
 */
int rs_early(struct rs_key *s, const struct lease_key *k, __u64 now_ns);

/*
 * Give the kernel's entry @l the share @s enforces now (none once it is
 * past its until_ns: denied, its demand counted), at @now (ticks);
 * @live: @l holds a live rate lease, whose clock goes on
 * (sluice_share_set()).
 */
void rs_share(const struct rs_key *s, const struct lease_key *k, struct sluice_lease *l, __u64 now,
	      int live);

/*
 * Of the level @was let the key spend at @now (ticks), on its TAT @tat,
 * what its lowered entry @l no longer lets it: scaled units, rounded
 * down, that a call reports for the store's bank (rate_lease_req.level).
 */
__u64 rs_level_cut(const struct lease_key *k, const struct sluice_lease *was,
		   const struct sluice_lease *l, __u64 tat, __u64 now);

/* Add @credit scaled units (rs_key.credit) to the level of @l, rounded down. */
void rs_credit(const struct lease_key *k, struct sluice_lease *l, __u64 credit);

/*
 * Whether to call the store for @s at @now_ns: no share yet and demand,
 * a lease RS_RENEW_SYNCS intervals old, demand moved by more than
 * 1/RS_DEMAND_DIV of what was reported, a share below its fair share
 * (others still hold it), a lowering to confirm, a share granted in
 * full that its demand outgrew (units denied in the last interval), or a
 * share answered to a guessed demand less than RS_JOIN_SYNCS intervals
 * ago.
 */
int rs_due(const struct rs_key *s, __u64 now_ns, __u64 interval_ns);

/*
 * Whether @s's renewal by its lease's age comes within 1/RS_ALIGN_DIV of
 * the lease of @now_ns: to go with a call made anyway.
 */
int rs_due_soon(const struct rs_key *s, __u64 now_ns, __u64 interval_ns);

/*
 * The call for @s: its demand plus 1/RS_HEADROOM_DIV, the burst in
 * proportion, rounded up to a whole unit. Unless its share was outgrown
 * or the last call reported no demand (its traffic stopped, and a mean
 * would span the idle time), the demand is the lower of the measure and
 * its mean over up to a lease's life: a measure is a unit over or under
 * an interval (packets at its edges, more between syncs) and rises at
 * once, so it stands above a steady demand by up to a unit an interval
 * (10/s at 100 ms), where the mean over seconds does not. What it asks
 * below its share it stops enforcing (the next rs_share()), and the
 * store may give it away at once (settled).
 */
void rs_request(struct rs_key *s, const struct lease_key *k, struct rate_lease_req *q);

/*
 * Apply answer @g to the call of @k sent at @sent_ns with @ttl_us (a
 * raised burst arrives spent: sluice_share_set(); the level of a bank
 * it took, at the answer's time, is @s's credit). A call on a guessed
 * demand (@s->guessed) starts the RS_JOIN_SYNCS intervals of renewals at
 * every sync.
 */
void rs_answer(struct rs_key *s, const struct lease_key *k, const struct rate_lease_grant *g,
	       __u64 sent_ns, __u64 ttl_us, __u64 interval_ns);

/* The call failed: the share stands until its until_ns, the next call is not settled. */
void rs_failed(struct rs_key *s);

#endif /* SLUICE_RATESHARE_H */
