// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The kernel feature probes (user/kernel/probe.c) on the running kernel: every
 * kernel the matrix passes on (tests/kernel/matrix.sh) has every feature,
 * and without privilege the probes say they cannot tell rather than
 * "absent". The refusal's text is checked to the letter. A kernel that
 * lacks a feature is the matrix's bullseye row: `sluice run` there must
 * print the refusal for BPF_CMPXCHG.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/harness.h"
#include "kernel/probe.h"

#define NOBODY_UID  65534
#define REFUSAL_LEN 256
#define SHORT_LEN   16

/* "5.12" as 5 * 1000 + 12, to order rows. */
static int release_of(const char *since)
{
	int major, minor;

	assert_int_equal(sscanf(since, "%d.%d", &major, &minor), 2);
	return major * 1000 + minor;
}

/* Newest first: the first feature absent names the release to upgrade to. */
static void test_table(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < PROBE_MAX; i++) {
		assert_non_null(probe_features[i].name);
		assert_non_null(probe_features[i].probe);
		if (i)
			assert_true(release_of(probe_features[i - 1].since) >=
				    release_of(probe_features[i].since));
	}
}

/* Run before anything probes as root: the result is kept per process. */
static void test_unprivileged(void **state)
{
	const struct probe_feature *missing;
	pid_t pid = fork();
	int status;

	(void)state;
	assert_true(pid >= 0);
	if (!pid) {
		if (setuid(NOBODY_UID))
			_exit(2);
		_exit(probe_kernel(&missing) == -EPERM && !missing ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_running_kernel(void **state)
{
	const struct probe_feature *missing = probe_features;

	(void)state;
	assert_int_equal(probe_kernel(&missing), 0);
	assert_null(missing);
	assert_int_equal(probe_kernel(&missing), 0); /* kept */
}

static void test_refusal(void **state)
{
	char buf[REFUSAL_LEN], want[REFUSAL_LEN];
	struct utsname u;

	(void)state;
	assert_int_equal(uname(&u), 0);
	snprintf(want, sizeof(want),
		 "this kernel (%s) lacks 'BPF_CMPXCHG', which sluice needs (Linux 5.12+)",
		 u.release);
	assert_int_equal(probe_refusal(buf, sizeof(buf), &probe_features[PROBE_CMPXCHG]), 0);
	assert_string_equal(buf, want);
	assert_int_equal(probe_refusal(buf, SHORT_LEN, &probe_features[PROBE_CMPXCHG]),
			 -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_unprivileged),
		cmocka_unit_test(test_running_kernel),
		cmocka_unit_test(test_refusal),
	};

	harness_require_root();
	return cmocka_run_group_tests_name("bpf_probe", tests, NULL, NULL);
}
