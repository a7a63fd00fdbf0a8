/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The policy file: YAML text in, a validated struct policy_set out. This is
 * the only code that reads YAML and it makes no BPF calls; compile.c turns
 * the result into map entries and checks what only the arithmetic knows.
 *
 * libyaml parses the text twice: once as events, to report syntax
 * errors, aliases and extra documents with their exact position, then as a
 * document whose nodes carry the line and column of every value. Each
 * mapping (top level, agent, a policy, its match, its key) is a table of
 * {name, handler, missing-hint} rows walked by walk_mapping(): adding a key
 * is a table row and a handler, not new control flow. Handlers run in table
 * order, so a handler may look at the rows above it (burst reads the rate,
 * closed_after the fail modes). Defaults that depend on other fields (the
 * class's fail modes, the scaled local burst) are set after a policy's walk;
 * checks across policies ("never decides") run once all of them are parsed.
 *
 * Errors never stop the walk: every problem of the file is collected into
 * the diag_list, sorted by position, and the set is returned only if there
 * were none. Only failures that are not the input's fault (no memory) end
 * the parse early.
 */
#define _GNU_SOURCE /* the GNU strerror_r */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "base/addr.h"
#include "base/names.h"
#include "policy/policy.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define BITS_PER_BYTE 8
#define DECIMAL_BASE  10
#define PORT_MIN      1
#define PORT_MAX      65535
#define ERRNO_MSG_LEN 128

#define WALK_MAX_FIELDS	  16 /* rows of the largest mapping table; bits of walk.bad */
#define POLICY_NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
#define IFNAME_BAD_CHARS  "/: \t"
#define PORT_EXPECTED	  "a port such as 53 or a range such as \"1024-65535\""
#define PREFIX_EXPECTED                                                                            \
	"an address such as 192.0.2.1 or a prefix such as 10.0.0.0/8 or 2001:db8::/32"
#define PREFIXES_EXPECTED "a prefix such as 10.0.0.0/8, or a sequence of them"
#define IFACES_EXPECTED	  "an interface name such as eth0, or a sequence of them"

/*
 * The agent's clock: a heartbeat faster than HEARTBEAT_NS_MIN costs CPU for
 * nothing, and the agent is lost after at least HEARTBEAT_TIMEOUTS missed
 * heartbeats, so that one late heartbeat is not an outage.
 */
#define HEARTBEAT_NS_MIN     (10 * SLUICE_NSEC_PER_MSEC)
#define AGENT_TIMEOUT_NS_MAX SLUICE_NSEC_PER_HOUR
#define HEARTBEAT_TIMEOUTS   2
#define HEARTBEAT_NS_MAX     (AGENT_TIMEOUT_NS_MAX / HEARTBEAT_TIMEOUTS)

/* Everything one parse needs; lives on the stack of policy_set__parse(). */
struct pctx {
	yaml_document_t *doc;
	struct diag_list *diags;
	struct policy_set *ps; /* what the file fills: for checks across sections */
	int fatal;	       /* first failure that is not the input's fault (-ENOMEM), or 0 */
};

struct walk;

/*
 * One row of a mapping's table. parse() fills w->obj from @val, whose field
 * path is @path; it returns 0, or -EINVAL once it has reported the problem.
 */
struct field {
	const char *name; /* the key; first member, see names_join() */
	int (*parse)(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path);
	const char *missing; /* NULL: optional; else required, and the hint when absent */
};

/* One mapping being walked against its table. */
struct walk {
	void *obj; /* what the handlers fill; the table decides the type */
	const yaml_node_t *map;
	const char *path; /* of the mapping: "policies[2]", "" at the top */
	const char *what; /* for expected() if map is no mapping; NULL: "a mapping" */
	const struct field *fields;
	size_t n_fields;
	const yaml_node_t *key[WALK_MAX_FIELDS]; /* by table row; NULL when absent */
	const yaml_node_t *val[WALK_MAX_FIELDS];
	unsigned int bad; /* bit per row whose handler rejected the value */
	size_t row;	  /* the row whose handler runs: for handlers shared by rows */
};

/*
 * What the policy and match handlers fill: one policy; the ones before it,
 * for unique names; and the file's interfaces, for the policy's iface list.
 */
struct policy_slot {
	struct policy *p;
	const struct policy *prev;
	size_t n_prev;
	const struct policy_set *known; /* its interfaces; NULL: none given, or given badly */
};

static struct policy *slot_policy(const struct walk *w)
{
	return ((struct policy_slot *)w->obj)->p;
}

static struct policy_match *slot_match(const struct walk *w)
{
	return &slot_policy(w)->match;
}

static int pctx__fail(struct pctx *c, int err)
{
	if (!c->fatal)
		c->fatal = err;
	return err;
}

/* What REPORT() returns: -EINVAL, the problem is reported, or the fatal error. */
static int report_done(struct pctx *c, int err)
{
	return err ? pctx__fail(c, err) : -EINVAL;
}

#define REPORT_AT(c, pos, path, ...)                                                               \
	report_done((c), diag__add((c)->diags, (pos), (path), __VA_ARGS__))
#define REPORT(c, node, path, ...) REPORT_AT((c), node_pos(node), (path), __VA_ARGS__)

static struct src_pos mark_pos(yaml_mark_t m)
{
	struct src_pos pos = { .line = (int)m.line + 1, .col = (int)m.column + 1 };

	return pos;
}

static struct src_pos node_pos(const yaml_node_t *n)
{
	return mark_pos(n->start_mark);
}

static const struct src_pos no_pos; /* a problem of the whole file */

static const char *scalar_text(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* Nodes never come back NULL from a document libyaml built; be safe anyway. */
static const yaml_node_t *node_at(struct pctx *c, int index)
{
	return yaml_document_get_node(c->doc, index);
}

static int is_null(const yaml_node_t *n)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };
	size_t i;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	for (i = 0; i < ARRAY_SIZE(nulls); i++) {
		if (!strcmp(scalar_text(n), nulls[i]))
			return 1;
	}
	return 0;
}

static const char *kind_name(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_MAPPING_NODE: return "a mapping";
	case YAML_SEQUENCE_NODE: return "a sequence";
	default: return is_null(n) ? "nothing" : "a scalar";
	}
}

/* Report that @n is not what @want describes; returns -EINVAL. */
static int expected(struct pctx *c, const yaml_node_t *n, const char *path, const char *want)
{
	if (n->type == YAML_SCALAR_NODE && !is_null(n))
		return REPORT(c, n, path, "expected %s, got '%.*s%s'", want,
			      DIAG_SHOW(scalar_text(n)));
	return REPORT(c, n, path, "expected %s, got %s", want, kind_name(n));
}

/* The text of a non-empty scalar, or NULL once the problem is reported. */
static const char *scalar_of(struct pctx *c, const yaml_node_t *n, const char *path,
			     const char *want)
{
	const char *s;

	if (n->type != YAML_SCALAR_NODE || is_null(n)) {
		expected(c, n, path, want);
		return NULL;
	}
	s = scalar_text(n);
	if (!s[0]) {
		REPORT(c, n, path, "expected %s, got an empty string", want);
		return NULL;
	}
	if (strlen(s) != n->data.scalar.length) {
		REPORT(c, n, path, "'%.*s%s' contains a NUL character (expected %s)", DIAG_SHOW(s),
		       want);
		return NULL;
	}
	return s;
}

