/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of user/policy/units.c, where rates, durations and sizes are
 * both parsed and printed from one table of units. Every table row is one
 * named cmocka case:
 *
 *   rate/<name>      units_rate_text(): the exact text, and policy_parse_rate()
 *                    of that text gives the same rate back
 *   duration/<name>  units_duration_exact(): the exact text, and
 *                    units_scan_duration() of it gives the same nanoseconds
 *   readable/<name>  units_duration_text(): the exact text, to three digits
 *   si/<name>        units_si_exact() and units_si_approx(): the exact text
 *
 * Parsing errors, with their messages, are test_policy.c's rate/ and duration/.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy/units.h"
#include "rows.h"

#define SEC	    SLUICE_NSEC_PER_SEC
#define MIN	    SLUICE_NSEC_PER_MIN
#define HOUR	    SLUICE_NSEC_PER_HOUR
#define DAY	    SLUICE_NSEC_PER_DAY
#define PKTS	    SLUICE_COST_PKTS
#define BYTE	    SLUICE_COST_BYTES
#define U64_MAX_STR "18446744073709551615"

struct rate_row {
	const char *name;
	struct policy_rate rate;
	const char *want;
};

static const struct rate_row rate_rows[] = {
	{ "rate/packets_per_second", { 100, SEC, PKTS }, "100/s" },
	{ "rate/one_per_day", { 1, DAY, PKTS }, "1/day" },
	{ "rate/five_per_15min", { 5, 15 * MIN, PKTS }, "5/15min" },
	{ "rate/per_hour_not_60min", { 7, HOUR, PKTS }, "7/h" },
	{ "rate/90s_is_not_a_whole_minute", { 3, 90 * SEC, PKTS }, "3/90s" },
	{ "rate/48h_is_2day", { 1, 48 * HOUR, PKTS }, "1/2day" },
	{ "rate/bytes_kilo", { 64000, SEC, BYTE }, "64kB/s" },
	{ "rate/bytes_not_a_round_kilo", { 1500, SEC, BYTE }, "1500B/s" },
	{ "rate/bytes_giga", { 2000000000, MIN, BYTE }, "2GB/min" },
	{ "rate/bits_mega", { 10000000, 8 * SEC, BYTE }, "10Mbit/s" },
	{ "rate/bits_kilo_per_minute", { 2500, 8 * MIN, BYTE }, "2500bit/min" },
	{ "rate/bytes_per_hour_not_bits", { 1000000, HOUR, BYTE }, "1MB/h" },
	{ "rate/largest_count", { UINT64_MAX, SEC, PKTS }, U64_MAX_STR "/s" },
};

static void test_rate(void **state)
{
	const struct rate_row *t = *state;
	char buf[UNITS_TEXT_LEN], err[256];
	struct policy_rate back = { 0 };

	assert_string_equal(units_rate_text(buf, &t->rate), t->want);
	assert_int_equal(policy_parse_rate(buf, &back, err, sizeof(err)), 0);
	assert_int_equal(back.amount, t->rate.amount);
	assert_int_equal(back.period_ns, t->rate.period_ns);
	assert_int_equal(back.cost, t->rate.cost);
}

struct duration_row {
	const char *name;
	__u64 ns;
	const char *want;
};

static const struct duration_row duration_rows[] = {
	{ "duration/zero", 0, "0ns" },
	{ "duration/ms", 250 * SLUICE_NSEC_PER_MSEC, "250ms" },
	{ "duration/1500ms_not_seconds", 1500 * SLUICE_NSEC_PER_MSEC, "1500ms" },
	{ "duration/seconds", 5 * SEC, "5s" },
	{ "duration/90s", 90 * SEC, "90s" },
	{ "duration/minutes_as_min", 30 * MIN, "30min" },
	{ "duration/hours", 2 * HOUR, "2h" },
	{ "duration/a_day_in_hours", DAY, "24h" },
	{ "duration/sub_millisecond", 1500, "1500ns" },
};

static void test_duration(void **state)
{
	const struct duration_row *t = *state;
	char buf[UNITS_TEXT_LEN], err[256];
	__u64 back = UINT64_MAX;

	assert_string_equal(units_duration_exact(buf, t->ns), t->want);
	if (!t->ns || t->ns % SLUICE_NSEC_PER_MSEC)
		return; /* "0ns", "1500ns" are for messages; a file writes milliseconds at least */
	assert_int_equal(units_scan_duration(buf, &back, err, sizeof(err)), 0);
	assert_int_equal(back, t->ns);
}

struct readable_row {
	const char *name;
	double ns;
	const char *want;
};

static const struct readable_row readable_rows[] = {
	{ "readable/hour", (double)HOUR, "1h" },
	{ "readable/90s_stay_seconds", 90.0 * SEC, "90s" },
	{ "readable/2.5min", 150.0 * SEC, "2.5min" },
	{ "readable/1.43s", 1.43 * SEC, "1.43s" },
	{ "readable/800ms", 0.8 * SEC, "800ms" },
	{ "readable/4ms_tick", 4e6, "4ms" },
	{ "readable/us", 12500.0, "12.5µs" },
	{ "readable/ns", 3.0, "3ns" },
	{ "readable/one_day", (double)DAY, "1 day" },
	{ "readable/days", 3.0 * DAY, "3 days" },
};

static void test_readable(void **state)
{
	const struct readable_row *t = *state;
	char buf[UNITS_TEXT_LEN];

	assert_string_equal(units_duration_text(buf, t->ns), t->want);
}

struct si_row {
	const char *name;
	__u64 n;
	int approx;
	const char *unit;
	const char *want;
};

static const struct si_row si_rows[] = {
	{ "si/exact_kilo", 64000, 0, "B", "64kB" },
	{ "si/exact_not_round", 1514, 0, "B", "1514B" },
	{ "si/exact_mega_over_kilo", 3000000, 0, "B", "3MB" },
	{ "si/exact_zero", 0, 0, "B", "0B" },
	{ "si/approx_mega", 1250000, 1, "B/s", "1.25MB/s" },
	{ "si/approx_below_kilo", 999, 1, "B", "999B" },
	{ "si/approx_giga", 4000000000ULL, 1, "B/s", "4GB/s" },
};

static void test_si(void **state)
{
	const struct si_row *t = *state;
	char buf[UNITS_TEXT_LEN];

	if (t->approx)
		assert_string_equal(units_si_approx(buf, (double)t->n, t->unit), t->want);
	else
		assert_string_equal(units_si_exact(buf, t->n, t->unit), t->want);
}

int main(void)
{
	struct CMUnitTest tests[ARRAY_SIZE(rate_rows) + ARRAY_SIZE(duration_rows) +
				ARRAY_SIZE(readable_rows) + ARRAY_SIZE(si_rows)];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_rate, rate_rows);
	SUITE_ADD_ROWS(&s, test_duration, duration_rows);
	SUITE_ADD_ROWS(&s, test_readable, readable_rows);
	SUITE_ADD_ROWS(&s, test_si, si_rows);
	return _cmocka_run_group_tests("units", s.tests, s.n, NULL, NULL);
}
