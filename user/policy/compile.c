// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * policy_set → struct sluice_policy values and sluice_match LPM entries.
 *
 * The classifier: for each protocol, the port space is cut into elementary
 * intervals at every policy's range boundary; each interval covered by a
 * port policy becomes one or more LPM prefixes whose value lists every
 * policy that applies there (port policies, then protocol-wide ones, then
 * any-protocol ones, each group ordered most specific key first). A
 * protocol-wide entry and an any-protocol entry catch what has no port.
 * The longest prefix therefore always carries the complete list, and the
 * XDP program needs exactly one lookup.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/svc.h"
#include "sluice/gcra.h"
#include "sluice/lease.h"
#include "policy/compile.h"
#include "policy/compile_addrs.h"

#define PORT_SPACE (1U << SLUICE_PORT_BITS)
#define ERR_LEN	   160

static const __u8 ported_protos[] = { IPPROTO_TCP, IPPROTO_UDP };

int compile_gcra(const struct policy_rate *rate, __u64 burst, struct sluice_gcra *out, char *err,
		 size_t errlen)
{
	unsigned __int128 period_ticks = (unsigned __int128)rate->period_ns
					 << SLUICE_GCRA_TICK_SHIFT;
	unsigned __int128 mant, tol, max_cost = 1;
	int shift = 0;

	if (!rate->amount || !rate->period_ns || !burst) {
		snprintf(err, errlen, "rate and burst must be positive");
		return -ERANGE;
	}
	if (rate->cost == SLUICE_COST_BYTES) {
		/* The finest interval whose product with the largest cost stays < 2^63. */
		max_cost = SLUICE_COST_BYTES_MAX;
		for (shift = SLUICE_GCRA_SHIFT_MAX; shift > 0; shift--) {
			mant = ((period_ticks << shift) + rate->amount - 1) / rate->amount;
			if (mant * max_cost < (unsigned __int128)1 << 63)
				break;
		}
	}
	mant = ((period_ticks << shift) + rate->amount - 1) / rate->amount;
	if (mant * max_cost >= (unsigned __int128)1 << 63 ||
	    ((max_cost * mant) >> shift) > SLUICE_GCRA_INCR_MAX) {
		snprintf(err, errlen, "rate is too slow: one %s would take more than %llu days",
			 rate->cost == SLUICE_COST_BYTES ? "frame" : "packet",
			 (unsigned long long)(SLUICE_GCRA_INCR_MAX >> SLUICE_GCRA_TICK_SHIFT) /
				 SLUICE_NSEC_PER_DAY);
		return -ERANGE;
	}
	if ((period_ticks << shift) < rate->amount || (mant >> shift) == 0) {
		snprintf(err, errlen, "rate is too fast: more than %llu units per ns",
			 1ULL << SLUICE_GCRA_TICK_SHIFT);
		return -ERANGE;
	}
	/* Packets: burst × the rounded-up interval, so exactly @burst fit at once. */
	tol = rate->cost == SLUICE_COST_BYTES ? burst * period_ticks / rate->amount : burst * mant;
	if (tol > SLUICE_GCRA_TOL_MAX) {
		snprintf(err, errlen,
			 "burst %llu is too large for this rate: a full bucket would "
			 "take more than %llu days to refill",
			 (unsigned long long)burst,
			 (unsigned long long)(SLUICE_GCRA_TOL_MAX >> SLUICE_GCRA_TICK_SHIFT) /
				 SLUICE_NSEC_PER_DAY);
		return -EOVERFLOW;
	}
	memset(out, 0, sizeof(*out));
	out->interval_mant = mant;
	out->interval_shift = shift;
	out->tolerance = tol;
	return 0;
}

/*
 * The most a written lease of @p may let the program spend (#12): its
 * burst plus its rate over the lease's life, SLUICE_LEASE_KERNEL_SYNCS
 * sync intervals of @sync_ns, rounded up; saturated at 2^64 - 1. The
 * store's answer is checked against the smaller cap (budget/redis.c): this
 * is the kernel's own bound, for a lease no store could have granted.
 */
static __u64 lease_max_of(const struct policy *p, __u64 sync_ns)
{
	unsigned __int128 life_ns = (unsigned __int128)SLUICE_LEASE_KERNEL_SYNCS * sync_ns;
	unsigned __int128 max =
		p->burst + (p->rate.amount * life_ns + p->rate.period_ns - 1) / p->rate.period_ns;

	return max > UINT64_MAX ? UINT64_MAX : (__u64)max;
}

