// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The shared budget's Redis side (#5): the pipelined calls that run the
 * scripts of redis_scripts.c, routed over a cluster's primaries, and the
 * decoding and checking of every reply. Only the store's thread calls
 * these; nothing here touches the kernel or the agent.
 */
#include <ctype.h>
#include <errno.h>
#include <hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/addr.h"
#include "sluice/compiler.h"
#include "budget/cluster.h"
#include "budget/redis.h"
#include "budget/keys.h"
#include "budget/redis_scripts.h"
#include "budget/wire.h"

#define NUM_LEN 24 /* a __u64 in decimal, NUL-terminated */

/* EVALSHA|EVAL, script, numkeys, the keys, then the script's arguments. */
#define CALL_VERB    0
#define CALL_SCRIPT  1
#define CALL_NUMKEYS 2
#define CALL_KEY     3 /* the first key: on a cluster, every key's slot */

/* One script call of a pipeline; argv[CALL_NUMKEYS..] are owned copies. */
struct call {
	enum store_script script;
	size_t argc;
	char **argv;
	size_t objects, bytes; /* what its reply may cost */
	size_t first, n_keys;  /* a lease call: its leases, budget_sync order[first..+n_keys] */
	int err;	       /* on a cluster: 0, or why its shard gave no answer */
	const char *verb;      /* a plain command on its one key (GET, INCR), not @script */
};

/* Script calls sent in one round trip, and their replies in order. */
struct pipe {
	struct call *calls;
	redisReply **replies;
	size_t n, cap;
	struct wire_budget budget; /* what their replies may cost, in all */
	int asking;		   /* each round trip starts with ASKING (a cluster's ASK) */
	size_t *order;		   /* the leases, grouped by slot: the calls' keys in turn */
	__u16 *slot;		   /* the slot of each of @order's keys */
};

/*
 * What a reply may cost beyond what its call expects: an error line
 * (a script error names the script and the key), and the array's own
 * header. A round trip may cost WIRE_REPLY_BYTES and WIRE_REPLY_OBJECTS
 * more, for whatever else a healthy Redis sends (NOSCRIPT, -BUSY ...).
 */
#define CALL_REPLY_BYTES   512
#define CALL_REPLY_OBJECTS 8
#define INT_REPLY_BYTES	   24 /* ":" a 64-bit integer in decimal, CRLF */

static void pipe_free(struct pipe *p)
{
	size_t i, j;

	for (i = 0; i < p->n; i++) {
		for (j = CALL_NUMKEYS; j < p->calls[i].argc; j++)
			free(p->calls[i].argv[j]);
		free(p->calls[i].argv);
		if (p->replies[i])
			freeReplyObject(p->replies[i]);
	}
	free(p->calls);
	free(p->replies);
	free(p->order);
	free(p->slot);
	memset(p, 0, sizeof(*p));
}

/*
 * Queue script @sc on @n_keys keys with @nargs arguments, whose reply may
 * hold @objects values in @bytes; 0 or -ENOMEM.
 */
static int pipe_add(struct pipe *p, enum store_script sc, const char *const *keys, size_t n_keys,
		    size_t nargs, const char *const *args, size_t objects, size_t bytes)
{
	char numkeys[NUM_LEN];
	struct call *c;
	size_t i;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct call *calls = realloc(p->calls, cap * sizeof(*calls));
		redisReply **replies;

		if (!calls)
			return -ENOMEM;
		p->calls = calls;
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to structs */
		replies = realloc(p->replies, cap * sizeof(*replies));
		if (!replies)
			return -ENOMEM;
		p->replies = replies;
		p->cap = cap;
	}
	c = &p->calls[p->n];
	memset(c, 0, sizeof(*c));
	c->script = sc;
	c->argc = CALL_KEY + n_keys + nargs;
	c->argv = calloc(c->argc, sizeof(*c->argv));
	if (!c->argv)
		return -ENOMEM;
	p->replies[p->n++] = NULL;
	c->objects = CALL_REPLY_OBJECTS + objects;
	c->bytes = CALL_REPLY_BYTES + bytes;
	p->budget.objects += c->objects;
	p->budget.bytes += c->bytes;
	snprintf(numkeys, sizeof(numkeys), "%zu", n_keys);
	c->argv[CALL_NUMKEYS] = strdup(numkeys);
	for (i = 0; i < n_keys; i++)
		c->argv[CALL_KEY + i] = strdup(keys[i]);
	for (i = 0; i < nargs; i++)
		c->argv[CALL_KEY + n_keys + i] = strdup(args[i]);
	for (i = CALL_NUMKEYS; i < c->argc; i++)
		if (!c->argv[i])
			return -ENOMEM;
	return 0;
}

/*
 * Queue plain command @verb on @key, whose reply is an integer or a
 * number: a call like a script's, on one key (its slot routes it on a
 * cluster), whose script is never loaded nor sent (call.verb).
 */
static int pipe_add_cmd(struct pipe *p, const char *verb, const char *key)
{
	int ret = pipe_add(p, STORE_SCRIPT_BEAT, &key, 1, 0, NULL, 1, NUM_LEN + INT_REPLY_BYTES);

	if (!ret)
		p->calls[p->n - 1].verb = verb;
	return ret;
}

/* Load @src into Redis' script cache if @sha is "", keeping its SHA-1. */
static int script_load(struct store_conn *conn, const char *src, char *sha, char *err, size_t len)
{
	const char *argv[] = { "SCRIPT", "LOAD", src };
	redisReply *r;
	int ret;

	if (sha[0])
		return 0;
	ret = store_command(conn, ARRAY_SIZE(argv), argv, &r, err, len);
	if (ret)
		return ret;
	if (r->type != REDIS_REPLY_STRING || r->len != LEASE_SHA_LEN - 1) {
		snprintf(err, len, "cannot load a script: %s", store_reply_error(NULL, r));
		ret = -EPROTO;
	} else {
		memcpy(sha, r->str, LEASE_SHA_LEN);
	}
	freeReplyObject(r);
	return ret;
}

