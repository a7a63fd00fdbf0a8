// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The policies of a file: one policy's mapping (name, key, rate and burst,
 * the word fields, fail modes, the local bound; its match is match.c's),
 * the defaults its class and its limits imply, and the sequence of them,
 * with the check across policies that one never decides.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/names.h"
#include "policy/parse.h"

#define POLICY_NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"

/*
 * ceil(@n × @num / @den) for 0 < @num <= @den, so the result is at most @n.
 * The product may need 192 bits, so this is long division over the bits of
 * @n, keeping (the bits of @n so far) × num = q × den + r with r < den.
 * Nothing overflows: r < den, and r + x (x <= den) is computed as
 * r - (den - x) whenever it would reach den.
 */
static __u64 scale_ceil(__u64 n, unsigned __int128 num, unsigned __int128 den)
{
	unsigned __int128 r = 0;
	__u64 q = 0;
	int bit;

	for (bit = (int)(sizeof(n) * BITS_PER_BYTE) - 1; bit >= 0; bit--) {
		q <<= 1;
		if (r >= den - r) {
			r -= den - r;
			q++;
		} else {
			r += r;
		}
		if (!((n >> bit) & 1))
			continue;
		if (r >= den - num) {
			r -= den - num;
			q++;
		} else {
			r += num;
		}
	}
	return q + (r != 0);
}

/* ---- key: { ipv4_prefix, ipv6_prefix } ---------------------------------- */

enum key_field {
	KEYF_IPV4_PREFIX = 0,
	KEYF_IPV6_PREFIX,
	KEYF_MAX,
};

static int parse_ipv4_prefix(struct pctx *c, struct walk *w, const yaml_node_t *val,
			     const char *path)
{
	struct policy *p = w->obj;

	return parse_prefix_len(c, val, path, SLUICE_IPV4_BITS, &p->ipv4_prefix);
}

static int parse_ipv6_prefix(struct pctx *c, struct walk *w, const yaml_node_t *val,
			     const char *path)
{
	struct policy *p = w->obj;

	return parse_prefix_len(c, val, path, SLUICE_ADDR_BITS, &p->ipv6_prefix);
}

#define KEY_NEEDS_BOTH                                                                             \
	"a key needs both ipv4_prefix and ipv6_prefix (IPv6 sources are commonly a /64)"

static const struct field key_fields[KEYF_MAX] = {
	[KEYF_IPV4_PREFIX] = { "ipv4_prefix", parse_ipv4_prefix, KEY_NEEDS_BOTH },
	[KEYF_IPV6_PREFIX] = { "ipv6_prefix", parse_ipv6_prefix, KEY_NEEDS_BOTH },
};

/* ---- one policy ---------------------------------------------------------- */

enum policy_field {
	POLF_NAME = 0,
	POLF_MATCH,
	POLF_KEY,
	POLF_RATE,
	POLF_BURST, /* after POLF_RATE: its unit depends on the rate's */
	POLF_MODE,
	POLF_CLASS, /* before the fail modes: it sets their defaults */
	POLF_ON_AGENT_LOSS,
	POLF_ON_STORE_ERROR,
	POLF_CLOSED_AFTER, /* after both fail modes: it needs one to be degraded */
	POLF_LOCAL_LIMIT,  /* after POLF_RATE: no looser, same unit */
	POLF_LOCAL_BURST,  /* after POLF_BURST and POLF_LOCAL_LIMIT */
	POLF_SCOPE,
	POLF_COLD_MODE, /* after POLF_SCOPE: only a cluster policy has cold keys */
	POLF_CLOCK,
	POLF_EVENTS,
	POLF_ESCALATE, /* after POLF_KEY and POLF_MODE: it needs a key, and to enforce */
	POLF_MAX,
};

/* The words of two fields that are flags, not ABI enums: indexed by the flag. */
static const char *const cold_mode_names[] = { "share", "strict" }; /* policy.cold_strict */
static const char *const clock_names[] = { "coarse", "precise" };   /* policy.clock_precise */

