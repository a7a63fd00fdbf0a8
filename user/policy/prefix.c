// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Prefixes in a policy file: the text of one ("10.0.0.0/8", with its
 * messages), how two relate (equal, inside, covered by a list), and the
 * lists of them (match.src, src_except, dst, allow), duplicates reported.
 * Addresses themselves (mapping, masking, text) are base/addr.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "policy/parse.h"

#define PREFIX_EXPECTED                                                                            \
	"an address such as 192.0.2.1 or a prefix such as 10.0.0.0/8 or 2001:db8::/32"
#define PREFIXES_EXPECTED "a prefix such as 10.0.0.0/8, or a sequence of them"

/* ---- prefixes ------------------------------------------------------------- */

#define prefix_error(err, errlen, s, ...)                                                          \
	diag_value_error((err), (errlen), (s), "a prefix", __VA_ARGS__)

int prefix_equal(const struct policy_prefix *a, const struct policy_prefix *b)
{
	return a->bits == b->bits && !memcmp(a->addr, b->addr, SLUICE_ADDR_LEN);
}

/* Every address of @inner is in @outer; an equal prefix is inside. */
int prefix_contains(const struct policy_prefix *outer, const struct policy_prefix *inner)
{
	__u8 masked[SLUICE_ADDR_LEN];

	if (outer->bits > inner->bits)
		return 0;
	addr_mask(inner->addr, outer->bits, masked);
	return !memcmp(masked, outer->addr, SLUICE_ADDR_LEN);
}

/*
 * Every address of @p is in some prefix of @cover, which may take several
 * to cover it. Either one prefix holds all of @p, or @p is cut in halves
 * that must each be covered; only a half that holds a smaller prefix of
 * @cover is cut again, so at most SLUICE_ADDR_BITS levels per prefix of
 * @cover are visited, and the first uncovered half ends the search.
 */
int prefix_covered(const struct policy_prefix *p, const struct policy_prefix_list *cover)
{
	struct policy_prefix half = *p;
	int has_smaller = 0;
	size_t i;

	for (i = 0; i < cover->n; i++) {
		if (prefix_contains(&cover->v[i], p))
			return 1;
		has_smaller |= prefix_contains(p, &cover->v[i]);
	}
	if (!has_smaller) /* also ends a /128: anything inside it would hold it */
		return 0;
	half.bits++;
	if (!prefix_covered(&half, cover))
		return 0;
	/* the other half: set the first bit past @p's length */
	half.addr[p->bits / BITS_PER_BYTE] |=
		(__u8)(1u << (BITS_PER_BYTE - 1 - p->bits % BITS_PER_BYTE));
	return prefix_covered(&half, cover);
}

/* "'S' has host bits set (did you mean M?)" into @err; returns -EINVAL. */
static int host_bits_error(char *err, size_t errlen, const char *s, const struct policy_prefix *p)
{
	__u8 net[SLUICE_ADDR_LEN];
	char text[ADDR_TEXT_LEN];

	addr_mask(p->addr, p->bits, net);
	/* A cut message is still a message; snprintf() terminates it. */
	if (addr_text(text, sizeof(text), net, p->bits))
		snprintf(err, errlen, "'%.*s%s' has host bits set", DIAG_SHOW(s));
	else
		snprintf(err, errlen, "'%.*s%s' has host bits set (did you mean %s?)", DIAG_SHOW(s),
			 text);
	return -EINVAL;
}

/* The "N" after the '/' of @s, at @p: 0 to @max_bits. */
static int prefix_length(const char *s, const char *p, __u64 max_bits, int is_ipv6, __u64 *bits,
			 char *err, size_t errlen)
{
	int ret = units_parse_u64(p, p + strlen(p), bits);

	if (!p[0])
		return prefix_error(err, errlen, s, "no length after the '/' (expected 0 to %llu)",
				    max_bits);
	if (ret == -EINVAL)
		return prefix_error(err, errlen, s,
				    "the length '%.*s%s' is not a number "
				    "(expected 0 to %llu)",
				    DIAG_SHOW(p), max_bits);
	if (ret || *bits > max_bits)
		return prefix_error(err, errlen, s,
				    "the length /%.*s%s is out of range "
				    "(expected 0 to %llu for %s)",
				    DIAG_SHOW(p), max_bits, is_ipv6 ? "IPv6" : "IPv4");
	return 0;
}

/* The address part, the first @addr_len characters of @s, is not an address. */
static int address_error(char *err, size_t errlen, const char *s, size_t addr_len, int is_ipv6)
{
	const char *family = is_ipv6 ? "IPv6" : "IPv4";
	const char *example = is_ipv6 ? "2001:db8::1" : "192.0.2.1";

	if (!s[addr_len])
		return prefix_error(err, errlen, s,
				    "it is not an %s address (expected an address "
				    "such as %s)",
				    family, example);
	return prefix_error(err, errlen, s,
			    "'%.*s%s' is not an %s address (expected an address "
			    "such as %s)",
			    diag_show_len(s, addr_len), s, diag_show_cut(s, addr_len), family,
			    example);
}

