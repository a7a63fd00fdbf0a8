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
 *
 * A ban's drop is cached per flow (bpf/ban.bpf.h): the cached drops count
 * in the banned total at once and in the ban's own count at the flow's
 * next look, an unban or a changed allowlist ends them at once, and the
 * ban's expiry ends them even when the cache's own time is longer. The
 * process stays on one CPU, whose cache every run meets.
 */
#define _GNU_SOURCE /* sched_setaffinity() */
#include <linux/bpf.h>
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <time.h>
#include <cmocka.h>
#include <bpf/bpf.h>

#include "base/addr.h"
#include "base/clock.h"
#include "kernel/bans.h"
#include "lib/harness.h"
#include "policy/policy.h"

#define DNS_PORT      53
#define CACHED_RUNS   5	   /* packets of a flow in one run: the first looks, the rest are cached */
#define EXPIRY_MS     3000 /* a ban's life in the expiry test: longer than a step under QEMU */
#define EXPIRY_LAG_MS 200  /* waited past the expiry: over the coarse clock's lag */
#define LONG_TTL_NS   (60 * SLUICE_NSEC_PER_SEC) /* the cache's own time, past the ban's */

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
	/* The first looked the ban up; the cache holds the other two. */
	assert_int_equal(ban_drops(&h.att.maps, &k), 1);
	snprintf(b.reason, sizeof(b.reason), "again");
	assert_int_equal(bans__put(&h.att.maps, &k, &b), 0);
	assert_int_equal(bans__sync_gate(&h.att.maps), 0);
	assert_int_equal(ban_drops(&h.att.maps, &k), 1);
	/* The new epoch sends the flow to the ban again, which takes what the cache held. */
	assert_int_equal(harness_run(&h, &p), XDP_DROP);
	assert_int_equal(ban_drops(&h.att.maps, &k), 4);
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
 * Load the policy file and ban @prefix with @b (its key into @k), the gate
 * synced; @p is a DNS packet from @src.
 */
static void load_banned(struct harness *h, const struct sluice_ban *b, const char *prefix,
			struct sluice_addr_key *k, const char *src, struct pkt *p)
{
	assert_int_equal(harness_load(h, yaml, HARNESS_MAX_KEYS), 0);
	ban_key(prefix, k);
	assert_int_equal(bans__put(&h->att.maps, k, b), 0);
	assert_int_equal(bans__sync_gate(&h->att.maps), 0);
	harness_udp(p, src, "203.0.113.53", DNS_PORT);
}

/*
 * N packets of a banned flow: N in the banned total at once, 1 in the ban's
 * count until a new epoch (an API rewrite's) makes the next look take the
 * other N − 1; an unban then passes the flow at once, its cache entry live.
 */
static void test_cached_counts_unban(void **state)
{
	struct sluice_ban b = { .since_ns = mono_ns() };
	struct counts before, after;
	struct sluice_addr_key k;
	struct harness h;
	struct pkt p;

	(void)state;
	load_banned(&h, &b, "198.51.100.0/24", &k, "198.51.100.9", &p);
	snap(&h, &before);
	assert_int_equal(harness_run_repeat(&h, &p, CACHED_RUNS), 0);
	snap(&h, &after);
	assert_int_equal(after.banned - before.banned, CACHED_RUNS);
	assert_int_equal(after.passed - before.passed, 0);
	assert_int_equal(ban_drops(&h.att.maps, &k), 1);
	assert_int_equal(bans__new_epoch(&h.att.maps), 0);
	assert_int_equal(harness_run(&h, &p), XDP_DROP);
	assert_int_equal(ban_drops(&h.att.maps, &k), CACHED_RUNS + 1);
	/* The run above cached the flow again: the unban must end that at once. */
	assert_int_equal(harness_run(&h, &p), XDP_DROP);
	assert_int_equal(bans__del(&h.att.maps, &k), 0);
	assert_int_equal(bans__sync_gate(&h.att.maps), 0);
	snap(&h, &before);
	assert_int_equal(harness_run(&h, &p), XDP_PASS);
	snap(&h, &after);
	assert_int_equal(after.banned - before.banned, 0);
	assert_int_equal(after.passed - before.passed, 1);
	harness_close(&h);
}

