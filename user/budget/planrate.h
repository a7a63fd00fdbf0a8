/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The planner's rate-lease half (docs/shared-budget.md, "Rate leases"): at
 * each sync interval, refill every hot key's bucket at this node's share
 * (budget/rateshare.h) from what its kernel spent and was denied, renew the
 * keys that are due in one call (backend__rate_lease()), and say what each
 * key's sluice_lease entry becomes. Runs on the store's thread, called by
 * the planner once the fleet speaks STORE_LAYOUT_RATE; it writes no map.
 */
#ifndef SLUICE_PLANRATE_H
#define SLUICE_PLANRATE_H

#include <stddef.h>

#include "sluice/lease.h"
#include "budget/backend.h"
#include "budget/rateshare.h"

/* Every hot key's share of one interface, sorted by key (rate_table__step()). */
struct rate_table;

struct rate_table *rate_table__new(void);

/* Drop every share: no key enforces one from now on. Accepts NULL. */
void rate_table__clear(struct rate_table *t);

void rate_table__free(struct rate_table *t);

/* One hot key of the round, as the planner read it from the kernel. */
struct rate_key {
	struct sluice_key key;
	struct lease_key lk;   /* its rate lease: LEASE_RATE_FMT, the policy's limit */
	struct sluice_lease l; /* in: the entry; out: what to write, when @write */
	struct sluice_spend s;
	int pending;	  /* asked to turn hot here, no lease yet: it stays cold until one */
	int fault_closed; /* its shard failing denies it (on_store_error closed) */
	int every_sync;	  /* renewed at every sync: so its shard's failure is seen within one */
	int write;	  /* out: write @l */
};

/* What a round runs with. */
struct rate_round {
	struct budget_backend *be; /* NULL: the store failed this round, call nothing */
	int full;		   /* a full sync: measure demand, hold keys without shares */
	int call; /* renew what is due (rs_due(); between syncs rs_early()); not during a
		   * layout switch */
	const char *holder;
	__u64 interval_ns;
	__u64 now_ns; /* mono_ns() when the round began */
	__u64 ok_ns;  /* mono_ns() when the last sync the store answered began */
	__u64 calls;  /* out: renewals sent */
	/*
	 * Write @k->l into the kernel now, before the call: a share the call
	 * lowers, which the store frees at once; then read @k->s again, the
	 * spend the lowered entry goes on from. 0, or -errno (@k->s as it
	 * was). NULL: only after the call.
	 */
	int (*lower)(void *ctx, struct rate_key *k);
	void *ctx;
};

/*
 * Measure each of @v's @n keys, renew the due ones in one call, and fill
 * each key's @l with its share (rs_share()), live until the share's end or
 * two intervals past @ok_ns, whichever is first; a key without one is
 * held (a share of nothing: denied, its demand counted); @write says
 * which changed (between syncs, only those whose share an answer changed).
 * A key whose shard failed is closed under a closed policy (denied), else
 * left to expire into its policy's fail mode; with @be NULL nothing is
 * written. Keys not in @v leave @t. 0, or the call's error with the cause
 * in @err.
 */
int rate_table__step(struct rate_table *t, struct rate_round *r, struct rate_key *v, size_t n,
		     char *err, size_t len);

#endif /* SLUICE_PLANRATE_H */
