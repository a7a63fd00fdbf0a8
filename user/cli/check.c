// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice check: validate a policy file without touching the kernel, and
 * print it normalized: per policy, in file order, what it matches, its key,
 * its mode, its limit in the file's units and per second, its burst math,
 * and what it does when the agent dies or the store fails, in words. Then
 * the allowlist and the agent's clock, and the summary line that ends in
 * "ok" (with `sluice -q check`, that line alone). The words come from the
 * parsed and compiled policy, never from the file's text, so what is
 * printed is what would be enforced.
 *
 * Output lines are wrapped at 80 columns, continuation rows indented.
 * Nothing here parses YAML or computes GCRA parameters; policy/ and
 * compile.c do, and a policy they reject is never printed.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/addr.h"
#include "agent/agent.h"
#include "agent/escalate.h"
#include "base/names.h"
#include "cli/check_json.h"
#include "cli/cmd.h"
#include "cli/opts.h"
#include "policy/compile.h"
#include "budget/planner.h"
#include "policy/policy.h"

#define OUT_COLS       80     /* every output row fits */
#define OUT_HANG       "    " /* indent of a wrapped line's continuation rows */
#define LINE_LEN       2048   /* one logical line; LIST_SHOWN keeps lines far shorter */
#define LIST_SHOWN     4      /* prefixes or interfaces named before "and N more" */
#define UTF8_CONT_MASK 0xc0   /* a UTF-8 continuation byte is 10xxxxxx */
#define UTF8_CONT      0x80

struct check_opts {
	int json;
};

static const struct opt check_rows[] = {
	OPTION("json", 0, OPT_FLAG, struct check_opts, json, NULL,
	       "the policy, or its errors, as one JSON object"),
	OPTS_END,
};

static const struct opts_cmd check_cmd = {
	.name = "check",
	.synopsis = "usage: sluice check [--json] <file>\n",
	.opt = check_rows,
	.n_args = 1,
};

/* ---- one logical output line, wrapped at OUT_COLS ------------------------- */

struct line {
	char buf[LINE_LEN];
	size_t len;
};

/* Append to @l; a line cut at LINE_LEN ends in "..." (cannot happen with LIST_SHOWN). */
__attribute__((format(printf, 2, 3))) static void line__add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(l->buf + l->len, sizeof(l->buf) - l->len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(l->buf) - l->len) {
		l->len += n;
		return;
	}
	l->len = sizeof(l->buf) - 1;
	memcpy(l->buf + l->len - strlen("..."), "...", strlen("..."));
}

/*
 * The end of the next row of @s: all of it if it fits in @cols columns,
 * else the last space that keeps the row within them (a word longer than a
 * row runs over). Columns count characters: "·" is two bytes, one column.
 */
static const char *row_end(const char *s, const char *end, size_t cols)
{
	const char *p, *cut = NULL;
	int seen_word = 0;
	size_t n = 0;

	for (p = s; p < end; p++) {
		if (*p == ' ' && seen_word) {
			if (n > cols)
				return cut ? cut : p;
			cut = p;
		}
		seen_word |= *p != ' ';
		n += ((unsigned char)*p & UTF8_CONT_MASK) != UTF8_CONT;
	}
	return n > cols && cut ? cut : end;
}

/* Print @l wrapped, and empty it. */
static void line__print(struct line *l)
{
	const char *s = l->buf, *end = l->buf + l->len, *cut;
	size_t cols = OUT_COLS;

	while (s < end) {
		cut = row_end(s, end, cols);
		printf("%s%.*s\n", cols == OUT_COLS ? "" : OUT_HANG, (int)(cut - s), s);
		for (s = cut; s < end && *s == ' '; s++)
			;
		cols = OUT_COLS - strlen(OUT_HANG);
	}
	l->len = 0;
}

/* ---- quantities as words ------------------------------------------------------ */

/* A count of packets: whole numbers as they are, fractions to three digits. */
static const char *count_text(char *buf, double v, const char *unit)
{
	if (v == (double)(__u64)v)
		snprintf(buf, UNITS_TEXT_LEN, "%llu%s", (unsigned long long)v, unit);
	else
		snprintf(buf, UNITS_TEXT_LEN, "%.3g%s", v, unit);
	return buf;
}