/* A NOSCRIPT error: the script did not run, so sending it again is safe. */
static int is_noscript(const redisReply *r)
{
	return r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", strlen("NOSCRIPT"));
}

/* Queue call @k by SHA-1, or by source when @by_source; a plain command as it is. */
static int queue_call(struct wire_out *o, struct lease_scripts *sc, struct call *k, int by_source,
		      char *err, size_t len)
{
	if (k->verb) {
		const char *argv[] = { k->verb, k->argv[CALL_KEY] };

		return wire_out_add(o, ARRAY_SIZE(argv), argv, err, len);
	}
	k->argv[CALL_VERB] = by_source ? "EVAL" : "EVALSHA";
	k->argv[CALL_SCRIPT] = by_source ? (char *)redis_script_src[k->script] : sc->sha[k->script];
	return wire_out_add(o, (int)k->argc, (const char **)k->argv, err, len);
}

/* The ASKING that precedes a call redirected by ASK, and its answer. */
static int asking_send(struct wire_out *o, char *err, size_t len)
{
	const char *argv[] = { "ASKING" };

	return wire_out_add(o, ARRAY_SIZE(argv), argv, err, len);
}

static int asking_read(struct wire *w, char *err, size_t len)
{
	redisReply *r;
	int ret = wire_read(w, &r, err, len);

	if (!ret && r->type != REDIS_REPLY_STATUS) {
		snprintf(err, len, "'ASKING': %s", store_reply_error(NULL, r));
		ret = -EPROTO;
	}
	if (r)
		freeReplyObject(r);
	return ret;
}

/*
 * One round trip: send the calls @again marks (all when NULL), read their
 * replies into p->replies, marking in @noscript those answered NOSCRIPT.
 * The number of NOSCRIPTs, or -errno with the cause in @err.
 */
static int round_trip(struct store_conn *conn, struct pipe *p, const unsigned char *again,
		      unsigned char *noscript, char *err, size_t len)
{
	struct wire_out o = { 0 };
	struct wire w;
	int ret = wire_begin(&w, conn->c->fd, conn->cancel_fd, conn->timeout_ns, &p->budget);
	int n_again = 0;
	size_t i;

	if (ret)
		snprintf(err, len, "store sync: %s", strerror(-ret));
	if (!ret && p->asking)
		ret = asking_send(&o, err, len);
	for (i = 0; i < p->n && !ret; i++)
		if (!again || again[i])
			ret = queue_call(&o, &conn->sc, &p->calls[i], !!again, err, len);
	if (!ret)
		ret = wire_send(&w, o.buf, o.len, err, len);
	free(o.buf);
	if (!ret && p->asking)
		ret = asking_read(&w, err, len);
	for (i = 0; i < p->n && !ret; i++) {
		if (again && !again[i])
			continue;
		if (p->replies[i])
			freeReplyObject(p->replies[i]);
		ret = wire_read(&w, &p->replies[i], err, len);
		if (!ret) {
			noscript[i] = is_noscript(p->replies[i]);
			n_again += noscript[i];
		}
	}
	if (!ret)
		ret = wire_no_more(&w, err, len);
	wire_end(&w);
	return ret ? ret : n_again;
}

/*
 * Send every call of @p in one round trip (the first use of a script on a
 * connection loads it first) and read the replies into p->replies. Calls
 * answered NOSCRIPT (Redis restarted or flushed its scripts) did not run:
 * they are sent again by source, one more round trip. 0, or -EIO,
 * -ETIMEDOUT, -ECANCELED or -EPROTO when the connection failed or
 * answered out of step (the caller reconnects: a pipeline may be half
 * read), -ENOMEM, or -EPROTO when a script could not be loaded; cause in
 * @err.
 */
static int pipe_run(struct store_conn *conn, struct pipe *p, char *err, size_t len)
{
	unsigned char *noscript = calloc(p->n ? p->n : 1, 1);
	unsigned char *again = calloc(p->n ? p->n : 1, 1);
	size_t i;
	int ret = 0;

	if (!noscript || !again)
		ret = -ENOMEM;
	for (i = 0; i < p->n && !ret; i++)
		if (!p->calls[i].verb)
			ret = script_load(conn, redis_script_src[p->calls[i].script],
					  conn->sc.sha[p->calls[i].script], err, len);
	if (!ret)
		ret = round_trip(conn, p, NULL, noscript, err, len);
	if (ret > 0) {
		for (i = 0; i < p->n; i++)
			if (noscript[i])
				conn->sc.sha[p->calls[i].script][0] = '\0';
		memcpy(again, noscript, p->n);
		ret = round_trip(conn, p, again, noscript, err, len);
		if (ret > 0) {
			snprintf(err, len, "store sync: NOSCRIPT after EVAL");
			ret = -EPROTO;
		}
	}
	if (ret == -ENOMEM && !err[0])
		snprintf(err, len, "store sync: %s", strerror(ENOMEM));
	free(noscript);
	free(again);
	return ret;
}

/* The arguments of a lease or rate lease call (enum lease_arg), before its keys'. */
static void call_head(const char **args, char (*num)[NUM_LEN], const char *node, __u64 ttl_us,
		      __u64 slack_us)
{
	args[LEASE_ARG_NODE] = node;
	snprintf(num[LEASE_ARG_TTL], NUM_LEN, "%" PRIu64, (uint64_t)ttl_us);
	args[LEASE_ARG_TTL] = num[LEASE_ARG_TTL];
	snprintf(num[LEASE_ARG_LIVE_SLACK], NUM_LEN, "%" PRIu64, (uint64_t)slack_us);
	args[LEASE_ARG_LIVE_SLACK] = num[LEASE_ARG_LIVE_SLACK];
}

