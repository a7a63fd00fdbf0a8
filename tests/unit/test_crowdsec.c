/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of user/cli/crowdsec_stream.c: Go durations as the local API
 * writes them, answers of GET /v1/decisions/stream as crowdsec 1.4.6 sends
 * them (scopes, types, a bad value, an expired one, null lists), and the
 * set of decisions in force across a startup answer and deltas.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "base/addr.h"
#include "cli/crowdsec_stream.h"

#define ERR_LEN 256
#define NOW	1000000000000000000ULL /* a CLOCK_REALTIME instant, ns */
#define SEC	1000000000LL

static long long dur(const char *s)
{
	long long ns = 0x5a5a;

	assert_int_equal(cs_parse_duration(s, &ns), 0);
	return ns;
}

static void test_durations(void **state)
{
	long long ns;

	(void)state;
	assert_int_equal(dur("3h59m50.5s"), ((3 * 60 + 59) * 60 + 50) * SEC + SEC / 2);
	assert_int_equal(dur("4m59.281894633s"), (4 * 60 + 59) * SEC + 281894633);
	assert_int_equal(dur("2h59m59.281892258s"), ((2 * 60 + 59) * 60 + 59) * SEC + 281892258);
	assert_int_equal(dur("-50.115647ms"), -50115647);
	assert_int_equal(dur("0s"), 0);
	assert_int_equal(dur("0"), 0);
	assert_int_equal(dur("1.5us"), 1500);
	assert_int_equal(dur("1.5\xc2\xb5s"), 1500);
	assert_int_equal(dur("7ns"), 7);
	assert_int_equal(dur("168h"), 168 * 3600 * SEC);
	assert_int_equal(dur("1m1ms"), 60 * SEC + 1000000);
	assert_int_equal(cs_parse_duration("", &ns), -EINVAL);
	assert_int_equal(cs_parse_duration("5", &ns), -EINVAL);
	assert_int_equal(cs_parse_duration("5d", &ns), -EINVAL);
	assert_int_equal(cs_parse_duration("h", &ns), -EINVAL);
	assert_int_equal(cs_parse_duration("1h 2m", &ns), -EINVAL);
	assert_int_equal(cs_parse_duration("3000000h", &ns), -ERANGE);
}

static const char *key_text(char *buf, const struct sluice_addr_key *k)
{
	assert_int_equal(addr_text(buf, ADDR_TEXT_LEN, k->addr, (int)bans__key_bits(k)), 0);
	return buf;
}

/* A JSON list of decisions, each given as "scope type value duration", at @out. */
static size_t list_json(char *out, size_t len, const char *const *d)
{
	char scope[32], type[32], value[64], duration[32];
	size_t at = (size_t)snprintf(out, len, "[");

	for (; *d; d++) {
		assert_int_equal(sscanf(*d, "%31s %31s %63s %31s", scope, type, value, duration),
				 4);
		at += (size_t)snprintf(out + at, len - at,
				       "{\"duration\":\"%s\",\"id\":1,\"origin\":\"cscli\","
				       "\"scenario\":\"x\",\"scope\":\"%s\",\"type\":\"%s\","
				       "\"value\":\"%s\"}",
				       duration, scope, type, value);
		if (d[1])
			at += (size_t)snprintf(out + at, len - at, ",");
	}
	return at + (size_t)snprintf(out + at, len - at, "]");
}

/* An answer of @del and @add (NULL-ended; NULL: a null list), parsed into @a. */
static void parse(const char *const *del, const char *const *add, struct cs_answer *a)
{
	char body[4096], err[ERR_LEN] = "";
	size_t at = (size_t)snprintf(body, sizeof(body), "{\"deleted\":");

	at += del ? list_json(body + at, sizeof(body) - at, del)
		  : (size_t)snprintf(body + at, sizeof(body) - at, "null");
	at += (size_t)snprintf(body + at, sizeof(body) - at, ",\"new\":");
	at += add ? list_json(body + at, sizeof(body) - at, add)
		  : (size_t)snprintf(body + at, sizeof(body) - at, "null");
	snprintf(body + at, sizeof(body) - at, "}");
	assert_int_equal(cs_answer_parse(body, strlen(body), NOW, a, err, sizeof(err)), 0);
}