static int seq_len(const yaml_node_t *seq)
{
	return (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
}

/* Field paths: "policies[2].rate". Truncation cannot happen with our tables; check anyway. */
__attribute__((format(printf, 3, 4))) static int path_fmt(struct pctx *c, char *buf,
							  const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, DIAG_FIELD_LEN, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= DIAG_FIELD_LEN)
		return pctx__fail(c, -ENAMETOOLONG);
	return 0;
}

static int path_key(struct pctx *c, char *buf, const char *parent, const char *name)
{
	if (!parent[0])
		return path_fmt(c, buf, "%s", name);
	return path_fmt(c, buf, "%s.%s", parent, name);
}

static int path_index(struct pctx *c, char *buf, const char *parent, int i)
{
	return path_fmt(c, buf, "%s[%d]", parent, i);
}

/* "eth0, eth1 or eth2" from @n interface names; cut short (still terminated) like names_join(). */
static void join_ifnames(char *buf, size_t len, const char (*names)[POLICY_IFNAME_LEN], size_t n)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (names_join_one(buf, len, &off, i, n, names[i]))
			return;
	}
}

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

/* ---- prefixes ------------------------------------------------------------- */

#define prefix_error(err, errlen, s, ...)                                                          \
	diag_value_error((err), (errlen), (s), "a prefix", __VA_ARGS__)

static int prefix_equal(const struct policy_prefix *a, const struct policy_prefix *b)
{
	return a->bits == b->bits && !memcmp(a->addr, b->addr, SLUICE_ADDR_LEN);
}

/* Every address of @inner is in @outer; an equal prefix is inside. */
static int prefix_contains(const struct policy_prefix *outer, const struct policy_prefix *inner)
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
static int prefix_covered(const struct policy_prefix *p, const struct policy_prefix_list *cover)
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
			    diag_show_len(addr_len), s, addr_len > DIAG_SHOW_MAX ? "..." : "",
			    family, example);
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

/* ---- walking a mapping against its table -------------------------------- */

static int walk__ok(const struct walk *w, int row)
{
	return w->val[row] && !(w->bad & (1u << row));
}

static int walk__find(const struct walk *w, const char *name)
{
	size_t i;

	for (i = 0; i < w->n_fields; i++) {
		if (!strcmp(w->fields[i].name, name))
			return (int)i;
	}
	return -1;
}

static int walk__unknown(struct pctx *c, const struct walk *w, const yaml_node_t *k)
{
	char names[DIAG_MSG_LEN / 2];

	names_join(names, sizeof(names), w->fields, w->n_fields, sizeof(w->fields[0]));
	return REPORT(c, k, w->path, "unknown key '%.*s%s' (expected %s)",
		      DIAG_SHOW(scalar_text(k)), names);
}

/* Sort the mapping's pairs into table rows; report unknown and duplicate keys. */
static int walk__collect(struct pctx *c, struct walk *w)
{
	const yaml_node_pair_t *end = w->map->data.mapping.pairs.top;
	const yaml_node_pair_t *pair;
	const yaml_node_t *k;
	int row, err = 0;

	for (pair = w->map->data.mapping.pairs.start; pair < end; pair++) {
		k = node_at(c, pair->key);
		if (!k)
			continue;
		if (k->type != YAML_SCALAR_NODE) {
			err = expected(c, k, w->path, "a key name");
			continue;
		}
		row = walk__find(w, scalar_text(k));
		if (row < 0)
			err = walk__unknown(c, w, k);
		else if (w->key[row])
			err = REPORT(c, k, w->path, "duplicate key '%s' (first at line %d)",
				     w->fields[row].name, node_pos(w->key[row]).line);
		else {
			w->key[row] = k;
			w->val[row] = node_at(c, pair->value);
		}
	}
	return err;
}

/* Run each row's handler in table order; report the required rows that are absent. */
static int walk__run(struct pctx *c, struct walk *w)
{
	char path[DIAG_FIELD_LEN];
	size_t row;
	int err = 0;

	for (row = 0; row < w->n_fields; row++) {
		const struct field *f = &w->fields[row];

		if (!w->val[row]) {
			if (f->missing)
				err = REPORT(c, w->map, w->path, "missing '%s'; %s", f->name,
					     f->missing);
			continue;
		}
		w->row = row;
		if (path_key(c, path, w->path, f->name) || f->parse(c, w, w->val[row], path)) {
			w->bad |= 1u << row;
			err = -EINVAL;
		}
	}
	return err;
}

static int walk_mapping(struct pctx *c, struct walk *w)
{
	int err_keys, err_rows;

	if (w->map->type != YAML_MAPPING_NODE)
		return expected(c, w->map, w->path, w->what ? w->what : "a mapping");
	err_keys = walk__collect(c, w);
	err_rows = walk__run(c, w);
	return err_keys ? err_keys : err_rows;
}

/* ---- small values -------------------------------------------------------- */

/* Report the first character of @s outside the allowed set. */
static int report_bad_char(struct pctx *c, const yaml_node_t *val, const char *path,
			   const char *what, const char *s, size_t at, const char *allowed)
{
	unsigned char ch = s[at];

	if (isascii(ch) && isprint(ch))
		return REPORT(c, val, path, "%s '%.*s%s' has a bad character '%c' (%s)", what,
			      DIAG_SHOW(s), ch, allowed);
	return REPORT(c, val, path, "%s '%.*s%s' has a bad byte 0x%02x (%s)", what, DIAG_SHOW(s),
		      ch, allowed);
}

/* A prefix length 1..@max_bits. */
static int parse_prefix_len(struct pctx *c, const yaml_node_t *val, const char *path,
			    __u64 max_bits, __u8 *out)
{
	const char *s = scalar_of(c, val, path, "a prefix length");
	__u64 bits;
	int err;

	if (!s)
		return -EINVAL;
	err = units_parse_u64(s, s + strlen(s), &bits);
	if (err == -EINVAL)
		return REPORT(c, val, path,
			      "prefix length '%.*s%s' is not a number "
			      "(expected 1 to %llu)",
			      DIAG_SHOW(s), max_bits);
	if (err || bits > max_bits)
		return REPORT(c, val, path,
			      "prefix length '%.*s%s' is out of range "
			      "(expected 1 to %llu)",
			      DIAG_SHOW(s), max_bits);
	if (bits == 0)
		return REPORT(c, val, path,
			      "prefix length '%.*s%s' is out of range "
			      "(expected 1 to %llu); for one bucket shared by all sources, "
			      "leave out 'key'",
			      DIAG_SHOW(s), max_bits);
	*out = (__u8)bits;
	return 0;
}