/* Hash @key's index in the call's KEYS, from 1, added when new. */
static __u64 hash_index(const char **keys, size_t *n_hashes, const char *key)
{
	size_t j;

	for (j = 0; j < *n_hashes && strcmp(keys[j], key) != 0; j++)
		;
	if (j == *n_hashes)
		keys[(*n_hashes)++] = key;
	return j + 1;
}

/* One key's @n_args arguments from @a: @v in decimal, but @field at @field_at. */
static void key_args(const char **args, char (*num)[NUM_LEN], size_t a, const __u64 *v,
		     size_t n_args, size_t field_at, const char *field)
{
	size_t j;

	for (j = 0; j < n_args; j++) {
		snprintf(num[a + j], NUM_LEN, "%" PRIu64, (uint64_t)v[j]);
		args[a + j] = j == field_at ? field : num[a + j];
	}
}

/*
 * Queue one call of the lease script for the @n requests of @r that
 * p->order lists from @first (at most STORE_LEASE_BATCH_MAX); the call
 * keeps @first and @n, for its reply.
 */
static int add_leases(struct pipe *p, const char *node, __u64 ttl_us, const struct lease_req *r,
		      size_t first, size_t n)
{
	char num[LEASE_ARG_KEYS + STORE_LEASE_BATCH_MAX * LEASE_KEY_ARGS][NUM_LEN];
	const char *args[LEASE_ARG_KEYS + STORE_LEASE_BATCH_MAX * LEASE_KEY_ARGS];
	const char *keys[STORE_LEASE_BATCH_MAX];
	size_t i, n_hashes = 0;
	int err;

	call_head(args, num, node, ttl_us, LEASE_LIVE_SLACK_US);
	for (i = 0; i < n; i++) {
		const struct lease_req *q = &r[p->order[first + i]];
		__u64 v[LEASE_KEY_ARGS] = {
			[LEASE_KEY_UNITS] = q->k->rate_units,
			[LEASE_KEY_PERIOD] = q->k->rate_period_us,
			[LEASE_KEY_BURST] = q->k->burst,
			[LEASE_KEY_CAP] = q->k->cap,
			[LEASE_KEY_USED] = q->used,
			[LEASE_KEY_WANT] = q->want,
			[LEASE_KEY_EMPTY] = !!q->k->start_empty,
			[LEASE_KEY_RELEASE] = !!q->release,
			[LEASE_KEY_HASH] = hash_index(keys, &n_hashes, q->k->key),
		};

		key_args(args, num, LEASE_ARG_KEYS + i * LEASE_KEY_ARGS, v, LEASE_KEY_ARGS,
			 LEASE_KEY_FIELD, q->k->field);
	}
	/* Reply objects: the array (itself and each element as announced), then each element. */
	err = pipe_add(p, STORE_SCRIPT_LEASE, keys, n_hashes, LEASE_ARG_KEYS + n * LEASE_KEY_ARGS,
		       args, 1 + 2 * n * GRANT_FIELDS, n * GRANT_FIELDS * INT_REPLY_BYTES);
	if (!err) {
		p->calls[p->n - 1].first = first;
		p->calls[p->n - 1].n_keys = n;
	}
	return err;
}

/* add_leases() for rate leases: one call of the rate lease script. */
static int add_rates(struct pipe *p, const struct rate_sync *r, size_t first, size_t n)
{
	char num[LEASE_ARG_KEYS + STORE_LEASE_BATCH_MAX * RATE_KEY_ARGS][NUM_LEN];
	const char *args[LEASE_ARG_KEYS + STORE_LEASE_BATCH_MAX * RATE_KEY_ARGS];
	const char *keys[STORE_LEASE_BATCH_MAX];
	size_t i, n_hashes = 0;
	int err;

	call_head(args, num, r->holder, r->lease_ttl_us, RATE_LIVE_SLACK_TTLS * r->lease_ttl_us);
	for (i = 0; i < n; i++) {
		const struct rate_lease_req *q = &r->leases[p->order[first + i]];
		__u64 v[RATE_KEY_ARGS] = {
			[RATE_KEY_HASH] = hash_index(keys, &n_hashes, q->k->key),
			[RATE_KEY_CAP_RATE] = q->k->rate_units << RATE_LEASE_SHIFT,
			[RATE_KEY_CAP_BURST] = q->k->burst << RATE_LEASE_SHIFT,
			[RATE_KEY_WANT_RATE] = q->want_rate,
			[RATE_KEY_WANT_BURST] = q->want_burst,
			[RATE_KEY_SETTLED] = !!q->settled,
			[RATE_KEY_LEVEL] = q->level,
		};

		key_args(args, num, LEASE_ARG_KEYS + i * RATE_KEY_ARGS, v, RATE_KEY_ARGS,
			 RATE_KEY_FIELD, q->k->field);
	}
	err = pipe_add(p, STORE_SCRIPT_RATE, keys, n_hashes, LEASE_ARG_KEYS + n * RATE_KEY_ARGS,
		       args, 1 + 2 * n * RATE_FIELDS, n * RATE_FIELDS * INT_REPLY_BYTES);
	if (!err) {
		p->calls[p->n - 1].first = first;
		p->calls[p->n - 1].n_keys = n;
	}
	return err;
}

static __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

static __u64 max_u64(__u64 a, __u64 b)
{
	return a > b ? a : b;
}

/*
 * The @n_fields integers of the @i-th of the @n answers of a call's reply
 * @r into @v, when the whole reply is @n × @n_fields integers, none
 * negative: 1, else 0.
 */
