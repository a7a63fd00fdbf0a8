// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The Redis backend (budget/backend_redis.h): its connections, and the
 * operations of budget/backend.h over the protocol of budget/redis.h.
 *
 * Each (re)connect logs in (AUTH when configured). A sentinel:// URL names
 * sentinels and a master: each (re)connect asks the sentinels in turn
 * where the master is, connects there and checks with ROLE that it is one.
 * So after a failover the first failed round drops the old master and the
 * next one finds the new master; no other code knows. Worst case a
 * connect costs one timeout per sentinel plus the master's. A paused Redis
 * (SIGSTOP) accepts connections but never answers, which only the timeout
 * catches.
 *
 * A cluster:// URL names some nodes of a Redis Cluster (#17): the slot map
 * is read from the first that answers, and the budget's calls go to each
 * key's primary (budget/cluster.h, and the routing in redis.c). Connections
 * to the primaries open on first use and close when a round trip to one
 * fails, which also makes the map stale: it is read again before the next
 * round, so a promoted replica is found within a round of the promotion.
 */
#include <errno.h>
#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/compiler.h"
#include "base/clock.h"
#include "budget/backend_redis.h"
#include "budget/cluster.h"
#include "budget/redis.h"

#define URL_REDIS	   "redis://"
#define URL_UNIX	   "unix://"
#define URL_SENTINEL	   "sentinel://"
#define ROLE_MASTER	   "master" /* ROLE's first word on a master */
#define REDIS_PORT_DEFAULT 6379

_Static_assert(CLUSTER_NODES_MAX <= BACKEND_SHARDS_MAX, "a report holds every primary");
_Static_assert(CLUSTER_ADDR_LEN <= BACKEND_ADDR_LEN, "a report holds a primary's address");

struct backend_redis {
	struct budget_backend be; /* first: the backend is the state */
	struct backend_config cfg;
	struct store_conn conn;	 /* conn.c NULL: not connected */
	struct cluster *cluster; /* a cluster:// URL's; else NULL */
};

static struct backend_redis *redis_of(struct budget_backend *be)
{
	return (struct backend_redis *)be;
}

static const struct backend_redis *redis_of_const(const struct budget_backend *be)
{
	return (const struct backend_redis *)be;
}

static struct timeval tv_of(__u64 ns)
{
	return (struct timeval){ .tv_sec = ns / SLUICE_NSEC_PER_SEC,
				 .tv_usec = ns % SLUICE_NSEC_PER_SEC / SLUICE_NSEC_PER_USEC };
}

static int has_scheme(const char *url, const char *scheme)
{
	return !strncmp(url, scheme, strlen(scheme));
}

/* host:port, [v6]:port, or either without a port for the default one. */
static redisContext *connect_tcp(const char *addr, struct timeval tv)
{
	char buf[STORE_URL_LEN], *host = buf, *colon;
	int port = REDIS_PORT_DEFAULT;
	size_t n;

	snprintf(buf, sizeof(buf), "%s", addr);
	colon = strrchr(buf, ':');
	if (colon && !strchr(colon, ']')) {
		port = atoi(colon + 1);
		*colon = '\0';
	}
	n = strlen(buf);
	if (n > 1 && buf[0] == '[' && buf[n - 1] == ']') {
		buf[n - 1] = '\0';
		host++;
	}
	return redisConnectWithTimeout(host, port, tv);
}

/* @c, connected to @what; else NULL with @err and @c freed. */
static redisContext *ready(redisContext *c, const char *what, char *err, size_t len)
{
	if (!c || c->err) {
		snprintf(err, len, "cannot connect to '%s': %s", what, c ? c->errstr : "no memory");
		redisFree(c);
		return NULL;
	}
	return c;
}

/*
 * One command of @argc words on @c (@what in errors), whose reply must be
 * the status or string @want; 0 or -1 with @err.
 */
static int command(struct store_conn *c, const char *what, const char *want, char *err, size_t len,
		   int argc, const char **argv)
{
	redisReply *r = NULL;
	char cause[STORE_ERR_LEN];
	int ok;

	cause[0] = '\0';
	ok = !store_command(c, argc, argv, &r, cause, sizeof(cause)) &&
	     (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) &&
	     !strcmp(r->str, want);
	if (!ok)
		snprintf(err, len, "'%s' on '%s': %s", argv[0], what,
			 r ? store_reply_error(NULL, r) : cause);
	if (r)
		freeReplyObject(r);
	return ok ? 0 : -1;
}

static int auth(struct store_conn *c, const struct backend_config *cfg, const char *what, char *err,
		size_t len)
{
	const char *argv[] = { "AUTH", cfg->username, cfg->password };

	if (!cfg->password[0])
		return 0;
	if (!cfg->username[0]) /* the default user: AUTH password */
		argv[1] = cfg->password;
	return command(c, what, "OK", err, len, cfg->username[0] ? 3 : 2, argv);
}