static void fill_policy(struct sluice_policy *sp, const struct policy *p, __u32 id,
			const struct sluice_gcra *g, const struct sluice_gcra *degraded,
			__u64 sync_ns)
{
	memset(sp, 0, sizeof(*sp));
	sp->limit = *g;
	sp->degraded = *degraded;
	sp->closed_after_ns = p->closed_after_ns;
	sp->id = id;
	sp->cost = p->rate.cost;
	if (p->keyed) {
		sp->prefix4 = SLUICE_V4MAPPED_BITS + p->ipv4_prefix;
		sp->prefix6 = p->ipv6_prefix;
	}
	if (p->match.tcp_syn)
		sp->flags |= SLUICE_POLICY_F_TCP_SYN;
	if (p->has_local_limit)
		sp->flags |= SLUICE_POLICY_F_LOCAL_LIMIT;
	if (p->cold_strict)
		sp->flags |= SLUICE_POLICY_F_COLD_STRICT;
	sp->mode = p->mode;
	sp->on_agent_loss = p->on_agent_loss;
	sp->on_store_error = p->on_store_error;
	sp->class = p->class;
	sp->scope = p->scope;
	if (p->scope == SLUICE_SCOPE_CLUSTER)
		sp->lease_max = lease_max_of(p, sync_ns);
	snprintf(sp->name, sizeof(sp->name), "%s", p->name);
}

static int policy_applies_to_proto(const struct policy *p, __u8 proto)
{
	return p->match.proto == POLICY_PROTO_ANY || p->match.proto == proto;
}

/*
 * Order of evaluation, most specific first: longer key prefixes before
 * shorter ones before one global key, then narrower port ranges, then a
 * named protocol before any, then file order.
 */
static long specificity(const struct policy *p)
{
	long key = p->keyed ? (long)p->ipv4_prefix * 256 + p->ipv6_prefix + 1 : 0;
	long ports = p->match.has_port ? PORT_SPACE - (p->match.port_hi - p->match.port_lo) : 0;
	long proto = p->match.proto != POLICY_PROTO_ANY;

	return (key * (PORT_SPACE + 1) + ports) * 2 + proto;
}

static int cmp_ids(const void *a, const void *b, void *arg)
{
	const struct policy_set *ps = arg;
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;
	long sx = specificity(&ps->policies[x]), sy = specificity(&ps->policies[y]);

	if (sx != sy)
		return sx > sy ? -1 : 1;
	return x < y ? -1 : x > y;
}

struct match_builder {
	const struct policy_set *ps;
	const char *iface;
	struct compiled *out;
	size_t cap;
	struct diag_list *diags;
	int reported_layers; /* report "too many layers" once */
};

/* Which policies a list collects. */
struct selector {
	__u8 proto;	/* POLICY_PROTO_ANY: only any-protocol policies */
	int with_ports; /* also port policies covering @port */
	__u16 port;
	int unparsed; /* every policy: a frame whose protocol and port are unknown */
	int bytes;    /* with unparsed: byte-cost policies only (an orphan fragment) */
};

static int selects(const struct match_builder *b, const struct policy *p, const struct selector *s)
{
	if (!policy_on_iface(p, b->iface))
		return 0;
	if (s->unparsed)
		return !s->bytes || p->rate.cost == SLUICE_COST_BYTES;
	if (s->proto == POLICY_PROTO_ANY)
		return p->match.proto == POLICY_PROTO_ANY && !p->match.has_port;
	if (!policy_applies_to_proto(p, s->proto))
		return 0;
	if (!p->match.has_port)
		return 1;
	return s->with_ports && p->match.port_lo <= s->port && s->port <= p->match.port_hi;
}

static const char *proto_name(__u8 proto)
{
	switch (proto) {
	case IPPROTO_TCP: return "tcp";
	case IPPROTO_UDP: return "udp";
	case IPPROTO_ICMP: return "icmp";
	case IPPROTO_ICMPV6: return "icmpv6";
	default: return "";
	}
}

