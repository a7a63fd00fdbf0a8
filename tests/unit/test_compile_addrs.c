/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of the prefix-set compiler (user/policy/compile_addrs.c), through
 * compile_policies() on YAML parsed by policy_set__parse(), the agent's
 * path. Each row's sluice_src and sluice_dst entries are looked up here as
 * the kernel's LPM trie does (longest matching prefix of generation and
 * address, the root entry included) for many addresses: every named
 * prefix's first and last address and their neighbours, fixed corner
 * addresses, and pseudo-random ones. What the lookup says is compared with
 * membership computed by brute force from the parsed lists:
 *
 *   - the allow flag: the address is in some allowlist prefix;
 *   - each policy's src_set: in some src prefix (or src is empty) and in
 *     no src_except prefix; its dst_set likewise with dst;
 *
 * and the entries themselves: the generation byte on every key, no host
 * bits, no key twice, exactly one entry per distinct prefix plus the root,
 * one set per distinct list, the generation flags, and the error past
 * SLUICE_MAX_SETS lists. Rows: fixed/<name> by hand, random/<n> from a
 * fixed seed. Nothing expected is taken from compile_addrs.c's output.
 */
#define _GNU_SOURCE /* open_memstream */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "policy_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/addr.h"
#include "policy/compile.h"
#include "policy/policy.h"
#include "rows.h"

#define FILE_NAME	    "test.yaml"
#define GEN		    1 /* a generation other than 0, to see it in every key */
#define GEN_BITS	    8 /* the generation byte that leads every trie key */
#define V4_BITS		    32
#define V4MAPPED_BITS	    96 /* ::ffff:0:0/96 */
#define YAML_MAX	    65536
#define PROBES_MAX	    8192
#define RANDOM_PROBES	    400 /* per row, besides the prefix boundaries */
#define RANDOM_ROWS	    24
#define RANDOM_SEED	    0x5111ceULL
#define RANDOM_POLICIES_MAX 10
#define RANDOM_LIST_MAX	    3 /* prefixes in one random src, src_except or dst list */
#define RANDOM_ALLOW_MAX    4
#define BASES		    3	 /* addresses per family that random prefixes are cut from */
#define BASE_PORT	    1000 /* policy i matches port BASE_PORT + i: no layers */
#define N_TESTS		    64

/* ---- addresses and prefixes ----------------------------------------------- */

static int addr_bit(const __u8 *addr, int i)
{
	return addr[i / 8] >> (7 - i % 8) & 1;
}

static void addr_set_bit(__u8 *addr, int i, int v)
{
	if (v)
		addr[i / 8] |= 1U << (7 - i % 8);
	else
		addr[i / 8] &= ~(1U << (7 - i % 8));
}

/* Does the prefix of @bits bits at @prefix contain @addr? Bit by bit: brute force. */
static int has_addr(const __u8 *prefix, int bits, const __u8 *addr)
{
	int i;

	for (i = 0; i < bits; i++)
		if (addr_bit(prefix, i) != addr_bit(addr, i))
			return 0;
	return 1;
}

static int in_list(const struct policy_prefix_list *l, const __u8 *addr)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (has_addr(l->v[i].addr, l->v[i].bits, addr))
			return 1;
	return 0;
}

static int same_prefix(const struct policy_prefix *a, const struct policy_prefix *b)
{
	return a->bits == b->bits && !memcmp(a->addr, b->addr, SLUICE_ADDR_LEN);
}

static int list_has(const struct policy_prefix_list *l, const struct policy_prefix *p)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (same_prefix(&l->v[i], p))
			return 1;
	return 0;
}

/* The same prefixes, in any order. */
static int same_list(const struct policy_prefix_list *a, const struct policy_prefix_list *b)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (!list_has(b, &a->v[i]))
			return 0;
	for (i = 0; i < b->n; i++)
		if (!list_has(a, &b->v[i]))
			return 0;
	return 1;
}

/* ---- the kernel side, emulated ------------------------------------------- */

/* The LPM trie's answer for (GEN, @addr): the longest matching entry, or NULL. */
static const struct sluice_addr_val *lpm_lookup(const struct addr_entry *e, size_t n,
						const __u8 *addr)
{
	const struct addr_entry *best = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		int bits = (int)e[i].key.prefixlen - GEN_BITS;

		if (e[i].key.gen != GEN || bits < 0 || !has_addr(e[i].key.addr, bits, addr))
			continue;
		if (!best || e[i].key.prefixlen > best->key.prefixlen)
			best = &e[i];
	}
	return best ? &best->val : NULL;
}

