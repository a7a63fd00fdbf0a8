// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Redis, through hiredis, on a thread of its own. For now the store is
 * probed (AUTH when configured, then PING) every interval; the shared
 * budget (#5) will use the same connection. A probe that errs, times out or
 * answers anything but PONG is a failure, and drops the connection so the
 * next probe reconnects: a paused Redis (SIGSTOP) accepts connections but
 * never answers, which only the timeout catches.
 */
#include <errno.h>
#include <hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice/compiler.h"
#include "store.h"

#define URL_REDIS	   "redis://"
#define URL_UNIX	   "unix://"
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
};

static struct timeval tv_of(__u64 ns)
{
	return (struct timeval){ .tv_sec = ns / SLUICE_NSEC_PER_SEC,
				 .tv_usec = ns % SLUICE_NSEC_PER_SEC / SLUICE_NSEC_PER_USEC };
}

/* Connect per the URL; NULL with a cause in @err. */
static redisContext *connect_url(const struct store_config *cfg, char *err, size_t len)
{
	struct timeval tv = tv_of(cfg->timeout_ns);
	char host[STORE_URL_LEN];
	redisContext *c = NULL;
	const char *colon;
	int port = REDIS_PORT_DEFAULT;

	if (!strncmp(cfg->url, URL_UNIX, strlen(URL_UNIX))) {
		c = redisConnectUnixWithTimeout(cfg->url + strlen(URL_UNIX), tv);
	} else if (!strncmp(cfg->url, URL_REDIS, strlen(URL_REDIS))) {
		snprintf(host, sizeof(host), "%s", cfg->url + strlen(URL_REDIS));
		colon = strrchr(host, ':');
		if (colon && !strchr(colon, ']')) {
			port = atoi(colon + 1);
			host[colon - host] = '\0';
		}
		c = redisConnectWithTimeout(host, port, tv);
	} else {
		snprintf(err, len, "unsupported store URL '%s'", cfg->url);
		return NULL;
	}
	if (!c || c->err) {
		snprintf(err, len, "cannot connect to '%s': %s", cfg->url,
			 c ? c->errstr : "no memory");
		redisFree(c);
		return NULL;
	}
	if (redisSetTimeout(c, tv) != REDIS_OK) {
		snprintf(err, len, "cannot set a timeout on '%s'", cfg->url);
		redisFree(c);
		return NULL;
	}
	return c;
}

/* One command that must answer @want (a status or string); 0 or -1 with @err. */
static int command(struct store *s, const char *want, char *err, size_t len, const char *fmt,
		   const char *arg)
{
	redisReply *r = arg ? redisCommand(s->ctx, fmt, arg) : redisCommand(s->ctx, fmt);
	int ok = r && (r->type == REDIS_REPLY_STATUS || r->type == REDIS_REPLY_STRING) &&
		 !strcmp(r->str, want);

	if (!ok)
		snprintf(err, len, "'%s' on '%s': %s", fmt, s->cfg.url,
			 !r				? s->ctx->errstr
			 : r->type == REDIS_REPLY_ERROR ? r->str
							: "unexpected reply");
	if (r)
		freeReplyObject(r);
	return ok ? 0 : -1;
}

/*
 * One probe: with a node name, this node's membership beat (which answers
 * the live node count), else PING. 0, or -1 with the cause in @err.
 */
static int probe(struct store *s, __u64 *live, char *err, size_t len)
{
	__u64 ttl_us = STORE_MEMBER_BEATS * s->cfg.interval_ns / SLUICE_NSEC_PER_USEC;

	*live = 0;
	if (!s->ctx) {
		s->ctx = connect_url(&s->cfg, err, len);
		if (!s->ctx)
			return -1;
		if (s->cfg.password[0] && command(s, "OK", err, len, "AUTH %s", s->cfg.password))
			goto drop;
	}
	if (s->cfg.node[0] ? !store_member_beat(s->ctx, &s->sc, s->cfg.fleet, s->cfg.node, ttl_us,
						live, err, len)
			   : !command(s, "PONG", err, len, "PING", NULL))
		return 0;
drop:
	redisFree(s->ctx);
	s->ctx = NULL;
	return -1;
}

static void *run(void *arg)
{
	struct store *s = arg;
	char err[STORE_ERR_LEN];
	struct timespec until;
	__u64 live;
	int ok;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		pthread_mutex_unlock(&s->lock);
		ok = !probe(s, &live, err, sizeof(err));
		pthread_mutex_lock(&s->lock);
		if (live)
			s->pending.live_nodes = live;
		if (ok)
			s->pending.ok++;
		else
			s->pending.failed++;
		s->pending.last_ok = ok;
		if (!ok)
			snprintf(s->pending.err, sizeof(s->pending.err), "%s", err);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += s->cfg.interval_ns % SLUICE_NSEC_PER_SEC;
		until.tv_sec += s->cfg.interval_ns / SLUICE_NSEC_PER_SEC +
				until.tv_nsec / SLUICE_NSEC_PER_SEC;
		until.tv_nsec %= SLUICE_NSEC_PER_SEC;
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

	if (!s)
		return NULL;
	s->cfg = *cfg;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	err = pthread_create(&s->thread, NULL, run, s);
	if (err) {
		pthread_cond_destroy(&s->wake);
		pthread_mutex_destroy(&s->lock);
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
	free(s);
}