/* A cluster policy needs the store (TOPF_STORE is walked before the policies). */
static int check_scope(struct pctx *c, const struct walk *w, const yaml_node_t *val,
		       const char *path, int v)
{
	(void)w;
	if (v == SLUICE_SCOPE_CLUSTER && !c->ps->store.url[0])
		return REPORT(c, val, path,
			      "scope 'cluster' needs a store (expected a top-level "
			      "'store' with 'redis'); without one the limit holds per node");
	return 0;
}

/* How a key of a cluster policy without a lease is held (docs/shared-budget.md). */
static int check_cold_mode(struct pctx *c, const struct walk *w, const yaml_node_t *val,
			   const char *path, int v)
{
	(void)v;
	if (slot_policy(w)->scope != SLUICE_SCOPE_CLUSTER)
		return REPORT(c, val, path,
			      "cold_mode applies to 'scope: cluster' policies only: a node "
			      "policy has no cold keys");
	return 0;
}

/* A field that is one of a few words: the word's index in @words is the value. */
struct word_field {
	const char *what;	  /* in "unknown WHAT 'x'" */
	const char *const *words; /* indexed by value */
	unsigned int n;
	unsigned int first; /* values below it are not a file's to choose (SLUICE_FAIL_NONE) */
	size_t offset;	    /* of the int-sized field in struct policy */
	int (*check)(struct pctx *c, const struct walk *w, const yaml_node_t *val, const char *path,
		     int v); /* NULL, or 0 / -EINVAL once reported */
};

#define WORD_FIELD(what, words, n, first, member, check)                                           \
	{                                                                                          \
		(what), (words), (n), (first), offsetof(struct policy, member), (check)            \
	}

/* By policy_fields row; the clock is docs/decisions.md's "The clock". */
static const struct word_field word_fields[POLF_MAX] = {
	[POLF_MODE] = WORD_FIELD("mode", sluice_mode_names, SLUICE_MODE_MAX, 0, mode, NULL),
	[POLF_CLASS] = WORD_FIELD("class", sluice_class_names, SLUICE_CLASS_MAX, 0, class, NULL),
	[POLF_ON_AGENT_LOSS] = WORD_FIELD("fail mode", sluice_fail_names, SLUICE_FAIL_MAX,
					  SLUICE_FAIL_OPEN, on_agent_loss, NULL),
	[POLF_ON_STORE_ERROR] = WORD_FIELD("fail mode", sluice_fail_names, SLUICE_FAIL_MAX,
					   SLUICE_FAIL_OPEN, on_store_error, NULL),
	[POLF_SCOPE] =
		WORD_FIELD("scope", sluice_scope_names, SLUICE_SCOPE_MAX, 0, scope, check_scope),
	[POLF_COLD_MODE] = WORD_FIELD("cold_mode", cold_mode_names, ARRAY_SIZE(cold_mode_names), 0,
				      cold_strict, check_cold_mode),
	[POLF_CLOCK] =
		WORD_FIELD("clock", clock_names, ARRAY_SIZE(clock_names), 0, clock_precise, NULL),
};

/* Enums are int-sized here, so parse_word() may store any of them as an int. */
_Static_assert(sizeof(enum sluice_mode) == sizeof(int), "enum sluice_mode is not an int");
_Static_assert(sizeof(enum sluice_class) == sizeof(int), "enum sluice_class is not an int");
_Static_assert(sizeof(enum sluice_fail) == sizeof(int), "enum sluice_fail is not an int");
_Static_assert(sizeof(enum sluice_scope) == sizeof(int), "enum sluice_scope is not an int");

/* The handler of every word_fields row: one of its words, else "unknown WHAT 'S' (expected ...)".
 */
