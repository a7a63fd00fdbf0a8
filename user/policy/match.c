// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A policy's match: { proto, dst_port, tcp_syn, src, src_except, dst,
 * iface }, each a row of match_fields and its handler, and whether two
 * matches select the same packets (for "never decides", policies.c).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "base/names.h"
#include "policy/parse.h"

#define PORT_EXPECTED	"a port such as 53 or a range such as \"1024-65535\""
#define IFACES_EXPECTED "an interface name such as eth0, or a sequence of them"

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
			      "interface '%.*s%s' is not in the top-level interfaces "
			      "list, which is empty; add it there",
			      DIAG_SHOW(name));
	join_ifnames(names, sizeof(names), known->ifaces, known->n_ifaces);
	return REPORT(c, item, path,
		      "interface '%.*s%s' is not in the top-level interfaces list "
		      "(expected %s)",
		      DIAG_SHOW(name), names);
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
			REPORT(c, item, ipath, "interface '%.*s%s' is listed twice (first as %s)",
			       DIAG_SHOW(s), first);
		if (!s || j >= 0 || check_iface_known(c, w, item, ipath, s)) {
			err = -EINVAL;
			continue;
		}
		memcpy(m->ifaces[i], s, strlen(s) + 1);
	}
	return err;
}

_Static_assert(MATCHF_MAX <= WALK_MAX_FIELDS, "match_fields outgrew struct walk");

static const struct field match_fields[MATCHF_MAX] = {
	[MATCHF_PROTO] = { "proto", parse_proto, NULL },
	[MATCHF_DST_PORT] = { "dst_port", parse_dst_port, NULL },
	[MATCHF_TCP_SYN] = { "tcp_syn", parse_tcp_syn, NULL },
	[MATCHF_SRC] = { "src", parse_src, NULL },
	[MATCHF_SRC_EXCEPT] = { "src_except", parse_src_except, NULL },
	[MATCHF_DST] = { "dst", parse_dst, NULL },
	[MATCHF_IFACE] = { "iface", parse_match_iface, NULL },
};

int parse_match(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct walk mw = WALK_INIT(w->obj, val, path, match_fields, MATCHF_MAX);

	return walk_mapping(c, &mw);
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

int match_equal(const struct policy_match *a, const struct policy_match *b)
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