static int reply_u64s(const redisReply *r, size_t i, size_t n, size_t n_fields, __u64 *v)
{
	redisReply *const *el = r->element;
	size_t f;

	if (r->type != REDIS_REPLY_ARRAY || r->elements != n * n_fields)
		return 0;
	for (f = 0; f < n_fields; f++) {
		if (el[i * n_fields + f]->type != REDIS_REPLY_INTEGER ||
		    el[i * n_fields + f]->integer < 0)
			return 0;
		v[f] = el[i * n_fields + f]->integer;
	}
	return 1;
}

/* A reply's time: a plausible Redis TIME, and its expiry that plus the ttl. */
static const char *time_lie(__u64 now_us, __u64 expires_us, __u64 ttl_us)
{
	if (!now_us || now_us > STORE_TIME_US_MAX)
		return "its time is out of range";
	if (expires_us != now_us + ttl_us)
		return "expires at another time than now + ttl";
	return NULL;
}

/*
 * Why grant @g cannot be the lease script's answer to @q with @ttl_us, or
 * NULL: the script holds at most cap (or what was held, when the burst
 * was lowered since), grants at most what it was asked and holds, and
 * expires every lease at its own TIME + ttl.
 */
static const char *grant_lie(const struct lease_grant *g, const struct lease_req *q, __u64 ttl_us)
{
	if (g->held > max_u64(q->k->cap, q->held))
		return "holds more than the cap";
	if (g->granted > g->held || g->granted > q->want)
		return "grants more than asked or held";
	return time_lie(g->now_us, g->expires_us, ttl_us);
}

/*
 * Decode and check the @i-th of the @n answers of lease reply @r to @q
 * into @g: the whole reply must be @n × 4 integers. 0, or -EPROTO (an
 * error, or not what the script can answer) with the cause in @err.
 */
static int grant_of(const redisReply *r, size_t i, size_t n, const struct lease_req *q,
		    __u64 ttl_us, struct lease_grant *g, char *err, size_t len)
{
	const char *lie = "not 4 integers a key";
	__u64 v[GRANT_FIELDS];

	memset(g, 0, sizeof(*g));
	if (reply_u64s(r, i, n, GRANT_FIELDS, v)) {
		g->held = v[GRANT_HELD];
		g->expires_us = v[GRANT_EXPIRES];
		g->now_us = v[GRANT_NOW];
		g->granted = v[GRANT_GRANTED];
		lie = grant_lie(g, q, ttl_us);
		if (!lie)
			return 0;
	}
	if (!err[0] && r->type == REDIS_REPLY_ERROR)
		snprintf(err, len, "lease script failed on the call of %zu keys with '%s' %s: %s",
			 n, q->k->key, q->k->field, r->str);
	else if (!err[0])
		snprintf(err, len, "lease reply on '%s' %s refused: %s", q->k->key, q->k->field,
			 lie);
	memset(g, 0, sizeof(*g));
	g->err = -EPROTO;
	return g->err;
}

/*
 * Why @g cannot be the rate lease script's answer to @q: a share above
 * its fair share, a fair share above what was asked (at most the
 * capacity), a bank taken that holds more than the key (a level above
 * its burst, a rate or burst above the key's) or was saved after the
 * reply's time, or not its time.
 */
static const char *rate_lie(const struct rate_lease_grant *g, const struct rate_lease_req *q,
			    __u64 ttl_us)
{
	if (g->rate > g->fair_rate || g->burst > g->fair_burst)
		return "grants more than the fair share";
	if (g->fair_rate > min_u64(q->want_rate, q->k->rate_units << RATE_LEASE_SHIFT) ||
	    g->fair_burst > min_u64(q->want_burst, q->k->burst << RATE_LEASE_SHIFT))
		return "a fair share above what was asked";
	if (g->taken.level > g->taken.burst)
		return "a bank's level above its burst";
	if (g->taken.rate > q->k->rate_units << RATE_LEASE_SHIFT)
		return "a bank's rate above the key's";
	if (g->taken.burst > q->k->burst << RATE_LEASE_SHIFT)
		return "a bank's burst above the key's";
	if (g->taken.at_us > g->now_us)
		return "a bank saved after the reply's time";
	return time_lie(g->now_us, g->expires_us, ttl_us);
}

/* grant_of() for the rate lease script's @i-th answer to @q. */
static int rate_grant_of(const redisReply *r, size_t i, size_t n, const struct rate_lease_req *q,
			 __u64 ttl_us, struct rate_lease_grant *g, char *err, size_t len)
{
	const char *lie = "not 10 integers a key";
	__u64 v[RATE_FIELDS];

	memset(g, 0, sizeof(*g));
	if (reply_u64s(r, i, n, RATE_FIELDS, v)) {
		*g = (struct rate_lease_grant){ .rate = v[RATE_GRANT_RATE],
						.burst = v[RATE_GRANT_BURST],
						.fair_rate = v[RATE_FAIR_RATE],
						.fair_burst = v[RATE_FAIR_BURST],
						.expires_us = v[RATE_EXPIRES],
						.now_us = v[RATE_NOW],
						.taken = { .rate = v[RATE_TAKEN_RATE],
							   .burst = v[RATE_TAKEN_BURST],
							   .level = v[RATE_TAKEN_LEVEL],
							   .at_us = v[RATE_TAKEN_AT] } };
		lie = rate_lie(g, q, ttl_us);
		if (!lie)
			return 0;
	}
	if (!err[0] && r->type == REDIS_REPLY_ERROR)
		snprintf(err, len,
			 "rate lease script failed on the call of %zu keys with '%s' %s: %s", n,
			 q->k->key, q->k->field, r->str);
	else if (!err[0])
		snprintf(err, len, "rate lease reply on '%s' %s refused: %s", q->k->key,
			 q->k->field, lie);
	memset(g, 0, sizeof(*g));
	g->err = -EPROTO;
	return g->err;
}

