/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The agent: owns the policy, one attachment per interface, and the
 * operations on them (start, reload, stop). No file-scope state: struct
 * agent is passed explicitly; signal flags live in cli/run.c.
 */
#ifndef SLUICE_AGENT_H
#define SLUICE_AGENT_H

#include "agent/banapi.h"
#include "agent/banwatch.h"
#include "agent/escalate.h"
#include "agent/metrics.h"
#include "agent/webconfig.h"
#include "agent/stores.h"
#include "kernel/loader.h"
#include "policy/policy.h"

/*
 * The interface list "auto" (alone, from --iface or the file's
 * 'interfaces'): the interfaces that carry a default route, read at start
 * and again on every reload (base/route.h).
 */
#define AGENT_IFACE_AUTO "auto"

struct agent_opts {
	const char *config_path;
	const char *pin_root;
	char ifaces[POLICY_MAX_IFACES][POLICY_IFNAME_LEN]; /* from --iface; none: the file's */
	size_t n_ifaces;
	int mode;		    /* enum sluice_attach asked for; SLUICE_ATTACH_NONE: auto */
	__u32 max_keys;		    /* 0: default, or the pinned size */
	__u32 max_datagrams;	    /* 0: SLUICE_FRAG_ENTRIES_DEFAULT */
	__u32 max_bans;		    /* each ban map's size; 0: SLUICE_BAN_ENTRIES, or the pinned */
	const char *state_dir;	    /* bans kept across restarts (kernel/banlists.h) */
	const char *ban_socket;	    /* the local ban API's socket (agent/banapi.h); NULL: none */
	const char *ban_group;	    /* its group, as given */
	gid_t ban_socket_gid;	    /* that group's id */
	__u32 xdp_priority;	    /* run priority in libxdp's dispatcher; 0: the default */
	int xdp_share;		    /* native mode through libxdp's dispatcher, not a link */
	const char *metrics_listen; /* "ADDR:PORT" to serve /metrics on; NULL: none */
	const char *probes_listen;  /* "ADDR:PORT" for /readyz and /healthz alone; NULL: none */
	const char *web_config;	    /* --web-config: TLS and users for it; NULL: none */
	int detach_on_exit;	    /* default: leave enforcement in place */
	int watch_config;	    /* reload when the file changes (agent/watch.h) */
};

struct agent {
	struct agent_opts opts;
	struct policy_set *ps;
	struct attachment att[POLICY_MAX_IFACES];
	size_t n_att;	    /* changed under snap.att_lock: the metrics thread reads att[] */
	int is_auto;	    /* the interfaces follow the default routes (AGENT_IFACE_AUTO) */
	__u64 generation;   /* in force: the first interface's sluice_ctl.generation */
	__u64 last_beat_ns; /* CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns() */
	__u32 ids[POLICY_MAX_IFACES][SLUICE_MAX_POLICIES]; /* by attachment and file index */
	struct agent_stores stores;			   /* the store endpoints */
	struct metrics_snapshot snap;			   /* what the metrics thread may read */
	struct metrics *metrics;			   /* NULL: not serving */
	struct web_config web;				   /* read at start (webconfig.h) */
	__u64 keys_counted_ns;				   /* for the metrics: see count_keys() */
	struct banwatch bans;				   /* the ban lists' events and metrics */
	struct banapi *ban_api;				   /* the ban writer; its API if a socket */
	struct escalate escalate;			   /* denials counted into bans */
};

/*
 * Load the policy, load and attach on every interface, apply. 0 or -errno,
 * reported; -EBADMSG: the policy file cannot be read or is rejected, or
 * it and --iface name no interface, or 'auto' beside others.
 */
int agent__start(struct agent *a, const struct agent_opts *opts);

/*
 * Re-read the policy file; a bad file changes nothing. With AGENT_IFACE_AUTO,
 * a good one is also applied to the interfaces that now carry a default
 * route: attached to the new ones, detached (program and pins removed)
 * from the ones that no longer do. Answers `sluice reload` through
 * sluice_ctl (reload_seq, reload_err). 0 or -errno, reported.
 */
int agent__reload(struct agent *a);

/*
 * Periodic work, called at least every AGENT_TICK_NS: the heartbeat (every
 * agent.heartbeat), which the XDP program watches to apply on_agent_loss
 * by itself. A tick that gets through its work is the progress /healthz
 * reports. 0 or -errno, reported.
 */
int agent__tick(struct agent *a);

/* How long the run loop may sleep between ticks. */
#define AGENT_TICK_NS 50000000ULL /* 50 ms */

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

/* Release everything; detach only with opts.detach_on_exit. Accepts NULL. */
void agent__stop(struct agent *a);

#endif /* SLUICE_AGENT_H */
