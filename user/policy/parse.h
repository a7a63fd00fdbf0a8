/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The policy parser's own header, shared by the files of user/policy that
 * read YAML and by nothing else: walk.c (nodes, field paths, the table
 * walk, small values), prefix.c (prefixes and their lists), match.c,
 * policies.c (one policy, and the sequence of them), sections.c (the top
 * level, agent, store, node), events.c (`events:`), escalate.c (`escalate:`) and load.c (the YAML
 * and the file on disk).
 *
 * The policy file: YAML text in, a struct policy_set out. This is the only
 * code that reads YAML and it makes no BPF calls; compile.c turns the
 * result into map entries, and policy_validate() checks what only the
 * arithmetic knows.
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
#ifndef SLUICE_POLICY_PARSE_H
#define SLUICE_POLICY_PARSE_H

#include <stddef.h>
#include <yaml.h>

#include "base/diag.h"
#include "policy/policy.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define BITS_PER_BYTE 8
#define DECIMAL_BASE  10
#define PORT_MIN      1
#define PORT_MAX      65535
/*
 * Rows of the largest mapping table (a policy's, 17 with escalate), with
 * room for a few more; at most the bits of walk.bad.
 */
#define WALK_MAX_FIELDS 24

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
_Static_assert(WALK_MAX_FIELDS <= sizeof(((struct walk *)0)->bad) * BITS_PER_BYTE,
	       "walk.bad needs a bit per row");

/* A walk of the mapping @m at field path @p against the table @f (@n rows), filling @o. */
#define WALK_INIT(o, m, p, f, n)                                                                   \
	{                                                                                          \
		.obj = (o), .map = (m), .path = (p), .fields = (f), .n_fields = (n)                \
	}

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

/* The rows of the top-level mapping (sections.c); policies.c reads TOPF_INTERFACES. */
enum top_field {
	TOPF_INTERFACES = 0,
	TOPF_ALLOW,
	TOPF_AGENT,
	TOPF_NODE,
	TOPF_STORE, /* before TOPF_POLICIES: scope cluster needs it */
	TOPF_FRAGMENTS,
	TOPF_UNPARSED,
	TOPF_EVENTS,
	TOPF_POLICIES, /* after TOPF_INTERFACES: a policy's iface must be one of them */
	TOPF_MAX,
};

static inline struct policy *slot_policy(const struct walk *w)
{
	return ((struct policy_slot *)w->obj)->p;
}

static inline struct policy_match *slot_match(const struct walk *w)
{
	return &slot_policy(w)->match;
}

/* ---- walk.c ---- */

/* Record @err as the parse's first fatal failure (not the input's fault); returns @err. */
int pctx__fail(struct pctx *c, int err);

/* What REPORT() returns: -EINVAL, the problem is reported, or the fatal error. */
int report_done(struct pctx *c, int err);

#define REPORT_AT(c, pos, path, ...)                                                               \
	report_done((c), diag__add((c)->diags, (pos), (path), __VA_ARGS__))
#define REPORT(c, node, path, ...) REPORT_AT((c), node_pos(node), (path), __VA_ARGS__)

struct src_pos mark_pos(yaml_mark_t m);
struct src_pos node_pos(const yaml_node_t *n);
const char *scalar_text(const yaml_node_t *n);
const yaml_node_t *node_at(struct pctx *c, int index);
int is_null(const yaml_node_t *n);
int seq_len(const yaml_node_t *seq);

/* Report that @n is not what @want describes; returns -EINVAL. */
int expected(struct pctx *c, const yaml_node_t *n, const char *path, const char *want);

/* The text of a non-empty scalar, or NULL once the problem is reported. */
const char *scalar_of(struct pctx *c, const yaml_node_t *n, const char *path, const char *want);

/* Field paths: "policies[2].rate" into @buf of DIAG_FIELD_LEN; 0 or a fatal -ENAMETOOLONG. */
__attribute__((format(printf, 3, 4))) int path_fmt(struct pctx *c, char *buf, const char *fmt, ...);
int path_key(struct pctx *c, char *buf, const char *parent, const char *name);
int path_index(struct pctx *c, char *buf, const char *parent, int i);

