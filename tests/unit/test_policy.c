/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of the policy file parser (user/policy/, behind parse.h) and the diagnostics
 * it prints (user/base/diag.c). Every table row is one named cmocka case:
 *
 *   rate/<name>     policy_parse_rate(): the exact amount, period and cost,
 *                   or a substring of the error
 *   prefix/<name>   policy_parse_prefix(): the exact address and length, or
 *                   the exact error
 *   duration/<name> policy_parse_duration(): the exact nanoseconds, or the
 *                   exact error
 *   diag/<name>     diag__print() line shapes, cutting and sanitizing
 *   .../good/F.yaml every file in tests/fixtures/policy/good loads with no
 *                   diagnostic
 *   example/<name>  every field of the policies in good/example.yaml
 *   full/<name>     every field of the policies in good/full.yaml, which
 *                   uses every key of the file; test_full_top its top level;
 *                   test_unparsed_defaults what minimal.yaml leaves out
 *   local_burst/<name>  the default local_burst, exactly, up to 64-bit values
 *   agent/<name>    agent.heartbeat and agent.timeout: defaults and bounds
 *   semantic/<name> checks across fields and policies, on inline files
 *   .../bad/F.yaml  every file in tests/fixtures/policy/bad is rejected, and
 *                   what diag__print() writes equals bad/F.err byte for byte
 *   file/<name>     reading the file: missing, a directory, size limits
 *
 * Run from the repository root: fixture paths are relative to it, as they
 * appear in the .err files.
 */
#define _GNU_SOURCE /* asprintf */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/clock.h"
#include "policy_test.h"
#include "rows.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/policy.h"

#define FIXTURE_GOOD	"tests/fixtures/policy/good"
#define FIXTURE_BAD	"tests/fixtures/policy/bad"
#define FIXTURE_EXAMPLE FIXTURE_GOOD "/example.yaml"
#define FIXTURE_FULL	FIXTURE_GOOD "/full.yaml"
#define FIXTURE_MAX	256 /* fixture files one directory may hold */
#define PATH_LEN	512

#define BITS_PER_BYTE 8
#define U64_MAX_STR   "18446744073709551615"

/* ---- helpers -------------------------------------------------------------- */

/* The whole of a small text file, as a new string. */
static char *slurp(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *in = fopen(path, "r");
	FILE *out = open_memstream(&buf, &len);
	int ch;

	if (!in)
		fail_msg("cannot read '%s': %s", path, strerror(errno));
	assert_non_null(out);
	while ((ch = fgetc(in)) != EOF)
		assert_int_not_equal(fputc(ch, out), EOF);
	assert_int_equal(ferror(in), 0);
	assert_int_equal(fclose(in), 0);
	assert_int_equal(fclose(out), 0);
	return buf;
}

/* Load @path, which must succeed with no diagnostic. */
static struct policy_set *load_good(const char *path)
{
	struct diag_list d = { 0 };
	struct policy_set *ps = policy_set__load(path, &d);
	char *printed;

	if (!ps || d.n) {
		printed = print_diags(&d);
		fail_msg("'%s' should load, errno %d, diagnostics:\n%s", path, ps ? 0 : errno,
			 printed);
	}
	diag__free(&d);
	return ps;
}

/* Load @path, which must fail with EINVAL; returns what diag__print() writes. */
static char *load_bad(const char *path)
{
	struct diag_list d = { 0 };
	struct policy_set *ps = policy_set__load(path, &d);
	int err = errno;
	char *printed;

	if (ps) {
		policy_set__free(ps);
		fail_msg("'%s' should be rejected, but loaded", path);
	}
	assert_int_equal(err, EINVAL);
	assert_true(d.n > 0);
	assert_string_equal(d.file, path);
	printed = print_diags(&d);
	diag__free(&d);
	return printed;
}

/* ---- rate/: policy_parse_rate() ------------------------------------------ */

struct rate_case {
	const char *name;
	const char *in;
	__u64 amount;
	__u64 period_ns;
	enum sluice_cost cost;
	const char *err; /* NULL: must parse; else a substring of the message */
};

#define RATE_OK(n, s, a, p, c)                                                                     \
	{                                                                                          \
		.name = "rate/" n, .in = (s), .amount = (a), .period_ns = (p), .cost = (c)         \
	}
#define RATE_BAD(n, s, e)                                                                          \
	{                                                                                          \
		.name = "rate/" n, .in = (s), .err = (e)                                           \
	}
#define PKTS  SLUICE_COST_PKTS
#define BYTES SLUICE_COST_BYTES

static const struct rate_case rate_cases[] = {
	RATE_OK("pkts_per_s", "100/s", 100, SLUICE_NSEC_PER_SEC, PKTS),
	RATE_OK("pkts_per_15m", "5/15m", 5, 15 * SLUICE_NSEC_PER_MIN, PKTS),
	RATE_OK("pkts_per_h", "1000/h", 1000, SLUICE_NSEC_PER_HOUR, PKTS),
	RATE_OK("pkts_per_min", "10/min", 10, SLUICE_NSEC_PER_MIN, PKTS),
	RATE_OK("pkts_per_day", "3/day", 3, SLUICE_NSEC_PER_DAY, PKTS),
	RATE_OK("one_per_hour", "1/h", 1, SLUICE_NSEC_PER_HOUR, PKTS),
	RATE_OK("spelled_sec", "1/sec", 1, SLUICE_NSEC_PER_SEC, PKTS),
	RATE_OK("spelled_hour", "2/hour", 2, SLUICE_NSEC_PER_HOUR, PKTS),
	RATE_OK("spelled_d", "1/d", 1, SLUICE_NSEC_PER_DAY, PKTS),
	RATE_OK("count_30s", "1/30s", 1, 30 * SLUICE_NSEC_PER_SEC, PKTS),
	RATE_OK("count_2h", "7/2h", 7, 2 * SLUICE_NSEC_PER_HOUR, PKTS),
	RATE_OK("mbit_per_s", "10Mbit/s", 10000000, BITS_PER_BYTE *SLUICE_NSEC_PER_SEC, BYTES),
	RATE_OK("gbit_per_s", "1Gbit/s", 1000000000, BITS_PER_BYTE *SLUICE_NSEC_PER_SEC, BYTES),
	RATE_OK("kbit_per_min", "2500kbit/min", 2500000, BITS_PER_BYTE *SLUICE_NSEC_PER_MIN, BYTES),
	RATE_OK("bit_per_s", "1bit/s", 1, BITS_PER_BYTE *SLUICE_NSEC_PER_SEC, BYTES),
	RATE_OK("mb_per_s", "2MB/s", 2000000, SLUICE_NSEC_PER_SEC, BYTES),
	RATE_OK("kb_per_s", "64kB/s", 64000, SLUICE_NSEC_PER_SEC, BYTES),
	RATE_OK("b_per_s", "1500B/s", 1500, SLUICE_NSEC_PER_SEC, BYTES),
	RATE_OK("gb_per_min", "3GB/min", 3000000000ULL, SLUICE_NSEC_PER_MIN, BYTES),
	RATE_OK("largest_count", U64_MAX_STR "/s", UINT64_MAX, SLUICE_NSEC_PER_SEC, PKTS),
	RATE_OK("largest_kb", "18446744073709551kB/s", 18446744073709551000ULL, SLUICE_NSEC_PER_SEC,
		BYTES),
	RATE_OK("longest_pkt_period", "1/213503d", 1, 213503 * SLUICE_NSEC_PER_DAY, PKTS),
	RATE_OK("longest_bit_period", "1bit/26687d", 1, BITS_PER_BYTE * 26687 * SLUICE_NSEC_PER_DAY,
		BYTES),
	RATE_BAD("unknown_period", "100/sek",
		 "'100/sek' is not a rate: unknown unit 'sek' (expected s, min, h or day, "
		 "optionally with a count such as 15m)"),
	RATE_BAD("millis", "100/ms", "unknown unit 'ms'"),
	RATE_BAD("unknown_amount_unit", "100kpkt/s",
		 "unknown unit 'kpkt' (expected none for packets, or B, kB, MB, GB, bit, kbit, "
		 "Mbit or Gbit)"),
	RATE_BAD("lowercase_mbit", "10mbit/s", "unknown unit 'mbit'"),
	RATE_BAD("decimal", "2.5Mbit/s",
		 "decimals are not supported; use a smaller unit or a "
		 "longer period, such as 2500kbit/s instead of 2.5Mbit/s"),
	RATE_BAD("decimal_period", "1/1.5h", "decimals are not supported"),
	RATE_BAD("zero", "0/s", "'0/s' is not a rate: a rate of zero admits nothing"),
	RATE_BAD("zero_bits", "0Mbit/s", "a rate of zero admits nothing"),
	RATE_BAD("zero_period", "100/0m", "the period count is zero"),
	RATE_BAD("no_slash", "100", "no period (expected a rate such as 100/s"),
	RATE_BAD("empty", "", "no period (expected a rate such as 100/s"),
	RATE_BAD("no_count", "/s", "no count before the unit"),
	RATE_BAD("negative", "-5/s", "no count before the unit"),
	RATE_BAD("no_period_unit", "100/", "no unit after the '/'"),
	RATE_BAD("count_no_unit", "100/15", "no unit after the '/'"),
	RATE_BAD("two_slashes", "1/s/s", "unknown unit 's/s'"),
	RATE_BAD("space", "100 /s", "contains a space"),
	RATE_BAD("count_overflow", "18446744073709551616/s", "the count does not fit in 64 bits"),
	RATE_BAD("amount_overflow", "18446744073709552kB/s", "the amount does not fit in 64 bits"),
	RATE_BAD("gbit_overflow", "20000000000Gbit/s", "the amount does not fit in 64 bits"),
	RATE_BAD("pkt_period_overflow", "1/213504d", "the period does not fit in 64-bit"),
	RATE_BAD("bit_period_overflow", "1bit/26688d", "the period does not fit in 64-bit"),
	RATE_BAD("period_count_overflow", "1/" U64_MAX_STR "0s", "the period does not fit"),
};

