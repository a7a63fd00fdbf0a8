/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of include/sluice/key.h: sluice_key_derive() masks an IPv4
 * source (stored IPv4-mapped, ::ffff:a.b.c.d, prefix4 = 96 + the IPv4
 * prefix) or an IPv6 source to the policy's prefix for its family, writes
 * every byte of the key and copies the policy id; a global policy (prefix
 * 0) gives the all-zero address. Policies are built by hand here; what
 * compile.c puts in them is tested in test_compile.c. Each table row is a
 * cmocka test of its own, named "<test>: <row>".
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "sluice/key.h"
#include "base/addr.h"
#include "rows.h"

#define POLICY_ID_LAST	(SLUICE_MAX_POLICIES - 1)
#define POLICY_ID_OTHER 7
#define KEY_POISON	0xa5 /* fills the key first, so an unwritten byte shows */

/* A 16-byte address, aligned for sluice_key_derive()'s 32-bit words. */
union addr {
	__u32 words[SLUICE_ADDR_WORDS];
	__u8 bytes[SLUICE_ADDR_LEN];
};

/* The global policy: prefix 0 for both families, one key for everyone. */
#define PREFIX_GLOBAL (-1)

struct derive_row {
	const char *name;
	const char *src; /* IPv4 dotted quad or IPv6 text */
	int is_ipv4;
	int prefix; /* of the family: 0..32 or 0..128; PREFIX_GLOBAL */
	__u32 policy_id;
	const char *want; /* expected key address, IPv6 text (IPv4 as ::ffff:a.b.c.d) */
};

static const struct derive_row derive_rows[] = {
	{ "IPv4 /32", "198.51.100.77", 1, 32, POLICY_ID_LAST, "::ffff:198.51.100.77" },
	{ "IPv4 /31", "198.51.100.77", 1, 31, POLICY_ID_OTHER, "::ffff:198.51.100.76" },
	{ "IPv4 /24", "198.51.100.77", 1, 24, POLICY_ID_OTHER, "::ffff:198.51.100.0" },
	{ "IPv4 /17", "198.51.255.77", 1, 17, POLICY_ID_OTHER, "::ffff:198.51.128.0" },
	{ "IPv4 /1, top bit set", "198.51.100.77", 1, 1, 0, "::ffff:128.0.0.0" },
	{ "IPv4 /1, top bit clear", "10.1.2.3", 1, 1, 0, "::ffff:0.0.0.0" },
	{ "IPv4 /0 keyed: the mapped prefix stays", "198.51.100.77", 1, 0, 0, "::ffff:0.0.0.0" },
	{ "IPv6 /128", "2001:db8:1234:5678:9abc:def0:1357:2469", 0, 128, POLICY_ID_LAST,
	  "2001:db8:1234:5678:9abc:def0:1357:2469" },
	{ "IPv6 /127", "2001:db8:1234:5678:9abc:def0:1357:2469", 0, 127, POLICY_ID_OTHER,
	  "2001:db8:1234:5678:9abc:def0:1357:2468" },
	{ "IPv6 /96", "2001:db8:1234:5678:9abc:def0:1357:2469", 0, 96, POLICY_ID_OTHER,
	  "2001:db8:1234:5678:9abc:def0::" },
	{ "IPv6 /64", "2001:db8:1234:5678:9abc:def0:1357:2469", 0, 64, POLICY_ID_OTHER,
	  "2001:db8:1234:5678::" },
	{ "IPv6 /48", "2001:db8:1234:5678:9abc:def0:1357:2469", 0, 48, POLICY_ID_OTHER,
	  "2001:db8:1234::" },
	{ "IPv6 /33", "2001:db8:ffff::1", 0, 33, POLICY_ID_OTHER, "2001:db8:8000::" },
	{ "IPv6 /1, top bit set", "ff02::1", 0, 1, 0, "8000::" },
	{ "IPv6 /1, top bit clear", "2001:db8::1", 0, 1, 0, "::" },
	{ "global policy, IPv4 source", "198.51.100.77", 1, PREFIX_GLOBAL, POLICY_ID_LAST, "::" },
	{ "global policy, IPv6 source", "2001:db8::1", 0, PREFIX_GLOBAL, POLICY_ID_LAST, "::" },
};

/* @text as a 16-byte address of the family @is_ipv4 says; IPv4 comes out IPv4-mapped. */
static void addr_of(union addr *a, const char *text, int is_ipv4)
{
	assert_int_equal(addr_parse(text, a->bytes), is_ipv4);
}

