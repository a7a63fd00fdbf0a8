// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The agent's side of store faults: open the configured endpoints (store,
 * and store.abuse so abuse policies never share a failure domain with
 * shedding ones), feed each probe result to that endpoint's health machine
 * (agent/health.c), and write every cluster-scoped policy's resulting mode into
 * sluice_fail, logging and counting each transition. Node-scoped policies
 * never use the store, so a store fault does not touch them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice/gcra.h"
#include "agent/stores.h"
#include "budget/cluster.h"

#include "policy/compile.h"
#include "budget/planner.h"
#include "base/log.h"
#include "base/names.h"
#include "budget/store.h"

#define PASSWORD_ENV   "SLUICE_STORE_PASSWORD"
#define FAIL_UNWRITTEN 0xff /* fail_written[]: write it on the next tick */

/*
 * A password file is the agent's alone, as ssh requires of keys: owned by
 * its user, readable by nobody else.
 */
static int check_secret(const char *path, int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_uid == geteuid() && !(st.st_mode & (S_IRWXG | S_IRWXO)))
		return 0;
	pr_warn("refusing the store password file '%s': owned by uid %u with mode %04o; it must "
		"be owned by uid %u and readable by no one else (chmod 600)",
		path, (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777),
		(unsigned int)geteuid());
	return -EBADMSG; /* a setting to fix, not a privilege: cmd.h's EXIT_CONFIG */
}

/*
 * The password: the first line of password_file, else $SLUICE_STORE_PASSWORD.
 * One that does not fit @len is refused, never cut.
 */
static int read_secret(const struct policy_store *e, char *out, size_t len)
{
	const char *env = getenv(PASSWORD_ENV), *from = e->password_file;
	FILE *f;
	int err;

	out[0] = '\0';
	if (!e->password_file[0]) {
		from = "$" PASSWORD_ENV;
		if (env && snprintf(out, len, "%s", env) >= (int)len)
			goto too_long;
		return 0;
	}
	f = fopen(e->password_file, "re");
	if (!f) {
		pr_warn("cannot read the store password '%s': %s", e->password_file,
			strerror(errno));
		return -errno;
	}
	err = check_secret(e->password_file, fileno(f));
	if (!err && !fgets(out, len, f))
		out[0] = '\0';
	/* A full buffer without the line's end: more follows, unless the file ends. */
	if (!err && !strpbrk(out, "\r\n") && strlen(out) == len - 1) {
		int next = getc(f);

		if (next != EOF && next != '\n' && next != '\r')
			err = -ENAMETOOLONG;
	}
	fclose(f);
	if (err == -ENAMETOOLONG)
		goto too_long;
	if (err)
		return err;
	out[strcspn(out, "\r\n")] = '\0';
	return 0;
too_long:
	memset(out, 0, len);
	pr_warn("refusing the store password from %s: longer than %zu bytes", from, len - 1);
	return -EBADMSG;
}

/*
 * read_secret(), and a password for cluster:// only where the operator said
 * the network encrypts: it has no TLS, and AUTH goes to every node.
 */
static int read_password(const struct policy_store *e, char *out, size_t len)
{
	int err = read_secret(e, out, len);

	if (err || !out[0] ||
	    strncmp(e->url, CLUSTER_URL_SCHEME, strlen(CLUSTER_URL_SCHEME)) != 0 ||
	    e->cleartext_auth)
		return err;
	memset(out, 0, len);
	pr_warn("refusing the store password for '%s': cluster:// has no TLS, so AUTH would cross "
		"the network in cleartext to every node; on a network that encrypts (WireGuard, "
		"IPsec) set cleartext_auth: true beside it",
		e->url);
	return -EBADMSG; /* a setting to fix: cmd.h's EXIT_CONFIG */
}

/* The endpoint the file gives a policy, or -1 when it depends on none. */
static int endpoint_of(const struct policy_set *ps, const struct policy *p)
{
	if (p->scope != SLUICE_SCOPE_CLUSTER)
		return -1;
	if (p->class == SLUICE_CLASS_ABUSE && ps->abuse_store.url[0])
		return AGENT_STORE_ABUSE;
	return ps->store.url[0] ? AGENT_STORE_MAIN : -1;
}

/* The open endpoint a policy depends on, or -1 when it depends on none. */
static int store_of(const struct agent_stores *s, const struct policy *p)
{
	int k = endpoint_of(s->v.ps, p);

	return k >= 0 && s->store[k] ? k : -1;
}

/*
 * @p's limit as the lease script counts it: rate_units per rate_period_us,
 * and as the kernel does (its tolerance). 0, or -ERANGE when the period is
 * not a whole number of microseconds.
 */