static int parse_word(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	const struct word_field *f = &word_fields[w->row];
	int v;

	if (parse_word_value(c, val, path, f->what, f->words, f->n, f->first, &v))
		return -EINVAL;
	if (f->check && f->check(c, w, val, path, v))
		return -EINVAL;
	memcpy((char *)slot_policy(w) + f->offset, &v, sizeof(v));
	return 0;
}

/* What a policy's class implies for the fail fields it leaves out (DESIGN.md, "Fail modes"). */
struct class_defaults {
	enum sluice_fail on_agent_loss;
	enum sluice_fail on_store_error;
	__u64 closed_after_ns; /* 0: never closes */
};

static const struct class_defaults class_defaults[SLUICE_CLASS_MAX] = {
	[SLUICE_CLASS_SHEDDING] = { SLUICE_FAIL_DEGRADED, SLUICE_FAIL_DEGRADED, 0 },
	[SLUICE_CLASS_ABUSE] = { SLUICE_FAIL_DEGRADED, SLUICE_FAIL_DEGRADED,
				 POLICY_CLOSED_AFTER_NS_ABUSE },
};

static int parse_name(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	const struct policy_slot *slot = w->obj;
	const char *s = scalar_of(c, val, path, "a policy name such as dns-per-source");
	size_t len, i;

	if (!s)
		return -EINVAL;
	len = strlen(s);
	if (len >= SLUICE_NAME_LEN)
		return REPORT(c, val, path,
			      "policy name '%.*s%s' is too long: %zu characters "
			      "(at most %d)",
			      DIAG_SHOW(s), len, SLUICE_NAME_LEN - 1);
	i = strspn(s, POLICY_NAME_CHARS);
	if (s[i])
		return report_bad_char(c, val, path, "policy name", s, i,
				       "expected letters, digits, '_', '.' and '-'");
	for (i = 0; i < slot->n_prev; i++) {
		if (!strcmp(slot->prev[i].name, s))
			return REPORT(c, val, path,
				      "duplicate policy name '%s' (first used by "
				      "policies[%zu] at line %d)",
				      s, i, slot->prev[i].pos.line);
	}
	memcpy(slot->p->name, s, len + 1);
	return 0;
}

static int parse_key(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy *p = slot_policy(w);
	struct walk kw = WALK_INIT(p, val, path, key_fields, KEYF_MAX);

	if (walk_mapping(c, &kw))
		return -EINVAL;
	p->keyed = 1;
	return 0;
}

static int parse_rate(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy *p = slot_policy(w);
	const char *s = scalar_of(c, val, path, "a rate such as 100/s");
	char err[DIAG_MSG_LEN];

	p->rate_pos = node_pos(val);
	if (!s)
		return -EINVAL;
	if (policy_parse_rate(s, &p->rate, err, sizeof(err)))
		return REPORT(c, val, path, "%s", err);
	return 0;
}

/* The burst of @n @u, in the rate's cost units, into *@out (see scan_burst()). */
static int burst_in_cost_units(struct pctx *c, struct walk *w, const yaml_node_t *val,
			       const char *path, const char *what, __u64 n,
			       const struct amount_unit *u, __u64 *out)
{
	struct policy *p = slot_policy(w);
	const char *s = scalar_text(val);
	__u64 total;

	if (walk__ok(w, POLF_RATE) && p->rate.cost == SLUICE_COST_PKTS &&
	    u->cost != SLUICE_COST_PKTS)
		return REPORT(c, val, path,
			      "%s '%.*s%s' is a size but rate '%.*s%s' counts "
			      "packets (expected a packet count such as 200)",
			      what, DIAG_SHOW(s), DIAG_SHOW(scalar_text(w->val[POLF_RATE])));
	if (__builtin_mul_overflow(n, u->mult, &total))
		return REPORT(c, val, path, "'%.*s%s' is not a burst: it does not fit in 64 bits",
			      DIAG_SHOW(s));
	if (u->is_bits && total % BITS_PER_BYTE)
		return REPORT(c, val, path,
			      "%s '%.*s%s' is not a whole number of bytes "
			      "(expected a multiple of 8 bits)",
			      what, DIAG_SHOW(s));
	*out = u->is_bits ? total / BITS_PER_BYTE : total;
	return 0;
}