static void test_rate(void **state)
{
	const struct rate_case *t = *state;
	struct policy_rate r = { 0 };
	char err[DIAG_MSG_LEN] = "";
	int ret = policy_parse_rate(t->in, &r, err, sizeof(err));

	if (t->err) {
		if (ret != -EINVAL || !strstr(err, t->err))
			fail_msg("'%s': returned %d with \"%s\"; want -EINVAL with \"%s\"", t->in,
				 ret, err, t->err);
		return;
	}
	if (ret)
		fail_msg("'%s': returned %d: %s", t->in, ret, err);
	assert_int_equal(r.amount, t->amount);
	assert_int_equal(r.period_ns, t->period_ns);
	assert_int_equal(r.cost, t->cost);
}

/* A short error buffer is cut and terminated, never overrun. */
static void test_rate_short_err_buffer(void **state)
{
	char err[8 + 1] = "xxxxxxxxx";
	struct policy_rate r;

	(void)state;
	err[sizeof(err) - 1] = '!';
	assert_int_equal(policy_parse_rate("1/sek", &r, err, sizeof(err) - 1), -EINVAL);
	assert_string_equal(err, "'1/sek'");
	assert_int_equal(err[sizeof(err) - 1], '!');
	assert_int_equal(policy_parse_rate("1/sek", &r, NULL, 0), -EINVAL);
}

/* ---- prefix/: policy_parse_prefix() --------------------------------------- */

struct prefix_case {
	const char *name;
	const char *in;
	const char *addr; /* NULL: must fail; else the IPv6 text of the address stored */
	int bits;
	const char *err; /* when addr is NULL: the exact message */
};

#define PREFIX_OK(n, s, a, b)                                                                      \
	{                                                                                          \
		.name = "prefix/" n, .in = (s), .addr = (a), .bits = (b)                           \
	}
#define PREFIX_BAD(n, s, e)                                                                        \
	{                                                                                          \
		.name = "prefix/" n, .in = (s), .err = (e)                                         \
	}
#define NOT_PREFIX(s) "'" s "' is not a prefix: "
#define V4_EXAMPLE    "(expected an address such as 192.0.2.1)"

static const struct prefix_case prefix_cases[] = {
	PREFIX_OK("ipv4_net", "10.0.0.0/8", "::ffff:10.0.0.0", 96 + 8),
	PREFIX_OK("ipv4_24", "192.0.2.0/24", "::ffff:192.0.2.0", 96 + 24),
	PREFIX_OK("ipv4_host", "192.0.2.1", "::ffff:192.0.2.1", 128),
	PREFIX_OK("ipv4_32", "192.0.2.1/32", "::ffff:192.0.2.1", 128),
	PREFIX_OK("ipv4_0", "0.0.0.0/0", "::ffff:0.0.0.0", 96),
	PREFIX_OK("ipv4_length_leading_zero", "10.0.0.0/08", "::ffff:10.0.0.0", 96 + 8),
	PREFIX_OK("ipv6_net", "2001:db8::/32", "2001:db8::", 32),
	PREFIX_OK("ipv6_host", "2001:db8::1", "2001:db8::1", 128),
	PREFIX_OK("ipv6_128", "2001:db8::1/128", "2001:db8::1", 128),
	PREFIX_OK("ipv6_0", "::/0", "::", 0),
	PREFIX_OK("ipv6_full_form", "2001:0db8:0000:0000:0000:0000:0000:0000/32", "2001:db8::", 32),
	PREFIX_OK("mapped_written_as_ipv6", "::ffff:10.0.0.0/104", "::ffff:10.0.0.0", 104),
	PREFIX_OK("mapped_space", "::ffff:0:0/96", "::ffff:0.0.0.0", 96),
	PREFIX_BAD("ipv4_host_bits", "10.1.2.3/8",
		   "'10.1.2.3/8' has host bits set (did you mean 10.0.0.0/8?)"),
	PREFIX_BAD("ipv4_host_bits_0", "10.0.0.0/0",
		   "'10.0.0.0/0' has host bits set (did you mean 0.0.0.0/0?)"),
	PREFIX_BAD("ipv6_host_bits", "2001:db8::1/32",
		   "'2001:db8::1/32' has host bits set (did you mean 2001:db8::/32?)"),
	PREFIX_BAD("ipv6_host_bits_127", "2001:db8::1/127",
		   "'2001:db8::1/127' has host bits set (did you mean 2001:db8::/127?)"),
	PREFIX_BAD("ipv4_33", "10.0.0.0/33",
		   NOT_PREFIX("10.0.0.0/33") "the length /33 is out "
					     "of range (expected 0 to 32 for IPv4)"),
	PREFIX_BAD("ipv6_129", "::/129",
		   NOT_PREFIX("::/129") "the length /129 is out of range "
					"(expected 0 to 128 for IPv6)"),
	PREFIX_BAD("length_overflow", "::/18446744073709551616",
		   NOT_PREFIX("::/18446744073709551616") "the length /18446744073709551616 is out "
							 "of range (expected 0 to 128 for IPv6)"),
	PREFIX_BAD("length_not_number", "10.0.0.0/x",
		   NOT_PREFIX("10.0.0.0/x") "the length 'x' is "
					    "not a number (expected 0 to 32)"),
	PREFIX_BAD("length_negative", "10.0.0.0/-8",
		   NOT_PREFIX("10.0.0.0/-8") "the length '-8' "
					     "is not a number (expected 0 to 32)"),
	PREFIX_BAD("two_slashes", "10.0.0.0/8/8",
		   NOT_PREFIX("10.0.0.0/8/8") "the length '8/8' "
					      "is not a number (expected 0 to 32)"),
	PREFIX_BAD("no_length", "10.0.0.0/",
		   NOT_PREFIX("10.0.0.0/") "no length after the '/' "
					   "(expected 0 to 32)"),
	PREFIX_BAD("no_address", "/8",
		   NOT_PREFIX("/8") "no address before the '/' (expected an "
				    "address such as 192.0.2.1 or a prefix such as 10.0.0.0/8 or "
				    "2001:db8::/32)"),
	PREFIX_BAD("empty", "",
		   NOT_PREFIX("") "it is empty (expected an address such as "
				  "192.0.2.1 or a prefix such as 10.0.0.0/8 or 2001:db8::/32)"),
	PREFIX_BAD("garbage", "example.com",
		   NOT_PREFIX("example.com") "it is not an IPv4 "
					     "address " V4_EXAMPLE),
	PREFIX_BAD("ipv4_octet_256", "10.0.0.256/8",
		   NOT_PREFIX("10.0.0.256/8") "'10.0.0.256' is "
					      "not an IPv4 address " V4_EXAMPLE),
	PREFIX_BAD("ipv4_three_octets", "10.0.0/24",
		   NOT_PREFIX("10.0.0/24") "'10.0.0' is not an "
					   "IPv4 address " V4_EXAMPLE),
	PREFIX_BAD("ipv4_octal", "010.0.0.1",
		   NOT_PREFIX("010.0.0.1") "it is not an IPv4 address " V4_EXAMPLE),
	PREFIX_BAD("ipv4_space", " 10.0.0.0/8",
		   NOT_PREFIX(" 10.0.0.0/8") "' 10.0.0.0' is not an "
					     "IPv4 address " V4_EXAMPLE),
	PREFIX_BAD("ipv6_garbage", "2001:db8::g/32",
		   NOT_PREFIX("2001:db8::g/32") "'2001:db8::g' "
						"is not an IPv6 address (expected an address such "
						"as 2001:db8::1)"),
	PREFIX_BAD("ipv6_two_gaps", "1::2::3",
		   NOT_PREFIX("1::2::3") "it is not an IPv6 address "
					 "(expected an address such as 2001:db8::1)"),
};

static void test_prefix(void **state)
{
	const struct prefix_case *t = *state;
	struct policy_prefix p = { .bits = 0 };
	__u8 want[SLUICE_ADDR_LEN];
	char err[DIAG_MSG_LEN] = "";
	int ret = policy_parse_prefix(t->in, &p, err, sizeof(err));

	if (!t->addr) {
		if (ret != -EINVAL || strcmp(err, t->err) != 0)
			fail_msg("'%s': returned %d with \"%s\"; want -EINVAL with \"%s\"", t->in,
				 ret, err, t->err);
		return;
	}
	if (ret)
		fail_msg("'%s': returned %d: %s", t->in, ret, err);
	assert_int_equal(inet_pton(AF_INET6, t->addr, want), 1);
	assert_memory_equal(p.addr, want, sizeof(want));
	assert_int_equal(p.bits, t->bits);
	assert_int_equal(p.pos.line, 0); /* only the file knows where a prefix was */
}

/* ---- duration/: policy_parse_duration() ----------------------------------- */

struct duration_case {
	const char *name;
	const char *in;
	__u64 ns;
	const char *err; /* NULL: must parse; else the exact message */
};

#define DURATION_OK(n, s, v)                                                                       \
	{                                                                                          \
		.name = "duration/" n, .in = (s), .ns = (v)                                        \
	}
#define DURATION_BAD(n, s, e)                                                                      \
	{                                                                                          \
		.name = "duration/" n, .in = (s), .err = (e)                                       \
	}
#define NOT_DURATION(s) "'" s "' is not a duration: "
#define DURATION_UNITS	"ms, s, m, min or h"