static void report_layers(struct match_builder *b, const __u32 *ids, size_t n,
			  const struct selector *s)
{
	const struct policy *last = &b->ps->policies[ids[0]];
	char names[DIAG_MSG_LEN / 2] = "", where[sizeof(" to port 65535")] = "";
	size_t i, len = 0;

	if (b->reported_layers++)
		return;
	if (s->unparsed && !s->bytes) {
		diag__add(b->diags, b->ps->unparsed_pos, "unparsed",
			  "'charge' applies every policy to a frame the program cannot parse, and "
			  "%zu policies apply on one interface (expected at most %d); set "
			  "unparsed to drop",
			  n, SLUICE_MAX_LAYERS);
		return;
	}
	if (s->unparsed) {
		diag__add(b->diags, b->ps->orphan_pos, "fragments.orphan",
			  "'pass' charges every byte policy for an orphan fragment, and %zu byte "
			  "policies apply on one interface (expected at most %d); set orphan to "
			  "drop",
			  n, SLUICE_MAX_LAYERS);
		return;
	}
	for (i = 0; i < n; i++) {
		if (b->ps->policies[ids[i]].pos.line > last->pos.line)
			last = &b->ps->policies[ids[i]];
		if (len < sizeof(names))
			len += snprintf(names + len, sizeof(names) - len, "%s'%s'", i ? ", " : "",
					b->ps->policies[ids[i]].name);
	}
	if (s->with_ports)
		snprintf(where, sizeof(where), " to port %u", s->port);
	diag__add(b->diags, last->pos, "policies",
		  "%zu policies can match one %s%spacket%s: %s (expected at most %d)", n,
		  proto_name(s->proto), s->proto == POLICY_PROTO_ANY ? "" : " ", where, names,
		  SLUICE_MAX_LAYERS);
}

/* Append one LPM entry whose list is every policy @s selects; none: no entry. */
static int add_entry(struct match_builder *b, const struct selector *s, __u32 prefixlen, __u16 port)
{
	__u32 ids[SLUICE_MAX_POLICIES];
	struct match_entry *e;
	size_t i, n = 0;

	for (i = 0; i < b->ps->n_policies; i++)
		if (selects(b, &b->ps->policies[i], s))
			ids[n++] = i;
	if (!n)
		return 0;
	if (n > SLUICE_MAX_LAYERS) {
		report_layers(b, ids, n, s);
		return 0;
	}
	if (b->out->n_match == b->cap) {
		diag__add(b->diags, (struct src_pos){ 0 }, "",
			  "policies need more than %d classifier entries", COMPILE_MATCH_MAX);
		return -EINVAL;
	}
	qsort_r(ids, n, sizeof(ids[0]), cmp_ids, (void *)b->ps);
	e = &b->out->match[b->out->n_match++];
	memset(e, 0, sizeof(*e));
	e->key.prefixlen = prefixlen;
	e->key.gen = b->out->gen;
	e->key.proto = s->proto;
	e->key.dst_port = htons(port);
	e->val.count = n;
	memcpy(e->val.ids, ids, n * sizeof(ids[0]));
	return 0;
}