/* As policy.h defines sluice_policy.src_set: 0 any, else 1 + the bit the address needs. */
static int in_set(__u64 sets, __u8 set)
{
	return set == 0 || (set <= SLUICE_MAX_SETS && (sets >> (set - 1) & 1));
}

/* ---- parsing and compiling ------------------------------------------------ */

/* Parse @yaml, which must be a valid policy file. */
static struct policy_set *parse_good(const char *yaml)
{
	return parse_valid(FILE_NAME, yaml);
}

static void compile_good(const struct policy_set *ps, const char *iface, struct compiled *c)
{
	struct diag_list d = { .file = FILE_NAME };
	int err = compile_policies(ps, GEN, iface, c, &d);
	char *printed;

	if (err || d.n) {
		printed = print_diags(&d);
		fail_msg("compile_policies() = %d, diagnostics:\n%s", err, printed);
	}
	diag__free(&d);
}

/* ---- the checks ------------------------------------------------------------ */

/* Distinct prefixes of the lists that make sets or the allowlist, on one side. */
struct prefixes {
	struct policy_prefix v[PROBES_MAX];
	size_t n;
};

static void prefixes_add(struct prefixes *s, const struct policy_prefix_list *l)
{
	size_t i, j;

	for (i = 0; i < l->n; i++) {
		for (j = 0; j < s->n && !same_prefix(&s->v[j], &l->v[i]); j++)
			;
		if (j == s->n) {
			assert_true(s->n < PROBES_MAX);
			s->v[s->n++] = l->v[i];
		}
	}
}

/* Prefixes named on the source (@dst 0) or destination side by what applies on @iface. */
static void named_prefixes(const struct policy_set *ps, const char *iface, int dst,
			   struct prefixes *s)
{
	size_t i;

	s->n = 0;
	for (i = 0; i < ps->n_policies; i++) {
		if (!policy_on_iface(&ps->policies[i], iface))
			continue;
		prefixes_add(s, dst ? &ps->policies[i].match.dst : &ps->policies[i].match.src);
		if (!dst)
			prefixes_add(s, &ps->policies[i].match.src_except);
	}
	if (!dst)
		prefixes_add(s, &ps->allow);
}

/* Well-formed keys: the generation, a length within the address, no host bits, unique. */
static void check_keys(const char *side, const struct addr_entry *e, size_t n)
{
	size_t i, j;
	int b;

	for (i = 0; i < n; i++) {
		int bits = (int)e[i].key.prefixlen - GEN_BITS;

		if (e[i].key.gen != GEN)
			fail_msg("%s entry %zu: generation %u, expected %d", side, i, e[i].key.gen,
				 GEN);
		if (bits < 0 || bits > SLUICE_ADDR_BITS)
			fail_msg("%s entry %zu: prefixlen %u", side, i, e[i].key.prefixlen);
		for (b = bits; b < SLUICE_ADDR_BITS; b++)
			if (addr_bit(e[i].key.addr, b))
				fail_msg("%s entry %zu: host bit %d set", side, i, b);
		for (j = 0; j < i; j++)
			if (!memcmp(&e[i].key, &e[j].key, sizeof(e[i].key)))
				fail_msg("%s entries %zu and %zu have the same key", side, j, i);
	}
}

/*
 * One entry per distinct named prefix, plus the root (unless the root is
 * named itself); nothing at all when nothing is named on this side.
 */
static void check_count(const char *side, size_t n_entries, const struct prefixes *named,
			int side_used)
{
	struct policy_prefix root = { .bits = 0 };
	size_t want = 0, i;
	int has_root = 0;

	for (i = 0; i < named->n; i++)
		has_root |= same_prefix(&named->v[i], &root);
	if (side_used)
		want = named->n + !has_root;
	if (n_entries != want)
		fail_msg("%s: %zu entries, expected %zu (%zu distinct prefixes%s)", side, n_entries,
			 want, named->n, has_root ? ", the root among them" : " and the root");
}

