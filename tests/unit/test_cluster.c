// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Redis Cluster for the shared budget (#17, budget/cluster.h): the key's
 * slot against the values the Redis Cluster specification and the Redis
 * documentation give, the slot map parsed from CLUSTER SLOTS replies (good
 * and wrong), MOVED and ASK errors parsed, hostile CLUSTER SLOTS replies
 * refused within their budget by the real bounded reader (wire.c), and the
 * routing of store_budget_sync(): MOVED and ASK followed once, and a
 * primary that is down failing only its own keys. Fake nodes are threads
 * on socketpairs that answer each command they read; no Redis, no root.
 */
#include <errno.h>
#include <hiredis.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/clock.h"
#include "base/log.h"
#include "budget/cluster.h"
#include "budget/redis.h"
#include "budget/wire.h"
#include "capture.h"
#include "rows.h"

#define ERR_LEN	   640
#define TIMEOUT_NS (200 * SLUICE_NSEC_PER_MSEC) /* a fake node answers at once */
#define LOG_LEN	   256

/* ---- the slot of a key ---------------------------------------------------------------- */

struct slot_row {
	const char *name;
	const char *key;
	__u16 slot;
};

/* From the spec (CRC16 check value 0x31C3) and the CLUSTER KEYSLOT documentation. */
static const struct slot_row slot_rows[] = {
	{ "the CRC16 check string", "123456789", 12739 },
	{ "somekey", "somekey", 11058 },
	{ "a hash tag", "foo{hash_tag}", 2515 },
	{ "the same tag, another key", "bar{hash_tag}", 2515 },
	{ "the empty key", "", 0 },
};

static void test_slot(void **state)
{
	const struct slot_row *row = *state;

	assert_int_equal(cluster_key_slot(row->key, strlen(row->key)), row->slot);
}

struct pair_row {
	const char *name;
	const char *a, *b;
	int is_same; /* slot(a) == slot(b) */
};

static const struct pair_row pair_rows[] = {
	{ "the spec's tag", "{user1000}.following", "{user1000}.followers", 1 },
	{ "the first tag only", "foo{bar}{zap}", "bar", 1 },
	{ "an empty tag: the whole key", "foo{}{bar}", "{}{bar}", 0 },
	{ "from the first open brace", "foo{{bar}}zap", "{bar", 1 },
	{ "a brace never closed: the whole key", "foo{bar", "bar", 0 },
	{ "a bucket and its tag", "sluice:b:{shared:07}:0a000001", "shared:07", 1 },
	{ "two buckets of one group", "sluice:b:{shared:07}:0a000001",
	  "sluice:b:{shared:07}:0a000002", 1 },
	{ "two groups of one policy", "sluice:b:{shared:07}:0a000001",
	  "sluice:b:{shared:08}:0a000001", 0 },
	{ "a rate lease key and its group", "sluice:r2:{shared:07}:a1", "sluice:r2:{shared:07}",
	  1 },
	{ "the fleet set and its layout speakers (LEASE_LAYOUT_FMT)", "sluice:nodes",
	  "sluice:nodes:l2:{sluice:nodes}", 1 },
};

static void test_pair(void **state)
{
	const struct pair_row *row = *state;

	assert_int_equal(cluster_key_slot(row->a, strlen(row->a)) ==
				 cluster_key_slot(row->b, strlen(row->b)),
			 row->is_same);
}

/* ---- CLUSTER SLOTS parsed --------------------------------------------------------------- */

/* @resp parsed by hiredis' own reader; the caller frees it. */
static redisReply *reply_of(const char *resp)
{
	redisReader *rd = redisReaderCreate();
	void *r = NULL;

	assert_non_null(rd);
	assert_int_equal(redisReaderFeed(rd, resp, strlen(resp)), REDIS_OK);
	assert_int_equal(redisReaderGetReply(rd, &r), REDIS_OK);
	assert_non_null(r);
	redisReaderFree(rd);
	return r;
}

