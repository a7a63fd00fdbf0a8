/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What a test step must move: the exact delta of every policy counter and
 * every total between two counter snapshots (harness_status), and the
 * agent's writes a step table relies on (a policy loaded or applied, a
 * heartbeat), each failing the test with its cause. Test-only: failures go
 * through cmocka's fail_msg(), so only cmocka tests link this.
 *
 * Not here: running packets and reading maps (harness.h), and each test's
 * own step table and run_steps(), whose fields differ.
 */
#ifndef SLUICE_TESTS_EXPECT_H
#define SLUICE_TESTS_EXPECT_H

#include <stddef.h>

#include "lib/harness.h"

/* One policy counter a step moves by one per packet. */
struct moved {
	const char *policy; /* NULL ends a list early */
	enum sluice_pstat what;
};

/* How far one policy's counters move in a step; a counter not set stays. */
struct moved_by {
	const char *policy; /* NULL ends a list early */
	__u64 pkts[SLUICE_PSTAT_MAX];
};

/* The policy @name in @st, or NULL when it is not active. */
const struct policy_status *expect_policy(const struct status *st, const char *name);

/*
 * From @before to @after, every counter of every active policy moved by
 * exactly the sum of its pkts[] over the entries of @moved (at most
 * @n_moved) that name the policy, 0 when none does, and each total j by
 * exactly @totals[j]. Fails the test, prefixed with @where, on any other
 * delta, on a listed policy that is not active in @after, and on a policy
 * active in @after but not in @before.
 */
void expect_counts(const struct status *before, const struct status *after,
		   const struct moved_by *moved, size_t n_moved,
		   const __u64 totals[SLUICE_TOTAL_MAX], const char *where);

/*
 * @n packets, each with XDP verdict @verdict (XDP_PASS or XDP_DROP) and
 * these counts: the total of the verdict (passed or dropped) and every
 * total whose bit is set in @totals (bits of enum sluice_total) moved by
 * @n, and every policy counter by @n times the entries of @moved (at most
 * @n_moved) that name it; everything else stays. Fails as expect_counts().
 */
void expect_deltas(const struct status *before, const struct status *after, __u64 n, int verdict,
		   unsigned int totals, const struct moved *moved, size_t n_moved,
		   const char *where);

/*
 * A cmocka setup's body: load @yaml into @h (a test file's own static
 * harness, HARNESS_MAX_KEYS keys) and make it *@state; -1 when it cannot.
 */
int expect_setup(void **state, struct harness *h, const char *yaml);

/* A cmocka teardown: close the harness expect_setup() made *@state. */
int expect_teardown(void **state);

/* harness_load() with HARNESS_MAX_KEYS keys; fails the test, naming @yaml. */
void expect_load(struct harness *h, const char *yaml);

/* harness_apply(); fails the test, naming @yaml. */
void expect_apply(struct harness *h, const char *yaml);

/*
 * Write the agent's heartbeat into sluice_ctl, as the agent does: beaten at
 * @beat_ns (monotonic), lost once @timeout_ns have passed since.
 */
void expect_heartbeat(struct harness *h, __u64 beat_ns, __u64 timeout_ns);

#endif /* SLUICE_TESTS_EXPECT_H */
