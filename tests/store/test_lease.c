// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The shared budget's Redis side (user/budget/redis.c) against a real
 * redis-server, named by $SLUICE_TEST_REDIS (unix:///path); run by
 * tests/e2e/test_lease.sh, which starts one. Time is Redis' own clock: the
 * exact cases use a rate so slow (1 unit per hour) that refill never adds a
 * whole unit during the test, a wait for a ttl polls Redis TIME, and the
 * fleet case runs ~3 s of real time and checks its bounds from the Redis
 * timestamps each grant returns. Round trips are counted by the server
 * (INFO stats: total_reads_processed): a pipeline small enough for one
 * socket read is one read event, so N calls sent one by one show N.
 * The in-memory backend (budget/backend_mem.h) is held to the scripts'
 * answers here too, on Redis's own clock (test_mem_parity).
 * Nothing here checks speed.
 */
#include <errno.h>
#include <hiredis.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "sluice/compiler.h"
#include "budget/backend_mem.h"
#include "budget/fairshare.h" /* the rate leases' bank, as the memory store keeps it */
#include "budget/keys.h"
#include "budget/planner.h" /* RATE_BEAT_SYNCS */
#include "budget/redis.h"
#include "budget/redis_scripts.h" /* the rate lease summary's words */
#include "budget/store.h"
#include "../unit/rows.h"

#define URL_UNIX     "unix://"
#define US_PER_SEC   1000000ULL
#define US_PER_MS    1000ULL
#define NS_PER_US    1000ULL
#define HOUR_US	     (3600 * US_PER_SEC)
#define SLOW_BURST   100
#define SLOW_CAP     30
#define LONG_TTL_US  (60 * US_PER_SEC)
#define SHORT_TTL_US (200 * US_PER_MS)
#define POLL_US	     (20 * US_PER_MS)	 /* between two looks at something a ttl changes */
#define DEADLINE_US  (10 * SHORT_TTL_US) /* a wait for a ttl that takes longer has failed */
#define MAX_NODES    4
#define NAME_LEN     32
#define INFO_SELF    1 /* the INFO that takes a reading is one command, one read */

#define MIN(a, b) ((a) < (b) ? (a) : (b))

#define CALL_TIMEOUT_NS (SLUICE_NSEC_PER_SEC) /* each round trip; nothing here measures speed */

/* Two nodes' connections, each with its scripts' SHA-1s (most cases use only a) and the table row,
 * if any. */
struct fix {
	struct store_conn a, b;
	char err[STORE_ERR_LEN];
	const void *row;
};

static int conn_open(struct store_conn *n, const char *url)
{
	n->c = redisConnectUnix(url + strlen(URL_UNIX));
	n->timeout_ns = CALL_TIMEOUT_NS;
	n->cancel_fd = -1;
	return n->c && !n->c->err ? 0 : -1;
}

static int setup(void **state)
{
	const char *url = getenv("SLUICE_TEST_REDIS");
	struct fix *f = calloc(1, sizeof(*f));
	redisReply *r;

	if (!f || !url || strncmp(url, URL_UNIX, strlen(URL_UNIX)) != 0) {
		free(f);
		return -1;
	}
	f->row = *state;
	*state = f;
	if (conn_open(&f->a, url) || conn_open(&f->b, url))
		return -1;
	r = redisCommand(f->a.c, "FLUSHALL");
	if (!r)
		return -1;
	freeReplyObject(r);
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	if (f->a.c)
		redisFree(f->a.c);
	if (f->b.c)
		redisFree(f->b.c);
	free(f);
	return 0;
}

/* A slow key: bucket @i (its field: @i + 1 in hex) of hash @name. */
static struct lease_key slow_field(const char *name, size_t i)
{
	struct lease_key k = {
		.rate_units = 1, .rate_period_us = HOUR_US, .burst = SLOW_BURST, .cap = SLOW_CAP
	};

	snprintf(k.key, sizeof(k.key), "%s", name);
	snprintf(k.field, sizeof(k.field), "%zx", i + 1);
	return k;
}

static struct lease_key slow_key(const char *name)
{
	return slow_field(name, 0);
}

/* One request for one key by @node; asserts the round trip and the key succeeded. */
static struct lease_grant sync1(struct fix *f, const struct lease_key *k, const char *node,
				__u64 ttl_us, __u64 used, __u64 want)
{
	struct lease_req q = { .k = k, .used = used, .want = want };
	struct lease_grant g;

	assert_int_equal(store_lease_sync(&f->a, node, ttl_us, &q, 1, &g, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(g.err, 0);
	return g;
}

static redisReply *command(struct fix *f, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = redisvCommand(f->a.c, fmt, ap);
	va_end(ap);
	assert_non_null(r);
	assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
	return r;
}

/* An integer-valued reply (HGET, ZSCORE, DBSIZE); *found: whether there was one. */
static __u64 command_u64(struct fix *f, int *found, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;
	__u64 v = 0;

	va_start(ap, fmt);
	r = redisvCommand(f->a.c, fmt, ap);
	va_end(ap);
	assert_non_null(r);
	*found = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_INTEGER;
	if (r->type == REDIS_REPLY_STRING)
		v = strtoull(r->str, NULL, 10);
	else if (r->type == REDIS_REPLY_INTEGER)
		v = r->integer;
	freeReplyObject(r);
	return v;
}

static __u64 dbsize(struct fix *f)
{
	int found;

	return command_u64(f, &found, "DBSIZE");
}

/* When @member was last added to sorted set @key: Redis TIME, µs. */
static __u64 zscore(struct fix *f, const char *key, const char *member)
{
	int found;
	__u64 v = command_u64(f, &found, "ZSCORE %s %s", key, member);

	assert_true(found);
	return v;
}

/* Redis TIME in µs: the clock every script reads. */
static __u64 redis_time_us(struct fix *f)
{
	enum { TIME_SEC, TIME_USEC, TIME_FIELDS };
	redisReply *r = command(f, "TIME");
	__u64 t;

	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, TIME_FIELDS);
	t = strtoull(r->element[TIME_SEC]->str, NULL, 10) * US_PER_SEC +
	    strtoull(r->element[TIME_USEC]->str, NULL, 10);
	freeReplyObject(r);
	return t;
}

static void sleep_us(__u64 us)
{
	struct timespec ts = { .tv_sec = us / US_PER_SEC, .tv_nsec = us % US_PER_SEC * NS_PER_US };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Poll Redis TIME until it reaches @t_us, with a deadline; returns the time read. */
static __u64 wait_redis_until(struct fix *f, __u64 t_us)
{
	__u64 start = redis_time_us(f), now = start;

	while (now < t_us) {
		assert_true(now - start < DEADLINE_US);
		sleep_us(MIN(t_us - now, POLL_US));
		now = redis_time_us(f);
	}
	return now;
}

/* Server counters, from one INFO. */
struct counts {
	__u64 evalsha, eval, load; /* calls of EVALSHA, EVAL and SCRIPT LOAD */
	__u64 pexpire;		   /* PEXPIRE, which the lease script runs */
	__u64 hmget, hset;	   /* which it runs to read and write buckets */
	__u64 hgetall;		   /* which the rate lease script runs to rebuild a summary */
	__u64 zadd;		   /* ZADD, which the hot set script runs */
	__u64 reads;		   /* socket read events: round trips of small pipelines */
	__u64 commands;		   /* including those the scripts run */
};

static __u64 info_field(const char *info, const char *name)
{
	const char *p = strstr(info, name);

	return p ? strtoull(p + strlen(name), NULL, 10) : 0; /* absent: never called */
}

static struct counts read_counts(struct fix *f)
{
	redisReply *r = command(f, "INFO stats commandstats");
	struct counts n;

	assert_int_equal(r->type, REDIS_REPLY_STRING);
	n.evalsha = info_field(r->str, "\ncmdstat_evalsha:calls=");
	n.eval = info_field(r->str, "\ncmdstat_eval:calls=");
	n.load = info_field(r->str, "\ncmdstat_script|load:calls=");
	n.pexpire = info_field(r->str, "\ncmdstat_pexpire:calls=");
	n.hmget = info_field(r->str, "\ncmdstat_hmget:calls=");
	n.hset = info_field(r->str, "\ncmdstat_hset:calls=");
	n.hgetall = info_field(r->str, "\ncmdstat_hgetall:calls=");
	n.zadd = info_field(r->str, "\ncmdstat_zadd:calls=");
	n.reads = info_field(r->str, "\ntotal_reads_processed:");
	n.commands = info_field(r->str, "\ntotal_commands_processed:");
	assert_int_not_equal(n.reads, 0);
	freeReplyObject(r);
	return n;
}

/* What the server did since @before, not counting the INFO that measures it. */
static struct counts counts_since(struct fix *f, const struct counts *before)
{
	struct counts now = read_counts(f);

	return (struct counts){
		.evalsha = now.evalsha - before->evalsha,
		.eval = now.eval - before->eval,
		.load = now.load - before->load,
		.pexpire = now.pexpire - before->pexpire,
		.hmget = now.hmget - before->hmget,
		.hset = now.hset - before->hset,
		.hgetall = now.hgetall - before->hgetall,
		.zadd = now.zadd - before->zadd,
		.reads = now.reads - before->reads - INFO_SELF,
		.commands = now.commands - before->commands - INFO_SELF,
	};
}

/* A bucket read back: tok (scaled by the period), its live, Σ leases, and one node's. */
struct bucket {
	__u64 tok;
	__u64 live;
	__u64 out;
	__u64 mine; /* the lease of the node asked for: 0 and !found when it has none */
	int found;
};

/* The next word of a bucket's value, as a number; fails the test at its end. */
static __u64 bucket_word(const struct lease_key *k, char **save)
{
	char *w = strtok_r(NULL, " ", save);

	if (!w)
		fail_msg("'%s' %s: the bucket ends early", k->key, k->field);
	return strtoull(w, NULL, 10);
}

/* Bucket @k as stored ("tok ts live [node units exp]...", redis.h), @node's lease in it. */
static struct bucket read_bucket(struct fix *f, const struct lease_key *k, const char *node)
{
	redisReply *r = command(f, "HGET %s %s", k->key, k->field);
	struct bucket b = { 0 };
	char *save = NULL, *s, *w;

	if (r->type != REDIS_REPLY_STRING)
		fail_msg("'%s' %s: no bucket (reply type %d)", k->key, k->field, r->type);
	s = strdup(r->str);
	assert_non_null(s);
	freeReplyObject(r);
	w = strtok_r(s, " ", &save);
	assert_non_null(w);
	b.tok = strtoull(w, NULL, 10);
	bucket_word(k, &save); /* ts */
	b.live = bucket_word(k, &save);
	while ((w = strtok_r(NULL, " ", &save))) {
		__u64 units = bucket_word(k, &save);

		bucket_word(k, &save); /* the lease's expiry */
		b.out += units;
		if (node && !strcmp(w, node)) {
			b.mine = units;
			b.found = 1;
		}
	}
	free(s);
	return b;
}

/* Read the bucket back and assert tok + Σ lease × P <= burst × P. */
static struct bucket check_bucket(struct fix *f, const struct lease_key *k)
{
	struct bucket b = read_bucket(f, k, NULL);

	if (b.tok + b.out * k->rate_period_us > k->burst * k->rate_period_us)
		fail_msg("'%s': tok %llu + outstanding %llu x %llu > burst %llu x period", k->key,
			 (unsigned long long)b.tok, (unsigned long long)b.out,
			 (unsigned long long)k->rate_period_us, (unsigned long long)k->burst);
	return b;
}

/* @node's lease in bucket @k: its value, or 0 and *found = 0 when absent. */
static __u64 lease_field(struct fix *f, const struct lease_key *k, const char *node, int *found)
{
	struct bucket b = read_bucket(f, k, node);

	*found = b.found;
	return b.mine;
}

/*
 * One node's calls on one key, in order: each row is a call and what it
 * must return, and what the hash must hold after it.
 */
struct step {
	const char *name;
	const char *node;
	__u64 used, want;
	__u64 held, granted; /* the answer */
	__u64 tokens, out;   /* whole tokens in the bucket, Σ leases */
};

static void check_step(struct fix *f, const struct lease_key *k, const struct step *s,
		       const struct lease_grant *g)
{
	struct bucket b = check_bucket(f, k);
	int found;
	__u64 field = lease_field(f, k, s->node, &found);

	if (g->held != s->held || g->granted != s->granted)
		fail_msg("%s: held %llu granted %llu, expected %llu and %llu", s->name,
			 (unsigned long long)g->held, (unsigned long long)g->granted,
			 (unsigned long long)s->held, (unsigned long long)s->granted);
	if (b.tok / k->rate_period_us != s->tokens || b.out != s->out)
		fail_msg("%s: %llu tokens, %llu leased, expected %llu and %llu", s->name,
			 (unsigned long long)(b.tok / k->rate_period_us), (unsigned long long)b.out,
			 (unsigned long long)s->tokens, (unsigned long long)s->out);
	if (found != (s->held > 0) || field != s->held)
		fail_msg("%s: lease:%s is %llu (%s), expected %llu", s->name, s->node,
			 (unsigned long long)field, found ? "present" : "absent",
			 (unsigned long long)s->held);
}

/*
 * Top-up on one key (burst 100, cap 30): a node keeps what it did not spend,
 * is topped up to min(want, cap), and nothing ever goes back to the bucket.
 */
static const struct step single_steps[] = {
	{ "first grant", "a", 0, 10, 10, 10, 90, 10 },
	{ "spent 4: topped up by 4", "a", 4, 10, 10, 4, 86, 10 },
	{ "want over cap: held stops at cap", "a", 0, 1000, SLOW_CAP, 20, 66, 30 },
	{ "want below held: nothing handed back", "a", 0, 5, SLOW_CAP, 0, 66, 30 },
	{ "used over held: clamped, nothing credited", "a", 1000, 10, 10, 10, 56, 10 },
	{ "spent all, wants none: lease deleted", "a", 10, 0, 0, 0, 56, 0 },
	{ "no lease yet: used gains nothing", "b", 50, 20, 20, 20, 36, 20 },
	{ "c takes a whole cap", "c", 0, 1000, SLOW_CAP, SLOW_CAP, 6, 50 },
	{ "d gets the whole tokens left", "d", 0, 1000, 6, 6, 0, 56 },
	{ "d keeps its lease, bucket empty", "d", 0, 1000, 6, 0, 0, 56 },
};

static void test_single_node(void **state)
{
	struct fix *f = *state;
	struct lease_key k = slow_key("single");
	struct lease_grant g;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(single_steps); i++) {
		const struct step *s = &single_steps[i];

		g = sync1(f, &k, s->node, LONG_TTL_US, s->used, s->want);
		assert_int_equal(g.expires_us - g.now_us, LONG_TTL_US);
		check_step(f, &k, s, &g);
	}
}

/* The first grant of a fresh key for each ordering of want, cap and burst. */
struct first_row {
	const char *name;
	__u64 want, cap, burst;
	int start_empty;
	__u64 granted;
};

static const struct first_row first_rows[] = {
	{ "want < cap < burst", 5, 10, 20, 0, 5 },
	{ "want = cap < burst", 10, 10, 20, 0, 10 },
	{ "cap < want < burst", 15, 10, 20, 0, 10 },
	{ "cap < burst < want", 50, 10, 20, 0, 10 },
	{ "want < cap = burst", 5, 20, 20, 0, 5 },
	{ "cap = burst < want", 50, 20, 20, 0, 20 },
	{ "want 0", 0, 10, 20, 0, 0 },
	{ "bucket starts empty", 10, 10, 20, 1, 0 },
};

static void test_first_grant(void **state)
{
	struct fix *f = *state;
	const struct first_row *r = f->row;
	struct lease_key k = slow_key("first");
	struct step s = { .name = r->name, .node = "a", .want = r->want, .held = r->granted };
	struct lease_grant g;

	k.cap = r->cap;
	k.burst = r->burst;
	k.start_empty = r->start_empty;
	s.granted = r->granted;
	s.tokens = (r->start_empty ? 0 : r->burst) - r->granted;
	s.out = r->granted;
	g = sync1(f, &k, "a", LONG_TTL_US, 0, r->want);
	assert_int_equal(g.expires_us - g.now_us, LONG_TTL_US);
	check_step(f, &k, &s, &g);
}

/*
 * Out-of-range input is refused before anything is sent. Each row breaks
 * one field of a sync that is otherwise valid (the row "valid" shows it is).
 */
enum inv_field {
	INV_NONE,
	INV_UNITS,
	INV_PERIOD,
	INV_BURST,
	INV_CAP,
	INV_KEY,
	INV_FIELD,
	INV_HOLDER,
	INV_WANT,
	INV_LEASE_TTL,
	INV_BEAT_TTL,
	INV_HOT_TTL,
	INV_MAX,
};

struct invalid_row {
	const char *name;
	enum inv_field field;
	__u64 value;
};

static const struct invalid_row invalid_rows[] = {
	{ "valid", INV_NONE, 0 },
	{ "rate units 0", INV_UNITS, 0 },
	{ "rate units over 2^52", INV_UNITS, LEASE_SCALED_MAX + 1 },
	{ "rate period 0", INV_PERIOD, 0 },
	{ "burst 0", INV_BURST, 0 },
	{ "burst x period over 2^52", INV_BURST, LEASE_SCALED_MAX / HOUR_US + 1 },
	{ "cap 0", INV_CAP, 0 },
	{ "cap over burst", INV_CAP, SLOW_BURST + 1 },
	{ "empty key", INV_KEY, 0 },
	{ "a field not in hex: the hash's own 'live'", INV_FIELD, 0 },
	{ "a holder of two words", INV_HOLDER, 0 },
	{ "want over 2^52", INV_WANT, LEASE_SCALED_MAX + 1 },
	{ "lease ttl 0", INV_LEASE_TTL, 0 },
	{ "lease ttl over max", INV_LEASE_TTL, LEASE_TTL_US_MAX + 1 },
	{ "member ttl 0", INV_BEAT_TTL, 0 },
	{ "member ttl over max", INV_BEAT_TTL, LEASE_TTL_US_MAX + 1 },
	{ "hot set ttl 0", INV_HOT_TTL, 0 },
	{ "hot set ttl over max", INV_HOT_TTL, LEASE_TTL_US_MAX + 1 },
};

/* The sync's Redis keys: a fleet, a hot set, a bucket. */
#define INVALID_KEYS 3

static void invalid_apply(const struct invalid_row *r, struct lease_key *k, struct lease_req *q,
			  struct hot_req *h, struct budget_sync *b)
{
	switch (r->field) {
	case INV_UNITS: k->rate_units = r->value; break;
	case INV_PERIOD: k->rate_period_us = r->value; break;
	case INV_BURST: k->burst = r->value; break;
	case INV_CAP: k->cap = r->value; break;
	case INV_KEY: k->key[0] = '\0'; break;
	case INV_FIELD: snprintf(k->field, sizeof(k->field), "%s", "live"); break;
	case INV_HOLDER: b->holder = "a b"; break;
	case INV_WANT: q->want = r->value; break;
	case INV_LEASE_TTL: b->lease_ttl_us = r->value; break;
	case INV_BEAT_TTL: b->beat_ttl_us = r->value; break;
	case INV_HOT_TTL: h->ttl_us = r->value; break;
	default: break;
	}
}

/* The cause store_budget_sync() must give for row @r. */
static void invalid_err(const struct invalid_row *r, const struct lease_key *k, char *buf,
			size_t len)
{
	static const char *const ttl_of[INV_MAX] = {
		[INV_LEASE_TTL] = "lease",
		[INV_BEAT_TTL] = "member",
		[INV_HOT_TTL] = "hot set",
	};

	if (ttl_of[r->field])
		snprintf(buf, len, "%s ttl %llu us is out of range", ttl_of[r->field],
			 (unsigned long long)r->value);
	else if (r->field == INV_HOLDER)
		snprintf(buf, len, "lease holder 'a b' is not one word of printable characters");
	else
		snprintf(buf, len, "lease key '%s' %s is out of range", k->key, k->field);
}

static void test_invalid(void **state)
{
	static const char *const add[] = { "ff01" };
	struct fix *f = *state;
	const struct invalid_row *r = f->row;
	struct lease_key k = slow_key("inv:lease");
	struct lease_req q = { .k = &k, .want = 1 };
	struct hot_req h = {
		.key = "inv:hot", .add = add, .n_add = ARRAY_SIZE(add), .ttl_us = LONG_TTL_US
	};
	struct lease_grant g;
	struct budget_sync b = { .fleet = "inv:fleet",
				 .node = "a",
				 .beat_ttl_us = LONG_TTL_US,
				 .hot = &h,
				 .n_hot = 1,
				 .holder = "a",
				 .lease_ttl_us = LONG_TTL_US,
				 .leases = &q,
				 .n_leases = 1,
				 .grants = &g };
	char want_err[STORE_ERR_LEN];
	struct counts before, d;
	int ret;

	invalid_apply(r, &k, &q, &h, &b);
	before = read_counts(f);
	ret = store_budget_sync(&f->a, &b, f->err, sizeof(f->err));
	d = counts_since(f, &before);
	if (r->field == INV_NONE) {
		assert_int_equal(ret, 0);
		assert_string_equal(f->err, "");
		assert_int_equal(d.evalsha, INVALID_KEYS);
		assert_int_equal(dbsize(f), INVALID_KEYS);
		return;
	}
	invalid_err(r, &k, want_err, sizeof(want_err));
	assert_int_equal(ret, -EINVAL);
	assert_string_equal(f->err, want_err);
	assert_int_equal(d.commands, 0);
	assert_int_equal(d.reads, 0);
	assert_int_equal(dbsize(f), 0);
}

/* The one-purpose wrappers refuse the same way. */
static void test_invalid_wrappers(void **state)
{
	struct fix *f = *state;
	struct lease_key k = slow_key("inv:lease");
	struct lease_req q = { .k = &k, .want = 1 };
	struct lease_grant g;
	struct counts before = read_counts(f), d;
	__u64 live = 0;

	assert_int_equal(store_lease_sync(&f->a, "a", 0, &q, 1, &g, f->err, sizeof(f->err)),
			 -EINVAL);
	assert_string_equal(f->err, "lease ttl 0 us is out of range");
	assert_int_equal(
		store_member_beat(&f->a, "inv:fleet", "a", 0, &live, f->err, sizeof(f->err)),
		-EINVAL);
	assert_string_equal(f->err, "member ttl 0 us is out of range");
	d = counts_since(f, &before);
	assert_int_equal(d.commands, 0);
	assert_int_equal(d.reads, 0);
	assert_int_equal(dbsize(f), 0);
}

/* A lease not renewed is written off at expiry: the bucket does not get it back. */
static void test_expiry(void **state)
{
	static const struct step after[] = {
		{ "b's call writes a's lease off", "b", 0, SLOW_CAP, SLOW_CAP, 0, 40, 30 },
		{ "a starts again from nothing held", "a", 0, SLOW_CAP, SLOW_CAP, SLOW_CAP, 10,
		  60 },
	};
	struct fix *f = *state;
	struct lease_key k = slow_key("expiry");
	struct lease_grant ga, gb, g;
	int found;

	ga = sync1(f, &k, "a", SHORT_TTL_US, 0, SLOW_CAP);
	gb = sync1(f, &k, "b", LONG_TTL_US, 0, SLOW_CAP);
	assert_int_equal(ga.held + gb.held, 2 * SLOW_CAP);
	assert_int_equal(check_bucket(f, &k).out, 2 * SLOW_CAP);
	wait_redis_until(f, ga.expires_us);
	g = sync1(f, &k, after[0].node, LONG_TTL_US, after[0].used, after[0].want);
	assert_true(g.now_us >= ga.expires_us);
	check_step(f, &k, &after[0], &g);
	lease_field(f, &k, "a", &found);
	assert_false(found);
	/* a reports nothing spent: had its lease survived, it would get nothing. */
	g = sync1(f, &k, after[1].node, SHORT_TTL_US, after[1].used, after[1].want);
	check_step(f, &k, &after[1], &g);
}

/*
 * n keys of one hash in one call (#17): one EVALSHA carries them all, one
 * HMGET reads and one HSET writes them, the replies in
 * order; NOSCRIPT falls back to one EVAL, and the next call loads the
 * script again.
 */
#define PIPE_N		     8
#define PIPE_READS_UNCHECKED 0 /* EVAL sends the script n times: more than one read */

struct pipe_pass {
	const char *name;
	const char *node;
	int flush; /* SCRIPT FLUSH first: every EVALSHA comes back NOSCRIPT */
	__u64 evalsha, eval, load, reads;
};

static const struct pipe_pass pipe_passes[] = {
	{ "first on the connection", "n0", 0, 1, 0, 1, 2 },
	{ "script cached", "n1", 0, 1, 0, 0, 1 },
	{ "after SCRIPT FLUSH", "n2", 1, 1, 1, 0, PIPE_READS_UNCHECKED },
	{ "loaded again", "n3", 0, 1, 0, 1, 2 },
};

static void pipe_pass_run(struct fix *f, const struct pipe_pass *p, size_t n_pass,
			  struct lease_key *k, const struct lease_req *q)
{
	struct lease_grant g[PIPE_N];
	struct counts before, d;
	size_t i;
	int found;

	if (p->flush)
		freeReplyObject(command(f, "SCRIPT FLUSH"));
	before = read_counts(f);
	assert_int_equal(
		store_lease_sync(&f->a, p->node, LONG_TTL_US, q, PIPE_N, g, f->err, sizeof(f->err)),
		0);
	d = counts_since(f, &before);
	print_message("pipeline of %d (%s): evalsha %llu, eval %llu, script load %llu, "
		      "server reads %llu\n",
		      PIPE_N, p->name, (unsigned long long)d.evalsha, (unsigned long long)d.eval,
		      (unsigned long long)d.load, (unsigned long long)d.reads);
	assert_int_equal(d.evalsha, p->evalsha);
	assert_int_equal(d.eval, p->eval);
	assert_int_equal(d.hmget, 1); /* the n keys share a hash: read and written once */
	assert_int_equal(d.hset, 1);
	assert_int_equal(d.load, p->load);
	if (p->reads != PIPE_READS_UNCHECKED)
		assert_int_equal(d.reads, p->reads);
	for (i = 0; i < PIPE_N; i++) {
		assert_int_equal(g[i].err, 0);
		assert_int_equal(g[i].held, q[i].want);
		assert_int_equal(g[i].granted, q[i].want);
		assert_int_equal(lease_field(f, &k[i], p->node, &found), q[i].want);
		assert_int_equal(check_bucket(f, &k[i]).out, n_pass * q[i].want);
	}
}

static void test_pipeline(void **state)
{
	struct fix *f = *state;
	struct lease_key k[PIPE_N];
	struct lease_req q[PIPE_N];
	size_t i;

	for (i = 0; i < PIPE_N; i++) {
		k[i] = slow_field("pipe", i);
		q[i] = (struct lease_req){ .k = &k[i], .want = i + 1 };
	}
	for (i = 0; i < ARRAY_SIZE(pipe_passes); i++)
		pipe_pass_run(f, &pipe_passes[i], i + 1, k, q);
}

/*
 * A bucket hash's TTL covers its buckets' leases and refill (each bucket's
 * live, which has LEASE_LIVE_SLACK_US to spare), with LEASE_LIVE_SLACK_US
 * more, and is set again only when that falls short: not at a call within
 * the spare second, at once when the time it gave (the hash's 'live') would
 * not cover a bucket's.
 */
#define TTL_REFILL_US 10000 /* the key below refills its burst in 10 ms */

static __u64 pttl_us(struct fix *f, const char *key)
{
	redisReply *r = command(f, "PTTL %s", key);
	__u64 v;

	assert_int_equal(r->type, REDIS_REPLY_INTEGER);
	assert_true(r->integer > 0);
	v = (__u64)r->integer * US_PER_MS;
	freeReplyObject(r);
	return v;
}

static void test_bucket_ttl(void **state)
{
	struct fix *f = *state;
	struct lease_key k = {
		.key = "ttl", .field = "1", .rate_units = 1, .burst = 10, .cap = 10
	};
	struct lease_grant g1, g2;
	struct counts before, d;
	__u64 ttl;

	k.rate_period_us = TTL_REFILL_US / k.burst;
	before = read_counts(f);
	g1 = sync1(f, &k, "t", LONG_TTL_US, 0, 1);
	ttl = pttl_us(f, k.key);
	assert_int_equal(counts_since(f, &before).pexpire, 1);
	assert_true(ttl > LONG_TTL_US + TTL_REFILL_US);
	/* The bucket's live has a slack to spare, and its hash's TTL one more. */
	assert_true(ttl <= LONG_TTL_US + TTL_REFILL_US + 2 * LEASE_LIVE_SLACK_US + US_PER_MS);
	before = read_counts(f);
	g2 = sync1(f, &k, "t", LONG_TTL_US, 0, 1);
	d = counts_since(f, &before);
	print_message("bucket ttl: %llu us after the first call, a call %llu us later set it %llu "
		      "times\n",
		      (unsigned long long)ttl, (unsigned long long)(g2.now_us - g1.now_us),
		      (unsigned long long)d.pexpire);
	assert_int_equal(d.pexpire, g2.now_us - g1.now_us >= LEASE_LIVE_SLACK_US);
	freeReplyObject(command(f, "HSET %s live 0", k.key));
	before = read_counts(f);
	sync1(f, &k, "t", LONG_TTL_US, 0, 1);
	assert_int_equal(counts_since(f, &before).pexpire, 1);
}

/*
 * More keys than one call carries: a call per STORE_LEASE_BATCH_MAX keys,
 * in the same round trip, each key granted its want.
 */
#define BATCH_KEYS (2 * STORE_LEASE_BATCH_MAX + 1)

static void test_batches(void **state)
{
	struct fix *f = *state;
	struct lease_key *k = calloc(BATCH_KEYS, sizeof(*k));
	struct lease_req *q = calloc(BATCH_KEYS, sizeof(*q));
	struct lease_grant *g = calloc(BATCH_KEYS, sizeof(*g));
	struct counts before, d;
	size_t i;
	int found;

	assert_true(k && q && g);
	for (i = 0; i < BATCH_KEYS; i++) {
		k[i] = slow_field("batch", i);
		q[i] = (struct lease_req){ .k = &k[i], .want = 1 + i % 3 };
	}
	before = read_counts(f);
	if (store_lease_sync(&f->a, "nb", LONG_TTL_US, q, BATCH_KEYS, g, f->err, sizeof(f->err)))
		fail_msg("%d keys: %s", BATCH_KEYS, f->err);
	d = counts_since(f, &before);
	print_message("%d keys: evalsha %llu, server reads %llu\n", BATCH_KEYS,
		      (unsigned long long)d.evalsha, (unsigned long long)d.reads);
	assert_int_equal(d.evalsha + d.eval, 3);
	assert_int_equal(d.hmget, 3);
	assert_int_equal(d.hset, 3);
	for (i = 0; i < BATCH_KEYS; i++) {
		assert_int_equal(g[i].err, 0);
		assert_int_equal(g[i].held, q[i].want);
		assert_int_equal(lease_field(f, &k[i], "nb", &found), q[i].want);
		assert_true(found);
	}
	free(k);
	free(q);
	free(g);
}

/*
 * One call, one key twice: the keys are served in order, so the second
 * sees the first's answer. Read both from the call's one HMGET and the
 * second would be granted the cap again, and its write would hide the
 * first's grant from the bucket.
 */
static void test_key_twice(void **state)
{
	struct fix *f = *state;
	struct lease_key k = slow_key("twice");
	struct lease_req q[2] = { { .k = &k, .want = SLOW_CAP }, { .k = &k, .want = SLOW_CAP } };
	struct lease_grant g[2];
	struct bucket b;

	assert_int_equal(store_lease_sync(&f->a, "a", LONG_TTL_US, q, 2, g, f->err, sizeof(f->err)),
			 0);
	assert_int_equal(g[0].granted, SLOW_CAP);
	assert_int_equal(g[1].held, SLOW_CAP);
	assert_int_equal(g[1].granted, 0);
	b = check_bucket(f, &k);
	assert_int_equal(b.tok / k.rate_period_us, SLOW_BURST - SLOW_CAP);
	assert_int_equal(b.out, SLOW_CAP);
}

/*
 * A bucket past its live is as good as absent, and is reaped (redis.h):
 * one whose live has passed starts full, whatever it held; a call that
 * samples every field of its hash (LEASE_REAP_PER_KEY a key, and the
 * hash's own 'live') deletes the dead and keeps the live. The fields are
 * written as the script writes them: "tok ts live [node units exp]".
 */
#define REAP_HASH  "reap"
#define REAP_CALL  3 /* keys of the call: fields 1, 2, 3 */
#define REAP_DEAD  "4"
#define REAP_DEAD2 "5"
#define REAP_LIVE  "6" /* another key's bucket, alive: not written by the call */

static void test_reap(void **state)
{
	struct fix *f = *state;
	struct lease_key k[REAP_CALL];
	struct lease_req q[REAP_CALL];
	struct lease_grant g[REAP_CALL];
	__u64 now = redis_time_us(f);
	char drained[NAME_LEN * 2], alive[NAME_LEN * 2];
	int found;
	size_t i;

	for (i = 0; i < REAP_CALL; i++) {
		k[i] = slow_field(REAP_HASH, i);
		q[i] = (struct lease_req){ .k = &k[i], .want = SLOW_CAP };
	}
	/* Key 1 was drained, and its live has passed: it starts full again. */
	snprintf(drained, sizeof(drained), "0 %llu %llu", (unsigned long long)now,
		 (unsigned long long)(now - 1));
	snprintf(alive, sizeof(alive), "7 %llu %llu", (unsigned long long)now,
		 (unsigned long long)(now + HOUR_US));
	freeReplyObject(command(f, "HSET %s %s %s %s %s %s %s %s %s", REAP_HASH, k[0].field,
				drained, REAP_DEAD, "0 0 1 b 5 1", REAP_DEAD2, "0 0 1", REAP_LIVE,
				alive));
	/* The call samples every field: its 3 keys', the other 3 and the hash's 'live'. */
	assert_int_equal(LEASE_REAP_PER_KEY * REAP_CALL + 1, REAP_CALL + 3 + 1);
	assert_int_equal(
		store_lease_sync(&f->a, "a", LONG_TTL_US, q, REAP_CALL, g, f->err, sizeof(f->err)),
		0);
	for (i = 0; i < REAP_CALL; i++)
		assert_int_equal(g[i].granted, SLOW_CAP);
	assert_int_equal(check_bucket(f, &k[0]).tok / HOUR_US, SLOW_BURST - SLOW_CAP);
	command_u64(f, &found, "HGET %s %s", REAP_HASH, REAP_DEAD);
	assert_false(found);
	command_u64(f, &found, "HGET %s %s", REAP_HASH, REAP_DEAD2);
	assert_false(found);
	command_u64(f, &found, "HGET %s %s", REAP_HASH, REAP_LIVE);
	assert_true(found);
	assert_int_equal(command_u64(f, &found, "HLEN %s", REAP_HASH), REAP_CALL + 1 + 1);
}

/*
 * A bucket that is not what the script writes (a store that lies, or a
 * hand with redis-cli): the script fails, and so does every key of its
 * call, each with the cause (a store fault: its policy's on_store_error);
 * nothing of the call is written, the bad bucket included, and a call
 * without it is served.
 */
struct bad_bucket_row {
	const char *name;
	const char *value;
};

static const struct bad_bucket_row bad_bucket_rows[] = {
	{ "a token count that is not a number", "x 1 99999999999999999" },
	{ "fewer than three words", "7" },
	{ "a lease without its expiry", "0 0 99999999999999999 a 5" },
};

static void test_bad_bucket(void **state)
{
	struct fix *f = *state;
	const struct bad_bucket_row *row = f->row;
	struct lease_key k[2] = { slow_field("bad", 0), slow_field("bad", 1) };
	struct lease_req q[2] = { { .k = &k[0], .want = 1 }, { .k = &k[1], .want = 1 } };
	struct lease_grant g[2];
	redisReply *r;
	int found;

	freeReplyObject(command(f, "HSET bad %s %s", k[0].field, row->value));
	assert_int_equal(store_lease_sync(&f->a, "a", LONG_TTL_US, q, 2, g, f->err, sizeof(f->err)),
			 -EPROTO);
	assert_int_equal(g[0].err, -EPROTO);
	assert_int_equal(g[1].err, -EPROTO);
	assert_non_null(strstr(f->err, "lease script failed on the call of 2 keys"));
	r = command(f, "HGET bad %s", k[0].field);
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	assert_string_equal(r->str, row->value);
	freeReplyObject(r);
	command_u64(f, &found, "HGET bad %s", k[1].field);
	assert_false(found);
	assert_int_equal(sync1(f, &k[1], "a", LONG_TTL_US, 0, 1).granted, 1);
}

/*
 * Membership: three beat, one stops, the count drops to two no sooner than
 * its ttl after its last beat, in Redis time: a beat that runs before then
 * (the TIME read before it says so) counts it, one after (the TIME read
 * after it says so) does not.
 */
#define MEMBER_FLEET "fleet"

static __u64 beat(struct fix *f, const char *node)
{
	__u64 live = 0;

	assert_int_equal(store_member_beat(&f->a, MEMBER_FLEET, node, SHORT_TTL_US, &live, f->err,
					   sizeof(f->err)),
			 0);
	return live;
}

static void test_membership(void **state)
{
	static const char *const nodes[] = { "a", "b", "c" };
	enum { STAYING = 2 }; /* nodes[0..STAYING) keep beating */
	struct fix *f = *state;
	__u64 live = 0, c_us, t0, t1;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(nodes); i++)
		assert_int_equal(beat(f, nodes[i]), i + 1);
	assert_int_equal(beat(f, nodes[0]), ARRAY_SIZE(nodes)); /* counts once */
	c_us = zscore(f, MEMBER_FLEET, nodes[STAYING]);
	do {
		sleep_us(POLL_US);
		t0 = redis_time_us(f);
		for (i = 0; i < STAYING; i++) {
			live = beat(f, nodes[i]);
			assert_true(live == STAYING || live == ARRAY_SIZE(nodes));
		}
		t1 = redis_time_us(f);
		if (live == ARRAY_SIZE(nodes))
			assert_true(t0 < c_us + SHORT_TTL_US); /* c must be gone by then */
		assert_true(t1 - c_us < DEADLINE_US);
	} while (live != STAYING);
	assert_true(t1 >= c_us + SHORT_TTL_US); /* not before c's ttl */
	print_message("membership: '%s' left %llu us after its last beat (ttl %llu us)\n",
		      nodes[STAYING], (unsigned long long)(t1 - c_us),
		      (unsigned long long)SHORT_TTL_US);
}

/*
 * @node beats with the newest layout it speaks, @layout, on Redis (@be
 * NULL) or on the memory store @be; the fleet's layout, *@live its count.
 */
static unsigned layout_beat_ttl(struct fix *f, struct budget_backend *be, const char *node,
				unsigned layout, __u64 ttl_us, __u64 *live)
{
	struct budget_sync b = {
		.fleet = MEMBER_FLEET, .node = node, .beat_ttl_us = ttl_us, .layout = layout
	};

	if (be)
		assert_int_equal(backend__sync(be, &b, f->err, sizeof(f->err)), 0);
	else
		assert_int_equal(store_budget_sync(&f->a, &b, f->err, sizeof(f->err)), 0);
	*live = b.live_nodes;
	return b.fleet_layout;
}

static unsigned layout_beat(struct fix *f, struct budget_backend *be, const char *node,
			    unsigned layout, __u64 *live)
{
	return layout_beat_ttl(f, be, node, layout, SHORT_TTL_US, live);
}

/*
 * Rolling upgrades across the store layout: "old" beats as an agent of
 * the lump layout alone, "n1" and "n2" speak the rate layout. The fleet's
 * layout is the lump one while old's beat is live, on Redis as on the
 * memory store, and the rate one from its expiry on (exactly at it on the
 * memory store's clock, and never before it on Redis TIME); old beating
 * again takes it back at once. A layout beyond the rate one is refused.
 */
static void test_layout(void **state)
{
	static const char *const nodes[] = { "n1", "n2" };
	struct fix *f = *state;
	struct mem_store *m = mem_store__new(1);
	struct budget_backend *be;
	__u64 live = 0, old_us, t0, t1;
	struct counts before, d;
	unsigned layout = STORE_LAYOUT_LUMP;
	size_t i;

	assert_non_null(m);
	be = backend_mem__open(m);
	assert_non_null(be);
	/* The memory store: at old's beat + TTL exactly, not a µs before. */
	mem_store__set_now(m, HOUR_US);
	assert_int_equal(layout_beat(f, be, "old", 0, &live), STORE_LAYOUT_LUMP);
	assert_int_equal(layout_beat(f, be, nodes[0], STORE_LAYOUT_RATE, &live), STORE_LAYOUT_LUMP);
	assert_int_equal(live, 2);
	mem_store__set_now(m, HOUR_US + SHORT_TTL_US - 1);
	assert_int_equal(layout_beat(f, be, nodes[0], STORE_LAYOUT_RATE, &live), STORE_LAYOUT_LUMP);
	mem_store__set_now(m, HOUR_US + SHORT_TTL_US);
	assert_int_equal(layout_beat(f, be, nodes[0], STORE_LAYOUT_RATE, &live), STORE_LAYOUT_RATE);
	assert_int_equal(live, 1);
	assert_int_equal(layout_beat(f, be, "old", STORE_LAYOUT_LUMP, &live), STORE_LAYOUT_LUMP);
	assert_int_equal(layout_beat(f, be, nodes[0], STORE_LAYOUT_RATE, &live), STORE_LAYOUT_LUMP);
	backend__free(be);
	mem_store__free(m);

	/* Redis. */
	assert_int_equal(beat(f, "old"), 1); /* BEAT_LUA, as an older agent runs it */
	for (i = 0; i < ARRAY_SIZE(nodes); i++) {
		before = read_counts(f);
		assert_int_equal(layout_beat(f, NULL, nodes[i], STORE_LAYOUT_RATE, &live),
				 STORE_LAYOUT_LUMP);
		d = counts_since(f, &before);
		assert_int_equal(live, i + 2);
	}
	print_message("a beat of the rate layout: %llu commands\n", (unsigned long long)d.commands);
	old_us = zscore(f, MEMBER_FLEET, "old");
	do {
		sleep_us(POLL_US);
		t0 = redis_time_us(f);
		for (i = 0; i < ARRAY_SIZE(nodes); i++)
			layout = layout_beat(f, NULL, nodes[i], STORE_LAYOUT_RATE, &live);
		t1 = redis_time_us(f);
		if (layout == STORE_LAYOUT_LUMP)
			assert_true(t0 <
				    old_us + SHORT_TTL_US); /* old's beat must be gone by then */
		assert_true(t1 - old_us < DEADLINE_US);
	} while (layout != STORE_LAYOUT_RATE);
	assert_int_equal(live, ARRAY_SIZE(nodes));
	assert_true(t1 >= old_us + SHORT_TTL_US); /* not before old's beat expired */
	print_message("layout: the rate layout %llu us after old's last beat (ttl %llu us)\n",
		      (unsigned long long)(t1 - old_us), (unsigned long long)SHORT_TTL_US);
	assert_int_equal(beat(f, "old"), ARRAY_SIZE(nodes) + 1);
	assert_int_equal(layout_beat(f, NULL, nodes[0], STORE_LAYOUT_RATE, &live),
			 STORE_LAYOUT_LUMP);
	{
		struct budget_sync b = { .fleet = MEMBER_FLEET,
					 .node = nodes[0],
					 .beat_ttl_us = SHORT_TTL_US,
					 .layout = STORE_LAYOUT_RATE + 1 };

		before = read_counts(f);
		assert_int_equal(store_budget_sync(&f->a, &b, f->err, sizeof(f->err)), -EINVAL);
		assert_non_null(strstr(f->err, "layout"));
		assert_int_equal(counts_since(f, &before).commands, 0);
	}
}

/*
 * Nodes of the rate layout beat rarely, with a TTL that long
 * (RATE_BEAT_SYNCS); "old" beats with its short one and drops them from
 * the fleet set, not from the speakers' set. n1's beat then finds as many
 * speakers as members ({old, n1} and {n1, n2}), and still answers the
 * lump layout: old is live and speaks none. On the memory store and Redis.
 */
static void test_layout_pruned(void **state)
{
	const __u64 long_us = RATE_BEAT_SYNCS * SHORT_TTL_US;
	struct fix *f = *state;
	struct mem_store *m = mem_store__new(1);
	struct budget_backend *be;
	__u64 live = 0;

	assert_non_null(m);
	be = backend_mem__open(m);
	assert_non_null(be);
	mem_store__set_now(m, HOUR_US);
	layout_beat_ttl(f, be, "n1", STORE_LAYOUT_RATE, long_us, &live);
	layout_beat_ttl(f, be, "n2", STORE_LAYOUT_RATE, long_us, &live);
	mem_store__set_now(m, HOUR_US + SHORT_TTL_US);
	assert_int_equal(layout_beat(f, be, "old", 0, &live), STORE_LAYOUT_LUMP);
	assert_int_equal(live, 1); /* old dropped n1 and n2 */
	assert_int_equal(layout_beat_ttl(f, be, "n1", STORE_LAYOUT_RATE, long_us, &live),
			 STORE_LAYOUT_LUMP);
	assert_int_equal(live, 2);
	backend__free(be);
	mem_store__free(m);

	layout_beat_ttl(f, NULL, "n1", STORE_LAYOUT_RATE, long_us, &live);
	layout_beat_ttl(f, NULL, "n2", STORE_LAYOUT_RATE, long_us, &live);
	sleep_us(SHORT_TTL_US + POLL_US);
	assert_int_equal(beat(f, "old"), 1);
	assert_int_equal(layout_beat_ttl(f, NULL, "n1", STORE_LAYOUT_RATE, long_us, &live),
			 STORE_LAYOUT_LUMP);
	assert_int_equal(live, 2);
}

/* The news counter's value, read (@bump 0) or bumped, on Redis (@be NULL) or the memory store. */
static __u64 news(struct fix *f, struct budget_backend *be, const char *key, int bump)
{
	__u64 v = ~0ULL;

	if (be)
		assert_int_equal(be->ops->news(be, key, bump, &v, f->err, sizeof(f->err)), 0);
	else
		assert_int_equal(store_news(&f->a, key, bump, &v, f->err, sizeof(f->err)), 0);
	return v;
}

/*
 * The fleet's news counter (LEASE_NEWS_FMT): 0 while it does not exist; a
 * node's first beat of the rate layout bumps it, its next does not, an
 * older agent's beat (BEAT_LUA) never does; a bump adds one. On Redis a
 * read and a bump are one command each, and a value that is not a count
 * (a word, a sign, past 2^64, a fraction, empty, trailing junk) is
 * refused, naming the key. On the memory store as on Redis.
 */
static void test_news(void **state)
{
	/* a word, a sign, past 2^64, a fraction, nothing, digits then more */
	static const char *const not_counts[] = { "x",	 "-1", "18446744073709551616",
						  "1.5", "",   "12abc" };
	struct fix *f = *state;
	struct mem_store *m = mem_store__new(1);
	struct budget_backend *be, *on[2];
	char key[LEASE_KEY_LEN];
	struct counts before;
	__u64 live, v;
	size_t i;

	assert_non_null(m);
	be = backend_mem__open(m);
	assert_non_null(be);
	on[0] = NULL;
	on[1] = be;
	snprintf(key, sizeof(key), LEASE_NEWS_FMT, MEMBER_FLEET, MEMBER_FLEET);
	for (i = 0; i < ARRAY_SIZE(on); i++) {
		before = read_counts(f);
		assert_int_equal(news(f, on[i], key, 0), 0);
		if (!on[i])
			assert_int_equal(counts_since(f, &before).commands, 1);
		layout_beat(f, on[i], "n1", STORE_LAYOUT_RATE, &live);
		assert_int_equal(news(f, on[i], key, 0), 1);
		layout_beat(f, on[i], "n1", STORE_LAYOUT_RATE, &live);
		layout_beat(f, on[i], "old", 0, &live);
		assert_int_equal(news(f, on[i], key, 0), 1);
		layout_beat(f, on[i], "n2", STORE_LAYOUT_RATE, &live);
		assert_int_equal(live, 3);
		before = read_counts(f);
		assert_int_equal(news(f, on[i], key, 1), 3);
		if (!on[i])
			assert_int_equal(counts_since(f, &before).commands, 1);
		assert_int_equal(news(f, on[i], key, 0), 3);
	}
	for (i = 0; i < ARRAY_SIZE(not_counts); i++) {
		freeReplyObject(command(f, "SET %s %s", key, not_counts[i]));
		assert_int_equal(store_news(&f->a, key, 0, &v, f->err, sizeof(f->err)), -EPROTO);
		assert_non_null(strstr(f->err, key));
	}
	freeReplyObject(command(f, "SET %s %s", key, "7"));
	assert_int_equal(news(f, NULL, key, 0), 7);
	backend__free(be);
	mem_store__free(m);
}

/* Members a hot set reply handed to on_member, per hot set, in order. */
#define HOT_SETS   2
#define SEEN_MAX   8
#define MEMBER_LEN 32

struct seen {
	char m[HOT_SETS][SEEN_MAX][MEMBER_LEN];
	size_t n[HOT_SETS];
	size_t dropped; /* of an unknown set, past SEEN_MAX, or too long: a failure */
};

static int on_member(void *arg, size_t hot, const char *member)
{
	struct seen *s = arg;

	if (hot >= HOT_SETS || s->n[hot] >= SEEN_MAX || strlen(member) >= MEMBER_LEN) {
		s->dropped++;
		return 0;
	}
	snprintf(s->m[hot][s->n[hot]++], MEMBER_LEN, "%s", member);
	return 0;
}

/* Hot set @hot returned exactly the members given, in order, then NULL. */
__attribute__((sentinel)) static void assert_members(const struct seen *s, size_t hot, ...)
{
	const char *want;
	size_t n = 0;
	va_list ap;

	assert_int_equal(s->dropped, 0);
	va_start(ap, hot);
	while ((want = va_arg(ap, const char *))) {
		if (n >= s->n[hot])
			fail_msg("hot set %zu: %zu members, expected '%s' next", hot, s->n[hot],
				 want);
		assert_string_equal(s->m[hot][n++], want);
	}
	va_end(ap);
	if (s->n[hot] != n)
		fail_msg("hot set %zu: %zu members, expected %zu", hot, s->n[hot], n);
}

/* One hot set, nothing else, on node @n's connection. */
static void hot_sync(struct fix *f, struct store_conn *n, const struct hot_req *h, struct seen *s)
{
	struct budget_sync b = { .hot = h, .n_hot = 1, .on_member = on_member, .arg = s };

	memset(s, 0, sizeof(*s));
	assert_int_equal(store_budget_sync(n, &b, f->err, sizeof(f->err)), 0);
}

/*
 * Hot sets: two nodes add members to one set, and both read back the union,
 * the most recently added first, at most limit of them. Member names are
 * chosen so that neither lexical order gives the recency order. Each add
 * waits until Redis TIME has passed the previous one's score, so no two
 * share a score.
 */
#define HOT_KEY		"hot:p"
#define HOT_TTL_US	SHORT_TTL_US
#define HOT_LIMIT	SEEN_MAX
#define HOT_LIMIT_SMALL 2

static void hot_union(struct fix *f, struct hot_req *h)
{
	static const char *const a1[] = { "ff01" }, *const b1[] = { "0001" },
				 *const a2[] = { "8001" };
	struct seen s;
	__u64 t0, t1, score;

	h->add = a1;
	h->n_add = ARRAY_SIZE(a1);
	t0 = redis_time_us(f);
	hot_sync(f, &f->a, h, &s);
	t1 = redis_time_us(f);
	assert_members(&s, 0, "ff01", (const char *)NULL);
	score = zscore(f, HOT_KEY, "ff01");
	assert_true(t0 <= score && score <= t1); /* scored with Redis TIME */
	wait_redis_until(f, score + 1);
	h->add = b1;
	hot_sync(f, &f->b, h, &s);
	assert_members(&s, 0, "0001", "ff01", (const char *)NULL);
	wait_redis_until(f, zscore(f, HOT_KEY, "0001") + 1);
	h->add = a2;
	hot_sync(f, &f->a, h, &s);
	assert_members(&s, 0, "8001", "0001", "ff01", (const char *)NULL);
	h->n_add = 0;
	h->limit = HOT_LIMIT_SMALL;
	hot_sync(f, &f->b, h, &s);
	assert_members(&s, 0, "8001", "0001", (const char *)NULL);
	h->limit = HOT_LIMIT;
	hot_sync(f, &f->a, h, &s);
	assert_members(&s, 0, "8001", "0001", "ff01", (const char *)NULL);
}

/* Whether @m is among hot set 0's members in @s. */
static int has_member(const struct seen *s, const char *m)
{
	size_t i;

	for (i = 0; i < s->n[0]; i++)
		if (!strcmp(s->m[0][i], m))
			return 1;
	return 0;
}

/*
 * b keeps re-adding 0001; a's two members, not re-added, must leave: each
 * is present in a call that began before its score + ttl, absent from one
 * that ended after it, and both go.
 */
static void hot_expiry(struct fix *f, struct hot_req *h)
{
	static const char *const stale[] = { "ff01", "8001" }, *const kept[] = { "0001" };
	__u64 score[ARRAY_SIZE(stale)], gone_us[ARRAY_SIZE(stale)] = { 0 }, t0, t1;
	size_t i, n_gone = 0;
	struct seen s;

	for (i = 0; i < ARRAY_SIZE(stale); i++)
		score[i] = zscore(f, HOT_KEY, stale[i]);
	h->add = kept;
	h->n_add = ARRAY_SIZE(kept);
	while (n_gone < ARRAY_SIZE(stale)) {
		sleep_us(POLL_US);
		t0 = redis_time_us(f);
		hot_sync(f, &f->b, h, &s);
		t1 = redis_time_us(f);
		assert_string_equal(s.m[0][0], kept[0]);
		for (i = 0, n_gone = 0; i < ARRAY_SIZE(stale); i++) {
			if (has_member(&s, stale[i])) {
				assert_true(t0 < score[i] + HOT_TTL_US);
				continue;
			}
			assert_true(t1 >= score[i] + HOT_TTL_US);
			gone_us[i] = gone_us[i] ? gone_us[i] : t1 - score[i];
			n_gone++;
		}
		assert_true(t1 - score[0] < DEADLINE_US);
	}
	for (i = 0; i < ARRAY_SIZE(stale); i++)
		print_message("hot set: '%s' left within %llu us of its last add (ttl %llu us)\n",
			      stale[i], (unsigned long long)gone_us[i],
			      (unsigned long long)HOT_TTL_US);
}

/*
 * A node that saw many keys hot adds them in a few ZADDs, not one each
 * (#17): HOT_MANY members, in ZADDs of STORE_HOT_ZADD_MEMBERS, all with
 * the call's one score.
 */
#define HOT_MANY     (2 * STORE_HOT_ZADD_MEMBERS + STORE_HOT_ZADD_MEMBERS / 2 + 1)
#define HOT_MANY_KEY "hot:many"

static void hot_many(struct fix *f)
{
	struct hot_req h = { .key = HOT_MANY_KEY, .ttl_us = LONG_TTL_US, .limit = HOT_LIMIT };
	const char **add = calloc(HOT_MANY, sizeof(*add));
	char(*names)[MEMBER_LEN] = calloc(HOT_MANY, sizeof(*names));
	struct counts before, did;
	struct seen s;
	__u64 score;
	size_t i;
	int found;

	assert_non_null(add);
	assert_non_null(names);
	for (i = 0; i < HOT_MANY; i++) {
		snprintf(names[i], MEMBER_LEN, "%08zx", i);
		add[i] = names[i];
	}
	h.add = add;
	h.n_add = HOT_MANY;
	before = read_counts(f);
	hot_sync(f, &f->a, &h, &s);
	did = counts_since(f, &before);
	assert_int_equal(did.zadd,
			 (HOT_MANY + STORE_HOT_ZADD_MEMBERS - 1) / STORE_HOT_ZADD_MEMBERS);
	assert_int_equal(command_u64(f, &found, "ZCARD %s", HOT_MANY_KEY), HOT_MANY);
	score = zscore(f, HOT_MANY_KEY, names[0]);
	for (i = 1; i < HOT_MANY; i++)
		assert_int_equal(zscore(f, HOT_MANY_KEY, names[i]), score);
	assert_int_equal(s.n[0], HOT_LIMIT);
	free(names);
	free(add);
}

static void test_hot_sets(void **state)
{
	struct fix *f = *state;
	struct hot_req h = { .key = HOT_KEY, .ttl_us = HOT_TTL_US, .limit = HOT_LIMIT };

	hot_union(f, &h);
	hot_expiry(f, &h);
	hot_many(f);
}

/*
 * A budget sync with a beat, two hot sets and three leases is one pipeline:
 * 1 + 2 + 3 EVALSHA in one round trip (one server read), each reply landing
 * in its own output. Node b first puts itself and a member in each set.
 */
#define SYNC_LEASES 3
#define SYNC_FLEET  "sync:fleet"
#define SYNC_CALLS  (1 + HOT_SETS + 1) /* the beat, the hot sets, one call for the leases */
#define SYNC_NODES  2		       /* a and b */

struct sync_fix {
	struct lease_key k[SYNC_LEASES];
	struct lease_req q[SYNC_LEASES];
	struct lease_grant g[SYNC_LEASES];
	struct hot_req h[HOT_SETS];
	struct seen s;
	struct budget_sync b;
};

static void sync_fix_init(struct sync_fix *x, const char *node)
{
	static const __u64 want[SYNC_LEASES] = { 3, 5, 7 };
	size_t i;

	memset(x, 0, sizeof(*x));
	for (i = 0; i < SYNC_LEASES; i++) {
		x->k[i] = slow_field("sync:lease", i);
		x->q[i] = (struct lease_req){ .k = &x->k[i], .want = want[i] };
	}
	for (i = 0; i < HOT_SETS; i++) {
		snprintf(x->h[i].key, sizeof(x->h[i].key), "sync:hot%zu", i);
		x->h[i].ttl_us = LONG_TTL_US;
		x->h[i].limit = HOT_LIMIT;
	}
	x->b = (struct budget_sync){ .fleet = SYNC_FLEET,
				     .node = node,
				     .beat_ttl_us = LONG_TTL_US,
				     .hot = x->h,
				     .n_hot = HOT_SETS,
				     .on_member = on_member,
				     .arg = &x->s,
				     .holder = node,
				     .lease_ttl_us = LONG_TTL_US,
				     .leases = x->q,
				     .n_leases = SYNC_LEASES,
				     .grants = x->g };
}

static struct counts sync_run(struct fix *f, struct store_conn *n, struct sync_fix *x)
{
	struct counts before = read_counts(f);

	memset(&x->s, 0, sizeof(x->s));
	assert_int_equal(store_budget_sync(n, &x->b, f->err, sizeof(f->err)), 0);
	return counts_since(f, &before);
}

/* Node b: in the fleet, one member in each hot set, no leases. */
static void sync_peer(struct fix *f)
{
	static const char *const add[HOT_SETS][1] = { { "b0" }, { "b1" } };
	struct sync_fix x;
	size_t i;

	sync_fix_init(&x, "b");
	x.b.n_leases = 0;
	for (i = 0; i < HOT_SETS; i++) {
		x.h[i].add = add[i];
		x.h[i].n_add = ARRAY_SIZE(add[i]);
	}
	sync_run(f, &f->b, &x);
	assert_int_equal(x.b.live_nodes, 1);
	assert_members(&x.s, 0, "b0", (const char *)NULL);
	assert_members(&x.s, 1, "b1", (const char *)NULL);
	wait_redis_until(f, zscore(f, "sync:hot1", "b1") + 1);
}

/* Each lease, in order, topped up to its want by @granted[i]. */
static void assert_grants(const struct sync_fix *x, const __u64 *granted)
{
	size_t i;

	for (i = 0; i < SYNC_LEASES; i++) {
		assert_int_equal(x->g[i].err, 0);
		assert_int_equal(x->g[i].held, x->q[i].want);
		assert_int_equal(x->g[i].granted, granted[i]);
	}
}

static void test_budget_sync(void **state)
{
	static const char *const a0[] = { "a0" }, *const a1[] = { "a1" };
	static const __u64 used[SYNC_LEASES] = { 1, 2, 3 };
	struct fix *f = *state;
	__u64 first[SYNC_LEASES];
	struct sync_fix x;
	struct counts d;
	size_t i;

	sync_peer(f);
	sync_fix_init(&x, "a");
	x.h[0].add = a0;
	x.h[0].n_add = ARRAY_SIZE(a0);
	d = sync_run(f, &f->a, &x); /* first on the connection: each script loaded once */
	print_message("budget sync, first on a connection: %llu calls, %llu script loads, "
		      "%llu server reads\n",
		      (unsigned long long)d.evalsha, (unsigned long long)d.load,
		      (unsigned long long)d.reads);
	assert_int_equal(d.load, STORE_SCRIPT_RATE); /* every script but rate leases' */
	assert_int_equal(d.evalsha, SYNC_CALLS);
	assert_int_equal(x.b.live_nodes, SYNC_NODES);
	assert_members(&x.s, 0, "a0", "b0", (const char *)NULL);
	assert_members(&x.s, 1, "b1", (const char *)NULL);
	for (i = 0; i < SYNC_LEASES; i++)
		first[i] = x.q[i].want;
	assert_grants(&x, first);
	x.h[0].n_add = 0;
	x.h[1].add = a1;
	x.h[1].n_add = ARRAY_SIZE(a1);
	for (i = 0; i < SYNC_LEASES; i++)
		x.q[i].used = used[i];
	d = sync_run(f, &f->a, &x);
	print_message("budget sync, scripts cached: evalsha %llu, eval %llu, script load %llu, "
		      "server reads %llu\n",
		      (unsigned long long)d.evalsha, (unsigned long long)d.eval,
		      (unsigned long long)d.load, (unsigned long long)d.reads);
	assert_int_equal(d.evalsha, SYNC_CALLS);
	assert_int_equal(d.eval, 0);
	assert_int_equal(d.load, 0);
	assert_int_equal(d.reads, 1);
	assert_int_equal(x.b.live_nodes, SYNC_NODES);
	assert_members(&x.s, 0, "a0", "b0", (const char *)NULL);
	assert_members(&x.s, 1, "a1", "b1", (const char *)NULL);
	assert_grants(&x, used);
}

/*
 * A script that fails on one key (the key holds a string): the sync fails
 * (-EPROTO: an error reply is a store fault, #12), and so does every lease
 * of that call (one call carries them all, and Redis answers it with the
 * error); a hot set that fails fails the sync (-EPROTO) with its cause.
 */
static void test_script_error(void **state)
{
	struct fix *f = *state;
	char prefix[STORE_ERR_LEN];
	struct sync_fix x;

	sync_fix_init(&x, "a");
	snprintf(prefix, sizeof(prefix),
		 "lease script failed on the call of %d keys with '%s' %s: ", SYNC_LEASES,
		 x.k[0].key, x.k[0].field);
	x.b.fleet = NULL;
	x.b.n_hot = 0;
	freeReplyObject(command(f, "SET %s x", x.k[1].key));
	assert_int_equal(store_budget_sync(&f->a, &x.b, f->err, sizeof(f->err)), -EPROTO);
	assert_int_equal(x.g[0].err, -EPROTO);
	assert_int_equal(x.g[1].err, -EPROTO);
	assert_int_equal(x.g[2].err, -EPROTO);
	assert_memory_equal(f->err, prefix, strlen(prefix));
	assert_non_null(strstr(f->err, "WRONGTYPE"));
	x.b.n_hot = 1;
	freeReplyObject(command(f, "SET %s x", x.h[0].key));
	assert_int_equal(store_budget_sync(&f->a, &x.b, f->err, sizeof(f->err)), -EPROTO);
	snprintf(prefix, sizeof(prefix), "hot set '%s': ", x.h[0].key);
	assert_memory_equal(f->err, prefix, strlen(prefix));
	assert_non_null(strstr(f->err, "WRONGTYPE"));
}

/*
 * The fleet: fleets of 2 and 4 nodes, four demand shapes, each node syncing
 * all its keys in one call every 50 ms for ~3 s of Redis time. The node
 * side is simulated as the agent does it: what it may spend is what it held
 * at its last call minus what it has spent since; it reads its counter (the
 * used it reports), keeps spending while the call travels (a quarter of
 * what it spends in the tick, reported next time), and spends nothing of a lease
 * Redis TIME says has expired. After every call: the invariant, the exact
 * top-up (held = kept + granted, kept = held − used unless expired), the
 * cap, a short grant only from an empty bucket, and Σ held as simulated =
 * Σ lease in Redis. Over every run of calls i..j of a key, with t the
 * Redis TIME of each call: Σ granted × P and Σ spent × P are both
 * <= burst × P + units × (t_j − t_{i−1}) exactly (spending of call i
 * happens after call i−1: the test is sequential).
 */
enum shape { SHAPE_UNIFORM, SHAPE_80_20, SHAPE_GREEDY, SHAPE_OVERREPORT, SHAPE_MAX };

static const char *const shape_name[SHAPE_MAX] = {
	[SHAPE_UNIFORM] = "uniform-half",
	[SHAPE_80_20] = "80/20",
	[SHAPE_GREEDY] = "greedy",
	[SHAPE_OVERREPORT] = "over-reporting",
};

#define FLEET_UNITS	  100 /* per second */
#define FLEET_BURST	  50
#define FLEET_CAP	  20
#define FLEET_WANT	  10 /* uniform and over-reporting nodes: want and demand */
#define FLEET_WANT_SMALL  5  /* the others beside a greedy node */
#define FLEET_WANT_80	  32 /* the 80 % node */
#define FLEET_WANT_20	  8  /* shared by the others */
#define UNIFORM_SPEND_DIV 2  /* uniform nodes spend half of what they may */
#define IN_FLIGHT_DIV	  4  /* a quarter of what a node spends in a tick: after its counter read */
#define OVERREPORT	  1000 /* units node 0 adds to what it reports */
#define FLEET_TICKS	  60
#define FLEET_TICK_US	  (50 * US_PER_MS)
#define FLEET_TTL_US	  (3 * FLEET_TICK_US)
#define SMALL_FLEET	  2 /* nodes; the large fleet has MAX_NODES */
#define FLEET_SIZES	  2 /* the small and the large fleet */
#define FLEET_KEYS	  (FLEET_SIZES * SHAPE_MAX)
#define LOG_MAX		  (FLEET_TICKS * MAX_NODES)

enum log_col { LOG_GRANTED, LOG_SPENT, LOG_COLS };

static const char *const log_col_name[LOG_COLS] = {
	[LOG_GRANTED] = "granted",
	[LOG_SPENT] = "spent",
};

struct log_row {
	__u64 t_us;	   /* Redis TIME of the call */
	__u64 v[LOG_COLS]; /* units this call granted; units spent just before it */
};

struct node_sim {
	__u64 held;	       /* what Redis counts as this node's lease (0 once written off) */
	__u64 exp_us;	       /* Redis TIME: nothing of the lease may be spent from then on */
	__u64 spendable;       /* held at the last call minus what was spent since */
	__u64 unreported;      /* spent, not yet reported as used */
	__u64 spent;	       /* spent before the current call */
	__u64 total[LOG_COLS]; /* granted to and spent by this node so far */
};

struct fleet_key {
	struct lease_key k;
	int k_nodes;
	enum shape shape;
	struct node_sim node[MAX_NODES];
	struct log_row log[LOG_MAX];
	size_t n_log;
	__u64 total[LOG_COLS]; /* granted to and spent by the fleet so far */
};

static __u64 shape_want(enum shape s, int node, int k_nodes)
{
	switch (s) {
	case SHAPE_80_20: return node ? FLEET_WANT_20 / (k_nodes - 1) : FLEET_WANT_80;
	case SHAPE_GREEDY: return node ? FLEET_WANT_SMALL : LEASE_SCALED_MAX;
	default: return FLEET_WANT;
	}
}

/* Units node @node would spend this tick, given @spendable. */
static __u64 shape_demand(enum shape s, int node, int k_nodes, __u64 spendable)
{
	return s == SHAPE_UNIFORM ? spendable / UNIFORM_SPEND_DIV : shape_want(s, node, k_nodes);
}

static void spend(struct node_sim *ns, __u64 units)
{
	ns->spendable -= units;
	ns->unreported += units;
	ns->spent += units;
}

/*
 * The node's side of a tick, before its call: it spends min(demand,
 * spendable), nothing once Redis TIME (@now_us, read just before) reaches
 * its lease's expiry; the last quarter of that after it read its counter.
 */
static struct lease_req node_before(struct fleet_key *fk, int node, __u64 now_us)
{
	struct node_sim *ns = &fk->node[node];
	__u64 demand = shape_demand(fk->shape, node, fk->k_nodes, ns->spendable);
	__u64 x = now_us < ns->exp_us ? MIN(demand, ns->spendable) : 0;
	struct lease_req q = { .k = &fk->k, .want = shape_want(fk->shape, node, fk->k_nodes) };

	ns->spent = 0;
	spend(ns, x - x / IN_FLIGHT_DIV);
	q.used = ns->unreported;
	if (fk->shape == SHAPE_OVERREPORT && node == 0)
		q.used += OVERREPORT; /* clamped: gains nothing */
	ns->unreported = 0;
	spend(ns, x / IN_FLIGHT_DIV); /* in flight: Redis still counts it as held */
	ns->total[LOG_SPENT] += ns->spent;
	if (ns->total[LOG_SPENT] > ns->total[LOG_GRANTED])
		fail_msg("'%s' n%d: spent %llu, more than the %llu it was granted", fk->k.key, node,
			 (unsigned long long)ns->total[LOG_SPENT],
			 (unsigned long long)ns->total[LOG_GRANTED]);
	return q;
}

/* Check grant @g of @node's call @q against the simulation, then install it. */
static void node_after(struct fix *f, struct fleet_key *fk, int node, const struct lease_req *q,
		       const struct lease_grant *g)
{
	struct node_sim *ns = &fk->node[node];
	__u64 kept = ns->exp_us > g->now_us ? ns->held - MIN(q->used, ns->held) : 0;
	__u64 target = MIN(q->want, fk->k.cap), asked = kept < target ? target - kept : 0, sum = 0;
	struct bucket b = check_bucket(f, &fk->k);
	int m;

	assert_int_equal(g->err, 0);
	assert_int_equal(g->expires_us - g->now_us, FLEET_TTL_US);
	if (g->held != kept + g->granted || g->held > fk->k.cap)
		fail_msg("'%s' n%d: held %llu = kept %llu + granted %llu? cap %llu", fk->k.key,
			 node, (unsigned long long)g->held, (unsigned long long)kept,
			 (unsigned long long)g->granted, (unsigned long long)fk->k.cap);
	if (g->granted > asked || (g->granted < asked && b.tok >= fk->k.rate_period_us))
		fail_msg("'%s' n%d: granted %llu of %llu, %llu whole tokens left", fk->k.key, node,
			 (unsigned long long)g->granted, (unsigned long long)asked,
			 (unsigned long long)(b.tok / fk->k.rate_period_us));
	for (m = 0; m < fk->k_nodes; m++) /* the call wrote off every expired lease */
		if (fk->node[m].exp_us <= g->now_us)
			fk->node[m].held = 0;
	ns->held = g->held;
	ns->exp_us = g->expires_us;
	ns->total[LOG_GRANTED] += g->granted;
	ns->spendable = g->held > ns->unreported ? g->held - ns->unreported : 0;
	for (m = 0; m < fk->k_nodes; m++)
		sum += fk->node[m].held;
	assert_int_equal(sum, b.out);
	fk->log[fk->n_log++] =
		(struct log_row){ .t_us = g->now_us,
				  .v = { [LOG_GRANTED] = g->granted, [LOG_SPENT] = ns->spent } };
	fk->total[LOG_GRANTED] += g->granted;
	fk->total[LOG_SPENT] += ns->spent;
}

/* One node's tick: one call for every key it shares. */
static void node_tick(struct fix *f, struct fleet_key *fk, int node)
{
	struct lease_req q[FLEET_KEYS];
	struct lease_grant g[FLEET_KEYS];
	struct fleet_key *of[FLEET_KEYS];
	char name[NAME_LEN];
	__u64 now_us = redis_time_us(f);
	size_t i, n = 0;

	for (i = 0; i < FLEET_KEYS; i++) {
		if (node >= fk[i].k_nodes)
			continue;
		of[n] = &fk[i];
		q[n++] = node_before(&fk[i], node, now_us);
	}
	snprintf(name, sizeof(name), "n%d", node);
	assert_int_equal(
		store_lease_sync(&f->a, name, FLEET_TTL_US, q, n, g, f->err, sizeof(f->err)), 0);
	for (i = 0; i < n; i++)
		node_after(f, of[i], node, &q[i], &g[i]);
}

/*
 * Over every run of calls i..j: Σ col × P <= burst × P + units × (t_j − t_{i−1}),
 * with t_{−1} = t_0 (the bucket is made, full, by call 0). Returns the
 * least slack over all runs, in units.
 */
static long long check_runs(const struct fleet_key *fk, enum log_col col)
{
	const long long per = fk->k.rate_period_us, burst = fk->k.burst * per;
	long long least = fk->k.burst, sum, bound;
	size_t i, j;

	for (i = 0; i < fk->n_log; i++) {
		__u64 t_prev = fk->log[i ? i - 1 : 0].t_us;

		for (j = i, sum = 0; j < fk->n_log; j++) {
			sum += fk->log[j].v[col] * per;
			bound = burst + (long long)fk->k.rate_units * (fk->log[j].t_us - t_prev);
			if (sum > bound)
				fail_msg("'%s': %s %lld units in calls %zu..%zu over %llu us",
					 fk->k.key, log_col_name[col], sum / per, i, j,
					 (unsigned long long)(fk->log[j].t_us - t_prev));
			least = MIN(least, (bound - sum) / per);
		}
	}
	return least;
}

static void fleet_report(const struct fleet_key *fk)
{
	__u64 span_us = fk->log[fk->n_log - 1].t_us - fk->log[0].t_us;
	long long slack[LOG_COLS];
	int col;

	for (col = 0; col < LOG_COLS; col++)
		slack[col] = check_runs(fk, col);
	print_message("%s: %zu calls over %llu us, bound burst + rate x span = %llu units: "
		      "granted %llu, spent %llu; least slack over any run of calls: "
		      "granted %lld, spent %lld\n",
		      fk->k.key, fk->n_log, (unsigned long long)span_us,
		      (unsigned long long)(fk->k.burst + fk->k.rate_units * span_us / US_PER_SEC),
		      (unsigned long long)fk->total[LOG_GRANTED],
		      (unsigned long long)fk->total[LOG_SPENT], slack[LOG_GRANTED],
		      slack[LOG_SPENT]);
}

static void test_fleet(void **state)
{
	static const int sizes[FLEET_SIZES] = { SMALL_FLEET, MAX_NODES };
	struct fix *f = *state;
	struct fleet_key *fk = calloc(FLEET_KEYS, sizeof(*fk));
	int i, tick, node;

	assert_non_null(fk);
	for (i = 0; i < FLEET_KEYS; i++) {
		fk[i].shape = i % SHAPE_MAX;
		fk[i].k_nodes = sizes[i / SHAPE_MAX];
		fk[i].k = (struct lease_key){ .rate_units = FLEET_UNITS,
					      .rate_period_us = US_PER_SEC,
					      .burst = FLEET_BURST,
					      .cap = FLEET_CAP };
		snprintf(fk[i].k.key, sizeof(fk[i].k.key), "fleet%d:%s", fk[i].k_nodes,
			 shape_name[fk[i].shape]);
		fk[i].k.field[0] = '1';
	}
	for (tick = 0; tick < FLEET_TICKS; tick++) {
		for (node = 0; node < MAX_NODES; node++)
			node_tick(f, fk, node);
		sleep_us(FLEET_TICK_US);
	}
	for (i = 0; i < FLEET_KEYS; i++)
		fleet_report(&fk[i]);
	free(fk);
}

/* ---- the in-memory store answers as the scripts do ------------------------------------------ */

#define PARITY_TTL_US (50 * US_PER_MS) /* short: leases expire between some steps */
#define PARITY_RATE   1000	       /* units a second: a step's sleep refills some */
#define PARITY_BURST  50
#define PARITY_CAP    40

struct parity_step {
	int node;     /* 0 or 1 */
	int key;      /* 0: starts full, 1: starts empty */
	int used_pct; /* of what the node holds of the key, reported spent */
	__u64 want;
	int release;
	__u64 sleep_ms; /* before the step */
};

static const struct parity_step parity_steps[] = {
	{ 0, 0, 0, 30, 0, 0 },	{ 1, 0, 0, 40, 0, 0 },	 { 0, 0, 100, 30, 0, 5 },
	{ 1, 0, 50, 10, 1, 5 }, { 0, 1, 0, 20, 0, 0 },	 { 1, 1, 0, 20, 0, 10 },
	{ 0, 0, 0, 50, 0, 60 }, { 1, 0, 0, 50, 0, 0 },	 { 0, 1, 100, 5, 1, 0 },
	{ 1, 1, 0, 50, 0, 20 }, { 0, 0, 100, 40, 0, 3 }, { 1, 0, 100, 40, 0, 3 },
	{ 0, 0, 50, 0, 1, 0 },	{ 1, 0, 100, 40, 0, 1 }, { 1, 1, 100, 50, 0, 70 },
};

/*
 * Each step on Redis (LEASE_LUA), then the same request on the memory
 * store with its clock set to the TIME Redis answered with: held,
 * granted, expiry and time agree exactly, through refill, caps, releases,
 * written-off leases and a bucket that starts empty.
 */
static void test_mem_parity(void **state)
{
	static const char *const node[] = { "pa", "pb" };
	struct fix *f = *state;
	struct lease_key k[2];
	__u64 held[2][2] = { { 0 } };
	struct mem_store *m = mem_store__new(1);
	struct budget_backend *be;
	char err[STORE_ERR_LEN];
	size_t i, j;

	assert_non_null(m);
	be = backend_mem__open(m);
	assert_non_null(be);
	for (j = 0; j < 2; j++) {
		k[j] = (struct lease_key){ .rate_units = PARITY_RATE,
					   .rate_period_us = US_PER_SEC,
					   .burst = PARITY_BURST,
					   .cap = PARITY_CAP,
					   .start_empty = (int)j };
		snprintf(k[j].key, sizeof(k[j].key), "parity:%zu", j);
		snprintf(k[j].field, sizeof(k[j].field), "%zx", j + 1);
	}
	for (i = 0; i < ARRAY_SIZE(parity_steps); i++) {
		const struct parity_step *st = &parity_steps[i];
		const struct timespec nap = { .tv_nsec =
						      (long)(st->sleep_ms * SLUICE_NSEC_PER_MSEC) };
		__u64 *h = &held[st->node][st->key];
		struct lease_req q = { .k = &k[st->key],
				       .held = *h,
				       .used = *h * (__u64)st->used_pct / 100,
				       .want = st->want,
				       .release = st->release };
		struct lease_grant gr, gm;
		struct budget_sync b = { .holder = node[st->node],
					 .lease_ttl_us = PARITY_TTL_US,
					 .leases = &q,
					 .n_leases = 1,
					 .grants = &gm };

		assert_int_equal(nanosleep(&nap, NULL), 0);
		assert_int_equal(store_lease_sync(&f->a, node[st->node], PARITY_TTL_US, &q, 1, &gr,
						  f->err, sizeof(f->err)),
				 0);
		mem_store__set_now(m, gr.now_us);
		assert_int_equal(backend__sync(be, &b, err, sizeof(err)), 0);
		assert_int_equal(gm.err, 0);
		assert_int_equal(gm.held, gr.held);
		assert_int_equal(gm.granted, gr.granted);
		assert_int_equal(gm.expires_us, gr.expires_us);
		assert_int_equal(gm.now_us, gr.now_us);
		*h = gr.held;
	}
	backend__free(be);
	mem_store__free(m);
}

/* ---- rate leases: RATE_LUA answers as the memory store does ------------------------------- */

#define RATE_UNITS    100 /* R a second */
#define RATE_BURST    40  /* B */
#define RATE_KEYS     2
#define RATE_NODES    3
#define RATE_SHORT_US (50 * US_PER_MS)	/* a step's sleep outlives some leases */
#define RATE_LONG_US  (200 * US_PER_MS) /* then renewed for less: a share still enforceable */
#define RATE_SCALE    (1ULL << RATE_LEASE_SHIFT)
#define RATE_MANY     200 /* holders of one key */

struct rate_step {
	int node;
	__u64 want[RATE_KEYS]; /* rate shares wanted, scaled; the burst in proportion */
	int settled;
	int long_ttl;
	int twice; /* key 0 again at the end of the call, wanting half */
	__u64 sleep_ms;
	__u64 level; /* of each key's burst it gives up, scaled (banked up to what it frees) */
};

/*
 * Wants above R, odd ones that floor, zero (a hand-back), lapsed leases,
 * a dead field; levels banked whole, in part (above what the call frees),
 * or not at all (unsettled), two hand-backs banked together, taken by
 * raises, and lapsed.
 */
static const struct rate_step rate_steps[] = {
	{ 0, { 60000, 20000 }, 0, 1, 0, 0, 0 },	   { 1, { 90000, 90000 }, 0, 0, 0, 0, 0 },
	{ 2, { 10001, 200000 }, 0, 0, 0, 5, 0 },   { 0, { 80000, 20000 }, 1, 0, 0, 0, 5000 },
	{ 1, { 90000, 90000 }, 1, 0, 0, 10, 0 },   { 2, { 10001, 0 }, 1, 0, 1, 0, 9000 },
	{ 0, { 80000, 50000 }, 0, 0, 0, 60, 0 },   { 1, { 102400, 102400 }, 1, 1, 0, 0, 0 },
	{ 2, { 50000, 50000 }, 0, 0, 0, 0, 7000 }, { 0, { 0, 0 }, 1, 0, 0, 0, 40000 },
	{ 2, { 50000, 50000 }, 1, 0, 0, 0, 0 },	   { 1, { 33333, 77777 }, 1, 0, 1, 160, 3000 },
	{ 0, { 70000, 70000 }, 0, 0, 0, 0, 0 },	   { 2, { 70000, 70000 }, 1, 0, 0, 300, 0 },
	{ 1, { 70000, 70000 }, 0, 0, 0, 0, 0 },	   { 0, { 70000, 70000 }, 1, 0, 0, 0, 0 },
	{ 1, { 0, 0 }, 1, 1, 0, 0, 99999 },	   { 2, { 10000, 10000 }, 1, 0, 0, 0, 0 },
	{ 0, { 90000, 90000 }, 1, 0, 0, 0, 0 },	   { 0, { 0, 0 }, 0, 0, 0, 0, 30000 },
	{ 2, { 0, 0 }, 1, 0, 0, 0, 20000 },	   { 0, { 90000, 90000 }, 1, 0, 0, 300, 0 },
	{ 1, { 40000, 40000 }, 1, 1, 0, 0, 0 },	   { 0, { 0, 0 }, 1, 1, 0, 0, 20000 },
	{ 1, { 0, 0 }, 1, 1, 0, 0, 50000 },	   { 2, { 30000, 30000 }, 1, 0, 0, 0, 0 },
};

/*
 * fs_renew() on the test's own copy of each key's leases, as the memory
 * store runs it, for the bank it keeps, which it does not show.
 */
struct rate_mirror {
	const struct lease_key *k; /* the keys: a key's index in it is its copy's */
	struct fs_lease v[RATE_KEYS][RATE_MANY];
	struct fs_bank bank[RATE_KEYS];
	size_t merges; /* deposits onto a live bank: a bank of two hand-backs */
};

/* The words of @s, separated by one space. */
static size_t count_words(const char *s)
{
	size_t n = 1;

	for (; *s; s++)
		n += *s == ' ';
	return n;
}

/* Field @field of key @k's rate lease hash, in its @n words @w; 0: there is none. */
static int rate_words(struct fix *f, const struct lease_key *k, const char *field, __u64 *w,
		      size_t n)
{
	redisReply *v = command(f, "HGET %s:%s %s", k->key, k->field, field);
	int found = v->type == REDIS_REPLY_STRING;
	char *s, *end;
	size_t i;

	if (found) {
		assert_int_equal(count_words(v->str), n);
		for (s = v->str, i = 0; i < n; i++, s = end + (*end == ' ')) {
			w[i] = strtoull(s, &end, 10);
			assert_true(end > s && (*end == ' ' || !*end));
		}
	}
	freeReplyObject(v);
	return found;
}

/*
 * Call @r again on @mr, as its holder @who at @now: each burst share and
 * bank taken is the memory store's, in @gm; then each key's bank field
 * in Redis is @mr's bank word for word ("rate burst exp level at 0 0 0":
 * a holder that holds its rate and burst and wants nothing), or absent
 * when the bank is empty.
 */
static void rate_mirror_check(struct fix *f, struct rate_mirror *mr, size_t who,
			      const struct rate_sync *r, const struct rate_lease_grant *gm,
			      __u64 now)
{
	__u64 w[RATE_HOLDER_WORDS];
	size_t j, x;

	assert_true(who < RATE_MANY);
	for (j = 0; j < r->n_leases; j++) {
		const struct rate_lease_req *q = &r->leases[j];
		const __u64 caps[FS_DIMS] = { [FS_RATE] = q->k->rate_units << RATE_LEASE_SHIFT,
					      [FS_BURST] = q->k->burst << RATE_LEASE_SHIFT };
		const struct fs_ask a = {
			.want = { [FS_RATE] = q->want_rate, [FS_BURST] = q->want_burst },
			.ttl_us = r->lease_ttl_us,
			.quantum = { [FS_BURST] = RATE_LEASE_UNIT },
			.settled = q->settled,
			.level = q->level
		};
		struct fs_answer out;
		struct fs_bank live;

		x = (size_t)(q->k - mr->k);
		live = mr->bank[x];
		fs_renew(caps, mr->v[x], RATE_MANY, who, &mr->bank[x], &a, now, &out);
		mr->merges += live.exp_us > now && !out.taken.exp_us &&
			      memcmp(&live, &mr->bank[x], sizeof(live)) != 0;
		assert_int_equal(out.grant[FS_BURST], gm[j].burst);
		assert_memory_equal(&out.taken, &gm[j].taken, sizeof(out.taken));
	}
	for (j = 0; j < r->n_leases; j++) {
		const struct fs_bank *b = &mr->bank[(size_t)(r->leases[j].k - mr->k)];

		if (!rate_words(f, r->leases[j].k, RATE_BANK_FIELD, w, RATE_HOLDER_WORDS)) {
			assert_int_equal(b->exp_us, 0);
			assert_int_equal(b->burst, 0);
			continue;
		}
		assert_int_equal(w[0], b->rate);
		assert_int_equal(w[1], b->burst);
		assert_int_equal(w[2], b->exp_us);
		assert_int_equal(w[3], b->level);
		assert_int_equal(w[4], b->at_us);
		assert_int_equal(w[5], 0);
		assert_int_equal(w[6], 0);
		assert_int_equal(w[7], 0);
		assert_true(w[1] > 0 && w[2] > now && w[3] <= w[1]);
	}
}

static void rate_keys(struct lease_key *k, size_t n)
{
	size_t j;

	for (j = 0; j < n; j++) {
		k[j] = (struct lease_key){ .rate_units = RATE_UNITS,
					   .rate_period_us = US_PER_SEC,
					   .burst = RATE_BURST,
					   .cap = RATE_BURST };
		snprintf(k[j].key, sizeof(k[j].key), LEASE_RATE_FMT, "f", "p", (unsigned int)j);
		snprintf(k[j].field, sizeof(k[j].field), "%zx", j + 1);
	}
}

/* Step @st's requests: each key, then key 0 again when it says so; their count. */
static size_t rate_reqs(const struct rate_step *st, const struct lease_key *k,
			struct rate_lease_req *q)
{
	size_t j, n = 0;

	for (j = 0; j < RATE_KEYS; j++)
		q[n++] = (struct rate_lease_req){ .k = &k[j],
						  .want_rate = st->want[j],
						  .want_burst =
							  st->want[j] * RATE_BURST / RATE_UNITS,
						  .settled = st->settled,
						  .level = st->level };
	if (st->twice) {
		q[n] = q[0];
		q[n].want_rate /= 2;
		q[n++].want_burst /= 2;
	}
	return n;
}

/*
 * Call @r on Redis, then on the memory store @be at the TIME Redis
 * answered with: every share, fair share, expiry, time and bank taken
 * agree exactly, and the bank with @mr's (rate_mirror_check()), @r's
 * holder its @who. @r->grants is Redis's answer. Returns the banks it
 * took.
 */
static size_t rate_both(struct fix *f, struct mem_store *m, struct budget_backend *be,
			struct rate_sync *r, struct rate_mirror *mr, size_t who)
{
	struct rate_lease_grant gm[RATE_KEYS + 1] = { { 0 } }, *gr = r->grants;
	char err[STORE_ERR_LEN];
	size_t j, takes = 0;

	assert_true(r->n_leases <= ARRAY_SIZE(gm));
	assert_int_equal(store_rate_lease(&f->a, r, f->err, sizeof(f->err)), 0);
	mem_store__set_now(m, gr[0].now_us);
	r->grants = gm;
	assert_int_equal(backend__rate_lease(be, r, err, sizeof(err)), 0);
	r->grants = gr;
	for (j = 0; j < r->n_leases; j++) {
		assert_int_equal(gr[j].err, 0);
		assert_int_equal(gm[j].err, 0);
		assert_int_equal(gr[j].now_us, gr[0].now_us); /* one TIME a call */
		assert_int_equal(gm[j].rate, gr[j].rate);
		assert_int_equal(gm[j].burst, gr[j].burst);
		assert_int_equal(gm[j].fair_rate, gr[j].fair_rate);
		assert_int_equal(gm[j].fair_burst, gr[j].fair_burst);
		assert_int_equal(gm[j].expires_us, gr[j].expires_us);
		assert_int_equal(gm[j].now_us, gr[j].now_us);
		assert_int_equal(gm[j].taken.level, gr[j].taken.level);
		assert_int_equal(gm[j].taken.rate, gr[j].taken.rate);
		assert_int_equal(gm[j].taken.burst, gr[j].taken.burst);
		assert_int_equal(gm[j].taken.at_us, gr[j].taken.at_us);
		takes += gr[j].taken.burst != 0;
	}
	rate_mirror_check(f, mr, who, r, gm, gr[0].now_us);
	return takes;
}

/*
 * Each step on Redis (RATE_LUA, several keys of two hashes in one call),
 * then the same call on the memory store with its clock set to the TIME
 * Redis answered with: every share, fair share, expiry, time and bank
 * taken agree exactly, and the bank with fs_renew()'s, word for word.
 * And the shares of the leases live at that time, with the bank's, never
 * add up to more than R or B.
 */
static void test_rate_parity(void **state)
{
	static const char *const node[RATE_NODES] = { "ra", "rb", "rc" };
	static struct rate_mirror mr;
	struct rate_lease_grant last[RATE_NODES][RATE_KEYS] = { { { 0 } } };
	struct fix *f = *state;
	struct lease_key k[RATE_KEYS];
	struct mem_store *m = mem_store__new(1);
	struct budget_backend *be;
	size_t i, j, n, x, takes = 0, banked = 0;

	assert_non_null(m);
	be = backend_mem__open(m);
	assert_non_null(be);
	rate_keys(k, RATE_KEYS);
	memset(&mr, 0, sizeof(mr));
	mr.k = k;
	for (i = 0; i < ARRAY_SIZE(rate_steps); i++) {
		const struct rate_step *st = &rate_steps[i];
		const struct timespec nap = { .tv_nsec =
						      (long)(st->sleep_ms * SLUICE_NSEC_PER_MSEC) };
		struct rate_lease_req q[RATE_KEYS + 1];
		struct rate_lease_grant gr[RATE_KEYS + 1] = { { 0 } };
		struct rate_sync r = { .holder = node[st->node],
				       .lease_ttl_us = st->long_ttl ? RATE_LONG_US : RATE_SHORT_US,
				       .leases = q,
				       .grants = gr };
		__u64 sum_r, sum_b;

		r.n_leases = n = rate_reqs(st, k, q);
		assert_int_equal(nanosleep(&nap, NULL), 0);
		takes += rate_both(f, m, be, &r, &mr, (size_t)st->node);
		for (j = 0; j < n; j++) {
			print_message("step %zu key %zu: rate %llu burst %llu fair %llu %llu "
				      "took %llu %llu level %llu\n",
				      i, j, (unsigned long long)gr[j].rate,
				      (unsigned long long)gr[j].burst,
				      (unsigned long long)gr[j].fair_rate,
				      (unsigned long long)gr[j].fair_burst,
				      (unsigned long long)gr[j].taken.rate,
				      (unsigned long long)gr[j].taken.burst,
				      (unsigned long long)gr[j].taken.level);
			last[st->node][j < RATE_KEYS ? j : 0] = gr[j];
		}
		for (j = 0; j < RATE_KEYS; j++) {
			print_message("step %zu key %zu: bank %llu %llu level %llu\n", i, j,
				      (unsigned long long)mr.bank[j].rate,
				      (unsigned long long)mr.bank[j].burst,
				      (unsigned long long)mr.bank[j].level);
			banked += mr.bank[j].burst != 0;
			/* live, or empty: the call just renewed it */
			sum_r = mr.bank[j].rate;
			sum_b = mr.bank[j].burst;
			for (x = 0; x < RATE_NODES; x++) {
				if (last[x][j].expires_us <= gr[0].now_us)
					continue;
				sum_r += last[x][j].rate;
				sum_b += last[x][j].burst;
			}
			assert_true(sum_r <= RATE_UNITS * RATE_SCALE);
			assert_true(sum_b <= RATE_BURST * RATE_SCALE);
		}
	}
	print_message("%zu calls took a bank, %zu steps left a key a bank, %zu merged two\n", takes,
		      banked, mr.merges);
	assert_true(takes > 0);
	assert_true(banked > 0);
	assert_true(mr.merges > 0);
	backend__free(be);
	mem_store__free(m);
}

#define RATE_MANY_ROUNDS     4
#define RATE_MANY_NAME	     8	 /* "m199" and its NUL */
#define RATE_MANY_SKIP	     5	 /* one holder in this many sits a round out: its lease lapses */
#define RATE_MANY_SHORT	     3	 /* one in this many asks for a short lease */
#define RATE_MANY_UNSETTLED  3	 /* one in this many calls is not settled */
#define RATE_MANY_SMALL	     100 /* a small want, scaled: below the split's level for some */
#define RATE_MANY_SMALL_STEP 7	 /* ... and above it for others */
#define RATE_MANY_NAP_MS     60	 /* between rounds: the short leases lapse */
#define RATE_MANY_LEVELS     3	 /* a hand-back's level: 0, 1/2 or 1 unit, in turns */

/* Holder @i's want in @round: nothing (a hand-back), a small one, or the whole key, in turns. */
static __u64 rate_many_want(size_t i, size_t round)
{
	switch ((i + round) % 4) {
	case 0: return 0;
	case 1: return RATE_MANY_SMALL + RATE_MANY_SMALL_STEP * i;
	default: return RATE_UNITS * RATE_SCALE;
	}
}

/*
 * RATE_MANY holders on one key, in rounds: each renews (but one in
 * RATE_MANY_SKIP, which lets its lease lapse), wanting nothing (banking
 * a level), a little or all of the key, for a short or a long lease,
 * settled or not, on Redis and then on the memory store: every answer
 * and the bank agree exactly, and the live shares with the bank never
 * add up to more than R or B. The short leases lapse within and between
 * rounds, so the script's summary is rebuilt and its dead holders
 * deleted (HGETALL counted), besides the renewals it settles from the
 * summary alone.
 */
static void test_rate_parity_many(void **state)
{
	static struct rate_lease_grant last[RATE_MANY];
	static struct rate_mirror mr;
	char name[RATE_MANY][RATE_MANY_NAME];
	struct fix *f = *state;
	struct lease_key k[1];
	struct mem_store *m = mem_store__new(1);
	struct budget_backend *be;
	struct counts before = read_counts(f), d;
	size_t i, x, round, calls = 0, takes = 0;

	assert_non_null(m);
	be = backend_mem__open(m);
	assert_non_null(be);
	rate_keys(k, 1);
	memset(last, 0, sizeof(last));
	memset(&mr, 0, sizeof(mr));
	mr.k = k;
	for (i = 0; i < RATE_MANY; i++)
		snprintf(name[i], sizeof(name[i]), "m%zu", i);
	for (round = 0; round < RATE_MANY_ROUNDS; round++) {
		const struct timespec nap = { .tv_nsec = (long)(RATE_MANY_NAP_MS *
								SLUICE_NSEC_PER_MSEC) };

		for (i = 0; i < RATE_MANY; i++) {
			const __u64 want = rate_many_want(i, round);
			struct rate_lease_req q = {
				.k = &k[0],
				.want_rate = want,
				.want_burst = want * RATE_BURST / RATE_UNITS,
				.settled = (i + round) % RATE_MANY_UNSETTLED != 0,
				.level = want ? 0 : i % RATE_MANY_LEVELS * RATE_SCALE / 2
			};
			struct rate_sync r = { .holder = name[i],
					       .lease_ttl_us = (i + round) % RATE_MANY_SHORT
								       ? RATE_LONG_US
								       : RATE_SHORT_US,
					       .leases = &q,
					       .n_leases = 1,
					       .grants = &last[i] };
			__u64 sum_r, sum_b;

			if (round && (i + round) % RATE_MANY_SKIP == 0)
				continue;
			takes += rate_both(f, m, be, &r, &mr, i);
			sum_r = mr.bank[0].rate;
			sum_b = mr.bank[0].burst;
			calls++;
			for (x = 0; x < RATE_MANY; x++) {
				if (last[x].expires_us <= last[i].now_us)
					continue;
				sum_r += last[x].rate;
				sum_b += last[x].burst;
			}
			assert_true(sum_r <= RATE_UNITS * RATE_SCALE);
			assert_true(sum_b <= RATE_BURST * RATE_SCALE);
		}
		assert_int_equal(nanosleep(&nap, NULL), 0);
	}
	d = counts_since(f, &before);
	print_message(
		"%zu holders, %zu calls: %llu summaries rebuilt, %zu banks taken, %zu merged\n",
		(size_t)RATE_MANY, calls, (unsigned long long)d.hgetall, takes, mr.merges);
	assert_true(d.hgetall > 0);
	assert_true(takes > 0);
	assert_true(d.hgetall < calls);
	backend__free(be);
	mem_store__free(m);
}

#define RATE_SUB_HOLDERS (RATE_BURST + RATE_BURST / 2) /* more holders than burst units */
#define RATE_SUB_ROUNDS	 4 /* the first holds all; lowered; confirms; the others theirs */
#define RATE_SUB_TTL_US	 (60 * US_PER_SEC) /* no lease lapses while the test runs */

/*
 * More holders of a key than it has burst units, each wanting all of it,
 * in rounds of settled renewals on Redis and then on the memory store:
 * every answer agrees exactly. An even split of the burst (40 units over
 * 60 holders) is below a unit, which a kernel spending whole units never
 * reaches, so no holder would admit anything; burst shares are whole
 * units instead: in the end the first RATE_BURST holders to ask hold one
 * unit each, the others none, every fair burst share is one unit, and
 * the burst shares add up to RATE_BURST exactly.
 */
static void test_rate_parity_sub_unit(void **state)
{
	static struct rate_lease_grant last[RATE_SUB_HOLDERS];
	static struct rate_mirror mr;
	char name[RATE_SUB_HOLDERS][RATE_MANY_NAME];
	struct fix *f = *state;
	struct lease_key k[1];
	struct mem_store *m = mem_store__new(1);
	struct budget_backend *be;
	size_t i, round, holding = 0;
	__u64 sum_b = 0;

	assert_non_null(m);
	be = backend_mem__open(m);
	assert_non_null(be);
	rate_keys(k, 1);
	memset(last, 0, sizeof(last));
	memset(&mr, 0, sizeof(mr));
	mr.k = k;
	for (i = 0; i < RATE_SUB_HOLDERS; i++)
		snprintf(name[i], sizeof(name[i]), "s%zu", i);
	for (round = 0; round < RATE_SUB_ROUNDS; round++) {
		for (i = 0; i < RATE_SUB_HOLDERS; i++) {
			struct rate_lease_req q = { .k = &k[0],
						    .want_rate = RATE_UNITS * RATE_SCALE,
						    .want_burst = RATE_BURST * RATE_SCALE,
						    .settled = round > 0 };
			struct rate_sync r = { .holder = name[i],
					       .lease_ttl_us = RATE_SUB_TTL_US,
					       .leases = &q,
					       .n_leases = 1,
					       .grants = &last[i] };

			rate_both(f, m, be, &r, &mr, i);
			assert_int_equal(last[i].burst % RATE_SCALE, 0);
		}
	}
	for (i = 0; i < RATE_SUB_HOLDERS; i++) {
		assert_int_equal(last[i].fair_burst, RATE_SCALE);
		assert_int_equal(last[i].burst, i < RATE_BURST ? RATE_SCALE : 0);
		holding += last[i].burst != 0;
		sum_b += last[i].burst;
	}
	print_message("%d holders, burst %d: %zu hold a unit\n", RATE_SUB_HOLDERS, RATE_BURST,
		      holding);
	assert_int_equal(sum_b, RATE_BURST * RATE_SCALE);
	backend__free(be);
	mem_store__free(m);
}

#define RATE_COST_KEYS	  STORE_LEASE_BATCH_MAX
#define RATE_COST_TTL_US  (3 * US_PER_SEC)
#define RATE_RENEW_PER_S  2 /* a lease of 3 s renewed at its half: every 1.5 s, 2 in 3 s */
#define RATE_CALL_CMDS	  2 /* EVALSHA, TIME */
#define RATE_KEY_CMDS	  2 /* HMGET, HSET of the key's hash */
#define RATE_FIRST_CMDS	  1 /* and on a first call SCRIPT LOAD, */
#define RATE_FIRST_KEY	  1 /* ... and the PEXPIRE of each new key's hash */
#define RATE_COST_LONG_US (60 * US_PER_SEC) /* no lease lapses while the test runs */

/* One renewal by node "ca" of @n keys of one hash; what the server ran for it. */
static struct counts rate_cost_run(struct fix *f, const struct lease_key *k, size_t n)
{
	struct rate_lease_req q[RATE_COST_KEYS];
	struct rate_lease_grant g[RATE_COST_KEYS];
	struct rate_sync r = { .holder = "ca",
			       .lease_ttl_us = RATE_COST_TTL_US,
			       .leases = q,
			       .n_leases = n,
			       .grants = g };
	struct counts before = read_counts(f);
	size_t i;

	for (i = 0; i < n; i++)
		q[i] = (struct rate_lease_req){ .k = &k[i],
						.want_rate = RATE_UNITS * RATE_SCALE,
						.want_burst = RATE_BURST * RATE_SCALE,
						.settled = 1 };
	assert_int_equal(store_rate_lease(&f->a, &r, f->err, sizeof(f->err)), 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(g[i].err, 0);
		assert_int_equal(g[i].rate, RATE_UNITS * RATE_SCALE); /* alone: all of it */
		assert_int_equal(g[i].burst, RATE_BURST * RATE_SCALE);
		assert_int_equal(g[i].expires_us, g[i].now_us + RATE_COST_TTL_US);
	}
	return counts_since(f, &before);
}

/*
 * What a renewal costs the store, scripts' own commands included: a
 * call's first renewal of a hash also loads the script, sets the hash's
 * TTL and samples it for dead fields; a steady renewal is the call, its
 * TIME, one HMGET and one HSET, one round trip, for 1 key as for 64 of a
 * hash. At a renewal every T/2: commands per node, hot key and second.
 */
static void test_rate_cost(void **state)
{
	static const size_t sizes[] = { 1, RATE_COST_KEYS };
	struct lease_key k[RATE_COST_KEYS];
	struct fix *f = *state;
	struct counts d;
	size_t i, s;

	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		assert_non_null(command(f, "FLUSHALL"));
		f->a.sc.sha[STORE_SCRIPT_RATE][0] = '\0';
		for (i = 0; i < sizes[s]; i++) {
			k[i] = (struct lease_key){ .rate_units = RATE_UNITS,
						   .rate_period_us = US_PER_SEC,
						   .burst = RATE_BURST,
						   .cap = RATE_BURST };
			snprintf(k[i].key, sizeof(k[i].key), LEASE_RATE_FMT, "f", "p", 0U);
			snprintf(k[i].field, sizeof(k[i].field), "%zx", i + 1);
		}
		d = rate_cost_run(f, k, sizes[s]);
		assert_int_equal(d.commands, RATE_CALL_CMDS + RATE_FIRST_CMDS +
						     (RATE_KEY_CMDS + RATE_FIRST_KEY) * sizes[s]);
		d = rate_cost_run(f, k, sizes[s]);
		print_message("rate lease renewal of %zu keys: %llu commands, %llu reads: "
			      "%.2f commands per hot key per second at a renewal every 1.5 s\n",
			      sizes[s], (unsigned long long)d.commands, (unsigned long long)d.reads,
			      (double)(d.commands * RATE_RENEW_PER_S * US_PER_SEC) /
				      (double)(sizes[s] * RATE_COST_TTL_US));
		assert_int_equal(d.commands, RATE_CALL_CMDS + RATE_KEY_CMDS * sizes[s]);
		assert_int_equal(d.evalsha, 1);
		assert_int_equal(d.reads, 1);
	}
}

