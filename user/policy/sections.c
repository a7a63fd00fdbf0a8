// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The sections of a policy file around its policies: the top-level table
 * (interfaces, allow, agent, node, store, fragments, unparsed, events,
 * policies)
 * and its defaults, the agent's heartbeat and timeout, the store's
 * endpoints and fleet settings, the node's name, and what the program does
 * with what its policies cannot decide. The policies themselves are
 * policies.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/names.h"
#include "policy/parse.h"

/*
 * The agent's clock: a heartbeat faster than HEARTBEAT_NS_MIN costs CPU for
 * nothing, and the agent is lost after at least HEARTBEAT_TIMEOUTS missed
 * heartbeats, so that one late heartbeat is not an outage.
 */
#define HEARTBEAT_NS_MIN     (10 * SLUICE_NSEC_PER_MSEC)
#define AGENT_TIMEOUT_NS_MAX SLUICE_NSEC_PER_HOUR
#define HEARTBEAT_TIMEOUTS   2
#define HEARTBEAT_NS_MAX     (AGENT_TIMEOUT_NS_MAX / HEARTBEAT_TIMEOUTS)

enum agent_field {
	AGENTF_HEARTBEAT = 0,
	AGENTF_TIMEOUT, /* after AGENTF_HEARTBEAT: it must span several heartbeats */
	AGENTF_MAX,
};

enum store_field {
	STOREF_REDIS = 0,
	STOREF_USERNAME,
	STOREF_PASSWORD_FILE,
	STOREF_TIMEOUT,
	STOREF_CLEARTEXT_AUTH,
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

enum fragments_field {
	FRAGF_ORPHAN = 0,
	FRAGF_MAX,
};

enum endpoint_field {
	ENDPF_REDIS = 0,
	ENDPF_USERNAME,
	ENDPF_PASSWORD_FILE,
	ENDPF_TIMEOUT,
	ENDPF_CLEARTEXT_AUTH,
	ENDPF_MAX,
};

_Static_assert(AGENTF_MAX <= WALK_MAX_FIELDS, "agent_fields outgrew struct walk");
_Static_assert(TOPF_MAX <= WALK_MAX_FIELDS, "top_fields outgrew struct walk");
_Static_assert(STOREF_MAX <= WALK_MAX_FIELDS, "store_fields outgrew struct walk");

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
			      "interface '%.*s%s' is listed twice (first as "
			      "interfaces[%d])",
			      DIAG_SHOW(s), j);
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
	struct walk aw = WALK_INIT(w->obj, val, path, agent_fields, AGENTF_MAX);

	if (walk_mapping(c, &aw))
		return -EINVAL;
	return check_default_timeout(c, &aw);
}

/* ---- store ---- */

#define URL_REDIS    "redis://"
#define URL_UNIX     "unix://"
#define URL_SENTINEL "sentinel://"
#define URL_CLUSTER  "cluster://"
#define URL_EXPECTED                                                                               \
	"expected redis://host:port, unix:///path/to/redis.sock, "                                 \
	"sentinel://host:port[,host:port...]/master-name or cluster://host:port[,host:port...]"
#define CLUSTER_SEEDS_MAX    16 /* addresses in a cluster:// URL (budget/cluster.h) */
#define PORT_DIGITS_MAX	     5	/* in PORT_MAX */
#define STORE_TIMEOUT_NS_MAX SLUICE_NSEC_PER_SEC /* a slower store is a failed one */
#define SYNC_INTERVAL_NS_MIN 10000000ULL	 /* 10 ms */

/* The endpoint a walk fills: the store itself, or store.abuse. */
static struct policy_store *endpoint_of(struct walk *w)
{
	return w->obj;
}

/*
 * One address of @n bytes at @a: host:port or [v6]:port, or, unless
 * @need_port, the host alone (Redis's default port). 0 or -1.
 */
static int check_host_port(const char *a, size_t n, int need_port)
{
	const char *end = a + n, *colon = NULL, *p;
	unsigned long port = 0;

	if (n && a[0] == '[') {
		p = memchr(a, ']', n);
		if (!p || p == a + 1)
			return -1;
		colon = p + 1 < end ? p + 1 : NULL;
		if (colon && *colon != ':')
			return -1;
	} else {
		for (p = a; p < end; p++)
			if (*p == ':')
				colon = p;
		if (colon == a || !n)
			return -1; /* no host */
	}
	if (!colon)
		return need_port ? -1 : 0;
	if (end - colon - 1 < 1 || end - colon - 1 > PORT_DIGITS_MAX)
		return -1;
	for (p = colon + 1; p < end; p++) {
		if (!isdigit((unsigned char)*p))
			return -1;
		port = port * DECIMAL_BASE + (unsigned long)(*p - '0');
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
		if (check_host_port(a, comma - a, 1))
			return REPORT(c, val, path,
				      "'%.*s%s' in '%.*s%s' is not a sentinel address "
				      "(expected host:port with a port from %d to %d)",
				      diag_show_len(a, comma - a), a, diag_show_cut(a, comma - a),
				      DIAG_SHOW(s), PORT_MIN, PORT_MAX);
		if (comma == slash)
			return 0;
	}
}

