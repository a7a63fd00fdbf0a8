/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Unit tests of escalation's window (agent/escalate.h): the slot width,
 * what a window holds as it slides, exactly, and when a key's denials
 * reach `after`; and the policy file's `escalate:` (policy/escalate.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "policy_test.h"

#include <string.h>

#include "agent/escalate.h"
#include "base/clock.h"

#define SEC	 SLUICE_NSEC_PER_SEC
#define MSEC	 SLUICE_NSEC_PER_MSEC
#define T0	 (100 * SEC)  /* a monotonic time well after boot */
#define LOOK	 (250 * MSEC) /* ESCALATE_LOOK_NS, spelled out */
#define SLOT_10S 156250000ULL /* 10 s / 64 */

static void test_slot_width(void **state)
{
	(void)state;
	assert_int_equal(esc_slot_ns(10 * SEC), SLOT_10S);
	assert_int_equal(esc_slot_ns(SEC), 15625000);
	assert_int_equal(esc_slot_ns(SEC + 1), 15625001); /* rounded up: 64 slots hold it */
	assert_int_equal(esc_slot_ns(3600 * SEC), 56250000000ULL);
	assert_int_equal(LOOK, ESCALATE_LOOK_NS);
}

/* 100, 200 and 300 denials at 100 s, 105 s and 109.9 s, in a 10 s window. */
static void test_window_slides(void **state)
{
	struct esc_window w;
	__u64 W = 10 * SEC;

	(void)state;
	memset(&w, 0, sizeof(w));
	esc_window__add(&w, W, T0, 100); /* slot 640, which begins at 100 s exactly */
	esc_window__add(&w, W, T0 + 5 * SEC, 200);
	esc_window__add(&w, W, T0 + 9900 * MSEC, 300);
	assert_int_equal(esc_window__sum(&w, W, T0), 100);
	assert_int_equal(esc_window__sum(&w, W, T0 + 9900 * MSEC), 600);
	/* One nanosecond short of `within` after the slot of 100 s began: still in. */
	assert_int_equal(esc_window__sum(&w, W, T0 + W - 1), 600);
	/* At 110 s it began exactly `within` ago: out. */
	assert_int_equal(esc_window__sum(&w, W, T0 + W), 500);
	assert_int_equal(esc_window__sum(&w, W, T0 + 15 * SEC - 1), 500);
	assert_int_equal(esc_window__sum(&w, W, T0 + 15 * SEC), 300);
	/*
	 * 109.9 s is in slot 703, which began at 109.84375 s: counted until
	 * 119.84375 s, 55.625 ms short of `within` (less than a slot).
	 */
	assert_int_equal(esc_window__sum(&w, W, T0 + 19843750 * 1000ULL - 1), 300);
	assert_int_equal(esc_window__sum(&w, W, T0 + 19843750 * 1000ULL), 0);
	assert_int_equal(esc_window__sum(&w, W, T0 + 3600 * SEC), 0);
}

/* Adds in one slot add up; a slot's ring entry 64 slots on starts afresh. */
static void test_window_ring(void **state)
{
	struct esc_window w;
	__u64 W = 10 * SEC;

	(void)state;
	memset(&w, 0, sizeof(w));
	esc_window__add(&w, W, T0, 5);
	esc_window__add(&w, W, T0 + SLOT_10S - 1, 6); /* the same slot */
	assert_int_equal(esc_window__sum(&w, W, T0 + SLOT_10S - 1), 11);
	esc_window__add(&w, W, T0 + ESCALATE_SLOTS * SLOT_10S, 7); /* its ring entry again */
	assert_int_equal(esc_window__sum(&w, W, T0 + ESCALATE_SLOTS * SLOT_10S), 7);
	assert_int_equal(w.n[(T0 / SLOT_10S) % ESCALATE_SLOTS], 7);
}

/*
 * A key denied @per_look times at every look, 4 a second, after 1000
 * within 2 s: the look at which the count first reaches 1000, or -1
 * within 40 looks (10 s).
 */
static int looks_to_ban(__u64 per_look)
{
	struct esc_window w;
	__u64 W = 2 * SEC;
	int k;

	memset(&w, 0, sizeof(w));
	for (k = 0; k < 40; k++) {
		esc_window__add(&w, W, T0 + k * LOOK, per_look);
		if (esc_window__sum(&w, W, T0 + k * LOOK) >= 1000)
			return k;
	}
	return -1;
}

/*
 * 2 s holds 8 looks (the one exactly 2 s old is out): 125 a look reaches
 * 1000 at the eighth (look 7, 1.75 s after the first), 124 a look 992 and
 * never; 1000 at once, at the first.
 */
static void test_window_escalates(void **state)
{
	(void)state;
	assert_int_equal(looks_to_ban(125), 7);
	assert_int_equal(looks_to_ban(200), 4);
	assert_int_equal(looks_to_ban(124), -1);
	assert_int_equal(looks_to_ban(1000), 0);
	assert_int_equal(looks_to_ban(0), -1);
}

static const char ESCALATE_YAML[] =
	"policies:\n"
	"  - name: per-source\n"
	"    key: { ipv4_prefix: 24, ipv6_prefix: 64 }\n"
	"    rate: 100/s\n"
	"    burst: 20\n"
	"    escalate: { after: 1000, within: 10s, ban: 10m, list: rep-off }\n"
	"  - name: other\n"
	"    key: { ipv4_prefix: 32, ipv6_prefix: 64 }\n"
	"    rate: 50/s\n"
	"    burst: 20\n";

static void test_parse(void **state)
{
	struct policy_set *ps = parse_valid("escalate.yaml", ESCALATE_YAML);
	const struct policy_escalate *e = &ps->policies[0].escalate;

	(void)state;
	assert_int_equal(e->on, 1);
	assert_int_equal(e->after, 1000);
	assert_int_equal(e->within_ns, 10 * SEC);
	assert_int_equal(e->ban_ns, 600 * SEC);
	assert_string_equal(e->list, "rep-off");
	assert_int_equal(ps->policies[1].escalate.on, 0);
	policy_set__free(ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slot_width),  cmocka_unit_test(test_window_slides),
		cmocka_unit_test(test_window_ring), cmocka_unit_test(test_window_escalates),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
