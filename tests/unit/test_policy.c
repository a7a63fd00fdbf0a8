/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of the policy file parser (user/policy.c) and the diagnostics
 * it prints (user/diag.c). Every table row is one named cmocka case:
 *
 *   rate/<name>     policy_parse_rate(): the exact amount, period and cost,
 *                   or a substring of the error
 *   diag/<name>     diag__print() line shapes, cutting and sanitizing
 *   .../good/F.yaml every file in tests/fixtures/policy/good loads with no
 *                   diagnostic
 *   example/<name>  every field of the policies in good/example.yaml
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

#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define FIXTURE_GOOD "tests/fixtures/policy/good"
#define FIXTURE_BAD "tests/fixtures/policy/bad"
#define FIXTURE_EXAMPLE FIXTURE_GOOD "/example.yaml"
#define FIXTURE_MAX 256 /* fixture files one directory may hold */
#define PATH_LEN 512

#define NS_PER_SEC 1000000000ULL
#define NS_PER_MIN (60 * NS_PER_SEC)
#define NS_PER_HOUR (60 * NS_PER_MIN)
#define NS_PER_DAY (24 * NS_PER_HOUR)
#define BITS_PER_BYTE 8
#define U64_MAX_STR "18446744073709551615"

/* ---- helpers -------------------------------------------------------------- */

/* What diag__print() writes for @d, as a new string. */
static char *print_diags(const struct diag_list *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	diag__print(d, out);
	assert_int_equal(fclose(out), 0);
	return buf;
}

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

#define RATE_OK(n, s, a, p, c) \
	{ .name = "rate/" n, .in = s, .amount = a, .period_ns = p, .cost = c }
#define RATE_BAD(n, s, e) { .name = "rate/" n, .in = s, .err = e }
#define PKTS SLUICE_COST_PKTS
#define BYTES SLUICE_COST_BYTES