/*
 * cluster://host:port[,host:port...]: some nodes of a Redis Cluster, each
 * with a port, at most CLUSTER_SEEDS_MAX. Reports the first problem.
 */
static int check_cluster_url(struct pctx *c, const yaml_node_t *val, const char *path,
			     const char *s)
{
	const char *a = s + strlen(URL_CLUSTER), *comma;
	int n;

	for (n = 1;; n++, a = comma + 1) {
		comma = strchr(a, ',');
		if (!comma)
			comma = a + strlen(a);
		if (check_host_port(a, comma - a, 1))
			return REPORT(c, val, path,
				      "'%.*s%s' in '%.*s%s' is not a cluster node address "
				      "(expected host:port with a port from %d to %d)",
				      diag_show_len(a, comma - a), a, diag_show_cut(a, comma - a),
				      DIAG_SHOW(s), PORT_MIN, PORT_MAX);
		if (n > CLUSTER_SEEDS_MAX)
			return REPORT(c, val, path, "'%.*s%s' names more than %d nodes",
				      DIAG_SHOW(s), CLUSTER_SEEDS_MAX);
		if (!*comma)
			return 0;
	}
}

static int parse_redis_url(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	const char *s = scalar_of(c, val, path, "a URL such as redis://127.0.0.1:6379");
	struct policy_store *e = endpoint_of(w);

	if (!s)
		return -EINVAL;
	if (strncmp(s, URL_UNIX, strlen(URL_UNIX)) != 0 && strchr(s, '@'))
		return REPORT(c, val, path,
			      "the URL holds a user or password before '@' (not shown here), "
			      "which would reach logs and metrics (expected 'username' and "
			      "'password_file', or $SLUICE_STORE_PASSWORD)");
	if (!strncmp(s, URL_SENTINEL, strlen(URL_SENTINEL))) {
		if (check_sentinel_url(c, val, path, s))
			return -EINVAL;
	} else if (!strncmp(s, URL_CLUSTER, strlen(URL_CLUSTER))) {
		if (check_cluster_url(c, val, path, s))
			return -EINVAL;
	} else if (!strncmp(s, URL_REDIS, strlen(URL_REDIS))) {
		if (check_host_port(s + strlen(URL_REDIS), strlen(s + strlen(URL_REDIS)), 0))
			return REPORT(c, val, path,
				      "'%.*s%s' is not a Redis address (expected "
				      "redis://host[:port] with a port from %d to %d)",
				      DIAG_SHOW(s), PORT_MIN, PORT_MAX);
	} else if (strncmp(s, URL_UNIX, strlen(URL_UNIX)) != 0 || s[strlen(URL_UNIX)] != '/') {
		return REPORT(c, val, path, "'%.*s%s' is not a store URL (%s)", DIAG_SHOW(s),
			      URL_EXPECTED);
	}
	if (strlen(s) >= sizeof(e->url))
		return REPORT(c, val, path, "the URL is longer than %zu bytes", sizeof(e->url) - 1);
	snprintf(e->url, sizeof(e->url), "%s", s);
	e->pos = node_pos(val);
	return 0;
}