#define NODE7(host, port) "*4\r\n$" host "\r\n:" port "\r\n$2\r\nid\r\n*0\r\n"
#define RANGE(lo, hi)	  "*4\r\n:" lo "\r\n:" hi "\r\n"
#define THREE_SHARDS                                                                               \
	"*3\r\n" RANGE("0", "5460") NODE7("9\r\n127.0.0.1", "7000")                                \
		NODE7("9\r\n127.0.0.1", "7003") RANGE("5461", "10922")                             \
			NODE7("9\r\n127.0.0.1", "7001") NODE7("9\r\n127.0.0.1", "7004")            \
				RANGE("10923", "16383") NODE7("9\r\n127.0.0.1", "7002")            \
					NODE7("9\r\n127.0.0.1", "7005")

struct map_row {
	const char *name;
	const char *resp;
	int ret;
	size_t n;	       /* primaries */
	__u16 slot;	       /* one slot checked */
	const char *slot_addr; /* its primary; NULL: none */
	const char *err_has;   /* the error names this */
};

static const struct map_row map_rows[] = {
	{ "three shards of Redis 7", THREE_SHARDS, 0, 3, 5461, "127.0.0.1:7001", NULL },
	{ "the last slot", THREE_SHARDS, 0, 3, 16383, "127.0.0.1:7002", NULL },
	{ "an empty host is the one asked", "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$0\r\n\r\n:7000\r\n",
	  0, 1, 0, "10.1.2.3:7000", NULL },
	{ "an IPv6 host", "*1\r\n*3\r\n:0\r\n:99\r\n*2\r\n$3\r\n::1\r\n:7000\r\n", 0, 1, 99,
	  "[::1]:7000", NULL },
	{ "a slot left out", "*1\r\n*3\r\n:0\r\n:99\r\n*2\r\n$3\r\n::1\r\n:7000\r\n", 0, 1, 100,
	  NULL, NULL },
	{ "cluster support disabled", "-ERR This instance has cluster support disabled\r\n",
	  -EPROTO, 0, 0, NULL, "cluster support disabled" },
	{ "no range", "*0\r\n", -EPROTO, 0, 0, NULL, "no slot is served" },
	{ "a slot beyond 16383", "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\na\r\n:1\r\n", -EPROTO, 0,
	  0, NULL, "out of bounds" },
	{ "a range backwards", "*1\r\n*3\r\n:9\r\n:8\r\n*2\r\n$1\r\na\r\n:1\r\n", -EPROTO, 0, 0,
	  NULL, "out of bounds" },
	{ "a slot served twice",
	  "*2\r\n*3\r\n:0\r\n:9\r\n*2\r\n$1\r\na\r\n:1\r\n*3\r\n:9\r\n:10\r\n*2\r\n$1\r\nb\r\n:"
	  "1\r\n",
	  -EPROTO, 0, 0, NULL, "served twice" },
	{ "port 0", "*1\r\n*3\r\n:0\r\n:9\r\n*2\r\n$1\r\na\r\n:0\r\n", -EPROTO, 0, 0, NULL,
	  "not [host, port]" },
	{ "port 65536", "*1\r\n*3\r\n:0\r\n:9\r\n*2\r\n$1\r\na\r\n:65536\r\n", -EPROTO, 0, 0, NULL,
	  "not [host, port]" },
	{ "a range without a primary", "*1\r\n*2\r\n:0\r\n:9\r\n", -EPROTO, 0, 0, NULL,
	  "out of bounds" },
	{ "a primary as a string", "*1\r\n*3\r\n:0\r\n:9\r\n$1\r\na\r\n", -EPROTO, 0, 0, NULL,
	  "not [host, port]" },
};

static void test_map(void **state)
{
	const struct map_row *row = *state;
	struct cluster_map *m = calloc(1, sizeof(*m));
	redisReply *r = reply_of(row->resp);
	char err[ERR_LEN] = "";
	__u8 i;

	assert_non_null(m);
	assert_int_equal(cluster_map_parse(r, "10.1.2.3", m, err, sizeof(err)), row->ret);
	assert_int_equal(m->n, row->n);
	if (row->err_has)
		assert_non_null(strstr(err, row->err_has));
	if (!row->ret) {
		i = m->slot_node[row->slot];
		if (row->slot_addr)
			assert_string_equal(m->addr[i], row->slot_addr);
		else
			assert_int_equal(i, CLUSTER_NODE_NONE);
	}
	freeReplyObject(r);
	free(m);
}