static const struct duration_case duration_cases[] = {
	DURATION_OK("ms", "250ms", 250 * SLUICE_NSEC_PER_MSEC),
	DURATION_OK("one_ms", "1ms", SLUICE_NSEC_PER_MSEC),
	DURATION_OK("s", "5s", 5 * SLUICE_NSEC_PER_SEC),
	DURATION_OK("m", "2m", 2 * SLUICE_NSEC_PER_MIN),
	DURATION_OK("min", "2min", 2 * SLUICE_NSEC_PER_MIN),
	DURATION_OK("h", "1h", SLUICE_NSEC_PER_HOUR),
	DURATION_OK("leading_zero", "010s", 10 * SLUICE_NSEC_PER_SEC),
	DURATION_OK("largest_ms", "18446744073709ms", 18446744073709ULL * SLUICE_NSEC_PER_MSEC),
	DURATION_OK("largest_h", "5124095h", 5124095 * SLUICE_NSEC_PER_HOUR),
	DURATION_BAD("zero", "0s",
		     NOT_DURATION("0s") "it is zero (expected a positive duration, "
					"such as 5s)"),
	DURATION_BAD("zero_ms", "0ms",
		     NOT_DURATION("0ms") "it is zero (expected a positive "
					 "duration, such as 5s)"),
	DURATION_BAD("decimal", "1.5s",
		     NOT_DURATION("1.5s") "decimals are not supported; use a "
					  "smaller unit, such as 1500ms instead of 1.5s"),
	DURATION_BAD("no_unit", "5",
		     NOT_DURATION("5") "no unit after the count (expected " DURATION_UNITS
				       ", such as 5s)"),
	DURATION_BAD("no_count", "s",
		     NOT_DURATION("s") "no count before the unit (expected a "
				       "positive integer and a unit, such as 250ms or 5s)"),
	DURATION_BAD("negative", "-5s",
		     NOT_DURATION("-5s") "no count before the unit (expected "
					 "a positive integer and a unit, such as 250ms or 5s)"),
	DURATION_BAD("empty", "",
		     NOT_DURATION("") "no count before the unit (expected a "
				      "positive integer and a unit, such as 250ms or 5s)"),
	DURATION_BAD("days", "1d",
		     NOT_DURATION("1d") "unknown unit 'd' (expected " DURATION_UNITS ")"),
	DURATION_BAD("sec", "5sec",
		     NOT_DURATION("5sec") "unknown unit 'sec' (expected " DURATION_UNITS ")"),
	DURATION_BAD("upper_case", "5S",
		     NOT_DURATION("5S") "unknown unit 'S' (expected " DURATION_UNITS ")"),
	DURATION_BAD("micro", "5us",
		     NOT_DURATION("5us") "unknown unit 'us' (expected " DURATION_UNITS ")"),
	DURATION_BAD("space", "5 s",
		     NOT_DURATION("5 s") "it contains a space (expected no "
					 "spaces, such as 5s)"),
	DURATION_BAD("count_overflow", "18446744073709551616s",
		     NOT_DURATION("18446744073709551616s") "the count does not fit in 64 bits"),
	DURATION_BAD("ns_overflow", "18446744073710ms",
		     NOT_DURATION("18446744073710ms") "it does "
						      "not fit in 64-bit nanoseconds"),
	DURATION_BAD("h_overflow", "5124096h",
		     NOT_DURATION("5124096h") "it does not fit in 64-bit "
					      "nanoseconds"),
};

static void test_duration(void **state)
{
	const struct duration_case *t = *state;
	char err[DIAG_MSG_LEN] = "";
	__u64 ns = 0;
	int ret = policy_parse_duration(t->in, &ns, err, sizeof(err));

	if (t->err) {
		if (ret != -EINVAL || strcmp(err, t->err) != 0)
			fail_msg("'%s': returned %d with \"%s\"; want -EINVAL with \"%s\"", t->in,
				 ret, err, t->err);
		assert_int_equal(ns, 0); /* untouched on failure */
		return;
	}
	if (ret)
		fail_msg("'%s': returned %d: %s", t->in, ret, err);
	assert_int_equal(ns, t->ns);
}

/* ---- diag/: the printed shape --------------------------------------------- */

struct diag_case {
	const char *name;
	const char *file; /* diag_list.file; NULL is allowed */
	struct src_pos pos;
	const char *field;
	const char *msg;
	const char *want;
};

static const struct diag_case diag_cases[] = {
	{ "diag/with_field",
	  "p.yaml",
	  { 3, 11 },
	  "policies[0].rate",
	  "'x' is not a rate",
	  "p.yaml:3:11: policies[0].rate: 'x' is not a rate\n" },
	{ "diag/no_field",
	  "p.yaml",
	  { 1, 1 },
	  "",
	  "unknown key 'x'",
	  "p.yaml:1:1: unknown key 'x'\n" },
	{ "diag/no_position",
	  "p.yaml",
	  { 0, 0 },
	  "ignored",
	  "empty policy file",
	  "p.yaml: empty policy file\n" },
	{ "diag/no_file", NULL, { 2, 5 }, "", "m", "<input>:2:5: m\n" },
	{ "diag/control_chars",
	  "p.yaml",
	  { 1, 2 },
	  "f\n",
	  "a\nb\tc\x7f",
	  "p.yaml:1:2: f?: a?b?c?\n" },
};

static void test_diag(void **state)
{
	const struct diag_case *t = *state;
	struct diag_list d = { .file = t->file };
	char *printed;

	assert_int_equal(diag__add(&d, t->pos, t->field, "%s", t->msg), 0);
	printed = print_diags(&d);
	assert_string_equal(printed, t->want);
	free(printed);
	diag__free(&d);
}

/* Over-long messages are cut with a visible mark; many entries grow the list. */
static void test_diag_cut_and_grow(void **state)
{
	struct diag_list d = { .file = "f" };
	char longmsg[2 * DIAG_MSG_LEN];
	size_t i, n = 3 * DIAG_MSG_LEN;

	(void)state;
	memset(longmsg, 'a', sizeof(longmsg) - 1);
	longmsg[sizeof(longmsg) - 1] = '\0';
	assert_int_equal(diag__add(&d, (struct src_pos){ 1, 1 }, "", "%s", longmsg), 0);
	assert_int_equal(strlen(d.v[0].msg), DIAG_MSG_LEN - 1);
	assert_string_equal(d.v[0].msg + DIAG_MSG_LEN - 4, "...");
	for (i = 1; i < n; i++) {
		struct src_pos pos = { (int)i + 1, 1 };

		assert_int_equal(diag__add(&d, pos, "", "m%zu", i), 0);
	}
	assert_int_equal(d.n, n);
	snprintf(longmsg, sizeof(longmsg), "m%zu", n - 1);
	assert_string_equal(d.v[n - 1].msg, longmsg);
	diag__free(&d);
	assert_null(d.v);
	assert_int_equal(d.n, 0);
	diag__free(NULL);
}

/* A quoted value: its printable prefix, at most DIAG_SHOW_MAX characters. */
static void test_diag_show(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "eth0", "'eth0'" },
		{ "", "''" },
		{ "0123456789abcdef0123456789abcdef", "'0123456789abcdef0123456789abcdef'" },
		{ "0123456789abcdef0123456789abcdefX", "'0123456789abcdef0123456789abcdef...'" },
		{ "root:$y$j9T$saltsaltsaltsaltsalt$hashhash:19000:0:99999:7:::",
		  "'root:$y$j9T$saltsaltsaltsaltsalt...'" },
		{ "red\x1b[2Jx", "'red...'" },
		{ "tab\there", "'tab...'" },
		{ "caf\xc3\xa9", "'caf...'" },
		{ "\x7f", "'...'" },
	};
	char got[DIAG_MSG_LEN];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		snprintf(got, sizeof(got), "'%.*s%s'", DIAG_SHOW(cases[i].in));
		assert_string_equal(got, cases[i].out);
	}
	/* The first 3 bytes of "abcdef", and of "ab\ncd": cut at the length or the byte. */
	assert_int_equal(diag_show_len("abcdef", 3), 3);
	assert_string_equal(diag_show_cut("abcdef", 3), "");
	assert_int_equal(diag_show_len("ab\ncd", 3), 2);
	assert_string_equal(diag_show_cut("ab\ncd", 3), "...");
}

/* ---- helpers: comparing parsed policies ---------------------------------- */

#define WANT_MAX 4 /* entries of one list in full.yaml */

struct want_prefix {
	const char *addr; /* IPv6 text; IPv4 as ::ffff:a.b.c.d */
	int bits;	  /* in the mapped space */
	struct src_pos pos;
};

struct want_list {
	size_t n;
	struct want_prefix v[WANT_MAX];
};

static void assert_pos(struct src_pos got, struct src_pos want)
{
	assert_int_equal(got.line, want.line);
	assert_int_equal(got.col, want.col);
}

static void assert_prefixes(const struct policy_prefix_list *got, const struct want_list *want)
{
	__u8 addr[SLUICE_ADDR_LEN];
	size_t i;

	assert_int_equal(got->n, want->n);
	if (!want->n)
		assert_null(got->v);
	for (i = 0; i < want->n; i++) {
		assert_int_equal(inet_pton(AF_INET6, want->v[i].addr, addr), 1);
		assert_memory_equal(got->v[i].addr, addr, sizeof(addr));
		assert_int_equal(got->v[i].bits, want->v[i].bits);
		assert_pos(got->v[i].pos, want->v[i].pos);
	}
}

static void assert_rate(const struct policy_rate *got, const struct policy_rate *want)
{
	assert_int_equal(got->amount, want->amount);
	assert_int_equal(got->period_ns, want->period_ns);
	assert_int_equal(got->cost, want->cost);
}

