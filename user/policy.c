/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The policy file: YAML text in, a validated struct policy_set out. This is
 * the only code that reads YAML and it makes no BPF calls; compile.c turns
 * the result into map entries and checks what only the arithmetic knows.
 *
 * libyaml parses the text twice: once as events, to report syntax
 * errors, aliases and extra documents with their exact position, then as a
 * document whose nodes carry the line and column of every value. Each
 * mapping (top level, a policy, its match, its key) is a table of
 * {name, handler, missing-hint} rows walked by walk_mapping(): adding a key
 * is a table row and a handler, not new control flow. Handlers run in table
 * order, so a handler may look at the rows above it (burst reads the rate).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "policy.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define NS_PER_SEC 1000000000ULL
#define NS_PER_MIN (60 * NS_PER_SEC)
#define NS_PER_HOUR (60 * NS_PER_MIN)
#define NS_PER_DAY (24 * NS_PER_HOUR)
#define SI_KILO 1000ULL
#define SI_MEGA (SI_KILO * SI_KILO)
#define SI_GIGA (SI_KILO * SI_MEGA)
#define BITS_PER_BYTE 8
#define DECIMAL_BASE 10
#define PORT_MIN 1
#define PORT_MAX 65535
#define ERRNO_MSG_LEN 128

#define WALK_MAX_FIELDS 16	/* rows of the largest mapping table; bits of walk.bad */
#define VALUE_SHOW_MAX 40	/* characters of a user's value quoted in a message */
#define POLICY_NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"
#define IFNAME_BAD_CHARS "/: \t"
#define PORT_EXPECTED "a port such as 53 or a range such as \"1024-65535\""
#define PERIOD_EXPECTED "s, min, h or day, optionally with a count such as 15m"

/*
 * A user's value quoted in a message: '%.*s%s' with SHOW(s) prints at most
 * VALUE_SHOW_MAX characters and "..." when it cut, so the cause and hint
 * that follow always fit in DIAG_MSG_LEN.
 */
#define SHOW(s) VALUE_SHOW_MAX, (s), (strlen(s) > VALUE_SHOW_MAX ? "..." : "")

/* Everything one parse needs; lives on the stack of policy_set__parse(). */
struct pctx {
	yaml_document_t *doc;
	struct diag_list *diags;
	int fatal; /* first failure that is not the input's fault (-ENOMEM), or 0 */
};

struct walk;

/*
 * One row of a mapping's table. parse() fills w->obj from @val, whose field
 * path is @path; it returns 0, or -EINVAL once it has reported the problem.
 */
struct field {
	const char *name;	/* the key; first member, see join_names() */
	int (*parse)(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path);
	const char *missing;	/* NULL: optional; else required, and the hint when absent */
};

/* One mapping being walked against its table. */
struct walk {
	void *obj;			/* what the handlers fill; the table decides the type */
	const yaml_node_t *map;
	const char *path;		/* of the mapping: "policies[2]", "" at the top */
	const char *what;		/* for expected() if map is no mapping; NULL: "a mapping" */
	const struct field *fields;
	size_t n_fields;
	const yaml_node_t *key[WALK_MAX_FIELDS]; /* by table row; NULL when absent */
	const yaml_node_t *val[WALK_MAX_FIELDS];
	unsigned int bad;		/* bit per row whose handler rejected the value */
};

/* What the policy handlers fill: one policy, and the ones before it for unique names. */
struct policy_slot {
	struct policy *p;
	const struct policy *prev;
	size_t n_prev;
};

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

#define REPORT_AT(c, pos, path, ...) \
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

static int show_len(size_t len)
{
	return len > VALUE_SHOW_MAX ? VALUE_SHOW_MAX : (int)len;
}

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
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a sequence";
	default:
		return is_null(n) ? "nothing" : "a scalar";
	}
}