/* Cover ports [lo, hi] with aligned power-of-two blocks, one entry each. */
static int add_port_range(struct match_builder *b, const struct selector *s, __u32 lo, __u32 hi)
{
	__u32 size;
	int bits, err;

	while (lo <= hi) {
		for (bits = SLUICE_PORT_BITS; bits > 0; bits--) {
			size = 1U << bits;
			if (lo % size == 0 && lo + size - 1 <= hi)
				break;
		}
		size = 1U << bits;
		err = add_entry(b, s, SLUICE_MATCH_BITS_PORT - bits, lo);
		if (err)
			return err;
		lo += size;
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* Elementary port intervals of @proto: one cut at every range boundary. */
static int add_port_entries(struct match_builder *b, __u8 proto)
{
	__u32 cuts[2 * SLUICE_MAX_POLICIES + 1];
	struct selector s = { .proto = proto, .with_ports = 1 };
	const struct policy *p;
	size_t i, j, n = 0;
	int err, covered;

	for (i = 0; i < b->ps->n_policies; i++) {
		p = &b->ps->policies[i];
		if (!p->match.has_port || !policy_applies_to_proto(p, proto))
			continue;
		cuts[n++] = p->match.port_lo;
		cuts[n++] = p->match.port_hi + 1U;
	}
	/* A false positive: qsort() reads only cuts[0..n), all written above. */
	/* cppcheck-suppress uninitvar */
	qsort(cuts, n, sizeof(cuts[0]), cmp_u32);
	for (i = 0; i + 1 < n; i++) {
		if (cuts[i] == cuts[i + 1])
			continue;
		s.port = cuts[i];
		for (covered = 0, j = 0; j < b->ps->n_policies && !covered; j++) {
			p = &b->ps->policies[j];
			covered = p->match.has_port && policy_applies_to_proto(p, proto) &&
				  p->match.port_lo <= s.port && s.port <= p->match.port_hi;
		}
		if (!covered)
			continue;
		err = add_port_range(b, &s, cuts[i], cuts[i + 1] - 1);
		if (err)
			return err;
	}
	return 0;
}

static int proto_is_used(const struct policy_set *ps, __u8 proto)
{
	size_t i;

	for (i = 0; i < ps->n_policies; i++) {
		if (ps->policies[i].match.proto == proto)
			return 1;
		if (ps->policies[i].match.proto == POLICY_PROTO_ANY &&
		    ps->policies[i].match.has_port &&
		    (proto == IPPROTO_TCP || proto == IPPROTO_UDP))
			return 1;
	}
	return 0;
}

static int build_match(struct match_builder *b)
{
	static const __u8 protos[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, IPPROTO_ICMPV6 };
	struct selector any = { .proto = POLICY_PROTO_ANY };
	size_t i;
	int err;

	err = add_entry(b, &any, SLUICE_MATCH_BITS_GEN, 0);
	/* Shared: the program charges an orphan its bytes alone (bpf/layer.bpf.h, policy_for()). */
	if (!err &&
	    (b->ps->unparsed == SLUICE_UNPARSED_CHARGE || b->ps->orphan == SLUICE_ORPHAN_PASS))
		err = add_entry(
			b,
			&(struct selector){ .unparsed = 1,
					    .bytes = b->ps->unparsed != SLUICE_UNPARSED_CHARGE },
			SLUICE_MATCH_BITS_UNPARSED, 0);
	for (i = 0; !err && i < sizeof(protos) / sizeof(protos[0]); i++) {
		struct selector s = { .proto = protos[i] };

		if (proto_is_used(b->ps, protos[i]))
			err = add_entry(b, &s, SLUICE_MATCH_BITS_PROTO, 0);
	}
	for (i = 0; !err && i < sizeof(ported_protos) / sizeof(ported_protos[0]); i++)
		err = add_port_entries(b, ported_protos[i]);
	return err;
}

/* ---- the classifier as the XDP program reads it ----------------------- */

static int cmp_entry_lists(const void *a, const void *b)
{
	const struct match_entry *x = *(const struct match_entry *const *)a;
	const struct match_entry *y = *(const struct match_entry *const *)b;

	return memcmp(&x->val, &y->val, sizeof(x->val));
}

/*
 * The slot of every entry's list into @slot_of, equal lists sharing one,
 * from 1 up; returns one past the last slot, or -ENOMEM.
 */
static long assign_slots(const struct compiled *c, __u32 *slot_of)
{
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to structs */
	const struct match_entry **v = calloc(c->n_match ? c->n_match : 1, sizeof(*v));
	__u32 slot = 0;
	size_t i;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < c->n_match; i++)
		v[i] = &c->match[i];
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to structs */
	qsort(v, c->n_match, sizeof(*v), cmp_entry_lists);
	for (i = 0; i < c->n_match; i++) {
		if (!i || cmp_entry_lists(&v[i - 1], &v[i]))
			slot++;
		slot_of[v[i] - c->match] = slot;
	}
	free(v);
	return slot + 1L;
}

static int cmp_prefixlen(const void *a, const void *b)
{
	const struct match_entry *x = *(const struct match_entry *const *)a;
	const struct match_entry *y = *(const struct match_entry *const *)b;

	return x->key.prefixlen < y->key.prefixlen ? -1 : x->key.prefixlen > y->key.prefixlen;
}

static int is_ported(__u8 proto)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ported_protos); i++)
		if (ported_protos[i] == proto)
			return 1;
	return 0;
}

