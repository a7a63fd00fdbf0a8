/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The shared store's thread. It drives the lease planner (planner.h)
 * against a store backend (backend.h: the one the URL names, through
 * backends.h), and knows no backend's protocol. Every call runs on this
 * thread with a tight timeout, so the agent's loop (and its heartbeat)
 * never waits for the store; the loop collects results.
 */
#ifndef SLUICE_STORE_H
#define SLUICE_STORE_H

#include <linux/types.h>

#include "sluice/compiler.h"

#include "budget/backend.h"

#define STORE_MEMBER_BEATS  3 /* a node missing this many syncs leaves the fleet */
#define STORE_CLOSE_WAIT_NS (250 * SLUICE_NSEC_PER_MSEC) /* store__close() waits this, at most */

struct store_config {
	char url[STORE_URL_LEN];       /* redis://host:port, unix:///path or
					* sentinel://host:port[,host:port...]/master
					* or cluster://host:port[,host:port...] */
	char username[STORE_NAME_LEN]; /* a Redis ACL user; empty: the default user */
	char password[STORE_URL_LEN];  /* empty: none; never from the command line; the
					* sentinels' too */
	__u64 timeout_ns;	       /* every connect, and every round trip as a whole */
	__u64 interval_ns;	       /* between probes (the sync interval) */
	char node[STORE_NAME_LEN];     /* this node in the fleet; "" probes with PING only */
	char fleet[STORE_NAME_LEN];    /* the membership sorted set's key */
	struct lease_plan *plan; /* hot keys' leases (budget/planner.h); the store takes it; NULL:
				  * none */
};

/* What happened since the last store__collect(). */
struct store_report {
	__u64 ok;		 /* probes that succeeded */
	__u64 failed;		 /* probes that failed: full syncs, and any wrong reply */
	int last_ok;		 /* the newest probe's result (valid when ok + failed > 0) */
	__u64 live_nodes;	 /* the newest membership count (0: none since the last call) */
	__u64 rounds;		 /* pipelines sent, full syncs and early top-ups */
	__u64 leases;		 /* lease calls in them */
	__u64 hot_keys;		 /* keys holding a lease entry at the newest full sync */
	__u64 map_errors;	 /* lease map writes that failed, in all (with rounds) */
	__u64 busy_since_ns;	 /* CLOCK_MONOTONIC: the sync under way began; 0: none */
	char err[STORE_ERR_LEN]; /* the newest failure's cause */
	__u64 n_shards;		 /* a cluster's primaries (0: not a cluster, or no sync since) */
	__u64 map_refreshes;	 /* slot maps read since the store opened */
	struct store_shard shards[BACKEND_SHARDS_MAX];
};

struct store;
struct lease_plan;

/* Start probing @cfg. NULL with errno set on failure. */
struct store *store__open(const struct store_config *cfg);

/* Take the results gathered since the last call. */
void store__collect(struct store *s, struct store_report *out);

/*
 * Stop the thread and free, in at most STORE_CLOSE_WAIT_NS (a thread that
 * does not end by then is left to free the store itself). Accepts NULL.
 */
void store__close(struct store *s);

#endif /* SLUICE_STORE_H */
