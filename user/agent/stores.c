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
#include <unistd.h>

#include "sluice/gcra.h"
#include "agent/agent.h"
#include "policy/compile.h"
#include "budget/planner.h"
#include "base/log.h"
#include "base/names.h"
#include "budget/store.h"

#define PASSWORD_ENV	      "SLUICE_STORE_PASSWORD"
#define AGENT_MIN_FRAME_BYTES 64    /* the smallest Ethernet frame, no FCS */
#define AGENT_SHARE_MAX	      65535 /* more nodes than this share as if this many */

/* The password: the first line of password_file, else $SLUICE_STORE_PASSWORD. */
static int read_password(const struct policy_store *e, char *out, size_t len)
{
	const char *env = getenv(PASSWORD_ENV);
	FILE *f;

	out[0] = '\0';
	if (!e->password_file[0]) {
		if (env)
			snprintf(out, len, "%s", env);
		return 0;
	}
	f = fopen(e->password_file, "r");
	if (!f) {
		pr_warn("cannot read the store password '%s': %s", e->password_file,
			strerror(errno));
		return -errno;
	}
	if (!fgets(out, len, f))
		out[0] = '\0';
	out[strcspn(out, "\r\n")] = '\0';
	fclose(f);
	return 0;
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
static int store_of(const struct agent *a, const struct policy *p)
{
	int k = endpoint_of(a->ps, p);

	return k >= 0 && a->stores[k] ? k : -1;
}

/*
 * @p's limit as the lease script counts it: rate_units per rate_period_us.
 * 0, or -ERANGE when the period is not a whole number of microseconds.
 */
static int lease_rate_of(const struct policy *p, struct lease_policy *out)
{
	if (p->rate.period_ns % SLUICE_NSEC_PER_USEC)
		return -ERANGE;
	out->rate_units = p->rate.amount;
	out->rate_period_us = p->rate.period_ns / SLUICE_NSEC_PER_USEC;
	out->burst = p->burst;
	out->strict = p->cold_strict;
	return 0;
}

/*
 * What the store thread of endpoint @k needs for leases: per interface, its
 * maps and the ids of the cluster-scoped policies that use @k. NULL with
 * errno on failure.
 */
static struct lease_plan *plan_of(struct agent *a, enum agent_store k)
{
	struct lease_plan *plan = calloc(1, sizeof(*plan));
	const struct sluice_maps *m;
	struct lease_att *la;
	size_t i, j;

	if (!plan)
		return NULL;
	snprintf(plan->prefix, sizeof(plan->prefix), "%s", a->ps->fleet);
	plan->interval_ns = a->ps->sync_interval_ns;
	plan->att = calloc(a->n_att ? a->n_att : 1, sizeof(*plan->att));
	if (!plan->att)
		goto oom;
	for (i = 0; i < a->n_att; i++) {
		la = &plan->att[plan->n_att++];
		m = &a->att[i].maps;
		snprintf(la->holder, sizeof(la->holder), "%s/%s", a->node_name, a->att[i].iface);
		la->fd_lease = m->fd[SLUICE_MAP_LEASE];
		la->fd_spend = m->fd[SLUICE_MAP_SPEND];
		la->fd_hot = m->fd[SLUICE_MAP_HOT];
		la->pol = calloc(a->ps->n_policies + 1, sizeof(*la->pol));
		if (!la->pol)
			goto oom;
		for (j = 0; j < a->ps->n_policies; j++) {
			const struct policy *p = &a->ps->policies[j];
			struct lease_policy *lp = &la->pol[la->n_pol];

			if (endpoint_of(a->ps, p) != (int)k || a->ids[i][j] == AGENT_POLICY_ABSENT)
				continue;
			if (lease_rate_of(p, lp)) {
				pr_warn("policy '%s': its rate period is not whole microseconds; "
					"its keys stay at the share",
					p->name);
				continue;
			}
			lp->id = a->ids[i][j];
			snprintf(lp->name, sizeof(lp->name), "%s", p->name);
			la->n_pol++;
		}
	}
	return plan;
oom:
	lease_plan__free(plan);
	errno = ENOMEM;
	return NULL;
}

static int open_endpoint(struct agent *a, enum agent_store k, const struct policy_store *e)
{
	struct store_config cfg = {
		.timeout_ns = e->timeout_ns,
		.interval_ns = a->ps->sync_interval_ns,
	};
	int err;

	snprintf(cfg.url, sizeof(cfg.url), "%s", e->url);
	snprintf(cfg.node, sizeof(cfg.node), "%s", a->node_name);
	snprintf(cfg.fleet, sizeof(cfg.fleet), "%s:nodes", a->ps->fleet);
	err = read_password(e, cfg.password, sizeof(cfg.password));
	if (err)
		return err;
	cfg.plan = plan_of(a, k);
	if (!cfg.plan)
		return -errno;
	a->stores[k] = store__open(&cfg); /* takes the plan, also when it fails */
	a->rounds_seen[k] = a->leases_seen[k] = 0;
	memset(cfg.password, 0, sizeof(cfg.password));
	if (!a->stores[k]) {
		pr_warn("cannot start the store client for '%s': %s", e->url, strerror(errno));
		return -errno;
	}
	store_health__init(&a->health[k], a->ps->hold_down_ns, agent_now_ns());
	pthread_mutex_lock(&a->snap.lock);
	memset(&a->snap.stores[k], 0, sizeof(a->snap.stores[k]));
	snprintf(a->snap.stores[k].url, sizeof(a->snap.stores[k].url), "%s", e->url);
	a->snap.stores[k].up = 1;
	pthread_mutex_unlock(&a->snap.lock);
	log_event(LOG_INFO, "store_open", "store=%s class=%s", e->url,
		  k == AGENT_STORE_ABUSE ? "abuse" : "all");
	return 0;
}

/*
 * The largest share policy @p may be split into: increment × share must
 * stay within SLUICE_GCRA_INCR_MAX (gcra.h), and within the tolerance for
 * one packet (or minimum frame), or the key could never admit anything.
 * Past that the fleet admits up to nodes / share times the limit (a cold
 * key's known cost, docs/shared-budget.md).
 */
static __u32 max_share_of(const struct policy *p)
{
	__u64 cost_max = p->rate.cost == SLUICE_COST_BYTES ? SLUICE_COST_BYTES_MAX : 1;
	__u64 cost_min = p->rate.cost == SLUICE_COST_BYTES ? AGENT_MIN_FRAME_BYTES : 1;
	__u64 by_range, by_burst;
	struct sluice_gcra g;
	char err[DIAG_MSG_LEN];

	if (compile_gcra(&p->rate, p->burst, &g, err, sizeof(err)))
		return 1;
	by_range = SLUICE_GCRA_INCR_MAX /
		   sluice_gcra_incr(cost_max, g.interval_mant, g.interval_shift);
	by_burst = g.tolerance / sluice_gcra_incr(cost_min, g.interval_mant, g.interval_shift);
	by_range = by_range < by_burst ? by_range : by_burst;
	return by_range < 1 ? 1 : by_range > AGENT_SHARE_MAX ? AGENT_SHARE_MAX : by_range;
}

static void name_node(struct agent *a)
{
	if (a->ps->node_name[0])
		snprintf(a->node_name, sizeof(a->node_name), "%s", a->ps->node_name);
	else if (gethostname(a->node_name, sizeof(a->node_name) - 1))
		snprintf(a->node_name, sizeof(a->node_name), "node-%d", (int)getpid());
}

int agent_stores_open(struct agent *a)
{
	size_t j;
	int err = 0;

	name_node(a);
	for (j = 0; j < a->ps->n_policies; j++)
		a->max_share[j] = max_share_of(&a->ps->policies[j]);

	if (a->ps->store.url[0])
		err = open_endpoint(a, AGENT_STORE_MAIN, &a->ps->store);
	if (!err && a->ps->abuse_store.url[0])
		err = open_endpoint(a, AGENT_STORE_ABUSE, &a->ps->abuse_store);
	return err;
}

void agent_stores_close(struct agent *a)
{
	int k;

	for (k = 0; k < AGENT_STORE_MAX; k++) {
		store__close(a->stores[k]);
		a->stores[k] = NULL;
	}
}

/* Feed what endpoint @k saw since the last tick into its health machine. */
static void observe(struct agent *a, enum agent_store k, __u64 now)
{
	struct store_health *h = &a->health[k];
	enum store_state was = h->state;
	struct store_report r;

	store__collect(a->stores[k], &r);
	if (r.live_nodes && r.live_nodes != a->live_nodes[k])
		log_event(LOG_INFO, "fleet", "store=%s node=%s live_nodes=%llu",
			  k == AGENT_STORE_ABUSE ? a->ps->abuse_store.url : a->ps->store.url,
			  a->node_name, (unsigned long long)r.live_nodes);
	if (r.live_nodes) /* kept through faults: the degraded bound uses the last count */
		a->live_nodes[k] = r.live_nodes;
	if (r.failed)
		store_health__observe(h, 0, now);
	if (r.ok && r.last_ok)
		store_health__observe(h, 1, now);
	pthread_mutex_lock(&a->snap.lock);
	a->snap.stores[k].up = h->state == STORE_OK;
	a->snap.stores[k].probes_ok += r.ok;
	a->snap.stores[k].probes_failed += r.failed;
	if (r.rounds) { /* the thread's own totals: add what is new */
		a->snap.stores[k].syncs += r.rounds - a->rounds_seen[k];
		a->snap.stores[k].lease_calls += r.leases - a->leases_seen[k];
		a->snap.stores[k].hot_keys = r.hot_keys;
		a->rounds_seen[k] = r.rounds;
		a->leases_seen[k] = r.leases;
	}
	a->snap.stores[k].transitions = h->transitions;
	pthread_mutex_unlock(&a->snap.lock);
	if (h->state != was)
		log_event(LOG_WARN, "store_state", "store=%s from=%s to=%s err=\"%s\"",
			  k == AGENT_STORE_ABUSE ? a->ps->abuse_store.url : a->ps->store.url,
			  was == STORE_OK ? "ok" : "fault", h->state == STORE_OK ? "ok" : "fault",
			  h->state == STORE_OK ? "" : r.err);
}

/* Log and count one store fail-mode transition of policy @j on attachment @i. */
static void note_transition(struct agent *a, size_t i, size_t j, __u8 was, int mode)
{
	if (was == AGENT_FAIL_UNKNOWN && mode == SLUICE_FAIL_NONE)
		return; /* the initial write of a healthy state is no transition */
	pthread_mutex_lock(&a->snap.lock);
	a->snap.fail_transitions = ++a->fail_transitions;
	pthread_mutex_unlock(&a->snap.lock);
	log_event(LOG_WARN, "fail_mode", "policy=%s iface=%s from=%s to=%s why=store_error",
		  a->ps->policies[j].name, a->att[i].iface,
		  sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, was), sluice_fail_names[mode]);
}