#define RATE_ALONE_TTL_US (2 * US_PER_SEC)
#define RATE_ALONE_RENEWS 4 /* at each half life: the hash's TTL grows once in these */

/*
 * A key one node holds, renewed at each half life as rateshare.c does:
 * the hash's TTL (RATE_LIVE_SLACK_TTLS lives past the latest expiry)
 * grows once in RATE_ALONE_RENEWS renewals, so a renewal is the 4
 * commands of test_rate_cost and a PEXPIRE now and then. A slack below
 * the half life would PEXPIRE at every renewal: 5 commands, not 4. Nor
 * does a renewal past the holder's own last expiry (the summary's ev)
 * read the hash (HGETALL): the summary counts its holder fields, and
 * the caller's is the only one. Holds while each renewal comes within
 * twice the half life.
 */
static void test_rate_cost_alone(void **state)
{
	struct lease_key k[1];
	struct fix *f = *state;
	struct counts before, d;
	struct rate_lease_req q;
	struct rate_lease_grant g;
	struct rate_sync r = { .holder = "alone",
			       .lease_ttl_us = RATE_ALONE_TTL_US,
			       .leases = &q,
			       .n_leases = 1,
			       .grants = &g };
	int i;

	assert_non_null(command(f, "FLUSHALL"));
	rate_keys(k, 1);
	q = (struct rate_lease_req){ .k = &k[0],
				     .want_rate = RATE_UNITS * RATE_SCALE,
				     .want_burst = RATE_BURST * RATE_SCALE };
	assert_int_equal(store_rate_lease(&f->a, &r, f->err, sizeof(f->err)), 0);
	before = read_counts(f);
	for (i = 0; i < RATE_ALONE_RENEWS; i++) {
		sleep_us(RATE_ALONE_TTL_US / 2);
		q.settled = 1;
		assert_int_equal(store_rate_lease(&f->a, &r, f->err, sizeof(f->err)), 0);
		assert_int_equal(g.err, 0);
		assert_int_equal(g.rate, RATE_UNITS * RATE_SCALE);
	}
	d = counts_since(f, &before);
	print_message("a lone holder, %d renewals: %llu commands, %llu PEXPIREs\n",
		      RATE_ALONE_RENEWS, (unsigned long long)d.commands,
		      (unsigned long long)d.pexpire);
	assert_true(d.pexpire <= 1);
	assert_int_equal(d.hgetall, 0);
	assert_int_equal(d.commands - d.pexpire,
			 (RATE_CALL_CMDS + RATE_KEY_CMDS) * RATE_ALONE_RENEWS);
}