/* Point every class entry @e matches at @slot. */
static void fill_classes(__u32 *classes, const struct match_entry *e, __u32 slot)
{
	__u32 plen = e->key.prefixlen, port, first = 0, n = PORT_SPACE, i;

	if (plen == SLUICE_MATCH_BITS_UNPARSED) {
		classes[SLUICE_SVC_UNPARSED] = slot;
		return;
	}
	if (plen == SLUICE_MATCH_BITS_GEN) {
		for (i = 0; i < SLUICE_SVC_UNPARSED; i++)
			classes[i] = slot;
		return;
	}
	if (plen == SLUICE_MATCH_BITS_PROTO)
		classes[sluice_svc_of(e->key.proto, 0, 0)] = slot;
	else {
		first = ntohs(e->key.dst_port);
		n = 1U << (SLUICE_MATCH_BITS_PORT - plen);
	}
	for (port = first; is_ported(e->key.proto) && port < first + n; port++)
		classes[sluice_svc_of(e->key.proto, 1, port)] = slot;
}

int compile_classes(const struct compiled *c, __u32 *classes, struct sluice_match *slots,
		    size_t *n_slots)
{
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to structs */
	const struct match_entry **v = calloc(c->n_match ? c->n_match : 1, sizeof(*v));
	__u32 *slot_of = calloc(c->n_match ? c->n_match : 1, sizeof(*slot_of));
	long n = v && slot_of ? assign_slots(c, slot_of) : -ENOMEM;
	size_t i;

	if (n > SLUICE_MATCH_SLOTS)
		n = -E2BIG; /* compile_policies() refuses these */
	if (n < 0) {
		free(v);
		free(slot_of);
		return (int)n;
	}
	memset(classes, 0, SLUICE_SVCS * sizeof(*classes));
	memset(slots, 0, SLUICE_MATCH_SLOTS * sizeof(*slots));
	for (i = 0; i < c->n_match; i++) {
		slots[slot_of[i]] = c->match[i].val;
		v[i] = &c->match[i];
	}
	/* Shorter prefixes first: a longer one that also matches overwrites. */
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to structs */
	qsort(v, c->n_match, sizeof(*v), cmp_prefixlen);
	for (i = 0; i < c->n_match; i++)
		fill_classes(classes, v[i], slot_of[v[i] - c->match]);
	*n_slots = (size_t)n;
	free(v);
	free(slot_of);
	return 0;
}

/* Refuse more distinct policy lists than sluice_match has slots for. */
static int check_slots(const struct compiled *c, struct diag_list *diags)
{
	__u32 *slot_of = calloc(c->n_match ? c->n_match : 1, sizeof(*slot_of));
	long n = slot_of ? assign_slots(c, slot_of) : -ENOMEM;

	free(slot_of);
	if (n > SLUICE_MATCH_SLOTS)
		diag__add(diags, (struct src_pos){ 0 }, "",
			  "policies need %ld distinct policy lists (expected at most %d)", n - 1,
			  SLUICE_MATCH_SLOTS - 1);
	return n < 0 ? (int)n : 0;
}

__u32 compile_batch(const struct policy *p)
{
	__u64 batch = p->burst / SLUICE_BATCH_BURST_DIV;
	__u64 unit = p->rate.cost == SLUICE_COST_BYTES ? SLUICE_BATCH_FRAME_BYTES : 1;
	unsigned __int128 per_window;

	if (p->scope != SLUICE_SCOPE_NODE || !p->rate.period_ns)
		return 0;
	per_window = (unsigned __int128)p->rate.amount * SLUICE_BATCH_WINDOW_NS / p->rate.period_ns;
	if (per_window < batch)
		batch = (__u64)per_window;
	if (batch > SLUICE_BATCH_MAX * unit)
		batch = SLUICE_BATCH_MAX * unit;
	return batch < SLUICE_BATCH_MIN * unit ? 0 : (__u32)batch;
}

/* One limit of policy @id; @local says it is the local (degraded) one. */
static int compile_limit(const struct policy *p, __u32 id, int local, struct sluice_gcra *g,
			 struct diag_list *diags)
{
	const struct policy_rate *rate = local ? &p->local_rate : &p->rate;
	char field[DIAG_FIELD_LEN];
	char err[ERR_LEN];
	int rc = compile_gcra(rate, local ? p->local_burst : p->burst, g, err, sizeof(err));

