// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Redis Cluster for the shared budget; see budget/cluster.h (the slot
 * function is budget/keys.c's). Replies are read through store_command(),
 * so CLUSTER SLOTS is as bounded as any other reply, with a budget of its
 * own sized by CLUSTER_RANGES_MAX.
 */
#include <errno.h>
#include <hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/compiler.h"
#include "base/clock.h"
#include "base/escape.h"
#include "base/log.h"
#include "budget/cluster.h"
#include "budget/conn.h"
#include "budget/wire.h"

#define PORT_MAX	 65535
#define RANGE_NODES_FROM 2 /* a range: start, end, then the primary and its replicas */
#define NODE_FIELDS_MIN	 2 /* a node: host, port (then id and metadata) */
#define MOVED_WORD	 "MOVED "
#define ASK_WORD	 "ASK "
/* An address as a log value: it comes from a reply, so it may hold anything but a space. */
#define ADDR_TEXT_LEN ESCAPE_LOGFMT_LEN(CLUSTER_ADDR_LEN)

static int is_int_in(const redisReply *r, long long lo, long long hi)
{
	return r->type == REDIS_REPLY_INTEGER && r->integer >= lo && r->integer <= hi;
}

/* @node's "host:port" (or "[v6]:port") into @out; 0 or -1. */
static int addr_of_node(const redisReply *node, const char *asked_host, char *out)
{
	const char *host;
	int n;

	if (node->type != REDIS_REPLY_ARRAY || node->elements < NODE_FIELDS_MIN ||
	    node->element[0]->type != REDIS_REPLY_STRING ||
	    !is_int_in(node->element[1], 1, PORT_MAX))
		return -1;
	host = node->element[0]->len ? node->element[0]->str : asked_host;
	n = snprintf(out, CLUSTER_ADDR_LEN, strchr(host, ':') ? "[%s]:%lld" : "%s:%lld", host,
		     node->element[1]->integer);
	return n > 0 && n < CLUSTER_ADDR_LEN && !strchr(host, ' ') ? 0 : -1;
}

/* Whether @addr is one of the @n of @list. */
static int addr_in(const char (*list)[CLUSTER_ADDR_LEN], size_t n, const char *addr)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(list[i], addr))
			return 1;
	return 0;
}

/* The index of @addr in @m, added when new; CLUSTER_NODE_NONE when full. */
static size_t map_node(struct cluster_map *m, const char *addr)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->addr[i], addr))
			return i;
	if (m->n == CLUSTER_NODES_MAX)
		return CLUSTER_NODE_NONE;
	snprintf(m->addr[m->n], CLUSTER_ADDR_LEN, "%s", addr);
	return m->n++;
}

/* One range [start, end, primary, replicas...] into @m; NULL or why not. */
static const char *add_range(const redisReply *r, const char *asked_host, struct cluster_map *m)
{
	char addr[CLUSTER_ADDR_LEN];
	size_t node, s;

	if (r->type != REDIS_REPLY_ARRAY || r->elements <= RANGE_NODES_FROM ||
	    !is_int_in(r->element[0], 0, CLUSTER_SLOTS - 1) ||
	    !is_int_in(r->element[1], r->element[0]->integer, CLUSTER_SLOTS - 1))
		return "a slot range out of bounds";
	if (addr_of_node(r->element[RANGE_NODES_FROM], asked_host, addr))
		return "a primary that is not [host, port]";
	node = map_node(m, addr);
	if (node == CLUSTER_NODE_NONE)
		return "more primaries than " SLUICE_STR(CLUSTER_NODES_MAX);
	for (s = RANGE_NODES_FROM + 1; s < r->elements; s++)
		if (!addr_of_node(r->element[s], asked_host, addr) &&
		    m->n_replicas < CLUSTER_NODES_MAX && !addr_in(m->replica, m->n_replicas, addr))
			snprintf(m->replica[m->n_replicas++], CLUSTER_ADDR_LEN, "%s", addr);
	for (s = (size_t)r->element[0]->integer; s <= (size_t)r->element[1]->integer; s++) {
		if (m->slot_node[s] != CLUSTER_NODE_NONE)
			return "a slot served twice";
		m->slot_node[s] = (__u8)node;
	}
	return NULL;
}