/*
 * What a renewal costs with RATE_MANY holders on its key: as with one,
 * the call, its TIME, one HMGET and one HSET (and a PEXPIRE now and then),
 * every call of RATE_MANY joining and then renewing, none rebuilding the
 * summary (no HGETALL) while no lease lapses, but the second holder's
 * join: every want fit the key with one holder, not with two, and the
 * split is made again from the two. The key's hash is a field
 * a holder and the summary, whose size does not grow with them: a call
 * that read or wrote every holder would need the HGETALL, or a field
 * that grows.
 */
static void test_rate_cost_many(void **state)
{
	char name[RATE_MANY_NAME], hash[LEASE_KEY_LEN + LEASE_FIELD_LEN + 1];
	struct fix *f = *state;
	struct lease_key k[1];
	struct counts before, d;
	__u64 pexpire = 0;
	size_t i, round;
	redisReply *v;
	int found, rebuilt;

	rate_keys(k, 1);
	snprintf(hash, sizeof(hash), "%s:%s", k[0].key, k[0].field);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < RATE_MANY; i++) {
			struct rate_lease_req q = { .k = &k[0],
						    .want_rate = RATE_UNITS * RATE_SCALE,
						    .want_burst = RATE_BURST * RATE_SCALE,
						    .settled = (int)round };
			struct rate_lease_grant g;
			struct rate_sync r = { .holder = name,
					       .lease_ttl_us = RATE_COST_LONG_US,
					       .leases = &q,
					       .n_leases = 1,
					       .grants = &g };

			snprintf(name, sizeof(name), "m%zu", i);
			before = read_counts(f);
			assert_int_equal(store_rate_lease(&f->a, &r, f->err, sizeof(f->err)), 0);
			d = counts_since(f, &before);
			rebuilt = !round && i == 1;
			assert_int_equal(g.err, 0);
			assert_int_equal(g.fair_rate,
					 RATE_UNITS * RATE_SCALE / (round ? RATE_MANY : i + 1));
			assert_int_equal(d.commands - d.load - d.pexpire,
					 RATE_CALL_CMDS + RATE_KEY_CMDS + rebuilt);
			assert_int_equal(d.hmget, 1);
			assert_int_equal(d.hset, 1);
			assert_int_equal(d.hgetall, rebuilt);
			pexpire += d.pexpire;
		}
	}
	print_message("%d holders on a key, 2 rounds: %d commands a call, %llu PEXPIREs in all\n",
		      RATE_MANY, RATE_CALL_CMDS + RATE_KEY_CMDS, (unsigned long long)pexpire);
	assert_int_equal(command_u64(f, &found, "HLEN %s", hash), RATE_MANY + 1);
	v = command(f, "HGET %s %s", hash, "");
	assert_int_equal(v->type, REDIS_REPLY_STRING);
	assert_int_equal(count_words(v->str), RATE_SUMMARY_WORDS);
	freeReplyObject(v);
}