static int parse_bool(struct pctx *c, const yaml_node_t *val, const char *path, int *out)
{
	static const char *const yes[] = { "true", "True", "TRUE" };
	static const char *const no[] = { "false", "False", "FALSE" };
	const char *s = scalar_of(c, val, path, "true or false");
	size_t i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcmp(s, yes[i]) || !strcmp(s, no[i])) {
			*out = !strcmp(s, yes[i]);
			return 0;
		}
	}
	return REPORT(c, val, path, "'%.*s%s' is not a boolean (expected true or false)",
		      DIAG_SHOW(s));
}

/* An interface name as the kernel takes it: 1..15 bytes, no '/', ':' or space. */
static const char *ifname_of(struct pctx *c, const yaml_node_t *item, const char *path)
{
	const char *s = scalar_of(c, item, path, "an interface name such as eth0");
	size_t len;

	if (!s)
		return NULL;
	len = strlen(s);
	if (len >= POLICY_IFNAME_LEN) {
		REPORT(c, item, path,
		       "interface name '%.*s%s' is too long: %zu characters "
		       "(at most %d)",
		       DIAG_SHOW(s), len, POLICY_IFNAME_LEN - 1);
		return NULL;
	}
	if (s[strcspn(s, IFNAME_BAD_CHARS)]) {
		report_bad_char(c, item, path, "interface name", s, strcspn(s, IFNAME_BAD_CHARS),
				"an interface name has no '/', ':' or spaces");
		return NULL;
	}
	return s;
}

/* The index of @name in @names, or -1. */
static int find_ifname(const char (*names)[POLICY_IFNAME_LEN], size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!strcmp(names[i], name))
			return (int)i;
	}
	return -1;
}

/* ---- lists: a sequence, or one scalar for a list of one ------------------- */

/*
 * The number of items of the list @val, or -EINVAL once reported. An empty
 * list is fine if @empty_hint is NULL; else it is an error, and the hint
 * says what to write instead.
 */
static int list_check(struct pctx *c, const yaml_node_t *val, const char *path, const char *want,
		      size_t max, const char *empty_hint)
{
	int n;

	if (val->type == YAML_MAPPING_NODE || is_null(val))
		return expected(c, val, path, want);
	n = val->type == YAML_SEQUENCE_NODE ? seq_len(val) : 1;
	if (n == 0 && empty_hint)
		return REPORT(c, val, path, "empty list (expected %s); %s", want, empty_hint);
	if ((size_t)n > max)
		return REPORT(c, val, path, "%d entries are too many (at most %zu)", n, max);
	return n;
}

/* Item @i of the list @val, with its field path in @ipath; NULL on failure. */
static const yaml_node_t *list_item(struct pctx *c, const yaml_node_t *val, const char *path, int i,
				    char *ipath)
{
	if (val->type != YAML_SEQUENCE_NODE)
		return path_fmt(c, ipath, "%s", path) ? NULL : val;
	if (path_index(c, ipath, path, i))
		return NULL;
	return node_at(c, val->data.sequence.items.start[i]);
}

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
static int parse_prefix_list(struct pctx *c, const yaml_node_t *val, const char *path, size_t max,
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

/* ---- match: { proto, dst_port, tcp_syn, src, src_except, dst, iface } ---- */

enum match_field {
	MATCHF_PROTO = 0,
	MATCHF_DST_PORT,
	MATCHF_TCP_SYN,
	MATCHF_SRC,
	MATCHF_SRC_EXCEPT, /* after MATCHF_SRC: it must lie inside src */
	MATCHF_DST,
	MATCHF_IFACE,
	MATCHF_MAX,
};

/* The words of match.proto, in the order messages list them. */
static const struct proto_name {
	const char *name; /* first member, for names_join() */
	__u8 proto;
} proto_names[] = {
	{ "tcp", IPPROTO_TCP },	      { "udp", IPPROTO_UDP },	   { "icmp", IPPROTO_ICMP },
	{ "icmpv6", IPPROTO_ICMPV6 }, { "any", POLICY_PROTO_ANY },
};

const char *policy_proto_name(__u8 proto)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(proto_names); i++) {
		if (proto_names[i].proto == proto)
			return proto_names[i].name;
	}
	return NULL;
}

static int parse_proto(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_match *m = slot_match(w);
	const char *s = scalar_of(c, val, path, "a protocol such as tcp");
	char names[DIAG_MSG_LEN / 2];
	size_t i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(proto_names); i++) {
		if (!strcmp(s, proto_names[i].name)) {
			m->proto = proto_names[i].proto;
			return 0;
		}
	}
	names_join(names, sizeof(names), proto_names, ARRAY_SIZE(proto_names),
		   sizeof(proto_names[0]));
	return REPORT(c, val, path, "unknown protocol '%.*s%s' (expected %s)", DIAG_SHOW(s), names);
}

/* The proto as the user wrote it, for messages; the default when absent. */
static const char *match_proto_text(const struct walk *w)
{
	return w->val[MATCHF_PROTO] ? scalar_text(w->val[MATCHF_PROTO]) : "any";
}

enum port_err {
	PORTS_OK = 0,
	PORTS_SYNTAX,	 /* not "N" or "N-M" */
	PORTS_RANGE,	 /* a port outside PORT_MIN..PORT_MAX */
	PORTS_BACKWARDS, /* N > M */
};

static enum port_err scan_ports(const char *s, __u64 *lo, __u64 *hi)
{
	const char *end = s + strlen(s);
	const char *dash = strchr(s, '-');
	int err_lo, err_hi;

	err_lo = units_parse_u64(s, dash ? dash : end, lo);
	err_hi = dash ? units_parse_u64(dash + 1, end, hi) : err_lo;
	if (!dash)
		*hi = *lo;
	if (err_lo == -EINVAL || err_hi == -EINVAL)
		return PORTS_SYNTAX;
	if (err_lo || err_hi || *lo < PORT_MIN || *hi < PORT_MIN || *lo > PORT_MAX ||
	    *hi > PORT_MAX)
		return PORTS_RANGE;
	return *lo > *hi ? PORTS_BACKWARDS : PORTS_OK;
}

static int parse_dst_port(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_match *m = slot_match(w);
	const char *s = scalar_of(c, val, path, PORT_EXPECTED);
	__u64 lo, hi;

	if (!s)
		return -EINVAL;
	switch (scan_ports(s, &lo, &hi)) {
	case PORTS_OK: break;
	case PORTS_SYNTAX:
		return REPORT(c, val, path, "'%.*s%s' is not a port or a port range (expected %s)",
			      DIAG_SHOW(s), PORT_EXPECTED);
	case PORTS_RANGE:
		return REPORT(c, val, path, "port '%.*s%s' is out of range (expected %d to %d)",
			      DIAG_SHOW(s), PORT_MIN, PORT_MAX);
	case PORTS_BACKWARDS:
		return REPORT(c, val, path,
			      "port range '%.*s%s' is backwards (expected low-high, "
			      "such as \"%llu-%llu\")",
			      DIAG_SHOW(s), hi, lo);
	}
	if (walk__ok(w, MATCHF_PROTO) && m->proto != IPPROTO_TCP && m->proto != IPPROTO_UDP &&
	    m->proto != POLICY_PROTO_ANY)
		return REPORT(c, val, path,
			      "dst_port cannot be used with proto '%s': it has no "
			      "ports (expected proto tcp, udp or any)",
			      match_proto_text(w));
	m->has_port = 1;
	m->port_lo = (__u16)lo;
	m->port_hi = (__u16)hi;
	return 0;
}