/*
 * A policy keyed by @prefix bits of @is_ipv4's family. The other family's
 * prefix is 0, so deriving from the wrong field would give a zero address.
 */
static void policy_build(struct sluice_policy *p, __u32 id, int prefix, int is_ipv4)
{
	memset(p, 0, sizeof(*p));
	p->id = id;
	if (prefix == PREFIX_GLOBAL)
		return;
	if (is_ipv4)
		p->prefix4 = SLUICE_V4MAPPED_BITS + prefix;
	else
		p->prefix6 = prefix;
}

static void key_derive_text(struct sluice_key *key, const struct sluice_policy *p, const char *src,
			    int is_ipv4)
{
	union addr a, before;

	addr_of(&a, src, is_ipv4);
	before = a;
	memset(key, KEY_POISON, sizeof(*key));
	sluice_key_derive(key, p, a.words, is_ipv4);
	assert_memory_equal(&a, &before, sizeof(a));
}

static void test_derive(void **state)
{
	const struct derive_row *row = *state;
	struct sluice_key key, want;
	struct sluice_policy p;
	union addr w;

	policy_build(&p, row->policy_id, row->prefix, row->is_ipv4);
	key_derive_text(&key, &p, row->src, row->is_ipv4);
	addr_of(&w, row->want, 0);
	memset(&want, 0, sizeof(want));
	want.policy_id = row->policy_id;
	memcpy(want.addr, w.bytes, sizeof(want.addr));
	assert_int_equal(key.policy_id, row->policy_id);
	assert_memory_equal(key.addr, want.addr, sizeof(key.addr));
	assert_memory_equal(&key, &want, sizeof(key)); /* no byte left unwritten */
}

struct pair_row {
	const char *name;
	const char *a, *b;
	int is_ipv4;
	int prefix;
	__u32 id_a, id_b;
	int is_equal;
};

static const struct pair_row pair_rows[] = {
	{ "IPv4 same /24", "198.51.100.1", "198.51.100.254", 1, 24, POLICY_ID_OTHER,
	  POLICY_ID_OTHER, 1 },
	{ "IPv4 different /24", "198.51.100.1", "198.51.101.1", 1, 24, POLICY_ID_OTHER,
	  POLICY_ID_OTHER, 0 },
	{ "IPv4 /24 neighbours across a byte", "198.51.99.255", "198.51.100.0", 1, 24,
	  POLICY_ID_OTHER, POLICY_ID_OTHER, 0 },
	{ "IPv4 same address, different policy", "198.51.100.1", "198.51.100.1", 1, 32,
	  POLICY_ID_OTHER, POLICY_ID_LAST, 0 },
	{ "IPv6 same /64", "2001:db8:0:1::1", "2001:db8:0:1:ffff:ffff:ffff:ffff", 0, 64,
	  POLICY_ID_OTHER, POLICY_ID_OTHER, 1 },
	{ "IPv6 different /64", "2001:db8:0:1::1", "2001:db8:0:2::1", 0, 64, POLICY_ID_OTHER,
	  POLICY_ID_OTHER, 0 },
	{ "IPv6 same /48", "2001:db8:1::1", "2001:db8:1:ffff::1", 0, 48, POLICY_ID_OTHER,
	  POLICY_ID_OTHER, 1 },
	{ "global policy, any two sources", "198.51.100.1", "203.0.113.9", 1, PREFIX_GLOBAL,
	  POLICY_ID_OTHER, POLICY_ID_OTHER, 1 },
};

static void test_pair(void **state)
{
	const struct pair_row *row = *state;
	struct sluice_policy pa, pb;
	struct sluice_key ka, kb;

	policy_build(&pa, row->id_a, row->prefix, row->is_ipv4);
	policy_build(&pb, row->id_b, row->prefix, row->is_ipv4);
	key_derive_text(&ka, &pa, row->a, row->is_ipv4);
	key_derive_text(&kb, &pb, row->b, row->is_ipv4);
	assert_int_equal(memcmp(&ka, &kb, sizeof(ka)) == 0, row->is_equal);
}

#define N_TESTS (ARRAY_SIZE(derive_rows) + ARRAY_SIZE(pair_rows))

int main(void)
{
	struct CMUnitTest tests[N_TESTS];
	char names[N_TESTS][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_derive, derive_rows);
	SUITE_ADD_ROWS(&s, test_pair, pair_rows);
	return _cmocka_run_group_tests("key", tests, s.n, NULL, NULL);
}
