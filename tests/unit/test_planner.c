// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The lease planner (budget/planner.c) when memory runs out, without root:
 * a round whose scratch cannot be allocated fails with -ENOMEM, names the
 * cause, and leaves the planner's state as it was (#12, item 10: the old
 * round_free() walked r->n_add when only r->add had been allocated, and
 * dereferenced NULL). The link wraps calloc (UNIT_LDFLAGS_planner in the
 * Makefile), so each row can fail one chosen call. Rounds that reach the
 * kernel or the store are tested in tests/bpf/test_lease.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "budget/planner.h"
#include "rows.h"

#define TEST_FLEET  "test-fleet"
#define TEST_NODE   "test-node"
#define BEAT_TTL_US 1000000ULL
#define INTERVAL_NS 100000000ULL
#define TEST_N_POL  2
#define NO_FAILURE  0 /* calloc_fail_at: let every call succeed */
#define ERR_NOMEM   "lease sync: Cannot allocate memory"

/* The names ld's --wrap gives; reserved, and only the linker's to choose. */
void *__real_calloc(size_t n, size_t size); /* NOLINT(bugprone-reserved-identifier) */
void *__wrap_calloc(size_t n, size_t size); /* NOLINT(bugprone-reserved-identifier) */

/*
 * Which calloc() from now on fails (1 = the next); NO_FAILURE for none.
 * File-scope and mutable because the wrapper has no other way to be told:
 * test-only, and the tests run one at a time.
 */
static unsigned int calloc_fail_at;

void *__wrap_calloc(size_t n, size_t size) /* NOLINT(bugprone-reserved-identifier) */
{
	if (calloc_fail_at && !--calloc_fail_at) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

/* A round's scratch, allocated in this order at its start (round_att()). */
enum round_alloc {
	ROUND_ALLOC_ADD = 1, /* r.add: the hex members seen hot, by policy */
	ROUND_ALLOC_N_ADD,   /* r.n_add: how many, by policy */
};

struct nomem_row {
	const char *name;
	enum round_alloc fail; /* the call that fails */
	int full;	       /* a full sync, or an early top-up */
};

static const struct nomem_row nomem_rows[] = {
	{ "full sync, hot members list", ROUND_ALLOC_ADD, 1 },
	{ "full sync, hot member counts", ROUND_ALLOC_N_ADD, 1 },
	{ "early top-up, hot members list", ROUND_ALLOC_ADD, 0 },
	{ "early top-up, hot member counts", ROUND_ALLOC_N_ADD, 0 },
};

/*
 * One attachment with TEST_N_POL cluster policies. Its map fds are -1: a
 * round that got past its allocations would fail on them (-EBADF), not
 * with the -ENOMEM the rows expect.
 */
static struct lease_state *new_state(void)
{
	struct lease_plan *plan = calloc(1, sizeof(*plan));
	struct lease_state *ls;
	size_t i;

	assert_non_null(plan);
	plan->interval_ns = INTERVAL_NS;
	strcpy(plan->prefix, TEST_FLEET);
	plan->att = calloc(1, sizeof(*plan->att));
	assert_non_null(plan->att);
	plan->n_att = 1;
	plan->att->maps = (struct lease_maps){ .lease = -1, .spend = -1, .hot = -1 };
	plan->att->pol = calloc(TEST_N_POL, sizeof(*plan->att->pol));
	assert_non_null(plan->att->pol);
	plan->att->n_pol = TEST_N_POL;
	for (i = 0; i < TEST_N_POL; i++)
		plan->att->pol[i] = (struct lease_policy){ .id = (__u32)i + 1, .burst = 1 };
	ls = lease_state__new(plan);
	assert_non_null(ls);
	return ls;
}

static void test_round_nomem(void **state)
{
	const struct nomem_row *row = *state;
	struct lease_state *ls = new_state();
	struct lease_stats before, after;
	char err[256] = "unset";
	__u64 live = 1;
	int ret;

	lease_state__stats(ls, &before);
	calloc_fail_at = row->fail;
	ret = lease_round(ls, NULL, TEST_FLEET, TEST_NODE, BEAT_TTL_US, row->full, &live, err,
			  sizeof(err));
	calloc_fail_at = NO_FAILURE;
	assert_int_equal(ret, -ENOMEM);
	assert_string_equal(err, ERR_NOMEM);
	assert_int_equal(live, 0);
	lease_state__stats(ls, &after);
	assert_memory_equal(&before, &after, sizeof(before));
	lease_state__free(ls);
}

int main(void)
{
	struct CMUnitTest tests[ARRAY_SIZE(nomem_rows)];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_round_nomem, nomem_rows);
	return _cmocka_run_group_tests("planner", tests, s.n, NULL, NULL);
}