/* The fields policy.h added for fail modes and local limits. */
static void assert_fail_fields(const struct policy *p, const struct policy *w)
{
	assert_int_equal(p->mode, w->mode);
	assert_int_equal(p->class, w->class);
	assert_int_equal(p->on_agent_loss, w->on_agent_loss);
	assert_int_equal(p->on_store_error, w->on_store_error);
	assert_int_equal(p->closed_after_ns, w->closed_after_ns);
	assert_int_equal(p->has_local_limit, w->has_local_limit);
	assert_rate(&p->local_rate, &w->local_rate);
	assert_int_equal(p->local_burst, w->local_burst);
}

static void assert_policy(const struct policy *p, const struct policy *w)
{
	assert_string_equal(p->name, w->name);
	assert_int_equal(p->match.proto, w->match.proto);
	assert_int_equal(p->match.has_port, w->match.has_port);
	assert_int_equal(p->match.port_lo, w->match.port_lo);
	assert_int_equal(p->match.port_hi, w->match.port_hi);
	assert_int_equal(p->match.tcp_syn, w->match.tcp_syn);
	assert_int_equal(p->keyed, w->keyed);
	assert_int_equal(p->ipv4_prefix, w->ipv4_prefix);
	assert_int_equal(p->ipv6_prefix, w->ipv6_prefix);
	assert_rate(&p->rate, &w->rate);
	assert_int_equal(p->burst, w->burst);
	assert_fail_fields(p, w);
	assert_pos(p->pos, w->pos);
	assert_pos(p->rate_pos, w->rate_pos);
	assert_pos(p->burst_pos, w->burst_pos);
}

/* ---- example/: what good/example.yaml parses into ----------------------- */

struct example_case {
	const char *name;
	size_t index;
	struct policy want; /* every scalar field is compared */
};

/* What a shedding policy that says nothing about failure gets. */
#define SHEDDING_DEFAULTS                                                                          \
	.mode = SLUICE_MODE_ENFORCE, .class = SLUICE_CLASS_SHEDDING,                               \
	.on_agent_loss = SLUICE_FAIL_DEGRADED, .on_store_error = SLUICE_FAIL_DEGRADED,             \
	.closed_after_ns = 0, .has_local_limit = 0

static const struct example_case example_cases[] = {
	{ "example/dns-per-source",
	  0,
	  { .name = "dns-per-source",
	    .match = { .proto = IPPROTO_UDP, .has_port = 1, .port_lo = 53, .port_hi = 53 },
	    .keyed = 1,
	    .ipv4_prefix = 32,
	    .ipv6_prefix = 64,
	    .rate = { 100, SLUICE_NSEC_PER_SEC, SLUICE_COST_PKTS },
	    .burst = 200,
	    SHEDDING_DEFAULTS,
	    .pos = { 4, 5 },
	    .rate_pos = { 7, 11 },
	    .burst_pos = { 8, 12 } } },
	{ "example/ssh-syn",
	  1,
	  { .name = "ssh-syn",
	    .match = { .proto = IPPROTO_TCP,
		       .has_port = 1,
		       .port_lo = 22,
		       .port_hi = 22,
		       .tcp_syn = 1 },
	    .keyed = 1,
	    .ipv4_prefix = 24,
	    .ipv6_prefix = 48,
	    .rate = { 10, SLUICE_NSEC_PER_MIN, SLUICE_COST_PKTS },
	    .burst = 5,
	    SHEDDING_DEFAULTS,
	    .pos = { 9, 5 },
	    .rate_pos = { 12, 11 },
	    .burst_pos = { 13, 12 } } },
	{ "example/global-icmp",
	  2,
	  { .name = "global-icmp",
	    .match = { .proto = IPPROTO_ICMP },
	    .rate = { 1000, SLUICE_NSEC_PER_SEC, SLUICE_COST_PKTS },
	    .burst = 100,
	    SHEDDING_DEFAULTS,
	    .pos = { 14, 5 },
	    .rate_pos = { 16, 11 },
	    .burst_pos = { 17, 12 } } },
};

static void test_example(void **state)
{
	const struct example_case *t = *state;
	struct policy_set *ps = load_good(FIXTURE_EXAMPLE);
	const struct policy *p;

	assert_int_equal(ps->n_policies, ARRAY_SIZE(example_cases));
	assert_int_equal(ps->n_ifaces, 1);
	assert_string_equal(ps->ifaces[0], "eth0");
	/* No allow and no agent: nothing allowed, the default clock. */
	assert_int_equal(ps->allow.n, 0);
	assert_null(ps->allow.v);
	assert_int_equal(ps->heartbeat_ns, POLICY_HEARTBEAT_NS_DEFAULT);
	assert_int_equal(ps->agent_timeout_ns, POLICY_AGENT_TIMEOUT_NS_DEFAULT);
	p = &ps->policies[t->index];
	assert_policy(p, &t->want);
	assert_int_equal(p->match.src.n + p->match.src_except.n + p->match.dst.n, 0);
	assert_int_equal(p->match.n_ifaces, 0);
	policy_set__free(ps);
}

/* Bursts with units become the rate's cost units: bytes. */
static void test_byte_bursts(void **state)
{
	static const __u64 want_bytes[] = { 125000, 64000, 1500, 9000 };
	struct policy_set *ps = load_good(FIXTURE_GOOD "/byte-rates.yaml");
	size_t i;

	(void)state;
	assert_int_equal(ps->n_policies, ARRAY_SIZE(want_bytes));
	for (i = 0; i < ARRAY_SIZE(want_bytes); i++) {
		assert_int_equal(ps->policies[i].rate.cost, SLUICE_COST_BYTES);
		assert_int_equal(ps->policies[i].burst, want_bytes[i]);
	}
	assert_int_equal(ps->policies[0].match.port_lo, 1024);
	assert_int_equal(ps->policies[0].match.port_hi, 65535);
	assert_int_equal(ps->policies[1].match.proto, POLICY_PROTO_ANY);
	assert_int_equal(ps->policies[1].keyed, 0);
	assert_int_equal(ps->n_ifaces, 3);
	assert_string_equal(ps->ifaces[2], "veth-a_1");
	policy_set__free(ps);
}

/* ---- full/: what good/full.yaml parses into, every field ------------------ */

struct full_case {
	const char *name;
	size_t index;
	struct policy want; /* every scalar field is compared; lists come next */
	struct want_list src, src_except, dst;
	size_t n_ifaces;
	const char *ifaces[WANT_MAX];
};

#define RATE(a, p, c)                                                                              \
	{                                                                                          \
		.amount = (a), .period_ns = (p), .cost = (c)                                       \
	}
#define ABUSE_CLOSED_AFTER_NS                                                                      \
	(30 * SLUICE_NSEC_PER_SEC) /* POLICY_CLOSED_AFTER_NS_ABUSE, spelled out */

static const struct full_case full_cases[] = {
	{ .name = "full/dns-abuse",
	  .index = 0,
	  .want = { .name = "dns-abuse",
		    .match = { .proto = IPPROTO_UDP, .has_port = 1, .port_lo = 53, .port_hi = 53 },
		    .keyed = 1,
		    .ipv4_prefix = 32,
		    .ipv6_prefix = 64,
		    .rate = RATE(100, SLUICE_NSEC_PER_SEC, PKTS),
		    .burst = 200,
		    .mode = SLUICE_MODE_SHADOW,
		    .class = SLUICE_CLASS_ABUSE,
		    .on_agent_loss = SLUICE_FAIL_CLOSED,
		    .on_store_error = SLUICE_FAIL_DEGRADED,
		    .closed_after_ns = 2 * SLUICE_NSEC_PER_MIN,
		    .has_local_limit = 1,
		    .local_rate = RATE(30, SLUICE_NSEC_PER_SEC, PKTS),
		    .local_burst = 50,
		    .pos = { 7, 5 },
		    .rate_pos = { 16, 11 },
		    .burst_pos = { 17, 12 } },
	  .src = { 2,
		   { { "::ffff:10.0.0.0", 104, { 11, 13 } }, { "2001:db8::", 32, { 11, 25 } } } },
	  .src_except = { 2,
			  { { "::ffff:10.1.0.0", 112, { 12, 20 } },
			    { "::ffff:10.2.3.4", 128, { 12, 33 } } } },
	  .dst = { 1, { { "::ffff:203.0.113.53", 128, { 13, 12 } } } },
	  .n_ifaces = 2,
	  .ifaces = { "eth1", "eth0" } },
	{ .name = "full/ssh-abuse",
	  .index = 1,
	  .want = { .name = "ssh-abuse",
		    .match = { .proto = IPPROTO_TCP,
			       .has_port = 1,
			       .port_lo = 22,
			       .port_hi = 22,
			       .tcp_syn = 1 },
		    .rate = RATE(10, SLUICE_NSEC_PER_MIN, PKTS),
		    .burst = 5,
		    .mode = SLUICE_MODE_ENFORCE,
		    .class = SLUICE_CLASS_ABUSE,
		    .on_agent_loss = SLUICE_FAIL_DEGRADED,
		    .on_store_error = SLUICE_FAIL_DEGRADED,
		    .closed_after_ns = ABUSE_CLOSED_AFTER_NS,
		    .has_local_limit = 1,
		    .local_rate = RATE(1, SLUICE_NSEC_PER_MIN, PKTS),
		    .local_burst = 1,
		    .pos = { 27, 5 },
		    .rate_pos = { 29, 11 },
		    .burst_pos = { 30, 12 } },
	  .n_ifaces = 1,
	  .ifaces = { "eth1" } },
	{ .name = "full/v6-bandwidth",
	  .index = 2,
	  .want = { .name = "v6-bandwidth",
		    .match = { .proto = POLICY_PROTO_ANY },
		    .rate = RATE(10000000, BITS_PER_BYTE *SLUICE_NSEC_PER_SEC, BYTES),
		    .burst = 1000000,
		    .mode = SLUICE_MODE_ENFORCE,
		    .class = SLUICE_CLASS_SHEDDING,
		    .on_agent_loss = SLUICE_FAIL_DEGRADED,
		    .on_store_error = SLUICE_FAIL_DEGRADED,
		    .closed_after_ns = 0,
		    .has_local_limit = 1,
		    .local_rate = RATE(3000000, BITS_PER_BYTE *SLUICE_NSEC_PER_SEC, BYTES),
		    .local_burst = 300000,
		    .pos = { 35, 5 },
		    .rate_pos = { 37, 11 },
		    .burst_pos = { 38, 12 } },
	  .src = { 1, { { "::", 0, { 36, 19 } } } },
	  .src_except = { 1, { { "::ffff:0.0.0.0", 96, { 36, 39 } } } },
	  .dst = { 2,
		   { { "2001:db8:1::", 64, { 36, 62 } }, { "::ffff:0.0.0.0", 96, { 36, 81 } } } } },
	{ .name = "full/store-open",
	  .index = 3,
	  .want = { .name = "store-open",
		    .match = { .proto = POLICY_PROTO_ANY },
		    .rate = RATE(7, SLUICE_NSEC_PER_SEC, PKTS),
		    .burst = 10,
		    .mode = SLUICE_MODE_ENFORCE,
		    .class = SLUICE_CLASS_SHEDDING,
		    .on_agent_loss = SLUICE_FAIL_DEGRADED,
		    .on_store_error = SLUICE_FAIL_OPEN,
		    .closed_after_ns = 90 * SLUICE_NSEC_PER_SEC,
		    .has_local_limit = 1,
		    .local_rate = RATE(3, SLUICE_NSEC_PER_SEC, PKTS),
		    .local_burst = 5,
		    .pos = { 42, 5 },
		    .rate_pos = { 43, 11 },
		    .burst_pos = { 44, 12 } } },
};