/*
 * Write policy @j of attachment @i's runtime state — its store fail mode and
 * its share of the fleet — when either changed.
 */
static void write_runtime(struct agent *a, size_t i, size_t j, int k, __u64 now)
{
	const struct policy *p = &a->ps->policies[j];
	struct sluice_fail_state st = { 0 };
	__u64 since, nodes = a->live_nodes[k] ? a->live_nodes[k] : 1;
	int mode = store_fail_mode(p, &a->health[k], now, &since), err;
	__u32 share = nodes < a->max_share[j] ? nodes : a->max_share[j];
	__u8 was = a->fail_written[i][j];

	if ((mode == was && share == a->share_written[i][j]) || a->ids[i][j] == AGENT_POLICY_ABSENT)
		return;
	st.mode = mode;
	st.since_ns = since;
	st.share = share;
	err = maps__write_fail(&a->att[i].maps, a->ids[i][j], &st);
	if (err) {
		pr_warn("cannot set the runtime state of '%s' on '%s': %s", p->name,
			a->att[i].iface, strerror(-err));
		return;
	}
	a->fail_written[i][j] = mode;
	a->share_written[i][j] = share;
	if (mode != was)
		note_transition(a, i, j, was, mode);
}

void agent_stores_tick(struct agent *a, __u64 now_ns)
{
	size_t i, j;
	int k;

	for (k = 0; k < AGENT_STORE_MAX; k++)
		if (a->stores[k])
			observe(a, k, now_ns);
	for (i = 0; i < a->n_att; i++) {
		for (j = 0; j < a->ps->n_policies; j++) {
			k = store_of(a, &a->ps->policies[j]);
			if (k >= 0)
				write_runtime(a, i, j, k, now_ns);
		}
	}
}