static const struct rate_case rate_cases[] = {
	RATE_OK("pkts_per_s", "100/s", 100, NS_PER_SEC, PKTS),
	RATE_OK("pkts_per_15m", "5/15m", 5, 15 * NS_PER_MIN, PKTS),
	RATE_OK("pkts_per_h", "1000/h", 1000, NS_PER_HOUR, PKTS),
	RATE_OK("pkts_per_min", "10/min", 10, NS_PER_MIN, PKTS),
	RATE_OK("pkts_per_day", "3/day", 3, NS_PER_DAY, PKTS),
	RATE_OK("one_per_hour", "1/h", 1, NS_PER_HOUR, PKTS),
	RATE_OK("spelled_sec", "1/sec", 1, NS_PER_SEC, PKTS),
	RATE_OK("spelled_hour", "2/hour", 2, NS_PER_HOUR, PKTS),
	RATE_OK("spelled_d", "1/d", 1, NS_PER_DAY, PKTS),
	RATE_OK("count_30s", "1/30s", 1, 30 * NS_PER_SEC, PKTS),
	RATE_OK("count_2h", "7/2h", 7, 2 * NS_PER_HOUR, PKTS),
	RATE_OK("mbit_per_s", "10Mbit/s", 10000000, BITS_PER_BYTE * NS_PER_SEC, BYTES),
	RATE_OK("gbit_per_s", "1Gbit/s", 1000000000, BITS_PER_BYTE * NS_PER_SEC, BYTES),
	RATE_OK("kbit_per_min", "2500kbit/min", 2500000, BITS_PER_BYTE * NS_PER_MIN, BYTES),
	RATE_OK("bit_per_s", "1bit/s", 1, BITS_PER_BYTE * NS_PER_SEC, BYTES),
	RATE_OK("mb_per_s", "2MB/s", 2000000, NS_PER_SEC, BYTES),
	RATE_OK("kb_per_s", "64kB/s", 64000, NS_PER_SEC, BYTES),
	RATE_OK("b_per_s", "1500B/s", 1500, NS_PER_SEC, BYTES),
	RATE_OK("gb_per_min", "3GB/min", 3000000000ULL, NS_PER_MIN, BYTES),
	RATE_OK("largest_count", U64_MAX_STR "/s", UINT64_MAX, NS_PER_SEC, PKTS),
	RATE_OK("largest_kb", "18446744073709551kB/s", 18446744073709551000ULL, NS_PER_SEC, BYTES),
	RATE_OK("longest_pkt_period", "1/213503d", 1, 213503 * NS_PER_DAY, PKTS),
	RATE_OK("longest_bit_period", "1bit/26687d", 1, BITS_PER_BYTE * 26687 * NS_PER_DAY, BYTES),
	RATE_BAD("unknown_period", "100/sek",
		 "'100/sek' is not a rate: unknown unit 'sek' (expected s, min, h or day, "
		 "optionally with a count such as 15m)"),
	RATE_BAD("millis", "100/ms", "unknown unit 'ms'"),
	RATE_BAD("unknown_amount_unit", "100kpkt/s",
		 "unknown unit 'kpkt' (expected none for packets, or B, kB, MB, GB, bit, kbit, "
		 "Mbit or Gbit)"),
	RATE_BAD("lowercase_mbit", "10mbit/s", "unknown unit 'mbit'"),
	RATE_BAD("decimal", "2.5Mbit/s", "decimals are not supported; use a smaller unit or a "
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
	{ "diag/with_field", "p.yaml", { 3, 11 }, "policies[0].rate", "'x' is not a rate",
	  "p.yaml:3:11: policies[0].rate: 'x' is not a rate\n" },
	{ "diag/no_field", "p.yaml", { 1, 1 }, "", "unknown key 'x'",
	  "p.yaml:1:1: unknown key 'x'\n" },
	{ "diag/no_position", "p.yaml", { 0, 0 }, "ignored", "empty policy file",
	  "p.yaml: empty policy file\n" },
	{ "diag/no_file", NULL, { 2, 5 }, "", "m", "<input>:2:5: m\n" },
	{ "diag/control_chars", "p.yaml", { 1, 2 }, "f\n", "a\nb\tc\x7f",
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
	assert_string_equal(d.v[n - 1].msg, "m767");
	diag__free(&d);
	assert_null(d.v);
	assert_int_equal(d.n, 0);
	diag__free(NULL);
}

/* ---- example/: what good/example.yaml parses into ----------------------- */

struct example_case {
	const char *name;
	size_t index;
	struct policy want; /* every field is compared */
};

static const struct example_case example_cases[] = {
	{ "example/dns-per-source", 0, {
		.name = "dns-per-source",
		.match = { .proto = IPPROTO_UDP, .has_port = 1, .port_lo = 53, .port_hi = 53 },
		.keyed = 1, .ipv4_prefix = 32, .ipv6_prefix = 64,
		.rate = { 100, NS_PER_SEC, SLUICE_COST_PKTS }, .burst = 200,
		.pos = { 4, 5 }, .rate_pos = { 7, 11 }, .burst_pos = { 8, 12 } } },
	{ "example/ssh-syn", 1, {
		.name = "ssh-syn",
		.match = { .proto = IPPROTO_TCP, .has_port = 1, .port_lo = 22, .port_hi = 22,
			   .tcp_syn = 1 },
		.keyed = 1, .ipv4_prefix = 24, .ipv6_prefix = 48,
		.rate = { 10, NS_PER_MIN, SLUICE_COST_PKTS }, .burst = 5,
		.pos = { 9, 5 }, .rate_pos = { 12, 11 }, .burst_pos = { 13, 12 } } },
	{ "example/global-icmp", 2, {
		.name = "global-icmp",
		.match = { .proto = IPPROTO_ICMP },
		.rate = { 1000, NS_PER_SEC, SLUICE_COST_PKTS }, .burst = 100,
		.pos = { 14, 5 }, .rate_pos = { 16, 11 }, .burst_pos = { 17, 12 } } },
};

static void assert_pos(struct src_pos got, struct src_pos want)
{
	assert_int_equal(got.line, want.line);
	assert_int_equal(got.col, want.col);
}

static void test_example(void **state)
{
	const struct example_case *t = *state;
	const struct policy *w = &t->want, *p;
	struct policy_set *ps = load_good(FIXTURE_EXAMPLE);

	assert_int_equal(ps->n_policies, ARRAY_SIZE(example_cases));
	assert_int_equal(ps->n_ifaces, 1);
	assert_string_equal(ps->ifaces[0], "eth0");
	p = &ps->policies[t->index];
	assert_string_equal(p->name, w->name);
	assert_int_equal(p->match.proto, w->match.proto);
	assert_int_equal(p->match.has_port, w->match.has_port);
	assert_int_equal(p->match.port_lo, w->match.port_lo);
	assert_int_equal(p->match.port_hi, w->match.port_hi);
	assert_int_equal(p->match.tcp_syn, w->match.tcp_syn);
	assert_int_equal(p->keyed, w->keyed);
	assert_int_equal(p->ipv4_prefix, w->ipv4_prefix);
	assert_int_equal(p->ipv6_prefix, w->ipv6_prefix);
	assert_int_equal(p->rate.amount, w->rate.amount);
	assert_int_equal(p->rate.period_ns, w->rate.period_ns);
	assert_int_equal(p->rate.cost, w->rate.cost);
	assert_int_equal(p->burst, w->burst);
	assert_pos(p->pos, w->pos);
	assert_pos(p->rate_pos, w->rate_pos);
	assert_pos(p->burst_pos, w->burst_pos);
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

		if (strncmp(yaml[i], err[i], stem) || strcmp(err[i] + stem, ".err"))
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
	assert_string_equal(printed, FIXTURE_BAD "/no-such-file.yaml: cannot read '"
			    FIXTURE_BAD "/no-such-file.yaml': No such file or directory\n");
	free(printed);
}

static void test_directory(void **state)
{
	char *printed = load_bad(FIXTURE_BAD);

	(void)state;
	assert_string_equal(printed, FIXTURE_BAD ": cannot read '" FIXTURE_BAD
			    "': Is a directory\n");
	free(printed);
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
	assert_true(snprintf(want, sizeof(want), "%s: cannot read '%s': larger than %d bytes, "
			     "the most a policy file may have\n", path, path,
			     POLICY_FILE_MAX_BYTES) > 0);
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

/* ---- running -------------------------------------------------------------- */

#define TABLE_TESTS(tests, n, table, fn)                                                   \
	do {                                                                               \
		size_t i_;                                                                 \
		for (i_ = 0; i_ < ARRAY_SIZE(table); i_++) {                               \
			assert_true(n < ARRAY_SIZE(tests));                                \
			tests[n++] = (struct CMUnitTest){ .name = table[i_].name,          \
							  .test_func = fn,                 \
							  .initial_state = (void *)&table[i_] }; \
		}                                                                          \
	} while (0)

static size_t fixture_tests(struct CMUnitTest *tests, size_t n, size_t max, char **paths,
			    size_t n_paths, CMUnitTestFunction fn)
{
	size_t i;

	for (i = 0; i < n_paths; i++) {
		if (n >= max)
			abort();
		tests[n++] = (struct CMUnitTest){ .name = paths[i], .test_func = fn,
						  .initial_state = paths[i] };
	}
	return n;
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_rate_short_err_buffer),
		cmocka_unit_test(test_diag_cut_and_grow),
		cmocka_unit_test(test_byte_bursts),
		cmocka_unit_test(test_bad_fixtures_paired),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_directory),
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
	TABLE_TESTS(tests, n, example_cases, test_example);
	n = fixture_tests(tests, n, ARRAY_SIZE(tests), good, n_good, test_good_fixture);
	n = fixture_tests(tests, n, ARRAY_SIZE(tests), bad, n_bad, test_bad_fixture);
	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		tests[n++] = fixed[i];

	failed = _cmocka_run_group_tests("policy", tests, n, NULL, NULL);
	free_list(good, n_good);
	free_list(bad, n_bad);
	return failed ? 1 : 0;
}