/*
 * The map's replicas are known: a MOVED to one (its promotion) finds it,
 * added as a primary; an address the map does not name is not found.
 */
static void test_map_replicas(void **state)
{
	struct cluster *cl = calloc(1, sizeof(*cl));
	redisReply *r = reply_of(THREE_SHARDS);
	char err[ERR_LEN] = "";

	(void)state;
	assert_non_null(cl);
	assert_int_equal(cluster_map_parse(r, "10.1.2.3", &cl->map, err, sizeof(err)), 0);
	assert_int_equal(cl->map.n_replicas, 3);
	assert_string_equal(cl->map.replica[1], "127.0.0.1:7004");
	assert_int_equal(cluster__node_of(cl, "127.0.0.1:7001"), 1);
	assert_int_equal(cluster__node_of(cl, "127.0.0.1:7009"), CLUSTER_NODE_NONE);
	assert_int_equal(cl->map.n, 3);
	assert_int_equal(cluster__node_of(cl, "127.0.0.1:7004"), 3);
	assert_int_equal(cl->map.n, 4);
	freeReplyObject(r);
	free(cl);
}

/* More primaries than CLUSTER_NODES_MAX: one range per slot, each on its own port. */
static void test_map_too_many_primaries(void **state)
{
	char *resp = calloc(CLUSTER_NODES_MAX + 1, LOG_LEN), *p = resp;
	struct cluster_map *m = calloc(1, sizeof(*m));
	char err[ERR_LEN] = "";
	redisReply *r;
	int i;

	(void)state;
	assert_non_null(resp);
	assert_non_null(m);
	p += sprintf(p, "*%d\r\n", CLUSTER_NODES_MAX + 1);
	for (i = 0; i <= CLUSTER_NODES_MAX; i++)
		p += sprintf(p, "*3\r\n:%d\r\n:%d\r\n*2\r\n$1\r\na\r\n:%d\r\n", i, i, 7000 + i);
	r = reply_of(resp);
	assert_int_equal(cluster_map_parse(r, "a", m, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "more primaries than 16"));
	freeReplyObject(r);
	free(m);
	free(resp);
}

/* ---- MOVED and ASK parsed ----------------------------------------------------------------- */

struct redirect_row {
	const char *name;
	const char *resp;
	int is_redirect, ask;
	__u16 slot;
	const char *addr;
};

static const struct redirect_row redirect_rows[] = {
	{ "MOVED", "-MOVED 3999 127.0.0.1:6381\r\n", 1, 0, 3999, "127.0.0.1:6381" },
	{ "ASK", "-ASK 3999 127.0.0.1:6381\r\n", 1, 1, 3999, "127.0.0.1:6381" },
	{ "MOVED to IPv6", "-MOVED 0 [::1]:7000\r\n", 1, 0, 0, "[::1]:7000" },
	{ "a slot beyond 16383", "-MOVED 16384 127.0.0.1:6381\r\n", 0, 0, 0, NULL },
	{ "no slot", "-MOVED abc 127.0.0.1:6381\r\n", 0, 0, 0, NULL },
	{ "no address", "-MOVED 3999\r\n", 0, 0, 0, NULL },
	{ "no port", "-MOVED 3999 somewhere\r\n", 0, 0, 0, NULL },
	{ "trailing words", "-ASK 3999 127.0.0.1:6381 more\r\n", 0, 0, 0, NULL },
	{ "another error", "-ERR unknown command\r\n", 0, 0, 0, NULL },
	{ "a status, not an error", "+MOVED 3999 127.0.0.1:6381\r\n", 0, 0, 0, NULL },
};

static void test_redirect(void **state)
{
	const struct redirect_row *row = *state;
	redisReply *r = reply_of(row->resp);
	struct cluster_redirect rd;

	assert_int_equal(cluster_redirect_of(r, &rd), row->is_redirect);
	if (row->is_redirect) {
		assert_int_equal(rd.ask, row->ask);
		assert_int_equal(rd.slot, row->slot);
		assert_string_equal(rd.addr, row->addr);
	}
	freeReplyObject(r);
}