int cluster_map_parse(const redisReply *r, const char *asked_host, struct cluster_map *m, char *err,
		      size_t len)
{
	const char *why = NULL;
	size_t i;

	memset(m, 0, sizeof(*m));
	memset(m->slot_node, CLUSTER_NODE_NONE, sizeof(m->slot_node));
	if (r->type != REDIS_REPLY_ARRAY)
		why = r->type == REDIS_REPLY_ERROR ? r->str : "not an array";
	else if (r->elements > CLUSTER_RANGES_MAX)
		why = "more ranges than " SLUICE_STR(CLUSTER_RANGES_MAX);
	for (i = 0; !why && i < r->elements; i++)
		why = add_range(r->element[i], asked_host, m);
	if (!why && !m->n)
		why = "no slot is served";
	if (!why)
		return 0;
	snprintf(err, len, "'CLUSTER SLOTS' on '%s': %s", asked_host, why);
	memset(m, 0, sizeof(*m));
	return -EPROTO;
}

int cluster_redirect_of(const redisReply *r, struct cluster_redirect *out)
{
	const char *p;
	char *end;
	unsigned long slot;

	if (r->type != REDIS_REPLY_ERROR)
		return 0;
	memset(out, 0, sizeof(*out));
	if (!strncmp(r->str, MOVED_WORD, strlen(MOVED_WORD)))
		p = r->str + strlen(MOVED_WORD);
	else if (!strncmp(r->str, ASK_WORD, strlen(ASK_WORD)))
		p = r->str + strlen(ASK_WORD), out->ask = 1;
	else
		return 0;
	if (*p < '0' || *p > '9')
		return 0;
	slot = strtoul(p, &end, 10);
	if (slot >= CLUSTER_SLOTS || *end != ' ' || !end[1] || strchr(end + 1, ' ') ||
	    !strchr(end + 1, ':') || strlen(end + 1) >= CLUSTER_ADDR_LEN)
		return 0;
	out->slot = (__u16)slot;
	snprintf(out->addr, sizeof(out->addr), "%s", end + 1);
	return 1;
}

int cluster__init(struct cluster *cl, const char *url, cluster_connect_fn connect, void *arg,
		  __u64 timeout_ns, int cancel_fd)
{
	const char *a, *comma;

	memset(cl, 0, sizeof(*cl));
	cl->connect = connect;
	cl->connect_arg = arg;
	cl->timeout_ns = timeout_ns;
	cl->cancel_fd = cancel_fd;
	cl->stale = 1;
	if (strncmp(url, CLUSTER_URL_SCHEME, strlen(CLUSTER_URL_SCHEME)) != 0)
		return -EINVAL;
	for (a = url + strlen(CLUSTER_URL_SCHEME); *a; a = comma + 1) {
		comma = strchr(a, ',');
		if (!comma)
			comma = a + strlen(a);
		if (cl->n_seeds == CLUSTER_NODES_MAX || comma == a || comma - a >= CLUSTER_ADDR_LEN)
			return -EINVAL;
		snprintf(cl->seeds[cl->n_seeds++], CLUSTER_ADDR_LEN, "%.*s", (int)(comma - a), a);
		if (!*comma)
			break;
	}
	return cl->n_seeds ? 0 : -EINVAL;
}

static void node_drop(struct cluster_node *n)
{
	redisFree(n->conn.c);
	memset(&n->conn, 0, sizeof(n->conn));
}