/*
 * Queue the membership beat of @b->node in @b->fleet: with the speakers'
 * set of the rate layout when it speaks that (BEAT_LAYOUT_LUA).
 */
static int add_beat(struct pipe *p, const struct budget_sync *b)
{
	char ttl[NUM_LEN], set[LEASE_KEY_LEN], news[LEASE_KEY_LEN];
	const char *args[] = { b->node, ttl }, *keys[] = { b->fleet, set, news };
	const int rate = b->layout >= STORE_LAYOUT_RATE;

	snprintf(ttl, sizeof(ttl), "%" PRIu64, (uint64_t)b->beat_ttl_us);
	snprintf(set, sizeof(set), LEASE_LAYOUT_FMT, b->fleet, STORE_LAYOUT_RATE, b->fleet);
	snprintf(news, sizeof(news), LEASE_NEWS_FMT, b->fleet, b->fleet);
	return pipe_add(p, rate ? STORE_SCRIPT_BEAT_LAYOUT : STORE_SCRIPT_BEAT, keys,
			rate ? ARRAY_SIZE(keys) : 1, ARRAY_SIZE(args), args, rate ? 3 : 1,
			(rate ? 2 : 1) * INT_REPLY_BYTES);
}

/* A live count of the fleet: 1 .. STORE_NODES_MAX (the speakers' may be 0). */
static int count_of(const redisReply *r, long long least, __u64 *n)
{
	if (r->type != REDIS_REPLY_INTEGER || r->integer < least || r->integer > STORE_NODES_MAX)
		return -1;
	*n = (__u64)r->integer;
	return 0;
}

/*
 * The beat's answer: the live count, and the fleet's layout (the rate
 * layout when every live member speaks it, by BEAT_LAYOUT_LUA's counts).
 */
static int live_of(const redisReply *r, struct budget_sync *b, char *err, size_t len)
{
	__u64 speakers;

	b->fleet_layout = STORE_LAYOUT_LUMP;
	if (b->layout < STORE_LAYOUT_RATE && !count_of(r, 1, &b->live_nodes))
		return 0;
	if (b->layout >= STORE_LAYOUT_RATE && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    !count_of(r->element[0], 1, &b->live_nodes) && !count_of(r->element[1], 1, &speakers)) {
		if (speakers == b->live_nodes)
			b->fleet_layout = STORE_LAYOUT_RATE;
		return 0;
	}
	if (!err[0] && r->type != REDIS_REPLY_ERROR)
		snprintf(err, len, "member beat on '%s': a live count out of range", b->fleet);
	else if (!err[0])
		snprintf(err, len, "member beat on '%s': %s", b->fleet, store_reply_error(NULL, r));
	return -EPROTO;
}

/* A hot set member on the wire: "$32" CRLF, 32 hex digits, CRLF. */
#define HOT_MEMBER_BYTES (2 * SLUICE_ADDR_LEN + 16)

/* Queue hot set @h: its ttl, its limit, then the members this node saw. */
static int add_hot(struct pipe *p, const struct hot_req *h)
{
	const char **args = calloc(HOT_ARG_MEMBERS + h->n_add, sizeof(*args));
	const char *key = h->key;
	char ttl[NUM_LEN], limit[NUM_LEN];
	size_t i;
	int err;

	if (!args)
		return -ENOMEM;
	snprintf(ttl, sizeof(ttl), "%" PRIu64, (uint64_t)h->ttl_us);
	snprintf(limit, sizeof(limit), "%" PRIu64, (uint64_t)h->limit);
	args[HOT_ARG_TTL] = ttl;
	args[HOT_ARG_LIMIT] = limit;
	for (i = 0; i < h->n_add; i++)
		args[HOT_ARG_MEMBERS + i] = h->add[i];
	err = pipe_add(p, STORE_SCRIPT_HOT, &key, 1, HOT_ARG_MEMBERS + h->n_add, args, 1 + h->limit,
		       h->limit * HOT_MEMBER_BYTES);
	free(args);
	return err;
}

/* Hand every member of hot set @i's reply to the callback: at most its limit, all keys. */
static int members_of(const redisReply *r, const struct budget_sync *b, size_t i, char *err,
		      size_t len)
{
	const char *why = NULL;
	size_t j;

	if (r->type != REDIS_REPLY_ARRAY)
		why = store_reply_error(NULL, r);
	else if (r->elements > b->hot[i].limit)
		why = "more members than asked for";
	for (j = 0; !why && j < r->elements; j++)
		if (r->element[j]->type != REDIS_REPLY_STRING ||
		    (b->on_member && b->on_member(b->arg, i, r->element[j]->str)))
			why = "a member that is not a key";
	if (!why)
		return 0;
	if (!err[0])
		snprintf(err, len, "hot set '%s': %s", b->hot[i].key, why);
	return -EPROTO;
}

#define CAUSE_LEN 256 /* one shard's failure, before the caller's words */

/*
 * Run the calls of @p that @node_of maps to primary @i as one pipeline on
 * it (after ASKING when @asking), moving their replies into p->replies.
 * When the primary cannot be reached or answers out of step, each of
 * those calls gets the error (call.err) and the first cause goes to @err.
 */
