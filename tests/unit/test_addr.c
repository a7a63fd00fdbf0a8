/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of user/base/addr.c, the one home of the IPv4-mapped test,
 * prefix masking and address text. Every table row is one named cmocka
 * case; addresses are given as bytes, so a row does not depend on the code
 * it tests:
 *
 *   parse/<name>   addr_parse(): the family and the exact 16 bytes, or -EINVAL
 *   mask/<name>    addr_mask(): the exact bytes, in place and into another buffer
 *   text/<name>    addr_text(): the exact string, with and without a length
 *   cut/<name>     addr_text() into a buffer one byte short, and just long enough
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/addr.h"
#include "rows.h"

#define NO_LEN (-1) /* addr_text() without a prefix length */

/* ::ffff:a.b.c.d as bytes */
#define MAPPED(a, b, c, d)                                                                         \
	{                                                                                          \
		[10] = 0xff, [11] = 0xff, [12] = (a), [13] = (b), [14] = (c), [15] = (d)           \
	}
#define DB8 0x20, 0x01, 0x0d, 0xb8 /* 2001:db8::/32 */

struct parse_row {
	const char *name;
	const char *in;
	int ret; /* 1 IPv4, 0 IPv6, -EINVAL */
	int is_mapped;
	__u8 want[SLUICE_ADDR_LEN];
};

static const struct parse_row parse_rows[] = {
	{ "parse/ipv4", "192.0.2.1", 1, 1, MAPPED(192, 0, 2, 1) },
	{ "parse/ipv4_zero", "0.0.0.0", 1, 1, MAPPED(0, 0, 0, 0) },
	{ "parse/ipv4_all_ones", "255.255.255.255", 1, 1, MAPPED(255, 255, 255, 255) },
	{ "parse/ipv6", "2001:db8::1", 0, 0, { DB8, [15] = 1 } },
	{ "parse/ipv6_any", "::", 0, 0, { 0 } },
	{ "parse/ipv6_next_to_mapped",
	  "::fffe:10.1.2.3",
	  0,
	  0,
	  { [10] = 0xff, [11] = 0xfe, 10, 1, 2, 3 } },
	{ "parse/mapped_written_as_ipv6", "::ffff:10.1.2.3", 0, 1, MAPPED(10, 1, 2, 3) },
	{ "parse/ipv4_octet_too_big", "10.0.0.256", -EINVAL, 0, { 0 } },
	{ "parse/ipv4_short", "10.0.0", -EINVAL, 0, { 0 } },
	{ "parse/ipv4_with_length", "10.0.0.0/8", -EINVAL, 0, { 0 } },
	{ "parse/ipv6_two_gaps", "1::2::3", -EINVAL, 0, { 0 } },
	{ "parse/empty", "", -EINVAL, 0, { 0 } },
	{ "parse/name", "localhost", -EINVAL, 0, { 0 } },
};

static void test_parse(void **state)
{
	const struct parse_row *t = *state;
	__u8 out[SLUICE_ADDR_LEN];

	assert_int_equal(addr_parse(t->in, out), t->ret);
	if (t->ret >= 0) {
		assert_memory_equal(out, t->want, sizeof(out));
		assert_int_equal(addr_is_v4mapped(out), t->is_mapped);
	}
}

struct mask_row {
	const char *name;
	__u8 in[SLUICE_ADDR_LEN];
	unsigned int bits;
	__u8 want[SLUICE_ADDR_LEN];
};

#define ONES                                                                                       \
	{                                                                                          \
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,      \
			0xff, 0xff, 0xff                                                           \
	}

static const struct mask_row mask_rows[] = {
	{ "mask/0_clears_all", ONES, 0, { 0 } },
	{ "mask/1", ONES, 1, { 0x80 } },
	{ "mask/7", ONES, 7, { 0xfe } },
	{ "mask/8", ONES, 8, { 0xff } },
	{ "mask/9", ONES, 9, { 0xff, 0x80 } },
	{ "mask/96_keeps_the_mapped_prefix", MAPPED(192, 0, 2, 1), 96, MAPPED(0, 0, 0, 0) },
	{ "mask/ipv4_24", MAPPED(192, 0, 2, 77), 96 + 24, MAPPED(192, 0, 2, 0) },
	{ "mask/ipv4_17", MAPPED(198, 51, 255, 77), 96 + 17, MAPPED(198, 51, 128, 0) },
	{ "mask/ipv6_33", { DB8, 0xff, 0xff, [15] = 1 }, 33, { DB8, 0x80 } },
	{ "mask/127",
	  ONES,
	  127,
	  { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xfe } },
	{ "mask/128_keeps_all", ONES, 128, ONES },
};