/*
 * A field that is not a rate lease: the script refuses the call before it
 * writes anything (-EPROTO, the field named), and out-of-range input (a
 * want, a level) is refused before anything is sent (-EINVAL).
 */
static void test_rate_refused(void **state)
{
	struct fix *f = *state;
	struct lease_key k[1];
	struct rate_lease_req q = { .k = &k[0], .want_rate = 1, .want_burst = 1 };
	__u64 *const too_big[] = { &q.want_rate, &q.level };
	struct rate_lease_grant g;
	struct rate_sync r = { .holder = "ra",
			       .lease_ttl_us = RATE_SHORT_US,
			       .leases = &q,
			       .n_leases = 1,
			       .grants = &g };
	struct counts before;
	redisReply *v;
	size_t i;

	rate_keys(k, 1);
	freeReplyObject(
		command(f, "HSET %s:%s %s %s", k[0].key, k[0].field, "", "99999999999999999 ra 1"));
	assert_int_equal(store_rate_lease(&f->a, &r, f->err, sizeof(f->err)), -EPROTO);
	assert_int_equal(g.err, -EPROTO);
	assert_non_null(strstr(f->err, "is not one"));
	v = command(f, "HGET %s:%s %s", k[0].key, k[0].field, "");
	assert_string_equal(v->str, "99999999999999999 ra 1");
	freeReplyObject(v);
	/* a bank that is not one: refused, kept as it was */
	freeReplyObject(command(f, "DEL %s:%s", k[0].key, k[0].field));
	freeReplyObject(command(f, "HSET %s:%s %s %s", k[0].key, k[0].field, RATE_BANK_FIELD,
				"1 2 3 x 5 0 0 0"));
	f->err[0] = '\0';
	assert_int_equal(store_rate_lease(&f->a, &r, f->err, sizeof(f->err)), -EPROTO);
	assert_int_equal(g.err, -EPROTO);
	assert_non_null(strstr(f->err, "is not one"));
	v = command(f, "HGET %s:%s %s", k[0].key, k[0].field, RATE_BANK_FIELD);
	assert_string_equal(v->str, "1 2 3 x 5 0 0 0");
	freeReplyObject(v);
	for (i = 0; i < ARRAY_SIZE(too_big); i++) {
		q.want_rate = 1;
		q.level = 0;
		*too_big[i] = (RATE_LEASE_UNITS_MAX << RATE_LEASE_SHIFT) + 1;
		f->err[0] = '\0';
		before = read_counts(f);
		assert_int_equal(store_rate_lease(&f->a, &r, f->err, sizeof(f->err)), -EINVAL);
		assert_int_equal(g.err, -EIO);
		assert_non_null(strstr(f->err, "out of range"));
		assert_int_equal(counts_since(f, &before).commands, 0);
	}
}