/* ---- fake nodes ----------------------------------------------------------------------------- */

/* A node on a socketpair: a thread that answers every command it reads. */
struct fake {
	char addr[CLUSTER_ADDR_LEN];
	int fd[2];	       /* [0] the client's, [1] the thread's */
	const char *canned;    /* written once, before any command: a CLUSTER SLOTS answer */
	const char *on_script; /* the answer to every EVALSHA / EVAL */
	int refuse;	       /* connecting fails */
	int attempts;	       /* connects tried, refused ones included */
	char log[LOG_LEN];     /* the first word of each command, space-separated */
	pthread_t thread;
	int running;
};

#define FAKE_SHA "0123456789012345678901234567890123456789"

static const char *answer_of(const struct fake *f, const redisReply *cmd)
{
	const char *verb = cmd->element[0]->str;

	if (!strcasecmp(verb, "SCRIPT"))
		return "$40\r\n" FAKE_SHA "\r\n";
	if (!strcasecmp(verb, "ASKING"))
		return "+OK\r\n";
	if (!strcasecmp(verb, "EVALSHA") || !strcasecmp(verb, "EVAL"))
		return f->on_script;
	return "-ERR not faked\r\n";
}

static void *fake_run(void *arg)
{
	struct fake *f = arg;
	redisReader *rd = redisReaderCreate();
	char buf[4096];
	ssize_t n;
	void *r;

	while ((n = read(f->fd[1], buf, sizeof(buf))) > 0) {
		redisReaderFeed(rd, buf, n);
		while (redisReaderGetReply(rd, &r) == REDIS_OK && r) {
			const redisReply *cmd = r;
			const char *a = answer_of(f, cmd);

			snprintf(f->log + strlen(f->log), LOG_LEN - strlen(f->log), "%s ",
				 cmd->element[0]->str);
			if (write(f->fd[1], a, strlen(a)) != (ssize_t)strlen(a))
				break;
			freeReplyObject(r);
		}
	}
	redisReaderFree(rd);
	return NULL;
}

struct fakes {
	struct fake *f;
	size_t n;
};

/* cluster_connect_fn: the fake at @addr, over its socketpair. */
static int connect_fake(void *arg, const char *addr, struct store_conn *conn, char *err, size_t len)
{
	struct fakes *fs = arg;
	size_t i;

	for (i = 0; i < fs->n; i++) {
		struct fake *f = &fs->f[i];

		if (strcmp(f->addr, addr) != 0)
			continue;
		f->attempts++;
		if (f->refuse)
			break;
		if (f->canned && f->attempts > 1)
			close(f->fd[1]); /* the last connection's: ask_slots() closed its own end */
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, f->fd), 0);
		if (f->canned)
			assert_int_equal(write(f->fd[1], f->canned, strlen(f->canned)),
					 (ssize_t)strlen(f->canned));
		else
			assert_int_equal(pthread_create(&f->thread, NULL, fake_run, f), 0);
		f->running = !f->canned;
		conn->c = redisConnectFd(f->fd[0]);
		assert_non_null(conn->c);
		return 0;
	}
	snprintf(err, len, "cannot connect to '%s': Connection refused", addr);
	return -1;
}

/* After the client closed its end (cluster__close), the thread ends. */
static void fakes_stop(struct fakes *fs)
{
	size_t i;

	for (i = 0; i < fs->n; i++) {
		if (fs->f[i].running)
			pthread_join(fs->f[i].thread, NULL);
		if (fs->f[i].running || fs->f[i].canned)
			close(fs->f[i].fd[1]);
	}
}

/* ---- hostile CLUSTER SLOTS, through the bounded reader ---------------------------------- */

struct hostile_row {
	const char *name;
	const char *resp;
	int ret;
	const char *err_has;
};

static const struct hostile_row hostile_rows[] = {
	{ "a good map", THREE_SHARDS, 0, NULL },
	{ "an endless array", "*2147483647\r\n:1\r\n", -EIO, "refused" },
	{ "nesting 5 deep", "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", -EIO, "depth 5 refused" },
	{ "a string never finished", "$1000000\r\nabc", -EIO, "no answer within 200 ms" },
	{ "an error", "-ERR This instance has cluster support disabled\r\n", -EIO,
	  "cluster support disabled" },
};