/* Report that @n is not what @want describes; returns -EINVAL. */
static int expected(struct pctx *c, const yaml_node_t *n, const char *path, const char *want)
{
	if (n->type == YAML_SCALAR_NODE && !is_null(n))
		return REPORT(c, n, path, "expected %s, got '%.*s%s'", want, SHOW(scalar_text(n)));
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
		REPORT(c, n, path, "'%.*s%s' contains a NUL character (expected %s)", SHOW(s),
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
__attribute__((format(printf, 3, 4)))
static int path_fmt(struct pctx *c, char *buf, const char *fmt, ...)
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

/*
 * "a, b or c" from the non-empty names of a table whose rows start with a
 * const char *name; cut short (still terminated) if @len is too small.
 */
static void join_names(char *buf, size_t len, const void *table, size_t n, size_t stride)
{
	const char *row = table;
	size_t i, total = 0, done = 0, off = 0;
	int w;

	for (i = 0; i < n; i++)
		total += **(const char *const *)(row + i * stride) != '\0';
	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		const char *name = *(const char *const *)(row + i * stride);
		const char *sep = done == 0 ? "" : done + 1 < total ? ", " : " or ";

		if (!name[0])
			continue;
		w = snprintf(buf + off, len - off, "%s%s", sep, name);
		if (w < 0 || (size_t)w >= len - off)
			return;
		off += w;
		done++;
	}
}

/* ---- numbers and units ------------------------------------------------- */

enum qty_err {
	QTY_OK = 0,
	QTY_NO_NUMBER,	/* no digit where the number starts */
	QTY_DECIMAL,	/* digits, then '.' */
	QTY_RANGE,	/* does not fit in a __u64 */
};

/* The decimal digits at *@s (before @end) into *@n; *@s moves past them. */
static enum qty_err scan_count(const char **s, const char *end, __u64 *n)
{
	const char *p = *s;
	__u64 v = 0;

	for (; p < end && isdigit((unsigned char)*p); p++) {
		if (__builtin_mul_overflow(v, DECIMAL_BASE, &v) ||
		    __builtin_add_overflow(v, (__u64)(*p - '0'), &v))
			return QTY_RANGE;
	}
	if (p == *s)
		return QTY_NO_NUMBER;
	if (p < end && *p == '.')
		return QTY_DECIMAL;
	*s = p;
	*n = v;
	return QTY_OK;
}

/* A whole string of decimal digits: 0, or -EINVAL, or -ERANGE. */
static int parse_u64(const char *s, const char *end, __u64 *n)
{
	switch (scan_count(&s, end, n)) {
	case QTY_OK:
		return s == end ? 0 : -EINVAL;
	case QTY_RANGE:
		return -ERANGE;
	default:
		return -EINVAL;
	}
}

/* What follows the number of a rate or a burst. */
struct amount_unit {
	const char *name;	/* as written; "" for packets; first member, see join_names() */
	__u64 mult;		/* bytes or bits per unit */
	enum sluice_cost cost;
	int is_bits;
};

static const struct amount_unit amount_units[] = {
	{ "", 1, SLUICE_COST_PKTS, 0 },
	{ "B", 1, SLUICE_COST_BYTES, 0 },
	{ "kB", SI_KILO, SLUICE_COST_BYTES, 0 },
	{ "MB", SI_MEGA, SLUICE_COST_BYTES, 0 },
	{ "GB", SI_GIGA, SLUICE_COST_BYTES, 0 },
	{ "bit", 1, SLUICE_COST_BYTES, 1 },
	{ "kbit", SI_KILO, SLUICE_COST_BYTES, 1 },
	{ "Mbit", SI_MEGA, SLUICE_COST_BYTES, 1 },
	{ "Gbit", SI_GIGA, SLUICE_COST_BYTES, 1 },
};

struct period_unit {
	const char *name;
	__u64 ns;
};

/* PERIOD_EXPECTED names one spelling of each; keep it in step. */
static const struct period_unit period_units[] = {
	{ "s", NS_PER_SEC },	{ "sec", NS_PER_SEC },	{ "m", NS_PER_MIN },  { "min", NS_PER_MIN },
	{ "h", NS_PER_HOUR },	{ "hour", NS_PER_HOUR }, { "d", NS_PER_DAY }, { "day", NS_PER_DAY },
};

static const struct amount_unit *find_amount_unit(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(amount_units); i++) {
		if (strlen(amount_units[i].name) == len && !memcmp(amount_units[i].name, s, len))
			return &amount_units[i];
	}
	return NULL;
}

