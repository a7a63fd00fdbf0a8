// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Source and destination prefixes → sluice_src / sluice_dst LPM entries.
 *
 * Policies name prefix lists (match.src, match.src_except, match.dst); each
 * distinct list (or include/except pair) is a "set" with a bit of
 * sluice_addr_val.sets. Every prefix any list or the allowlist names
 * becomes one trie entry, plus a root entry for addresses under none of
 * them. An address's longest match P decides everything: the prefixes
 * containing the address are exactly P and P's ancestors among the named
 * prefixes, so the entry for P stores the sets (and the allow flag) that
 * those prefixes imply. The XDP program does one lookup per address.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "policy/compile_addrs.h"

#define ROOT_BITS 0

/* One distinct prefix and what naming it directly means. */
struct node {
	struct policy_prefix prefix;
	__u64 inc; /* sets that include it */
	__u64 exc; /* sets that except it */
	int allow; /* on the allowlist */
};

struct addr_set {
	const struct policy_prefix_list *inc;
	const struct policy_prefix_list *exc; /* NULL for destination sets */
};

struct addr_builder {
	struct node *nodes;
	size_t n, cap;
	struct addr_set sets[SLUICE_MAX_SETS];
	size_t n_sets;
	__u64 any_sets; /* sets with an empty include list: every address, less exceptions */
};

static int cmp_prefix(const void *a, const void *b)
{
	const struct policy_prefix *x = a, *y = b;

	if (x->bits != y->bits)
		return x->bits < y->bits ? -1 : 1;
	return memcmp(x->addr, y->addr, SLUICE_ADDR_LEN);
}

static int cmp_node(const void *a, const void *b)
{
	return cmp_prefix(&((const struct node *)a)->prefix, &((const struct node *)b)->prefix);
}

static int same_list(const struct policy_prefix_list *a, const struct policy_prefix_list *b)
{
	size_t i, j;

	if ((a ? a->n : 0) != (b ? b->n : 0))
		return 0;
	for (i = 0; a && i < a->n; i++) {
		for (j = 0; j < b->n && cmp_prefix(&a->v[i], &b->v[j]); j++)
			;
		if (j == b->n)
			return 0;
	}
	return 1;
}

/* The set index (1-based, as sluice_policy.src_set) of @inc/@exc; 0: no set needed. */
static int set_of(struct addr_builder *b, const struct policy_prefix_list *inc,
		  const struct policy_prefix_list *exc)
{
	size_t i;

	if (!inc->n && (!exc || !exc->n))
		return 0;
	for (i = 0; i < b->n_sets; i++)
		if (same_list(b->sets[i].inc, inc) && same_list(b->sets[i].exc, exc))
			return i + 1;
	if (b->n_sets == SLUICE_MAX_SETS)
		return -ENOSPC;
	b->sets[b->n_sets].inc = inc;
	b->sets[b->n_sets].exc = exc;
	return ++b->n_sets;
}

static int add_node(struct addr_builder *b, const struct policy_prefix *p, __u64 inc, __u64 exc,
		    int allow)
{
	struct node *n;

	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;

		n = realloc(b->nodes, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		b->nodes = n;
		b->cap = cap;
	}
	b->nodes[b->n++] = (struct node){ .prefix = *p, .inc = inc, .exc = exc, .allow = allow };
	return 0;
}

static int add_list(struct addr_builder *b, const struct policy_prefix_list *l, __u64 inc,
		    __u64 exc, int allow)
{
	size_t i;
	int err = 0;

	for (i = 0; l && !err && i < l->n; i++)
		err = add_node(b, &l->v[i], inc, exc, allow);
	return err;
}

/* Sort and merge duplicate prefixes, OR-ing what they mean. */
static void merge_nodes(struct addr_builder *b)
{
	size_t i, out = 0;

	qsort(b->nodes, b->n, sizeof(*b->nodes), cmp_node);
	for (i = 0; i < b->n; i++) {
		if (out && !cmp_node(&b->nodes[out - 1], &b->nodes[i])) {
			b->nodes[out - 1].inc |= b->nodes[i].inc;
			b->nodes[out - 1].exc |= b->nodes[i].exc;
			b->nodes[out - 1].allow |= b->nodes[i].allow;
			continue;
		}
		b->nodes[out++] = b->nodes[i];
	}
	b->n = out;
}