static void test_hostile(void **state)
{
	const struct hostile_row *row = *state;
	struct fake f = { .addr = "127.0.0.1:7000", .canned = row->resp };
	struct fakes fs = { .f = &f, .n = 1 };
	struct cluster *cl = calloc(1, sizeof(*cl));
	char err[ERR_LEN] = "";

	assert_non_null(cl);
	assert_int_equal(
		cluster__init(cl, "cluster://127.0.0.1:7000", connect_fake, &fs, TIMEOUT_NS, -1),
		0);
	assert_int_equal(cluster__refresh(cl, err, sizeof(err)), row->ret);
	if (row->err_has)
		assert_non_null(strstr(err, row->err_has));
	assert_int_equal(cl->map.n, row->ret ? 0 : 3);
	assert_int_equal(cl->stale, !!row->ret);
	cluster__close(cl);
	fakes_stop(&fs);
	free(cl);
}

/* @addr into @cl's map, as if CLUSTER SLOTS had named it. */
static void map_add(struct cluster *cl, const char *addr)
{
	assert_true(cl->map.n < CLUSTER_NODES_MAX);
	snprintf(cl->map.addr[cl->map.n++], CLUSTER_ADDR_LEN, "%s", addr);
	assert_int_equal(cluster__node_of(cl, addr), cl->map.n - 1);
}

/* ---- routing ------------------------------------------------------------------------------- */

#define LEASE_TTL_US 1000000
#define GRANT_5	     "*4\r\n:5\r\n:1001000\r\n:1000\r\n:5\r\n" /* held, expires, now, granted */
#define KEY_A	     "sluice:b2:{p:0a000001}"
#define KEY_B	     "sluice:b2:{p:0a000002}"

struct route_row {
	const char *name;
	const char *a_says, *b_says; /* node a's and b's answer to a script */
	int a_refuses;		     /* node a is down */
	int ret;		     /* store_budget_sync() */
	int err_a, err_b;	     /* each key's grant's err */
	const char *a_log, *b_log;   /* the commands each node read */
	__u8 slot0_node;	     /* the map's primary of slot 0 after (MOVED names it) */
};

#define NONE CLUSTER_NODE_NONE
#define TRAP "127.0.0.1:7009" /* in no slot map: a redirect there must not connect */

static const struct route_row route_rows[] = {
	{ "both answer", GRANT_5, GRANT_5, 0, 0, 0, 0, "SCRIPT EVALSHA ", "SCRIPT EVALSHA ", NONE },
	{ "MOVED: once more on the new node, and the map follows", "-MOVED 0 127.0.0.1:7001\r\n",
	  GRANT_5, 0, 0, 0, 0, "SCRIPT EVALSHA ", "SCRIPT EVALSHA EVALSHA ", 1 },
	{ "ASK: ASKING first, the map stays", "-ASK 0 127.0.0.1:7001\r\n", GRANT_5, 0, 0, 0, 0,
	  "SCRIPT EVALSHA ", "SCRIPT EVALSHA ASKING EVALSHA ", NONE },
	{ "redirected twice: followed once, then failed", "-MOVED 0 127.0.0.1:7001\r\n",
	  "-MOVED 0 127.0.0.1:7000\r\n", 0, -EPROTO, -EPROTO, -EPROTO, "SCRIPT EVALSHA EVALSHA ",
	  "SCRIPT EVALSHA EVALSHA ", 0 },
	{ "a primary down fails only its keys", NULL, GRANT_5, 1, 0, -EIO, 0, "", "SCRIPT EVALSHA ",
	  NONE },
	{ "a wrong answer fails only its key", "*4\r\n:99\r\n:1001000\r\n:1000\r\n:5\r\n", GRANT_5,
	  0, 0, -EPROTO, 0, "SCRIPT EVALSHA ", "SCRIPT EVALSHA ", NONE },
	{ "every primary down: the store is", NULL, "-MOVED 0 127.0.0.1:7000\r\n", 1, -EIO, -EIO,
	  -EIO, "", "SCRIPT EVALSHA ", 0 },
	{ "MOVED out of the map: not followed, the map read again", "-MOVED 0 " TRAP "\r\n",
	  GRANT_5, 0, 0, -EPROTO, 0, "SCRIPT EVALSHA ", "SCRIPT EVALSHA ", NONE },
	{ "ASK out of the map: not followed either", "-ASK 0 " TRAP "\r\n", GRANT_5, 0, 0, -EPROTO,
	  0, "SCRIPT EVALSHA ", "SCRIPT EVALSHA ", NONE },
};

