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
 */
#include <errno.h>
#include <hiredis.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice/compiler.h"
#include "budget/planner.h"
#include "budget/store.h"

#define URL_REDIS	   "redis://"
#define URL_UNIX	   "unix://"
#define URL_SENTINEL	   "sentinel://"
#define ROLE_MASTER	   "master" /* ROLE's first word on a master */
#define REDIS_PORT_DEFAULT 6379

struct store {
	struct store_config cfg;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stop;		     /* under lock */
	struct store_report pending; /* under lock */
	redisContext *ctx;	     /* the thread's own */
	struct lease_scripts sc;     /* the thread's own: loaded script hashes */
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

/* @c, connected to @what, with the timeout set; else NULL with @err and @c freed. */
static redisContext *ready(redisContext *c, const char *what, struct timeval tv, char *err,
			   size_t len)
{
	if (!c || c->err) {
		snprintf(err, len, "cannot connect to '%s': %s", what, c ? c->errstr : "no memory");
		redisFree(c);
		return NULL;
	}
	if (redisSetTimeout(c, tv) != REDIS_OK) {
		snprintf(err, len, "cannot set a timeout on '%s'", what);
		redisFree(c);
		return NULL;
	}
	return c;
}

const char *store_reply_error(const char *conn_err, const redisReply *r)
{
	if (!r)
		return conn_err;
	return r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply";
}

/* One command on @c (@what in errors) that must answer @want; 0 or -1 with @err. */
static int command(redisContext *c, const char *what, const char *want, char *err, size_t len,
		   const char *fmt, ...)
{
	redisReply *r;
	va_list ap;
	int ok;

	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	ok = r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) &&
	     !strcmp(r->str, want);

	if (!ok)
		snprintf(err, len, "'%s' on '%s': %s", fmt, what, store_reply_error(c->errstr, r));
	if (r)
		freeReplyObject(r);
	return ok ? 0 : -1;
}

/* Whether @r answers get-master-addr-by-name: [host, port]. */
static int is_master_addr(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	       r->element[0]->type == REDIS_REPLY_STRING &&
	       r->element[1]->type == REDIS_REPLY_STRING;
}

/* AUTH [username] password on @c (called @who in errors), when a password is set. */
static int auth(redisContext *c, const struct store_config *cfg, const char *who, char *err,
		size_t len)
{
	if (!cfg->password[0])
		return 0;
	if (cfg->username[0])
		return command(c, who, "OK", err, len, "AUTH %s %s", cfg->username, cfg->password);
	return command(c, who, "OK", err, len, "AUTH %s", cfg->password);
}

/*
 * Ask the sentinel at @addr where master @name is, with the store's timeout
 * and password (sentinels and Redis share it): "host:port" into @out.
 * 0, or -1 with the cause in @err.
 */
static int ask_sentinel(const struct store_config *cfg, const char *addr, const char *name,
			char *out, size_t out_len, char *err, size_t len)
{
	struct timeval tv = tv_of(cfg->timeout_ns);
	redisContext *c = ready(connect_tcp(addr, tv), addr, tv, err, len);
	redisReply *r = NULL;
	int ret = -1;

	if (!c)
		return -1;
	if (auth(c, cfg, addr, err, len))
		goto out;
	r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", name);
	if (is_master_addr(r) &&
	    snprintf(out, out_len, "%s:%s", r->element[0]->str, r->element[1]->str) < (int)out_len)
		ret = 0;
	else
		snprintf(err, len, "sentinel '%s' on master '%s': %s", addr, name,
			 r && r->type == REDIS_REPLY_NIL ? "unknown master"
							 : store_reply_error(c->errstr, r));
	if (r)
		freeReplyObject(r);
out:
	redisFree(c);
	return ret;
}

/*
 * The master's "host:port" per the first of the URL's sentinels that knows
 * it, asked in order; 0, or -1 with the last sentinel's cause in @err.
 */
