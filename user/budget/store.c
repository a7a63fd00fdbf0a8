// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Redis, through hiredis, on a thread of its own. For now the store is
 * probed (AUTH when configured, then PING) every interval; the shared
 * budget (#5) will use the same connection. A probe that errs, times out or
 * answers anything but PONG is a failure, and drops the connection so the
 * next probe reconnects: a paused Redis (SIGSTOP) accepts connections but
 * never answers, which only the timeout catches.
 *
 * A sentinel:// URL names sentinels and a master: each (re)connect asks the
 * sentinels in turn where the master is, connects there and checks with
 * ROLE that it is one. So after a failover the first failed probe drops the
 * old master and the next one finds the new master; no other code knows.
 * Worst case a connect costs one timeout per sentinel plus the master's.
 *
 * A cluster:// URL names some nodes of a Redis Cluster (#17): the slot map
 * is read from the first that answers, and the budget's calls go to each
 * key's primary (budget/cluster.h, and the routing in redis.c). Connections
 * to the primaries open on first use and close when a round trip to one
 * fails, which also makes the map stale: it is read again before the next
 * round, so a promoted replica is found within a round of the promotion.
 *
 * The store never blocks the agent (#12). Every round trip is bounded in
 * time and size (budget/wire.h), store__close() cancels any wait at once
 * through an eventfd, and a thread that still does not end in
 * STORE_CLOSE_WAIT_NS is abandoned: it frees its own state when it ends.
 * The agent's tick sees a sync that has been under way too long
 * (store_report.busy_since_ns) and counts it as a fault. Every wait is on
 * CLOCK_MONOTONIC, so a step of the wall clock changes nothing.
 */
#include <errno.h>
#include <hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice/compiler.h"
#include "budget/cluster.h"
#include "budget/planner.h"
#include "budget/store.h"
#include "base/log.h"

#define URL_REDIS	   "redis://"
#define URL_UNIX	   "unix://"
#define URL_SENTINEL	   "sentinel://"
#define ROLE_MASTER	   "master" /* ROLE's first word on a master */
#define REDIS_PORT_DEFAULT 6379

struct store {
	struct store_config cfg;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;	     /* CLOCK_MONOTONIC */
	int stop;		     /* under lock */
	int done;		     /* under lock: the thread has left run() */
	int abandoned;		     /* under lock: the thread frees the store when it ends */
	int cancel_fd;		     /* eventfd: readable once stop is set */
	__u64 busy_since_ns;	     /* under lock: the sync under way began; 0 none */
	struct store_report pending; /* under lock */
	struct store_conn conn;	     /* the thread's own; conn.c NULL: not connected */
	struct cluster *cluster;     /* a cluster:// URL's, the thread's own; else NULL */
	struct lease_state *lease;   /* the thread's own */
};

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

static int auth(struct store_conn *c, const struct store_config *cfg, const char *what, char *err,
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
	const struct store *s = arg;

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
static int ask_sentinel(const struct store_config *cfg, int cancel_fd, const char *addr,
			const char *name, char *out, size_t out_len, char *err, size_t len)
{
	struct store_conn c = { .timeout_ns = cfg->timeout_ns, .cancel_fd = cancel_fd };
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
static int find_master(const struct store_config *cfg, int cancel_fd, char *out, size_t out_len,
		       char *err, size_t len)
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
		if (!ask_sentinel(cfg, cancel_fd, addr, slash + 1, out, out_len, err, len))
			return 0;
	}
	return -1;
}

/* Connect per the URL (a sentinel URL: to the master it names); NULL with @err. */
static redisContext *connect_url(const struct store_config *cfg, int cancel_fd, char *err,
				 size_t len)
{
	struct timeval tv = tv_of(cfg->timeout_ns);
	char master[STORE_URL_LEN];

	if (has_scheme(cfg->url, URL_UNIX))
		return ready(redisConnectUnixWithTimeout(cfg->url + strlen(URL_UNIX), tv), cfg->url,
			     err, len);
	if (has_scheme(cfg->url, URL_REDIS))
		return ready(connect_tcp(cfg->url + strlen(URL_REDIS), tv), cfg->url, err, len);
	if (has_scheme(cfg->url, URL_SENTINEL)) {
		if (find_master(cfg, cancel_fd, master, sizeof(master), err, len))
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
static int open_conn(struct store *s, char *err, size_t len)
{
	struct store_conn *c = &s->conn;

	memset(&c->sc, 0, sizeof(c->sc));
	c->timeout_ns = s->cfg.timeout_ns;
	c->cancel_fd = s->cancel_fd;
	c->c = connect_url(&s->cfg, s->cancel_fd, err, len);
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

/* Each primary's address and round trips so far into the pending report; under s->lock. */
static void note_shards(struct store *s)
{
	const struct cluster *cl = s->cluster;
	size_t i;

	if (!cl)
		return;
	s->pending.n_shards = cl->map.n;
	s->pending.map_refreshes = cl->refreshes;
	for (i = 0; i < cl->map.n; i++) {
		struct store_shard *sh = &s->pending.shards[i];

		snprintf(sh->addr, sizeof(sh->addr), "%s", cl->map.addr[i]);
		sh->ok = cl->node[i].ok;
		sh->failed = cl->node[i].failed;
		sh->down = cl->node[i].down;
	}
}

/*
 * One sync. Full, once per interval: with a node name, this node's
 * membership beat (which answers the live node count), the hot sets and
 * every lease, in one round trip; else PING. Between full syncs, early
 * top-ups of leases running low (usually nothing to send). 0, or -errno
 * with the cause in @err (-EPROTO: Redis answered, wrongly); a failure
 * drops the connection, so the next sync reconnects.
 */
static int sync_once(struct store *s, int full, __u64 *live, char *err, size_t len)
{
	__u64 ttl_us = STORE_MEMBER_BEATS * s->cfg.interval_ns / SLUICE_NSEC_PER_USEC;
	const char *ping[] = { "PING" };
	struct lease_stats st;
	int ret;

	*live = 0;
	if (!s->conn.c && !s->cluster) {
		if (!full)
			return 0; /* reconnecting is the full sync's job */
		if (open_conn(s, err, len))
			return -EIO;
	}
	if (s->cfg.node[0])
		ret = lease_round(s->lease, &s->conn, s->cfg.fleet, s->cfg.node, ttl_us, full, live,
				  err, len);
	else if (s->cluster)
		ret = full ? cluster__refresh(s->cluster, err, len) : 0;
	else
		ret = full ? command(&s->conn, s->cfg.url, "PONG", err, len, ARRAY_SIZE(ping), ping)
			   : 0;
	lease_state__stats(s->lease, &st);
	pthread_mutex_lock(&s->lock);
	s->pending.rounds = st.rounds;
	s->pending.leases = st.leases;
	s->pending.hot_keys = st.hot_keys;
	s->pending.map_errors = st.map_errors;
	note_shards(s);
	pthread_mutex_unlock(&s->lock);
	if (!ret)
		return 0;
	if (s->cluster)
		s->cluster->stale = 1;
	redisFree(s->conn.c);
	s->conn.c = NULL;
	return ret < 0 ? ret : -EIO;
}

static void add_ns(struct timespec *t, __u64 ns)
{
	t->tv_nsec += ns % SLUICE_NSEC_PER_SEC;
	t->tv_sec += ns / SLUICE_NSEC_PER_SEC + t->tv_nsec / SLUICE_NSEC_PER_SEC;
	t->tv_nsec %= SLUICE_NSEC_PER_SEC;
}

/* Record one sync's result; under s->lock. */
static void note_sync(struct store *s, int full, int ret, __u64 live, const char *err)
{
	/*
	 * Only full syncs probe the store's health; an early top-up that
	 * times out only waits for the next one. But a reply that is wrong
	 * (an error, a lie) is a fault whenever it comes.
	 */
	int probe = full || ret == -EPROTO;

	if (live)
		s->pending.live_nodes = live;
	if (!probe)
		return;
	if (!ret)
		s->pending.ok++;
	else
		s->pending.failed++;
	s->pending.last_ok = !ret;
	if (ret)
		snprintf(s->pending.err, sizeof(s->pending.err), "%s", err);
}

static void store_free(struct store *s)
{
	if (s->cluster)
		cluster__close(s->cluster);
	free(s->cluster);
	redisFree(s->conn.c);
	close(s->cancel_fd);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	lease_state__free(s->lease);
	free(s);
}

/*
 * Full syncs every interval; between them, LEASE_EARLY_DIV - 1 chances for
 * early top-ups.
 */
static void *run(void *arg)
{
	struct store *s = arg;
	char err[STORE_ERR_LEN];
	struct timespec until;
	unsigned int tick = 0;
	__u64 live;
	int ret, full, abandoned;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		full = tick++ % LEASE_EARLY_DIV == 0;
		s->busy_since_ns = mono_ns();
		pthread_mutex_unlock(&s->lock);
		ret = sync_once(s, full, &live, err, sizeof(err));
		pthread_mutex_lock(&s->lock);
		s->busy_since_ns = 0;
		note_sync(s, full, ret, live, err);
		clock_gettime(CLOCK_MONOTONIC, &until);
		add_ns(&until, s->cfg.interval_ns / LEASE_EARLY_DIV);
		while (!s->stop && pthread_cond_timedwait(&s->wake, &s->lock, &until) != ETIMEDOUT)
			;
	}
	s->done = 1;
	abandoned = s->abandoned;
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
	if (abandoned)
		store_free(s); /* nobody else holds it any more */
	return NULL;
}

/* The lock and a condition variable on CLOCK_MONOTONIC; 0 or an error number. */
static int init_sync(struct store *s)
{
	pthread_condattr_t ca;
	int err = pthread_condattr_init(&ca);

	if (err)
		return err;
	err = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (!err)
		err = pthread_mutex_init(&s->lock, NULL);
	return err;
}

/* The cluster a cluster:// URL names, not yet connected; 0 or an error number. */
static int open_cluster(struct store *s)
{
	s->cluster = calloc(1, sizeof(*s->cluster));
	if (!s->cluster)
		return ENOMEM;
	if (cluster__init(s->cluster, s->cfg.url, connect_node, s, s->cfg.timeout_ns, s->cancel_fd))
		return EINVAL;
	s->conn.cluster = s->cluster;
	return 0;
}

struct store *store__open(const struct store_config *cfg)
{
	struct store *s = calloc(1, sizeof(*s));
	int err;

	if (!s) {
		lease_plan__free(cfg->plan);
		return NULL;
	}
	s->cfg = *cfg;
	s->lease = lease_state__new(cfg->plan);
	if (!s->lease) {
		free(s);
		return NULL;
	}
	s->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	err = s->cancel_fd < 0 ? errno : init_sync(s);
	if (!err && has_scheme(cfg->url, CLUSTER_URL_SCHEME))
		err = open_cluster(s);
	if (!err)
		err = pthread_create(&s->thread, NULL, run, s);
	if (err) {
		free(s->cluster);
		if (s->cancel_fd >= 0)
			close(s->cancel_fd);
		lease_state__free(s->lease);
		free(s);
		errno = err;
		return NULL;
	}
	return s;
}

void store__collect(struct store *s, struct store_report *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->pending;
	out->busy_since_ns = s->busy_since_ns;
	memset(&s->pending, 0, sizeof(s->pending));
	pthread_mutex_unlock(&s->lock);
}

/*
 * Stop the thread: set stop, make the cancel fd readable (any poll ends at
 * once), and wait for it at most STORE_CLOSE_WAIT_NS. Only a connect, which
 * hiredis does not let us cancel, can take longer (at most the timeout per
 * address tried): then the thread is detached and frees the store itself.
 */
void store__close(struct store *s)
{
	const __u64 one = 1;
	struct timespec until;
	int done;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	if (write(s->cancel_fd, &one, sizeof(one)) != sizeof(one))
		pr_warn("cannot cancel the store thread of '%s': %s", s->cfg.url, strerror(errno));
	pthread_cond_broadcast(&s->wake);
	clock_gettime(CLOCK_MONOTONIC, &until);
	add_ns(&until, STORE_CLOSE_WAIT_NS);
	while (!s->done && pthread_cond_timedwait(&s->wake, &s->lock, &until) != ETIMEDOUT)
		;
	done = s->done;
	s->abandoned = !done;
	pthread_mutex_unlock(&s->lock);
	if (!done) {
		pr_warn("the store thread of '%s' did not stop within %llu ms; left to end alone",
			s->cfg.url,
			(unsigned long long)(STORE_CLOSE_WAIT_NS / SLUICE_NSEC_PER_MSEC));
		pthread_detach(s->thread);
		return;
	}
	pthread_join(s->thread, NULL);
	store_free(s);
}