static void test_route(void **state)
{
	const struct route_row *row = *state;
	struct fake f[] = {
		{ .addr = "127.0.0.1:7000", .on_script = row->a_says, .refuse = row->a_refuses },
		{ .addr = "127.0.0.1:7001", .on_script = row->b_says },
		{ .addr = TRAP, .on_script = GRANT_5 },
	};
	struct fakes fs = { .f = f, .n = ARRAY_SIZE(f) };
	struct cluster *cl = calloc(1, sizeof(*cl));
	struct store_conn conn = { .cluster = cl, .cancel_fd = -1 };
	struct lease_key k[] = { { .key = KEY_A, .field = "0a000001" },
				 { .key = KEY_B, .field = "0a000002" } };
	struct lease_req q[ARRAY_SIZE(k)];
	struct lease_grant g[ARRAY_SIZE(k)];
	__u16 slot_a = cluster_key_slot(KEY_A, strlen(KEY_A));
	__u16 slot_b = cluster_key_slot(KEY_B, strlen(KEY_B));
	char err[ERR_LEN] = "";
	size_t i;

	assert_non_null(cl);
	assert_int_not_equal(slot_a, slot_b);
	assert_int_equal(
		cluster__init(cl, "cluster://127.0.0.1:7000", connect_fake, &fs, TIMEOUT_NS, -1),
		0);
	/* The map as if read: KEY_A's slot on a, KEY_B's on b, both redirects name slot 0. */
	cl->stale = 0;
	map_add(cl, f[0].addr);
	map_add(cl, f[1].addr);
	memset(cl->map.slot_node, CLUSTER_NODE_NONE, sizeof(cl->map.slot_node));
	cl->map.slot_node[slot_a] = 0;
	cl->map.slot_node[slot_b] = 1;
	for (i = 0; i < ARRAY_SIZE(k); i++) {
		k[i].rate_units = k[i].rate_period_us = 1;
		k[i].burst = k[i].cap = 10;
		q[i] = (struct lease_req){ .k = &k[i], .want = 5 };
	}
	assert_int_equal(
		store_lease_sync(&conn, "n", LEASE_TTL_US, q, ARRAY_SIZE(q), g, err, sizeof(err)),
		row->ret);
	assert_int_equal(g[0].err, row->err_a);
	assert_int_equal(g[1].err, row->err_b);
	if (!row->err_b)
		assert_int_equal(g[1].held, 5);
	if (!row->err_a && !row->ret)
		assert_int_equal(g[0].held, 5);
	cluster__close(cl);
	fakes_stop(&fs);
	assert_string_equal(f[0].log, row->a_log);
	assert_string_equal(f[1].log, row->b_log);
	assert_int_equal(cl->map.slot_node[0], row->slot0_node);
	assert_int_equal(f[2].attempts, 0);
	assert_int_equal(cl->map.n, 2);
	if (strstr(row->name, "out of the map")) {
		assert_int_equal(cl->stale, 1);
		assert_int_equal(cl->n_strangers, 1);
		assert_string_equal(cl->strangers[0], TRAP);
	}
	free(cl);
}

/* ---- a primary that keeps failing rests ----------------------------------------------------- */

/* One sync of KEY_A (on a, refusing) and KEY_B (on b); KEY_A's grant fails. */
static void rest_sync(struct store_conn *conn, struct lease_key *k, char *err, size_t len)
{
	struct lease_req q[2] = { { .k = &k[0], .want = 5 }, { .k = &k[1], .want = 5 } };
	struct lease_grant g[2];

	err[0] = 0;
	assert_int_equal(store_lease_sync(conn, "n", LEASE_TTL_US, q, 2, g, err, len), 0);
	assert_int_equal(g[0].err, -EIO);
	assert_int_equal(g[1].err, 0);
	assert_int_equal(g[1].held, 5);
}

