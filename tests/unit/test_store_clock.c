// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The store thread's waits do not depend on the wall clock (#12, item 9:
 * it waited on a CLOCK_REALTIME deadline, so a step of the wall clock
 * stalled syncs unnoticed). The link wraps clock_gettime
 * (UNIT_LDFLAGS_store_clock in the Makefile) so that, for the library,
 * CLOCK_REALTIME reads WALL_STEP_S ahead of the kernel's: a deadline taken
 * from it lies WALL_STEP_S in the future of the clock the kernel waits on,
 * as after the wall clock was stepped back while the thread waited.
 * Every other clock passes through.
 *
 * The store is an address nothing answers (connects fail at once), so
 * each full sync, one per SYNC_INTERVAL_NS, is a failed probe. The thread
 * must go on probing: N_PROBES of them within DEADLINE_NS. A wait on the
 * wall clock would stall after the first for WALL_STEP_S. This test waits
 * in real time (unlike the other unit tests, time cannot be a parameter of
 * a thread's timed wait); its deadline is 20 times what the probes need.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "base/clock.h"
#include "budget/store.h"

#define WALL_STEP_S	 3600 /* how far CLOCK_REALTIME reads ahead */
#define SYNC_INTERVAL_NS (100 * SLUICE_NSEC_PER_MSEC)
#define N_PROBES	 5
#define DEADLINE_NS	 (20 * N_PROBES * SYNC_INTERVAL_NS)
#define POLL_NS		 (10 * SLUICE_NSEC_PER_MSEC)
#define TIMEOUT_NS	 (50 * SLUICE_NSEC_PER_MSEC)
#define NOWHERE		 "unix:///nonexistent/sluice-test-redis.sock"

/* The names ld's --wrap gives; reserved, and only the linker's to choose. */
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
int __real_clock_gettime(clockid_t id, struct timespec *ts);
/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
int __wrap_clock_gettime(clockid_t id, struct timespec *ts);

/* NOLINTNEXTLINE(bugprone-reserved-identifier) */
int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
	int ret = __real_clock_gettime(id, ts);

	if (!ret && id == CLOCK_REALTIME)
		ts->tv_sec += WALL_STEP_S;
	return ret;
}

static void test_probes_through_a_wall_clock_step(void **state)
{
	struct store_config cfg = { .url = NOWHERE,
				    .timeout_ns = TIMEOUT_NS,
				    .interval_ns = SYNC_INTERVAL_NS };
	const struct timespec poll = { .tv_nsec = POLL_NS };
	struct store_report r;
	__u64 failed = 0, ok = 0, deadline = mono_ns() + DEADLINE_NS;
	struct store *s;

	(void)state;
	s = store__open(&cfg);
	assert_non_null(s);
	while (failed < N_PROBES && mono_ns() < deadline) {
		assert_int_equal(nanosleep(&poll, NULL), 0);
		store__collect(s, &r);
		failed += r.failed;
		ok += r.ok;
	}
	store__close(s);
	assert_int_equal(ok, 0);
	assert_in_range(failed, N_PROBES, UINT64_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probes_through_a_wall_clock_step),
	};

	return cmocka_run_group_tests_name("store_clock", tests, NULL, NULL);
}