/* A cluster node's connection, logged in (cluster_connect_fn). */
static int connect_node(void *arg, const char *addr, struct store_conn *conn, char *err, size_t len)
{
	const struct backend_redis *s = arg;

	conn->c = ready(connect_tcp(addr, tv_of(s->cfg.timeout_ns)), addr, err, len);
	if (!conn->c)
		return -1;
	if (!auth(conn, &s->cfg, addr, err, len))
		return 0;
	redisFree(conn->c);
	conn->c = NULL;
	return -1;
}

/* Whether @r answers get-master-addr-by-name: [host, port]. */
static int is_master_addr(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	       r->element[0]->type == REDIS_REPLY_STRING &&
	       r->element[1]->type == REDIS_REPLY_STRING;
}

/*
 * Ask the sentinel at @addr where master @name is, with the store's timeout
 * and password (sentinels and Redis share it): "host:port" into @out.
 * 0, or -1 with the cause in @err.
 */
static int ask_sentinel(const struct backend_config *cfg, const char *addr, const char *name,
			char *out, size_t out_len, char *err, size_t len)
{
	struct store_conn c = { .timeout_ns = cfg->timeout_ns, .cancel_fd = cfg->cancel_fd };
	const char *argv[] = { "SENTINEL", "get-master-addr-by-name", name };
	char cause[STORE_ERR_LEN] = "";
	redisReply *r = NULL;
	int ret = -1;

	c.c = ready(connect_tcp(addr, tv_of(cfg->timeout_ns)), addr, err, len);
	if (!c.c)
		return -1;
	if (auth(&c, cfg, addr, err, len))
		goto out;
	store_command(&c, ARRAY_SIZE(argv), argv, &r, cause, sizeof(cause));
	if (is_master_addr(r) &&
	    snprintf(out, out_len, "%s:%s", r->element[0]->str, r->element[1]->str) < (int)out_len)
		ret = 0;
	else
		snprintf(err, len, "sentinel '%s' on master '%s': %s", addr, name,
			 r && r->type == REDIS_REPLY_NIL ? "unknown master"
							 : store_reply_error(cause, r));
	if (r)
		freeReplyObject(r);
out:
	redisFree(c.c);
	return ret;
}

/*
 * The master's "host:port" per the first of the URL's sentinels that knows
 * it, asked in order; 0, or -1 with the last sentinel's cause in @err.
 */
static int find_master(const struct backend_config *cfg, char *out, size_t out_len, char *err,
		       size_t len)
{
	const char *addrs = cfg->url + strlen(URL_SENTINEL), *slash = strchr(addrs, '/'), *a,
		   *comma;
	char addr[STORE_URL_LEN];

	snprintf(err, len, "no sentinel or master name in '%s'", cfg->url);
	if (!slash)
		return -1;
	for (a = addrs; a < slash; a = comma + 1) {
		comma = memchr(a, ',', slash - a);
		if (!comma)
			comma = slash;
		snprintf(addr, sizeof(addr), "%.*s", (int)(comma - a), a);
		if (!ask_sentinel(cfg, addr, slash + 1, out, out_len, err, len))
			return 0;
	}
	return -1;
}

/* Connect per the URL (a sentinel URL: to the master it names); NULL with @err. */
static redisContext *connect_url(const struct backend_config *cfg, char *err, size_t len)
{
	struct timeval tv = tv_of(cfg->timeout_ns);
	char master[STORE_URL_LEN];

	if (has_scheme(cfg->url, URL_UNIX))
		return ready(redisConnectUnixWithTimeout(cfg->url + strlen(URL_UNIX), tv), cfg->url,
			     err, len);
	if (has_scheme(cfg->url, URL_REDIS))
		return ready(connect_tcp(cfg->url + strlen(URL_REDIS), tv), cfg->url, err, len);
	if (has_scheme(cfg->url, URL_SENTINEL)) {
		if (find_master(cfg, master, sizeof(master), err, len))
			return NULL;
		return ready(connect_tcp(master, tv), master, err, len);
	}
	snprintf(err, len, "unsupported store URL '%s'", cfg->url);
	return NULL;
}

/*
 * Whether @c is a master (ROLE). A sentinel may still name a master that
 * has been demoted, or one that came back as a replica before the sentinels
 * noticed: writing there fails, so the probe fails and asks again.
 */
static int check_master(struct store_conn *c, const char *what, char *err, size_t len)
{
	const char *argv[] = { "ROLE" };
	char cause[STORE_ERR_LEN] = "";
	redisReply *r = NULL;
	const char *role;
	int ok;

	store_command(c, ARRAY_SIZE(argv), argv, &r, cause, sizeof(cause));
	role = r && r->type == REDIS_REPLY_ARRAY && r->elements &&
			       r->element[0]->type == REDIS_REPLY_STRING
		       ? r->element[0]->str
		       : NULL;
	ok = role && !strcmp(role, ROLE_MASTER);
	if (role && !ok)
		snprintf(err, len, "'ROLE' on '%s': '%s', not a master", what, role);
	else if (!ok)
		snprintf(err, len, "'ROLE' on '%s': %s", what, store_reply_error(cause, r));
	if (r)
		freeReplyObject(r);
	return ok ? 0 : -1;
}