/*
 * A burst is a count of the rate's cost unit: packets for a packet rate,
 * bytes for a byte or bit rate, where it may carry a size unit (64kB).
 * @what is the field, for messages: burst or local_burst.
 */
static int scan_burst(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path,
		      const char *what, __u64 *out)
{
	const char *s = scalar_of(c, val, path, "a burst such as 200, or 64kB for a byte rate");
	char names[DIAG_MSG_LEN / 2];
	const struct amount_unit *u;
	const char *p = s;
	__u64 n;

	if (!s)
		return -EINVAL;
	switch (units_scan_count(&p, s + strlen(s), &n)) {
	case QTY_OK: break;
	case QTY_NO_NUMBER:
		return REPORT(c, val, path,
			      "'%.*s%s' is not a burst: no number (expected a "
			      "positive integer such as 200, or 64kB for a byte rate)",
			      DIAG_SHOW(s));
	case QTY_DECIMAL:
		return REPORT(c, val, path,
			      "'%.*s%s' is not a burst: decimals are not supported "
			      "(expected a whole number, such as 1500B instead of 1.5kB)",
			      DIAG_SHOW(s));
	case QTY_RANGE:
		return REPORT(c, val, path, "'%.*s%s' is not a burst: it does not fit in 64 bits",
			      DIAG_SHOW(s));
	}
	u = units_find_amount(p, strlen(p));
	if (!u) {
		units_amount_names(names, sizeof(names));
		return REPORT(c, val, path,
			      "'%.*s%s' is not a burst: unknown unit '%.*s%s' "
			      "(expected none, or %s for a byte rate)",
			      DIAG_SHOW(s), DIAG_SHOW(p), names);
	}
	if (n == 0)
		return REPORT(c, val, path,
			      "'%.*s%s' is not a burst: a burst of zero admits "
			      "nothing (expected at least 1)",
			      DIAG_SHOW(s));
	return burst_in_cost_units(c, w, val, path, what, n, u, out);
}

static int parse_burst(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy *p = slot_policy(w);

	p->burst_pos = node_pos(val);
	return scan_burst(c, w, val, path, "burst", &p->burst);
}

/* closed_after applies only to a degraded fail mode, as given or by the class's default. */
static int check_closed_after_applies(struct pctx *c, const struct walk *w, const yaml_node_t *val,
				      const char *path)
{
	const struct policy *p = slot_policy(w);
	const struct class_defaults *d = &class_defaults[p->class];
	enum sluice_fail agent = w->val[POLF_ON_AGENT_LOSS] ? p->on_agent_loss : d->on_agent_loss;
	enum sluice_fail store =
		w->val[POLF_ON_STORE_ERROR] ? p->on_store_error : d->on_store_error;

	/* With a bad fail mode the user sees that error; don't guess at this one. */
	if ((w->val[POLF_ON_AGENT_LOSS] && !walk__ok(w, POLF_ON_AGENT_LOSS)) ||
	    (w->val[POLF_ON_STORE_ERROR] && !walk__ok(w, POLF_ON_STORE_ERROR)))
		return 0;
	if (agent == SLUICE_FAIL_DEGRADED || store == SLUICE_FAIL_DEGRADED)
		return 0;
	return REPORT(c, val, path,
		      "closed_after never applies: it ends degraded mode, and "
		      "neither on_agent_loss (%s) nor on_store_error (%s) is degraded; remove it, "
		      "or set one of them to degraded",
		      sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, agent),
		      sluice_name(sluice_fail_names, SLUICE_FAIL_MAX, store));
}

#define CLOSED_AFTER_NEVER "never"