/* The host part of "host:port" or "[v6]:port" into @out. */
static void host_of(const char *addr, char *out)
{
	const char *colon = strrchr(addr, ':');
	size_t n = colon ? (size_t)(colon - addr) : strlen(addr);

	if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']')
		snprintf(out, CLUSTER_ADDR_LEN, "%.*s", (int)(n - 2), addr + 1);
	else
		snprintf(out, CLUSTER_ADDR_LEN, "%.*s", (int)n, addr);
}

/* CLUSTER SLOTS on @addr into @m; 0 or -1 with @err. */
static int ask_slots(struct cluster *cl, const char *addr, struct cluster_map *m, char *err,
		     size_t len)
{
	const char *argv[] = { "CLUSTER", "SLOTS" };
	struct store_conn c = { .timeout_ns = cl->timeout_ns, .cancel_fd = cl->cancel_fd };
	const struct wire_budget b = {
		.objects = CLUSTER_RANGES_MAX * CLUSTER_RANGE_VALUES,
		.bytes = CLUSTER_RANGES_MAX * CLUSTER_RANGE_VALUES * CLUSTER_VALUE_BYTES,
		.depth = CLUSTER_SLOTS_DEPTH,
	};
	char host[CLUSTER_ADDR_LEN];
	redisReply *r = NULL;
	int ret;

	if (cl->connect(cl->connect_arg, addr, &c, err, len))
		return -1;
	ret = store_command_within(&c, ARRAY_SIZE(argv), argv, &b, &r, err, len);
	host_of(addr, host);
	if (!ret)
		ret = cluster_map_parse(r, host, m, err, len);
	if (r)
		freeReplyObject(r);
	redisFree(c.c);
	return ret ? -1 : 0;
}

/* Whether the primary at @addr rests after a failure (cluster__conn()). */
static int is_resting(const struct cluster *cl, const char *addr, __u64 now)
{
	size_t i;

	for (i = 0; i < cl->map.n; i++)
		if (!strcmp(cl->map.addr[i], addr))
			return cl->node[i].rest_until_ns > now;
	return 0;
}

/*
 * Log the primaries of @m when they are not those of @cl's map (a
 * failover, or a reshard): the operator's view of when this node saw it.
 */
static void note_primaries(const struct cluster *cl, const struct cluster_map *m)
{
	char list[CLUSTER_NODES_MAX * CLUSTER_ADDR_LEN] = "";
	char text[ESCAPE_LOGFMT_LEN(sizeof(list))];
	int same = cl->map.n == m->n;
	size_t i, at = 0;

	for (i = 0; i < m->n; i++) {
		same = same && addr_in(cl->map.addr, cl->map.n, m->addr[i]);
		if (at < sizeof(list)) /* it holds every address; a cut list still logs */
			at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s", i ? "," : "",
					       m->addr[i]);
	}
	if (cl->map.n && !same)
		log_event(LOG_WARN, "cluster_map", "primaries=%s",
			  escape_logfmt_text(text, sizeof(text), list));
}

