/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent's side of the shared budget (docs/shared-budget.md): on the
 * store's thread, once per sync interval, take the keys the XDP program
 * asked to make hot, read what every hot key spent and was denied, and in
 * one pipelined round trip beat in the fleet, share the hot sets and top
 * up every lease; then write each answer into sluice_lease. Between syncs,
 * a lease that is running low is topped up early, at most once per
 * LEASE_EARLY_DIV-th of the interval. Once the fleet speaks the rate layout
 * (LAYOUT_SWITCH_SYNCS), the leases are rate leases instead (planrate.h),
 * renewed on a timer at full syncs only, and the beat and hot sets go every
 * RATE_BEAT_SYNCS intervals. Nothing here blocks the agent's loop.
 */
#ifndef SLUICE_LEASE_H
#define SLUICE_LEASE_H

#include <stddef.h>

#include <net/if.h>

#include "sluice/lease.h"
#include "sluice/policy.h"
#include "budget/backend.h"
#include "budget/keys.h"
#include "kernel/leases.h"

#define LEASE_TTL_SYNCS	   3 /* the store's lease lives this many intervals */
#define LEASE_KERNEL_SYNCS SLUICE_LEASE_KERNEL_SYNCS /* the kernel's, fewer: it stops first */
#define LEASE_EARLY_DIV	   10 /* early top-ups at most every interval / this */
/*
 * A node whose beat first says the fleet speaks the rate layout stops
 * calling for lump leases and takes rate leases this many intervals after
 * that beat's answer: every other node's beat says so within one
 * interval, and its lump leases live LEASE_KERNEL_SYNCS more on its
 * kernel (docs/shared-budget.md, "Rolling upgrades across the layout").
 */
#define LAYOUT_SWITCH_SYNCS (1U + LEASE_KERNEL_SYNCS)
/*
 * On rate leases a node beats and shares its hot sets every this many
 * full syncs, not every one: they are per node, not per key, and would
 * cost more than the renewals (docs/shared-budget.md, "The store's
 * cost"). The full syncs between them read the fleet's news counter
 * (LEASE_NEWS_FMT), one command, which keeps the kernel's entries live as
 * any answered sync does; a node that joins the fleet, or that adds keys
 * to a hot set, bumps it, so a sync that finds it moved beats and reads
 * the hot sets at once: the fleet hears of a key turned hot within an
 * interval, as when every sync read them. On lump leases, and while the
 * layout switches, a node beats every interval, so LAYOUT_SWITCH_SYNCS
 * holds: every node still calling for lump leases beats every interval.
 * A node that speaks the rate layout gives its member this many times the
 * beat TTL, on any layout, so that no such node drops another's between
 * its beats.
 */
#define RATE_BEAT_SYNCS		10
#define LEASE_STARVED_EVERY_MAX 2 /* a starved key's early rounds: at most every this many */
/*
 * A rate share below its fair share (others still hold it: they give it up
 * when their demand drops, at their next sync) asks again at most every this
 * many early rounds, so that a share that moves arrives within a round or
 * two of its release, not a whole interval later. Only while it is below.
 */
#define RATE_EARLY_EVERY 1
#define LEASE_LOOKAHEAD	 1    /* hold this many intervals of the last interval's demand */
#define LEASE_IDLE_SYNCS 30   /* a key without demand this long gives its entry up */
#define LEASE_HOT_SYNCS	 30   /* a key nobody saw hot this long leaves the hot set */
#define LEASE_HOT_LIMIT	 4096 /* hot keys read back per policy and sync */
_Static_assert(LEASE_HOT_SYNCS >= 2 * RATE_BEAT_SYNCS,
	       "a key stays in the hot set across a hot-set round that missed it");
#define LEASE_HOLDER_LEN (STORE_NAME_LEN + IF_NAMESIZE + 1)

/* One cluster-scoped policy on one interface. */
struct lease_policy {
	__u32 id;		    /* its stable id on that interface */
	char name[SLUICE_NAME_LEN]; /* identifies it across the fleet */
	__u64 rate_units;	    /* cost units per rate_period_us */
	__u64 rate_period_us;
	__u64 burst;		 /* cost units */
	__u64 tolerance;	 /* ticks: the policy's GCRA tolerance, for burst */
	int strict;		 /* cold_mode strict: no cold share is ever spent */
	int fault_closed;	 /* on_store_error closed: a key whose shard fails is denied, not
				  * left to expire into the share (a cluster) */
	__u32 tag[LEASE_GROUPS]; /* each group's hash tag is "<name>:<tag>" (LEASE_BUCKET_FMT) */
};

/* One interface: its maps and its cluster-scoped policies. */
struct lease_att {
	char holder[LEASE_HOLDER_LEN]; /* "<node>/<iface>": whose leases in the store */
	struct lease_maps maps;
	struct lease_policy *pol; /* owned */
	size_t n_pol;
};

/* What the agent hands the store thread; the store owns it from then on. */
struct lease_plan {
	char prefix[STORE_NAME_LEN]; /* the fleet: LEASE_BUCKET_FMT, LEASE_HOT_FMT */
	__u64 interval_ns;
	struct lease_att *att; /* owned */
	size_t n_att;
	int rate_leases; /* speak STORE_LAYOUT_RATE: rate leases once the whole fleet does */
};

struct lease_state;

/*
 * Take @plan (NULL for none: then rounds only beat); freed with the state,
 * or at once when this fails (NULL with errno).
 */
struct lease_state *lease_state__new(struct lease_plan *plan);

void lease_state__free(struct lease_state *ls);

void lease_plan__free(struct lease_plan *plan);

/* Choose @p's group tags from its name (keys_group_tags()). */
void lease_policy_tags(struct lease_policy *p);

/* What a round did, for the store's report and the metrics. */
struct lease_stats {
	__u64 rounds;	  /* pipelines sent */
	__u64 leases;	  /* lease calls in them, rate leases' renewals included */
	__u64 hot_keys;	  /* keys holding a lease entry now */
	__u64 map_errors; /* lease map writes or deletes that failed */
};

/*
 * One round on backend @be: a full sync (@full: beat with @fleet/@node,
 * hot sets, every lease; on rate leases, the beat and hot sets every
 * RATE_BEAT_SYNCS-th, else a read of the fleet's news counter that brings
 * them forward when it moved), or an early top-up of the leases
 * running low (sends nothing when none is). @beat_ttl_us is a member's
 * TTL for a beat every interval: a node that speaks the rate layout
 * scales it by RATE_BEAT_SYNCS. 0, or what the backend's sync returns,
 * with the cause in @err; *@live gets the fleet's count after a beat. A
 * round that fails in any way, a wrong reply included, writes no answer
 * of it into the kernel.
 */
int lease_round(struct lease_state *ls, struct budget_backend *be, const char *fleet,
		const char *node, __u64 beat_ttl_us, int full, __u64 *live, char *err, size_t len);

void lease_state__stats(const struct lease_state *ls, struct lease_stats *out);

#endif /* SLUICE_LEASE_H */