/* What an address whose longest match is node @i gets: its ancestors' meanings. */
static struct sluice_addr_val node_value(const struct addr_builder *b, size_t i,
					 const __u8 *lengths, size_t n_lengths)
{
	struct node key = { 0 }, *anc;
	__u64 inc = b->any_sets, exc = 0;
	struct sluice_addr_val v = { 0 };
	size_t l;

	for (l = 0; l < n_lengths && lengths[l] <= b->nodes[i].prefix.bits; l++) {
		key.prefix = b->nodes[i].prefix;
		addr_mask(key.prefix.addr, lengths[l], key.prefix.addr);
		key.prefix.bits = lengths[l];
		anc = bsearch(&key, b->nodes, b->n, sizeof(*b->nodes), cmp_node);
		if (!anc)
			continue;
		inc |= anc->inc;
		exc |= anc->exc;
		if (anc->allow)
			v.flags |= SLUICE_ADDR_F_ALLOW;
	}
	v.sets = inc & ~exc;
	return v;
}

/* One trie entry per node, for generation @gen; into *@out (allocated). */
static int emit(const struct addr_builder *b, __u32 gen, struct addr_entry **out, size_t *n_out)
{
	__u8 lengths[SLUICE_ADDR_BITS + 1];
	size_t i, n_lengths = 0;

	for (i = 0; i < b->n; i++)
		if (!n_lengths || lengths[n_lengths - 1] != b->nodes[i].prefix.bits)
			lengths[n_lengths++] = b->nodes[i].prefix.bits;
	*out = calloc(b->n ? b->n : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (i = 0; i < b->n; i++) {
		(*out)[i].key.prefixlen = SLUICE_ADDR_KEY_BITS(b->nodes[i].prefix.bits);
		(*out)[i].key.gen = gen;
		memcpy((*out)[i].key.addr, b->nodes[i].prefix.addr, SLUICE_ADDR_LEN);
		(*out)[i].val = node_value(b, i, lengths, n_lengths);
	}
	*n_out = b->n;
	return 0;
}

/* Assign sets to the policies of @out and collect their prefixes; @dst picks the side. */
static int collect(struct addr_builder *b, const struct policy_set *ps, const char *iface,
		   struct compiled *out, int dst, struct diag_list *diags)
{
	const struct policy_prefix_list *inc, *exc;
	size_t i;
	int set, err = 0;

	for (i = 0; !err && i < ps->n_policies; i++) {
		if (!policy_on_iface(&ps->policies[i], iface))
			continue;
		inc = dst ? &ps->policies[i].match.dst : &ps->policies[i].match.src;
		exc = dst ? NULL : &ps->policies[i].match.src_except;
		set = set_of(b, inc, exc);
		if (set == -ENOSPC) {
			diag__add(diags, ps->policies[i].pos, "policies",
				  "more than %d distinct %s prefix lists", SLUICE_MAX_SETS,
				  dst ? "dst" : "src");
			return -EINVAL;
		}
		if (dst)
			out->policies[i].dst_set = set;
		else
			out->policies[i].src_set = set;
		if (set && !inc->n)
			b->any_sets |= 1ULL << (set - 1);
		if (set && b->sets[set - 1].inc == inc) /* first user: its prefixes */
			err = add_list(b, inc, 1ULL << (set - 1), 0, 0)
				      ?: add_list(b, exc, 0, 1ULL << (set - 1), 0);
	}
	return err;
}

static int build_side(const struct policy_set *ps, const char *iface, struct compiled *out, int dst,
		      struct diag_list *diags)
{
	struct policy_prefix root = { .bits = ROOT_BITS };
	struct addr_builder b = { 0 };
	int err = collect(&b, ps, iface, out, dst, diags);

	if (!err && !dst)
		err = add_list(&b, &ps->allow, 0, 0, 1);
	if (err || (!b.n_sets && !b.n))
		goto out;
	err = add_node(&b, &root, 0, 0, 0);
	if (err)
		goto out;
	merge_nodes(&b);
	if (b.n > COMPILE_ADDR_MAX) {
		diag__add(diags, (struct src_pos){ 0 }, dst ? "dst" : "src",
			  "%zu distinct prefixes (expected at most %d)", b.n, COMPILE_ADDR_MAX);
		err = -EINVAL;
		goto out;
	}
	err = dst ? emit(&b, out->gen, &out->dst, &out->n_dst)
		  : emit(&b, out->gen, &out->src, &out->n_src);
	if (!err)
		out->gen_flags |= dst ? SLUICE_GEN_F_DST : SLUICE_GEN_F_SRC;
out:
	free(b.nodes);
	return err;
}

int compile_addrs(const struct policy_set *ps, const char *iface, struct compiled *out,
		  struct diag_list *diags)
{
	int err = build_side(ps, iface, out, 0, diags);

	return err == -ENOMEM ? err : build_side(ps, iface, out, 1, diags);
}
