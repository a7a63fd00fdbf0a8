// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The store-health machine driven by hand: errors, recovery after the
 * hold-down, flapping that never reaches the kernel, and each class's
 * policy modes over time, including the escalation to closed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/health.h"
#include "rows.h"

#define S(x)	  ((__u64)(x)*SLUICE_NSEC_PER_SEC)
#define MS(x)	  ((__u64)(x)*SLUICE_NSEC_PER_SEC / 1000)
#define HOLD_DOWN S(10)
#define T0	  S(1000)

/* One probe: at T0 + @at_ms, ok or not; what the state must be after it. */
struct step {
	__u64 at_ms;
	int ok;
	enum store_state want;
	int changed;
};

struct health_row {
	const char *name;
	const struct step *steps;
	size_t n;
};

static const struct step error_then_recover[] = {
	{ 0, 1, STORE_OK, 0 },	    { 100, 0, STORE_FAULT, 1 },	  { 200, 0, STORE_FAULT, 0 },
	{ 300, 1, STORE_FAULT, 0 }, { 10200, 1, STORE_FAULT, 0 }, /* 9.9 s of good probes */
	{ 10300, 1, STORE_OK, 1 },  { 10400, 1, STORE_OK, 0 },
};

/* Good and bad probes alternating for a minute: FAULT throughout, one transition. */
static struct step flapping[600];

static const struct step recover_then_fail_again[] = {
	{ 0, 0, STORE_FAULT, 1 },     { 5000, 1, STORE_FAULT, 0 },  { 14999, 1, STORE_FAULT, 0 },
	{ 15000, 1, STORE_OK, 1 },    { 15001, 0, STORE_FAULT, 1 }, { 20000, 1, STORE_FAULT, 0 },
	{ 29999, 1, STORE_FAULT, 0 }, { 30000, 1, STORE_OK, 1 },
};

static const struct health_row health_rows[] = {
	{ "error, then recovery after the hold-down", error_then_recover,
	  ARRAY_SIZE(error_then_recover) },
	{ "flapping store", flapping, ARRAY_SIZE(flapping) },
	{ "recovers, fails again, recovers", recover_then_fail_again,
	  ARRAY_SIZE(recover_then_fail_again) },
};

static void test_health(void **state)
{
	const struct health_row *row = *state;
	struct store_health h;
	size_t i;
	int changed;

	store_health__init(&h, HOLD_DOWN, T0);
	for (i = 0; i < row->n; i++) {
		changed = store_health__observe(&h, row->steps[i].ok, T0 + MS(row->steps[i].at_ms));
		if (h.state != row->steps[i].want || changed != row->steps[i].changed)
			fail_msg("%s: step %zu (t=%llu ms, ok=%d): state %d changed %d, expected "
				 "%d %d",
				 row->name, i, (unsigned long long)row->steps[i].at_ms,
				 row->steps[i].ok, h.state, changed, row->steps[i].want,
				 row->steps[i].changed);
	}
}

/* A policy's mode at a time into a fault that began at T0. */
struct mode_row {
	const char *name;
	enum sluice_fail on_store_error;
	__u64 closed_after_ns;
	__u64 at_ns; /* since the fault began */
	int want;
	__u64 want_since_ns; /* since T0 */
};

static const struct mode_row mode_rows[] = {
	{ "shedding default: degraded, never closed", SLUICE_FAIL_DEGRADED, 0, S(3600),
	  SLUICE_FAIL_DEGRADED, 0 },
	{ "abuse default: degraded before closed_after", SLUICE_FAIL_DEGRADED, S(30), S(30),
	  SLUICE_FAIL_DEGRADED, 0 },
	{ "abuse default: closed after closed_after", SLUICE_FAIL_DEGRADED, S(30), S(30) + 1,
	  SLUICE_FAIL_CLOSED, S(30) },
	{ "open stays open", SLUICE_FAIL_OPEN, S(30), S(3600), SLUICE_FAIL_OPEN, 0 },
	{ "closed at once", SLUICE_FAIL_CLOSED, 0, 0, SLUICE_FAIL_CLOSED, 0 },
};

static void test_mode(void **state)
{
	const struct mode_row *row = *state;
	struct policy p = { .on_store_error = row->on_store_error,
			    .closed_after_ns = row->closed_after_ns };
	struct store_health h;
	__u64 since;

	store_health__init(&h, HOLD_DOWN, T0);
	assert_int_equal(store_fail_mode(&p, &h, T0, &since), SLUICE_FAIL_NONE);
	store_health__observe(&h, 0, T0);
	assert_int_equal(store_fail_mode(&p, &h, T0 + row->at_ns, &since), row->want);
	assert_int_equal(since, T0 + row->want_since_ns);
}

#define N_TESTS (ARRAY_SIZE(health_rows) + ARRAY_SIZE(mode_rows))

int main(void)
{
	struct CMUnitTest tests[N_TESTS];
	char names[N_TESTS][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);
	size_t i;

	for (i = 0; i < ARRAY_SIZE(flapping); i++)
		flapping[i] = (struct step){ 100 * i, (int)(i % 2), STORE_FAULT, i == 0 };
	SUITE_ADD_ROWS(&s, test_health, health_rows);
	SUITE_ADD_ROWS(&s, test_mode, mode_rows);
	return _cmocka_run_group_tests("failover", tests, s.n, NULL, NULL);
}
