// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice check --json: the policy as check.c prints it, as data. One
 * object on one line; its members are described in docs/json.md and
 * docs/schema/check.json. Numbers are the compiled policy's (the limit per
 * second, the burst in its cost unit); the words are the policy file's
 * (the rate as written, the fail modes), so what is printed is what would
 * be enforced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/addr.h"
#include "base/escape.h"
#include "base/names.h"
#include "budget/planner.h"
#include "cli/check_json.h"
#include "cli/cmd.h"
#include "policy/compile.h"
#include "policy/policy.h"

#define NUM_FMT "%.9g" /* a double: enough digits for any rate, and valid JSON */

void coarse_lag(double per_sec, struct coarse_lag *l)
{
	struct timespec res = { 0 };

	clock_getres(CLOCK_MONOTONIC_COARSE, &res);
	l->tick_ns = (double)res.tv_sec * SLUICE_NSEC_PER_SEC + res.tv_nsec;
	l->per_tick = per_sec * l->tick_ns / SLUICE_NSEC_PER_SEC;
	l->worst = SLUICE_COARSE_LAG_TICKS * l->per_tick;
}

/* @s as a JSON string, quotes included. */
static void put_str(const char *s)
{
	size_t len = ESCAPE_JSON_LEN(strlen(s) + 1);
	char *buf = malloc(len);

	printf("\"%s\"", buf ? escape_json_text(buf, len, s) : "?");
	free(buf);
}

/* ,"@key":"@s" */
static void put_member(const char *key, const char *s)
{
	printf(",\"%s\":", key);
	put_str(s);
}

/* ,"@key":[...]: every prefix of @list, a single address without its length. */
static void put_prefixes(const char *key, const struct policy_prefix_list *list)
{
	char text[ADDR_TEXT_LEN];
	size_t i;

	printf(",\"%s\":[", key);
	for (i = 0; i < list->n; i++) {
		const struct policy_prefix *p = &list->v[i];

		if (addr_text(text, sizeof(text), p->addr,
			      p->bits == SLUICE_ADDR_BITS ? -1 : p->bits))
			snprintf(text, sizeof(text),
				 "?"); /* cannot happen: ADDR_TEXT_LEN holds any */
		printf("%s\"%s\"", i ? "," : "", text);
	}
	printf("]");
}

static void put_ifnames(const char *key, const char (*names)[POLICY_IFNAME_LEN], size_t n)
{
	size_t i;

	printf(",\"%s\":[", key);
	for (i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		put_str(names[i]);
	}
	printf("]");
}

/* {"rate":"100/s","per_sec":100,"burst":200}: the rate as written and per second. */
static void put_limit(const struct policy_rate *r, __u64 burst)
{
	char text[UNITS_TEXT_LEN];

	printf("{\"cost\":\"%s\"", sluice_name(sluice_cost_names, SLUICE_COST_MAX, r->cost));
	put_member("rate", units_rate_text(text, r));
	printf(",\"per_sec\":" NUM_FMT ",\"burst\":%llu}", units_per_sec(r),
	       (unsigned long long)burst);
}

static void put_match(const struct policy_match *m)
{
	printf(",\"match\":{\"proto\":\"%s\"",
	       m->proto == POLICY_PROTO_ANY ? "any" : policy_proto_name(m->proto));
	if (m->has_port)
		printf(",\"dst_ports\":{\"from\":%u,\"to\":%u}", m->port_lo, m->port_hi);
	else
		printf(",\"dst_ports\":null");
	printf(",\"tcp_syn\":%s", m->tcp_syn ? "true" : "false");
	put_prefixes("src", &m->src);
	put_prefixes("src_except", &m->src_except);
	put_prefixes("dst", &m->dst);
	put_ifnames("ifaces", (const char(*)[POLICY_IFNAME_LEN])m->ifaces, m->n_ifaces);
	printf("}");
}

/*
 * Over any t seconds a key admits at most limit.burst + limit.per_sec·t;
 * an emptied bucket is full again after refill_ms. A coarse clock admits
 * up to coarse_extra_per_tick more per tick of lag; per-CPU batches of
 * cpu_batch packets, up to cpu_batch_extra more with this host's CPUs.
 */
static void put_burst_math(const struct policy *p)
{
	double per_sec = units_per_sec(&p->rate);
	__u32 batch = compile_batch(p);
	struct coarse_lag lag;

	printf(",\"burst_math\":{\"refill_ms\":" NUM_FMT ",\"clock\":\"%s\"",
	       (double)p->burst / per_sec * SLUICE_NSEC_PER_SEC / SLUICE_NSEC_PER_MSEC,
	       p->clock_precise ? "precise" : "coarse");
	if (p->clock_precise) {
		printf(",\"coarse_tick_ns\":null,\"coarse_extra_per_tick\":null,"
		       "\"coarse_extra_worst\":null");
	} else {
		coarse_lag(per_sec, &lag);
		printf(",\"coarse_tick_ns\":" NUM_FMT ",\"coarse_extra_per_tick\":" NUM_FMT
		       ",\"coarse_extra_worst\":" NUM_FMT,
		       lag.tick_ns, lag.per_tick, lag.worst);
	}
	if (batch)
		printf(",\"cpu_batch\":%u,\"cpu_batch_extra\":%ld", batch,
		       sysconf(_SC_NPROCESSORS_CONF) * (long)batch);
	else
		printf(",\"cpu_batch\":null,\"cpu_batch_extra\":null");
	printf(",\"burst_below_frame\":%s}",
	       p->rate.cost == SLUICE_COST_BYTES && p->burst < ETH_FRAME_MAX_BYTES ? "true"
										   : "false");
}