/*
 * A fresh connection into s->conn, logged in (AUTH when configured) and,
 * via sentinel, to a master; 0 or -1 with @err.
 */
static int open_conn(struct backend_redis *s, char *err, size_t len)
{
	struct store_conn *c = &s->conn;

	memset(&c->sc, 0, sizeof(c->sc));
	c->timeout_ns = s->cfg.timeout_ns;
	c->cancel_fd = s->cfg.cancel_fd;
	c->c = connect_url(&s->cfg, err, len);
	if (!c->c)
		return -1;
	if (auth(c, &s->cfg, s->cfg.url, err, len) ||
	    (has_scheme(s->cfg.url, URL_SENTINEL) && check_master(c, s->cfg.url, err, len))) {
		redisFree(c->c);
		c->c = NULL;
		return -1;
	}
	return 0;
}

static int redis_connect(struct budget_backend *be, char *err, size_t len)
{
	struct backend_redis *s = redis_of(be);

	if (s->conn.c || s->cluster)
		return 0;
	return open_conn(s, err, len) ? -EIO : 0;
}

static int redis_is_connected(const struct budget_backend *be)
{
	const struct backend_redis *s = redis_of_const(be);

	return s->conn.c || s->cluster;
}

static void redis_drop(struct budget_backend *be)
{
	struct backend_redis *s = redis_of(be);

	if (s->cluster)
		s->cluster->stale = 1;
	redisFree(s->conn.c);
	s->conn.c = NULL;
}

/* One server: PING; a cluster: read the slot map. */
static int redis_probe(struct budget_backend *be, char *err, size_t len)
{
	struct backend_redis *s = redis_of(be);
	const char *ping[] = { "PING" };

	if (s->cluster)
		return cluster__refresh(s->cluster, err, len);
	return command(&s->conn, s->cfg.url, "PONG", err, len, ARRAY_SIZE(ping), ping);
}

static int redis_news(struct budget_backend *be, const char *key, int bump, __u64 *value, char *err,
		      size_t len)
{
	return store_news(&redis_of(be)->conn, key, bump, value, err, len);
}

static int redis_sync(struct budget_backend *be, struct budget_sync *b, char *err, size_t len)
{
	return store_budget_sync(&redis_of(be)->conn, b, err, len);
}

static int redis_rate_lease(struct budget_backend *be, struct rate_sync *r, char *err, size_t len)
{
	return store_rate_lease(&redis_of(be)->conn, r, err, len);
}

static int redis_is_reachable(const struct budget_backend *be, const char *key)
{
	return store_key_is_reachable(&redis_of_const(be)->conn, key);
}

/* Each primary's address and round trips so far. */
static void redis_report(const struct budget_backend *be, struct backend_report *out)
{
	const struct cluster *cl = redis_of_const(be)->cluster;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!cl)
		return;
	out->n_shards = cl->map.n;
	out->map_refreshes = cl->refreshes;
	for (i = 0; i < cl->map.n; i++) {
		struct store_shard *sh = &out->shards[i];

		snprintf(sh->addr, sizeof(sh->addr), "%s", cl->map.addr[i]);
		sh->ok = cl->node[i].ok;
		sh->failed = cl->node[i].failed;
		sh->down = cl->node[i].down;
	}
}

static void redis_free(struct budget_backend *be)
{
	struct backend_redis *s = redis_of(be);

	if (s->cluster)
		cluster__close(s->cluster);
	free(s->cluster);
	redisFree(s->conn.c);
	free(s);
}

static const struct backend_ops redis_ops = {
	.connect = redis_connect,
	.is_connected = redis_is_connected,
	.drop = redis_drop,
	.probe = redis_probe,
	.news = redis_news,
	.sync = redis_sync,
	.rate_lease = redis_rate_lease,
	.is_reachable = redis_is_reachable,
	.report = redis_report,
	.free = redis_free,
};

int backend_redis__handles(const char *url)
{
	return has_scheme(url, URL_REDIS) || has_scheme(url, URL_UNIX) ||
	       has_scheme(url, URL_SENTINEL) || has_scheme(url, CLUSTER_URL_SCHEME);
}

struct budget_backend *backend_redis__open(const struct backend_config *cfg)
{
	struct backend_redis *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->be.ops = &redis_ops;
	s->cfg = *cfg;
	if (has_scheme(cfg->url, CLUSTER_URL_SCHEME)) {
		/* the cluster a cluster:// URL names, not yet connected */
		s->cluster = calloc(1, sizeof(*s->cluster));
		if (!s->cluster) {
			free(s);
			return NULL;
		}
		if (cluster__init(s->cluster, cfg->url, connect_node, s, cfg->timeout_ns,
				  cfg->cancel_fd)) {
			free(s->cluster);
			free(s);
			errno = EINVAL;
			return NULL;
		}
		s->conn.cluster = s->cluster;
	}
	return &s->be;
}
