/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Redis protocol of the shared budget: the pipelined calls that run
 * its Lua scripts (redis_scripts.h), and the checks of every reply. It
 * knows neither the kernel nor the policy file; the planner (planner.h)
 * decides what to ask for, through the Redis backend (backend_redis.h).
 */
#ifndef SLUICE_REDIS_H
#define SLUICE_REDIS_H

#include <stddef.h>
#include <linux/types.h>

#include "budget/backend.h"
#include "budget/conn.h"
#include "budget/redis_scripts.h"

/*
 * The shared budget's Redis side (#5): conserving token leases, membership and the fleet's hot sets
 * (docs/shared-budget.md). Every call is synchronous on @c, which belongs to the store's thread.
 */
/*
 * Keys per lease call, at most: a call runs its keys back to back in
 * Redis, which serves nothing else meanwhile (a key costs a few µs).
 */
#define STORE_LEASE_BATCH_MAX 64
/*
 * Whether the shard that holds Redis key @key answered the last round
 * trip to it: always 1 but on a cluster, where a primary that is down
 * fails only the keys it holds.
 */
int store_key_is_reachable(const struct store_conn *conn, const char *key);

/*
 * For each of @n requests, in one pipelined round trip (one call for up to
 * STORE_LEASE_BATCH_MAX keys, of one slot on a cluster): write off expired
 * leases of that key, refill, take @used off what @node holds (never below
 * zero) and top its lease up toward @want, valid for @ttl_us from now.
 * Results land in @out in request order, each checked against what the
 * script can answer: 4 integers, held <= max(cap, what was held), granted
 * <= held and <= want, expires = now + ttl, now a plausible Redis TIME.
 * The first call on a connection, and the first after Redis lost its script
 * cache (NOSCRIPT: then the requests are sent again with EVAL), costs one
 * more round trip.
 * Returns 0 when every reply arrived and was valid; -EPROTO when any was
 * an error or out of range (each @out[i].err says which: every key of a
 * call whose reply was wrong for any of them; the store is answering
 * wrongly: a store fault); -EINVAL for out-of-range input
 * (nothing sent); -ENOMEM; or -EIO, -ETIMEDOUT, -ECANCELED when the
 * connection failed (the caller drops it and reconnects, since a pipeline
 * may be half read). @err gets the first failure's cause.
 */
int store_lease_sync(struct store_conn *conn, const char *node, __u64 ttl_us,
		     const struct lease_req *r, size_t n, struct lease_grant *out, char *err,
		     size_t len);

/*
 * Renew @r's rate leases (budget/backend.h, struct rate_sync): one call of
 * the rate lease script for up to STORE_LEASE_BATCH_MAX keys, of one slot
 * on a cluster, all in one pipelined round trip. Each answer is checked
 * against what the script can answer: 6 integers, shares at most the fair
 * shares, which are at most what was asked and the capacity, expires =
 * now + ttl. Returns as store_budget_sync() does.
 */
int store_rate_lease(struct store_conn *conn, struct rate_sync *r, char *err, size_t len);

/*
 * Register @node as alive in the fleet sorted set @fleet at Redis TIME, drop
 * members whose last beat is @ttl_us or more old, and return in @live_nodes
 * how many remain (@node included): 1 .. STORE_NODES_MAX. One round trip
 * (two on first use). 0, -EINVAL (ttl out of range), -EIO, -ETIMEDOUT
 * (connection) or -EPROTO (Redis answered an error or out of range), with
 * the cause in @err.
 */
int store_member_beat(struct store_conn *conn, const char *fleet, const char *node, __u64 ttl_us,
		      __u64 *live_nodes, char *err, size_t len);

/*
 * Read the fleet's news counter @key (LEASE_NEWS_FMT) into *@value, 0
 * while it does not exist; with @bump, add one first (INCR) and read what
 * that made it. One command, one round trip. 0, -EAGAIN on a cluster
 * whose shard of @key did not answer (the others may: the cause in
 * @err; a wrong answer, a redirect to a stranger included, is -EPROTO),
 * or as store_member_beat().
 */
int store_news(struct store_conn *conn, const char *key, int bump, __u64 *value, char *err,
	       size_t len);

/*
 * Run @b. 0 when every reply arrived and each is what its script can
 * answer (a hot set: at most its limit of members); -EPROTO when any reply
 * is an error or out of range (each grant's err says whether its key
 * was); -EINVAL (nothing sent), -ENOMEM, or -EIO, -ETIMEDOUT, -ECANCELED
 * (the connection failed: drop it and reconnect); the first failure's
 * cause in @err.
 *
 * On a cluster (@conn->cluster) each call goes to the primary of its key's
 * slot, one pipeline per primary in the same round; MOVED and ASK are
 * followed once. A primary that fails, or answers wrongly, fails only its
 * own calls (@b->failed, each grant's err; a failed beat leaves
 * @b->live_nodes 0 and a failed hot set is not read): the call returns 0
 * when any call was answered, else the first failure.
 */
int store_budget_sync(struct store_conn *conn, struct budget_sync *b, char *err, size_t len);

#endif /* SLUICE_REDIS_H */
