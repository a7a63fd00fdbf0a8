/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of user/kernel/banlists.c without a map: list files (the
 * DROP layout, comments, duplicates, a bad line's file:line:field), the
 * state file (written and read back exactly, a bad line named), expiry
 * (prune, and the merge of a prefix held by several lists).
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/addr.h"
#include "kernel/banlists.h"

#define ERR_LEN 512

/* The text of key @k. */
static const char *key_text(char *buf, const struct sluice_addr_key *k)
{
	assert_int_equal(addr_text(buf, ADDR_TEXT_LEN, k->addr, (int)bans__key_bits(k)), 0);
	return buf;
}

/* Parse @text as a list file; its keys as text, one a line, into @out. */
static int read_text(const char *text, char *out, size_t len, char *err)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct sluice_addr_key *k = NULL;
	char buf[ADDR_TEXT_LEN];
	size_t i, n = 0, at = 0;
	int rc;

	assert_non_null(f);
	rc = banlist__read_file(f, "l.txt", &k, &n, err, ERR_LEN);
	fclose(f);
	out[0] = '\0';
	for (i = 0; !rc && i < n; i++)
		at += (size_t)snprintf(out + at, len - at, "%s ", key_text(buf, &k[i]));
	free(k);
	return rc;
}

static void test_drop_layout(void **state)
{
	char out[ERR_LEN], err[ERR_LEN];

	(void)state;
	assert_int_equal(read_text("; Spamhaus DROP List\n"
				   "10.1.0.0/16 ; SBL1\n"
				   "  # indented\n"
				   "\n"
				   "192.0.2.7;SBL2\n"
				   "2001:db8::/32\t# v6\n"
				   "192.0.2.7/32\n",
				   out, sizeof(out), err),
			 0);
	/* Sorted by key (its length first), the duplicate once. */
	assert_string_equal(out, "2001:db8::/32 10.1.0.0/16 192.0.2.7/32 ");
}

static void test_bad_line(void **state)
{
	char out[ERR_LEN], err[ERR_LEN];

	(void)state;
	assert_int_equal(
		read_text("10.1.0.0/16\n# c\n10.0.0.1/8 ; host bits\n", out, sizeof(out), err),
		-EINVAL);
	assert_string_equal(err, "l.txt:3: prefix: '10.0.0.1/8' has host bits set (did you mean "
				 "10.0.0.0/8?)");
}

static void test_empty(void **state)
{
	char out[ERR_LEN], err[ERR_LEN];

	(void)state;
	assert_int_equal(read_text("# nothing\n", out, sizeof(out), err), 0);
	assert_string_equal(out, "");
}

static void key_of(struct sluice_addr_key *k, const char *s)
{
	__u8 a[SLUICE_ADDR_LEN];
	int v4 = addr_parse(s, a);

	assert_true(v4 >= 0);
	bans__key(k, a, SLUICE_ADDR_BITS);
}

static void test_state_round_trip(void **state)
{
	char path[] = "/tmp/sluice-unit-banlists.XXXXXX", file[PATH_MAX], err[ERR_LEN];
	char buf[ADDR_TEXT_LEN];
	struct banlist_state s = { 0 }, back = { 0 };
	struct sluice_addr_key a, b;

	(void)state;
	assert_non_null(mkdtemp(path));
	assert_int_equal(banlist_state_path(file, path, "eth0"), 0);
	key_of(&a, "192.0.2.1");
	key_of(&b, "2001:db8::1");
	assert_int_equal(banlist_state__set(&s, "drop", &a, 0, "drop"), 0);
	assert_int_equal(banlist_state__set(&s, BANLIST_MANUAL, &a, 5000, "why not"), 0);
	assert_int_equal(banlist_state__set(&s, BANLIST_MANUAL, &b, 100, ""), 0);
	assert_int_equal(banlist_state__save(&s, file), 0);
	assert_int_equal(banlist_state__load(&back, file, err, sizeof(err)), 0);
	assert_int_equal(back.n, 3);
	/* By key (length, then the mapped bytes), then list: a in drop and manual, then b. */
	assert_string_equal(back.e[0].list, "drop");
	assert_string_equal(back.e[1].list, BANLIST_MANUAL);
	assert_string_equal(back.e[1].reason, "why not");
	assert_int_equal(back.e[1].expires_real_ns, 5000);
	assert_string_equal(key_text(buf, &back.e[2].key), "2001:db8::1/128");
	/* Expired at 200: b goes, a stays (drop holds it for ever). */
	assert_int_equal(banlist_state__prune(&back, 200), 1);
	assert_int_equal(banlist_state__count(&back, BANLIST_MANUAL), 1);
	/* unban: out of every list. */
	assert_int_equal(banlist_state__set(&back, NULL, &a, 0, NULL), 0);
	assert_int_equal(banlist_state__count(&back, "drop"), 0);
	banlist_state__settle(&back);
	assert_int_equal(back.n, 0);
	banlist_state__free(&s);
	banlist_state__free(&back);
	unlink(file);
	snprintf(file, sizeof(file), "%s/bans", path);
	rmdir(file);
	rmdir(path);
}