/* The rate per second, in the unit of the burst: "0.167/s", "1000/s", "1.25MB/s". */
static const char *per_sec_text(char *buf, const struct policy_rate *r)
{
	if (r->cost == SLUICE_COST_BYTES)
		return units_si_approx(buf, units_per_sec(r), "B/s");
	return count_text(buf, units_per_sec(r), "/s");
}

/* An amount of the policy's cost unit: "200 packets", "64kB". */
static const char *amount_text(char *buf, __u64 n, enum sluice_cost cost)
{
	if (cost == SLUICE_COST_BYTES)
		return units_si_exact(buf, n, "B");
	snprintf(buf, UNITS_TEXT_LEN, "%llu packet%s", (unsigned long long)n, n == 1 ? "" : "s");
	return buf;
}

/* "100/s, burst 200 packets" and, when the file's unit is not per second, "(0.167/s)". */
static void add_limit(struct line *l, const struct policy_rate *r, __u64 burst)
{
	char rate[UNITS_TEXT_LEN], per_s[UNITS_TEXT_LEN], b[UNITS_TEXT_LEN];

	line__add(l, "%s", units_rate_text(rate, r));
	if (r->period_ns != SLUICE_NSEC_PER_SEC)
		line__add(l, " (%s)", per_sec_text(per_s, r));
	line__add(l, ", burst %s", amount_text(b, burst, r->cost));
}

/* ---- addresses ------------------------------------------------------------------ */

/* "10.0.0.0/8", "2001:db8::/32", and a single address without its length. */
static void add_prefix(struct line *l, const struct policy_prefix *p)
{
	int is_host = p->bits == SLUICE_ADDR_BITS;
	char text[ADDR_TEXT_LEN];

	if (addr_text(text, sizeof(text), p->addr, is_host ? -1 : p->bits))
		line__add(l, "(unprintable)");
	else
		line__add(l, "%s", text);
}

/* The first LIST_SHOWN prefixes of @list, then "and N more". */
static void add_prefixes(struct line *l, const struct policy_prefix_list *list)
{
	size_t i;

	for (i = 0; i < list->n && i < LIST_SHOWN; i++) {
		line__add(l, "%s", i ? ", " : "");
		add_prefix(l, &list->v[i]);
	}
	if (list->n > LIST_SHOWN)
		line__add(l, " and %zu more", list->n - LIST_SHOWN);
}

static void add_ifnames(struct line *l, const char (*names)[POLICY_IFNAME_LEN], size_t n)
{
	size_t i;

	for (i = 0; i < n && i < LIST_SHOWN; i++)
		line__add(l, "%s%s", i ? ", " : "", names[i]);
	if (n > LIST_SHOWN)
		line__add(l, " and %zu more", n - LIST_SHOWN);
}

/* ---- one policy ------------------------------------------------------------------- */

static const char *proto_text(__u8 proto)
{
	return proto == POLICY_PROTO_ANY ? "any protocol" : policy_proto_name(proto);
}

static void print_match(struct line *l, const struct policy_match *m)
{
	line__add(l, "  match: %s", proto_text(m->proto));
	if (m->has_port && m->port_lo == m->port_hi)
		line__add(l, " port %u", m->port_lo);
	else if (m->has_port)
		line__add(l, " ports %u-%u", m->port_lo, m->port_hi);
	if (m->tcp_syn)
		line__add(l, " SYN only (connection attempts)");
	if (m->src.n) {
		line__add(l, "; from ");
		add_prefixes(l, &m->src);
	}
	if (m->src_except.n) {
		line__add(l, "; except from ");
		add_prefixes(l, &m->src_except);
	}
	if (m->dst.n) {
		line__add(l, "; to ");
		add_prefixes(l, &m->dst);
	}
	if (m->n_ifaces) {
		line__add(l, "; on ");
		add_ifnames(l, m->ifaces, m->n_ifaces);
	}
	line__print(l);
}

