/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent: owns the policy, one attachment per interface, and the
 * operations on them (start, reload, stop). No file-scope state: struct
 * agent is passed explicitly; signal flags live in cli/run.c.
 */
#ifndef SLUICE_AGENT_H
#define SLUICE_AGENT_H

#include "agent/health.h"
#include "kernel/loader.h"
#include "agent/metrics.h"
#include "policy/policy.h"

struct agent_opts {
	const char *config_path;
	const char *pin_root;
	char ifaces[POLICY_MAX_IFACES][POLICY_IFNAME_LEN]; /* from --iface; none: the file's */
	size_t n_ifaces;
	enum xdp_mode mode;
	__u32 max_keys;		    /* 0: default, or the pinned size */
	const char *metrics_listen; /* "ADDR:PORT" to serve /metrics on; NULL: none */
	int detach_on_exit;	    /* default: leave enforcement in place */
};

/* The store endpoints: abuse policies may have their own (store.abuse). */
enum agent_store {
	AGENT_STORE_MAIN = 0,
	AGENT_STORE_ABUSE = 1,
	AGENT_STORE_MAX,
};

#define AGENT_POLICY_ABSENT 0xffffffffU /* ids[]: not on this interface */
#define AGENT_FAIL_UNKNOWN  0xff	/* fail_written[]: write it on the next tick */

struct store;

struct agent {
	struct agent_opts opts;
	struct policy_set *ps;
	struct attachment att[POLICY_MAX_IFACES];
	size_t n_att;
	__u64 generation;   /* policy loads by this agent */
	__u64 last_beat_ns; /* CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns() */
	/* By attachment and file index: each policy's id, and the store mode written. */
	__u32 ids[POLICY_MAX_IFACES][SLUICE_MAX_POLICIES];
	__u8 fail_written[POLICY_MAX_IFACES][SLUICE_MAX_POLICIES];
	__u32 share_written[POLICY_MAX_IFACES][SLUICE_MAX_POLICIES];
	__u32 max_share[SLUICE_MAX_POLICIES];  /* by file index: see agent/stores.c */
	__u64 live_nodes[AGENT_STORE_MAX];     /* last known fleet size; 0 unknown */
	char node_name[POLICY_NAME_MAX];       /* node.name, or the hostname */
	struct store *stores[AGENT_STORE_MAX]; /* NULL: not configured */
	struct store_health health[AGENT_STORE_MAX];
	__u64 rounds_seen[AGENT_STORE_MAX]; /* the store thread's totals last added to snap */
	__u64 leases_seen[AGENT_STORE_MAX];
	__u64 fail_transitions;	      /* policy fail-mode changes written */
	struct metrics_snapshot snap; /* what the metrics thread may read */
	struct metrics *metrics;      /* NULL: not serving */
};

/* Load the policy, load and attach on every interface, apply. 0 or -errno, reported. */
int agent__start(struct agent *a, const struct agent_opts *opts);

/*
 * Re-read the policy file; a bad file changes nothing. Answers `sluice
 * reload` through sluice_ctl (reload_seq, reload_err). 0 or -errno, reported.
 */
int agent__reload(struct agent *a);

/*
 * Periodic work, called at least every AGENT_TICK_NS: the heartbeat (every
 * agent.heartbeat), which the XDP program watches to apply on_agent_loss
 * by itself. 0 or -errno, reported.
 */
int agent__tick(struct agent *a);

/* How long the run loop may sleep between ticks. */
#define AGENT_TICK_NS 50000000ULL /* 50 ms */

/* CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns(). */
__u64 agent_now_ns(void);

/*
 * Compile @ps (read from @path) for @att's interface into its inactive
 * generation, keeping the ids, key state and counters of every policy whose
 * name and limit did not change, and switch to it atomically. When @ids is
 * not NULL, it receives each policy's id (AGENT_POLICY_ABSENT when not on
 * this interface). 0 or -errno, reported. The agent's, the tests' and the
 * benchmark's one way in.
 */
int agent_apply_policy(struct attachment *att, const struct policy_set *ps, const char *path,
		       __u32 *ids);

/* agent/stores.c: open the store endpoints of a->ps, feed their probes to the
 * health machines, and write each cluster policy's store fail mode. */
int agent_stores_open(struct agent *a);
void agent_stores_tick(struct agent *a, __u64 now_ns);
void agent_stores_close(struct agent *a);

/* Release everything; detach only with opts.detach_on_exit. Accepts NULL. */
void agent__stop(struct agent *a);

#endif /* SLUICE_AGENT_H */