static void test_mask(void **state)
{
	const struct mask_row *t = *state;
	__u8 out[SLUICE_ADDR_LEN], in_place[SLUICE_ADDR_LEN];

	memset(out, 0xa5, sizeof(out)); /* an unwritten byte shows */
	addr_mask(t->in, t->bits, out);
	assert_memory_equal(out, t->want, sizeof(out));
	memcpy(in_place, t->in, sizeof(in_place));
	addr_mask(in_place, t->bits, in_place);
	assert_memory_equal(in_place, t->want, sizeof(in_place));
}

struct text_row {
	const char *name;
	__u8 addr[SLUICE_ADDR_LEN];
	int bits;
	const char *want;
};

static const struct text_row text_rows[] = {
	{ "text/ipv4_dotted", MAPPED(192, 0, 2, 1), NO_LEN, "192.0.2.1" },
	{ "text/ipv4_host", MAPPED(192, 0, 2, 1), 128, "192.0.2.1/32" },
	{ "text/ipv4_prefix", MAPPED(10, 0, 0, 0), 96 + 8, "10.0.0.0/8" },
	{ "text/ipv4_all", MAPPED(0, 0, 0, 0), 96, "0.0.0.0/0" },
	{ "text/mapped_shorter_than_96", MAPPED(0, 0, 0, 0), 95, "::ffff:0.0.0.0/95" },
	{ "text/ipv6", { DB8, [15] = 1 }, NO_LEN, "2001:db8::1" },
	{ "text/ipv6_prefix", { DB8 }, 32, "2001:db8::/32" },
	{ "text/ipv6_any", { 0 }, 0, "::/0" },
	{ "text/ipv6_host", { DB8, [15] = 1 }, 128, "2001:db8::1/128" },
	{ "text/longest",
	  { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xff, 0xff,
	    0xff, 0xff },
	  128,
	  "ffff:ffff:ffff:ffff:ffff:fffe:ffff:ffff/128" },
};

static void test_text(void **state)
{
	const struct text_row *t = *state;
	char buf[ADDR_TEXT_LEN];

	assert_int_equal(addr_text(buf, sizeof(buf), t->addr, t->bits), 0);
	assert_string_equal(buf, t->want);
}

/* The buffer's size decides: one byte short is -ENAMETOOLONG, exactly enough is fine. */
static void test_cut(void **state)
{
	const struct text_row *t = *state;
	size_t need = strlen(t->want) + 1;
	char buf[ADDR_TEXT_LEN];

	assert_int_equal(addr_text(buf, need - 1, t->addr, t->bits), -ENAMETOOLONG);
	assert_int_equal(addr_text(buf, need, t->addr, t->bits), 0);
	assert_string_equal(buf, t->want);
}

static const struct text_row cut_rows[] = {
	{ "cut/ipv4_prefix", MAPPED(10, 0, 0, 0), 96 + 8, "10.0.0.0/8" },
	{ "cut/ipv6", { DB8, [15] = 1 }, NO_LEN, "2001:db8::1" },
};

int main(void)
{
	struct CMUnitTest tests[ARRAY_SIZE(parse_rows) + ARRAY_SIZE(mask_rows) +
				ARRAY_SIZE(text_rows) + ARRAY_SIZE(cut_rows)];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_parse, parse_rows);
	SUITE_ADD_ROWS(&s, test_mask, mask_rows);
	SUITE_ADD_ROWS(&s, test_text, text_rows);
	SUITE_ADD_ROWS(&s, test_cut, cut_rows);
	return _cmocka_run_group_tests("addr", s.tests, s.n, NULL, NULL);
}
