// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What a test step must move; see expect.h. Every check fails the test
 * through cmocka with the step's @where first, then what moved and what
 * was expected.
 */
#include <linux/bpf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "expect.h"
#include "kernel/maps.h"

#define EXPECT_MOVED_MAX 8 /* policy counters one expect_deltas() step lists */

const struct policy_status *expect_policy(const struct status *st, const char *name)
{
	size_t i;

	for (i = 0; i < st->n_policies; i++)
		if (!strcmp(st->policies[i].policy.name, name))
			return &st->policies[i];
	return NULL;
}

/* What counter @what of @policy must move by: the sum over the entries naming it. */
static __u64 want_pkts(const struct moved_by *moved, size_t n_moved, const char *policy, int what)
{
	__u64 n = 0;
	size_t i;

	for (i = 0; i < n_moved && moved[i].policy; i++)
		if (!strcmp(moved[i].policy, policy))
			n += moved[i].pkts[what];
	return n;
}

void expect_counts(const struct status *before, const struct status *after,
		   const struct moved_by *moved, size_t n_moved,
		   const __u64 totals[SLUICE_TOTAL_MAX], const char *where)
{
	const struct policy_status *b, *a;
	__u64 got, want;
	size_t i;
	int j;

	for (i = 0; i < n_moved && moved[i].policy; i++)
		if (!expect_policy(after, moved[i].policy))
			fail_msg("%s: no policy '%s' is active", where, moved[i].policy);
	for (i = 0; i < after->n_policies; i++) {
		a = &after->policies[i];
		b = expect_policy(before, a->policy.name);
		if (!b)
			fail_msg("%s: policy '%s' appeared", where, a->policy.name);
		for (j = 0; j < SLUICE_PSTAT_MAX; j++) {
			got = a->stats.c[j].pkts - b->stats.c[j].pkts;
			want = want_pkts(moved, n_moved, a->policy.name, j);
			if (got != want)
				fail_msg("%s: policy '%s' counter %d moved by %llu, expected %llu",
					 where, a->policy.name, j, (unsigned long long)got,
					 (unsigned long long)want);
		}
	}
	for (j = 0; j < SLUICE_TOTAL_MAX; j++) {
		got = after->totals.c[j].pkts - before->totals.c[j].pkts;
		if (got != totals[j])
			fail_msg("%s: total %d moved by %llu, expected %llu", where, j,
				 (unsigned long long)got, (unsigned long long)totals[j]);
	}
}

void expect_deltas(const struct status *before, const struct status *after, __u64 n, int verdict,
		   unsigned int totals, const struct moved *moved, size_t n_moved,
		   const char *where)
{
	struct moved_by by[EXPECT_MOVED_MAX];
	__u64 want[SLUICE_TOTAL_MAX];
	size_t i;
	int j;

	memset(by, 0, sizeof(by));
	for (i = 0; i < n_moved && moved[i].policy; i++) {
		if (i == EXPECT_MOVED_MAX)
			fail_msg("%s: more than %d policy counters listed", where,
				 EXPECT_MOVED_MAX);
		if ((unsigned int)moved[i].what >= SLUICE_PSTAT_MAX)
			fail_msg("%s: policy '%s' has no counter %d", where, moved[i].policy,
				 moved[i].what);
		by[i].policy = moved[i].policy;
		by[i].pkts[moved[i].what] = n;
	}
	for (j = 0; j < SLUICE_TOTAL_MAX; j++)
		want[j] = n * ((j == SLUICE_TOTAL_PASSED && verdict == XDP_PASS) ||
			       (j == SLUICE_TOTAL_DROPPED && verdict == XDP_DROP) ||
			       (totals >> j & 1));
	expect_counts(before, after, by, i, want, where);
}

int expect_setup(void **state, struct harness *h, const char *yaml)
{
	if (harness_load(h, yaml, HARNESS_MAX_KEYS))
		return -1;
	*state = h;
	return 0;
}

int expect_teardown(void **state)
{
	harness_close(*state);
	return 0;
}

void expect_load(struct harness *h, const char *yaml)
{
	if (harness_load(h, yaml, HARNESS_MAX_KEYS))
		fail_msg("cannot load policy:\n%s", yaml);
}

void expect_apply(struct harness *h, const char *yaml)
{
	if (harness_apply(h, yaml))
		fail_msg("cannot apply policy:\n%s", yaml);
}

void expect_heartbeat(struct harness *h, __u64 beat_ns, __u64 timeout_ns)
{
	struct sluice_ctl ctl;

	assert_int_equal(maps__read_ctl(&h->att.maps, &ctl), 0);
	ctl.heartbeat_ns = beat_ns;
	ctl.agent_timeout_ns = timeout_ns;
	assert_int_equal(maps__write_ctl(&h->att.maps, &ctl), 0);
}