static void test_full(void **state)
{
	const struct full_case *t = *state;
	struct policy_set *ps = load_good(FIXTURE_FULL);
	const struct policy *p;
	size_t i;

	assert_int_equal(ps->n_policies, ARRAY_SIZE(full_cases));
	p = &ps->policies[t->index];
	assert_policy(p, &t->want);
	assert_prefixes(&p->match.src, &t->src);
	assert_prefixes(&p->match.src_except, &t->src_except);
	assert_prefixes(&p->match.dst, &t->dst);
	assert_int_equal(p->match.n_ifaces, t->n_ifaces);
	if (!t->n_ifaces)
		assert_null(p->match.ifaces);
	for (i = 0; i < t->n_ifaces; i++)
		assert_string_equal(p->match.ifaces[i], t->ifaces[i]);
	policy_set__free(ps);
}

/* The top level of good/full.yaml: interfaces, allow and agent. */
static void test_full_top(void **state)
{
	static const struct want_list allow = { 3,
						{ { "::ffff:192.0.2.0", 120, { 4, 9 } },
						  { "2001:db8:ffff::", 48, { 4, 23 } },
						  { "::ffff:198.51.100.7", 128, { 4, 45 } } } };
	struct policy_set *ps = load_good(FIXTURE_FULL);

	(void)state;
	assert_int_equal(ps->n_ifaces, 2);
	assert_string_equal(ps->ifaces[0], "eth0");
	assert_string_equal(ps->ifaces[1], "eth1");
	assert_prefixes(&ps->allow, &allow);
	assert_int_equal(ps->heartbeat_ns, 250 * SLUICE_NSEC_PER_MSEC);
	assert_int_equal(ps->agent_timeout_ns, 2 * SLUICE_NSEC_PER_SEC);
	assert_int_equal(ps->unparsed, SLUICE_UNPARSED_PASS);
	assert_int_equal(ps->orphan, SLUICE_ORPHAN_PASS);
	policy_set__free(ps);
}

/* What a file that leaves out unparsed and fragments gets: both drop (docs/decisions.md). */
static void test_unparsed_defaults(void **state)
{
	struct policy_set *ps = load_good(FIXTURE_GOOD "/minimal.yaml");

	(void)state;
	assert_int_equal(ps->unparsed, SLUICE_UNPARSED_DROP);
	assert_int_equal(ps->orphan, SLUICE_ORPHAN_DROP);
	policy_set__free(ps);
}

/* ---- local_burst/: the default, burst × local_limit / rate rounded up ----- */

struct local_burst_case {
	const char *name;
	const char *rate, *burst, *local_limit;
	__u64 want;
};

#define U64_MAX_LESS_1 "18446744073709551614"

static const struct local_burst_case local_burst_cases[] = {
	{ "local_burst/half_rounds_up", "10/min", "5", "1/min", 1 },
	{ "local_burst/third_rounds_up", "7/s", "10", "3/s", 5 },
	{ "local_burst/equal", "100/s", "200", "100/s", 200 },
	{ "local_burst/equal_other_spelling", "60/min", "10", "1/s", 10 },
	{ "local_burst/tiny_is_at_least_1", "1000000/s", "1", "1/h", 1 },
	{ "local_burst/bits_and_bytes", "8Mbit/s", "1MB", "500kB/s", 500000 },
	/* burst × local amount × rate period needs 174 bits here; exact anyway */
	{ "local_burst/u64_exact", U64_MAX_STR "/day", U64_MAX_STR, U64_MAX_LESS_1 "/day",
	  18446744073709551614ULL },
	{ "local_burst/u64_rounds_up", "7/s", U64_MAX_STR, "2/s", 5270498306774157605ULL },
	{ "local_burst/u64_near_one", U64_MAX_STR "/s", U64_MAX_STR, U64_MAX_LESS_1 "/s",
	  18446744073709551614ULL },
};

static struct policy_set *parse_text(const char *text)
{
	return parse_valid("<test>", text);
}

static void test_local_burst(void **state)
{
	const struct local_burst_case *t = *state;
	struct policy_set *ps;
	char *text;

	assert_true(asprintf(&text, "policies: [{ name: p, rate: %s, burst: %s, local_limit: %s }]",
			     t->rate, t->burst, t->local_limit) > 0);
	ps = parse_text(text);
	assert_int_equal(ps->policies[0].has_local_limit, 1);
	assert_int_equal(ps->policies[0].local_burst, t->want);
	policy_set__free(ps);
	free(text);
}

/* ---- agent/: heartbeat and timeout, defaults and bounds ------------------- */

struct agent_case {
	const char *name;
	const char *agent; /* the line after "agent:", or NULL for none */
	__u64 heartbeat_ns, timeout_ns;
	const char *err; /* NULL: must parse; else the exact diagnostic */
};

#define AGENT_OK(n, a, h, t)                                                                       \
	{                                                                                          \
		.name = "agent/" n, .agent = (a), .heartbeat_ns = (h), .timeout_ns = (t)           \
	}
#define AGENT_BAD(n, a, e)                                                                         \
	{                                                                                          \
		.name = "agent/" n, .agent = (a), .err = (e)                                       \
	}

static const struct agent_case agent_cases[] = {
	AGENT_OK("absent", NULL, SLUICE_NSEC_PER_SEC, 5 * SLUICE_NSEC_PER_SEC),
	AGENT_OK("empty", "{}", SLUICE_NSEC_PER_SEC, 5 * SLUICE_NSEC_PER_SEC),
	AGENT_OK("heartbeat_alone", "{ heartbeat: 2500ms }", 2500 * SLUICE_NSEC_PER_MSEC,
		 5 * SLUICE_NSEC_PER_SEC),
	AGENT_OK("timeout_alone", "{ timeout: 2s }", SLUICE_NSEC_PER_SEC, 2 * SLUICE_NSEC_PER_SEC),
	AGENT_OK("smallest", "{ heartbeat: 10ms, timeout: 20ms }", 10 * SLUICE_NSEC_PER_MSEC,
		 20 * SLUICE_NSEC_PER_MSEC),
	AGENT_OK("largest", "{ heartbeat: 30m, timeout: 1h }", 30 * SLUICE_NSEC_PER_MIN,
		 SLUICE_NSEC_PER_HOUR),
	AGENT_BAD("heartbeat_9ms", "{ heartbeat: 9ms }",
		  "<test>:1:21: agent.heartbeat: heartbeat '9ms' is too short (expected at least "
		  "10ms)\n"),
	AGENT_BAD("heartbeat_over_30m", "{ heartbeat: 1801s }",
		  "<test>:1:21: agent.heartbeat: heartbeat '1801s' is too long (expected at most "
		  "30min, "
		  "as the timeout is at most 2 heartbeats and at most 1h)\n"),
	AGENT_BAD(
		"timeout_over_1h", "{ timeout: 3601s }",
		"<test>:1:19: agent.timeout: timeout '3601s' is too long (expected at most 1h)\n"),
	AGENT_BAD("timeout_under_default_2x", "{ timeout: 1999ms }",
		  "<test>:1:19: agent.timeout: timeout '1999ms' is shorter than 2 heartbeats of 1s "
		  "(expected at least 2s); one late heartbeat would be taken for a lost agent\n"),
	AGENT_BAD("heartbeat_over_default_timeout", "{ heartbeat: 2501ms }",
		  "<test>:1:21: agent.heartbeat: heartbeat '2501ms' needs a timeout of at least "
		  "5002ms, "
		  "and the default is 5s; set agent.timeout\n"),
	AGENT_BAD("bad_heartbeat_no_guess", "{ heartbeat: 1x, timeout: 1s }",
		  "<test>:1:21: agent.heartbeat: '1x' is not a duration: unknown unit 'x' "
		  "(expected ms, "
		  "s, m, min or h)\n"),
	AGENT_BAD("zero", "{ timeout: 0s }",
		  "<test>:1:19: agent.timeout: '0s' is not a duration: it is zero (expected a "
		  "positive "
		  "duration, such as 5s)\n"),
	AGENT_BAD("not_mapping", "5s", "<test>:1:8: agent: expected a mapping, got '5s'\n"),
};

