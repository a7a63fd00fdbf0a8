// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What an upgrade carries (#13, user/kernel/loader.c): two objects loaded
 * side by side stand for the old set and the new one. maps__copy() brings
 * a key at its limit and the counters over; maps__merge_state() brings
 * what the old program charged after the copy, and nothing for a policy
 * the new file no longer has. Rates are 1/h, so nothing refills.
 */
#include <linux/bpf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sluice/gcra.h"
#include "base/clock.h"
#include "lib/harness.h"

#define DNS_PORT 53
#define NTP_PORT 123
#define BURST	 5
#define SRC	 "192.0.2.1"
#define DST	 "198.51.100.53"

static const char file_both[] = "policies:\n"
				"  - name: limit\n"
				"    match: { proto: udp, dst_port: 53 }\n"
				"    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
				"    rate: 1/h\n"
				"    burst: 5\n"
				"  - name: other\n"
				"    match: { proto: udp, dst_port: 123 }\n"
				"    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
				"    rate: 1/h\n"
				"    burst: 5\n";

static const char file_limit_only[] = "policies:\n"
				      "  - name: limit\n"
				      "    match: { proto: udp, dst_port: 53 }\n"
				      "    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n"
				      "    rate: 1/h\n"
				      "    burst: 5\n";

/* How the new set takes what the old one charged after the copy. */
enum merge_how {
	NO_MERGE,
	MERGE_IDLE, /* overwriting in batches, as before the swap */
	MERGE_READ, /* reading each key first, as after it */
};

/*
 * One upgrade per row: the old object admits @before of SRC's packets, its
 * maps are copied into the new one, which then applies @file_new; the old
 * one admits @after more (and one packet of "other" from SRC), and the new
 * set merges @how. Then the new object must admit exactly @admits of BURST
 * packets from SRC.
 */
struct carry_case {
	const char *name;
	int before, after;
	enum merge_how how;
	const char *file_new;
	int admits;
};

static const struct carry_case cases[] = {
	{ "copied at its limit", BURST, 0, NO_MERGE, file_both, 0 },
	{ "copied half way", 2, 0, NO_MERGE, file_both, BURST - 2 },
	{ "charged after the copy, not merged", 2, BURST - 2, NO_MERGE, file_both, BURST - 2 },
	{ "charged after the copy, merged idle", 2, BURST - 2, MERGE_IDLE, file_both, 0 },
	{ "charged after the copy, merged reading", 2, BURST - 2, MERGE_READ, file_both, 0 },
	{ "merged into a file without 'other'", 2, BURST - 2, MERGE_IDLE, file_limit_only, 0 },
	{ "merged reading, without 'other'", 2, BURST - 2, MERGE_READ, file_limit_only, 0 },
};

static int send(struct harness *h, __u16 port)
{
	struct pkt p;

	harness_udp(&p, SRC, DST, port);
	return harness_run(h, &p);
}

static void spend(struct harness *h, int n, const char *row)
{
	int i;

	for (i = 0; i < n; i++)
		if (send(h, DNS_PORT) != XDP_PASS)
			fail_msg("%s: the old object dropped packet %d of %d", row, i, n);
}

static __u64 passed(struct harness *h)
{
	struct status st;
	__u64 n;

	harness_status(h, &st);
	n = harness_policy_pkts(&st, "limit", SLUICE_PSTAT_PASSED);
	status__free(&st);
	return n;
}

/* Keys of policy id @id tracked in @h's sluice_state. */
static __u64 keys_of(struct harness *h, __u32 id)
{
	struct key_counts *kc = test_calloc(1, sizeof(*kc));
	__u64 n;

	assert_non_null(kc);
	assert_int_equal(maps__count_keys(&h->att.maps, kc), 0);
	n = kc->per_id[id];
	test_free(kc);
	return n;
}

static void run_case(const struct carry_case *c)
{
	struct harness old_set, new_set;
	__u32 other_id;
	int i, admitted = 0, bad;

	assert_int_equal(harness_load(&old_set, file_both, HARNESS_MAX_KEYS), 0);
	assert_int_equal(harness_load(&new_set, file_both, HARNESS_MAX_KEYS), 0);
	other_id = harness_policy_id(&old_set, "other");
	spend(&old_set, c->before, c->name);
	assert_int_equal(maps__copy(&old_set.att.maps, &new_set.att.maps, &bad), 0);
	assert_int_equal(harness_apply(&new_set, c->file_new), 0);
	if (passed(&new_set) != (__u64)c->before)
		fail_msg("%s: the copy's counters say %llu passed, not %d", c->name,
			 (unsigned long long)passed(&new_set), c->before);
	spend(&old_set, c->after, c->name);
	assert_int_equal(send(&old_set, NTP_PORT), XDP_PASS);
	if (c->how != NO_MERGE)
		assert_int_equal(maps__merge_state(&old_set.att.maps, &new_set.att.maps,
						   sluice_gcra_ticks(mono_ns()),
						   c->how == MERGE_IDLE),
				 0);
	for (i = 0; i < BURST; i++)
		admitted += send(&new_set, DNS_PORT) == XDP_PASS;
	if (admitted != c->admits)
		fail_msg("%s: the new object admitted %d of %d, not %d", c->name, admitted, BURST,
			 c->admits);
	/* "other" was charged only after the copy: a merge brings its key only if it is active. */
	if (keys_of(&new_set, other_id) != (__u64)(c->how != NO_MERGE && c->file_new == file_both))
		fail_msg("%s: 'other' has %llu keys in the new set", c->name,
			 (unsigned long long)keys_of(&new_set, other_id));
	harness_close(&new_set);
	harness_close(&old_set);
}

static void test_carry(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_carry),
	};

	harness_require_root();
	return harness_cleanup(cmocka_run_group_tests_name("bpf_carry", tests, NULL, NULL));
}