int cluster__refresh(struct cluster *cl, char *err, size_t len)
{
	struct cluster_map *m = calloc(1, sizeof(*m));
	struct cluster_node old[CLUSTER_NODES_MAX];
	size_t i, j, tried;
	__u64 now = mono_ns();
	const char *addr;
	int ret = -EIO, pass;

	if (!m) {
		snprintf(err, len, "cluster map: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	/*
	 * The primaries known first: a seed may be the one that just died;
	 * those resting after a failure last, if no other answered.
	 */
	for (pass = 0; ret && pass < 2; pass++)
		for (tried = 0; ret && tried < cl->map.n + cl->n_seeds; tried++) {
			addr = tried < cl->map.n ? cl->map.addr[tried]
						 : cl->seeds[tried - cl->map.n];
			if (is_resting(cl, addr, now) == pass && !ask_slots(cl, addr, m, err, len))
				ret = 0;
		}
	if (ret) {
		free(m);
		return ret;
	}
	memcpy(old, cl->node, sizeof(old));
	memset(cl->node, 0, sizeof(cl->node));
	for (i = 0; i < m->n; i++)
		for (j = 0; j < cl->map.n; j++)
			if (!strcmp(m->addr[i], cl->map.addr[j])) {
				cl->node[i] = old[j];
				memset(&old[j], 0, sizeof(old[j]));
			}
	for (j = 0; j < cl->map.n; j++)
		node_drop(&old[j]);
	note_primaries(cl, m);
	cl->map = *m;
	cl->stale = 0;
	cl->refreshes++;
	free(m);
	return 0;
}

struct store_conn *cluster__conn(struct cluster *cl, size_t i, char *err, size_t len)
{
	struct cluster_node *n = &cl->node[i];
	__u64 now;

	if (n->conn.c)
		return &n->conn;
	now = mono_ns();
	if (n->rest_until_ns > now) {
		snprintf(err, len, "resting for %" PRIu64 " ms after a failure",
			 (uint64_t)((n->rest_until_ns - now) / SLUICE_NSEC_PER_MSEC));
		cl->stale = 1;
		return NULL;
	}
	memset(&n->conn, 0, sizeof(n->conn));
	n->conn.timeout_ns = cl->timeout_ns;
	n->conn.cancel_fd = cl->cancel_fd;
	if (!cl->connect(cl->connect_arg, cl->map.addr[i], &n->conn, err, len))
		return &n->conn;
	cluster__note(cl, i, 0);
	return NULL;
}

size_t cluster__node_of(struct cluster *cl, const char *addr)
{
	size_t i;

	for (i = 0; i < cl->map.n; i++)
		if (!strcmp(cl->map.addr[i], addr))
			return i;
	if (addr_in(cl->map.replica, cl->map.n_replicas, addr))
		return map_node(&cl->map, addr);
	return CLUSTER_NODE_NONE;
}

void cluster__stranger(struct cluster *cl, const char *addr)
{
	char text[ADDR_TEXT_LEN];

	cl->stale = 1;
	if (addr_in(cl->strangers, cl->n_strangers, addr) || cl->n_strangers == CLUSTER_NODES_MAX)
		return; /* a flood of addresses: the first ones were logged */
	snprintf(cl->strangers[cl->n_strangers++], CLUSTER_ADDR_LEN, "%s", addr);
	log_event(LOG_WARN, "cluster_redirect_refused",
		  "to=%s err=\"not in the slot map read from the seeds; not followed, "
		  "and the map is read again\"",
		  escape_logfmt_text(text, sizeof(text), addr));
}

void cluster__note(struct cluster *cl, size_t i, int ok)
{
	struct cluster_node *n = &cl->node[i];
	char text[ADDR_TEXT_LEN];

	if (ok && n->down)
		log_event(LOG_INFO, "store_shard", "addr=%s state=up failed_in_row=%u",
			  escape_logfmt_text(text, sizeof(text), cl->map.addr[i]),
			  n->failed_in_row);
	else if (!ok && !n->down)
		log_event(LOG_WARN, "store_shard", "addr=%s state=down",
			  escape_logfmt_text(text, sizeof(text), cl->map.addr[i]));
	n->down = !ok;
	if (ok) {
		n->ok++;
		n->failed_in_row = 0;
		n->rest_until_ns = 0;
		return;
	}
	n->failed++;
	if (++n->failed_in_row >= CLUSTER_REST_AFTER) {
		unsigned int doublings = n->failed_in_row - CLUSTER_REST_AFTER;

		if (doublings > CLUSTER_REST_DOUBLINGS)
			doublings = CLUSTER_REST_DOUBLINGS;
		n->rest_until_ns =
			mono_ns() + (CLUSTER_REST_TIMEOUTS * cl->timeout_ns << doublings);
	}
	node_drop(n);
	cl->stale = 1;
}

void cluster__close(struct cluster *cl)
{
	size_t i;

	for (i = 0; i < CLUSTER_NODES_MAX; i++)
		node_drop(&cl->node[i]);
}