/* A cached ban's drop ends at the ban's expiry, though the cache's own time is a minute. */
static void test_cached_expiry(void **state)
{
	struct sluice_ban b = { 0 };
	struct sluice_addr_key k;
	struct harness h;
	struct pkt p;
	__u64 left_ns;

	(void)state;
	harness_set_deny_ttl(LONG_TTL_NS);
	assert_int_equal(harness_load(&h, yaml, HARNESS_MAX_KEYS), 0);
	harness_set_deny_ttl(0);
	b.since_ns = mono_ns(); /* after the load, which may take seconds */
	b.expires_ns = b.since_ns + EXPIRY_MS * SLUICE_NSEC_PER_MSEC;
	ban_key("198.51.100.7", &k);
	assert_int_equal(bans__put(&h.att.maps, &k, &b), 0);
	assert_int_equal(bans__sync_gate(&h.att.maps), 0);
	harness_udp(&p, "198.51.100.7", "203.0.113.53", DNS_PORT);
	assert_int_equal(harness_run(&h, &p), XDP_DROP);
	assert_int_equal(harness_run(&h, &p), XDP_DROP);
	if (mono_ns() >= b.expires_ns)
		fail_msg("the ban expired before its drops were cached: a step took over %d ms",
			 EXPIRY_MS);
	assert_int_equal(ban_drops(&h.att.maps, &k), 1); /* the second was the cache's */
	left_ns = b.expires_ns - mono_ns() + EXPIRY_LAG_MS * SLUICE_NSEC_PER_MSEC;
	nanosleep(&(struct timespec){ .tv_sec = left_ns / SLUICE_NSEC_PER_SEC,
				      .tv_nsec = left_ns % SLUICE_NSEC_PER_SEC },
		  NULL);
	assert_int_equal(harness_run(&h, &p), XDP_PASS);
	harness_close(&h);
}

/* A source allowlisted by a reload passes at once, its ban's drop cached before. */
static void test_cached_allowlist(void **state)
{
	static const char allowed[] = "allow: [198.51.100.0/24]\n"
				      "policies:\n"
				      "  - name: limit\n"
				      "    match: { proto: udp, dst_port: 53 }\n"
				      "    rate: 1/h\n"
				      "    burst: 1000\n";
	struct sluice_ban b = { .since_ns = mono_ns() };
	struct counts before, after;
	struct sluice_addr_key k;
	struct harness h;
	struct pkt p;

	(void)state;
	load_banned(&h, &b, "198.51.100.7", &k, "198.51.100.7", &p);
	assert_int_equal(harness_run_repeat(&h, &p, CACHED_RUNS), 0);
	assert_int_equal(ban_drops(&h.att.maps, &k), 1);
	assert_int_equal(harness_apply(&h, allowed), 0);
	snap(&h, &before);
	assert_int_equal(harness_run(&h, &p), XDP_PASS);
	snap(&h, &after);
	assert_int_equal(after.allowed - before.allowed, 1);
	assert_int_equal(after.banned - before.banned, 0);
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
		/* Straight into the trie: one call each, the count is what is tested. */
		assert_int_equal(
			bpf_map_update_elem(h.att.maps.fd[SLUICE_MAP_BAN], &k, &b, BPF_ANY), 0);
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
		cmocka_unit_test(test_cached_counts_unban),
		cmocka_unit_test(test_cached_expiry),
		cmocka_unit_test(test_cached_allowlist),
	};
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one)) /* each run meets the same CPU's cache */
		return perror("sched_setaffinity"), 1;
	harness_require_root();
	return harness_cleanup(cmocka_run_group_tests_name("bpf_ban", tests, NULL, NULL));
}
