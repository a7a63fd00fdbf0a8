// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A policy's `escalate: { after: N, within: W, ban: D, list: NAME }`
 * (docs/policy.md, "Escalation"): a key denied N times within W becomes
 * a ban of its source prefix, for D, on ban list NAME. The agent does it
 * (agent/escalate.c); this is the file's side, and the checks against
 * the rest of the policy.
 */
#include <errno.h>
#include <string.h>

#include "policy/parse.h"

#define LIST_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"

enum escalate_field {
	ESCF_AFTER = 0,
	ESCF_WITHIN,
	ESCF_BAN,
	ESCF_LIST,
	ESCF_MAX,
};

static int parse_after(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_escalate *e = w->obj;
	const char *s = scalar_of(c, val, path, "a count of denials such as 1000");
	const char *p = s;
	__u64 n = 0;

	if (!s)
		return -EINVAL;
	if (units_scan_count(&p, s + strlen(s), &n) != QTY_OK || *p || n == 0 ||
	    n > POLICY_ESCALATE_AFTER_MAX)
		return REPORT(c, val, path,
			      "'%.*s%s' is not a count of denials (expected a whole number "
			      "from 1 to %llu, such as 1000)",
			      DIAG_SHOW(s), POLICY_ESCALATE_AFTER_MAX);
	e->after = n;
	return 0;
}

/* A duration from @min_ns to @max_ns into *@out; @what names it in messages. */
static int scan_span(struct pctx *c, const yaml_node_t *val, const char *path, const char *what,
		     __u64 min_ns, __u64 max_ns, __u64 *out)
{
	const char *s = scalar_of(c, val, path, "a duration such as 10s");
	char err[DIAG_MSG_LEN], lo[UNITS_TEXT_LEN], hi[UNITS_TEXT_LEN];
	__u64 ns = 0;

	if (!s)
		return -EINVAL;
	if (units_scan_duration(s, &ns, err, sizeof(err)))
		return REPORT(c, val, path, "%s", err);
	if (ns < min_ns || ns > max_ns)
		return REPORT(c, val, path, "%s '%.*s%s' is out of range (expected %s to %s)", what,
			      DIAG_SHOW(s), units_duration_text(lo, (double)min_ns),
			      units_duration_text(hi, (double)max_ns));
	*out = ns;
	return 0;
}

static int parse_within(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_escalate *e = w->obj;

	return scan_span(c, val, path, "within", POLICY_ESCALATE_WITHIN_MIN_NS,
			 POLICY_ESCALATE_WITHIN_MAX_NS, &e->within_ns);
}

static int parse_ban(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_escalate *e = w->obj;

	return scan_span(c, val, path, "ban", POLICY_ESCALATE_BAN_MIN_NS,
			 POLICY_ESCALATE_BAN_MAX_NS, &e->ban_ns);
}

static int parse_list(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_escalate *e = w->obj;
	const char *s = scalar_of(c, val, path, "a ban list name such as repeat-offenders");
	size_t len, i;

	if (!s)
		return -EINVAL;
	len = strlen(s);
	if (len >= POLICY_LIST_LEN)
		return REPORT(c, val, path,
			      "list name '%.*s%s' is too long: %zu characters (at most %d)",
			      DIAG_SHOW(s), len, POLICY_LIST_LEN - 1);
	i = strspn(s, LIST_CHARS);
	if (s[i])
		return report_bad_char(c, val, path, "list name", s, i,
				       "expected letters, digits, '_', '.' and '-'");
	memcpy(e->list, s, len + 1);
	return 0;
}

static const struct field escalate_fields[ESCF_MAX] = {
	[ESCF_AFTER] = { "after", parse_after,
			 "escalate needs after: the denials that make a ban, such as after: 1000" },
	[ESCF_WITHIN] = { "within", parse_within,
			  "escalate needs within: the window of the denials, such as within: 10s" },
	[ESCF_BAN] = { "ban", parse_ban,
		       "escalate needs ban: how long a ban lasts, such as ban: 10m" },
	[ESCF_LIST] = { "list", parse_list,
			"escalate needs list: the ban list, such as list: repeat-offenders" },
};

int parse_escalate_into(struct pctx *c, const yaml_node_t *val, const char *path,
			struct policy_escalate *e)
{
	struct walk ew = WALK_INIT(e, val, path, escalate_fields, ESCF_MAX);

	if (walk_mapping(c, &ew))
		return -EINVAL;
	e->on = 1;
	return 0;
}