#define RATE_R_SCALED	  (RATE_UNITS * RATE_SCALE) /* the key's rate and burst, as shares */
#define RATE_B_SCALED	  (RATE_BURST * RATE_SCALE)
#define RATE_HALF_R	  (RATE_R_SCALED / 2) /* a holder's half */
#define RATE_HALF_B	  (RATE_B_SCALED / 2)
#define RATE_BANK_LEVEL_A (15 * RATE_SCALE) /* of its half, what the first hand-back saved */
#define RATE_BANK_LEVEL_B (30 * RATE_SCALE) /* the second's: above its half, which caps it */
#define RATE_BANK_SMALL	  (10 * RATE_SCALE) /* a raise: a burst below the bank's */
#define SUMMARY_EV	  2		    /* the summary's words (redis_scripts.h) */
#define SUMMARY_HELD_R	  4
#define SUMMARY_HELD_B	  5
#define SUMMARY_NF	  (RATE_SUMMARY_WORDS - 1)

/*
 * @holder's call of @r, its one lease @q wanting @burst and the rate in
 * proportion, settled, banking @level.
 */
static void rate_call(struct fix *f, struct rate_sync *r, struct rate_lease_req *q,
		      const char *holder, __u64 burst, __u64 level)
{
	r->holder = holder;
	q->want_burst = burst;
	q->want_rate = burst * RATE_UNITS / RATE_BURST;
	q->settled = 1;
	q->level = level;
	assert_int_equal(store_rate_lease(&f->a, r, f->err, sizeof(f->err)), 0);
	assert_int_equal(r->grants[0].err, 0);
}

