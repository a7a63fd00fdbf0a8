// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * BPF_PROG_TEST_RUN on the real object: the ban list. Bans are written
 * through kernel/bans.c, the path `sluice ban` takes. Each row bans one
 * prefix, sends one packet, and asserts the exact verdict and the exact
 * deltas of the ban's own counter, the banned and allowed totals and the
 * policy's passes: a banned /32, /128 and prefixes are dropped before the
 * policy, an expired ban and a ban of a neighbour pass, an allowlisted
 * source passes despite a ban, and with the gate at 0 (no bans) neither
 * map is consulted at all. Single addresses go to the hash, prefixes to
 * the trie: the rows cover both.
 */
#include <linux/bpf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "base/addr.h"
#include "base/clock.h"
#include "kernel/bans.h"
#include "lib/harness.h"
#include "policy/policy.h"

#define DNS_PORT 53

/* A policy that passes every test packet, and an allowlisted /28 and /48. */
static const char yaml[] = "allow: [192.0.2.0/28, \"2001:db8:a::/48\"]\n"
			   "policies:\n"
			   "  - name: limit\n"
			   "    match: { proto: udp, dst_port: 53 }\n"
			   "    rate: 1/h\n"
			   "    burst: 1000\n";

enum expiry {
	EXP_NEVER = 0,
	EXP_LATER, /* in an hour */
	EXP_PAST,  /* a second ago: past the coarse clock's lag */
};

struct ban_case {
	const char *name;
	const char *ban; /* prefix banned */
	enum expiry expiry;
	int gate;	 /* sync the gate after the ban (0: leave it at 0) */
	const char *src; /* the packet's source */
	int verdict;
	__u64 ban_drops, banned, allowed, passed; /* deltas */
};

static const struct ban_case cases[] = {
	{ "ipv4 /32", "198.51.100.7", EXP_NEVER, 1, "198.51.100.7", XDP_DROP, 1, 1, 0, 0 },
	{ "ipv6 /128", "2001:db8:b::7", EXP_NEVER, 1, "2001:db8:b::7", XDP_DROP, 1, 1, 0, 0 },
	{ "ipv4 /24 prefix", "198.51.100.0/24", EXP_NEVER, 1, "198.51.100.99", XDP_DROP, 1, 1, 0,
	  0 },
	{ "ipv6 /48 prefix", "2001:db8:b::/48", EXP_NEVER, 1, "2001:db8:b:1::9", XDP_DROP, 1, 1, 0,
	  0 },
	{ "ipv4 neighbour", "198.51.100.7", EXP_NEVER, 1, "198.51.100.8", XDP_PASS, 0, 0, 0, 1 },
	{ "ipv6 outside", "2001:db8:b::/48", EXP_NEVER, 1, "2001:db8:c::1", XDP_PASS, 0, 0, 0, 1 },
	{ "expires later", "198.51.100.7", EXP_LATER, 1, "198.51.100.7", XDP_DROP, 1, 1, 0, 0 },
	{ "ipv4 expired", "198.51.100.7", EXP_PAST, 1, "198.51.100.7", XDP_PASS, 0, 0, 0, 1 },
	{ "ipv6 expired", "2001:db8:b::7", EXP_PAST, 1, "2001:db8:b::7", XDP_PASS, 0, 0, 0, 1 },
	{ "ipv4 allowlisted", "192.0.2.0/24", EXP_NEVER, 1, "192.0.2.1", XDP_PASS, 0, 0, 1, 0 },
	{ "ipv6 allowlisted", "2001:db8:a::/48", EXP_NEVER, 1, "2001:db8:a::1", XDP_PASS, 0, 0, 1,
	  0 },
	{ "gate 0: ipv4", "198.51.100.7", EXP_NEVER, 0, "198.51.100.7", XDP_PASS, 0, 0, 0, 1 },
	{ "gate 0: ipv6", "2001:db8:b::7", EXP_NEVER, 0, "2001:db8:b::7", XDP_PASS, 0, 0, 0, 1 },
};