/*
 * a refuses: after CLUSTER_REST_AFTER failed round trips in a row it is
 * not tried again (its key fails at once, b's is served) until its rest
 * ends; then one more failure rests it twice as long (cluster.h).
 */
static void test_rest(void **state)
{
	struct fake f[] = {
		{ .addr = "127.0.0.1:7000", .refuse = 1 },
		{ .addr = "127.0.0.1:7001", .on_script = GRANT_5 },
	};
	struct fakes fs = { .f = f, .n = ARRAY_SIZE(f) };
	struct cluster *cl = calloc(1, sizeof(*cl));
	struct store_conn conn = { .cluster = cl, .cancel_fd = -1 };
	struct lease_key k[] = { { .key = KEY_A, .field = "0a000001" },
				 { .key = KEY_B, .field = "0a000002" } };
	const __u64 rest_ns = CLUSTER_REST_TIMEOUTS * TIMEOUT_NS;
	char err[ERR_LEN];
	__u64 left;
	int i;

	(void)state;
	assert_non_null(cl);
	assert_int_equal(
		cluster__init(cl, "cluster://127.0.0.1:7001", connect_fake, &fs, TIMEOUT_NS, -1),
		0);
	map_add(cl, f[0].addr);
	map_add(cl, f[1].addr);
	memset(cl->map.slot_node, CLUSTER_NODE_NONE, sizeof(cl->map.slot_node));
	cl->map.slot_node[cluster_key_slot(KEY_A, strlen(KEY_A))] = 0;
	cl->map.slot_node[cluster_key_slot(KEY_B, strlen(KEY_B))] = 1;
	for (i = 0; i < 2; i++) {
		k[i].rate_units = k[i].rate_period_us = 1;
		k[i].burst = k[i].cap = 10;
	}
	for (i = 1; i <= CLUSTER_REST_AFTER; i++) {
		cl->stale = 0; /* no map to read from the fakes: keep this one */
		rest_sync(&conn, k, err, sizeof(err));
		assert_int_equal(f[0].attempts, i);
		assert_int_equal(cl->node[0].rest_until_ns > 0, i == CLUSTER_REST_AFTER);
	}
	left = cl->node[0].rest_until_ns - mono_ns();
	assert_in_range(left, rest_ns / 2, rest_ns);
	cl->stale = 0;
	rest_sync(&conn, k, err, sizeof(err));
	assert_int_equal(f[0].attempts, CLUSTER_REST_AFTER); /* resting: not tried */
	assert_non_null(strstr(err, "resting"));
	assert_true(cl->stale);		       /* the map is read again while it rests */
	cl->node[0].rest_until_ns = mono_ns(); /* the rest is over */
	cl->stale = 0;
	rest_sync(&conn, k, err, sizeof(err));
	assert_int_equal(f[0].attempts, CLUSTER_REST_AFTER + 1);
	left = cl->node[0].rest_until_ns - mono_ns();
	assert_in_range(left, rest_ns, 2 * rest_ns);
	cluster__close(cl);
	fakes_stop(&fs);
	free(cl);
}

/* ---- what a node logs of a failover -------------------------------------------------------- */

/*
 * THREE_SHARDS after :7002 failed over to a primary whose host (a reply
 * may hold anything but a space) would forge a log line of its own.
 */
#define FORGED_HOST "127.0.0.1\nevent=forged"
#define FAILED_OVER                                                                                \
	"*3\r\n" RANGE("0", "5460") NODE7("9\r\n127.0.0.1", "7000") NODE7(                         \
		"9\r\n127.0.0.1", "7003") RANGE("5461", "10922") NODE7("9\r\n127.0.0.1", "7001")   \
		NODE7("9\r\n127.0.0.1",                                                            \
		      "7004") "*3\r\n:10923\r\n:16383\r\n" NODE7("22\r\n" FORGED_HOST, "7005")