static void shard_run(struct cluster *cl, struct pipe *p, const __u8 *node_of, size_t i, int asking,
		      char *err, size_t len)
{
	struct pipe sub = { .budget = { .bytes = WIRE_REPLY_BYTES, .objects = WIRE_REPLY_OBJECTS },
			    .asking = asking };
	size_t *idx = calloc(p->n ? p->n : 1, sizeof(*idx)), j, k;
	char cause[CAUSE_LEN] = "";
	struct store_conn *conn = NULL;
	int ret = -ENOMEM;

	sub.calls = calloc(p->n ? p->n : 1, sizeof(*sub.calls));
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to replies */
	sub.replies = calloc(p->n ? p->n : 1, sizeof(*sub.replies));
	if (!idx || !sub.calls || !sub.replies)
		goto out;
	for (j = 0; j < p->n; j++) {
		if (node_of[j] != i)
			continue;
		idx[sub.n] = j;
		sub.calls[sub.n++] = p->calls[j];
		sub.budget.objects += p->calls[j].objects;
		sub.budget.bytes += p->calls[j].bytes;
	}
	ret = 0;
	if (!sub.n)
		goto out;
	conn = cluster__conn(cl, i, cause, sizeof(cause));
	ret = conn ? pipe_run(conn, &sub, cause, sizeof(cause)) : -EIO;
	if (conn)
		cluster__note(cl, i, !ret);
	for (k = 0; k < sub.n; k++) {
		j = idx[k];
		if (p->replies[j])
			freeReplyObject(p->replies[j]);
		p->replies[j] = sub.replies[k];
		p->calls[j].err = ret;
	}
out:
	if (ret && !err[0])
		snprintf(err, len, "shard '%s': %s", cl->map.addr[i],
			 cause[0] ? cause : strerror(-ret));
	free(idx);
	free(sub.calls);
	free(sub.replies);
}

/*
 * Follow a MOVED or ASK answer to call @i once: MOVED updates the slot map
 * (and asks for a refresh before the next round), ASK does not; either way
 * the call runs again, alone, on the named primary, if the map lists it
 * (cluster__node_of(): never to an address the seeds did not name). Redirected calls did
 * not run, so running them again is safe.
 */
static void follow(struct cluster *cl, struct pipe *p, size_t i, __u8 *node_of, char *err,
		   size_t len)
{
	struct cluster_redirect rd;
	size_t j;

	if (p->calls[i].err || !p->replies[i] || !cluster_redirect_of(p->replies[i], &rd))
		return;
	j = cluster__node_of(cl, rd.addr);
	if (j == CLUSTER_NODE_NONE) {
		cluster__stranger(cl, rd.addr);
		if (!err[0])
			snprintf(err, len, "redirect to '%s' not followed: not in the slot map",
				 rd.addr);
		p->calls[i].err = -EPROTO;
		return;
	}
	if (!rd.ask) {
		cl->map.slot_node[rd.slot] = (__u8)j;
		cl->stale = 1;
	}
	memset(node_of, CLUSTER_NODE_NONE, p->n);
	node_of[i] = (__u8)j;
	shard_run(cl, p, node_of, j, rd.ask, err, len);
}

/*
 * Send each call of @p to the primary of its key's slot, one pipeline per
 * primary, then follow redirects. Each call that got no answer has its
 * err set. 0, or -ENOMEM, or -EIO when there is no slot map at all.
 */
static int cluster_run(struct cluster *cl, struct pipe *p, char *err, size_t len)
{
	__u8 *node_of = calloc(p->n ? p->n : 1, 1);
	char cause[CAUSE_LEN] = "";
	size_t i;

	if (!node_of)
		return -ENOMEM;
	if (cl->stale && cluster__refresh(cl, cause, sizeof(cause)) && !cl->map.n) {
		snprintf(err, len, "no cluster slot map: %s", cause);
		free(node_of);
		return -EIO;
	}
	for (i = 0; i < p->n; i++) {
		const char *key = p->calls[i].argv[CALL_KEY];

		node_of[i] = cl->map.slot_node[cluster_key_slot(key, strlen(key))];
		if (node_of[i] == CLUSTER_NODE_NONE)
			p->calls[i].err = -EIO;
	}
	for (i = 0; i < cl->map.n; i++)
		shard_run(cl, p, node_of, i, 0, err, len);
	for (i = 0; i < p->n; i++)
		follow(cl, p, i, node_of, err, len);
	free(node_of);
	return 0;
}

int store_key_is_reachable(const struct store_conn *conn, const char *key)
{
	const struct cluster *cl = conn->cluster;
	__u8 i;

	if (!cl)
		return 1;
	i = cl->map.slot_node[cluster_key_slot(key, strlen(key))];
	return i != CLUSTER_NODE_NONE && !cl->node[i].down;
}

/*
 * The keys of a round's lease or rate lease calls, and how each key's
 * answer is read into its grant: the same batching and reading for both.
 */
struct keys_of {
	void *arg; /* the budget_sync or rate_sync */
	size_t n;
	const char *(*key)(const void *arg, size_t i); /* request @i's Redis key */
	/* Decode answer @k of the @n_keys of reply @r into request @i's grant: grant_of(). */
	int (*decode)(void *arg, const redisReply *r, size_t k, size_t n_keys, size_t i, char *err,
		      size_t len);
	void (*fail)(void *arg, size_t i, int err); /* request @i's grant gets @err */
};

/* A lease's index and the slot of its key, to group the keys a call may carry. */
struct by_slot {
	__u32 group; /* the slot, then the first lease of that slot */
	__u32 i;
	__u16 slot;
};