static void test_agent(void **state)
{
	const struct agent_case *t = *state;
	struct diag_list d = { 0 };
	struct policy_set *ps;
	char *text, *printed;

	assert_true(asprintf(&text, "%s%s%spolicies: [{ name: p, rate: 1/s, burst: 1 }]\n",
			     t->agent ? "agent: " : "", t->agent ? t->agent : "",
			     t->agent ? "\n" : "") > 0);
	if (!t->err) {
		ps = parse_text(text);
		assert_int_equal(ps->heartbeat_ns, t->heartbeat_ns);
		assert_int_equal(ps->agent_timeout_ns, t->timeout_ns);
		policy_set__free(ps);
		free(text);
		return;
	}
	assert_null(policy_set__parse("<test>", text, strlen(text), &d));
	assert_int_equal(errno, EINVAL);
	printed = print_diags(&d);
	assert_string_equal(printed, t->err);
	free(printed);
	diag__free(&d);
	free(text);
}

/* ---- semantic/: checks across fields and policies, on small inline files -- */

struct semantic_case {
	const char *name;
	const char *yaml;
	const char *err; /* NULL: must parse; else exactly what diag__print() writes */
};

#define P_ONE "  - { name: p, rate: 1/s, burst: 1, "
#define Q_ONE "  - { name: q, rate: 1/s, burst: 1, "
#define NEVER_DECIDES(line)                                                                        \
	"<test>:" #line ":5: policies[1]: never decides: policies[0] 'p' (line 2) has the same "   \
	"match and key and a limit no looser; remove this policy, or tighten its limit\n"

static const struct semantic_case semantic_cases[] = {
	{ "semantic/src_except_equal_to_src",
	  "policies:\n" P_ONE "match: { src: 10.0.0.0/8, src_except: 10.0.0.0/8 } }\n",
	  "<test>:2:75: policies[0].match.src_except: matches no source: every src prefix is "
	  "excluded by src_except\n" },
	{ "semantic/src_except_everything_without_src",
	  "policies:\n" P_ONE "match: { src_except: [\"::/0\"] } }\n",
	  "<test>:2:58: policies[0].match.src_except: matches no source: every src prefix is "
	  "excluded by src_except\n" },
	{ "semantic/src_except_all_ipv4_without_src_leaves_ipv6",
	  "policies:\n" P_ONE "match: { src_except: 0.0.0.0/0 } }\n", NULL },
	{ "semantic/src_except_covers_one_src_of_two",
	  "policies:\n" P_ONE "match: { src: [10.0.0.0/8, 192.0.2.0/24], "
	  "src_except: [10.0.0.0/9, 10.128.0.0/9] } }\n",
	  NULL },
	{ "semantic/src_except_leaves_one_address",
	  "policies:\n" P_ONE "match: { src: \"2001:db8::/126\", src_except: [\"2001:db8::/127\", "
	  "\"2001:db8::2\"] } }\n",
	  NULL },
	{ "semantic/src_except_leaves_nothing_128",
	  "policies:\n" P_ONE "match: { src: \"2001:db8::/126\", src_except: [\"2001:db8::/127\", "
	  "\"2001:db8::2\", \"2001:db8::3\"] } }\n",
	  "<test>:2:81: policies[0].match.src_except: matches no source: every src prefix is "
	  "excluded by src_except\n" },
	{ "semantic/bad_src_no_guess",
	  "policies:\n" P_ONE "match: { src: 10.0.0.1/8, src_except: 192.0.2.0/24 } }\n",
	  "<test>:2:51: policies[0].match.src: '10.0.0.1/8' has host bits set (did you mean "
	  "10.0.0.0/8?)\n" },
	{ "semantic/unparsed_unknown", "unparsed: maybe\npolicies:\n" P_ONE "}\n",
	  "<test>:1:11: unparsed: unknown unparsed decision 'maybe' (expected drop, charge or "
	  "pass)\n" },
	{ "semantic/orphan_unknown", "fragments: { orphan: keep }\npolicies:\n" P_ONE "}\n",
	  "<test>:1:22: fragments.orphan: unknown orphan decision 'keep' (expected drop or "
	  "pass)\n" },
	{ "semantic/fragments_unknown_key",
	  "fragments: { reassemble: true }\npolicies:\n" P_ONE "}\n",
	  "<test>:1:14: fragments: unknown key 'reassemble' (expected orphan)\n" },
	{ "semantic/unparsed_charge", "unparsed: charge\npolicies:\n" P_ONE "}\n", NULL },
	{ "semantic/src_empty", "policies:\n" P_ONE "match: { src: [] } }\n",
	  "<test>:2:51: policies[0].match.src: empty list (expected a prefix such as 10.0.0.0/8, "
	  "or a sequence of them); leave out src to match every source\n" },
	{ "semantic/src_mapping", "policies:\n" P_ONE "match: { src: { a: 1 } } }\n",
	  "<test>:2:51: policies[0].match.src: expected a prefix such as 10.0.0.0/8, or a "
	  "sequence of them, got a mapping\n" },
	{ "semantic/allow_empty", "allow: []\npolicies:\n" P_ONE "}\n", NULL },
	{ "semantic/allow_overlap", "allow: [10.0.0.0/8, 10.1.0.0/16]\npolicies:\n" P_ONE "}\n",
	  NULL },
	{ "semantic/iface_without_interfaces", "policies:\n" P_ONE "match: { iface: eth9 } }\n",
	  NULL },
	{ "semantic/iface_twice", "policies:\n" P_ONE "match: { iface: [eth0, eth1, eth0] } }\n",
	  "<test>:2:66: policies[0].match.iface[2]: interface 'eth0' is listed twice (first as "
	  "policies[0].match.iface[0])\n" },
	{ "semantic/iface_bad_name", "policies:\n" P_ONE "match: { iface: \"a/b\" } }\n",
	  "<test>:2:53: policies[0].match.iface: interface name 'a/b' has a bad character '/' "
	  "(an interface name has no '/', ':' or spaces)\n" },
	{ "semantic/iface_bad_interfaces_no_guess",
	  "interfaces: [\"a b\"]\npolicies:\n" P_ONE "match: { iface: eth0 } }\n",
	  "<test>:1:14: interfaces[0]: interface name 'a b' has a bad character ' ' (an interface "
	  "name has no '/', ':' or spaces)\n" },
	{ "semantic/iface_empty_interfaces",
	  "interfaces: []\npolicies:\n" P_ONE "match: { iface: eth0 } }\n",
	  "<test>:3:53: policies[0].match.iface: interface 'eth0' is not in the top-level "
	  "interfaces list, which is empty; add it there\n" },
	{ "semantic/never_decides_same_limit", "policies:\n" P_ONE "}\n" Q_ONE "}\n",
	  NEVER_DECIDES(3) },
	{ "semantic/never_decides_ifaces_as_sets",
	  "policies:\n" P_ONE "match: { iface: [a, b] } }\n" Q_ONE "match: { iface: [b, a] } }\n",
	  NEVER_DECIDES(3) },
	{ "semantic/later_tighter_rate_decides",
	  "policies:\n" P_ONE "}\n  - { name: q, rate: 59/min, burst: 1 }\n", NULL },
	{ "semantic/later_tighter_burst_decides",
	  "policies:\n  - { name: p, rate: 1/s, burst: 2 }\n" Q_ONE "}\n", NULL },
	{ "semantic/later_shadow_decides", "policies:\n" P_ONE "}\n" Q_ONE "mode: shadow }\n",
	  NULL },
	{ "semantic/earlier_shadow_decides_nothing",
	  "policies:\n" P_ONE "mode: shadow }\n" Q_ONE "}\n", NULL },
	{ "semantic/other_key_decides",
	  "policies:\n" P_ONE "}\n" Q_ONE "key: { ipv4_prefix: 32, ipv6_prefix: 64 } }\n", NULL },
	{ "semantic/other_src_decides",
	  "policies:\n" P_ONE "match: { src: 10.0.0.0/8 } }\n" Q_ONE
	  "match: { src: 10.0.0.0/9 } }\n",
	  NULL },
	{ "semantic/other_ifaces_decide",
	  "policies:\n" P_ONE "match: { iface: [a, b] } }\n" Q_ONE "match: { iface: [a] } }\n",
	  NULL },
	{ "semantic/other_cost_decides",
	  "policies:\n  - { name: p, rate: 1B/s, burst: 1 }\n" Q_ONE "}\n", NULL },
	{ "semantic/never_decides_skips_bad_policy", "policies:\n" P_ONE "mode: x }\n" Q_ONE "}\n",
	  "<test>:2:43: policies[0].mode: unknown mode 'x' (expected enforce or shadow)\n" },
	{ "semantic/closed_after_with_one_degraded",
	  "policies:\n" P_ONE "on_agent_loss: open, closed_after: 1s }\n", NULL },
	{ "semantic/closed_after_bad_fail_mode_no_guess",
	  "policies:\n" P_ONE "on_agent_loss: x, on_store_error: open, closed_after: 1s }\n",
	  "<test>:2:52: policies[0].on_agent_loss: unknown fail mode 'x' (expected open, degraded "
	  "or closed)\n" },
	{ "semantic/fail_mode_none_is_not_a_choice", "policies:\n" P_ONE "on_agent_loss: none }\n",
	  "<test>:2:52: policies[0].on_agent_loss: unknown fail mode 'none' (expected open, "
	  "degraded or closed)\n" },
	{ "semantic/local_limit_equal_to_rate", "policies:\n" P_ONE "local_limit: 60/min }\n",
	  NULL },
	{ "semantic/local_limit_bits_vs_bytes_same_unit",
	  "policies:\n  - { name: p, rate: 8Mbit/s, burst: 1MB, local_limit: 1MB/s }\n", NULL },
	{ "semantic/local_limit_bad_rate_no_guess",
	  "policies:\n  - { name: p, rate: 1/sek, burst: 1, local_limit: 1MB/s }\n",
	  "<test>:2:22: policies[0].rate: '1/sek' is not a rate: unknown unit 'sek' (expected s, "
	  "min, h or day, optionally with a count such as 15m)\n" },
	{ "semantic/local_burst_equal_to_burst",
	  "policies:\n" P_ONE "local_limit: 1/min, local_burst: 1 }\n", NULL },
	{ "semantic/local_burst_bytes_for_packets",
	  "policies:\n" P_ONE "local_limit: 1/min, local_burst: 1kB }\n",
	  "<test>:2:70: policies[0].local_burst: local_burst '1kB' is a size but rate '1/s' counts "
	  "packets (expected a packet count such as 200)\n" },
};