/* Key @k's bank field is "rate burst exp level at 0 0 0". */
static void assert_bank_words(struct fix *f, const struct lease_key *k, __u64 rate, __u64 burst,
			      __u64 exp_us, __u64 level, __u64 at_us)
{
	const __u64 want[RATE_HOLDER_WORDS] = { rate, burst, exp_us, level, at_us, 0, 0, 0 };
	__u64 w[RATE_HOLDER_WORDS] = { 0 };
	size_t i;

	assert_true(rate_words(f, k, RATE_BANK_FIELD, w, RATE_HOLDER_WORDS));
	for (i = 0; i < RATE_HOLDER_WORDS; i++)
		assert_int_equal(w[i], want[i]);
}

/* Key @k's summary: its ev, held_r, held_b and nf. */
static void assert_summary(struct fix *f, const struct lease_key *k, __u64 ev, __u64 held_r,
			   __u64 held_b, __u64 nf)
{
	__u64 sw[RATE_SUMMARY_WORDS] = { 0 };

	assert_true(rate_words(f, k, "", sw, RATE_SUMMARY_WORDS));
	assert_int_equal(sw[SUMMARY_EV], ev);
	assert_int_equal(sw[SUMMARY_HELD_R], held_r);
	assert_int_equal(sw[SUMMARY_HELD_B], held_b);
	assert_int_equal(sw[SUMMARY_NF], nf);
}