static int parse_tcp_syn(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_match *m = slot_match(w);

	if (parse_bool(c, val, path, &m->tcp_syn))
		return -EINVAL;
	/* With a bad proto the user sees that error; don't guess at this one. */
	if (w->val[MATCHF_PROTO] && !walk__ok(w, MATCHF_PROTO))
		return 0;
	if (m->proto != IPPROTO_TCP)
		return REPORT(c, val, path,
			      "tcp_syn cannot be used with proto '%s': only TCP has "
			      "a SYN flag; set proto: tcp",
			      match_proto_text(w));
	return 0;
}

static int parse_src(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	return parse_prefix_list(c, val, path, POLICY_MAX_PREFIXES,
				 "leave out src to match every source", &slot_match(w)->src);
}

static int report_excludes_nothing(struct pctx *c, const yaml_node_t *val, const char *path, int i)
{
	char ipath[DIAG_FIELD_LEN];
	const yaml_node_t *item = list_item(c, val, path, i, ipath);

	if (!item)
		return -EINVAL;
	return REPORT(c, item, ipath,
		      "'%.*s%s' excludes nothing: it is not inside any src prefix "
		      "(expected a prefix inside one of src)",
		      DIAG_SHOW(scalar_text(item)));
}

/*
 * Each src_except prefix (from the list @val) lies inside a src prefix, and
 * some source is left: with no src, the sources are all of ::/0.
 */
static int check_src_except(struct pctx *c, const struct policy_match *m, const yaml_node_t *val,
			    const char *path)
{
	struct policy_prefix any = { .bits = 0 };
	struct policy_prefix_list all = { .v = &any, .n = 1 };
	const struct policy_prefix_list *src = m->src.n ? &m->src : &all;
	size_t i, j;
	int err = 0;

	for (i = 0; i < m->src_except.n && m->src.n; i++) {
		for (j = 0; j < src->n && !prefix_contains(&src->v[j], &m->src_except.v[i]); j++)
			;
		if (j == src->n)
			err = report_excludes_nothing(c, val, path, (int)i);
	}
	for (i = 0; i < src->n && prefix_covered(&src->v[i], &m->src_except); i++)
		;
	if (i == src->n)
		err = REPORT(c, val, path,
			     "matches no source: every src prefix is excluded by "
			     "src_except");
	return err;
}

static int parse_src_except(struct pctx *c, struct walk *w, const yaml_node_t *val,
			    const char *path)
{
	struct policy_match *m = slot_match(w);

	if (parse_prefix_list(c, val, path, POLICY_MAX_PREFIXES,
			      "leave out src_except to exclude nothing", &m->src_except))
		return -EINVAL;
	/* With a bad src the user sees that error; don't guess at this one. */
	if (w->val[MATCHF_SRC] && !walk__ok(w, MATCHF_SRC))
		return 0;
	return check_src_except(c, m, val, path);
}

static int parse_dst(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	return parse_prefix_list(c, val, path, POLICY_MAX_PREFIXES,
				 "leave out dst to match every destination", &slot_match(w)->dst);
}

/* When the file lists its interfaces, a policy's interface must be one of them. */
static int check_iface_known(struct pctx *c, const struct walk *w, const yaml_node_t *item,
			     const char *path, const char *name)
{
	const struct policy_set *known = ((const struct policy_slot *)w->obj)->known;
	char names[DIAG_MSG_LEN / 2];

	if (!known || find_ifname(known->ifaces, known->n_ifaces, name) >= 0)
		return 0;
	if (!known->n_ifaces)
		return REPORT(c, item, path,
			      "interface '%s' is not in the top-level interfaces "
			      "list, which is empty; add it there",
			      name);
	join_ifnames(names, sizeof(names), known->ifaces, known->n_ifaces);
	return REPORT(c, item, path,
		      "interface '%s' is not in the top-level interfaces list "
		      "(expected %s)",
		      name, names);
}

static int parse_match_iface(struct pctx *c, struct walk *w, const yaml_node_t *val,
			     const char *path)
{
	struct policy_match *m = slot_match(w);
	char ipath[DIAG_FIELD_LEN], first[DIAG_FIELD_LEN];
	const yaml_node_t *item;
	const char *s;
	int i, j, n, err = 0;

	n = list_check(c, val, path, IFACES_EXPECTED, POLICY_MAX_IFACES,
		       "leave out iface to match every interface");
	if (n < 0)
		return n;
	m->ifaces = calloc(n, sizeof(*m->ifaces));
	if (!m->ifaces)
		return pctx__fail(c, -ENOMEM);
	m->n_ifaces = n;
	for (i = 0; i < n && !c->fatal; i++) {
		item = list_item(c, val, path, i, ipath);
		s = item ? ifname_of(c, item, ipath) : NULL;
		j = s ? find_ifname(m->ifaces, i, s) : -1;
		if (j >= 0 && !path_index(c, first, path, j))
			REPORT(c, item, ipath, "interface '%s' is listed twice (first as %s)", s,
			       first);
		if (!s || j >= 0 || check_iface_known(c, w, item, ipath, s)) {
			err = -EINVAL;
			continue;
		}
		memcpy(m->ifaces[i], s, strlen(s) + 1);
	}
	return err;
}

static const struct field match_fields[MATCHF_MAX] = {
	[MATCHF_PROTO] = { "proto", parse_proto, NULL },
	[MATCHF_DST_PORT] = { "dst_port", parse_dst_port, NULL },
	[MATCHF_TCP_SYN] = { "tcp_syn", parse_tcp_syn, NULL },
	[MATCHF_SRC] = { "src", parse_src, NULL },
	[MATCHF_SRC_EXCEPT] = { "src_except", parse_src_except, NULL },
	[MATCHF_DST] = { "dst", parse_dst, NULL },
	[MATCHF_IFACE] = { "iface", parse_match_iface, NULL },
};

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
	char want[DIAG_MSG_LEN / 2];
	const char *s;
	int v;

	names_join(want, sizeof(want), f->words + f->first, f->n - f->first, sizeof(*f->words));
	s = scalar_of(c, val, path, want);
	if (!s)
		return -EINVAL;
	v = sluice_name_find(f->words, f->n, f->first, s);
	if (v < 0)
		return REPORT(c, val, path, "unknown %s '%.*s%s' (expected %s)", f->what,
			      DIAG_SHOW(s), want);
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

static int parse_match(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct walk mw = {
		.obj = w->obj,
		.map = val,
		.path = path,
		.fields = match_fields,
		.n_fields = MATCHF_MAX,
	};

	return walk_mapping(c, &mw);
}

static int parse_key(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy *p = slot_policy(w);
	struct walk kw = {
		.obj = p,
		.map = val,
		.path = path,
		.fields = key_fields,
		.n_fields = KEYF_MAX,
	};

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
};