static int parse_closed_after(struct pctx *c, struct walk *w, const yaml_node_t *val,
			      const char *path)
{
	const char *s = scalar_of(c, val, path, "a duration such as 30s");
	char err[DIAG_MSG_LEN];
	__u64 ns = 0;

	if (!s)
		return -EINVAL;
	if (!strcmp(s, CLOSED_AFTER_NEVER)) {
		slot_policy(w)->closed_after_ns = 0; /* degraded for as long as the fault lasts */
		return 0;
	}
	if (units_scan_duration(s, &ns, err, sizeof(err)))
		return REPORT(c, val, path, "%s", err);
	if (ns == 0)
		return REPORT(
			c, val, path,
			"closed_after '%.*s%s' is zero (expected a positive "
			"duration such as 30s, or never); to close at once, set on_agent_loss "
			"or on_store_error to closed",
			DIAG_SHOW(s));
	if (check_closed_after_applies(c, w, val, path))
		return -EINVAL;
	slot_policy(w)->closed_after_ns = ns;
	return 0;
}

/* The local bound counts what the rate counts, and admits no more than it. */
static int check_local_rate(struct pctx *c, const struct walk *w, const yaml_node_t *val,
			    const char *path)
{
	const struct policy *p = slot_policy(w);
	const char *s = scalar_text(val), *rate = scalar_text(w->val[POLF_RATE]);

	if (p->local_rate.cost != p->rate.cost)
		return REPORT(c, val, path,
			      "local_limit '%.*s%s' counts %s but rate '%.*s%s' "
			      "counts %s (expected the rate's unit)",
			      DIAG_SHOW(s), sluice_cost_names[p->local_rate.cost], DIAG_SHOW(rate),
			      sluice_cost_names[p->rate.cost]);
	if (policy_rate_cmp(&p->local_rate, &p->rate) > 0)
		return REPORT(c, val, path,
			      "local_limit '%.*s%s' is looser than rate '%.*s%s' "
			      "(expected at most the rate)",
			      DIAG_SHOW(s), DIAG_SHOW(rate));
	return 0;
}

static int parse_local_limit(struct pctx *c, struct walk *w, const yaml_node_t *val,
			     const char *path)
{
	struct policy *p = slot_policy(w);
	const char *s = scalar_of(c, val, path, "a rate such as 50/s");
	char err[DIAG_MSG_LEN];

	if (!s)
		return -EINVAL;
	if (policy_parse_rate(s, &p->local_rate, err, sizeof(err)))
		return REPORT(c, val, path, "%s", err);
	if (walk__ok(w, POLF_RATE) && check_local_rate(c, w, val, path))
		return -EINVAL;
	p->has_local_limit = 1;
	return 0;
}

static int parse_local_burst(struct pctx *c, struct walk *w, const yaml_node_t *val,
			     const char *path)
{
	struct policy *p = slot_policy(w);
	__u64 n = 0;

	if (!w->val[POLF_LOCAL_LIMIT])
		return REPORT(c, val, path,
			      "local_burst needs local_limit: it is the burst of the "
			      "local bound (expected local_limit too, such as local_limit: 50/s)");
	if (scan_burst(c, w, val, path, "local_burst", &n))
		return -EINVAL;
	if (walk__ok(w, POLF_BURST) && n > p->burst)
		return REPORT(c, val, path,
			      "local_burst '%.*s%s' is more than burst '%.*s%s' "
			      "(expected at most the burst)",
			      DIAG_SHOW(scalar_text(val)),
			      DIAG_SHOW(scalar_text(w->val[POLF_BURST])));
	p->local_burst = n;
	return 0;
}

_Static_assert(KEYF_MAX <= WALK_MAX_FIELDS, "key_fields outgrew struct walk");
_Static_assert(POLF_MAX <= WALK_MAX_FIELDS, "policy_fields outgrew struct walk");

static int parse_policy_events(struct pctx *c, struct walk *w, const yaml_node_t *val,
			       const char *path)
{
	return parse_events_into(c, val, path, &slot_policy(w)->sample);
}

