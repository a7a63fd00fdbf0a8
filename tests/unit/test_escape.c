// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Unit tests of user/base/escape.c: names as Prometheus label values, JSON
 * strings and logfmt values. Every row is two named cases, each checking
 * the three syntaxes:
 *
 *   test_escape: <row>  escape_prom(), escape_json(), escape_logfmt(): the
 *                       exact text
 *   test_room: <row>    a buffer one byte short fails with -ENOSPC and is
 *                       left empty; the exact size succeeds
 *
 * and the worst case in the room escape.h promises, and the printing forms.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "base/escape.h"
#include "rows.h"

struct escape_row {
	const char *name;
	const char *in;
	const char *prom;
	const char *json;
	const char *logfmt;
};

static const struct escape_row escape_rows[] = {
	{ "plain", "eth0", "eth0", "eth0", "eth0" },
	{ "empty", "", "", "", "\"\"" },
	{ "issue13_iface", "ec\"q\\1", "ec\\\"q\\\\1", "ec\\\"q\\\\1", "\"ec\\\"q\\\\1\"" },
	{ "newline", "a\nb", "a\\nb", "a\\nb", "\"a\\nb\"" },
	{ "tab_raw_in_prom", "a\tb", "a\tb", "a\\u0009b", "\"a\\u0009b\"" },
	{ "control_byte", "a\x01", "a\x01", "a\\u0001", "\"a\\u0001\"" },
	{ "del_is_not_control", "a\x7f", "a\x7f", "a\x7f", "a\x7f" },
	{ "space", "a b", "a b", "a b", "\"a b\"" },
	{ "equals", "k=v", "k=v", "k=v", "\"k=v\"" },
	{ "path", "/etc/sluice/policy.yaml", "/etc/sluice/policy.yaml", "/etc/sluice/policy.yaml",
	  "/etc/sluice/policy.yaml" },
	{ "diag_field", "policies[0].rate", "policies[0].rate", "policies[0].rate",
	  "policies[0].rate" },
	{ "utf8_kept", "caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x92\xa7",
	  "caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x92\xa7", "caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x92\xa7",
	  "caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x92\xa7" },
	{ "invalid_byte", "a\xff", "a\xef\xbf\xbd", "a\xef\xbf\xbd", "a\xef\xbf\xbd" },
	{ "invalid_byte_quoted", "a \xff", "a \xef\xbf\xbd", "a \xef\xbf\xbd",
	  "\"a \xef\xbf\xbd\"" },
	{ "truncated_sequence", "\xe2\x82", "\xef\xbf\xbd\xef\xbf\xbd", "\xef\xbf\xbd\xef\xbf\xbd",
	  "\xef\xbf\xbd\xef\xbf\xbd" },
	{ "overlong_slash", "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd", "\xef\xbf\xbd\xef\xbf\xbd",
	  "\xef\xbf\xbd\xef\xbf\xbd" },
	{ "surrogate", "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
	  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
	{ "above_u10ffff", "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
	  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
	  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
	{ "lead_before_ascii", "\xc3q", "\xef\xbf\xbdq", "\xef\xbf\xbdq", "\xef\xbf\xbdq" },
};

static void test_escape(void **state)
{
	const struct escape_row *t = *state;
	char buf[ESCAPE_LOGFMT_LEN(sizeof("ec\"q\\1-and-more-room"))];

	assert_int_equal(escape_prom(buf, sizeof(buf), t->in), 0);
	assert_string_equal(buf, t->prom);
	assert_int_equal(escape_json(buf, sizeof(buf), t->in), 0);
	assert_string_equal(buf, t->json);
	assert_int_equal(escape_logfmt(buf, sizeof(buf), t->in), 0);
	assert_string_equal(buf, t->logfmt);
}

/*
 * @escape into a buffer one byte short of @want's text: -ENOSPC, and the
 * buffer, first filled with non-NULs, left empty; then into one just long
 * enough: @want.
 */
static void check_room(int (*escape)(char *, size_t, const char *), const char *in,
		       const char *want)
{
	char buf[ESCAPE_LOGFMT_LEN(sizeof("ec\"q\\1-and-more-room"))];
	size_t len = strlen(want) + 1;

	memset(buf, 'x', sizeof(buf));
	assert_int_equal(escape(buf, len - 1, in), -ENOSPC);
	if (len > 1)
		assert_string_equal(buf, "");
	assert_int_equal(escape(buf, len, in), 0);
	assert_string_equal(buf, want);
}

static void test_room(void **state)
{
	const struct escape_row *t = *state;

	check_room(escape_prom, t->in, t->prom);
	check_room(escape_json, t->in, t->json);
	check_room(escape_logfmt, t->in, t->logfmt);
}

/* The worst case fits the room the header promises, in each syntax. */
static void test_worst_case(void **state)
{
	char in[16], prom[ESCAPE_PROM_LEN(sizeof(in))], json[ESCAPE_JSON_LEN(sizeof(in))],
		logfmt[ESCAPE_LOGFMT_LEN(sizeof(in))];

	(void)state;
	memset(in, '\xff', sizeof(in) - 1);
	in[sizeof(in) - 1] = '\0';
	assert_int_equal(escape_prom(prom, sizeof(prom), in), 0);
	assert_int_equal(strlen(prom), 3 * (sizeof(in) - 1));
	memset(in, '\x01', sizeof(in) - 1);
	assert_int_equal(escape_json(json, sizeof(json), in), 0);
	assert_int_equal(strlen(json), 6 * (sizeof(in) - 1));
	assert_int_equal(escape_logfmt(logfmt, sizeof(logfmt), in), 0);
	assert_int_equal(strlen(logfmt), 6 * (sizeof(in) - 1) + 2);
}

/* The printing forms: the escaped text, or "?" when the buffer was too small. */
static void test_text(void **state)
{
	char buf[sizeof("ec\\\"q\\\\1")];

	(void)state;
	assert_string_equal(escape_prom_text(buf, sizeof(buf), "ec\"q\\1"), "ec\\\"q\\\\1");
	assert_string_equal(escape_json_text(buf, sizeof(buf), "ec\"q\\1"), "ec\\\"q\\\\1");
	assert_string_equal(escape_prom_text(buf, sizeof(buf) - 1, "ec\"q\\1"), "?");
	assert_string_equal(escape_json_text(buf, sizeof(buf), "ec\"q\\1\x01"), "?");
	assert_string_equal(escape_logfmt_text(buf, sizeof(buf), "a b"), "\"a b\"");
	assert_string_equal(escape_logfmt_text(buf, sizeof(buf), "ec\"q\\1"), "?");
}

int main(void)
{
	struct CMUnitTest tests[2 * ARRAY_SIZE(escape_rows) + 2];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_escape, escape_rows);
	SUITE_ADD_ROWS(&s, test_room, escape_rows);
	SUITE_ADD(&s, test_worst_case);
	SUITE_ADD(&s, test_text);
	return _cmocka_run_group_tests("escape", s.tests, s.n, NULL, NULL);
}