/* ---- the file ------------------------------------------------------------ */

enum agent_field {
	AGENTF_HEARTBEAT = 0,
	AGENTF_TIMEOUT, /* after AGENTF_HEARTBEAT: it must span several heartbeats */
	AGENTF_MAX,
};

enum store_field {
	STOREF_REDIS = 0,
	STOREF_PASSWORD_FILE,
	STOREF_TIMEOUT,
	STOREF_SYNC_INTERVAL,
	STOREF_HOLD_DOWN,
	STOREF_ABUSE,
	STOREF_FLEET,
	STOREF_MAX,
};

enum node_field {
	NODEF_NAME = 0,
	NODEF_MAX,
};

enum endpoint_field {
	ENDPF_REDIS = 0,
	ENDPF_PASSWORD_FILE,
	ENDPF_TIMEOUT,
	ENDPF_MAX,
};

enum top_field {
	TOPF_INTERFACES = 0,
	TOPF_ALLOW,
	TOPF_AGENT,
	TOPF_NODE,
	TOPF_STORE,    /* before TOPF_POLICIES: scope cluster needs it */
	TOPF_POLICIES, /* after TOPF_INTERFACES: a policy's iface must be one of them */
	TOPF_MAX,
};

_Static_assert(MATCHF_MAX <= WALK_MAX_FIELDS, "match_fields outgrew struct walk");
_Static_assert(KEYF_MAX <= WALK_MAX_FIELDS, "key_fields outgrew struct walk");
_Static_assert(POLF_MAX <= WALK_MAX_FIELDS, "policy_fields outgrew struct walk");
_Static_assert(AGENTF_MAX <= WALK_MAX_FIELDS, "agent_fields outgrew struct walk");
_Static_assert(TOPF_MAX <= WALK_MAX_FIELDS, "top_fields outgrew struct walk");
_Static_assert(STOREF_MAX <= WALK_MAX_FIELDS, "store_fields outgrew struct walk");

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
	struct walk w = {
		.obj = slot,
		.map = item,
		.path = path,
		.fields = policy_fields,
		.n_fields = POLF_MAX,
	};

	slot->p->pos = node_pos(item);
	slot->p->match.proto = POLICY_PROTO_ANY;
	slot->p->mode = SLUICE_MODE_ENFORCE;
	slot->p->class = SLUICE_CLASS_SHEDDING;
	if (walk_mapping(c, &w))
		return -EINVAL;
	policy__set_defaults(slot->p, &w);
	return 0;
}

static int prefix_sets_equal(const struct policy_prefix_list *a, const struct policy_prefix_list *b)
{
	size_t i, j;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++) { /* no list has duplicates: same size and a in b is a == b */
		for (j = 0; j < b->n && !prefix_equal(&a->v[i], &b->v[j]); j++)
			;
		if (j == b->n)
			return 0;
	}
	return 1;
}