/* A key's source prefix is what a ban takes, and a shadow policy drops nothing to count. */
static int parse_policy_escalate(struct pctx *c, struct walk *w, const yaml_node_t *val,
				 const char *path)
{
	struct policy *p = slot_policy(w);

	if (!w->val[POLF_KEY])
		return REPORT(c, val, path,
			      "escalate needs a key: it bans the key's source prefix, and a "
			      "policy without one has a single key for every source (expected "
			      "key: { ipv4_prefix: 32, ipv6_prefix: 64 } too)");
	if (walk__ok(w, POLF_MODE) && p->mode == SLUICE_MODE_SHADOW)
		return REPORT(c, val, path,
			      "escalate needs mode: enforce: a shadow policy denies nothing, so "
			      "it has no denials to count (remove escalate, or the shadow mode)");
	return parse_escalate_into(c, val, path, &p->escalate);
}

static const struct field policy_fields[POLF_MAX] = {
	[POLF_NAME] = { "name", parse_name,
			"every policy needs a unique name, such as name: dns-per-source" },
	[POLF_MATCH] = { "match", parse_match, NULL },
	[POLF_KEY] = { "key", parse_key, NULL },
	[POLF_RATE] = { "rate", parse_rate, "every policy needs a rate, such as rate: 100/s" },
	[POLF_BURST] = { "burst", parse_burst,
			 "every policy needs a burst, such as burst: 200 (what may pass at once)" },
	[POLF_MODE] = { "mode", parse_word, NULL },
	[POLF_CLASS] = { "class", parse_word, NULL },
	[POLF_ON_AGENT_LOSS] = { "on_agent_loss", parse_word, NULL },
	[POLF_ON_STORE_ERROR] = { "on_store_error", parse_word, NULL },
	[POLF_CLOSED_AFTER] = { "closed_after", parse_closed_after, NULL },
	[POLF_LOCAL_LIMIT] = { "local_limit", parse_local_limit, NULL },
	[POLF_LOCAL_BURST] = { "local_burst", parse_local_burst, NULL },
	[POLF_SCOPE] = { "scope", parse_word, NULL },
	[POLF_COLD_MODE] = { "cold_mode", parse_word, NULL },
	[POLF_CLOCK] = { "clock", parse_word, NULL },
	[POLF_EVENTS] = { "events", parse_policy_events, NULL },
	[POLF_ESCALATE] = { "escalate", parse_policy_escalate, NULL },
};

/* ---- the policies sequence ---------------------------------------------------- */

/* The fields of a walked policy that it left out, by its class; the local burst by scaling. */
static void policy__set_defaults(struct policy *p, const struct walk *w)
{
	const struct class_defaults *d = &class_defaults[p->class];

	if (!w->val[POLF_ON_AGENT_LOSS])
		p->on_agent_loss = d->on_agent_loss;
	if (!w->val[POLF_ON_STORE_ERROR])
		p->on_store_error = d->on_store_error;
	if (!w->val[POLF_CLOSED_AFTER])
		p->closed_after_ns = d->closed_after_ns;
	/*
	 * burst × local / rate, rounded up: the local bound keeps the policy's
	 * burst duration. local <= rate, so this is 1..burst.
	 */
	if (p->has_local_limit && !w->val[POLF_LOCAL_BURST])
		p->local_burst = scale_ceil(
			p->burst, (unsigned __int128)p->local_rate.amount * p->rate.period_ns,
			(unsigned __int128)p->rate.amount * p->local_rate.period_ns);
}

static int parse_policy(struct pctx *c, struct policy_slot *slot, const yaml_node_t *item,
			const char *path)
{
	struct walk w = WALK_INIT(slot, item, path, policy_fields, POLF_MAX);

	slot->p->pos = node_pos(item);
	slot->p->match.proto = POLICY_PROTO_ANY;
	slot->p->mode = SLUICE_MODE_ENFORCE;
	slot->p->class = SLUICE_CLASS_SHEDDING;
	if (walk_mapping(c, &w))
		return -EINVAL;
	policy__set_defaults(slot->p, &w);
	return 0;
}

