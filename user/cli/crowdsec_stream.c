// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * CrowdSec's decisions stream: durations, answers and the set of
 * decisions in force (crowdsec_stream.h). JSON through json-c.
 */
#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/crowdsec_stream.h"
#include "policy/policy.h"

#define CS_TYPE_BAN "ban"

static const char *const skip_names[CS_SKIP_N] = {
	[CS_SKIP_SCOPE] = "scope",	 [CS_SKIP_TYPE] = "type",	[CS_SKIP_VALUE] = "value",
	[CS_SKIP_DURATION] = "duration", [CS_SKIP_EXPIRED] = "expired", [CS_SKIP_WIDE] = "wide",
};

const char *cs_skip_name(enum cs_skip why)
{
	return why < CS_SKIP_N ? skip_names[why] : "?";
}

/* Go's duration units, longest text first where one is a prefix of another. */
static const struct {
	const char *text;
	unsigned long long ns;
} units[] = {
	{ "ns", 1 },
	{ "us", SLUICE_NSEC_PER_USEC },
	{ "\xc2\xb5s", SLUICE_NSEC_PER_USEC }, /* U+00B5 micro sign */
	{ "\xce\xbcs", SLUICE_NSEC_PER_USEC }, /* U+03BC Greek mu */
	{ "ms", SLUICE_NSEC_PER_MSEC },
	{ "s", SLUICE_NSEC_PER_SEC },
	{ "m", SLUICE_NSEC_PER_MIN },
	{ "h", SLUICE_NSEC_PER_HOUR },
};

/* The unit at @s: its length into *@len and its nanoseconds, or 0 for none. */
static unsigned long long unit_at(const char *s, size_t *len)
{
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		*len = strlen(units[i].text);
		/* "m" must not take the "m" of "ms". */
		if (!strncmp(s, units[i].text, *len) && !(*len == 1 && s[0] == 'm' && s[1] == 's'))
			return units[i].ns;
	}
	return 0;
}

int cs_parse_duration(const char *s, long long *ns)
{
	unsigned long long total = 0, whole, unit;
	int neg = 0;
	size_t len;

	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (!strcmp(s, "0")) {
		*ns = 0;
		return 0;
	}
	if (!*s)
		return -EINVAL;
	while (*s) {
		double frac = 0, scale = 1;
		int digits = 0;

		for (whole = 0; isdigit((unsigned char)*s); s++, digits++) {
			if (whole > (ULLONG_MAX - 9) / 10)
				return -ERANGE;
			whole = whole * 10 + (unsigned long long)(*s - '0');
		}
		if (*s == '.')
			for (s++; isdigit((unsigned char)*s); s++, digits++)
				frac += (*s - '0') * (scale /= 10);
		if (!digits)
			return -EINVAL;
		unit = unit_at(s, &len);
		if (!unit)
			return -EINVAL;
		s += len;
		if (whole > (unsigned long long)LLONG_MAX / unit)
			return -ERANGE;
		total += whole * unit + (unsigned long long)(frac * (double)unit);
		if (total > (unsigned long long)LLONG_MAX)
			return -ERANGE;
	}
	*ns = neg ? -(long long)total : (long long)total;
	return 0;
}

/* @o's string member @name, or NULL. */
static const char *member(struct json_object *o, const char *name)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/*
 * One decision @o: its key into @k and, for a new one (@now_real not 0),
 * its expiry into *@exp. 0, or 1 after counting why it is skipped in @a.
 */
static int decision(struct json_object *o, __u64 now_real, struct sluice_addr_key *k, __u64 *exp,
		    struct cs_answer *a)
{
	const char *scope = member(o, "scope"), *type = member(o, "type");
	const char *value = member(o, "value"), *dur = member(o, "duration");
	struct policy_prefix p;
	char err[DIAG_MSG_LEN];
	long long ns;
	enum cs_skip why = CS_SKIP_N;

	if (!scope || (strcasecmp(scope, "ip") != 0 && strcasecmp(scope, "range") != 0))
		why = CS_SKIP_SCOPE;
	else if (!type || strcasecmp(type, CS_TYPE_BAN) != 0)
		why = CS_SKIP_TYPE;
	else if (!value || policy_parse_prefix(value, &p, err, sizeof(err)))
		why = CS_SKIP_VALUE;
	else if (now_real && (!dur || cs_parse_duration(dur, &ns)))
		why = CS_SKIP_DURATION;
	else if (now_real && ns <= 0)
		why = CS_SKIP_EXPIRED;
	if (why != CS_SKIP_N) {
		a->skipped[why]++;
		return 1;
	}
	bans__key(k, p.addr, p.bits);
	if (now_real)
		*exp = now_real + (__u64)ns;
	return 0;
}

/* Member @name of @root: a list (its length into *@n), or null/absent (0). */
static int list_of(struct json_object *root, const char *name, struct json_object **l, size_t *n,
		   char *err, size_t errlen)
{
	*n = 0;
	if (!json_object_object_get_ex(root, name, l) || !*l)
		return 0;
	if (!json_object_is_type(*l, json_type_array)) {
		snprintf(err, errlen, "\"%s\" is not a list", name);
		return -EINVAL;
	}
	*n = json_object_array_length(*l);
	return 0;
}