static int lease_rate_of(const struct policy *p, struct lease_policy *out)
{
	struct sluice_gcra g;
	char err[STORE_ERR_LEN];

	if (p->rate.period_ns % SLUICE_NSEC_PER_USEC ||
	    compile_gcra(&p->rate, p->burst, &g, err, sizeof(err)))
		return -ERANGE;
	out->tolerance = g.tolerance;
	out->rate_units = p->rate.amount;
	out->rate_period_us = p->rate.period_ns / SLUICE_NSEC_PER_USEC;
	out->burst = p->burst;
	out->strict = p->cold_strict;
	out->fault_closed = p->on_store_error == SLUICE_FAIL_CLOSED;
	return 0;
}

/*
 * What the store thread of endpoint @k needs for leases: per interface, its
 * maps and the ids of the cluster-scoped policies that use @k. NULL with
 * errno on failure.
 */
static struct lease_plan *plan_of(struct agent_stores *s, enum agent_store k)
{
	struct lease_plan *plan = calloc(1, sizeof(*plan));
	const struct sluice_maps *m;
	struct lease_att *la;
	size_t i, j;

	if (!plan)
		return NULL;
	snprintf(plan->prefix, sizeof(plan->prefix), "%s", s->v.ps->fleet);
	plan->interval_ns = s->v.ps->sync_interval_ns;
	plan->rate_leases = 1;
	plan->att = calloc(s->v.n_att ? s->v.n_att : 1, sizeof(*plan->att));
	if (!plan->att)
		goto oom;
	for (i = 0; i < s->v.n_att; i++) {
		la = &plan->att[plan->n_att++];
		m = &s->v.att[i].maps;
		snprintf(la->holder, sizeof(la->holder), "%s/%s", s->node_name, s->v.att[i].iface);
		la->maps.lease = m->fd[SLUICE_MAP_LEASE];
		la->maps.spend = m->fd[SLUICE_MAP_SPEND];
		la->maps.hot = m->fd[SLUICE_MAP_HOT];
		la->pol = calloc(s->v.ps->n_policies + 1, sizeof(*la->pol));
		if (!la->pol)
			goto oom;
		for (j = 0; j < s->v.ps->n_policies; j++) {
			const struct policy *p = &s->v.ps->policies[j];
			struct lease_policy *lp = &la->pol[la->n_pol];

			if (endpoint_of(s->v.ps, p) != (int)k ||
			    s->v.ids[i][j] == AGENT_POLICY_ABSENT)
				continue;
			if (lease_rate_of(p, lp)) {
				pr_warn("policy '%s': its rate period is not whole microseconds; "
					"its keys stay at the share",
					p->name);
				continue;
			}
			lp->id = s->v.ids[i][j];
			snprintf(lp->name, sizeof(lp->name), "%s", p->name);
			lease_policy_tags(lp);
			la->n_pol++;
		}
	}
	return plan;
oom:
	lease_plan__free(plan);
	errno = ENOMEM;
	return NULL;
}

int agent_stores__check_secrets(const struct policy_set *ps)
{
	const struct policy_store *ends[] = { &ps->store, &ps->abuse_store };
	char password[sizeof(((struct store_config *)NULL)->password)];
	size_t i;
	int err = 0;

	for (i = 0; !err && i < ARRAY_SIZE(ends); i++)
		if (ends[i]->url[0])
			err = read_password(ends[i], password, sizeof(password));
	memset(password, 0, sizeof(password));
	return err;
}

static int open_endpoint(struct agent_stores *s, enum agent_store k, const struct policy_store *e)
{
	struct metrics_store *m;
	struct store_config cfg = {
		.timeout_ns = e->timeout_ns,
		.interval_ns = s->v.ps->sync_interval_ns,
	};
	int err;

	snprintf(cfg.url, sizeof(cfg.url), "%s", e->url);
	snprintf(cfg.username, sizeof(cfg.username), "%s", e->username);
	snprintf(cfg.node, sizeof(cfg.node), "%s", s->node_name);
	snprintf(cfg.fleet, sizeof(cfg.fleet), "%s:nodes", s->v.ps->fleet);
	err = read_password(e, cfg.password, sizeof(cfg.password));
	if (err)
		return err;
	cfg.plan = plan_of(s, k);
	if (!cfg.plan)
		return -errno;
	s->store[k] = store__open(&cfg); /* takes the plan, also when it fails */
	s->rounds_seen[k] = s->leases_seen[k] = s->map_errors_seen[k] = s->shards_seen[k] = 0;
	s->transitions_seen[k] = 0;
	memset(cfg.password, 0, sizeof(cfg.password));
	if (!s->store[k]) {
		pr_warn("cannot start the store client for '%s': %s", e->url, strerror(errno));
		return -errno;
	}
	store_health__init(&s->health[k], s->v.ps->hold_down_ns, mono_ns());
	pthread_mutex_lock(&s->v.snap->lock);
	m = &s->v.snap->stores[k];
	if (strcmp(m->url, e->url) != 0) { /* the same store after a reload keeps its counters */
		memset(m, 0, sizeof(*m));
		snprintf(m->url, sizeof(m->url), "%s", e->url);
	}
	m->up = 1;
	pthread_mutex_unlock(&s->v.snap->lock);
	log_event(LOG_INFO, "store_open", "store=%s class=%s", e->url,
		  k == AGENT_STORE_ABUSE ? "abuse" : "all");
	return 0;
}