static void print_key(struct line *l, const struct policy *p)
{
	if (p->keyed)
		line__add(l, "  key: one key per source prefix: /%u (IPv4), /%u (IPv6)",
			  p->ipv4_prefix, p->ipv6_prefix);
	else
		line__add(l, "  key: one key for all sources");
	line__print(l);
}

/* Whether some fault can drop all of @p's traffic: closed, at once or after degraded. */
/* The header: name, id, and the mode. */
static void print_header(struct line *l, const struct policy *p, const struct sluice_policy *sp)
{
	line__add(l, "%s (id %u): ", p->name, sp->id);
	line__add(l, "%s: %s", sluice_mode_names[p->mode],
		  p->mode == SLUICE_MODE_ENFORCE ? "drops what is over the limit"
						 : "counts would-drops, drops nothing");
	line__print(l);
}

/*
 * Per-CPU batches (include/sluice/gcra.h): a fast limit lets each CPU take
 * up to batch packets or bytes from a key at once, which loosens its bound
 * by CPUs × batch.
 */
static void print_batch(struct line *l, const struct policy *p)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	__u32 batch = compile_batch(p);
	char one[UNITS_TEXT_LEN], all[UNITS_TEXT_LEN];

	if (!batch)
		return;
	amount_text(one, batch, p->rate.cost);
	line__add(l,
		  "  per-CPU batches: a CPU takes up to %s of a key at once: up to %s per CPU "
		  "more in any window (%s with the %ld CPUs here)",
		  one, one, amount_text(all, (__u64)cpus * batch, p->rate.cost), cpus);
	line__print(l);
}

/*
 * The burst math. Over any interval of length t a key admits at most
 * burst + rate·t; an idle key admits its whole burst back to back, and an
 * emptied bucket is full again after burst / rate.
 */
static void print_burst_math(struct line *l, const struct policy *p)
{
	char b[UNITS_TEXT_LEN], r[UNITS_TEXT_LEN], per_s[UNITS_TEXT_LEN], refill[UNITS_TEXT_LEN];
	double rate = units_per_sec(&p->rate);
	int bytes = p->rate.cost == SLUICE_COST_BYTES;

	if (bytes) {
		units_si_exact(b, p->burst, "B");
		units_si_approx(r, rate, "B");
	} else {
		count_text(b, (double)p->burst, "");
		count_text(r, rate, "");
	}
	line__add(
		l,
		"  admits at most %s + %s·t%s over any t seconds: a full burst of %s at "
		"once, then %s; an empty bucket refills in %s",
		b, r, bytes ? "" : " packets", b, per_sec_text(per_s, &p->rate),
		units_duration_text(refill, (double)p->burst / rate * (double)SLUICE_NSEC_PER_SEC));
	line__print(l);
	if (!p->clock_precise) {
		char tick[UNITS_TEXT_LEN], extra[UNITS_TEXT_LEN], worst[UNITS_TEXT_LEN];
		struct coarse_lag lag;

		coarse_lag(rate, &lag);
		if (bytes) {
			units_si_approx(extra, lag.per_tick, "B");
			units_si_approx(worst, lag.worst, "B");
		} else {
			count_text(extra, lag.per_tick, "");
			count_text(worst, lag.worst, "");
		}
		line__add(l,
			  "  clock: coarse (tick %s here): up to %s%s more in any window (%s at "
			  "worst); clock: precise removes that",
			  units_duration_text(tick, lag.tick_ns), extra, bytes ? "" : " packets",
			  worst);
		line__print(l);
	}
	print_batch(l, p);
	/* A key's whole burst is the most one packet can cost: say when frames can't fit. */
	if (bytes && p->burst < ETH_FRAME_MAX_BYTES) {
		line__add(l,
			  "  note: a burst of %s is smaller than a full-size Ethernet frame "
			  "(%d B): frames larger than the burst are never admitted",
			  b, ETH_FRAME_MAX_BYTES);
		line__print(l);
	}
}

static const char *per_key_text(const struct policy *p)
{
	if (!p->keyed)
		return "for all sources";
	return p->ipv4_prefix == SLUICE_IPV4_BITS ? "per source" : "per source prefix";
}