static int parse_lists(struct json_object *root, __u64 now_real, struct cs_answer *a, char *err,
		       size_t errlen)
{
	struct json_object *adds, *dels;
	size_t i, n_add, n_del;
	int rc = list_of(root, "new", &adds, &n_add, err, errlen)
			 ?: list_of(root, "deleted", &dels, &n_del, err, errlen);

	if (rc)
		return rc;
	a->add = calloc(n_add + 1, sizeof(*a->add));
	a->del = calloc(n_del + 1, sizeof(*a->del));
	if (!a->add || !a->del)
		return -ENOMEM;
	for (i = 0; i < n_add; i++) {
		struct cs_decision *d = &a->add[a->n_add];

		if (!decision(json_object_array_get_idx(adds, i), now_real, &d->key,
			      &d->expires_real_ns, a))
			a->n_add++;
	}
	for (i = 0; i < n_del; i++)
		if (!decision(json_object_array_get_idx(dels, i), 0, &a->del[a->n_del], NULL, a))
			a->n_del++;
	return 0;
}

int cs_answer_parse(const char *body, size_t len, __u64 now_real, struct cs_answer *a, char *err,
		    size_t errlen)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root = NULL;
	int rc;

	memset(a, 0, sizeof(*a));
	if (!tok)
		return -ENOMEM;
	if (len > INT_MAX) {
		snprintf(err, errlen, "the answer is %zu bytes, more than json-c reads", len);
		json_tokener_free(tok);
		return -EINVAL;
	}
	root = json_tokener_parse_ex(tok, body, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success) {
		snprintf(err, errlen, "not JSON: %s",
			 json_tokener_error_desc(json_tokener_get_error(tok)));
		rc = -EINVAL;
	} else if (!json_object_is_type(root, json_type_object)) {
		snprintf(err, errlen, "not a JSON object");
		rc = -EINVAL;
	} else
		rc = parse_lists(root, now_real, a, err, errlen);
	json_object_put(root);
	json_tokener_free(tok);
	if (rc)
		cs_answer_free(a);
	return rc;
}

void cs_answer_free(struct cs_answer *a)
{
	free(a->add);
	free(a->del);
	a->add = NULL;
	a->del = NULL;
	a->n_add = a->n_del = 0;
}

static int cmp_key(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct sluice_addr_key));
}

/* By key, then the latest expiry first. */
static int cmp_decision(const void *a, const void *b)
{
	const struct cs_decision *x = a, *y = b;
	int d = cmp_key(&x->key, &y->key);

	if (d)
		return d;
	return x->expires_real_ns > y->expires_real_ns ? -1
						       : x->expires_real_ns < y->expires_real_ns;
}

int cs_set_apply(struct cs_set *set, const struct cs_answer *a, int startup)
{
	size_t n_old = startup ? 0 : set->n, i = 0, j = 0, n_add = 0, n = 0;
	struct cs_decision *add = calloc(a->n_add + 1, sizeof(*add));
	struct cs_decision *out = calloc(n_old + a->n_add + 1, sizeof(*out));
	struct sluice_addr_key *del = calloc(a->n_del + 1, sizeof(*del));

	if (!add || !out || !del) {
		free(add);
		free(out);
		free(del);
		return -ENOMEM;
	}
	memcpy(add, a->add, a->n_add * sizeof(*add));
	qsort(add, a->n_add, sizeof(*add), cmp_decision);
	for (i = 0; i < a->n_add; i++) /* the first of a key has its latest expiry */
		if (!n_add || cmp_key(&add[n_add - 1].key, &add[i].key))
			add[n_add++] = add[i];
	memcpy(del, a->del, a->n_del * sizeof(*del));
	qsort(del, a->n_del, sizeof(*del), cmp_key);
	/* Both sorted: a merge walk, the answer's decision over the old one. */
	for (i = 0; i < n_old || j < n_add;) {
		int d = i == n_old ? 1 : j == n_add ? -1 : cmp_key(&set->e[i].key, &add[j].key);

		if (d > 0) {
			out[n++] = add[j++];
		} else if (d == 0) {
			out[n++] = add[j++];
			i++;
		} else {
			if (!bsearch(&set->e[i].key, del, a->n_del, sizeof(*del), cmp_key))
				out[n++] = set->e[i];
			i++;
		}
	}
	free(add);
	free(del);
	free(set->e);
	set->e = out;
	set->n = n;
	return 0;
}

size_t cs_set_prune(struct cs_set *set, __u64 now_real)
{
	size_t i, out = 0;

	for (i = 0; i < set->n; i++)
		if (set->e[i].expires_real_ns > now_real)
			set->e[out++] = set->e[i];
	i = set->n - out;
	set->n = out;
	return i;
}

void cs_set_free(struct cs_set *set)
{
	free(set->e);
	set->e = NULL;
	set->n = 0;
}