static void assert_taken(const struct rate_lease_grant *g, __u64 level, __u64 rate, __u64 burst,
			 __u64 at_us)
{
	assert_int_equal(g->taken.level, level);
	assert_int_equal(g->taken.rate, rate);
	assert_int_equal(g->taken.burst, burst);
	assert_int_equal(g->taken.at_us, at_us);
}

/*
 * The bank in Redis. Two holders share the key; the first hands its half
 * back, settled, its kernel having saved RATE_BANK_LEVEL_A: the bank field
 * holds its rate and burst, that level and the call's time in a holder's
 * RATE_HOLDER_WORDS words, "rate burst exp level at 0 0 0", which a script
 * that knows no bank reads as a holder that holds the rate and burst
 * until exp and wants nothing; the summary counts it in held_r and held_b
 * and among the holder fields, and its ev is the call's time, for the
 * next call to rebuild it. The second hands back too, with a level above
 * its half: the bank adds its shares and its half of level, from its
 * call's time and for its lease. A call that neither raises nor banks
 * leaves every word, and the rebuilt summary's ev is the first lease's
 * end. A raise of a small burst takes the whole bank: the reply holds
 * it, the field is gone, and the summary counts the holders alone.
 */
static void test_rate_bank(void **state)
{
	const __u64 rate = RATE_R_SCALED, burst = RATE_B_SCALED;
	const __u64 small_r = RATE_BANK_SMALL * RATE_UNITS / RATE_BURST;
	struct fix *f = *state;
	struct lease_key k[1];
	struct rate_lease_req q = { .k = &k[0] };
	struct rate_lease_grant g = { 0 };
	struct rate_sync r = {
		.lease_ttl_us = RATE_COST_LONG_US, .leases = &q, .n_leases = 1, .grants = &g
	};
	__u64 at_a, exp_a, at_b, exp_b;

	rate_keys(k, 1);
	rate_call(f, &r, &q, "ba", RATE_HALF_B, 0);
	assert_int_equal(g.burst, RATE_HALF_B);
	rate_call(f, &r, &q, "bb", RATE_HALF_B, 0);
	assert_int_equal(g.burst, RATE_HALF_B);
	assert_int_equal(g.rate, RATE_HALF_R);
	assert_false(rate_words(f, k, RATE_BANK_FIELD, NULL, 0));

	rate_call(f, &r, &q, "ba", 0, RATE_BANK_LEVEL_A);
	at_a = g.now_us;
	exp_a = g.expires_us;
	assert_int_equal(g.burst, 0);
	assert_taken(&g, 0, 0, 0, 0);
	assert_bank_words(f, k, RATE_HALF_R, RATE_HALF_B, exp_a, RATE_BANK_LEVEL_A, at_a);
	assert_summary(f, k, at_a, rate, burst, 3);

	rate_call(f, &r, &q, "bb", 0, RATE_BANK_LEVEL_B);
	at_b = g.now_us;
	exp_b = g.expires_us;
	assert_taken(&g, 0, 0, 0, 0);
	assert_bank_words(f, k, rate, burst, exp_b, RATE_BANK_LEVEL_A + RATE_HALF_B, at_b);
	assert_summary(f, k, at_b, rate, burst, 3);

	rate_call(f, &r, &q, "bc", 0, 0);
	assert_taken(&g, 0, 0, 0, 0);
	assert_bank_words(f, k, rate, burst, exp_b, RATE_BANK_LEVEL_A + RATE_HALF_B, at_b);
	assert_summary(f, k, exp_a, rate, burst, 4);

	rate_call(f, &r, &q, "bc", RATE_BANK_SMALL, 0);
	assert_int_equal(g.burst, RATE_BANK_SMALL);
	assert_taken(&g, RATE_BANK_LEVEL_A + RATE_HALF_B, rate, burst, at_b);
	assert_false(rate_words(f, k, RATE_BANK_FIELD, NULL, 0));
	assert_summary(f, k, g.now_us, small_r, RATE_BANK_SMALL, 3);
}