static void test_semantic(void **state)
{
	const struct semantic_case *t = *state;
	struct diag_list d = { 0 };
	struct policy_set *ps;
	char *printed;

	if (!t->err) {
		policy_set__free(parse_text(t->yaml));
		return;
	}
	ps = policy_set__parse("<test>", t->yaml, strlen(t->yaml), &d);
	if (ps) {
		policy_set__free(ps);
		fail_msg("should be rejected, but parsed:\n%s", t->yaml);
	}
	assert_int_equal(errno, EINVAL);
	printed = print_diags(&d);
	assert_string_equal(printed, t->err);
	free(printed);
	diag__free(&d);
}

/* An abuse policy may choose to stay degraded for as long as a fault lasts. */
static void test_closed_after_never(void **state)
{
	struct policy_set *ps = parse_text("policies:\n"
					   "  - { name: p, rate: 1/s, burst: 1, class: abuse,\n"
					   "      closed_after: never }\n");

	(void)state;
	assert_int_equal(ps->policies[0].class, SLUICE_CLASS_ABUSE);
	assert_int_equal(ps->policies[0].on_agent_loss, SLUICE_FAIL_DEGRADED);
	assert_int_equal(ps->policies[0].closed_after_ns, 0);
	policy_set__free(ps);
}

/* Lists hold up to their limit; one more is an error. */
static void test_prefix_list_limits(void **state)
{
	static const struct {
		const char *head, *path;
		size_t max;
	} lists[] = {
		{ "policies:\n  - name: p\n    rate: 1/s\n    burst: 1\n    match:\n      src:\n",
		  "policies[0].match.src", POLICY_MAX_PREFIXES },
		{ "policies: [{ name: p, rate: 1/s, burst: 1 }]\nallow:\n", "allow",
		  POLICY_ALLOW_MAX_PREFIXES },
	};
	struct diag_list d = { 0 };
	size_t i, k, len;
	char *text, want[DIAG_MSG_LEN];
	FILE *out;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(lists); i++) {
		for (k = lists[i].max; k <= lists[i].max + 1; k++) {
			size_t n;

			text = NULL;
			out = open_memstream(&text, &len);
			assert_non_null(out);
			fputs(lists[i].head, out);
			for (n = 0; n < k; n++) /* distinct /128s: no duplicates */
				fprintf(out, "        - \"2001:db8::%zx:%zx\"\n", n >> 16,
					n & 0xffff);
			assert_int_equal(fclose(out), 0);
			if (k == lists[i].max) {
				policy_set__free(parse_text(text));
				free(text);
				continue;
			}
			assert_null(policy_set__parse("<test>", text, len, &d));
			assert_int_equal(d.n, 1);
			assert_true(snprintf(want, sizeof(want),
					     "%zu entries are too many (at most %zu)", k,
					     lists[i].max) > 0);
			assert_string_equal(d.v[0].field, lists[i].path);
			assert_string_equal(d.v[0].msg, want);
			diag__free(&d);
			free(text);
		}
	}
}

/* ---- good/ and bad/: every fixture file ----------------------------------- */

static void test_good_fixture(void **state)
{
	policy_set__free(load_good(*state));
}