/*
 * Whenever @later would deny a packet, @earlier denies it first: both
 * enforce, they count the same packets with the same keys, and @earlier's
 * limit is no looser in rate and in burst.
 */
static int policy_decides_first(const struct policy *earlier, const struct policy *later)
{
	return earlier->mode == SLUICE_MODE_ENFORCE && later->mode == SLUICE_MODE_ENFORCE &&
	       earlier->keyed == later->keyed && earlier->ipv4_prefix == later->ipv4_prefix &&
	       earlier->ipv6_prefix == later->ipv6_prefix &&
	       earlier->rate.cost == later->rate.cost &&
	       policy_rate_cmp(&earlier->rate, &later->rate) <= 0 &&
	       earlier->burst <= later->burst && match_equal(&earlier->match, &later->match);
}

/* Report each valid policy (@ok[i]) that an earlier valid one always decides before. */
static int check_never_decides(struct pctx *c, const struct policy_set *ps, const unsigned char *ok,
			       const char *path)
{
	char ipath[DIAG_FIELD_LEN];
	size_t i, j;
	int err = 0;

	for (i = 1; i < ps->n_policies && !c->fatal; i++) {
		for (j = 0; ok[i] && j < i; j++) {
			const struct policy *first = &ps->policies[j];

			if (!ok[j] || !policy_decides_first(first, &ps->policies[i]))
				continue;
			if (!path_index(c, ipath, path, (int)i))
				err = REPORT_AT(
					c, ps->policies[i].pos, ipath,
					"never decides: "
					"policies[%zu] '%s' (line %d) has the same match and key "
					"and a limit no looser; remove this policy, or tighten its "
					"limit",
					j, first->name, first->pos.line);
			break;
		}
	}
	return err;
}

int parse_policies(struct pctx *c, struct walk *w, const yaml_node_t *seq, const char *path)
{
	struct policy_set *ps = w->obj;
	struct policy_slot slot = { .prev = NULL };
	unsigned char ok[SLUICE_MAX_POLICIES] = { 0 }; /* policy i parsed without error */
	char ipath[DIAG_FIELD_LEN];
	int i, n, err = 0;

	if (seq->type != YAML_SEQUENCE_NODE)
		return expected(c, seq, path, "a sequence of policies");
	n = seq_len(seq);
	if (n == 0)
		return REPORT(c, seq, path, "no policies (expected at least one)");
	if (n > SLUICE_MAX_POLICIES)
		return REPORT(c, seq, path, "%d policies are too many (at most %d)", n,
			      SLUICE_MAX_POLICIES);
	ps->policies = calloc(n, sizeof(*ps->policies));
	if (!ps->policies)
		return pctx__fail(c, -ENOMEM);
	ps->n_policies = n;
	slot.prev = ps->policies;
	slot.known = walk__ok(w, TOPF_INTERFACES) ? ps : NULL;
	for (i = 0; i < n && !c->fatal; i++) {
		const yaml_node_t *item = node_at(c, seq->data.sequence.items.start[i]);

		slot.p = &ps->policies[i];
		slot.n_prev = i;
		ok[i] = item && !path_index(c, ipath, path, i) &&
			!parse_policy(c, &slot, item, ipath);
		if (!ok[i])
			err = -EINVAL;
	}
	if (!c->fatal && check_never_decides(c, ps, ok, path))
		err = -EINVAL;
	return err;
}

int policy_on_iface(const struct policy *p, const char *iface)
{
	size_t i;

	if (!iface || !p->match.n_ifaces)
		return 1;
	for (i = 0; i < p->match.n_ifaces; i++)
		if (!strcmp(p->match.ifaces[i], iface))
			return 1;
	return 0;
}