	if (rc < 0) {
		snprintf(field, sizeof(field), "policies[%u].%s", id,
			 rc == -EOVERFLOW ? (local ? "local_burst" : "burst")
					  : (local ? "local_limit" : "rate"));
		diag__add(diags, rc == -EOVERFLOW ? p->burst_pos : p->rate_pos, field, "%s", err);
		return -EINVAL;
	}
	return 0;
}

static int compile_one(const struct policy *p, __u32 id, const char *iface, __u64 sync_ns,
		       struct sluice_policy *out, struct diag_list *diags)
{
	struct sluice_gcra g, degraded;

	if (compile_limit(p, id, 0, &g, diags))
		return -EINVAL;
	g.batch = compile_batch(p);
	degraded = g;
	if (p->has_local_limit && compile_limit(p, id, 1, &degraded, diags))
		return -EINVAL;
	if (policy_on_iface(p, iface))
		fill_policy(out, p, id, &g, &degraded, sync_ns);
	else
		memset(out, 0, sizeof(*out)); /* an empty slot: not on this interface */
	return 0;
}

/* The gen_flags of the file's decisions for what no policy can decide. */
static __u32 unparsed_flags(const struct policy_set *ps)
{
	__u32 flags = ps->orphan == SLUICE_ORPHAN_PASS ? SLUICE_GEN_F_ORPHAN_PASS : 0;

	if (ps->unparsed == SLUICE_UNPARSED_CHARGE)
		flags |= SLUICE_GEN_F_UNPARSED_CHARGE;
	else if (ps->unparsed == SLUICE_UNPARSED_PASS)
		flags |= SLUICE_GEN_F_UNPARSED_PASS;
	return flags;
}

int compile_policies(const struct policy_set *ps, __u32 gen, const char *iface,
		     struct compiled *out, struct diag_list *diags)
{
	struct match_builder b = { .ps = ps, .iface = iface, .out = out, .diags = diags };
	size_t before = diags->n, i;

	memset(out, 0, sizeof(*out));
	out->gen = gen;
	if (ps->n_policies > SLUICE_MAX_POLICIES) {
		diag__add(diags, (struct src_pos){ 0 }, "policies",
			  "%zu policies (expected at most %d)", ps->n_policies,
			  SLUICE_MAX_POLICIES);
		return -EINVAL;
	}
	out->policies = calloc(ps->n_policies ? ps->n_policies : 1, sizeof(*out->policies));
	out->samples = calloc(ps->n_policies ? ps->n_policies : 1, sizeof(*out->samples));
	b.cap = COMPILE_MATCH_MAX;
	out->match = calloc(b.cap, sizeof(*out->match));
	if (!out->policies || !out->samples || !out->match) {
		compiled__free(out);
		return -ENOMEM;
	}
	out->n_policies = ps->n_policies;
	for (i = 0; i < ps->n_policies; i++) {
		compile_one(&ps->policies[i], i, iface, ps->sync_interval_ns, &out->policies[i],
			    diags);
		if (!policy_on_iface(&ps->policies[i], iface))
			continue;
		if (ps->policies[i].scope == SLUICE_SCOPE_CLUSTER)
			out->gen_flags |= SLUICE_GEN_F_STORE;
		if (ps->policies[i].clock_precise)
			out->gen_flags |= SLUICE_GEN_F_PRECISE;
		out->samples[i] = ps->policies[i].sample;
		if (out->samples[i])
			out->gen_flags |= SLUICE_GEN_F_EVENTS;
	}
	out->sample_unowned = ps->sample;
	if (ps->sample)
		out->gen_flags |= SLUICE_GEN_F_EVENTS;
	out->gen_flags |= unparsed_flags(ps);
	if (build_match(&b) == -ENOMEM || check_slots(out, diags) == -ENOMEM ||
	    compile_addrs(ps, iface, out, diags) == -ENOMEM) {
		compiled__free(out);
		return -ENOMEM;
	}
	if (diags->n != before) {
		compiled__free(out);
		return -EINVAL;
	}
	return 0;
}

void compiled__free(struct compiled *c)
{
	if (!c)
		return;
	free(c->policies);
	free(c->samples);
	free(c->match);
	free(c->src);
	free(c->dst);
	free(c->classes);
	free(c->slots);
	memset(c, 0, sizeof(*c));
}

