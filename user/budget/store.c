// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The store's thread: every interval a full sync (a lease round of the
 * planner, or a probe without a node), and between them early top-ups,
 * all through the backend the URL names (budget/backends.h). A sync that
 * fails drops the backend's connection, so the next full sync reconnects.
 *
 * The store never blocks the agent (#12). Every round trip is bounded in
 * time and size (the Redis backend's budget/wire.h), store__close() cancels
 * any wait at once through an eventfd, and a thread that still does not
 * end in STORE_CLOSE_WAIT_NS is abandoned: it frees its own state when it
 * ends. The agent's tick sees a sync that has been under way too long
 * (store_report.busy_since_ns) and counts it as a fault. Every wait is on
 * CLOCK_MONOTONIC, so a step of the wall clock changes nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice/compiler.h"
#include "budget/backends.h"
#include "budget/planner.h"
#include "budget/store.h"
#include "base/log.h"

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
	struct budget_backend *be;   /* the thread's own */
	struct lease_state *lease;   /* the thread's own */
};

/* The backend's shard totals into the pending report; under s->lock. */
static void note_shards(struct store *s)
{
	struct backend_report r;

	s->be->ops->report(s->be, &r);
	if (!r.n_shards)
		return;
	s->pending.n_shards = r.n_shards;
	s->pending.map_refreshes = r.map_refreshes;
	memcpy(s->pending.shards, r.shards, sizeof(r.shards));
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
	struct lease_stats st;
	int ret;

	*live = 0;
	if (!s->be->ops->is_connected(s->be)) {
		if (!full)
			return 0; /* reconnecting is the full sync's job */
		if (s->be->ops->connect(s->be, err, len))
			return -EIO;
	}
	if (s->cfg.node[0])
		ret = lease_round(s->lease, s->be, s->cfg.fleet, s->cfg.node, ttl_us, full, live,
				  err, len);
	else
		ret = full ? s->be->ops->probe(s->be, err, len) : 0;
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
	s->be->ops->drop(s->be);
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
	backend__free(s->be);
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

/* The backend @s->cfg names, not yet connected; 0 or an error number. */
static int open_backend(struct store *s)
{
	struct backend_config bc = { .timeout_ns = s->cfg.timeout_ns, .cancel_fd = s->cancel_fd };

	snprintf(bc.url, sizeof(bc.url), "%s", s->cfg.url);
	snprintf(bc.username, sizeof(bc.username), "%s", s->cfg.username);
	snprintf(bc.password, sizeof(bc.password), "%s", s->cfg.password);
	s->be = backends__open(&bc);
	explicit_bzero(bc.password, sizeof(bc.password));
	return s->be ? 0 : errno;
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
	if (!err)
		err = open_backend(s);
	if (!err)
		err = pthread_create(&s->thread, NULL, run, s);
	if (err) {
		backend__free(s->be);
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
 * the Redis backend (hiredis) cannot cancel, can take longer (at most the timeout per
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