static void ban_key(const char *text, struct sluice_addr_key *k)
{
	struct policy_prefix p;
	char err[DIAG_MSG_LEN];

	if (policy_parse_prefix(text, &p, err, sizeof(err)))
		fail_msg("'%s': %s", text, err);
	bans__key(k, p.addr, p.bits);
}

/* Remove every ban and set the gate to 0. */
static void clear_bans(const struct sluice_maps *m)
{
	struct ban_entry *e;
	size_t i, n;

	assert_int_equal(bans__read(m, &e, &n), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(bans__del(m, &e[i].key), 0);
	free(e);
	assert_int_equal(bans__sync_gate(m), 0);
}

static __u64 ban_drops(const struct sluice_maps *m, const struct sluice_addr_key *k)
{
	struct ban_entry *e;
	size_t i, n;
	__u64 drops = 0;

	assert_int_equal(bans__read(m, &e, &n), 0);
	for (i = 0; i < n; i++)
		if (!memcmp(&e[i].key, k, sizeof(*k)))
			drops = e[i].ban.drops_pkts;
	free(e);
	return drops;
}

struct counts {
	__u64 banned, allowed, passed;
};

static void snap(struct harness *h, struct counts *c)
{
	struct status st;

	harness_status(h, &st);
	c->banned = st.totals.c[SLUICE_TOTAL_BANNED].pkts;
	c->allowed = st.totals.c[SLUICE_TOTAL_ALLOWED].pkts;
	c->passed = harness_policy_pkts(&st, "limit", SLUICE_PSTAT_PASSED);
	status__free(&st);
}

static void run_case(struct harness *h, const struct ban_case *c)
{
	const struct sluice_maps *m = &h->att.maps;
	struct sluice_ban b = { .since_ns = mono_ns() };
	struct sluice_addr_key k;
	struct counts before, after;
	struct pkt p;
	int verdict;

	clear_bans(m);
	ban_key(c->ban, &k);
	if (c->expiry == EXP_LATER)
		b.expires_ns = b.since_ns + SLUICE_NSEC_PER_HOUR;
	else if (c->expiry == EXP_PAST)
		b.expires_ns = b.since_ns - SLUICE_NSEC_PER_SEC;
	assert_int_equal(bans__put(m, &k, &b), 0);
	if (c->gate)
		assert_int_equal(bans__sync_gate(m), 0);
	snap(h, &before);
	harness_udp(&p, c->src, strchr(c->src, ':') ? "2001:db8:ffff::53" : "203.0.113.53",
		    DNS_PORT);
	verdict = harness_run(h, &p);
	snap(h, &after);
	if (verdict != c->verdict)
		fail_msg("%s: verdict %d, expected %d", c->name, verdict, c->verdict);
	if (ban_drops(m, &k) != c->ban_drops || after.banned - before.banned != c->banned ||
	    after.allowed - before.allowed != c->allowed ||
	    after.passed - before.passed != c->passed)
		fail_msg("%s: ban drops %llu banned +%llu allowed +%llu passed +%llu, expected "
			 "%llu +%llu +%llu +%llu",
			 c->name, (unsigned long long)ban_drops(m, &k),
			 (unsigned long long)(after.banned - before.banned),
			 (unsigned long long)(after.allowed - before.allowed),
			 (unsigned long long)(after.passed - before.passed),
			 (unsigned long long)c->ban_drops, (unsigned long long)c->banned,
			 (unsigned long long)c->allowed, (unsigned long long)c->passed);
}

static void test_cases(void **state)
{
	struct harness h;
	size_t i;

	(void)state;
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&h, &cases[i]);
	harness_close(&h);
}