static int match_equal(const struct policy_match *a, const struct policy_match *b)
{
	size_t i;

	if (a->proto != b->proto || a->has_port != b->has_port || a->port_lo != b->port_lo ||
	    a->port_hi != b->port_hi || a->tcp_syn != b->tcp_syn || a->n_ifaces != b->n_ifaces)
		return 0;
	for (i = 0; i < a->n_ifaces; i++) {
		if (find_ifname(b->ifaces, b->n_ifaces, a->ifaces[i]) < 0)
			return 0;
	}
	return prefix_sets_equal(&a->src, &b->src) &&
	       prefix_sets_equal(&a->src_except, &b->src_except) &&
	       prefix_sets_equal(&a->dst, &b->dst);
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

static int parse_policies(struct pctx *c, struct walk *w, const yaml_node_t *seq, const char *path)
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

static int parse_iface(struct pctx *c, struct policy_set *ps, int i, const yaml_node_t *item,
		       const char *path)
{
	const char *s = ifname_of(c, item, path);
	int j;

	if (!s)
		return -EINVAL;
	j = find_ifname(ps->ifaces, i, s);
	if (j >= 0)
		return REPORT(c, item, path,
			      "interface '%s' is listed twice (first as "
			      "interfaces[%d])",
			      s, j);
	memcpy(ps->ifaces[i], s, strlen(s) + 1);
	return 0;
}

static int parse_interfaces(struct pctx *c, struct walk *w, const yaml_node_t *seq,
			    const char *path)
{
	struct policy_set *ps = w->obj;
	char ipath[DIAG_FIELD_LEN];
	int i, n, err = 0;

	if (seq->type != YAML_SEQUENCE_NODE)
		return expected(c, seq, path, "a sequence of interface names such as [eth0]");
	n = seq_len(seq);
	if (n > POLICY_MAX_IFACES)
		return REPORT(c, seq, path, "%d interfaces are too many (at most %d)", n,
			      POLICY_MAX_IFACES);
	ps->n_ifaces = n;
	for (i = 0; i < n; i++) {
		const yaml_node_t *item = node_at(c, seq->data.sequence.items.start[i]);

		if (!item || path_index(c, ipath, path, i) || parse_iface(c, ps, i, item, ipath))
			err = -EINVAL;
	}
	return err;
}

static int parse_allow(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_set *ps = w->obj;

	return parse_prefix_list(c, val, path, POLICY_ALLOW_MAX_PREFIXES, NULL, &ps->allow);
}

static int parse_duration_value(struct pctx *c, const yaml_node_t *val, const char *path, __u64 *ns)
{
	const char *s = scalar_of(c, val, path, "a duration such as 5s");
	char err[DIAG_MSG_LEN];

	if (!s)
		return -EINVAL;
	if (policy_parse_duration(s, ns, err, sizeof(err)))
		return REPORT(c, val, path, "%s", err);
	return 0;
}

static int parse_heartbeat(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_set *ps = w->obj;
	char bound[UNITS_TEXT_LEN];
	__u64 ns = 0;

	if (parse_duration_value(c, val, path, &ns))
		return -EINVAL;
	if (ns < HEARTBEAT_NS_MIN)
		return REPORT(
			c, val, path, "heartbeat '%.*s%s' is too short (expected at least %s)",
			DIAG_SHOW(scalar_text(val)), units_duration_exact(bound, HEARTBEAT_NS_MIN));
	if (ns > HEARTBEAT_NS_MAX)
		return REPORT(c, val, path,
			      "heartbeat '%.*s%s' is too long (expected at most %s, "
			      "as the timeout is at most %d heartbeats and at most 1h)",
			      DIAG_SHOW(scalar_text(val)),
			      units_duration_exact(bound, HEARTBEAT_NS_MAX), HEARTBEAT_TIMEOUTS);
	ps->heartbeat_ns = ns;
	return 0;
}

static int parse_timeout(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_set *ps = w->obj;
	char need[UNITS_TEXT_LEN], beat[UNITS_TEXT_LEN];
	__u64 ns = 0;

	if (parse_duration_value(c, val, path, &ns))
		return -EINVAL;
	if (ns > AGENT_TIMEOUT_NS_MAX)
		return REPORT(c, val, path, "timeout '%.*s%s' is too long (expected at most %s)",
			      DIAG_SHOW(scalar_text(val)),
			      units_duration_exact(need, AGENT_TIMEOUT_NS_MAX));
	/* With a bad heartbeat the user sees that error; don't guess at this one. */
	if (w->val[AGENTF_HEARTBEAT] && !walk__ok(w, AGENTF_HEARTBEAT))
		return 0;
	/* heartbeat_ns <= HEARTBEAT_NS_MAX: the product fits */
	if (ns < HEARTBEAT_TIMEOUTS * ps->heartbeat_ns)
		return REPORT(
			c, val, path,
			"timeout '%.*s%s' is shorter than %d heartbeats of %s "
			"(expected at least %s); one late heartbeat would be taken for a lost "
			"agent",
			DIAG_SHOW(scalar_text(val)), HEARTBEAT_TIMEOUTS,
			units_duration_exact(beat, ps->heartbeat_ns),
			units_duration_exact(need, HEARTBEAT_TIMEOUTS * ps->heartbeat_ns));
	ps->agent_timeout_ns = ns;
	return 0;
}

static const struct field agent_fields[AGENTF_MAX] = {
	[AGENTF_HEARTBEAT] = { "heartbeat", parse_heartbeat, NULL },
	[AGENTF_TIMEOUT] = { "timeout", parse_timeout, NULL },
};

/* A heartbeat given alone must still fit the default timeout. */
static int check_default_timeout(struct pctx *c, const struct walk *aw)
{
	const struct policy_set *ps = aw->obj;
	char need[UNITS_TEXT_LEN], dflt[UNITS_TEXT_LEN];
	char path[DIAG_FIELD_LEN];

	if (!walk__ok(aw, AGENTF_HEARTBEAT) || aw->val[AGENTF_TIMEOUT] ||
	    ps->agent_timeout_ns >= HEARTBEAT_TIMEOUTS * ps->heartbeat_ns)
		return 0;
	if (path_key(c, path, aw->path, "heartbeat"))
		return -EINVAL;
	return REPORT(c, aw->val[AGENTF_HEARTBEAT], path,
		      "heartbeat '%.*s%s' needs a timeout of "
		      "at least %s, and the default is %s; set agent.timeout",
		      DIAG_SHOW(scalar_text(aw->val[AGENTF_HEARTBEAT])),
		      units_duration_exact(need, HEARTBEAT_TIMEOUTS * ps->heartbeat_ns),
		      units_duration_exact(dflt, ps->agent_timeout_ns));
}

static int parse_agent(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct walk aw = {
		.obj = w->obj,
		.map = val,
		.path = path,
		.fields = agent_fields,
		.n_fields = AGENTF_MAX,
	};

	if (walk_mapping(c, &aw))
		return -EINVAL;
	return check_default_timeout(c, &aw);
}

/* ---- store ---- */

#define URL_REDIS    "redis://"
#define URL_UNIX     "unix://"
#define URL_SENTINEL "sentinel://"
#define URL_EXPECTED                                                                               \
	"expected redis://host:port, unix:///path/to/redis.sock or "                               \
	"sentinel://host:port[,host:port...]/master-name"
#define PORT_DIGITS_MAX	     5			 /* in PORT_MAX */
#define STORE_TIMEOUT_NS_MAX SLUICE_NSEC_PER_SEC /* a slower store is a failed one */
#define SYNC_INTERVAL_NS_MIN 10000000ULL	 /* 10 ms */

/* The endpoint a walk fills: the store itself, or store.abuse. */
static struct policy_store *endpoint_of(struct walk *w)
{
	return w->obj;
}

/* One sentinel address, host:port, of @n bytes at @a; 0 or -1. */
static int check_sentinel_addr(const char *a, size_t n)
{
	size_t colon = n, digits;
	unsigned long port = 0;

	while (colon && a[colon - 1] != ':')
		colon--;
	digits = n - colon;
	if (colon < 2 || !digits || digits > PORT_DIGITS_MAX)
		return -1;
	for (; colon < n; colon++) {
		if (!isdigit((unsigned char)a[colon]))
			return -1;
		port = port * DECIMAL_BASE + (a[colon] - '0');
	}
	return port >= PORT_MIN && port <= PORT_MAX ? 0 : -1;
}

/*
 * sentinel://host:port[,host:port...]/master-name: at least one address,
 * each with a port, and a name. Reports the first problem.
 */
static int check_sentinel_url(struct pctx *c, const yaml_node_t *val, const char *path,
			      const char *s)
{
	const char *addrs = s + strlen(URL_SENTINEL), *slash = strchr(addrs, '/'), *a, *comma;

	if (!slash || !slash[1])
		return REPORT(c, val, path, "'%.*s%s' has no master name (%s)", DIAG_SHOW(s),
			      URL_EXPECTED);
	if (slash == addrs)
		return REPORT(c, val, path, "'%.*s%s' has no sentinel address (%s)", DIAG_SHOW(s),
			      URL_EXPECTED);
	for (a = addrs;; a = comma + 1) {
		comma = memchr(a, ',', slash - a);
		if (!comma)
			comma = slash;
		if (check_sentinel_addr(a, comma - a))
			return REPORT(c, val, path,
				      "'%.*s' in '%.*s%s' is not a sentinel address (expected "
				      "host:port with a port from %d to %d)",
				      (int)(comma - a), a, DIAG_SHOW(s), PORT_MIN, PORT_MAX);
		if (comma == slash)
			return 0;
	}
}

static int parse_redis_url(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	const char *s = scalar_of(c, val, path, "a URL such as redis://127.0.0.1:6379");
	struct policy_store *e = endpoint_of(w);

	if (!s)
		return -EINVAL;
	if (!strncmp(s, URL_SENTINEL, strlen(URL_SENTINEL))) {
		if (check_sentinel_url(c, val, path, s))
			return -EINVAL;
	} else if ((strncmp(s, URL_REDIS, strlen(URL_REDIS)) != 0 || !s[strlen(URL_REDIS)]) &&
		   (strncmp(s, URL_UNIX, strlen(URL_UNIX)) != 0 || s[strlen(URL_UNIX)] != '/')) {
		return REPORT(c, val, path, "'%.*s%s' is not a store URL (%s)", DIAG_SHOW(s),
			      URL_EXPECTED);
	}
	if (strlen(s) >= sizeof(e->url))
		return REPORT(c, val, path, "the URL is longer than %zu bytes", sizeof(e->url) - 1);
	snprintf(e->url, sizeof(e->url), "%s", s);
	e->pos = node_pos(val);
	return 0;
}

static int parse_password_file(struct pctx *c, struct walk *w, const yaml_node_t *val,
			       const char *path)
{
	const char *s = scalar_of(c, val, path, "a file holding the password");
	struct policy_store *e = endpoint_of(w);

	if (!s)
		return -EINVAL;
	if (!*s || strlen(s) >= sizeof(e->password_file))
		return REPORT(c, val, path, "'%.*s%s' is not a file name", DIAG_SHOW(s));
	snprintf(e->password_file, sizeof(e->password_file), "%s", s);
	return 0;
}

static int parse_store_timeout(struct pctx *c, struct walk *w, const yaml_node_t *val,
			       const char *path)
{
	char bound[UNITS_TEXT_LEN];
	__u64 ns = 0;

	if (parse_duration_value(c, val, path, &ns))
		return -EINVAL;
	if (!ns || ns > STORE_TIMEOUT_NS_MAX)
		return REPORT(c, val, path,
			      "timeout '%.*s%s' is out of range (expected more than 0 "
			      "and at most %s: the store is asked on every sync)",
			      DIAG_SHOW(scalar_text(val)),
			      units_duration_exact(bound, STORE_TIMEOUT_NS_MAX));
	endpoint_of(w)->timeout_ns = ns;
	return 0;
}

static const struct field endpoint_fields[ENDPF_MAX] = {
	[ENDPF_REDIS] = { "redis", parse_redis_url, "a store needs 'redis', its URL" },
	[ENDPF_PASSWORD_FILE] = { "password_file", parse_password_file, NULL },
	[ENDPF_TIMEOUT] = { "timeout", parse_store_timeout, NULL },
};

/* store.abuse: abuse policies' own endpoint, so they never share a failure domain. */
static int parse_abuse_store(struct pctx *c, struct walk *w, const yaml_node_t *val,
			     const char *path)
{
	struct policy_set *ps = c->ps;
	struct walk ew = {
		.obj = &ps->abuse_store,
		.map = val,
		.path = path,
		.fields = endpoint_fields,
		.n_fields = ENDPF_MAX,
	};

	(void)w;
	ps->abuse_store.timeout_ns = POLICY_STORE_TIMEOUT_NS_DEFAULT;
	return walk_mapping(c, &ew);
}

static int parse_store_interval(struct pctx *c, const yaml_node_t *val, const char *path,
				__u64 min_ns, __u64 *out)
{
	char bound[UNITS_TEXT_LEN];
	__u64 ns = 0;

	if (parse_duration_value(c, val, path, &ns))
		return -EINVAL;
	if (ns < min_ns)
		return REPORT(c, val, path, "'%.*s%s' is too short (expected at least %s)",
			      DIAG_SHOW(scalar_text(val)), units_duration_exact(bound, min_ns));
	*out = ns;
	return 0;
}

static int parse_sync_interval(struct pctx *c, struct walk *w, const yaml_node_t *val,
			       const char *path)
{
	(void)w;
	return parse_store_interval(c, val, path, SYNC_INTERVAL_NS_MIN, &c->ps->sync_interval_ns);
}

static int parse_hold_down(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	(void)w;
	return parse_store_interval(c, val, path, c->ps->sync_interval_ns, &c->ps->hold_down_ns);
}

/* A node or fleet name: printable, no spaces, shorter than POLICY_NAME_MAX. */
static int parse_name_into(struct pctx *c, const yaml_node_t *val, const char *path, char *out)
{
	const char *s = scalar_of(c, val, path, "a name");
	size_t i;

	if (!s)
		return -EINVAL;
	for (i = 0; s[i]; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return REPORT(c, val, path,
				      "'%.*s%s' is not a name (expected printable "
				      "characters, no spaces)",
				      DIAG_SHOW(s));
	if (!i || i >= POLICY_NAME_MAX)
		return REPORT(c, val, path, "'%.*s%s' is not a name (expected 1 to %d characters)",
			      DIAG_SHOW(s), POLICY_NAME_MAX - 1);
	snprintf(out, POLICY_NAME_MAX, "%s", s);
	return 0;
}

static int parse_fleet(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	(void)w;
	return parse_name_into(c, val, path, c->ps->fleet);
}

/* The store's own fields are the endpoint's plus the fleet-wide settings. */
static const struct field store_fields[STOREF_MAX] = {
	[STOREF_REDIS] = { "redis", parse_redis_url, "a store needs 'redis', its URL" },
	[STOREF_PASSWORD_FILE] = { "password_file", parse_password_file, NULL },
	[STOREF_TIMEOUT] = { "timeout", parse_store_timeout, NULL },
	[STOREF_SYNC_INTERVAL] = { "sync_interval", parse_sync_interval, NULL },
	[STOREF_HOLD_DOWN] = { "hold_down", parse_hold_down, NULL },
	[STOREF_ABUSE] = { "abuse", parse_abuse_store, NULL },
	[STOREF_FLEET] = { "fleet", parse_fleet, NULL },
};

static int parse_node_name(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	(void)w;
	return parse_name_into(c, val, path, c->ps->node_name);
}

static const struct field node_fields[NODEF_MAX] = {
	[NODEF_NAME] = { "name", parse_node_name, NULL },
};

static int parse_node(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct walk nw = {
		.obj = w->obj,
		.map = val,
		.path = path,
		.fields = node_fields,
		.n_fields = NODEF_MAX,
	};

	return walk_mapping(c, &nw);
}

static int parse_store(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_set *ps = w->obj;
	struct walk sw = {
		.obj = &ps->store,
		.map = val,
		.path = path,
		.fields = store_fields,
		.n_fields = STOREF_MAX,
	};

	ps->store.timeout_ns = POLICY_STORE_TIMEOUT_NS_DEFAULT;
	return walk_mapping(c, &sw);
}

static const struct field top_fields[TOPF_MAX] = {
	[TOPF_INTERFACES] = { "interfaces", parse_interfaces, NULL },
	[TOPF_ALLOW] = { "allow", parse_allow, NULL },
	[TOPF_AGENT] = { "agent", parse_agent, NULL },
	[TOPF_NODE] = { "node", parse_node, NULL },
	[TOPF_STORE] = { "store", parse_store, NULL },
	[TOPF_POLICIES] = { "policies", parse_policies,
			    "a policy file needs a sequence of policies under 'policies'" },
};

static int report_empty(struct pctx *c)
{
	return REPORT_AT(c, no_pos, "", "empty policy file (expected a mapping with 'policies')");
}

static int parse_root(struct pctx *c, struct policy_set *ps)
{
	const yaml_node_t *root = yaml_document_get_root_node(c->doc);
	struct walk w = {
		.obj = ps,
		.map = root,
		.path = "",
		.what = "a mapping with 'policies'",
		.fields = top_fields,
		.n_fields = TOPF_MAX,
	};

	ps->heartbeat_ns = POLICY_HEARTBEAT_NS_DEFAULT;
	ps->agent_timeout_ns = POLICY_AGENT_TIMEOUT_NS_DEFAULT;
	ps->sync_interval_ns = POLICY_SYNC_INTERVAL_NS_DEFAULT;
	ps->hold_down_ns = POLICY_HOLD_DOWN_NS_DEFAULT;
	snprintf(ps->fleet, sizeof(ps->fleet), "%s", POLICY_FLEET_DEFAULT);
	if (!root || is_null(root))
		return report_empty(c);
	return walk_mapping(c, &w);
}

/* ---- YAML in ------------------------------------------------------------- */

static int report_yaml_error(struct pctx *c, const yaml_parser_t *parser)
{
	const char *problem = parser->problem ? parser->problem : "unknown error";

	if (parser->error == YAML_MEMORY_ERROR)
		return pctx__fail(c, -ENOMEM);
	if (parser->error == YAML_READER_ERROR)
		return REPORT_AT(c, no_pos, "",
				 "cannot parse YAML: %s at byte %zu "
				 "(expected UTF-8 text)",
				 problem, parser->problem_offset);
	if (parser->context)
		return REPORT_AT(c, mark_pos(parser->problem_mark), "",
				 "cannot parse YAML: %s (%s that starts at line %zu)", problem,
				 parser->context, parser->context_mark.line + 1);
	return REPORT_AT(c, mark_pos(parser->problem_mark), "", "cannot parse YAML: %s", problem);
}

/*
 * Check the event stream: syntax, aliases (a shared node would make every
 * message about it point at the anchor), and exactly one document.
 */
static int scan_events(struct pctx *c, const char *buf, size_t len)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int docs = 0, done = 0, err = 0;

	if (!yaml_parser_initialize(&parser))
		return pctx__fail(c, -ENOMEM);
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (!done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			err = report_yaml_error(c, &parser);
			break;
		}
		if (ev.type == YAML_ALIAS_EVENT) {
			err = REPORT_AT(c, mark_pos(ev.start_mark), "",
					"YAML alias '*%.*s%s' is not supported; write the value "
					"out in full",
					DIAG_SHOW((const char *)ev.data.alias.anchor));
		} else if (ev.type == YAML_DOCUMENT_START_EVENT && ++docs > 1) {
			err = REPORT_AT(c, mark_pos(ev.start_mark), "",
					"a second YAML document is not supported "
					"(expected one policy document per file)");
			done = 1;
		}
		done |= ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (!err && docs == 0)
		err = report_empty(c);
	return err;
}

static int load_document(struct pctx *c, const char *buf, size_t len, yaml_document_t *doc)
{
	yaml_parser_t parser;
	int err = 0;

	if (!yaml_parser_initialize(&parser))
		return pctx__fail(c, -ENOMEM);
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, doc))
		err = report_yaml_error(c, &parser); /* libyaml freed the partial document */
	yaml_parser_delete(&parser);
	return err;
}

