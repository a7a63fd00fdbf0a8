/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Prometheus metrics on a local HTTP port (libmicrohttpd, its own thread):
 * per-policy outcomes and keys, interface totals, and the limiter's own
 * health — heartbeat age, store up/down and probe failures, fail-mode
 * transitions, reloads — so an operator can alert on the limiter itself,
 * not only with it.
 */
#ifndef SLUICE_METRICS_H
#define SLUICE_METRICS_H

#include <pthread.h>
#include <stdio.h>

#include "budget/cluster.h"
#include "kernel/banlists.h"
#include "kernel/maps.h"

#define METRICS_STORES 2

/* One ban list of one interface, as agent/banwatch.c last counted it. */
struct metrics_ban_list {
	char iface[16]; /* IFNAMSIZ */
	char list[BANLIST_NAME_LEN];
	__u64 entries; /* live ones */
	__u64 drops;   /* packets its entries dropped, as long as they are in the maps */
};

/* What the agent publishes for the metrics thread; guarded by @lock. */
struct metrics_snapshot {
	pthread_mutex_t lock;
	struct metrics_store {
		char url[256]; /* "" when not configured */
		int up;
		__u64 probes_ok;
		__u64 probes_failed;
		__u64 transitions;
		__u64 syncs;	   /* pipelined round trips: full syncs and early top-ups */
		__u64 lease_calls; /* lease script calls in them */
		__u64 hot_keys;	   /* keys holding a lease entry at the newest full sync */
		__u64 n_shards;	   /* a cluster:// store's primaries, by slot map order */
		struct metrics_shard {
			char addr[CLUSTER_ADDR_LEN];
			__u64 ok, failed; /* round trips to it */
			int down;	  /* its last round trip failed */
		} shards[CLUSTER_NODES_MAX];
	} stores[METRICS_STORES];
	__u64 fail_transitions; /* policy store fail-mode changes */
	__u64 reloads_ok;
	__u64 reloads_rejected;
	/* What /readyz and /healthz answer from (metrics_probe()). */
	int started;	     /* attached everywhere and the policy applied */
	int reload_rejected; /* the last reload was rejected: the old policy still holds */
	__u64 generation;    /* in force, as `sluice status` says it */
	__u64 progress_ns;   /* CLOCK_MONOTONIC of the main loop's last complete tick */
	__u64 stall_ns;	     /* no progress for longer: /healthz fails (agent.timeout) */
	/* The attachments a scrape reads: the agent holds @att_lock (before
	 * @lock, never after) while it adds or removes one, a scrape while it
	 * reads their maps. */
	pthread_mutex_t att_lock;
	size_t n_att;
	/* By attachment: the agent's tick counts keys every METRICS_KEYS_NS, so
	 * that a scrape costs O(policies), not O(keys). NULL until counted. */
	struct key_counts *keys;
	size_t n_keys;
	struct metrics_ban_list *ban_lists; /* NULL until counted */
	size_t n_ban_lists;
};

#define METRICS_KEYS_NS	 (10 * SLUICE_NSEC_PER_SEC) /* how old a scrape's key counts may be */
#define METRICS_CONN_MAX 64 /* connections at once to one listener, from everyone */
/* From one /24 (IPv4) or /64 (IPv6): one network cannot crowd out a scraper. */
#define METRICS_CONN_PER_NET 4
#define METRICS_NET4_BYTES   3 /* a /24 */
#define METRICS_NET6_BYTES   8 /* a /64 */
#define METRICS_IDLE_S	     5 /* a connection that sends nothing this long is closed */
/* A request not in whole this long after its connection (or the previous
 * response) is cut, however slowly it trickles in. */
#define METRICS_REQUEST_NS (3 * SLUICE_NSEC_PER_SEC)
#define METRICS_SWEEP_NS   (SLUICE_NSEC_PER_SEC / 4) /* how often the deadline is checked */

/* One interface's counters for rendering. */
struct metrics_iface {
	const char *name;
	const struct status *st;
	__u64 now_ns;	    /* the bpf_ktime_get_ns() clock */
	__u32 xdp_priority; /* in libxdp's dispatcher; 0: not in one */
};

enum metrics_probe {
	METRICS_PROBE_READY = 0, /* /readyz */
	METRICS_PROBE_HEALTH,	 /* /healthz */
	METRICS_PROBE_MAX,
};

#define METRICS_HTTP_OK		 200
#define METRICS_HTTP_UNAVAILABLE 503

/*
 * The answer of @probe at @now_ns (CLOCK_MONOTONIC) from @snap (held):
 * METRICS_HTTP_OK or METRICS_HTTP_UNAVAILABLE, and in @buf of @len one
 * line saying why. /readyz: ok once started, unavailable before and while
 * the last reload stands rejected. /healthz: ok while the main loop made
 * progress within stall_ns.
 */
int metrics_probe(const struct metrics_snapshot *snap, int probe, __u64 now_ns, char *buf,
		  size_t len);

/* Render the exposition text for @n interfaces and the snapshot (held). */
void metrics_render(FILE *out, const struct metrics_iface *ifaces, size_t n,
		    const struct metrics_snapshot *snap);

struct metrics;
struct attachment;
struct sockaddr_storage;
struct web_config;

#define METRICS_LISTEN_ANY 1

/*
 * --metrics' address: "ADDR:PORT" (IPv4), "HOST:PORT" (a name: its first
 * IPv4 address, else its first IPv6 one), "[ADDR6]:PORT", or ":PORT" for
 * every address, into @ss. 0, METRICS_LISTEN_ANY for
 * ":PORT" (@ss is then
 * [::]:PORT), or -EINVAL.
 */
int metrics_parse_listen(const char *s, struct sockaddr_storage *ss);

/*
 * Serve http://@listen/metrics, /readyz and /healthz (as
 * metrics_parse_listen() reads @listen; every address is [::] for IPv6
 * and IPv4 alike, or 0.0.0.0 on a host without IPv6) from the maps of the
 * first snap->n_att of @att and @snap. With @web (webconfig.h; kept, not
 * copied), https:// with its certificate, and basic authentication of its
 * users for all but the probes. With @probes, /readyz and /healthz alone
 * on a listener of their own there, plain HTTP, which a crowd on @listen
 * does not reach. Either may be NULL. NULL with errno set on failure:
 * EKEYREJECTED when TLS would not start with the certificate and key.
 */
struct metrics *metrics__start(const char *listen, const char *probes, const struct web_config *web,
			       const struct attachment *att, struct metrics_snapshot *snap);

/* Stop serving and free. Accepts NULL. */
void metrics__stop(struct metrics *m);

#endif /* SLUICE_METRICS_H */