static int by_slot_cmp(const void *a, const void *b)
{
	const struct by_slot *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * Order @b's leases for the calls: the keys of a slot together, the slots
 * in the order of their first lease. On a cluster one call's keys must
 * share a slot; on one Redis too it puts the keys of a hash in as few
 * calls as may be, each hash read and written once a call. Into p->order,
 * and each one's slot into p->slot;
 * 0 or -ENOMEM.
 */
static int order_leases(struct pipe *p, const struct keys_of *ko)
{
	struct by_slot *v = calloc(ko->n ? ko->n : 1, sizeof(*v));
	size_t i, first;
	__u32 slot = 0;

	p->order = calloc(ko->n ? ko->n : 1, sizeof(*p->order));
	p->slot = calloc(ko->n ? ko->n : 1, sizeof(*p->slot));
	if (!v || !p->order || !p->slot) {
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < ko->n; i++) {
		const char *key = ko->key(ko->arg, i);

		v[i].slot = cluster_key_slot(key, strlen(key));
		v[i].group = v[i].slot;
		v[i].i = (__u32)i;
	}
	if (ko->n) {
		qsort(v, ko->n, sizeof(*v), by_slot_cmp);
		for (i = 0, first = 0; i < ko->n; i++) {
			if (i && v[i].group != slot)
				first = i;
			slot = v[i].group;
			v[i].group = v[first].i;
		}
		qsort(v, ko->n, sizeof(*v), by_slot_cmp);
	}
	for (i = 0; i < ko->n; i++) {
		p->order[i] = v[i].i;
		p->slot[i] = v[i].slot;
	}
	free(v);
	return 0;
}

/* A call's keys from p->order[@i] of @n: up to STORE_LEASE_BATCH_MAX, of one slot on a cluster. */
static size_t batch_len(const struct pipe *p, size_t i, size_t n, const struct cluster *cl)
{
	size_t k;

	for (k = 1; k < STORE_LEASE_BATCH_MAX && i + k < n; k++)
		if (cl && p->slot[i + k] != p->slot[i])
			break;
	return k;
}

/*
 * Queue everything @b sends, in the order its replies are read: the
 * leases in calls of up to STORE_LEASE_BATCH_MAX keys, each call's keys of one
 * slot on a cluster (@cl).
 */
static int budget_queue(struct pipe *p, const struct budget_sync *b, const struct keys_of *ko,
			const struct cluster *cl)
{
	size_t i, n;
	int ret = 0;

	if (b->fleet)
		ret = add_beat(p, b);
	for (i = 0; i < b->n_hot && !ret; i++)
		ret = add_hot(p, &b->hot[i]);
	if (!ret)
		ret = order_leases(p, ko);
	for (i = 0; i < b->n_leases && !ret; i += n) {
		n = batch_len(p, i, b->n_leases, cl);
		ret = add_leases(p, b->holder, b->lease_ttl_us, b->leases, i, n);
	}
	return ret;
}

/* A wrong reply to @c: the whole round's fault (-EPROTO), or on a cluster its own call's. */
static int note_bad(struct call *c, int bad, int per_call)
{
	if (!bad)
		return 0;
	if (!per_call)
		return -EPROTO;
	c->err = -EPROTO;
	return 0;
}

/*
 * Read lease call @c's reply @r into @b's grants. A call that got no
 * answer (on a cluster) gives each of its grants its err; a wrong answer
 * for any of its keys is a wrong reply to all of them. -EPROTO when the
 * round must fail for it (note_bad()), else 0.
 */
static int lease_read(const struct pipe *p, struct call *c, const redisReply *r,
		      const struct keys_of *ko, int per_call, char *err, size_t len)
{
	size_t k, bad = 0;

	for (k = 0; k < c->n_keys && c->first + k < ko->n && !c->err; k++)
		bad += !!ko->decode(ko->arg, r, k, c->n_keys, p->order[c->first + k], err, len);
	if (bad)
		c->err = per_call ? -EPROTO : c->err;
	for (k = 0; k < c->n_keys && c->first + k < ko->n && c->err; k++)
		ko->fail(ko->arg, p->order[c->first + k], c->err);
	return bad && !per_call ? -EPROTO : 0;
}

/*
 * Read @p's replies into @b. A wrong reply fails the whole round on one
 * Redis (-EPROTO), only its own call on a cluster (its err is set). Calls
 * without an answer (err set) are skipped, their grants keep that err.
 */
static int budget_read(struct pipe *p, struct budget_sync *b, const struct keys_of *ko,
		       int per_call, char *err, size_t len)
{
	size_t i, at = 0;
	int ret = 0, bad;

	if (b->fleet) {
		bad = !p->calls[at].err && live_of(p->replies[at], b, err, len);
		if (note_bad(&p->calls[at++], bad, per_call))
			ret = -EPROTO;
	}
	for (i = 0; i < b->n_hot; i++, at++) {
		bad = !p->calls[at].err && members_of(p->replies[at], b, i, err, len);
		if (note_bad(&p->calls[at], bad, per_call))
			ret = -EPROTO;
	}
	for (; at < p->n; at++)
		if (lease_read(p, &p->calls[at], p->replies[at], ko, per_call, err, len))
			ret = -EPROTO;
	return ret;
}

static const char *lease_key_of(const void *arg, size_t i)
{
	return ((const struct budget_sync *)arg)->leases[i].k->key;
}

static int lease_decode(void *arg, const redisReply *r, size_t k, size_t n_keys, size_t i,
			char *err, size_t len)
{
	struct budget_sync *b = arg;

	return grant_of(r, k, n_keys, &b->leases[i], b->lease_ttl_us, &b->grants[i], err, len);
}

static void lease_fail(void *arg, size_t i, int err)
{
	((struct budget_sync *)arg)->grants[i].err = err;
}

int store_budget_sync(struct store_conn *conn, struct budget_sync *b, char *err, size_t len)
{
	struct pipe p = { .budget = { .bytes = WIRE_REPLY_BYTES, .objects = WIRE_REPLY_OBJECTS } };
	const struct keys_of ko = { .arg = b,
				    .n = b->n_leases,
				    .key = lease_key_of,
				    .decode = lease_decode,
				    .fail = lease_fail };
	size_t i;
	int ret;

	err[0] = '\0';
	b->failed = b->hot_failed = 0;
	for (i = 0; i < b->n_leases; i++)
		b->grants[i].err = -EIO; /* until its reply arrives */
	ret = budget_sync_check(b, err, len);
	if (ret)
		return ret;
	ret = budget_queue(&p, b, &ko, conn->cluster);
	if (ret == -ENOMEM)
		snprintf(err, len, "store sync: %s", strerror(ENOMEM));
	if (!ret)
		ret = conn->cluster ? cluster_run(conn->cluster, &p, err, len)
				    : pipe_run(conn, &p, err, len);
	if (!ret)
		ret = budget_read(&p, b, &ko, !!conn->cluster, err, len);
	for (i = 0; !ret && i < p.n; i++) {
		b->failed += !!p.calls[i].err;
		if (i >= (b->fleet ? 1 : 0) && i < (b->fleet ? 1 : 0) + b->n_hot)
			b->hot_failed += !!p.calls[i].err;
	}
	if (!ret && p.n && b->failed == p.n)
		ret = p.calls[0].err; /* no shard answered: the store is down */
	pipe_free(&p);
	return ret;
}

int store_lease_sync(struct store_conn *conn, const char *node, __u64 ttl_us,
		     const struct lease_req *r, size_t n, struct lease_grant *out, char *err,
		     size_t len)
{
	struct budget_sync b = {
		.holder = node,
		.lease_ttl_us = ttl_us,
		.leases = r,
		.n_leases = n,
		.grants = out,
	};

	return store_budget_sync(conn, &b, err, len);
}

int store_member_beat(struct store_conn *conn, const char *fleet, const char *node, __u64 ttl_us,
		      __u64 *live_nodes, char *err, size_t len)
{
	struct budget_sync b = {
		.fleet = fleet,
		.node = node,
		.beat_ttl_us = ttl_us,
	};
	int ret = store_budget_sync(conn, &b, err, len);

	if (!ret)
		*live_nodes = b.live_nodes;
	return ret;
}

/* The news counter's value in reply @r to GET (nil: 0) or INCR. */
static int news_of(const redisReply *r, const char *key, __u64 *value, char *err, size_t len)
{
	char *end = NULL;

	*value = 0;
	if (r->type == REDIS_REPLY_NIL)
		return 0;
	if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0) {
		*value = (__u64)r->integer;
		return 0;
	}
	if (r->type == REDIS_REPLY_STRING && r->len && isdigit((unsigned char)r->str[0])) {
		errno = 0;
		*value = strtoull(r->str, &end, 10);
		if (!errno && end == r->str + r->len)
			return 0;
	}
	snprintf(err, len, "news counter '%s': %s", key,
		 r->type == REDIS_REPLY_ERROR ? store_reply_error(NULL, r) : "not a count");
	return -EPROTO;
}

