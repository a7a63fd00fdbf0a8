// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The shared budget's Redis side (user/store_lease.c) against a real
 * redis-server, named by $SLUICE_TEST_REDIS (unix:///path); run by
 * tests/e2e/test_lease.sh, which starts one. Time is Redis' own clock: the
 * exact cases use a rate so slow (1 unit per hour) that refill never adds a
 * whole unit during the test; the fleet case runs ~3 s of real time and
 * checks the bound from the Redis timestamps each grant returns.
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
#include "store.h"

#define URL_UNIX     "unix://"
#define US_PER_SEC   1000000ULL
#define US_PER_MS    1000ULL
#define HOUR_US	     (3600 * US_PER_SEC)
#define SLOW_BURST   100
#define SLOW_CAP     30
#define LONG_TTL_US  (60 * US_PER_SEC)
#define SHORT_TTL_US (200 * US_PER_MS)
#define MAX_NODES    4
#define NODE_LEN     16

struct fix {
	redisContext *c;
	struct lease_scripts sc;
	char err[STORE_ERR_LEN];
};

static int setup(void **state)
{
	const char *url = getenv("SLUICE_TEST_REDIS");
	struct fix *f = calloc(1, sizeof(*f));
	redisReply *r;

	if (!f || !url || strncmp(url, URL_UNIX, strlen(URL_UNIX)))
		return -1;
	f->c = redisConnectUnix(url + strlen(URL_UNIX));
	if (!f->c || f->c->err)
		return -1;
	r = redisCommand(f->c, "FLUSHALL");
	if (!r)
		return -1;
	freeReplyObject(r);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	redisFree(f->c);
	free(f);
	return 0;
}

static struct lease_key slow_key(const char *name)
{
	struct lease_key k = {
		.rate_units = 1, .rate_period_us = HOUR_US, .burst = SLOW_BURST, .cap = SLOW_CAP
	};

	snprintf(k.key, sizeof(k.key), "%s", name);
	return k;
}

/* One request for one key by @node; asserts the round trip and the key succeeded. */
static struct lease_grant sync1(struct fix *f, const struct lease_key *k, const char *node,
				__u64 ttl_us, __u64 used, __u64 want)
{
	struct lease_req q = { .k = k, .used = used, .want = want };
	struct lease_grant g;

	assert_int_equal(
		store_lease_sync(f->c, &f->sc, node, ttl_us, &q, 1, &g, f->err, sizeof(f->err)), 0);
	assert_int_equal(g.err, 0);
	return g;
}

static __u64 hget(struct fix *f, const char *key, const char *field, int *found)
{
	redisReply *r = redisCommand(f->c, "HGET %s %s", key, field);
	__u64 v = 0;

	assert_non_null(r);
	*found = r->type == REDIS_REPLY_STRING;
	if (*found)
		v = strtoull(r->str, NULL, 10);
	freeReplyObject(r);
	return v;
}

/* Whole tokens in the bucket (tok is scaled by the period). */
static __u64 tokens(struct fix *f, const struct lease_key *k)
{
	int found;
	__u64 tok = hget(f, k->key, "tok", &found);

	assert_true(found);
	return tok / k->rate_period_us;
}

/* Read the hash back: tok + Σ lease × P <= burst × P; returns Σ lease. */
static __u64 check_invariant(struct fix *f, const struct lease_key *k)
{
	redisReply *r = redisCommand(f->c, "HGETALL %s", k->key);
	__u64 tok = 0, out = 0;
	size_t i;

	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	for (i = 0; i + 1 < r->elements; i += 2) {
		if (!strcmp(r->element[i]->str, "tok"))
			tok = strtoull(r->element[i + 1]->str, NULL, 10);
		else if (!strncmp(r->element[i]->str, "lease:", strlen("lease:")))
			out += strtoull(r->element[i + 1]->str, NULL, 10);
	}
	freeReplyObject(r);
	if (tok + out * k->rate_period_us > k->burst * k->rate_period_us)
		fail_msg("'%s': tok %llu + outstanding %llu x %llu > burst %llu x period", k->key,
			 (unsigned long long)tok, (unsigned long long)out,
			 (unsigned long long)k->rate_period_us, (unsigned long long)k->burst);
	return out;
}

static void sleep_us(__u64 us)
{
	struct timespec ts = { .tv_sec = us / US_PER_SEC, .tv_nsec = us % US_PER_SEC * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* One node: exact grants, returns and clamps, the invariant after each call. */
static void test_single_node(void **state)
{
	struct fix *f = *state;
	struct lease_key k = slow_key("single");
	struct lease_grant g;

	g = sync1(f, &k, "a", LONG_TTL_US, 0, 10); /* first: min(want, cap, burst) = want */
	assert_int_equal(g.granted, 10);
	assert_int_equal(g.expires_us - g.now_us, LONG_TTL_US);
	assert_int_equal(tokens(f, &k), 90);
	assert_int_equal(check_invariant(f, &k), 10);

	g = sync1(f, &k, "a", LONG_TTL_US, 4, 1000); /* 6 back; the cap limits the grant */
	assert_int_equal(g.granted, SLOW_CAP);
	assert_int_equal(tokens(f, &k), 96 - SLOW_CAP);
	assert_int_equal(check_invariant(f, &k), SLOW_CAP);

	g = sync1(f, &k, "a", LONG_TTL_US, 1000, 0); /* used > granted: clamped, 0 back */
	assert_int_equal(g.granted, 0);
	assert_int_equal(tokens(f, &k), 96 - SLOW_CAP);
	assert_int_equal(check_invariant(f, &k), 0);

	g = sync1(f, &k, "b", LONG_TTL_US, 50, 20); /* no lease yet: its "used" returns nothing */
	assert_int_equal(g.granted, 20);
	assert_int_equal(tokens(f, &k), 96 - SLOW_CAP - 20);
	assert_int_equal(check_invariant(f, &k), 20);
}

/* The first grant of a fresh key for each (want, cap, burst) ordering. */
static void test_first_grant(void **state)
{
	static const struct {
		const char *name;
		__u64 want, cap, burst, granted;
	} rows[] = {
		{ "want_smallest", 5, 10, 20, 5 },
		{ "cap_smallest", 50, 10, 20, 10 },
		{ "cap_is_burst", 50, 20, 20, 20 },
		{ "want_zero", 0, 10, 20, 0 },
	};
	struct fix *f = *state;
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct lease_key k = slow_key(rows[i].name);
		struct lease_grant g;

		k.cap = rows[i].cap;
		k.burst = rows[i].burst;
		g = sync1(f, &k, "a", LONG_TTL_US, 0, rows[i].want);
		if (g.granted != rows[i].granted)
			fail_msg("%s: granted %llu, expected %llu", rows[i].name,
				 (unsigned long long)g.granted,
				 (unsigned long long)rows[i].granted);
		assert_int_equal(tokens(f, &k), rows[i].burst - rows[i].granted);
		check_invariant(f, &k);
	}
}

/* Out-of-range input is refused before anything is sent. */
static void test_invalid(void **state)
{
	struct fix *f = *state;
	struct lease_key k = slow_key("invalid");
	struct lease_req q = { .k = &k, .want = 1 };
	struct lease_grant g;
	redisReply *r;

	k.cap = k.burst + 1;
	assert_int_equal(
		store_lease_sync(f->c, &f->sc, "a", LONG_TTL_US, &q, 1, &g, f->err, sizeof(f->err)),
		-EINVAL);
	k = slow_key("invalid");
	k.burst = LEASE_SCALED_MAX / k.rate_period_us + 1;
	k.cap = 1;
	assert_int_equal(
		store_lease_sync(f->c, &f->sc, "a", LONG_TTL_US, &q, 1, &g, f->err, sizeof(f->err)),
		-EINVAL);
	assert_string_equal(f->err, "lease key 'invalid' is out of range");
	r = redisCommand(f->c, "EXISTS invalid");
	assert_int_equal(r->integer, 0);
	freeReplyObject(r);
}

/* A lease not renewed is written off at expiry: the bucket does not get it back. */
static void test_expiry(void **state)
{
	struct fix *f = *state;
	struct lease_key k = slow_key("expiry");
	struct lease_grant ga, gb;
	int found;

	ga = sync1(f, &k, "a", SHORT_TTL_US, 0, SLOW_CAP);
	gb = sync1(f, &k, "b", LONG_TTL_US, 0, SLOW_CAP);
	assert_int_equal(ga.granted + gb.granted, 2 * SLOW_CAP);
	assert_int_equal(check_invariant(f, &k), 2 * SLOW_CAP);
	sleep_us(SHORT_TTL_US + 50 * US_PER_MS);
	gb = sync1(f, &k, "b", LONG_TTL_US, 0, 0); /* b returns all 30; a's 30 is written off */
	assert_true(gb.now_us >= ga.expires_us);
	assert_int_equal(tokens(f, &k), SLOW_BURST - SLOW_CAP);
	assert_int_equal(check_invariant(f, &k), 0);
	hget(f, k.key, "lease:a", &found);
	assert_false(found);
	/* a comes back and reports its old lease as unused: nothing to return. */
	ga = sync1(f, &k, "a", SHORT_TTL_US, 0, 0);
	assert_int_equal(tokens(f, &k), SLOW_BURST - SLOW_CAP);
}

/* n keys in one call: n EVALSHA, replies in order; NOSCRIPT falls back to EVAL. */
static __u64 cmd_calls(struct fix *f, const char *cmd)
{
	redisReply *r = redisCommand(f->c, "INFO commandstats");
	char pat[64];
	const char *p;
	__u64 v = 0;

	assert_non_null(r);
	snprintf(pat, sizeof(pat), "cmdstat_%s:calls=", cmd);
	p = strstr(r->str, pat);
	if (p)
		v = strtoull(p + strlen(pat), NULL, 10);
	freeReplyObject(r);
	return v;
}

#define PIPE_N 8
static void test_pipeline(void **state)
{
	struct fix *f = *state;
	struct lease_key k[PIPE_N];
	struct lease_req q[PIPE_N];
	struct lease_grant g[PIPE_N];
	__u64 sha0, eval0;
	size_t i;
	int pass;

	for (i = 0; i < PIPE_N; i++) {
		char name[32];

		snprintf(name, sizeof(name), "pipe%zu", i);
		k[i] = slow_key(name);
		q[i] = (struct lease_req){ .k = &k[i], .want = i + 1 };
	}
	sync1(f, &k[0], "warm", LONG_TTL_US, 0, 0); /* loads the script */
	for (pass = 0; pass < 2; pass++) {
		redisReply *r;

		if (pass) {
			r = redisCommand(f->c, "SCRIPT FLUSH");
			freeReplyObject(r);
		}
		sha0 = cmd_calls(f, "evalsha");
		eval0 = cmd_calls(f, "eval");
		assert_int_equal(store_lease_sync(f->c, &f->sc, pass ? "n2" : "n1", LONG_TTL_US, q,
						  PIPE_N, g, f->err, sizeof(f->err)),
				 0);
		assert_int_equal(cmd_calls(f, "evalsha") - sha0, PIPE_N);
		assert_int_equal(cmd_calls(f, "eval") - eval0, pass ? PIPE_N : 0);
		for (i = 0; i < PIPE_N; i++) {
			assert_int_equal(g[i].err, 0);
			assert_int_equal(g[i].granted, i + 1);
		}
	}
}

/* Membership: three beat, one stops, the count drops to two after the ttl. */
static void test_membership(void **state)
{
	static const char *const nodes[] = { "a", "b", "c" };
	struct fix *f = *state;
	struct timespec t0, t;
	__u64 live = 0, waited_us;
	size_t i;

	for (i = 0; i < 3; i++)
		assert_int_equal(store_member_beat(f->c, &f->sc, "fleet", nodes[i], SHORT_TTL_US,
						   &live, f->err, sizeof(f->err)),
				 0);
	assert_int_equal(live, 3);
	assert_int_equal(store_member_beat(f->c, &f->sc, "fleet", "a", SHORT_TTL_US, &live, f->err,
					   sizeof(f->err)),
			 0);
	assert_int_equal(live, 3); /* a re-registering counts once */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do { /* a and b keep beating, c has stopped: poll with a deadline */
		sleep_us(20 * US_PER_MS);
		for (i = 0; i < 2; i++)
			assert_int_equal(store_member_beat(f->c, &f->sc, "fleet", nodes[i],
							   SHORT_TTL_US, &live, f->err,
							   sizeof(f->err)),
					 0);
		clock_gettime(CLOCK_MONOTONIC, &t);
		waited_us = (t.tv_sec - t0.tv_sec) * US_PER_SEC + (t.tv_nsec - t0.tv_nsec) / 1000;
		assert_true(waited_us < 10 * SHORT_TTL_US);
	} while (live != 2);
	assert_true(waited_us + 20 * US_PER_MS >= SHORT_TTL_US); /* not before c's ttl */
	assert_int_equal(
		store_member_beat(f->c, &f->sc, "fleet", "c", 0, &live, f->err, sizeof(f->err)),
		-EINVAL);
}

/*
 * The fleet: 2 and 4 nodes, four demand shapes, one sync every 50 ms for
 * ~3 s of Redis time. After every call the invariant holds; over every run
 * of consecutive calls i..j the net grant (granted − returned) satisfies
 * net × P <= burst × P + units × (t_j − t_{i−1}) exactly, and no grant
 * exceeds the cap.
 */
enum shape { SHAPE_UNIFORM, SHAPE_80_20, SHAPE_GREEDY, SHAPE_OVERREPORT, SHAPE_MAX };

#define FLEET_UNITS  100 /* per second */
#define FLEET_BURST  50
#define FLEET_CAP    20
#define FLEET_TICKS  60
#define FLEET_TICK   (50 * US_PER_MS)
#define FLEET_TTL_US (3 * FLEET_TICK)
#define FLEET_KEYS   (2 * SHAPE_MAX)
#define LOG_MAX	     (FLEET_TICKS * MAX_NODES)

struct log_row {
	__u64 t_us;
	__u64 net; /* units granted by this call */
	__u64 ret; /* units this call gave back from the node's previous lease */
};

struct fleet_key {
	struct lease_key k;
	int k_nodes;
	enum shape shape;
	__u64 lease[MAX_NODES], exp_us[MAX_NODES];
	struct log_row log[LOG_MAX];
	size_t n_log;
	__u64 granted_total;
	__u64 returned_total;
};

static __u64 shape_want(enum shape s, int node, int k_nodes)
{
	switch (s) {
	case SHAPE_80_20: return node ? 8 / (k_nodes - 1) : 32;
	case SHAPE_GREEDY: return node ? 5 : LEASE_SCALED_MAX;
	default: return 10;
	}
}

static void check_window_bound(const struct fleet_key *fk)
{
	const __u64 per = fk->k.rate_period_us;
	size_t i, j;

	for (i = 0; i < fk->n_log; i++) {
		__u64 t_prev = i ? fk->log[i - 1].t_us : fk->log[0].t_us;
		long long net = 0;

		for (j = i; j < fk->n_log; j++) {
			net += (long long)fk->log[j].net - (long long)fk->log[j].ret;
			if (net > 0 &&
			    (__u64)net * per >
				    fk->k.burst * per +
					    fk->k.rate_units * (fk->log[j].t_us - t_prev))
				fail_msg("'%s': net grant %lld in calls %zu..%zu over %llu us",
					 fk->k.key, net, i, j,
					 (unsigned long long)(fk->log[j].t_us - t_prev));
		}
	}
}

static void fleet_call(struct fix *f, struct fleet_key *fk, int node)
{
	char name[NODE_LEN];
	__u64 used = fk->lease[node];
	struct lease_grant g;
	struct log_row *row = &fk->log[fk->n_log++];

	snprintf(name, sizeof(name), "n%d", node);
	if (fk->shape == SHAPE_UNIFORM)
		used /= 2; /* spends half: the other half comes back */
	if (fk->shape == SHAPE_OVERREPORT && node == 0)
		used += 1000; /* clamped: returns nothing, as if all spent */
	g = sync1(f, &fk->k, name, FLEET_TTL_US, used, shape_want(fk->shape, node, fk->k_nodes));
	assert_true(g.granted <= FLEET_CAP);
	row->t_us = g.now_us;
	row->net = g.granted;
	/* What the script gives back: only from a live lease, never below zero. */
	row->ret =
		fk->exp_us[node] > g.now_us && used < fk->lease[node] ? fk->lease[node] - used : 0;
	fk->lease[node] = g.granted;
	fk->exp_us[node] = g.expires_us;
	fk->granted_total += g.granted;
	fk->returned_total += row->ret;
	check_invariant(f, &fk->k);
}

static void test_fleet(void **state)
{
	struct fix *f = *state;
	struct fleet_key *fk = calloc(FLEET_KEYS, sizeof(*fk));
	int i, tick, node;
	__u64 span_us;

	assert_non_null(fk);
	for (i = 0; i < FLEET_KEYS; i++) {
		fk[i].shape = i % SHAPE_MAX;
		fk[i].k_nodes = i < SHAPE_MAX ? 2 : 4;
		fk[i].k = (struct lease_key){ .rate_units = FLEET_UNITS,
					      .rate_period_us = US_PER_SEC,
					      .burst = FLEET_BURST,
					      .cap = FLEET_CAP };
		snprintf(fk[i].k.key, sizeof(fk[i].k.key), "fleet%d:shape%d", fk[i].k_nodes,
			 fk[i].shape);
	}
	for (tick = 0; tick < FLEET_TICKS; tick++) {
		for (i = 0; i < FLEET_KEYS; i++)
			for (node = 0; node < fk[i].k_nodes; node++)
				fleet_call(f, &fk[i], node);
		sleep_us(FLEET_TICK);
	}
	for (i = 0; i < FLEET_KEYS; i++) {
		check_window_bound(&fk[i]);
		span_us = fk[i].log[fk[i].n_log - 1].t_us - fk[i].log[0].t_us;
		print_message(
			"%s: %zu calls, granted %llu, returned %llu, over %llu us; "
			"bound on granted - returned: %llu\n",
			fk[i].k.key, fk[i].n_log, (unsigned long long)fk[i].granted_total,
			(unsigned long long)fk[i].returned_total, (unsigned long long)span_us,
			(unsigned long long)(FLEET_BURST + FLEET_UNITS * span_us / US_PER_SEC));
	}
	free(fk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_single_node, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first_grant, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_membership, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fleet, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