/*
 * A rate lease script that answers a key one unit of burst, with a bank
 * taken of the level, rate and burst given, saved at its time plus the
 * µs given.
 */
#define RATE_LIE_UNIT SLUICE_STR(RATE_LEASE_UNIT) /* in the script's text */
#define RATE_LIE_FMT                                                                               \
	"local t = redis.call('TIME')\n"                                                           \
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                                  \
	"local unit = " RATE_LIE_UNIT "\n"                                                         \
	"return { 0, unit, 0, unit, now + tonumber(ARGV[2]), now,\n"                               \
	"         %llu, %llu, %llu, now + %llu }\n"
#define RATE_LIE_LEN (sizeof(RATE_LIE_FMT) + 4 * NAME_LEN) /* the script, its numbers */

struct bank_lie_row {
	const char *name;
	__u64 level, rate, burst, later_us;
	const char *why; /* the refusal named; NULL: the reply stands */
};

static const struct bank_lie_row bank_lie_rows[] = {
	{ "the whole key, at the reply's time", RATE_B_SCALED, RATE_R_SCALED, RATE_B_SCALED, 0,
	  NULL },
	{ "a level above its burst", RATE_LEASE_UNIT + 1, 0, RATE_LEASE_UNIT, 0,
	  "a bank's level above its burst" },
	{ "a rate above the key's", 0, RATE_R_SCALED + 1, RATE_LEASE_UNIT, 0,
	  "a bank's rate above the key's" },
	{ "a burst above the key's", 0, 0, RATE_B_SCALED + 1, 0, "a bank's burst above the key's" },
	{ "saved after the reply", 0, 0, RATE_LEASE_UNIT, 1,
	  "a bank saved after the reply's time" },
};

/*
 * A store that answers a bank taken that the key cannot have held (a
 * script of RATE_LIE_FMT run for RATE_LUA): the reply is refused
 * (-EPROTO, the cause named); the whole key's, at the reply's time, is not.
 */
static void test_rate_bank_lie(void **state)
{
	struct fix *f = *state;
	const struct bank_lie_row *row = f->row;
	struct lease_key k[1];
	struct rate_lease_req q = { .k = &k[0], .want_burst = RATE_LEASE_UNIT };
	struct rate_lease_grant g;
	struct rate_sync r = { .holder = "ra",
			       .lease_ttl_us = RATE_SHORT_US,
			       .leases = &q,
			       .n_leases = 1,
			       .grants = &g };
	char lua[RATE_LIE_LEN];
	redisReply *v;

	rate_keys(k, 1);
	snprintf(lua, sizeof(lua), RATE_LIE_FMT, (unsigned long long)row->level,
		 (unsigned long long)row->rate, (unsigned long long)row->burst,
		 (unsigned long long)row->later_us);
	v = command(f, "SCRIPT LOAD %s", lua);
	assert_int_equal(v->type, REDIS_REPLY_STRING);
	snprintf(f->a.sc.sha[STORE_SCRIPT_RATE], sizeof(f->a.sc.sha[0]), "%s", v->str);
	freeReplyObject(v);
	f->err[0] = '\0';
	assert_int_equal(store_rate_lease(&f->a, &r, f->err, sizeof(f->err)),
			 row->why ? -EPROTO : 0);
	assert_int_equal(g.err, row->why ? -EPROTO : 0);
	if (row->why) {
		assert_non_null(strstr(f->err, row->why));
		assert_taken(&g, 0, 0, 0, 0);
	} else {
		assert_taken(&g, row->level, row->rate, row->burst, g.now_us);
	}
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_single_node),    cmocka_unit_test(test_invalid_wrappers),
		cmocka_unit_test(test_expiry),	       cmocka_unit_test(test_pipeline),
		cmocka_unit_test(test_batches),	       cmocka_unit_test(test_bucket_ttl),
		cmocka_unit_test(test_membership),     cmocka_unit_test(test_hot_sets),
		cmocka_unit_test(test_budget_sync),    cmocka_unit_test(test_script_error),
		cmocka_unit_test(test_key_twice),      cmocka_unit_test(test_reap),
		cmocka_unit_test(test_fleet),	       cmocka_unit_test(test_mem_parity),
		cmocka_unit_test(test_rate_parity),    cmocka_unit_test(test_rate_cost),
		cmocka_unit_test(test_rate_refused),   cmocka_unit_test(test_rate_parity_many),
		cmocka_unit_test(test_rate_cost_many), cmocka_unit_test(test_rate_cost_alone),
		cmocka_unit_test(test_layout),	       cmocka_unit_test(test_rate_parity_sub_unit),
		cmocka_unit_test(test_layout_pruned),  cmocka_unit_test(test_news),
		cmocka_unit_test(test_rate_bank),
	};
	enum {
		N_TESTS = ARRAY_SIZE(first_rows) + ARRAY_SIZE(invalid_rows) +
			  ARRAY_SIZE(bad_bucket_rows) + ARRAY_SIZE(bank_lie_rows) +
			  ARRAY_SIZE(fixed)
	};
	struct CMUnitTest tests[N_TESTS];
	char names[N_TESTS][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);
	size_t i;

	SUITE_ADD_ROWS(&s, test_first_grant, first_rows);
	SUITE_ADD_ROWS(&s, test_invalid, invalid_rows);
	SUITE_ADD_ROWS(&s, test_bad_bucket, bad_bucket_rows);
	SUITE_ADD_ROWS(&s, test_rate_bank_lie, bank_lie_rows);
	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		tests[s.n++] = fixed[i];
	for (i = 0; i < s.n; i++) {
		tests[i].setup_func = setup;
		tests[i].teardown_func = teardown;
	}
	return _cmocka_run_group_tests("store_lease", tests, s.n, NULL, NULL);
}
