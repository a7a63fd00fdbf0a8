// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice top: the keys closest to (or at) their limit right now, read from
 * the pinned maps. A key's fill is how much of its burst tolerance its TAT
 * is ahead of now: 0 % idle, 100 % at the limit (every further packet is
 * denied until it drains); a denied packet never writes its key, so keys
 * under attack sit at the top. Works while no agent runs.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/gcra.h"
#include "base/clock.h"
#include "base/escape.h"
#include "cli/cmd.h"
#include "cli/opts.h"
#include "base/addr.h"
#include "base/names.h"
#include "kernel/maps.h"
#include "policy/policy.h"

#define TOP_DEFAULT 20 /* keys listed without --count */
#define PERCENT	    100.0

struct top_opts {
	const char *iface; /* NULL: the first under the pin root */
	__u32 count;
	int json;
	const char *pin_root;
};

static const struct opt top_rows[] = {
	OPTION("iface", 'i', OPT_STR, struct top_opts, iface, "<iface>",
	       "the interface; default: the first under the pin root"),
	OPTION("count", 'n', OPT_COUNT, struct top_opts, count, "<n>",
	       "how many keys; default " XSTR(TOP_DEFAULT)),
	OPTION("json", 0, OPT_FLAG, struct top_opts, json, NULL, "one JSON object, for scripts"),
	OPTION_PIN_ROOT(struct top_opts, pin_root),
	OPTS_END,
};

static const struct opts_cmd top_cmd = {
	.name = "top",
	.synopsis =
		"usage: sluice top [--iface <iface>] [--count <n>] [--json] [--pin-root <dir>]\n",
	.opt = top_rows,
};

struct top_key {
	struct sluice_key key;
	const struct sluice_policy *policy;
	double fill;	/* share of the tolerance in use, 0..1 */
	__u64 drain_ns; /* until the key is idle again */
};

struct top {
	const struct sluice_policy *by_id[SLUICE_MAX_POLICIES];
	struct top_key *v;
	size_t n, cap;
	__u64 now; /* GCRA ticks */
};

/* Keep every key of an active policy that is in debt; the sort picks the top. */
static int collect(const struct sluice_key *key, const struct sluice_state *st, void *arg)
{
	struct top *t = arg;
	const struct sluice_policy *p;
	struct top_key *grown;
	__u64 ahead;

	if (key->policy_id >= SLUICE_MAX_POLICIES || !(p = t->by_id[key->policy_id]))
		return 0; /* a retired policy's key, ageing out of the LRU */
	ahead = sluice_gcra_ahead(st->tat, t->now, p->limit.tolerance);
	if (!ahead || !p->limit.tolerance)
		return 0; /* no debt: idle */
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 1024;
		grown = realloc(t->v, t->cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		t->v = grown;
	}
	t->v[t->n++] = (struct top_key){
		.key = *key,
		.policy = p,
		.fill = ahead >= p->limit.tolerance ? 1.0 : (double)ahead / p->limit.tolerance,
		.drain_ns = sluice_gcra_ns(ahead),
	};
	return 0;
}

static int by_fill(const void *a, const void *b)
{
	const struct top_key *x = a, *y = b;

	if (x->fill != y->fill)
		return x->fill > y->fill ? -1 : 1;
	return x->drain_ns > y->drain_ns ? -1 : x->drain_ns < y->drain_ns;
}

/* "10.1.2.0/24", "2001:db8::/48", or "*" for a policy's one global key. */
static void key_text(char *buf, const struct top_key *k)
{
	int bits = addr_is_v4mapped(k->key.addr) ? k->policy->prefix4 : k->policy->prefix6;

	if (!bits)
		snprintf(buf, ADDR_TEXT_LEN, "*");
	else if (addr_text(buf, ADDR_TEXT_LEN, k->key.addr, bits))
		snprintf(buf, ADDR_TEXT_LEN, "?"); /* cannot happen: ADDR_TEXT_LEN holds any */
}

/* The keys of @iface; with @json each names its interface too, for scripts that merge several. */
static void print_top(const struct top *t, const char *iface, size_t count, int json)
{
	char key[ADDR_TEXT_LEN], name[ESCAPE_JSON_LEN(SLUICE_NAME_LEN)];
	char ifname[ESCAPE_JSON_LEN(NAME_MAX + 1)]; /* a pin directory's name */
	size_t i, n = t->n < count ? t->n : count;

	if (json)
		printf("{\"schema\":\"" SCHEMA_TOP "\",\"iface\":\"%s\",\"keys_in_debt\":%zu,"
		       "\"top\":[",
		       escape_json_text(ifname, sizeof(ifname), iface), t->n);
	else
		printf("%-20s %-40s %6s %10s\n", "POLICY", "KEY", "FILL", "DRAINS_IN");
	for (i = 0; i < n; i++) {
		key_text(key, &t->v[i]);
		if (json)
			printf("%s{\"iface\":\"%s\",\"policy\":\"%s\",\"key\":\"%s\",\"fill\":%.4f,"
			       "\"drain_ms\":%llu}",
			       i ? "," : "", ifname,
			       escape_json_text(name, sizeof(name), t->v[i].policy->name), key,
			       t->v[i].fill,
			       (unsigned long long)(t->v[i].drain_ns / SLUICE_NSEC_PER_MSEC));
		else
			printf("%-20s %-40s %5.1f%% %9.2fs\n", t->v[i].policy->name, key,
			       t->v[i].fill * PERCENT,
			       (double)t->v[i].drain_ns / SLUICE_NSEC_PER_SEC);
	}
	if (json)
		printf("]}\n");
	else if (t->n > n)
		printf("(%zu more keys in debt)\n", t->n - n);
}

static int top(const char *pin_root, const char *iface, size_t count, int json)
{
	struct sluice_policy *active = calloc(SLUICE_MAX_POLICIES, sizeof(*active));
	struct top t = { 0 };
	struct sluice_maps m;
	char dir[PATH_MAX];
	size_t i, n = 0;
	int err;

	err = active ? cmd_open_pins(pin_root, iface, &m, dir) : -ENOMEM;
	if (err) {
		free(active);
		return cmd_exit_code(err);
	}
	err = maps__read_active(&m, active, &n);
	for (i = 0; i < n; i++)
		t.by_id[active[i].id] = &active[i];
	t.now = sluice_gcra_ticks(mono_ns());
	if (!err)
		err = maps__walk_keys(&m, collect, &t);
	maps__close(&m);
	if (err)
		cmd_warnf("sluice: cannot read keys in '%s': %s\n", dir, strerror(-err));
	else {
		qsort(t.v, t.n, sizeof(*t.v), by_fill);
		print_top(&t, iface, count, json);
	}
	free(t.v);
	free(active);
	return err ? EXIT_FAIL : EXIT_OK;
}

int cmd_top(int argc, char **argv)
{
	struct top_opts o = { .count = TOP_DEFAULT, .pin_root = SLUICE_PIN_ROOT };
	char first[POLICY_IFNAME_LEN];
	int err = opts_parse(&top_cmd, argc, argv, &o);

	if (err != OPTS_GO_ON)
		return err;
	err = o.iface ? 0 : cmd_first_iface(o.pin_root, first, sizeof(first));
	if (err)
		return cmd_exit_code(err);
	return top(o.pin_root, o.iface ? o.iface : first, o.count, o.json);
}