/* One fault's consequence: "degraded to 12/s per source (burst 20); closed after 30s". */
static void print_fail(struct line *l, const struct policy *p, const char *fault,
		       enum sluice_fail mode)
{
	char rate[UNITS_TEXT_LEN], b[UNITS_TEXT_LEN], after[UNITS_TEXT_LEN];

	line__add(l, "  if %s: ", fault);
	if (mode == SLUICE_FAIL_OPEN)
		line__add(l, "%s: unlimited", sluice_fail_names[mode]);
	else if (mode == SLUICE_FAIL_CLOSED)
		line__add(l, "%s: %s", sluice_fail_names[mode],
			  p->mode == SLUICE_MODE_SHADOW
				  ? "counts all its traffic as would-drop"
				  : "drops all its traffic (allowlisted sources still pass)");
	else if (p->has_local_limit)
		line__add(l, "degraded to %s %s (burst %s)", units_rate_text(rate, &p->local_rate),
			  per_key_text(p), amount_text(b, p->local_burst, p->rate.cost));
	else
		line__add(l, "degraded to its own limit (local enforcement)");
	if (mode == SLUICE_FAIL_DEGRADED && p->closed_after_ns)
		line__add(l, "; closed after %s",
			  units_duration_text(after, (double)p->closed_after_ns));
	else if (mode == SLUICE_FAIL_DEGRADED)
		line__add(l, "; never closed");
	line__print(l);
}

/*
 * How a cluster-scoped limit is shared (docs/shared-budget.md): cold keys
 * at the share, hot keys on leases; and when the burst is too small for
 * leases topped up once per sync interval to carry the whole rate.
 */
static void print_cluster(struct line *l, const struct policy *p, __u64 interval_ns)
{
	double per_interval = units_per_sec(&p->rate) * (double)interval_ns /
			      (double)SLUICE_NSEC_PER_SEC * LEASE_LOOKAHEAD;
	char iv[UNITS_TEXT_LEN];

	if (p->cold_strict)
		line__add(l, "  cold_mode strict: a key's first packets are dropped until its "
			     "lease arrives (about one round trip to the store)");
	else
		line__add(l, "  cold keys: each of k live nodes admits rate/k with burst/k; a key "
			     "using half of that turns hot and shares the fleet's leases");
	line__print(l);
	if ((double)p->burst < per_interval) {
		line__add(
			l,
			"  note: a burst below %d sync intervals of the rate (%.0f, sync_interval "
			"%s) keeps a hot key below its rate when one node carries it",
			LEASE_LOOKAHEAD, per_interval,
			units_duration_text(iv, (double)interval_ns));
		line__print(l);
	}
}

/*
 * Escalation in words. A key admits at most burst + rate·W in any window
 * W, so one that sends more than after + burst + rate·W packets within W
 * is denied at least `after` times: a sustained rate above
 * rate + (after + burst) / W is banned.
 */