static const struct period_unit *find_period_unit(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(period_units); i++) {
		if (strlen(period_units[i].name) == len && !memcmp(period_units[i].name, s, len))
			return &period_units[i];
	}
	return NULL;
}

static void amount_unit_names(char *buf, size_t len)
{
	join_names(buf, len, amount_units, ARRAY_SIZE(amount_units), sizeof(amount_units[0]));
}

/* ---- rates -------------------------------------------------------------- */

/* "'S' is not a rate: CAUSE" into @err, cut to @errlen; returns -EINVAL. */
__attribute__((format(printf, 4, 5)))
static int rate_error(char *err, size_t errlen, const char *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!errlen)
		return -EINVAL;
	n = snprintf(err, errlen, "'%.*s%s' is not a rate: ", SHOW(s));
	if (n < 0 || (size_t)n >= errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, errlen - n, fmt, ap); /* a cut message is still a message */
	va_end(ap);
	return -EINVAL;
}

/* "<N>[<unit>]" of @s up to @slash: the amount in units, and the unit. */
static int rate_amount(const char *s, const char *slash, __u64 *amount,
		       const struct amount_unit **unit, char *err, size_t errlen)
{
	char names[DIAG_MSG_LEN / 2];
	const char *p = s;

	switch (scan_count(&p, slash, amount)) {
	case QTY_OK:
		break;
	case QTY_NO_NUMBER:
		return rate_error(err, errlen, s, "no count before the unit "
				  "(expected a positive integer, such as 100/s)");
	case QTY_DECIMAL:
		return rate_error(err, errlen, s, "decimals are not supported; use a smaller unit "
				  "or a longer period, such as 2500kbit/s instead of 2.5Mbit/s");
	case QTY_RANGE:
		return rate_error(err, errlen, s, "the count does not fit in 64 bits");
	}
	*unit = find_amount_unit(p, slash - p);
	if (!*unit) {
		amount_unit_names(names, sizeof(names));
		return rate_error(err, errlen, s,
				  "unknown unit '%.*s' (expected none for packets, or %s)",
				  show_len(slash - p), p, names);
	}
	if (*amount == 0)
		return rate_error(err, errlen, s,
				  "a rate of zero admits nothing (expected at least 1)");
	if (__builtin_mul_overflow(*amount, (*unit)->mult, amount))
		return rate_error(err, errlen, s, "the amount does not fit in 64 bits");
	return 0;
}

/* "[<M>]<period>" at @p, the part after the slash of @s. */
static int rate_period(const char *s, const char *p, __u64 *period_ns, char *err, size_t errlen)
{
	const char *end = p + strlen(p);
	const struct period_unit *u;
	__u64 count = 1;

	switch (scan_count(&p, end, &count)) {
	case QTY_OK:
		if (count == 0)
			return rate_error(err, errlen, s, "the period count is zero "
					  "(expected a positive count such as 15m)");
		break;
	case QTY_NO_NUMBER:
		break;
	case QTY_DECIMAL:
		return rate_error(err, errlen, s, "decimals are not supported; use a smaller unit, "
				  "such as 90m instead of 1.5h");
	case QTY_RANGE:
		return rate_error(err, errlen, s, "the period does not fit in 64-bit nanoseconds");
	}
	if (p == end)
		return rate_error(err, errlen, s, "no unit after the '/' (expected %s)",
				  PERIOD_EXPECTED);
	u = find_period_unit(p, end - p);
	if (!u)
		return rate_error(err, errlen, s, "unknown unit '%.*s' (expected %s)",
				  show_len(end - p), p, PERIOD_EXPECTED);
	if (__builtin_mul_overflow(count, u->ns, period_ns))
		return rate_error(err, errlen, s, "the period does not fit in 64-bit nanoseconds");
	return 0;
}