/* A Redis ACL user name: printable, no spaces (it goes into AUTH as one word). */
static int parse_username(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	const char *s = scalar_of(c, val, path, "a Redis ACL user name");
	struct policy_store *e = endpoint_of(w);
	const char *p;

	if (!s)
		return -EINVAL;
	for (p = s; *p && isgraph((unsigned char)*p); p++)
		;
	if (!*s || *p || strlen(s) >= sizeof(e->username))
		return REPORT(c, val, path,
			      "'%.*s%s' is not a user name (expected 1 to %zu printable "
			      "characters, no spaces)",
			      DIAG_SHOW(s), sizeof(e->username) - 1);
	snprintf(e->username, sizeof(e->username), "%s", s);
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

static int parse_cleartext_auth(struct pctx *c, struct walk *w, const yaml_node_t *val,
				const char *path)
{
	return parse_bool(c, val, path, &endpoint_of(w)->cleartext_auth);
}

static const struct field endpoint_fields[ENDPF_MAX] = {
	[ENDPF_REDIS] = { "redis", parse_redis_url, "a store needs 'redis', its URL" },
	[ENDPF_USERNAME] = { "username", parse_username, NULL },
	[ENDPF_PASSWORD_FILE] = { "password_file", parse_password_file, NULL },
	[ENDPF_TIMEOUT] = { "timeout", parse_store_timeout, NULL },
	[ENDPF_CLEARTEXT_AUTH] = { "cleartext_auth", parse_cleartext_auth, NULL },
};

/* store.abuse: abuse policies' own endpoint, so they never share a failure domain. */
static int parse_abuse_store(struct pctx *c, struct walk *w, const yaml_node_t *val,
			     const char *path)
{
	struct policy_set *ps = c->ps;
	struct walk ew = WALK_INIT(&ps->abuse_store, val, path, endpoint_fields, ENDPF_MAX);

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
	[STOREF_USERNAME] = { "username", parse_username, NULL },
	[STOREF_PASSWORD_FILE] = { "password_file", parse_password_file, NULL },
	[STOREF_TIMEOUT] = { "timeout", parse_store_timeout, NULL },
	[STOREF_CLEARTEXT_AUTH] = { "cleartext_auth", parse_cleartext_auth, NULL },
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
	struct walk nw = WALK_INIT(w->obj, val, path, node_fields, NODEF_MAX);

	return walk_mapping(c, &nw);
}

static int is_cluster_url(const char *url)
{
	return !strncmp(url, URL_CLUSTER, strlen(URL_CLUSTER));
}

/*
 * On a Redis Cluster the part of a key in braces picks its slot, and the
 * budget's keys put the policy and key address there (budget/keys.h):
 * a fleet name with a brace would come first and put every key on one
 * shard.
 */
static int check_cluster_fleet(struct pctx *c, const yaml_node_t *val, const char *path)
{
	const struct policy_set *ps = c->ps;

	if (!is_cluster_url(ps->store.url) && !is_cluster_url(ps->abuse_store.url))
		return 0;
	if (!strpbrk(ps->fleet, "{}"))
		return 0;
	return REPORT(c, val, path,
		      "fleet '%s' has a brace, which on a Redis Cluster would put every key "
		      "on one shard (expected a fleet name without '{' or '}')",
		      ps->fleet);
}

static int parse_store(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct policy_set *ps = w->obj;
	struct walk sw = WALK_INIT(&ps->store, val, path, store_fields, STOREF_MAX);

	ps->store.timeout_ns = POLICY_STORE_TIMEOUT_NS_DEFAULT;
	if (walk_mapping(c, &sw))
		return -EINVAL;
	return check_cluster_fleet(c, val, path);
}

/* ---- what the program cannot decide by its policies (docs/policy.md) ---- */

_Static_assert(sizeof(enum sluice_orphan) == sizeof(int), "enum sluice_orphan is not an int");
_Static_assert(sizeof(enum sluice_unparsed) == sizeof(int), "enum sluice_unparsed is not an int");

static int parse_orphan(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	(void)w;
	c->ps->orphan_pos = node_pos(val);
	return parse_word_value(c, val, path, "orphan decision", sluice_orphan_names,
				SLUICE_ORPHAN_MAX, 0, (int *)&c->ps->orphan);
}

static const struct field fragments_fields[FRAGF_MAX] = {
	[FRAGF_ORPHAN] = { "orphan", parse_orphan, NULL },
};

static int parse_fragments(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	struct walk fw = WALK_INIT(w->obj, val, path, fragments_fields, FRAGF_MAX);

	return walk_mapping(c, &fw);
}

static int parse_unparsed(struct pctx *c, struct walk *w, const yaml_node_t *val, const char *path)
{
	(void)w;
	c->ps->unparsed_pos = node_pos(val);
	return parse_word_value(c, val, path, "unparsed decision", sluice_unparsed_names,
				SLUICE_UNPARSED_MAX, 0, (int *)&c->ps->unparsed);
}

static int parse_top_events(struct pctx *c, struct walk *w, const yaml_node_t *val,
			    const char *path)
{
	(void)w;
	return parse_events_into(c, val, path, &c->ps->sample);
}

static const struct field top_fields[TOPF_MAX] = {
	[TOPF_INTERFACES] = { "interfaces", parse_interfaces, NULL },
	[TOPF_ALLOW] = { "allow", parse_allow, NULL },
	[TOPF_AGENT] = { "agent", parse_agent, NULL },
	[TOPF_NODE] = { "node", parse_node, NULL },
	[TOPF_STORE] = { "store", parse_store, NULL },
	[TOPF_FRAGMENTS] = { "fragments", parse_fragments, NULL },
	[TOPF_UNPARSED] = { "unparsed", parse_unparsed, NULL },
	[TOPF_EVENTS] = { "events", parse_top_events, NULL },
	[TOPF_POLICIES] = { "policies", parse_policies,
			    "a policy file needs a sequence of policies under 'policies'" },
};

/* A file with no document, or a null one: a problem of the whole file. */
int report_empty(struct pctx *c)
{
	const struct src_pos whole_file = { 0 };

	return REPORT_AT(c, whole_file, "",
			 "empty policy file (expected a mapping with 'policies')");
}

int parse_root(struct pctx *c, struct policy_set *ps)
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