static int find_master(const struct store_config *cfg, char *out, size_t out_len, char *err,
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
static redisContext *connect_url(const struct store_config *cfg, char *err, size_t len)
{
	struct timeval tv = tv_of(cfg->timeout_ns);
	char master[STORE_URL_LEN];

	if (has_scheme(cfg->url, URL_UNIX))
		return ready(redisConnectUnixWithTimeout(cfg->url + strlen(URL_UNIX), tv), cfg->url,
			     tv, err, len);
	if (has_scheme(cfg->url, URL_REDIS))
		return ready(connect_tcp(cfg->url + strlen(URL_REDIS), tv), cfg->url, tv, err, len);
	if (has_scheme(cfg->url, URL_SENTINEL)) {
		if (find_master(cfg, master, sizeof(master), err, len))
			return NULL;
		return ready(connect_tcp(master, tv), master, tv, err, len);
	}
	snprintf(err, len, "unsupported store URL '%s'", cfg->url);
	return NULL;
}

/*
 * Whether @c is a master (ROLE). A sentinel may still name a master that
 * has been demoted, or one that came back as a replica before the sentinels
 * noticed: writing there fails, so the probe fails and asks again.
 */
static int check_master(redisContext *c, const char *what, char *err, size_t len)
{
	redisReply *r = redisCommand(c, "ROLE");
	const char *role = r && r->type == REDIS_REPLY_ARRAY && r->elements &&
					   r->element[0]->type == REDIS_REPLY_STRING
				   ? r->element[0]->str
				   : NULL;
	int ok = role && !strcmp(role, ROLE_MASTER);

	if (role && !ok)
		snprintf(err, len, "'ROLE' on '%s': '%s', not a master", what, role);
	else if (!ok)
		snprintf(err, len, "'ROLE' on '%s': %s", what, store_reply_error(c->errstr, r));
	if (r)
		freeReplyObject(r);
	return ok ? 0 : -1;
}

/* A fresh connection, logged in (AUTH when configured) and, via sentinel, to a master. */
static redisContext *open_ctx(const struct store_config *cfg, char *err, size_t len)
{
	redisContext *c = connect_url(cfg, err, len);

	if (!c)
		return NULL;
	if (auth(c, cfg, cfg->url, err, len) ||
	    (has_scheme(cfg->url, URL_SENTINEL) && check_master(c, cfg->url, err, len))) {
		redisFree(c);
		return NULL;
	}
	return c;
}

/*
 * One sync. Full, once per interval: with a node name, this node's
 * membership beat (which answers the live node count), the hot sets and
 * every lease, in one round trip; else PING. Between full syncs, early
 * top-ups of leases running low (usually nothing to send). 0, or -1 with
 * the cause in @err; a failure drops the connection, so the next sync
 * reconnects.
 */
static int sync_once(struct store *s, int full, __u64 *live, char *err, size_t len)
{
	__u64 ttl_us = STORE_MEMBER_BEATS * s->cfg.interval_ns / SLUICE_NSEC_PER_USEC;
	struct lease_stats st;
	int ret;

	*live = 0;
	if (!s->ctx) {
		if (!full)
			return 0; /* reconnecting is the full sync's job */
		s->ctx = open_ctx(&s->cfg, err, len);
		if (!s->ctx)
			return -1;
	}
	if (s->cfg.node[0])
		ret = lease_round(s->lease, s->ctx, &s->sc, s->cfg.fleet, s->cfg.node, ttl_us, full,
				  live, err, len);
	else
		ret = full ? command(s->ctx, s->cfg.url, "PONG", err, len, "PING") : 0;
	lease_state__stats(s->lease, &st);
	pthread_mutex_lock(&s->lock);
	s->pending.rounds = st.rounds;
	s->pending.leases = st.leases;
	s->pending.hot_keys = st.hot_keys;
	pthread_mutex_unlock(&s->lock);
	if (!ret)
		return 0;
	redisFree(s->ctx);
	s->ctx = NULL;
	return -1;
}

static void add_ns(struct timespec *t, __u64 ns)
{
	t->tv_nsec += ns % SLUICE_NSEC_PER_SEC;
	t->tv_sec += ns / SLUICE_NSEC_PER_SEC + t->tv_nsec / SLUICE_NSEC_PER_SEC;
	t->tv_nsec %= SLUICE_NSEC_PER_SEC;
}

/*
 * Full syncs every interval; between them, LEASE_EARLY_DIV - 1 chances for
 * early top-ups. Only full syncs are probes of the store's health.
 */
static void *run(void *arg)
{
	struct store *s = arg;
	char err[STORE_ERR_LEN];
	struct timespec until;
	unsigned int tick = 0;
	__u64 live;
	int ok, full;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		full = tick++ % LEASE_EARLY_DIV == 0;
		pthread_mutex_unlock(&s->lock);
		ok = !sync_once(s, full, &live, err, sizeof(err));
		pthread_mutex_lock(&s->lock);
		if (live)
			s->pending.live_nodes = live;
		if (full && ok)
			s->pending.ok++;
		else if (full)
			s->pending.failed++;
		if (full)
			s->pending.last_ok = ok;
		if (full && !ok)
			snprintf(s->pending.err, sizeof(s->pending.err), "%s", err);
		clock_gettime(CLOCK_REALTIME, &until);
		add_ns(&until, s->cfg.interval_ns / LEASE_EARLY_DIV);
		while (!s->stop && pthread_cond_timedwait(&s->wake, &s->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&s->lock);
	redisFree(s->ctx);
	return NULL;
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
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	err = pthread_create(&s->thread, NULL, run, s);
	if (err) {
		pthread_cond_destroy(&s->wake);
		pthread_mutex_destroy(&s->lock);
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
	memset(&s->pending, 0, sizeof(s->pending));
	pthread_mutex_unlock(&s->lock);
}

void store__close(struct store *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	lease_state__free(s->lease);
	free(s);
}