/* The events of @out, one a line, each without its "ts=... " field: @want, in order. */
static void assert_events(const char *out, const char *const *want, size_t n)
{
	const char *line = out, *end;
	size_t i;

	for (i = 0; i < n; i++) {
		end = strchr(line, '\n');
		assert_non_null(end);
		assert_true(!strncmp(line, "ts=", strlen("ts=")) && strchr(line, ' ') < end);
		line = strchr(line, ' ') + 1;
		assert_int_equal(end - line, strlen(want[i]));
		assert_memory_equal(line, want[i], strlen(want[i]));
		line = end + 1;
	}
	assert_string_equal(line, "");
}

/*
 * A primary's first failure and first success after, and a map whose
 * primaries changed, are logged once each; a map read again unchanged is
 * not. Addresses from replies are logfmt values: a newline in one stays
 * inside its line.
 */
static void test_failover_logged(void **state)
{
	static const char *const want[] = {
		"level=warn event=store_shard addr=127.0.0.1:7002 state=down",
		"level=warn event=cluster_map "
		"primaries=\"127.0.0.1:7000,127.0.0.1:7001,127.0.0.1\\nevent=forged:7005\"",
		"level=warn event=store_shard addr=127.0.0.1:7000 state=down",
		"level=info event=store_shard addr=127.0.0.1:7000 state=up failed_in_row=1",
		"level=warn event=cluster_redirect_refused to=\"10.0.0.9\\nevent=forged:7009\" "
		"err=\"not in the slot map read from the seeds; not followed, and the map is read "
		"again\"",
	};
	struct fake f = { .addr = "127.0.0.1:7000", .canned = THREE_SHARDS };
	struct fakes fs = { .f = &f, .n = 1 };
	struct cluster *cl = calloc(1, sizeof(*cl));
	char err[ERR_LEN] = "";

	(void)state;
	assert_non_null(cl);
	log_set_level(LOG_INFO);
	assert_int_equal(
		cluster__init(cl, "cluster://127.0.0.1:7000", connect_fake, &fs, TIMEOUT_NS, -1),
		0);
	capture_begin();
	assert_int_equal(cluster__refresh(cl, err, sizeof(err)), 0); /* the first map */
	assert_int_equal(cluster__refresh(cl, err, sizeof(err)), 0); /* the same */
	cluster__note(cl, 2, 0);
	cluster__note(cl, 2, 0); /* still down */
	f.canned = FAILED_OVER;
	assert_int_equal(cluster__refresh(cl, err, sizeof(err)), 0);
	cluster__note(cl, 0, 0);
	cluster__note(cl, 0, 1);
	cluster__note(cl, 0, 1); /* still up */
	cluster__stranger(cl, "10.0.0.9\nevent=forged:7009");
	assert_events(capture_end(), want, ARRAY_SIZE(want));
	assert_string_equal(cl->map.addr[2], "127.0.0.1\nevent=forged:7005");
	cluster__close(cl);
	fakes_stop(&fs);
	free(cl);
}

#define N_TESTS                                                                                    \
	(ARRAY_SIZE(slot_rows) + ARRAY_SIZE(pair_rows) + ARRAY_SIZE(map_rows) + 2 +                \
	 ARRAY_SIZE(redirect_rows) + ARRAY_SIZE(hostile_rows) + ARRAY_SIZE(route_rows) + 2)

int main(void)
{
	struct CMUnitTest tests[N_TESTS];
	char names[N_TESTS][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_slot, slot_rows);
	SUITE_ADD_ROWS(&s, test_pair, pair_rows);
	SUITE_ADD_ROWS(&s, test_map, map_rows);
	SUITE_ADD(&s, test_map_too_many_primaries);
	SUITE_ADD(&s, test_map_replicas);
	SUITE_ADD_ROWS(&s, test_redirect, redirect_rows);
	SUITE_ADD_ROWS(&s, test_hostile, hostile_rows);
	SUITE_ADD_ROWS(&s, test_route, route_rows);
	SUITE_ADD(&s, test_rest);
	SUITE_ADD(&s, test_failover_logged);
	return _cmocka_run_group_tests("cluster", tests, s.n, NULL, NULL);
}