static void name_node(struct agent_stores *s)
{
	if (s->v.ps->node_name[0])
		snprintf(s->node_name, sizeof(s->node_name), "%s", s->v.ps->node_name);
	else if (gethostname(s->node_name, sizeof(s->node_name) - 1))
		snprintf(s->node_name, sizeof(s->node_name), "node-%d", (int)getpid());
}

int agent_stores__open(struct agent_stores *s, const struct stores_view *v)
{
	size_t j;
	int err = 0;

	s->v = *v;
	memset(s->fail_written, FAIL_UNWRITTEN, sizeof(s->fail_written));
	memset(s->share_written, 0, sizeof(s->share_written));
	name_node(s);
	for (j = 0; j < s->v.ps->n_policies; j++)
		s->max_share[j] = compile_share_max(&s->v.ps->policies[j]);

	if (s->v.ps->store.url[0])
		err = open_endpoint(s, AGENT_STORE_MAIN, &s->v.ps->store);
	if (!err && s->v.ps->abuse_store.url[0])
		err = open_endpoint(s, AGENT_STORE_ABUSE, &s->v.ps->abuse_store);
	return err;
}

void agent_stores__close(struct agent_stores *s)
{
	int k;

	for (k = 0; k < AGENT_STORE_MAX; k++) {
		store__close(s->store[k]);
		s->store[k] = NULL;
	}
}

/*
 * A sync under way for longer than it can take (each round trip ends
 * within the timeout, and one is due every interval) is a store fault: the
 * thread is stuck, whatever the cause. Seen at the next tick, so within
 * timeout + interval + AGENT_TICK_NS of the sync's start.
 */
static int is_stalled(const struct agent_stores *s, enum agent_store k,
		      const struct store_report *r, __u64 now)
{
	const struct policy_store *e =
		k == AGENT_STORE_ABUSE ? &s->v.ps->abuse_store : &s->v.ps->store;

	/*
	 * A round on a cluster is a pipeline per primary, each with its own
	 * deadline: it may take one timeout per primary, and one more for the
	 * slot map.
	 */
	__u64 trips = s->shards_seen[k] ? 1 + s->shards_seen[k] : 1;

	/* The thread may have begun after @now was read: that is no stall. */
	return r->busy_since_ns && now > r->busy_since_ns &&
	       now - r->busy_since_ns > trips * e->timeout_ns + s->v.ps->sync_interval_ns;
}

/* A cluster store's primaries, as its report lists them, into the snapshot @m. */
static void note_shards(struct metrics_store *m, const struct store_report *r)
{
	size_t i;

	m->n_shards = r->n_shards < CLUSTER_NODES_MAX ? r->n_shards : CLUSTER_NODES_MAX;
	for (i = 0; i < m->n_shards; i++) {
		snprintf(m->shards[i].addr, sizeof(m->shards[i].addr), "%s", r->shards[i].addr);
		m->shards[i].ok = r->shards[i].ok;
		m->shards[i].failed = r->shards[i].failed;
		m->shards[i].down = r->shards[i].down;
	}
}