/* Policies with the same lists share a set; different lists never do. */
static void check_sets_distinct(const struct policy_set *ps, const struct compiled *c)
{
	const struct policy_match *a, *b;
	size_t i, j;

	for (i = 0; i < ps->n_policies; i++) {
		for (j = 0; j < i; j++) {
			if (!c->policies[i].name[0] || !c->policies[j].name[0])
				continue;
			a = &ps->policies[i].match;
			b = &ps->policies[j].match;
			if ((same_list(&a->src, &b->src) &&
			     same_list(&a->src_except, &b->src_except)) !=
			    (c->policies[i].src_set == c->policies[j].src_set))
				fail_msg("policies %zu and %zu: src sets %u and %u", j, i,
					 c->policies[j].src_set, c->policies[i].src_set);
			if (same_list(&a->dst, &b->dst) !=
			    (c->policies[i].dst_set == c->policies[j].dst_set))
				fail_msg("policies %zu and %zu: dst sets %u and %u", j, i,
					 c->policies[j].dst_set, c->policies[i].dst_set);
		}
	}
}

static const char *probe_text(const __u8 *addr, char *buf)
{
	return addr_text(buf, INET6_ADDRSTRLEN, addr, -1) ? "?" : buf;
}

/* What the XDP program learns about @addr, against brute-force membership. */
static void check_addr(const struct policy_set *ps, const struct compiled *c, const __u8 *addr)
{
	const struct sluice_addr_val *src = NULL, *dst = NULL;
	const struct policy_match *m;
	char text[INET6_ADDRSTRLEN];
	int allowed, want, got;
	size_t i;

	if (c->gen_flags & SLUICE_GEN_F_SRC) {
		src = lpm_lookup(c->src, c->n_src, addr);
		if (!src)
			fail_msg("%s: no sluice_src entry matches", probe_text(addr, text));
	}
	if (c->gen_flags & SLUICE_GEN_F_DST) {
		dst = lpm_lookup(c->dst, c->n_dst, addr);
		if (!dst)
			fail_msg("%s: no sluice_dst entry matches", probe_text(addr, text));
	}
	allowed = src && (src->flags & SLUICE_ADDR_F_ALLOW);
	if (allowed != in_list(&ps->allow, addr))
		fail_msg("%s: allow flag %d, expected %d", probe_text(addr, text), allowed,
			 !allowed);
	for (i = 0; i < ps->n_policies; i++) {
		if (!c->policies[i].name[0])
			continue;
		m = &ps->policies[i].match;
		want = (!m->src.n || in_list(&m->src, addr)) && !in_list(&m->src_except, addr);
		got = in_set(src ? src->sets : 0, c->policies[i].src_set);
		if (got != want)
			fail_msg("%s: policy '%s' src match %d, expected %d",
				 probe_text(addr, text), ps->policies[i].name, got, want);
		want = !m->dst.n || in_list(&m->dst, addr);
		got = in_set(dst ? dst->sets : 0, c->policies[i].dst_set);
		if (got != want)
			fail_msg("%s: policy '%s' dst match %d, expected %d",
				 probe_text(addr, text), ps->policies[i].name, got, want);
	}
}