static void print_escalate(struct line *l, const struct policy *p)
{
	const struct policy_escalate *e = &p->escalate;
	char within[UNITS_TEXT_LEN], ban[UNITS_TEXT_LEN], look[UNITS_TEXT_LEN],
		late[UNITS_TEXT_LEN];
	char sent[UNITS_TEXT_LEN], rate[UNITS_TEXT_LEN];
	double w_s = (double)e->within_ns / (double)SLUICE_NSEC_PER_SEC, min_burst;
	struct coarse_lag lag;

	units_duration_text(within, (double)e->within_ns);
	line__add(l,
		  "  escalate: a key denied %llu times within %s becomes a ban of its source "
		  "(/%u for IPv4, /%u for IPv6) for %s on list %s",
		  (unsigned long long)e->after, within, p->ipv4_prefix, p->ipv6_prefix,
		  units_duration_text(ban, (double)e->ban_ns), e->list);
	line__print(l);
	if (p->rate.cost == SLUICE_COST_PKTS) {
		count_text(sent, (double)(e->after + p->burst) + units_per_sec(&p->rate) * w_s, "");
		count_text(rate, units_per_sec(&p->rate) + (double)(e->after + p->burst) / w_s,
			   "/s");
		line__add(l,
			  "  a source that sends more than %s packets within %s (%s sustained) is "
			  "banned; one under its limit is never denied",
			  sent, within, rate);
		line__print(l);
	}
	line__add(l,
		  "  the agent counts denials every %s and bans within %s + %s (a look and "
		  "its tick); keys at their limit together share the policy's denials",
		  units_duration_text(look, (double)ESCALATE_LOOK_NS), within,
		  units_duration_text(late, (double)(ESCALATE_LOOK_NS + AGENT_TICK_NS)));
	line__print(l);
	/*
	 * A steady source under its limit has a debt of one interval at most;
	 * the agent takes a key as at its limit within an interval and
	 * SLUICE_COARSE_LAG_TICKS + 1 ticks of its tolerance (agent/escalate.c).
	 */
	coarse_lag(units_per_sec(&p->rate), &lag);
	min_burst = 2 + lag.per_tick * (SLUICE_COARSE_LAG_TICKS + 1);
	if (p->rate.cost == SLUICE_COST_PKTS && (double)p->burst < min_burst) {
		line__add(l,
			  "  note: with a burst below %s, a source under its limit may share "
			  "the denials of one over it while it sends",
			  count_text(sent, min_burst, ""));
		line__print(l);
	}
}

static void print_policy(const struct policy *p, const struct sluice_policy *sp, __u64 interval_ns)
{
	struct line l = { .len = 0 };

	if (cmd_quiet) /* -q: the summary line alone */
		return;
	print_header(&l, p, sp);
	print_match(&l, &p->match);
	print_key(&l, p);
	line__add(&l, "  limit: ");
	add_limit(&l, &p->rate, p->burst);
	line__add(&l, p->scope == SLUICE_SCOPE_CLUSTER ? ", across the cluster (store)"
						       : ", on this node");
	line__print(&l);
	print_burst_math(&l, p);
	if (p->scope == SLUICE_SCOPE_CLUSTER)
		print_cluster(&l, p, interval_ns);
	line__add(&l, "  class: %s (%s)", sluice_class_names[p->class],
		  p->class == SLUICE_CLASS_ABUSE ? "makes an attack uneconomical"
						 : "protects capacity");
	line__print(&l);
	print_fail(&l, p, "the agent dies", p->on_agent_loss);
	if (p->scope == SLUICE_SCOPE_CLUSTER) {
		print_fail(&l, p, "the store fails", p->on_store_error);
	} else {
		line__add(&l, "  if the store fails: unaffected (node scope uses no store)");
		line__print(&l);
	}
	if (p->sample) {
		line__add(&l,
			  "  events: 1 in %u of its drops is sampled for sluice events and dump",
			  p->sample);
		line__print(&l);
	}
	if (p->escalate.on)
		print_escalate(&l, p);
}

/* ---- the file ------------------------------------------------------------------------ */

/* What `unparsed:` does, for each of its words. */
static const char *const unparsed_text[SLUICE_UNPARSED_MAX] = {
	[SLUICE_UNPARSED_DROP] = "a frame whose headers cannot be finished is dropped",
	[SLUICE_UNPARSED_CHARGE] = "a frame whose headers cannot be finished is charged to every "
				   "policy its addresses match, whatever its protocol and port",
	[SLUICE_UNPARSED_PASS] = "a frame whose headers cannot be finished is passed, unlimited",
};

/* What kind of store @url names, for `store:` (the forms policy/sections.c accepts). */
static const char *store_kind(const char *url)
{
	static const struct {
		const char *scheme, *kind;
	} kinds[] = {
		{ "cluster://", "Redis Cluster: slot map from the first node that answers, "
				"each key's calls to its primary" },
		{ "sentinel://", "Redis Sentinel: the master the sentinels name" },
		{ "unix://", "one Redis, Unix socket" },
		{ "redis://", "one Redis, TCP" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kinds); i++)
		if (!strncmp(url, kinds[i].scheme, strlen(kinds[i].scheme)))
			return kinds[i].kind;
	return "unknown";
}