int policy_parse_rate(const char *s, struct policy_rate *out, char *err, size_t errlen)
{
	const struct amount_unit *unit = NULL;
	const char *slash;
	__u64 amount = 0, period_ns = 0;
	int err_rate;

	if (s[strcspn(s, " \t")])
		return rate_error(err, errlen, s,
				  "it contains a space (expected no spaces, such as 100/s)");
	slash = strchr(s, '/');
	if (!slash)
		return rate_error(err, errlen, s, "no period "
				  "(expected a rate such as 100/s or 10Mbit/s)");
	err_rate = rate_amount(s, slash, &amount, &unit, err, errlen);
	if (err_rate)
		return err_rate;
	err_rate = rate_period(s, slash + 1, &period_ns, err, errlen);
	if (err_rate)
		return err_rate;
	/* Bits per (8 × period) is bytes per period, exactly and without division. */
	if (unit->is_bits && __builtin_mul_overflow(period_ns, BITS_PER_BYTE, &period_ns))
		return rate_error(err, errlen, s, "the period does not fit in 64-bit nanoseconds");
	out->amount = amount;
	out->period_ns = period_ns;
	out->cost = unit->cost;
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

	join_names(names, sizeof(names), w->fields, w->n_fields, sizeof(w->fields[0]));
	return REPORT(c, k, w->path, "unknown key '%.*s%s' (expected %s)", SHOW(scalar_text(k)),
		      names);
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
			      SHOW(s), ch, allowed);
	return REPORT(c, val, path, "%s '%.*s%s' has a bad byte 0x%02x (%s)", what, SHOW(s), ch,
		      allowed);
}

/* A prefix length 1..@max_bits. */
static int parse_prefix(struct pctx *c, const yaml_node_t *val, const char *path, __u64 max_bits,
			__u8 *out)
{
	const char *s = scalar_of(c, val, path, "a prefix length");
	__u64 bits;
	int err;

	if (!s)
		return -EINVAL;
	err = parse_u64(s, s + strlen(s), &bits);
	if (err == -EINVAL)
		return REPORT(c, val, path, "prefix length '%.*s%s' is not a number "
			      "(expected 1 to %llu)", SHOW(s), max_bits);
	if (err || bits > max_bits)
		return REPORT(c, val, path, "prefix length '%.*s%s' is out of range "
			      "(expected 1 to %llu)", SHOW(s), max_bits);
	if (bits == 0)
		return REPORT(c, val, path, "prefix length '%.*s%s' is out of range "
			      "(expected 1 to %llu); for one bucket shared by all sources, "
			      "leave out 'key'", SHOW(s), max_bits);
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
	return REPORT(c, val, path, "'%.*s%s' is not a boolean (expected true or false)", SHOW(s));
}

/* ---- match: { proto, dst_port, tcp_syn } -------------------------------- */

enum match_field {
	MATCHF_PROTO = 0,
	MATCHF_DST_PORT,
	MATCHF_TCP_SYN,
	MATCHF_MAX,
};

struct proto_name {
	const char *name; /* first member, see join_names() */
	__u8 proto;
};

static const struct proto_name proto_names[] = {
	{ "tcp", IPPROTO_TCP },	  { "udp", IPPROTO_UDP }, { "icmp", IPPROTO_ICMP },
	{ "icmpv6", IPPROTO_ICMPV6 }, { "any", POLICY_PROTO_ANY },
};