static int pos_before(struct src_pos a, struct src_pos b)
{
	return a.line < b.line || (a.line == b.line && a.col < b.col);
}

/*
 * Order the diagnostics from @first on by position, stably. Insertion sort:
 * handlers run in table order, so only the rows of one mapping are out of
 * file order, and the sort is close to linear.
 */
static void sort_diags(struct diag_list *d, size_t first)
{
	struct diag tmp;
	size_t i, j;

	for (i = first + 1; i < d->n; i++) {
		tmp = d->v[i];
		for (j = i; j > first && pos_before(tmp.pos, d->v[j - 1].pos); j--)
			d->v[j] = d->v[j - 1];
		d->v[j] = tmp;
	}
}

struct policy_set *policy_set__parse(const char *name, const char *buf, size_t len,
				     struct diag_list *diags)
{
	struct pctx c = { .diags = diags };
	size_t first = diags->n;
	struct policy_set *ps;
	yaml_document_t doc;
	int err;

	diags->file = name;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	c.ps = ps;
	if (!scan_events(&c, buf, len) && !load_document(&c, buf, len, &doc)) {
		c.doc = &doc;
		parse_root(&c, ps);
		yaml_document_delete(&doc);
	}
	sort_diags(diags, first);
	err = c.fatal ? c.fatal : diags->n > first ? -EINVAL : 0;
	if (err)
		goto err_free;
	return ps;

err_free:
	policy_set__free(ps);
	errno = -err;
	return NULL;
}

