// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of user/base/log.c and diag__log(): the lines as they reach
 * stderr, captured in a temporary file. In order, as the agent goes:
 *
 *   test_plain          a command's message: "sluice: text"
 *   test_level          a line above the level is not written
 *   test_event_quoted   once logfmt: a message is event=message, msg= in
 *                       quotes, '"', '\' and newlines escaped, the trailing
 *                       newline dropped
 *   test_event_bare     a one-word message stays bare
 *   test_library        libbpf's: event=library lib=libbpf, one level lower
 *   test_diag           a rejected file: one warning per error, a file name
 *                       with a space quoted, an empty field as ""
 *   test_journal        stderr named by JOURNAL_STREAM: "<4>" first
 *
 * Each line is checked whole: "ts=" and the time's exact shape, then the
 * rest as a string.
 */
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/diag.h"
#include "base/log.h"
#include "capture.h"

#define TS_RE "^ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "

/* @line is "ts=<time> " then @rest, exactly. */
static void assert_event(const char *line, const char *rest)
{
	regex_t re;
	regmatch_t m;

	assert_int_equal(regcomp(&re, TS_RE, REG_EXTENDED), 0);
	if (regexec(&re, line, 1, &m, 0)) {
		regfree(&re);
		fail_msg("not an event line: '%s'", line);
	}
	regfree(&re);
	assert_string_equal(line + m.rm_eo, rest);
}

static void test_plain(void **state)
{
	(void)state;
	log_set_level(LOG_WARN);
	capture_begin();
	pr_warn("cannot open '%s': %s", "a b", "No such file or directory");
	assert_string_equal(capture_end(),
			    "sluice: cannot open 'a b': No such file or directory\n");
}

static void test_level(void **state)
{
	(void)state;
	capture_begin();
	pr_info("not at the default level");
	assert_string_equal(capture_end(), "");
}

static void test_event_quoted(void **state)
{
	(void)state;
	log_use_logfmt();
	assert_true(log_is_logfmt());
	capture_begin();
	pr_warn("the store of '%s' said \"%s\"\n", "C:\\x", "no\nway");
	assert_event(capture_end(), "level=warn event=message msg=\"the store of 'C:\\\\x' "
				    "said \\\"no\\nway\\\"\"\n");
}

static void test_event_bare(void **state)
{
	(void)state;
	capture_begin();
	pr_warn("stopping");
	assert_event(capture_end(), "level=warn event=message msg=stopping\n");
}

static int call_library(const char *lib, int is_warn, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = log_vlibrary(lib, is_warn, fmt, ap);
	va_end(ap);
	return n;
}

static void test_library(void **state)
{
	(void)state;
	capture_begin();
	call_library("libbpf", 1, "libbpf: map '%s': created\n", "sluice_keys");
	assert_string_equal(capture_end(), ""); /* a library's warning is our info */
	log_set_level(LOG_INFO);
	capture_begin();
	call_library("libbpf", 1, "libbpf: map '%s': created\n", "sluice_keys");
	assert_event(capture_end(), "level=info event=library lib=libbpf "
				    "msg=\"libbpf: map 'sluice_keys': created\"\n");
	log_set_level(LOG_WARN);
}

static void test_diag(void **state)
{
	struct diag_list d = { .file = "/etc/my policy.yaml" };
	char want[CAPTURE_LEN];
	const char *out, *nl;

	(void)state;
	assert_int_equal(diag__add(&d, (struct src_pos){ 3, 11 }, "policies[0].rate",
				   "'%s' is not a rate", "100/sek"),
			 0);
	assert_int_equal(diag__add(&d, (struct src_pos){ 0, 0 }, "", "file is empty"), 0);
	capture_begin();
	diag__log(&d, "reload_rejected");
	out = capture_end();
	diag__free(&d);
	nl = strchr(out, '\n');
	assert_non_null(nl);
	snprintf(want, sizeof(want), "%.*s", (int)(nl + 1 - out), out);
	assert_event(want, "level=warn event=reload_rejected file=\"/etc/my policy.yaml\" line=3 "
			   "col=11 field=policies[0].rate msg=\"'100/sek' is not a rate\"\n");
	assert_event(nl + 1, "level=warn event=reload_rejected file=\"/etc/my policy.yaml\" line=0 "
			     "col=0 field=\"\" msg=\"file is empty\"\n");
}

/* JOURNAL_STREAM naming the capture file: the journal's priority first. */
static void test_journal(void **state)
{
	char env[64];
	struct stat st;

	(void)state;
	capture_begin();
	assert_int_equal(fstat(STDERR_FILENO, &st), 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
	log_set_level(LOG_WARN);
	pr_warn("stopping");
	unsetenv("JOURNAL_STREAM");
	log_set_level(LOG_WARN);
	assert_int_equal(strncmp(capture_end(), "<4>", strlen("<4>")), 0);
	assert_event(captured + strlen("<4>"), "level=warn event=message msg=stopping\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),	     cmocka_unit_test(test_level),
		cmocka_unit_test(test_event_quoted), cmocka_unit_test(test_event_bare),
		cmocka_unit_test(test_library),	     cmocka_unit_test(test_diag),
		cmocka_unit_test(test_journal),
	};

	return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