static void test_state_bad_line(void **state)
{
	char path[] = "/tmp/sluice-unit-banlists.XXXXXX", err[ERR_LEN], want[ERR_LEN + 64];
	struct banlist_state s;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_true(write(fd, "# sluice bans 1\ndrop 192.0.2.1/32 0 drop\nbad!name 10.0.0.0/8 0\n",
			  63) == 63);
	close(fd);
	assert_int_equal(banlist_state__load(&s, path, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: list: 'bad!name' is not a list name", path);
	assert_string_equal(err, want);
	unlink(path);
}

static void test_merge(void **state)
{
	struct banlist_state s = { 0 };
	struct sluice_addr_key a;
	struct sluice_ban b;

	(void)state;
	key_of(&a, "192.0.2.1");
	assert_int_equal(banlist_state__value(&s, &a, &b), 0);
	/* The latest expiry wins; never (0) beats any. */
	assert_int_equal(banlist_state__set(&s, "x", &a, UINT64_MAX / 2, "x"), 0);
	assert_int_equal(banlist_state__value(&s, &a, &b), 1);
	assert_true(b.expires_ns != 0);
	assert_int_equal(banlist_state__set(&s, "y", &a, 0, "y"), 0);
	assert_int_equal(banlist_state__value(&s, &a, &b), 1);
	assert_int_equal(b.expires_ns, 0);
	assert_string_equal(b.reason, "x");
	banlist_state__free(&s);
}

/*
 * Many single changes in no order, as the local API makes them: new
 * entries wait unsorted in the tail, unbanned ones dead in the sorted
 * part, and the state reads the same throughout and once settled.
 */
#define MANY	   (4 * BANLIST_TAIL_MAX + 7) /* several settles, and a tail left over */
#define MANY_STEP  7919			      /* a prime: MANY keys in no order */
#define MANY_SMALL 3			      /* every third key is also in list "b" */
#define MANY_UNBAN 5			      /* every fifth key is unbanned */

static void many_key(struct sluice_addr_key *k, unsigned int i)
{
	__u8 addr[SLUICE_ADDR_LEN] = { [10] = 0xff, [11] = 0xff, [12] = 10, [13] = 9 };

	addr[14] = (__u8)(i >> 8);
	addr[15] = (__u8)i;
	bans__key(k, addr, SLUICE_ADDR_BITS);
}

static void test_many_changes(void **state)
{
	struct banlist_state s = { 0 };
	struct sluice_addr_key k;
	struct sluice_ban b;
	unsigned int i, j;

	(void)state;
	for (j = 0; j < MANY; j++) {
		i = (j * MANY_STEP) % MANY;
		many_key(&k, i);
		assert_int_equal(banlist_state__set(&s, "a", &k, 0, "a"), 0);
		if (i % MANY_SMALL == 0)
			assert_int_equal(banlist_state__set(&s, "b", &k, 0, "b"), 0);
		if (j % MANY_UNBAN == 0) /* an entry of the tail or of the sorted part */
			assert_int_equal(banlist_state__set(&s, NULL, &k, 0, NULL), 0);
		if (j % MANY_UNBAN == 1) /* banned again: replaced, not doubled */
			assert_int_equal(banlist_state__set(&s, "a", &k, 0, "a2"), 0);
	}
	assert_true(s.tail > 0 && s.tail <= BANLIST_TAIL_MAX);
	for (j = 0; j < MANY; j++) {
		i = (j * MANY_STEP) % MANY;
		many_key(&k, i);
		assert_int_equal(banlist_state__value(&s, &k, &b), j % MANY_UNBAN != 0);
	}
	banlist_state__settle(&s);
	assert_int_equal(s.tail, 0);
	assert_int_equal(s.dead, 0);
	for (j = 1; j < s.n; j++)
		assert_true(banlist_entry_cmp(&s.e[j - 1], &s.e[j]) < 0);
	assert_int_equal(banlist_state__count(&s, "a"),
			 MANY - (MANY + MANY_UNBAN - 1) / MANY_UNBAN);
	for (j = 0, i = 0; j < MANY; j++)
		i += (j * MANY_STEP) % MANY % MANY_SMALL == 0 && j % MANY_UNBAN != 0;
	assert_int_equal(banlist_state__count(&s, "b"), i);
	for (j = 0; j < MANY; j++) {
		i = (j * MANY_STEP) % MANY;
		many_key(&k, i);
		assert_int_equal(banlist_state__value(&s, &k, &b), j % MANY_UNBAN != 0);
		if (j % MANY_UNBAN == 1)
			assert_string_equal(b.reason, "a2");
	}
	banlist_state__free(&s);
}

static void test_names(void **state)
{
	(void)state;
	assert_true(banlist_name_ok("spamhaus-drop_v4.1"));
	assert_false(banlist_name_ok(""));
	assert_false(banlist_name_ok("a b"));
	assert_false(banlist_name_ok("a/b"));
	assert_false(banlist_name_ok("0123456789012345678901234567890123"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drop_layout),    cmocka_unit_test(test_bad_line),
		cmocka_unit_test(test_empty),	       cmocka_unit_test(test_state_round_trip),
		cmocka_unit_test(test_state_bad_line), cmocka_unit_test(test_merge),
		cmocka_unit_test(test_names),	       cmocka_unit_test(test_many_changes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