int policy_parse_prefix(const char *s, struct policy_prefix *out, char *err, size_t errlen)
{
	const char *slash = strchr(s, '/');
	size_t addr_len = slash ? (size_t)(slash - s) : strlen(s);
	int is_ipv6 = memchr(s, ':', addr_len) != NULL;
	struct policy_prefix p = { .bits = 0 };
	char text[INET6_ADDRSTRLEN];
	__u64 bits = is_ipv6 ? SLUICE_ADDR_BITS : SLUICE_IPV4_BITS;

	if (!s[0])
		return prefix_error(err, errlen, s, "it is empty (expected %s)", PREFIX_EXPECTED);
	if (!addr_len)
		return prefix_error(err, errlen, s, "no address before the '/' (expected %s)",
				    PREFIX_EXPECTED);
	if (addr_len < sizeof(text)) {
		memcpy(text, s, addr_len);
		text[addr_len] = '\0';
	}
	if (addr_len >= sizeof(text) || addr_parse(text, p.addr) != !is_ipv6)
		return address_error(err, errlen, s, addr_len, is_ipv6);
	if (slash && prefix_length(s, slash + 1, bits, is_ipv6, &bits, err, errlen))
		return -EINVAL;
	p.bits = (__u8)(is_ipv6 ? bits : SLUICE_V4MAPPED_BITS + bits);
	if (!prefix_contains(&p, &p)) /* not equal to itself masked to its length */
		return host_bits_error(err, errlen, s, &p);
	*out = p;
	return 0;
}

/* ---- lists of prefixes ------------------------------------------------------ */

static int parse_prefix_item(struct pctx *c, const yaml_node_t *item, const char *path,
			     struct policy_prefix *out)
{
	const char *s = scalar_of(c, item, path, PREFIX_EXPECTED);
	char err[DIAG_MSG_LEN];

	if (!s)
		return -EINVAL;
	if (policy_parse_prefix(s, out, err, sizeof(err)))
		return REPORT(c, item, path, "%s", err);
	out->pos = node_pos(item);
	return 0;
}

/* By address, then length, then list order: equal prefixes sit together, first one first. */
static int cmp_prefix_ptr(const void *a, const void *b)
{
	const struct policy_prefix *x = *(const struct policy_prefix *const *)a;
	const struct policy_prefix *y = *(const struct policy_prefix *const *)b;
	int d = memcmp(x->addr, y->addr, SLUICE_ADDR_LEN);

	if (d)
		return d;
	if (x->bits != y->bits)
		return x->bits < y->bits ? -1 : 1;
	return (x > y) - (x < y);
}

/* Report every entry of @list (parsed from the sequence @val) equal to an earlier one. */
static int report_duplicates(struct pctx *c, const struct policy_prefix_list *list,
			     const yaml_node_t *val, const char *path)
{
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to structs */
	const struct policy_prefix **sorted = calloc(list->n, sizeof(*sorted));
	char ipath[DIAG_FIELD_LEN], first[DIAG_FIELD_LEN];
	const yaml_node_t *item;
	size_t i, head = 0;
	int err = 0;

	if (!sorted)
		return pctx__fail(c, -ENOMEM);
	for (i = 0; i < list->n; i++)
		sorted[i] = &list->v[i];
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to structs */
	qsort(sorted, list->n, sizeof(*sorted), cmp_prefix_ptr);
	for (i = 1; i < list->n && !c->fatal; i++) {
		if (!prefix_equal(sorted[head], sorted[i])) {
			head = i;
			continue;
		}
		item = list_item(c, val, path, (int)(sorted[i] - list->v), ipath);
		if (item && !path_index(c, first, path, (int)(sorted[head] - list->v)))
			err = REPORT(c, item, ipath,
				     "prefix '%.*s%s' is listed twice (first as %s)",
				     DIAG_SHOW(scalar_text(item)), first);
	}
	free(sorted);
	return err;
}

/* A list of at most @max prefixes into @list, which owns what it holds even on failure. */
int parse_prefix_list(struct pctx *c, const yaml_node_t *val, const char *path, size_t max,
		      const char *empty_hint, struct policy_prefix_list *list)
{
	char ipath[DIAG_FIELD_LEN];
	const yaml_node_t *item;
	int i, n, err = 0;

	n = list_check(c, val, path, PREFIXES_EXPECTED, max, empty_hint);
	if (n <= 0)
		return n;
	list->v = calloc(n, sizeof(*list->v));
	if (!list->v)
		return pctx__fail(c, -ENOMEM);
	list->n = n;
	for (i = 0; i < n && !c->fatal; i++) {
		item = list_item(c, val, path, i, ipath);
		if (!item || parse_prefix_item(c, item, ipath, &list->v[i]))
			err = -EINVAL;
	}
	if (!err && n > 1)
		err = report_duplicates(c, list, val, path);
	return err;
}