static int parse_proto(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_match *m = w->obj;
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
	join_names(names, sizeof(names), proto_names, ARRAY_SIZE(proto_names),
		   sizeof(proto_names[0]));
	return REPORT(c, val, path, "unknown protocol '%.*s%s' (expected %s)", SHOW(s), names);
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

	err_lo = parse_u64(s, dash ? dash : end, lo);
	err_hi = dash ? parse_u64(dash + 1, end, hi) : err_lo;
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
	struct policy_match *m = w->obj;
	const char *s = scalar_of(c, val, path, PORT_EXPECTED);
	__u64 lo, hi;

	if (!s)
		return -EINVAL;
	switch (scan_ports(s, &lo, &hi)) {
	case PORTS_OK:
		break;
	case PORTS_SYNTAX:
		return REPORT(c, val, path, "'%.*s%s' is not a port or a port range (expected %s)",
			      SHOW(s), PORT_EXPECTED);
	case PORTS_RANGE:
		return REPORT(c, val, path, "port '%.*s%s' is out of range (expected %d to %d)",
			      SHOW(s), PORT_MIN, PORT_MAX);
	case PORTS_BACKWARDS:
		return REPORT(c, val, path, "port range '%.*s%s' is backwards (expected low-high, "
			      "such as \"%llu-%llu\")", SHOW(s), hi, lo);
	}
	if (walk__ok(w, MATCHF_PROTO) && m->proto != IPPROTO_TCP && m->proto != IPPROTO_UDP &&
	    m->proto != POLICY_PROTO_ANY)
		return REPORT(c, val, path, "dst_port cannot be used with proto '%s': it has no "
			      "ports (expected proto tcp, udp or any)", match_proto_text(w));
	m->has_port = 1;
	m->port_lo = (__u16)lo;
	m->port_hi = (__u16)hi;
	return 0;
}

static int parse_tcp_syn(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_match *m = w->obj;

	if (parse_bool(c, val, path, &m->tcp_syn))
		return -EINVAL;
	/* With a bad proto the user sees that error; don't guess at this one. */
	if (w->val[MATCHF_PROTO] && !walk__ok(w, MATCHF_PROTO))
		return 0;
	if (m->proto != IPPROTO_TCP)
		return REPORT(c, val, path, "tcp_syn cannot be used with proto '%s': only TCP has "
			      "a SYN flag; set proto: tcp", match_proto_text(w));
	return 0;
}

static const struct field match_fields[MATCHF_MAX] = {
	[MATCHF_PROTO] = { "proto", parse_proto, NULL },
	[MATCHF_DST_PORT] = { "dst_port", parse_dst_port, NULL },
	[MATCHF_TCP_SYN] = { "tcp_syn", parse_tcp_syn, NULL },
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

	return parse_prefix(c, val, path, SLUICE_IPV4_BITS, &p->ipv4_prefix);
}

static int parse_ipv6_prefix(struct pctx *c, struct walk *w, const yaml_node_t *val,
			     const char *path)
{
	struct policy *p = w->obj;

	return parse_prefix(c, val, path, SLUICE_ADDR_BITS, &p->ipv6_prefix);
}

#define KEY_NEEDS_BOTH \
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
	POLF_MAX,
};

static struct policy *slot_policy(const struct walk *w)
{
	return ((struct policy_slot *)w->obj)->p;
}

static int parse_name(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	const struct policy_slot *slot = w->obj;
	const char *s = scalar_of(c, val, path, "a policy name such as dns-per-source");
	size_t len, i;

	if (!s)
		return -EINVAL;
	len = strlen(s);
	if (len >= SLUICE_NAME_LEN)
		return REPORT(c, val, path, "policy name '%.*s%s' is too long: %zu characters "
			      "(at most %d)", SHOW(s), len, SLUICE_NAME_LEN - 1);
	i = strspn(s, POLICY_NAME_CHARS);
	if (s[i])
		return report_bad_char(c, val, path, "policy name", s, i,
				       "expected letters, digits, '_', '.' and '-'");
	for (i = 0; i < slot->n_prev; i++) {
		if (!strcmp(slot->prev[i].name, s))
			return REPORT(c, val, path, "duplicate policy name '%s' (first used by "
				      "policies[%zu] at line %d)", s, i, slot->prev[i].pos.line);
	}
	memcpy(slot->p->name, s, len + 1);
	return 0;
}