/* "eth0, eth1 or eth2" from @n interface names; cut short (still terminated) like names_join(). */
void join_ifnames(char *buf, size_t len, const char (*names)[POLICY_IFNAME_LEN], size_t n);

/* Row @row of @w has a value its handler took. */
int walk__ok(const struct walk *w, int row);

/* Walk the mapping w->map against its table; 0, or -EINVAL once every problem is reported. */
int walk_mapping(struct pctx *c, struct walk *w);

/* Report the first character of @s, at @at, outside the allowed set. */
int report_bad_char(struct pctx *c, const yaml_node_t *val, const char *path, const char *what,
		    const char *s, size_t at, const char *allowed);

/* A prefix length 1..@max_bits. */
int parse_prefix_len(struct pctx *c, const yaml_node_t *val, const char *path, __u64 max_bits,
		     __u8 *out);
int parse_bool(struct pctx *c, const yaml_node_t *val, const char *path, int *out);

/*
 * One of the words @words[@first..@n - 1] (a names.h table): its index into
 * *@out, else "unknown WHAT 'S' (expected a, b or c)" is reported.
 */
int parse_word_value(struct pctx *c, const yaml_node_t *val, const char *path, const char *what,
		     const char *const *words, unsigned int n, unsigned int first, int *out);

/* An interface name as the kernel takes it, or NULL once reported. */
const char *ifname_of(struct pctx *c, const yaml_node_t *item, const char *path);

/* The index of @name in @names, or -1. */
int find_ifname(const char (*names)[POLICY_IFNAME_LEN], size_t n, const char *name);

/* The number of items of the list @val (a sequence, or one scalar), or -EINVAL once reported. */
int list_check(struct pctx *c, const yaml_node_t *val, const char *path, const char *want,
	       size_t max, const char *empty_hint);

/* Item @i of the list @val, with its field path in @ipath; NULL on failure. */
const yaml_node_t *list_item(struct pctx *c, const yaml_node_t *val, const char *path, int i,
			     char *ipath);

/* ---- prefix.c ---- */

int prefix_equal(const struct policy_prefix *a, const struct policy_prefix *b);

/* Every address of @inner is in @outer; an equal prefix is inside. */
int prefix_contains(const struct policy_prefix *outer, const struct policy_prefix *inner);

/* Every address of @p is in some prefix of @cover, which may take several to cover it. */
int prefix_covered(const struct policy_prefix *p, const struct policy_prefix_list *cover);

/* A list of at most @max prefixes into @list, which owns what it holds even on failure. */
int parse_prefix_list(struct pctx *c, const yaml_node_t *val, const char *path, size_t max,
		      const char *empty_hint, struct policy_prefix_list *list);

/* ---- match.c ---- */

/* The match mapping of one policy (w->obj is its struct policy_slot). */
int parse_match(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path);

/* @a and @b match the same packets: equal fields, and lists equal as sets. */
int match_equal(const struct policy_match *a, const struct policy_match *b);

/* ---- events.c ---- */

/* `events: { sample: 1/N }` at @val: N into *@sample. 0, or -EINVAL once reported. */
int parse_events_into(struct pctx *c, const yaml_node_t *val, const char *path, __u32 *sample);

/* ---- escalate.c ---- */

/* A policy's `escalate:` mapping at @val into *@e. 0, or -EINVAL once reported. */
int parse_escalate_into(struct pctx *c, const yaml_node_t *val, const char *path,
			struct policy_escalate *e);

/* ---- policies.c, sections.c, load.c ---- */

int parse_policies(struct pctx *c, struct walk *w, const yaml_node_t *seq, const char *path);
int parse_root(struct pctx *c, struct policy_set *ps);
int report_empty(struct pctx *c);

#endif /* SLUICE_POLICY_PARSE_H */