/* splitmix64: a fixed seed gives the same rows on every run. */
static __u64 rng_next(__u64 *s)
{
	__u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void addr_random(__u64 *rng, __u8 *addr, int is_ipv4)
{
	int i;

	for (i = 0; i < SLUICE_ADDR_LEN; i++)
		addr[i] = rng_next(rng);
	if (is_ipv4) {
		memset(addr, 0, 10);
		addr[10] = addr[11] = 0xff;
	}
}

/* @addr plus @delta (+1 or -1) as a 128-bit number; 0 when that wraps. */
static int addr_step(__u8 *addr, int delta)
{
	int i;

	for (i = SLUICE_ADDR_LEN - 1; i >= 0; i--) {
		addr[i] += delta;
		if (addr[i] != (delta > 0 ? 0 : 0xff))
			return 1;
	}
	return 0;
}

/* Probe: each prefix's first and last address and their neighbours, corners, random. */
static void check_all_addrs(const struct policy_set *ps, const struct compiled *c,
			    const struct prefixes *named, __u64 seed)
{
	static const char *const corners[] = {
		"::",
		"::1",
		"::fffe:ffff:ffff",
		"::ffff:0.0.0.0",
		"::ffff:255.255.255.255",
		"::1:0:0:0",
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	};
	__u8 first[SLUICE_ADDR_LEN], last[SLUICE_ADDR_LEN], a[SLUICE_ADDR_LEN];
	size_t i;
	int b;

	for (i = 0; i < named->n; i++) {
		memcpy(first, named->v[i].addr, sizeof(first));
		memcpy(last, first, sizeof(last));
		for (b = named->v[i].bits; b < SLUICE_ADDR_BITS; b++)
			addr_set_bit(last, b, 1);
		check_addr(ps, c, first);
		check_addr(ps, c, last);
		memcpy(a, first, sizeof(a));
		if (addr_step(a, -1))
			check_addr(ps, c, a);
		memcpy(a, last, sizeof(a));
		if (addr_step(a, 1))
			check_addr(ps, c, a);
	}
	for (i = 0; i < ARRAY_SIZE(corners); i++) {
		assert_int_equal(inet_pton(AF_INET6, corners[i], a), 1);
		check_addr(ps, c, a);
	}
	for (i = 0; i < RANDOM_PROBES; i++) {
		addr_random(&seed, a, i % 2);
		check_addr(ps, c, a);
	}
}

/* Every check above, for @ps compiled on @iface (NULL: every interface). */
static void check_policy_set(const struct policy_set *ps, const char *iface, __u64 seed)
{
	struct prefixes *src = calloc(1, sizeof(*src)), *dst = calloc(1, sizeof(*dst));
	struct compiled c;

	assert_non_null(src);
	assert_non_null(dst);
	compile_good(ps, iface, &c);
	named_prefixes(ps, iface, 0, src);
	named_prefixes(ps, iface, 1, dst);
	check_keys("sluice_src", c.src, c.n_src);
	check_keys("sluice_dst", c.dst, c.n_dst);
	assert_int_equal(!!(c.gen_flags & SLUICE_GEN_F_SRC), src->n > 0);
	assert_int_equal(!!(c.gen_flags & SLUICE_GEN_F_DST), dst->n > 0);
	check_count("sluice_src", c.n_src, src, src->n > 0);
	check_count("sluice_dst", c.n_dst, dst, dst->n > 0);
	check_sets_distinct(ps, &c);
	check_all_addrs(ps, &c, src, seed);
	check_all_addrs(ps, &c, dst, seed);
	compiled__free(&c);
	free(src);
	free(dst);
}

/* ---- fixed/: by hand ------------------------------------------------------ */

struct fixed_case {
	const char *name;
	const char *iface; /* compile for this interface; NULL: all */
	const char *yaml;
};

#define POLICY(name, port, match)                                                                  \
	"  - name: " name "\n"                                                                     \
	"    match: { proto: udp, dst_port: " #port match " }\n"                                   \
	"    rate: 1/h\n"                                                                          \
	"    burst: 1\n"

/* clang-format off */
static const struct fixed_case fixed_cases[] = {
	{ "fixed/nothing named", NULL,
	  "policies:\n"
	  POLICY("p", 53, "") },
	{ "fixed/one src list", NULL,
	  "policies:\n"
	  POLICY("p", 53, ", src: [10.0.0.0/8, \"2001:db8::/32\"]") },
	{ "fixed/src less nested excepts", NULL,
	  "policies:\n"
	  POLICY("p", 53, ", src: [10.0.0.0/8, \"2001:db8::/32\", 10.1.0.0/16]"
			  ", src_except: [10.1.2.0/24, 10.2.3.4, \"2001:db8:1::/48\"]") },
	{ "fixed/except only", NULL,
	  "policies:\n"
	  POLICY("p", 53, ", src_except: [10.0.0.0/8, \"2001:db8::/32\"]") },
	{ "fixed/one list shared in any order", NULL,
	  "policies:\n"
	  POLICY("a", 53, ", src: [10.0.0.0/8, 192.0.2.0/24]")
	  POLICY("b", 54, ", src: [192.0.2.0/24, 10.0.0.0/8]")
	  POLICY("c", 55, ", src: [10.0.0.0/8]") },
	{ "fixed/same src, different except", NULL,
	  "policies:\n"
	  POLICY("a", 53, ", src: [10.0.0.0/8]")
	  POLICY("b", 54, ", src: [10.0.0.0/8], src_except: [10.1.0.0/16]")
	  POLICY("c", 55, ", src: [10.1.0.0/16]") },
	{ "fixed/allowlist over sets", NULL,
	  "allow: [10.1.0.0/16, 192.0.2.0/24, \"2001:db8:1::/48\", 10.1.2.129]\n"
	  "policies:\n"
	  POLICY("p", 53, ", src: [10.0.0.0/8, 10.1.2.0/24, 10.1.2.128/25]"
			  ", src_except: [10.1.2.0/24]")
	  POLICY("q", 54, ", src: [10.1.2.0/24, 10.1.2.128/25]") },
	{ "fixed/allowlist only", NULL,
	  "allow: [192.0.2.0/24, \"2001:db8::/32\", 198.51.100.7]\n"
	  "policies:\n"
	  POLICY("p", 53, "") },
	{ "fixed/dst lists", NULL,
	  "policies:\n"
	  POLICY("p", 53, ", dst: [198.51.100.7, 198.51.100.0/24, \"2001:db8:ffff::/64\"]")
	  POLICY("q", 54, ", dst: [0.0.0.0/0]")
	  POLICY("r", 55, ", dst: [\"::/0\"]") },
	{ "fixed/ipv6 only, and ipv4 only", NULL,
	  "policies:\n"
	  POLICY("v6", 53, ", src: \"::/0\", src_except: \"::ffff:0:0/96\"")
	  POLICY("v4", 54, ", src: 0.0.0.0/0") },
	{ "fixed/the root named", NULL,
	  "allow: [\"::/0\"]\n"
	  "policies:\n"
	  POLICY("p", 53, ", src: [\"::/0\"]") },
	{ "fixed/every list at once", NULL,
	  "allow: [203.0.113.0/24, \"2001:db8:a::/48\"]\n"
	  "policies:\n"
	  POLICY("p", 53, ", src: [10.0.0.0/8], src_except: [10.9.0.0/16], dst: [198.51.100.0/24]")
	  POLICY("q", 54, ", src: [\"2001:db8::/32\"], dst: [198.51.100.0/24]")
	  POLICY("r", 55, ", dst: [198.51.100.128/25, \"2001:db8:ffff::/48\"]") },
	{ "fixed/another interface's lists", "eth0",
	  "interfaces: [eth0, eth1]\n"
	  "policies:\n"
	  POLICY("here", 53, ", src: [10.0.0.0/8], iface: eth0")
	  POLICY("there", 54, ", src: [172.16.0.0/12], src_except: [172.16.1.0/24]"
			      ", dst: [198.51.100.7], iface: eth1") },
};
/* clang-format on */

static void test_fixed(void **state)
{
	const struct fixed_case *row = *state;
	struct policy_set *ps = parse_good(row->yaml);

	check_policy_set(ps, row->iface, RANDOM_SEED);
	policy_set__free(ps);
}

/* ---- random/: from a fixed seed ------------------------------------------ */

struct random_case {
	const char *name;
	__u64 seed;
};

/* Base addresses random prefixes are cut from, so that they nest and touch. */
static const char *const bases[2][BASES] = {
	{ "2001:db8:1234:5678:9abc:def0:1234:5678", "2001:db8:1234:ff00::1", "fd00::1:2" },
	{ "::ffff:10.1.2.3", "::ffff:10.1.200.7", "::ffff:192.0.2.77" },
};

static void prefix_cut(struct policy_prefix *p, const __u8 *addr, int bits)
{
	memset(p, 0, sizeof(*p));
	addr_mask(addr, bits, p->addr);
	p->bits = bits;
}

/* A random address of a family: a base, perhaps with a random tail. */
static void addr_near_base(__u64 *rng, int is_ipv4, __u8 *addr)
{
	int from, b;

	assert_int_equal(inet_pton(AF_INET6, bases[is_ipv4][rng_next(rng) % BASES], addr), 1);
	if (rng_next(rng) & 1) {
		from = is_ipv4 ? V4MAPPED_BITS + rng_next(rng) % (V4_BITS + 1)
			       : rng_next(rng) % (SLUICE_ADDR_BITS + 1);
		for (b = from; b < SLUICE_ADDR_BITS; b++)
			addr_set_bit(addr, b, rng_next(rng) & 1);
	}
}

/* A random prefix: an address near a base, cut at a random length of its family. */
static void prefix_random(__u64 *rng, struct policy_prefix *p)
{
	int is_ipv4 = rng_next(rng) & 1;
	__u8 addr[SLUICE_ADDR_LEN];

	addr_near_base(rng, is_ipv4, addr);
	if (is_ipv4)
		prefix_cut(p, addr, V4MAPPED_BITS + rng_next(rng) % (V4_BITS + 1));
	else
		prefix_cut(p, addr, rng_next(rng) % (SLUICE_ADDR_BITS + 1));
}

/*
 * A random prefix at least two bits longer than @outer and inside it, so
 * it covers at most a quarter of it; 0 when @outer is too long for one.
 */
static int prefix_inside(__u64 *rng, const struct policy_prefix *outer, struct policy_prefix *p)
{
	int is_ipv4 = outer->bits >= V4MAPPED_BITS && addr_is_v4mapped(outer->addr);
	__u8 addr[SLUICE_ADDR_LEN];
	int b;

	if (outer->bits + 2 > SLUICE_ADDR_BITS)
		return 0;
	addr_near_base(rng, is_ipv4 || (outer->bits == 0 && rng_next(rng) & 1), addr);
	for (b = 0; b < outer->bits; b++)
		addr_set_bit(addr, b, addr_bit(outer->addr, b));
	prefix_cut(p, addr, outer->bits + 2 + rng_next(rng) % (SLUICE_ADDR_BITS - outer->bits - 1));
	return 1;
}

/* As a policy file writes it; YAML wants an IPv6 prefix quoted. */
static void prefix_print(const struct policy_prefix *p, char *out, size_t len)
{
	char text[ADDR_TEXT_LEN];

	assert_int_equal(addr_text(text, sizeof(text), p->addr, p->bits), 0);
	snprintf(out, len, strchr(text, ':') ? "\"%s\"" : "%s", text);
}

/* Append ", @key: [...]" with @n distinct prefixes of @v; nothing when @n is 0. */
static size_t list_print(char *yaml, size_t at, const char *key, const struct policy_prefix *v,
			 size_t n)
{
	char text[INET6_ADDRSTRLEN + 8];
	size_t i;

	for (i = 0; i < n; i++) {
		prefix_print(&v[i], text, sizeof(text));
		at += snprintf(yaml + at, YAML_MAX - at, "%s%s", i ? ", " : key, text);
	}
	if (n)
		at += snprintf(yaml + at, YAML_MAX - at, "]");
	return at;
}

/* @n distinct random prefixes into @v; @outer: each inside one of those @n_outer. */
static size_t list_random(__u64 *rng, struct policy_prefix *v, size_t n,
			  const struct policy_prefix *outer, size_t n_outer)
{
	struct policy_prefix p;
	size_t got = 0, i, tries;

	for (tries = 0; got < n && tries < 4 * n; tries++) {
		if (outer && !prefix_inside(rng, &outer[rng_next(rng) % n_outer], &p))
			continue;
		if (!outer)
			prefix_random(rng, &p);
		for (i = 0; i < got && !same_prefix(&v[i], &p); i++)
			;
		if (i == got)
			v[got++] = p;
	}
	return got;
}

/*
 * A random valid policy file: policies on their own ports (no layers, no
 * "never decides"), each with random src, src_except (inside src, at most
 * a quarter of each src prefix, or anything but ::/0 when src is empty)
 * and dst lists; some lists repeat an earlier policy's; a random allowlist.
 */
static char *yaml_random(__u64 *rng)
{
	struct policy_prefix src[RANDOM_LIST_MAX], exc[RANDOM_LIST_MAX], dst[RANDOM_LIST_MAX];
	struct policy_prefix allow[RANDOM_ALLOW_MAX];
	size_t n_src = 0, n_exc = 0, n_dst = 0, n, at = 0, i;
	size_t n_policies = 1 + rng_next(rng) % RANDOM_POLICIES_MAX;
	char *yaml = calloc(YAML_MAX, 1);
	struct policy_prefix any = { .bits = 0 };

	assert_non_null(yaml);
	n = list_random(rng, allow, rng_next(rng) % (RANDOM_ALLOW_MAX + 1), NULL, 0);
	if (n)
		at = list_print(yaml, at, "allow: [", allow, n);
	at += snprintf(yaml + at, YAML_MAX - at, "%spolicies:\n", n ? "\n" : "");
	for (i = 0; i < n_policies; i++) {
		if (!i || rng_next(rng) % 4) { /* else: the previous policy's lists again */
			n_src = list_random(rng, src, rng_next(rng) % (RANDOM_LIST_MAX + 1), NULL,
					    0);
			n_exc = list_random(rng, exc, rng_next(rng) % RANDOM_LIST_MAX,
					    n_src ? src : &any, n_src ? n_src : 1);
			n_dst = list_random(rng, dst, rng_next(rng) % (RANDOM_LIST_MAX + 1), NULL,
					    0);
		}
		at += snprintf(yaml + at, YAML_MAX - at,
			       "  - name: p%zu\n    match: { proto: udp, dst_port: %zu", i,
			       BASE_PORT + i);
		at = list_print(yaml, at, ", src: [", src, n_src);
		at = list_print(yaml, at, ", src_except: [", exc, n_exc);
		at = list_print(yaml, at, ", dst: [", dst, n_dst);
		at += snprintf(yaml + at, YAML_MAX - at, " }\n    rate: 1/h\n    burst: 1\n");
	}
	assert_true(at < YAML_MAX);
	return yaml;
}

static void test_random(void **state)
{
	const struct random_case *row = *state;
	__u64 rng = row->seed;
	char *yaml = yaml_random(&rng);
	struct policy_set *ps = parse_good(yaml);

	check_policy_set(ps, NULL, rng);
	policy_set__free(ps);
	free(yaml);
}

static struct random_case random_cases[RANDOM_ROWS];
static char random_names[RANDOM_ROWS][TEST_NAME_LEN];

/* ---- limits --------------------------------------------------------------- */

/* @n policies, each with its own one-prefix src (@dst 0) or dst list. */
static char *yaml_lists(size_t n, int dst)
{
	char *yaml = calloc(YAML_MAX, 1);
	size_t at, i;

	assert_non_null(yaml);
	at = snprintf(yaml, YAML_MAX, "policies:\n");
	for (i = 0; i < n; i++)
		at += snprintf(yaml + at, YAML_MAX - at,
			       "  - { name: p%zu, match: { proto: udp, dst_port: %zu, %s: "
			       "10.0.%zu.0/24 }, "
			       "rate: 1/h, burst: 1 }\n",
			       i, BASE_PORT + i, dst ? "dst" : "src", i);
	assert_true(at < YAML_MAX);
	return yaml;
}

/* SLUICE_MAX_SETS distinct lists compile, each its own set, and check as above. */
static void test_max_sets(void **state)
{
	int dst;

	(void)state;
	for (dst = 0; dst <= 1; dst++) {
		char *yaml = yaml_lists(SLUICE_MAX_SETS, dst);
		struct policy_set *ps = parse_good(yaml);

		check_policy_set(ps, NULL, RANDOM_SEED);
		policy_set__free(ps);
		free(yaml);
	}
}

/* One more list than there are set bits: an error at the policy that needs it. */
static void test_too_many_sets(void **state)
{
	static const char *const want[] = {
		FILE_NAME ":66:5: policies: more than 64 distinct src prefix lists\n",
		FILE_NAME ":66:5: policies: more than 64 distinct dst prefix lists\n",
	};
	struct diag_list d = { .file = FILE_NAME };
	struct compiled c;
	char *printed;
	int dst;

	(void)state;
	for (dst = 0; dst <= 1; dst++) {
		char *yaml = yaml_lists(SLUICE_MAX_SETS + 1, dst);
		struct policy_set *ps = parse_good(yaml);

		assert_int_equal(compile_policies(ps, GEN, NULL, &c, &d), -EINVAL);
		printed = print_diags(&d);
		assert_string_equal(printed, want[dst]);
		free(printed);
		diag__free(&d);
		compiled__free(&c);
		policy_set__free(ps);
		free(yaml);
	}
}

int main(void)
{
	struct CMUnitTest tests[N_TESTS];
	char names[N_TESTS][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);
	__u64 seeds = RANDOM_SEED;
	size_t i;

	for (i = 0; i < RANDOM_ROWS; i++) {
		snprintf(random_names[i], sizeof(random_names[i]), "random/%zu", i);
		random_cases[i] = (struct random_case){ random_names[i], rng_next(&seeds) };
	}
	SUITE_ADD_ROWS(&s, test_fixed, fixed_cases);
	SUITE_ADD_ROWS(&s, test_random, random_cases);
	SUITE_ADD(&s, test_max_sets);
	SUITE_ADD(&s, test_too_many_sets);
	return _cmocka_run_group_tests("compile_addrs", tests, s.n, NULL, NULL);
}