static int parse_match(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct walk mw = {
		.obj = &slot_policy(w)->match, .map = val, .path = path,
		.fields = match_fields, .n_fields = MATCHF_MAX,
	};

	return walk_mapping(c, &mw);
}

static int parse_key(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy *p = slot_policy(w);
	struct walk kw = {
		.obj = p, .map = val, .path = path, .fields = key_fields, .n_fields = KEYF_MAX,
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

/* The burst of @n @u, in the rate's cost units (see parse_burst()). */
static int burst_in_cost_units(struct pctx *c, struct walk *w, const yaml_node_t *val,
			       const char *path, __u64 n, const struct amount_unit *u)
{
	struct policy *p = slot_policy(w);
	const char *s = scalar_text(val);
	__u64 total;

	if (walk__ok(w, POLF_RATE) && p->rate.cost == SLUICE_COST_PKTS &&
	    u->cost != SLUICE_COST_PKTS)
		return REPORT(c, val, path, "burst '%.*s%s' is a size but rate '%.*s%s' counts "
			      "packets (expected a packet count such as 200)", SHOW(s),
			      SHOW(scalar_text(w->val[POLF_RATE])));
	if (__builtin_mul_overflow(n, u->mult, &total))
		return REPORT(c, val, path, "'%.*s%s' is not a burst: it does not fit in 64 bits",
			      SHOW(s));
	if (u->is_bits && total % BITS_PER_BYTE)
		return REPORT(c, val, path, "burst '%.*s%s' is not a whole number of bytes "
			      "(expected a multiple of 8 bits)", SHOW(s));
	p->burst = u->is_bits ? total / BITS_PER_BYTE : total;
	return 0;
}

/*
 * A burst is a count of the rate's cost unit: packets for a packet rate,
 * bytes for a byte or bit rate, where it may carry a size unit (64kB).
 */
static int parse_burst(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	const char *s = scalar_of(c, val, path, "a burst such as 200, or 64kB for a byte rate");
	char names[DIAG_MSG_LEN / 2];
	const struct amount_unit *u;
	const char *p = s;
	__u64 n;

	slot_policy(w)->burst_pos = node_pos(val);
	if (!s)
		return -EINVAL;
	switch (scan_count(&p, s + strlen(s), &n)) {
	case QTY_OK:
		break;
	case QTY_NO_NUMBER:
		return REPORT(c, val, path, "'%.*s%s' is not a burst: no number (expected a "
			      "positive integer such as 200, or 64kB for a byte rate)", SHOW(s));
	case QTY_DECIMAL:
		return REPORT(c, val, path, "'%.*s%s' is not a burst: decimals are not supported "
			      "(expected a whole number, such as 1500B instead of 1.5kB)", SHOW(s));
	case QTY_RANGE:
		return REPORT(c, val, path, "'%.*s%s' is not a burst: it does not fit in 64 bits",
			      SHOW(s));
	}
	u = find_amount_unit(p, strlen(p));
	if (!u) {
		amount_unit_names(names, sizeof(names));
		return REPORT(c, val, path, "'%.*s%s' is not a burst: unknown unit '%.*s%s' "
			      "(expected none, or %s for a byte rate)", SHOW(s), SHOW(p), names);
	}
	if (n == 0)
		return REPORT(c, val, path, "'%.*s%s' is not a burst: a burst of zero admits "
			      "nothing (expected at least 1)", SHOW(s));
	return burst_in_cost_units(c, w, val, path, n, u);
}

static const struct field policy_fields[POLF_MAX] = {
	[POLF_NAME] = { "name", parse_name,
		      "every policy needs a unique name, such as name: dns-per-source" },
	[POLF_MATCH] = { "match", parse_match, NULL },
	[POLF_KEY] = { "key", parse_key, NULL },
	[POLF_RATE] = { "rate", parse_rate, "every policy needs a rate, such as rate: 100/s" },
	[POLF_BURST] = { "burst", parse_burst,
		       "every policy needs a burst, such as burst: 200 (what may pass at once)" },
};

/* ---- the file ------------------------------------------------------------ */

enum top_field {
	TOPF_INTERFACES = 0,
	TOPF_POLICIES,
	TOPF_MAX,
};

_Static_assert(MATCHF_MAX <= WALK_MAX_FIELDS, "match_fields outgrew struct walk");
_Static_assert(KEYF_MAX <= WALK_MAX_FIELDS, "key_fields outgrew struct walk");
_Static_assert(POLF_MAX <= WALK_MAX_FIELDS, "policy_fields outgrew struct walk");
_Static_assert(TOPF_MAX <= WALK_MAX_FIELDS, "top_fields outgrew struct walk");

static int parse_policy(struct pctx *c, struct policy_set *ps, int i, const yaml_node_t *item,
			const char *path)
{
	struct policy_slot slot = { .p = &ps->policies[i], .prev = ps->policies, .n_prev = i };
	struct walk w = {
		.obj = &slot, .map = item, .path = path,
		.fields = policy_fields, .n_fields = POLF_MAX,
	};

	slot.p->pos = node_pos(item);
	slot.p->match.proto = POLICY_PROTO_ANY;
	return walk_mapping(c, &w);
}

static int parse_policies(struct pctx *c, struct walk *w, const yaml_node_t *seq, const char *path)
{
	struct policy_set *ps = w->obj;
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
	for (i = 0; i < n && !c->fatal; i++) {
		const yaml_node_t *item = node_at(c, seq->data.sequence.items.start[i]);

		if (!item || path_index(c, ipath, path, i) || parse_policy(c, ps, i, item, ipath))
			err = -EINVAL;
	}
	return err;
}

/* An interface name as the kernel takes it: 1..15 bytes, no '/', ':' or space. */
static int parse_iface(struct pctx *c, struct policy_set *ps, int i, const yaml_node_t *item,
		       const char *path)
{
	const char *s = scalar_of(c, item, path, "an interface name such as eth0");
	size_t len;
	int j;

	if (!s)
		return -EINVAL;
	len = strlen(s);
	if (len >= POLICY_IFNAME_LEN)
		return REPORT(c, item, path, "interface name '%.*s%s' is too long: %zu characters "
			      "(at most %d)", SHOW(s), len, POLICY_IFNAME_LEN - 1);
	if (s[strcspn(s, IFNAME_BAD_CHARS)])
		return report_bad_char(c, item, path, "interface name", s,
				       strcspn(s, IFNAME_BAD_CHARS),
				       "an interface name has no '/', ':' or spaces");
	for (j = 0; j < i; j++) {
		if (!strcmp(ps->ifaces[j], s))
			return REPORT(c, item, path, "interface '%s' is listed twice (first as "
				      "interfaces[%d])", s, j);
	}
	memcpy(ps->ifaces[i], s, len + 1);
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

static const struct field top_fields[TOPF_MAX] = {
	[TOPF_INTERFACES] = { "interfaces", parse_interfaces, NULL },
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
		.obj = ps, .map = root, .path = "", .what = "a mapping with 'policies'",
		.fields = top_fields, .n_fields = TOPF_MAX,
	};

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
		return REPORT_AT(c, no_pos, "", "cannot parse YAML: %s at byte %zu "
				 "(expected UTF-8 text)", problem, parser->problem_offset);
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
					"out in full", SHOW((const char *)ev.data.alias.anchor));
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
	if (!ps)
		return;
	free(ps->policies);
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
	if (diag__add(d, no_pos, "", "cannot read '%s': larger than %d bytes, the most a policy "
		      "file may have", path, POLICY_FILE_MAX_BYTES))
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
	err = errno;
	free(buf);
	errno = err;
	return ps;
}
