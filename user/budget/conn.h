/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A connection to the store and its one-command round trips: the types
 * that cluster routing (cluster.h) and the Redis protocol (redis.h) share,
 * so that routing needs none of the protocol.
 */
#ifndef SLUICE_CONN_H
#define SLUICE_CONN_H

#include <stddef.h>
#include <linux/types.h>

struct redisContext;
struct redisReply;
struct wire_budget;
struct cluster;

#define LEASE_SHA_LEN 41 /* a SHA-1 in hex, NUL-terminated */

enum store_script {
	STORE_SCRIPT_LEASE = 0,
	STORE_SCRIPT_BEAT,
	STORE_SCRIPT_HOT,
	STORE_SCRIPT_RATE,	  /* rate leases: a call of their own, not part of a budget sync */
	STORE_SCRIPT_BEAT_LAYOUT, /* the beat of a node that speaks STORE_LAYOUT_RATE */
	STORE_SCRIPT_MAX,
};

/* The scripts' SHA-1s, "" until loaded; owned by the caller, one per connection. */
struct lease_scripts {
	char sha[STORE_SCRIPT_MAX][LEASE_SHA_LEN];
};

/*
 * A connection as the store's thread holds it. Every round trip on it is
 * bounded in time and size (budget/wire.h): a stalled or lying Redis costs
 * at most @timeout_ns per round trip and a bounded amount of memory.
 */
struct store_conn {
	struct redisContext *c;	 /* connected; its owner frees it */
	struct lease_scripts sc; /* loaded on this connection */
	__u64 timeout_ns;	 /* each round trip, whole: first byte sent to last byte read */
	int cancel_fd;		 /* readable: give up any wait at once; -1: never */
	struct cluster *cluster; /* set: a Redis Cluster (budget/cluster.h); @c is unused and
				  * script calls go to each key's primary */
};

/*
 * One command (@argc words of @argv) and its reply, in one bounded round
 * trip; the caller frees *@out. 0; -ENOMEM; -ETIMEDOUT, -ECANCELED, -EIO or
 * -EPROTO (malformed or oversize reply) with the cause in @err: then drop
 * the connection.
 */
int store_command(struct store_conn *conn, int argc, const char **argv, struct redisReply **out,
		  char *err, size_t len);

/* store_command() with reply budget @b (a reply larger than an ordinary one, CLUSTER SLOTS). */
int store_command_within(struct store_conn *conn, int argc, const char **argv,
			 const struct wire_budget *b, struct redisReply **out, char *err,
			 size_t len);

/*
 * Why @r is not the reply a command wanted, for an error message: Redis's
 * error, "unexpected reply", or @conn_err (the connection's) when there is
 * no reply at all.
 */
const char *store_reply_error(const char *conn_err, const struct redisReply *r);

#endif /* SLUICE_CONN_H */