/* How a cluster limit is shared (check.c's print_cluster()), or null on one node. */
static void put_cluster(const struct policy *p, __u64 interval_ns)
{
	double per_interval = units_per_sec(&p->rate) * (double)interval_ns /
			      (double)SLUICE_NSEC_PER_SEC * LEASE_LOOKAHEAD;

	if (p->scope != SLUICE_SCOPE_CLUSTER) {
		printf(",\"cluster\":null");
		return;
	}
	printf(",\"cluster\":{\"cold_mode\":\"%s\",\"sync_interval_ms\":%llu,"
	       "\"burst_below_sync\":%s}",
	       p->cold_strict ? "strict" : "share",
	       (unsigned long long)(interval_ns / SLUICE_NSEC_PER_MSEC),
	       (double)p->burst < per_interval ? "true" : "false");
}

static void put_policy(const struct policy *p, const struct sluice_policy *sp, __u64 interval_ns)
{
	printf("{\"name\":");
	put_str(p->name);
	printf(",\"id\":%u,\"mode\":\"%s\",\"class\":\"%s\",\"scope\":\"%s\"", sp->id,
	       sluice_name(sluice_mode_names, SLUICE_MODE_MAX, p->mode),
	       sluice_name(sluice_class_names, SLUICE_CLASS_MAX, p->class),
	       sluice_name(sluice_scope_names, SLUICE_SCOPE_MAX, p->scope));
	put_match(&p->match);
	if (p->keyed)
		printf(",\"key\":{\"per_source\":true,\"ipv4_prefix\":%u,\"ipv6_prefix\":%u}",
		       p->ipv4_prefix, p->ipv6_prefix);
	else
		printf(",\"key\":{\"per_source\":false,\"ipv4_prefix\":null,\"ipv6_prefix\":null}");
	printf(",\"limit\":");
	put_limit(&p->rate, p->burst);
	put_burst_math(p);
	put_cluster(p, interval_ns);
	printf(",\"on_agent_loss\":\"%s\"",
	       sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, p->on_agent_loss));
	if (p->scope == SLUICE_SCOPE_CLUSTER)
		printf(",\"on_store_error\":\"%s\"",
		       sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, p->on_store_error));
	else
		printf(",\"on_store_error\":null");
	printf(",\"closed_after_ms\":%llu,\"local_limit\":",
	       (unsigned long long)(p->closed_after_ns / SLUICE_NSEC_PER_MSEC));
	if (p->has_local_limit)
		put_limit(&p->local_rate, p->local_burst);
	else
		printf("null");
	if (p->escalate.on) {
		printf(",\"escalate\":{\"after\":%llu,\"within_ms\":%llu,\"ban_ms\":%llu",
		       (unsigned long long)p->escalate.after,
		       (unsigned long long)(p->escalate.within_ns / SLUICE_NSEC_PER_MSEC),
		       (unsigned long long)(p->escalate.ban_ns / SLUICE_NSEC_PER_MSEC));
		put_member("list", p->escalate.list);
		printf("}");
	} else {
		printf(",\"escalate\":null");
	}
	printf("}");
}

/* ,"@key":"url" or null: the URL as the file gives it, as check's text prints it. */
static void put_store(const char *key, const struct policy_store *e)
{
	if (e->url[0])
		put_member(key, e->url);
	else
		printf(",\"%s\":null", key);
}

void check_json_ok(const char *file, const struct policy_set *ps, const struct compiled *c)
{
	size_t i;

	printf("{\"schema\":\"" SCHEMA_CHECK "\"");
	put_member("file", file);
	printf(",\"ok\":true,\"policies\":[");
	for (i = 0; i < ps->n_policies; i++) {
		printf("%s", i ? "," : "");
		put_policy(&ps->policies[i], &c->policies[i], ps->sync_interval_ns);
	}
	printf("]");
	put_ifnames("ifaces", ps->ifaces, ps->n_ifaces);
	put_prefixes("allow", &ps->allow);
	put_store("store", &ps->store);
	put_store("abuse_store", &ps->abuse_store);
	printf(",\"agent\":{\"heartbeat_ms\":%llu,\"timeout_ms\":%llu}",
	       (unsigned long long)(ps->heartbeat_ns / SLUICE_NSEC_PER_MSEC),
	       (unsigned long long)(ps->agent_timeout_ns / SLUICE_NSEC_PER_MSEC));
	printf(",\"unparsed\":\"%s\",\"fragments_orphan\":\"%s\"",
	       sluice_name(sluice_unparsed_names, SLUICE_UNPARSED_MAX, ps->unparsed),
	       sluice_name(sluice_orphan_names, SLUICE_ORPHAN_MAX, ps->orphan));
	printf(",\"classifier_entries\":%zu,\"errors\":[]}\n", c->n_match);
}

static void put_error(const char *file, int line, int col, const char *field, const char *msg)
{
	printf("{\"file\":");
	put_str(file);
	printf(",\"line\":%d,\"col\":%d", line, col);
	if (field[0])
		put_member("field", field);
	else
		printf(",\"field\":null");
	put_member("message", msg);
	printf("}");
}

void check_json_errors(const char *file, const struct diag_list *diags, int read_err)
{
	char msg[DIAG_MSG_LEN];
	size_t i;

	printf("{\"schema\":\"" SCHEMA_CHECK "\"");
	put_member("file", file);
	printf(",\"ok\":false,\"errors\":[");
	for (i = 0; i < diags->n; i++) {
		const struct diag *e = &diags->v[i];

		printf("%s", i ? "," : "");
		put_error(file, e->pos.line, e->pos.col, e->field, e->msg);
	}
	if (!diags->n) {
		snprintf(msg, sizeof(msg), "cannot read policy: %s", strerror(read_err));
		put_error(file, 0, 0, "", msg);
	}
	printf("]}\n");
}