/* A re-ban keeps the entry's count; the gate counts entries; unban restores the path. */
static void test_reban_unban(void **state)
{
	struct sluice_ban b = { .since_ns = mono_ns() };
	struct sluice_addr_key k;
	struct harness h;
	struct pkt p;
	__u32 entries;

	(void)state;
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	ban_key("198.51.100.7", &k);
	assert_int_equal(bans__put(&h.att.maps, &k, &b), 0);
	assert_int_equal(bans__sync_gate(&h.att.maps), 0);
	harness_udp(&p, "198.51.100.7", "203.0.113.53", DNS_PORT);
	assert_int_equal(harness_run_repeat(&h, &p, 3), 0);
	snprintf(b.reason, sizeof(b.reason), "again");
	assert_int_equal(bans__put(&h.att.maps, &k, &b), 0);
	assert_int_equal(ban_drops(&h.att.maps, &k), 3);
	assert_int_equal(bans__read_gate(&h.att.maps, &entries), 0);
	assert_int_equal(entries, 1);
	assert_int_equal(bans__del(&h.att.maps, &k), 0);
	assert_int_equal(bans__del(&h.att.maps, &k), -ENOENT);
	assert_int_equal(bans__sync_gate(&h.att.maps), 0);
	assert_int_equal(bans__read_gate(&h.att.maps, &entries), 0);
	assert_int_equal(entries, 0);
	assert_int_equal(harness_run(&h, &p), XDP_PASS);
	harness_close(&h);
}

/* An expired ban of an address does not hide a live ban of its prefix. */
static void test_expired_host_live_prefix(void **state)
{
	struct sluice_ban b = { .since_ns = mono_ns() };
	struct sluice_addr_key host, net;
	struct harness h;
	struct pkt p;

	(void)state;
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	ban_key("2001:db8:b::7", &host);
	ban_key("2001:db8:b::/48", &net);
	assert_int_equal(bans__put(&h.att.maps, &net, &b), 0);
	b.expires_ns = b.since_ns - SLUICE_NSEC_PER_SEC;
	assert_int_equal(bans__put(&h.att.maps, &host, &b), 0);
	assert_int_equal(bans__sync_gate(&h.att.maps), 0);
	harness_udp(&p, "2001:db8:b::7", "2001:db8:ffff::53", DNS_PORT);
	assert_int_equal(harness_run(&h, &p), XDP_DROP);
	assert_int_equal(ban_drops(&h.att.maps, &net), 1);
	assert_int_equal(ban_drops(&h.att.maps, &host), 0);
	harness_close(&h);
}

/*
 * More prefixes than one lookup batch holds (BAN_BATCH, 4096, in
 * kernel/bans.c): the gate counts every one, key by key, and ends. Counted in the kernel's
 * batches with the hash's token instead, the count started over at each
 * batch and never ended; the alarm turns such a hang into a failure.
 */
#define MANY_PREFIXES	(4096 + 4)
#define MANY_PREFIXES_S 60 /* the count takes well under a second here, seconds under QEMU */

static void test_many_prefixes(void **state)
{
	struct sluice_ban b = { .since_ns = mono_ns() };
	struct sluice_addr_key k;
	struct ban_entry *e;
	char text[INET_ADDRSTRLEN + sizeof("/24")];
	struct harness h;
	__u32 i, entries;
	size_t n;

	(void)state;
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	for (i = 0; i < MANY_PREFIXES; i++) {
		snprintf(text, sizeof(text), "10.%u.%u.0/24", i / 256, i % 256);
		ban_key(text, &k);
		assert_int_equal(bans__put(&h.att.maps, &k, &b), 0);
	}
	alarm(MANY_PREFIXES_S);
	assert_int_equal(bans__sync_gate(&h.att.maps), 0);
	alarm(0);
	assert_int_equal(bans__read_gate(&h.att.maps, &entries), 0);
	assert_int_equal(entries, MANY_PREFIXES);
	assert_int_equal(bans__read(&h.att.maps, &e, &n), 0);
	assert_int_equal(n, MANY_PREFIXES);
	free(e);
	harness_close(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_reban_unban),
		cmocka_unit_test(test_expired_host_live_prefix),
		cmocka_unit_test(test_many_prefixes),
	};

	harness_require_root();
	return harness_cleanup(cmocka_run_group_tests_name("bpf_ban", tests, NULL, NULL));
}
