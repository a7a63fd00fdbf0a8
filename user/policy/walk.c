// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The policy parser's walker (parse.h): YAML nodes and their positions,
 * field paths, walking a mapping against its table of {name, handler}
 * rows, the small values many fields share (booleans, prefix lengths,
 * interface names) and lists, a sequence or one scalar for a list of one.
 * What any one field means is the other files'.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/names.h"
#include "policy/parse.h"

#define IFNAME_BAD_CHARS "/: \t"

int pctx__fail(struct pctx *c, int err)
{
	if (!c->fatal)
		c->fatal = err;
	return err;
}

int report_done(struct pctx *c, int err)
{
	return err ? pctx__fail(c, err) : -EINVAL;
}

struct src_pos mark_pos(yaml_mark_t m)
{
	struct src_pos pos = { .line = (int)m.line + 1, .col = (int)m.column + 1 };

	return pos;
}

struct src_pos node_pos(const yaml_node_t *n)
{
	return mark_pos(n->start_mark);
}

const char *scalar_text(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* Nodes never come back NULL from a document libyaml built; be safe anyway. */
const yaml_node_t *node_at(struct pctx *c, int index)
{
	return yaml_document_get_node(c->doc, index);
}

int is_null(const yaml_node_t *n)
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
int expected(struct pctx *c, const yaml_node_t *n, const char *path, const char *want)
{
	if (n->type == YAML_SCALAR_NODE && !is_null(n))
		return REPORT(c, n, path, "expected %s, got '%.*s%s'", want,
			      DIAG_SHOW(scalar_text(n)));
	return REPORT(c, n, path, "expected %s, got %s", want, kind_name(n));
}

/* The text of a non-empty scalar, or NULL once the problem is reported. */
const char *scalar_of(struct pctx *c, const yaml_node_t *n, const char *path, const char *want)
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

int seq_len(const yaml_node_t *seq)
{
	return (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
}

/* Field paths: "policies[2].rate". Truncation cannot happen with our tables; check anyway. */
__attribute__((format(printf, 3, 4))) int path_fmt(struct pctx *c, char *buf, const char *fmt, ...)
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

int path_key(struct pctx *c, char *buf, const char *parent, const char *name)
{
	if (!parent[0])
		return path_fmt(c, buf, "%s", name);
	return path_fmt(c, buf, "%s.%s", parent, name);
}

int path_index(struct pctx *c, char *buf, const char *parent, int i)
{
	return path_fmt(c, buf, "%s[%d]", parent, i);
}

/* "eth0, eth1 or eth2" from @n interface names; cut short (still terminated) like names_join(). */
void join_ifnames(char *buf, size_t len, const char (*names)[POLICY_IFNAME_LEN], size_t n)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (names_join_one(buf, len, &off, i, n, names[i]))
			return;
	}
}

/* ---- walking a mapping against its table -------------------------------- */

int walk__ok(const struct walk *w, int row)
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

int walk_mapping(struct pctx *c, struct walk *w)
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
int report_bad_char(struct pctx *c, const yaml_node_t *val, const char *path, const char *what,
		    const char *s, size_t at, const char *allowed)
{
	unsigned char ch = s[at];

	if (isascii(ch) && isprint(ch))
		return REPORT(c, val, path, "%s '%.*s%s' has a bad character '%c' (%s)", what,
			      DIAG_SHOW(s), ch, allowed);
	return REPORT(c, val, path, "%s '%.*s%s' has a bad byte 0x%02x (%s)", what, DIAG_SHOW(s),
		      ch, allowed);
}

/* A prefix length 1..@max_bits. */
int parse_prefix_len(struct pctx *c, const yaml_node_t *val, const char *path, __u64 max_bits,
		     __u8 *out)
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

int parse_bool(struct pctx *c, const yaml_node_t *val, const char *path, int *out)
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

int parse_word_value(struct pctx *c, const yaml_node_t *val, const char *path, const char *what,
		     const char *const *words, unsigned int n, unsigned int first, int *out)
{
	char want[DIAG_MSG_LEN / 2];
	const char *s;
	int v;

	names_join(want, sizeof(want), words + first, n - first, sizeof(*words));
	s = scalar_of(c, val, path, want);
	if (!s)
		return -EINVAL;
	v = sluice_name_find(words, n, first, s);
	if (v < 0)
		return REPORT(c, val, path, "unknown %s '%.*s%s' (expected %s)", what, DIAG_SHOW(s),
			      want);
	*out = v;
	return 0;
}

/* An interface name as the kernel takes it: 1..15 bytes, no '/', ':' or space. */
const char *ifname_of(struct pctx *c, const yaml_node_t *item, const char *path)
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
int find_ifname(const char (*names)[POLICY_IFNAME_LEN], size_t n, const char *name)
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
int list_check(struct pctx *c, const yaml_node_t *val, const char *path, const char *want,
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
const yaml_node_t *list_item(struct pctx *c, const yaml_node_t *val, const char *path, int i,
			     char *ipath)
{
	if (val->type != YAML_SEQUENCE_NODE)
		return path_fmt(c, ipath, "%s", path) ? NULL : val;
	if (path_index(c, ipath, path, i))
		return NULL;
	return node_at(c, val->data.sequence.items.start[i]);
}