/* Is @id taken: by a policy enforced now, or one of the first @upto given ids? */
static int id_in_use(const struct compiled *c, size_t upto, const __u32 *ids,
		     const struct sluice_policy *old, size_t n_old, __u32 id)
{
	size_t i;

	for (i = 0; i < n_old; i++)
		if (old[i].name[0] && old[i].id == id)
			return 1;
	for (i = 0; i < upto; i++)
		if (c->policies[i].name[0] && ids[i] == id)
			return 1;
	return 0;
}

/*
 * The same policy for key state: same name, same key and cost. A changed
 * rate or burst keeps the id, and the agent carries the keys into the new
 * limit (maps__carry_keys()).
 */
static int same_keys(const struct sluice_policy *a, const struct sluice_policy *b)
{
	return !strcmp(a->name, b->name) && a->cost == b->cost && a->prefix4 == b->prefix4 &&
	       a->prefix6 == b->prefix6;
}

static int reused_id(const struct sluice_policy *p, const struct sluice_policy *old, size_t n_old,
		     __u32 *id)
{
	size_t i;

	for (i = 0; i < n_old; i++) {
		if (old[i].name[0] && same_keys(p, &old[i])) {
			*id = old[i].id;
			return 1;
		}
	}
	return 0;
}

static int new_id(const struct compiled *c, size_t i, __u32 *ids, const struct sluice_policy *old,
		  size_t n_old, __u32 *next_id)
{
	size_t tries;

	for (tries = 0; tries < SLUICE_MAX_POLICIES; tries++) {
		ids[i] = *next_id % SLUICE_MAX_POLICIES;
		*next_id = (ids[i] + 1) % SLUICE_MAX_POLICIES;
		if (!id_in_use(c, i, ids, old, n_old, ids[i]))
			return 0;
	}
	return -ENOSPC;
}

/* The classifier arrays of @c, once its ids are final. */
static int build_classes(struct compiled *c)
{
	free(c->classes);
	free(c->slots);
	c->classes = calloc(SLUICE_SVCS, sizeof(*c->classes));
	c->slots = calloc(SLUICE_MATCH_SLOTS, sizeof(*c->slots));
	c->n_slots = 0;
	if (!c->classes || !c->slots)
		return -ENOMEM;
	return compile_classes(c, c->classes, c->slots, &c->n_slots);
}

int compile_assign_ids(struct compiled *c, const struct sluice_policy *old, size_t n_old,
		       __u32 *next_id)
{
	__u32 *ids = calloc(c->n_policies ? c->n_policies : 1, sizeof(*ids));
	size_t i, j;
	int err = ids ? 0 : -ENOMEM;

	for (i = 0; !err && i < c->n_policies; i++)
		if (c->policies[i].name[0] && !reused_id(&c->policies[i], old, n_old, &ids[i]))
			err = new_id(c, i, ids, old, n_old, next_id);
	for (i = 0; !err && i < c->n_policies; i++)
		c->policies[i].id = ids[i];
	for (i = 0; !err && i < c->n_match; i++)
		for (j = 0; j < c->match[i].val.count; j++)
			c->match[i].val.ids[j] = ids[c->match[i].val.ids[j]];
	free(ids);
	return err ? err : build_classes(c);
}

__u32 compile_share_max(const struct policy *p)
{
	__u64 cost_max = p->rate.cost == SLUICE_COST_BYTES ? SLUICE_COST_BYTES_MAX : 1;
	__u64 cost_min = p->rate.cost == SLUICE_COST_BYTES ? COMPILE_MIN_FRAME_BYTES : 1;
	__u64 by_range, by_burst;
	struct sluice_gcra g;
	char err[DIAG_MSG_LEN];

	if (compile_gcra(&p->rate, p->burst, &g, err, sizeof(err)))
		return 1;
	by_range = SLUICE_GCRA_INCR_MAX /
		   sluice_gcra_incr(cost_max, g.interval_mant, g.interval_shift);
	by_burst = g.tolerance / sluice_gcra_incr(cost_min, g.interval_mant, g.interval_shift);
	by_range = by_range < by_burst ? by_range : by_burst;
	return by_range < 1 ? 1 : by_range > COMPILE_SHARE_MAX ? COMPILE_SHARE_MAX : by_range;
}