/* Feed what endpoint @k saw since the last tick into its health machine. */
static void observe(struct agent_stores *s, enum agent_store k, __u64 now)
{
	struct store_health *h = &s->health[k];
	enum store_state was = h->state;
	struct store_report r;

	store__collect(s->store[k], &r);
	if (is_stalled(s, k, &r, now)) {
		r.failed++;
		snprintf(r.err, sizeof(r.err), "no answer for %llu ms: the store thread is stuck",
			 (unsigned long long)((now - r.busy_since_ns) / SLUICE_NSEC_PER_MSEC));
	}
	if (r.rounds && r.map_errors > s->map_errors_seen[k])
		pr_warn("%llu lease map writes failed; those keys keep their old leases",
			(unsigned long long)(r.map_errors - s->map_errors_seen[k]));
	if (r.rounds)
		s->map_errors_seen[k] = r.map_errors;
	if (r.live_nodes && r.live_nodes != s->live_nodes[k])
		log_event(LOG_INFO, "fleet", "store=%s node=%s live_nodes=%llu",
			  k == AGENT_STORE_ABUSE ? s->v.ps->abuse_store.url : s->v.ps->store.url,
			  s->node_name, (unsigned long long)r.live_nodes);
	if (r.live_nodes) /* kept through faults: the degraded bound uses the last count */
		s->live_nodes[k] = r.live_nodes;
	if (r.failed)
		store_health__observe(h, 0, now);
	if (r.ok && r.last_ok)
		store_health__observe(h, 1, now);
	pthread_mutex_lock(&s->v.snap->lock);
	s->v.snap->stores[k].up = h->state == STORE_OK;
	s->v.snap->stores[k].probes_ok += r.ok;
	s->v.snap->stores[k].probes_failed += r.failed;
	if (r.rounds) { /* the thread's own totals: add what is new */
		s->v.snap->stores[k].syncs += r.rounds - s->rounds_seen[k];
		s->v.snap->stores[k].lease_calls += r.leases - s->leases_seen[k];
		s->v.snap->stores[k].hot_keys = r.hot_keys;
		s->rounds_seen[k] = r.rounds;
		s->leases_seen[k] = r.leases;
	}
	if (r.n_shards) /* the thread's own totals, sent after each sync of a cluster store */
		note_shards(&s->v.snap->stores[k], &r);
	if (r.n_shards)
		s->shards_seen[k] = r.n_shards;
	s->v.snap->stores[k].transitions += h->transitions - s->transitions_seen[k];
	s->transitions_seen[k] = h->transitions;
	pthread_mutex_unlock(&s->v.snap->lock);
	if (h->state != was)
		log_event(LOG_WARN, "store_state", "store=%s from=%s to=%s err=\"%s\"",
			  k == AGENT_STORE_ABUSE ? s->v.ps->abuse_store.url : s->v.ps->store.url,
			  was == STORE_OK ? "ok" : "fault", h->state == STORE_OK ? "ok" : "fault",
			  h->state == STORE_OK ? "" : r.err);
}

/* Log and count one store fail-mode transition of policy @j on attachment @i. */
static void note_transition(struct agent_stores *s, size_t i, size_t j, __u8 was, int mode)
{
	if (was == FAIL_UNWRITTEN && mode == SLUICE_FAIL_NONE)
		return; /* the initial write of a healthy state is no transition */
	pthread_mutex_lock(&s->v.snap->lock);
	s->v.snap->fail_transitions++;
	pthread_mutex_unlock(&s->v.snap->lock);
	log_event(LOG_WARN, "fail_mode", "policy=%s iface=%s from=%s to=%s why=store_error",
		  s->v.ps->policies[j].name, s->v.att[i].iface,
		  sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, was), sluice_fail_names[mode]);
}

/*
 * Write policy @j of attachment @i's runtime state — its store fail mode and
 * its share of the fleet — when either changed.
 */
static void write_runtime(struct agent_stores *s, size_t i, size_t j, int k, __u64 now)
{
	const struct policy *p = &s->v.ps->policies[j];
	struct sluice_fail_state st = { 0 };
	__u64 since, nodes = s->live_nodes[k] ? s->live_nodes[k] : 1;
	int mode = store_fail_mode(p, &s->health[k], now, &since), err;
	__u32 share = nodes < s->max_share[j] ? nodes : s->max_share[j];
	__u8 was = s->fail_written[i][j];

	if ((mode == was && share == s->share_written[i][j]) ||
	    s->v.ids[i][j] == AGENT_POLICY_ABSENT)
		return;
	st.mode = mode;
	st.since_ns = since;
	st.share = share;
	err = maps__write_fail(&s->v.att[i].maps, s->v.ids[i][j], &st);
	if (err) {
		pr_warn("cannot set the runtime state of '%s' on '%s': %s", p->name,
			s->v.att[i].iface, strerror(-err));
		return;
	}
	s->fail_written[i][j] = mode;
	s->share_written[i][j] = share;
	if (mode != was)
		note_transition(s, i, j, was, mode);
}

void agent_stores__tick(struct agent_stores *s, __u64 now_ns)
{
	size_t i, j;
	int k;

	for (k = 0; k < AGENT_STORE_MAX; k++)
		if (s->store[k])
			observe(s, k, now_ns);
	for (i = 0; i < s->v.n_att; i++) {
		for (j = 0; j < s->v.ps->n_policies; j++) {
			k = store_of(s, &s->v.ps->policies[j]);
			if (k >= 0)
				write_runtime(s, i, j, k, now_ns);
		}
	}
}