static void test_answer(void **state)
{
	static const char *const del[] = { "Ip ban 10.1.2.3 -50.1ms", "Country ban FR -1s", NULL };
	static const char *const add[] = {
		"Ip ban 192.0.2.7 4m59.5s", "Range ban 198.51.100.0/24 3h",
		"ip ban 2001:db8::1 1s",    "Ip captcha 192.0.2.8 1h",
		"As ban 64496 1h",	    "Ip ban 192.0.2.300 1h",
		"Range ban 10.0.0.1/8 1h",  "Ip ban 192.0.2.9 -1s",
		"Ip ban 192.0.2.10 1x",	    NULL,
	};
	char buf[ADDR_TEXT_LEN];
	struct cs_answer a;

	(void)state;
	parse(del, add, &a);
	assert_int_equal(a.n_add, 3);
	assert_string_equal(key_text(buf, &a.add[0].key), "192.0.2.7/32");
	assert_int_equal(a.add[0].expires_real_ns, NOW + (4 * 60 + 59) * SEC + SEC / 2);
	assert_string_equal(key_text(buf, &a.add[1].key), "198.51.100.0/24");
	assert_int_equal(a.add[1].expires_real_ns, NOW + 3 * 3600 * SEC);
	assert_string_equal(key_text(buf, &a.add[2].key), "2001:db8::1/128");
	assert_int_equal(a.n_del, 1);
	assert_string_equal(key_text(buf, &a.del[0]), "10.1.2.3/32");
	assert_int_equal(a.skipped[CS_SKIP_SCOPE], 2); /* Country (deleted), As */
	assert_int_equal(a.skipped[CS_SKIP_TYPE], 1);
	assert_int_equal(a.skipped[CS_SKIP_VALUE], 2); /* 192.0.2.300, host bits of 10.0.0.1/8 */
	assert_int_equal(a.skipped[CS_SKIP_EXPIRED], 1);
	assert_int_equal(a.skipped[CS_SKIP_DURATION], 1);
	assert_int_equal(a.skipped[CS_SKIP_WIDE], 0);
	assert_string_equal(cs_skip_name(CS_SKIP_SCOPE), "scope");
	cs_answer_free(&a);
}

static void test_empty_and_bad(void **state)
{
	static const char *const none[] = { NULL };
	char err[ERR_LEN] = "";
	struct cs_answer a;

	(void)state;
	parse(NULL, NULL, &a);
	assert_int_equal(a.n_add + a.n_del, 0);
	cs_answer_free(&a);
	parse(none, none, &a);
	assert_int_equal(a.n_add + a.n_del, 0);
	cs_answer_free(&a);
	assert_int_equal(cs_answer_parse("{}", 2, NOW, &a, err, sizeof(err)), 0);
	assert_int_equal(a.n_add + a.n_del, 0);
	cs_answer_free(&a);
	assert_int_equal(cs_answer_parse("{\"new\":[", 8, NOW, &a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not JSON"));
	assert_int_equal(cs_answer_parse("[]", 2, NOW, &a, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "not a JSON object");
	assert_int_equal(cs_answer_parse("{\"new\":3}", 9, NOW, &a, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "\"new\" is not a list");
}

/* @set as "prefix@seconds-from-NOW " text, in key order (the prefix length first). */
static const char *set_text(const struct cs_set *set, char *out, size_t len)
{
	char buf[ADDR_TEXT_LEN];
	size_t i, at = 0;

	out[0] = '\0';
	for (i = 0; i < set->n; i++)
		at += (size_t)snprintf(out + at, len - at, "%s@%llu ",
				       key_text(buf, &set->e[i].key),
				       (set->e[i].expires_real_ns - NOW) / SEC);
	return out;
}

/* Apply the answer of @del and @add to @set; the set's text. */
static const char *step(struct cs_set *set, int startup, const char *const *del,
			const char *const *add, char *text, size_t len)
{
	struct cs_answer a;

	parse(del, add, &a);
	assert_int_equal(cs_set_apply(set, &a, startup), 0);
	cs_answer_free(&a);
	return set_text(set, text, len);
}

static void test_set(void **state)
{
	static const char *const start[] = { "Ip ban 192.0.2.2 10s", "Ip ban 192.0.2.1 20s",
					     "Ip ban 192.0.2.1 5s", NULL };
	/* One deleted, one new, one renewed; a delete of an unknown key changes nothing. */
	static const char *const del1[] = { "Ip ban 192.0.2.2 -1s", "Ip ban 192.0.2.99 -1s", NULL };
	static const char *const add1[] = { "Range ban 192.0.2.128/25 30s", "Ip ban 192.0.2.1 40s",
					    NULL };
	/* Deleted and new again in one answer: new wins. */
	static const char *const del2[] = { "Ip ban 192.0.2.1 -1s", NULL };
	static const char *const add2[] = { "Ip ban 192.0.2.1 50s", NULL };
	static const char *const restart[] = { "Ip ban 192.0.2.3 60s", NULL };
	struct cs_set set = { 0 };
	char text[512];

	(void)state;
	assert_string_equal(step(&set, 1, NULL, start, text, sizeof(text)),
			    "192.0.2.1/32@20 192.0.2.2/32@10 ");
	assert_string_equal(step(&set, 0, del1, add1, text, sizeof(text)),
			    "192.0.2.128/25@30 192.0.2.1/32@40 ");
	assert_string_equal(step(&set, 0, del2, add2, text, sizeof(text)),
			    "192.0.2.128/25@30 192.0.2.1/32@50 ");
	assert_int_equal(cs_set_prune(&set, NOW + 30 * SEC), 1);
	assert_string_equal(set_text(&set, text, sizeof(text)), "192.0.2.1/32@50 ");
	/* A startup answer replaces the whole set, whatever it held. */
	assert_string_equal(step(&set, 1, del1, restart, text, sizeof(text)), "192.0.2.3/32@60 ");
	cs_set_free(&set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_answer),
		cmocka_unit_test(test_empty_and_bad),
		cmocka_unit_test(test_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
