/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent's side of the store (agent/stores.c): the endpoints, their
 * health, and each cluster-scoped policy's runtime state in the kernel
 * (store fail mode and fleet share). The agent owns what it acts on and
 * lends it through struct stores_view; nothing here knows struct agent.
 */
#ifndef SLUICE_STORES_H
#define SLUICE_STORES_H

#include "agent/health.h"
#include "agent/metrics.h"
#include "kernel/loader.h"
#include "policy/policy.h"

/* The store endpoints: abuse policies may have their own (store.abuse). */
enum agent_store {
	AGENT_STORE_MAIN = 0,
	AGENT_STORE_ABUSE = 1,
	AGENT_STORE_MAX,
};

#define AGENT_POLICY_ABSENT 0xffffffffU /* ids[]: not on this interface */

/* What the stores act on: the agent's, borrowed until the next open. */
struct stores_view {
	const struct policy_set *ps;
	const struct attachment *att;
	size_t n_att;
	const __u32 (*ids)[SLUICE_MAX_POLICIES]; /* by attachment and file index */
	struct metrics_snapshot *snap;		 /* store and fail-mode counters go here */
};

struct store;

struct agent_stores {
	struct stores_view v;
	char node_name[POLICY_NAME_MAX];      /* node.name, or the hostname */
	struct store *store[AGENT_STORE_MAX]; /* NULL: not configured */
	struct store_health health[AGENT_STORE_MAX];
	__u64 live_nodes[AGENT_STORE_MAX];  /* last known fleet size; 0 unknown */
	__u64 rounds_seen[AGENT_STORE_MAX]; /* the store thread's totals last added to snap */
	__u64 leases_seen[AGENT_STORE_MAX];
	__u64 map_errors_seen[AGENT_STORE_MAX];
	__u64 shards_seen[AGENT_STORE_MAX];	 /* a cluster store's primaries at its last sync */
	__u64 transitions_seen[AGENT_STORE_MAX]; /* the health machine's, last added to snap */
	__u32 max_share[SLUICE_MAX_POLICIES];	 /* by file index: compile_share_max() */
	/* By attachment and file index: what was last written to the kernel. */
	__u8 fail_written[POLICY_MAX_IFACES][SLUICE_MAX_POLICIES];
	__u32 share_written[POLICY_MAX_IFACES][SLUICE_MAX_POLICIES];
};

/*
 * Read the password of each endpoint @ps names, and forget it: 0 when each
 * would be sent, else -errno, reported. Before attaching, so that a refused
 * file changes nothing.
 */
int agent_stores__check_secrets(const struct policy_set *ps);

/*
 * Open the endpoints @v's policy file names, with a lease plan for each.
 * Every policy's runtime state is written again on the next tick. 0 or
 * -errno, reported; what did open stays open (close it in any case).
 */
int agent_stores__open(struct agent_stores *s, const struct stores_view *v);

/* Feed each endpoint's probes to its health machine; write what changed. */
void agent_stores__tick(struct agent_stores *s, __u64 now_ns);

/* Stop every store thread. Accepts a zeroed @s. */
void agent_stores__close(struct agent_stores *s);

#endif /* SLUICE_STORES_H */