int store_news(struct store_conn *conn, const char *key, int bump, __u64 *value, char *err,
	       size_t len)
{
	struct pipe p = { .budget = { .bytes = WIRE_REPLY_BYTES, .objects = WIRE_REPLY_OBJECTS } };
	int ret = pipe_add_cmd(&p, bump ? "INCR" : "GET", key);

	err[0] = '\0';
	if (ret == -ENOMEM)
		snprintf(err, len, "store sync: %s", strerror(ENOMEM));
	if (!ret)
		ret = conn->cluster ? cluster_run(conn->cluster, &p, err, len)
				    : pipe_run(conn, &p, err, len);
	if (!ret && p.calls[0].err) /* on a cluster its shard alone, unless a wrong answer */
		ret = conn->cluster && p.calls[0].err != -EPROTO ? -EAGAIN : p.calls[0].err;
	if (!ret)
		ret = news_of(p.replies[0], key, value, err, len);
	pipe_free(&p);
	return ret;
}

static const char *rate_key_of(const void *arg, size_t i)
{
	return ((const struct rate_sync *)arg)->leases[i].k->key;
}

static int rate_decode(void *arg, const redisReply *r, size_t k, size_t n_keys, size_t i, char *err,
		       size_t len)
{
	struct rate_sync *rs = arg;

	return rate_grant_of(r, k, n_keys, &rs->leases[i], rs->lease_ttl_us, &rs->grants[i], err,
			     len);
}

static void rate_fail(void *arg, size_t i, int err)
{
	((struct rate_sync *)arg)->grants[i].err = err;
}

int store_rate_lease(struct store_conn *conn, struct rate_sync *r, char *err, size_t len)
{
	struct pipe p = { .budget = { .bytes = WIRE_REPLY_BYTES, .objects = WIRE_REPLY_OBJECTS } };
	const struct keys_of ko = { .arg = r,
				    .n = r->n_leases,
				    .key = rate_key_of,
				    .decode = rate_decode,
				    .fail = rate_fail };
	size_t i, n, failed = 0;
	int ret;

	err[0] = '\0';
	for (i = 0; i < r->n_leases; i++)
		r->grants[i].err = -EIO; /* until its reply arrives */
	ret = rate_sync_check(r, err, len);
	if (ret)
		return ret;
	ret = order_leases(&p, &ko);
	for (i = 0; i < r->n_leases && !ret; i += n) {
		n = batch_len(&p, i, r->n_leases, conn->cluster);
		ret = add_rates(&p, r, i, n);
	}
	if (ret == -ENOMEM)
		snprintf(err, len, "rate lease: %s", strerror(ENOMEM));
	if (!ret)
		ret = conn->cluster ? cluster_run(conn->cluster, &p, err, len)
				    : pipe_run(conn, &p, err, len);
	if (!ret) {
		for (i = 0; i < p.n; i++)
			if (lease_read(&p, &p.calls[i], p.replies[i], &ko, !!conn->cluster, err,
				       len))
				ret = -EPROTO;
	}
	for (i = 0; !ret && i < p.n; i++)
		failed += !!p.calls[i].err;
	if (!ret && p.n && failed == p.n)
		ret = p.calls[0].err; /* no shard answered: the store is down */
	pipe_free(&p);
	return ret;
}