static void test_bad_fixture(void **state)
{
	const char *yaml = *state;
	char err_path[PATH_LEN];
	char *printed, *want;
	int n;

	n = snprintf(err_path, sizeof(err_path), "%.*s.err", (int)(strlen(yaml) - strlen(".yaml")),
		     yaml);
	assert_true(n > 0 && (size_t)n < sizeof(err_path));
	printed = load_bad(yaml);
	want = slurp(err_path);
	assert_string_equal(printed, want);
	free(want);
	free(printed);
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "DIR/NAME" for every NAME in @dir ending in @suffix, sorted; fails on error. */
static size_t list_fixtures(const char *dir, const char *suffix, char **out, size_t max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		fail_msg("cannot open '%s': %s; run the tests from the repository root", dir,
			 strerror(errno));
	/* readdir_r() is deprecated (glibc 2.24); readdir() on a DIR of our own is safe. */
	/* cppcheck-suppress readdirCalled */
	while ((e = readdir(d))) {
		if (!has_suffix(e->d_name, suffix))
			continue;
		assert_true(n < max);
		assert_true(asprintf(&out[n], "%s/%s", dir, e->d_name) > 0);
		n++;
	}
	assert_int_equal(closedir(d), 0);
	qsort(out, n, sizeof(*out), cmp_str);
	return n;
}

static void free_list(char **v, size_t n)
{
	while (n)
		free(v[--n]);
}

/* Each bad/NAME.yaml has its NAME.err and each .err its .yaml: no silent skips. */
static void test_bad_fixtures_paired(void **state)
{
	char *yaml[FIXTURE_MAX], *err[FIXTURE_MAX];
	size_t n_yaml, n_err, i;

	(void)state;
	n_yaml = list_fixtures(FIXTURE_BAD, ".yaml", yaml, FIXTURE_MAX);
	n_err = list_fixtures(FIXTURE_BAD, ".err", err, FIXTURE_MAX);
	assert_true(n_yaml > 0);
	assert_int_equal(n_yaml, n_err);
	for (i = 0; i < n_yaml; i++) {
		size_t stem = strlen(yaml[i]) - strlen(".yaml");

		if (strncmp(yaml[i], err[i], stem) != 0 || strcmp(err[i] + stem, ".err") != 0)
			fail_msg("'%s' and '%s' do not pair up", yaml[i], err[i]);
	}
	free_list(yaml, n_yaml);
	free_list(err, n_err);
}

/* ---- file/: reading the file ---------------------------------------------- */

static void test_missing_file(void **state)
{
	const char *path = FIXTURE_BAD "/no-such-file.yaml";
	char *printed = load_bad(path);

	(void)state;
	assert_string_equal(printed,
			    FIXTURE_BAD "/no-such-file.yaml: cannot read '" FIXTURE_BAD
					"/no-such-file.yaml': No such file or directory; give the "
					"path of an existing policy file\n");
	free(printed);
}

static void test_directory(void **state)
{
	char *printed = load_bad(FIXTURE_BAD);

	(void)state;
	assert_string_equal(printed,
			    FIXTURE_BAD ": cannot read '" FIXTURE_BAD
					"': Is a directory; give a file, not a directory\n");
	free(printed);
}

/* ---- file/: where a symlinked policy file may lead ----------------------- */

#define NOBODY_UID 65534 /* a user that is neither root nor the test */

static char link_top[PATH_LEN]; /* the test's directory, symlinks resolved */

/* link_top/@rel into @path of PATH_LEN bytes. */
static char *at(char *path, const char *rel)
{
	int n = snprintf(path, PATH_LEN, "%s/%s", link_top, rel);

	assert_true(n > 0 && n < PATH_LEN);
	return path;
}

static void put(const char *rel, const char *text)
{
	char path[PATH_LEN];
	FILE *f;

	at(path, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void put_dir(const char *rel)
{
	char path[PATH_LEN];

	at(path, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void put_link(const char *rel, const char *target)
{
	char path[PATH_LEN];

	at(path, rel);
	assert_int_equal(symlink(target, path), 0);
}

/* The diagnostics of loading @rel, which must be refused. */
static char *refused(const char *rel)
{
	char path[PATH_LEN];

	at(path, rel);
	return load_bad(path);
}

static void loads(const char *rel)
{
	struct diag_list d = { 0 };
	struct policy_set *ps;
	char path[PATH_LEN];

	at(path, rel);
	ps = policy_set__load(path, &d);
	if (!ps)
		fail_msg("%s: %s", rel, d.n ? d.v[0].msg : strerror(errno));
	policy_set__free(ps);
	diag__free(&d);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int links_setup(void **state)
{
	char tmpl[] = "/tmp/sluice-policy-XXXXXX";
	char *real;

	(void)state;
	if (!mkdtemp(tmpl))
		return -1;
	real = realpath(tmpl, NULL);
	if (!real)
		return -1;
	snprintf(link_top, sizeof(link_top), "%s", real);
	free(real);
	return 0;
}

static int links_teardown(void **state)
{
	(void)state;
	return nftw(link_top, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char policy_text[] = "policies: [{ name: p, rate: 1/s, burst: 1 }]\n";

/* The kubelet's ConfigMap layout loads; a symlink out of the directory does not. */
static void test_symlink_inside(void **state)
{
	char *printed, *want;

	(void)state;
	put_dir("conf");
	put_dir("other");
	put("other/policy.yaml", "secret: not a policy, first bytes must not be shown\n");
	put_dir("conf/..2026_12_05_04_00_00.123456789");
	put("conf/..2026_12_05_04_00_00.123456789/policy.yaml", policy_text);
	put_link("conf/..data", "..2026_12_05_04_00_00.123456789");
	put_link("conf/policy.yaml", "..data/policy.yaml");
	loads("conf/policy.yaml");
	put("conf/plain.yaml", policy_text);
	put_link("conf/beside.yaml", "plain.yaml");
	loads("conf/beside.yaml");

	put_link("conf/out.yaml", "../other/policy.yaml");
	printed = refused("conf/out.yaml");
	assert_true(asprintf(&want,
			     "%1$s/conf/out.yaml: refusing '%1$s/conf/out.yaml': it leads to "
			     "'%1$s/other/policy.yaml', outside its directory '%1$s/conf'; put "
			     "the policy file itself there\n",
			     link_top) > 0);
	assert_string_equal(printed, want);
	free(printed);
	free(want);
	/* A ..data that leads out is no exception. */
	put_link("conf/..data_out", "../other");
	put_link("conf/data-out.yaml", "..data_out/policy.yaml");
	printed = refused("conf/data-out.yaml");
	assert_non_null(strstr(printed, "outside its directory"));
	assert_null(strstr(printed, "secret"));
	free(printed);
}

/* A symlink to a file of another user is refused; that file named directly is not. */
static void test_symlink_owner(void **state)
{
	char *printed, *want, path[PATH_LEN];

	(void)state;
	if (geteuid())
		skip(); /* giving a file away needs root */
	put_dir("owned");
	put("owned/nobody.yaml", policy_text);
	at(path, "owned/nobody.yaml");
	assert_int_equal(chown(path, NOBODY_UID, NOBODY_UID), 0);
	put_link("owned/policy.yaml", "nobody.yaml");
	printed = refused("owned/policy.yaml");
	assert_true(asprintf(&want,
			     "%1$s/owned/policy.yaml: refusing '%1$s/owned/policy.yaml': it "
			     "leads to '%1$s/owned/nobody.yaml', owned by uid %2$d, not root or "
			     "the running user (uid 0); chown it to root or to uid 0\n",
			     link_top, NOBODY_UID) > 0);
	assert_string_equal(printed, want);
	free(printed);
	free(want);
	loads("owned/nobody.yaml");
}

/* A temporary file of exactly @size bytes: a valid policy padded with a comment. */
static void write_sized_policy(char *path, size_t size)
{
	static const char head[] = "policies: [{ name: p, rate: 1/s, burst: 1 }]\n#";
	char *buf = malloc(size);
	int fd = mkstemp(path);

	assert_non_null(buf);
	assert_true(fd >= 0);
	assert_true(size > sizeof(head));
	memset(buf, 'x', size);
	memcpy(buf, head, sizeof(head) - 1);
	buf[size - 1] = '\n';
	assert_int_equal(write(fd, buf, size), (ssize_t)size);
	assert_int_equal(close(fd), 0);
	free(buf);
}

static void test_size_limit(void **state)
{
	char path[] = "/tmp/sluice-test-policy-XXXXXX";
	char want[PATH_LEN];
	char *printed;

	(void)state;
	write_sized_policy(path, POLICY_FILE_MAX_BYTES);
	policy_set__free(load_good(path));
	assert_int_equal(unlink(path), 0);

	strcpy(path, "/tmp/sluice-test-policy-XXXXXX");
	write_sized_policy(path, POLICY_FILE_MAX_BYTES + 1);
	printed = load_bad(path);
	assert_int_equal(unlink(path), 0);
	assert_true(snprintf(want, sizeof(want),
			     "%s: cannot read '%s': larger than %d bytes, "
			     "the most a policy file may have\n",
			     path, path, POLICY_FILE_MAX_BYTES) > 0);
	assert_string_equal(printed, want);
	free(printed);
}

/* policy_set__parse() names the buffer as told; free functions accept NULL. */
static void test_parse_buffer(void **state)
{
	static const char text[] = "policies: [{ name: p, rate: 1/s, burst: 0 }]\n";
	struct diag_list d = { 0 };
	char *printed;

	(void)state;
	assert_null(policy_set__parse("<stdin>", text, strlen(text), &d));
	assert_int_equal(errno, EINVAL);
	printed = print_diags(&d);
	assert_string_equal(printed, "<stdin>:1:41: policies[0].burst: '0' is not a burst: "
				     "a burst of zero admits nothing (expected at least 1)\n");
	free(printed);
	diag__free(&d);
	policy_set__free(NULL);
}

/* ---- adversarial files ------------------------------------------------------ */

struct hostile_row {
	const char *name;
	const char *unit;  /* repeated to fill POLICY_FILE_MAX_BYTES */
	const char *first; /* the first line of what diag__print() writes, after "<test>:" */
};

/*
 * 1 MiB files built to cost the parser: nesting past POLICY_NESTING_MAX
 * in each style, refused as the level opens (its line and column prove the
 * parser went no deeper: a scanner cost growing with the depth took 16.8 s
 * on 80 KB of brackets), and a flat sequence as long as the size allows,
 * which is linear. The CPU time each took is printed, not asserted (a
 * sanitizer or valgrind run is many times slower): docs/policy.md has the
 * figures.
 */
static const struct hostile_row hostile_rows[] = {
	{ "flow sequences", "[", "1:17: YAML nested deeper than 16 levels" },
	{ "flow mappings", "{a: ", "1:65: YAML nested deeper than 16 levels" },
	{ "block sequences", "- ", "1:33: YAML nested deeper than 16 levels" },
	{ "a flat sequence", "- 1\n", "1:1: expected a mapping with 'policies', got a sequence\n" },
};

static void test_hostile(void **state)
{
	const struct hostile_row *row = *state;
	size_t unit = strlen(row->unit), len = POLICY_FILE_MAX_BYTES / unit * unit;
	char *buf = malloc(len + 1), *printed, *want;
	struct diag_list d = { 0 };
	__u64 t0, spent;
	size_t i;

	assert_non_null(buf);
	for (i = 0; i < len; i += unit)
		memcpy(buf + i, row->unit, unit);
	buf[len] = '\0';
	t0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	assert_null(policy_set__parse("<test>", buf, len, &d));
	spent = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - t0;
	printed = print_diags(&d);
	assert_true(asprintf(&want, "<test>:%s", row->first) > 0);
	if (strncmp(printed, want, strlen(want)) != 0)
		fail_msg("%s: printed %.200s, expected it to start with %s", row->name, printed,
			 want);
	print_message("%s: %zu bytes refused in %llu us of CPU\n", row->name, len,
		      (unsigned long long)(spent / SLUICE_NSEC_PER_USEC));
	free(want);
	free(printed);
	free(buf);
	diag__free(&d);
}

/* ---- running -------------------------------------------------------------- */

static size_t fixture_tests(struct CMUnitTest *tests, size_t n, size_t max, char **paths,
			    size_t n_paths, CMUnitTestFunction fn)
{
	size_t i;

	for (i = 0; i < n_paths; i++) {
		if (n >= max)
			abort();
		tests[n++] = (struct CMUnitTest){ .name = paths[i],
						  .test_func = fn,
						  .initial_state = paths[i] };
	}
	return n;
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_rate_short_err_buffer),
		cmocka_unit_test(test_diag_cut_and_grow),
		cmocka_unit_test(test_diag_show),
		cmocka_unit_test(test_byte_bursts),
		cmocka_unit_test(test_full_top),
		cmocka_unit_test(test_unparsed_defaults),
		cmocka_unit_test(test_prefix_list_limits),
		cmocka_unit_test(test_closed_after_never),
		cmocka_unit_test(test_bad_fixtures_paired),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_directory),
		cmocka_unit_test_setup_teardown(test_symlink_inside, links_setup, links_teardown),
		cmocka_unit_test_setup_teardown(test_symlink_owner, links_setup, links_teardown),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_parse_buffer),
	};
	static struct CMUnitTest tests[4 * FIXTURE_MAX];
	char *good[FIXTURE_MAX], *bad[FIXTURE_MAX];
	size_t n = 0, n_good, n_bad, i;
	int failed;

	n_good = list_fixtures(FIXTURE_GOOD, ".yaml", good, FIXTURE_MAX);
	n_bad = list_fixtures(FIXTURE_BAD, ".yaml", bad, FIXTURE_MAX);
	if (!n_good || !n_bad) {
		fprintf(stderr, "no fixtures in %s or %s\n", FIXTURE_GOOD, FIXTURE_BAD);
		return 1;
	}
	TABLE_TESTS(tests, n, rate_cases, test_rate);
	TABLE_TESTS(tests, n, diag_cases, test_diag);
	TABLE_TESTS(tests, n, prefix_cases, test_prefix);
	TABLE_TESTS(tests, n, duration_cases, test_duration);
	TABLE_TESTS(tests, n, example_cases, test_example);
	TABLE_TESTS(tests, n, full_cases, test_full);
	TABLE_TESTS(tests, n, local_burst_cases, test_local_burst);
	TABLE_TESTS(tests, n, agent_cases, test_agent);
	TABLE_TESTS(tests, n, semantic_cases, test_semantic);
	TABLE_TESTS(tests, n, hostile_rows, test_hostile);
	n = fixture_tests(tests, n, ARRAY_SIZE(tests), good, n_good, test_good_fixture);
	n = fixture_tests(tests, n, ARRAY_SIZE(tests), bad, n_bad, test_bad_fixture);
	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		tests[n++] = fixed[i];

	failed = _cmocka_run_group_tests("policy", tests, n, NULL, NULL);
	free_list(good, n_good);
	free_list(bad, n_bad);
	return failed ? 1 : 0;
}