void policy_set__free(struct policy_set *ps)
{
	size_t i;

	if (!ps)
		return;
	for (i = 0; i < ps->n_policies; i++) {
		struct policy_match *m = &ps->policies[i].match;

		free(m->src.v);
		free(m->src_except.v);
		free(m->dst.v);
		free(m->ifaces);
	}
	free(ps->policies);
	free(ps->allow.v);
	free(ps);
}

/* ---- the file on disk ---------------------------------------------------- */

static int file_error(struct diag_list *d, const char *path, int errnum)
{
	char buf[ERRNO_MSG_LEN];

	if (diag__add(d, no_pos, "", "cannot read '%s': %s", path,
		      strerror_r(errnum, buf, sizeof(buf))))
		return -ENOMEM;
	return -EINVAL;
}

static int too_large(struct diag_list *d, const char *path)
{
	if (diag__add(d, no_pos, "",
		      "cannot read '%s': larger than %d bytes, the most a policy "
		      "file may have",
		      path, POLICY_FILE_MAX_BYTES))
		return -ENOMEM;
	return -EINVAL;
}

/* Read up to POLICY_FILE_MAX_BYTES + 1 bytes of @fd into @buf: the byte count, or -errno. */
static ssize_t read_all(int fd, char *buf)
{
	size_t len = 0;
	ssize_t got;

	while (len <= POLICY_FILE_MAX_BYTES) {
		got = read(fd, buf + len, POLICY_FILE_MAX_BYTES + 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		len += got;
	}
	return len;
}

/* The whole file at @path in a new buffer; problems are reported in @d. */
static int read_policy_file(const char *path, char **bufp, size_t *lenp, struct diag_list *d)
{
	struct stat st;
	char *buf = NULL;
	ssize_t len;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return file_error(d, path, errno);
	if (fstat(fd, &st)) {
		err = file_error(d, path, errno);
		goto err_close;
	}
	if (S_ISREG(st.st_mode) && st.st_size > POLICY_FILE_MAX_BYTES) {
		err = too_large(d, path);
		goto err_close;
	}
	buf = calloc(POLICY_FILE_MAX_BYTES + 1, sizeof(*buf));
	if (!buf) {
		err = -ENOMEM;
		goto err_close;
	}
	len = read_all(fd, buf);
	if (len < 0) {
		err = file_error(d, path, -len);
		goto err_free;
	}
	if (len > POLICY_FILE_MAX_BYTES) {
		err = too_large(d, path);
		goto err_free;
	}
	if (close(fd)) {
		err = file_error(d, path, errno);
		free(buf);
		return err;
	}
	*bufp = buf;
	*lenp = len;
	return 0;

err_free:
	free(buf);
err_close:
	close(fd); /* read-only, and already failing: the first error is the one to report */
	return err;
}

struct policy_set *policy_set__load(const char *path, struct diag_list *diags)
{
	struct policy_set *ps;
	char *buf = NULL;
	size_t len = 0;
	int err;

	diags->file = path;
	err = read_policy_file(path, &buf, &len, diags);
	if (err) {
		errno = -err;
		return NULL;
	}
	ps = policy_set__parse(path, buf, len, diags);
	err = ps ? policy_validate(ps, diags) : -errno;
	free(buf);
	if (err) {
		policy_set__free(ps);
		errno = -err;
		return NULL;
	}
	return ps;
}