static void print_store(const char *what, const struct policy_store *e)
{
	struct line l = { .len = 0 };

	if (!e->url[0])
		return;
	line__add(&l, "%s: %s (%s)", what, e->url, store_kind(e->url));
	line__print(&l);
}

static void print_file(const struct policy_set *ps)
{
	char beat[UNITS_TEXT_LEN], timeout[UNITS_TEXT_LEN];
	struct line l = { .len = 0 };

	if (cmd_quiet)
		return;
	print_store("store", &ps->store);
	print_store("abuse store", &ps->abuse_store);

	line__add(&l, "interfaces: ");
	if (ps->n_ifaces)
		add_ifnames(&l, ps->ifaces, ps->n_ifaces);
	else
		line__add(&l, "none listed (sluice run needs --iface)");
	line__print(&l);
	line__add(&l, "allowlist: ");
	if (ps->allow.n) {
		line__add(&l, "%zu prefix%s never limited, in any mode: ", ps->allow.n,
			  ps->allow.n == 1 ? "" : "es");
		add_prefixes(&l, &ps->allow);
	} else {
		line__add(&l, "none");
	}
	line__print(&l);
	line__add(&l, "agent: heartbeat every %s; taken for dead after %s without one",
		  units_duration_text(beat, (double)ps->heartbeat_ns),
		  units_duration_text(timeout, (double)ps->agent_timeout_ns));
	line__print(&l);
	line__add(&l, "unparsed: %s: %s",
		  sluice_name(sluice_unparsed_names, SLUICE_UNPARSED_MAX, ps->unparsed),
		  unparsed_text[ps->unparsed < SLUICE_UNPARSED_MAX ? ps->unparsed : 0]);
	line__print(&l);
	line__add(&l, "fragments: orphan %s: a later fragment whose first was not seen is %s",
		  sluice_name(sluice_orphan_names, SLUICE_ORPHAN_MAX, ps->orphan),
		  ps->orphan == SLUICE_ORPHAN_PASS ? "passed, charged to byte policies"
						   : "dropped");
	line__print(&l);
	if (ps->sample) {
		line__add(&l,
			  "events: 1 in %u of the drops no policy makes (bans, unparsed frames, "
			  "fragments) is sampled for sluice events and dump",
			  ps->sample);
		line__print(&l);
	}
}

/* A file that does not pass: its errors, as text on stderr or as JSON on stdout. */
static void report_errors(const char *file, const struct diag_list *diags, int read_err, int json)
{
	if (json)
		check_json_errors(file, diags, read_err);
	else if (diags->n)
		diag__print(diags, stderr);
	else
		cmd_warnf("sluice: cannot read policy '%s': %s\n", file, strerror(read_err));
}

/* A file that passes: the policy in words, or as JSON. */
static void report_ok(const char *file, const struct policy_set *ps, const struct compiled *c,
		      int json)
{
	size_t i;

	if (json) {
		check_json_ok(file, ps, c);
		return;
	}
	for (i = 0; i < ps->n_policies; i++)
		print_policy(&ps->policies[i], &c->policies[i], ps->sync_interval_ns);
	print_file(ps);
	printf("%zu policies, %zu classifier entries: ok\n", ps->n_policies, c->n_match);
}

int cmd_check(int argc, char **argv)
{
	struct check_opts o = { 0 };
	struct diag_list diags = { 0 };
	struct policy_set *ps;
	struct compiled c;
	int err = opts_parse(&check_cmd, argc, argv, &o);

	if (err != OPTS_GO_ON)
		return err;
	diags.file = argv[optind];
	ps = policy_set__load(argv[optind], &diags);
	err = ps ? compile_policies(ps, 0, NULL, &c, &diags) : -1;
	if (err) {
		report_errors(argv[optind], &diags, errno, o.json);
		diag__free(&diags);
		policy_set__free(ps);
		return EXIT_CONFIG;
	}
	report_ok(argv[optind], ps, &c, o.json);
	compiled__free(&c);
	policy_set__free(ps);
	return EXIT_OK;
}
