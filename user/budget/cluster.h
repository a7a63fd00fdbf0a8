/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Redis Cluster for the shared budget (#17): the key-to-slot function, the
 * slot map read from CLUSTER SLOTS, MOVED and ASK replies, and one
 * connection per primary. hiredis 0.14 has no cluster support; this is the
 * small part of a cluster client the budget needs, on the connections of
 * store.c (which opens them, through @connect) and the bounded round trips
 * of wire.c. Routing a pipeline over the shards is redis.c's.
 */
#ifndef SLUICE_CLUSTER_H
#define SLUICE_CLUSTER_H

#include <stddef.h>
#include <linux/types.h>

#include "budget/conn.h"
#include "budget/keys.h"

#define CLUSTER_URL_SCHEME   "cluster://" /* a store URL's scheme */
#define CLUSTER_NODES_MAX    16		  /* primaries, at most: each is a metrics label */
#define CLUSTER_NODE_NONE    0xff	  /* slot_node[]: no primary serves the slot */
#define CLUSTER_ADDR_LEN     64		  /* host:port or [v6]:port, NUL-terminated */
#define CLUSTER_RANGES_MAX   1024	  /* slot ranges in a CLUSTER SLOTS reply, at most */
#define CLUSTER_RANGE_VALUES 32		  /* reply objects per range: bounds, 4 nodes of 7 */
#define CLUSTER_VALUE_BYTES  64		  /* wire bytes per reply object, at most on average */
#define CLUSTER_SLOTS_DEPTH  4		  /* ranges, a range, a node, its metadata (Redis 7) */

/* Which primary serves each slot, by index into addr[]. */
struct cluster_map {
	char addr[CLUSTER_NODES_MAX][CLUSTER_ADDR_LEN];
	size_t n;
	/* replicas it names (the first CLUSTER_NODES_MAX): a MOVED there is a promotion */
	char replica[CLUSTER_NODES_MAX][CLUSTER_ADDR_LEN];
	size_t n_replicas;
	__u8 slot_node[CLUSTER_SLOTS]; /* CLUSTER_NODE_NONE: not served */
};

/*
 * Parse a CLUSTER SLOTS reply into @m: each range [start, end, primary,
 * replicas...], a node [host, port, id, ...]. An empty host (the node
 * does not know its own address) means @asked_host, the host that was
 * asked. 0, or -EPROTO with the cause in @err: an error reply, a range out
 * of order or bounds, a port out of range, more than CLUSTER_NODES_MAX
 * primaries, or no slot served at all.
 */
int cluster_map_parse(const struct redisReply *r, const char *asked_host, struct cluster_map *m,
		      char *err, size_t len);

/* A redirection: "-MOVED <slot> <host:port>" or "-ASK <slot> <host:port>". */
struct cluster_redirect {
	int ask; /* ASK: this call only, after ASKING; MOVED: the slot has moved */
	__u16 slot;
	char addr[CLUSTER_ADDR_LEN];
};

/* 1 when @r is a well-formed MOVED or ASK error (into @out), else 0. */
int cluster_redirect_of(const struct redisReply *r, struct cluster_redirect *out);

/* Opens (and logs in to) a connection to @addr into @conn->c; 0 or -1 with @err. */
typedef int (*cluster_connect_fn)(void *arg, const char *addr, struct store_conn *conn, char *err,
				  size_t len);

/* One primary, as the store's thread holds it. */
struct cluster_node {
	struct store_conn conn;	    /* conn.c NULL: not connected */
	__u64 ok, failed;	    /* round trips to it, since the start */
	int down;		    /* its last round trip failed */
	unsigned int failed_in_row; /* round trips failed since its last success */
	__u64 rest_until_ns;	    /* failed: not contacted again before this (mono_ns) */
};

/* The cluster as the store's thread holds it; @seeds are the URL's addresses. */
struct cluster {
	char seeds[CLUSTER_NODES_MAX][CLUSTER_ADDR_LEN];
	size_t n_seeds;
	struct cluster_map map;
	struct cluster_node node[CLUSTER_NODES_MAX];	     /* by map index */
	char strangers[CLUSTER_NODES_MAX][CLUSTER_ADDR_LEN]; /* redirects not followed, logged */
	size_t n_strangers;
	int stale;	 /* refresh the map before the next round */
	__u64 refreshes; /* maps read, since the start */
	cluster_connect_fn connect;
	void *connect_arg;
	__u64 timeout_ns;
	int cancel_fd;
};

/*
 * Read the seeds of "cluster://a:p,b:p" (@url) into @cl, which is zeroed
 * and marked stale; 0 or -EINVAL.
 */
int cluster__init(struct cluster *cl, const char *url, cluster_connect_fn connect, void *arg,
		  __u64 timeout_ns, int cancel_fd);

/*
 * Read the slot map from the first node that answers CLUSTER SLOTS (the
 * current primaries first, then the seeds), keeping the connections to
 * primaries that stay. 0, or -EIO with the last cause in @err.
 */
int cluster__refresh(struct cluster *cl, char *err, size_t len);

#define CLUSTER_REST_AFTER     2
#define CLUSTER_REST_TIMEOUTS  20
#define CLUSTER_REST_DOUBLINGS 3

/*
 * The connection to primary @i, connected on first use; NULL with @err
 * when it cannot be (the node is then marked down and the map stale), or
 * while it rests after a failure.
 *
 * A primary that failed CLUSTER_REST_AFTER round trips in a row rests
 * CLUSTER_REST_TIMEOUTS store timeouts, twice that after its next
 * failure, and so on up to CLUSTER_REST_DOUBLINGS times: its calls fail
 * at once, and the map is read again each round, so that a replica's
 * promotion is seen. One failure does not put it to rest: a blip would
 * then deny a closed policy's keys on that shard for the whole rest. A
 * primary that stalls (stopped, or cut off without a reset) would
 * otherwise cost every round a timeout or two, which delay the other
 * shards' calls with it: with a stopped primary and a 50 ms timeout, the
 * other shards' keys were held to 0.87..1.17 L, and the stopped shard's
 * keys, in no round that ended in time, fell back to the share instead of
 * their fail mode (FAULT=stop tests/e2e/test_cluster.sh).
 */
struct store_conn *cluster__conn(struct cluster *cl, size_t i, char *err, size_t len);

/*
 * The index of primary @addr in the slot map, which only CLUSTER SLOTS
 * from the seeds and the primaries they named fills; a replica the map
 * names is added as a primary (a MOVED there follows its promotion);
 * CLUSTER_NODE_NONE when it is in neither, or the map is full. A MOVED or ASK naming such an
 * address is not followed (no connection, so no AUTH, goes there): the first time an address is
 * seen it is logged, and the map is marked stale, so the next round reads it again and follows only
 * if the map now lists it.
 */
size_t cluster__node_of(struct cluster *cl, const char *addr);

/* @addr, a redirect's target not in the map: log it once, refresh the map next round. */
void cluster__stranger(struct cluster *cl, const char *addr);

/*
 * Note a round trip to primary @i: failed ones drop its connection, make
 * the map stale and put it to rest.
 */
void cluster__note(struct cluster *cl, size_t i, int ok);

void cluster__close(struct cluster *cl);

#endif /* SLUICE_CLUSTER_H */
