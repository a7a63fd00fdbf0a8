// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Rate leases' allocator (budget/fairshare.c): exact max-min fair shares,
 * the grants of standard cases renewal by renewal, the bank's deposits,
 * takes, refill and lapse, and, over thousands of random sequences of
 * renewals, lost answers and expiries, that what the nodes' kernels
 * enforce, and what the store counts with the bank, never add up to more
 * than the key's rate and burst, and that renewals reach the max-min
 * fair shares (half of the sequences with the burst granted in whole
 * quanta).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "budget/fairshare.h"
#include "rows.h"

#define RATE	   1000ULL /* the key's rate, in the allocator's scale */
#define BURST	   100ULL
#define US_PER_SEC 1000000ULL
#define TTL_US	   (3 * US_PER_SEC) /* a lease's life */
#define T0_US	   US_PER_SEC	    /* the store's clock at the start */
#define MAX_NODES  8
#define ROWS_MAX   4 /* wants in a row of the fair-share table */

static const __u64 caps[FS_DIMS] = { [FS_RATE] = RATE, [FS_BURST] = BURST };

/* The store's leases of one key, its bank, and each node's last answer. */
struct key_state {
	struct fs_lease v[MAX_NODES];
	struct fs_bank bank;
	struct fs_answer a[MAX_NODES];
	size_t n;
};

/*
 * Node @i renews at @now, wanting @rate and @burst, reporting @level of
 * the burst it gives up; returns its new rate share.
 */
static __u64 renew_level(struct key_state *s, size_t i, __u64 rate, __u64 burst, int settled,
			 __u64 level, __u64 now)
{
	const struct fs_ask q = {
		.want = { rate, burst }, .ttl_us = TTL_US, .settled = settled, .level = level
	};

	fs_renew(caps, s->v, s->n, i, &s->bank, &q, now, &s->a[i]);
	assert_int_equal(s->a[i].exp_us, now + TTL_US);
	return s->a[i].grant[FS_RATE];
}

static __u64 renew(struct key_state *s, size_t i, __u64 rate, __u64 burst, int settled, __u64 now)
{
	return renew_level(s, i, rate, burst, settled, 0, now);
}

static void assert_grants(const struct key_state *s, const __u64 *rate, const __u64 *burst)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		assert_int_equal(s->a[i].grant[FS_RATE], rate[i]);
		assert_int_equal(s->a[i].grant[FS_BURST], burst[i]);
	}
}

struct fair_row {
	const char *name;
	__u64 cap;
	__u64 want[ROWS_MAX];
	size_t n;
	size_t me;
	unsigned expired; /* a bit per node: its lease has lapsed */
	__u64 fair;
};

static const struct fair_row fair_rows[] = {
	{ "alone", 1000, { 400 }, 1, 0, 0, 400 },
	{ "alone, above the capacity", 1000, { 5000 }, 1, 0, 0, 1000 },
	{ "equal", 1000, { 1000, 1000, 1000, 1000 }, 4, 2, 0, 250 },
	{ "one small: its want", 1000, { 100, 1000, 1000, 1000 }, 4, 0, 0, 100 },
	{ "one small: the others", 1000, { 100, 1000, 1000, 1000 }, 4, 3, 0, 300 },
	{ "two levels", 1000, { 100, 200, 1000, 1000 }, 4, 2, 0, 350 },
	{ "all satisfied", 1000, { 100, 200, 300 }, 3, 2, 0, 300 },
	{ "a zero want takes nothing", 1000, { 0, 1000 }, 2, 1, 0, 1000 },
	{ "rounded down", 10, { 10, 10, 10 }, 3, 0, 0, 3 },
	{ "a near tie", 10, { 3, 3, 4 }, 3, 2, 0, 4 },
	{ "an expired lease takes no part", 1000, { 1000, 1000, 1000 }, 3, 0, 1u << 1, 500 },
	{ "the asker's own lapsed lease", 1000, { 1000, 1000 }, 2, 0, 1u << 0, 500 },
};

static void test_fair(void **state)
{
	const struct fair_row *row = *state;
	struct fs_lease v[ROWS_MAX] = { 0 };
	size_t i;

	for (i = 0; i < row->n; i++) {
		v[i].want[FS_RATE] = row->want[i];
		v[i].exp_us = row->expired & (1u << i) ? T0_US : T0_US + 1;
	}
	assert_int_equal(fs_fair(row->cap, v, row->n, row->me, row->want[row->me], FS_RATE, T0_US),
			 row->fair);
}

/*
 * Four nodes wanting the whole key, from nothing. The first asks alone
 * and gets all of it; the others see it held. At its next renewal it is
 * lowered to a quarter, but may still enforce the whole key until it
 * confirms, settled, that it applied that answer: then the others get
 * their quarter. Three renewals each, in any one order.
 */
static void test_equal_demands(void **state)
{
	static const __u64 r1[] = { RATE, 0, 0, 0 }, b1[] = { BURST, 0, 0, 0 };
	static const __u64 r2[] = { RATE / 4, 0, 0, 0 }, b2[] = { BURST / 4, 0, 0, 0 };
	static const __u64 r3[] = { RATE / 4, RATE / 4, RATE / 4, RATE / 4 };
	static const __u64 b3[] = { BURST / 4, BURST / 4, BURST / 4, BURST / 4 };
	struct key_state s = { .n = 4 };
	size_t i;

	(void)state;
	for (i = 0; i < s.n; i++)
		renew(&s, i, RATE, BURST, 1, T0_US);
	assert_grants(&s, r1, b1);
	assert_int_equal(s.a[1].fair[FS_RATE], RATE / 2); /* two known, the first holds all */
	assert_int_equal(s.a[3].fair[FS_RATE], RATE / 4);
	for (i = 0; i < s.n; i++)
		renew(&s, i, RATE, BURST, 1, T0_US + 1);
	assert_grants(&s, r2, b2);
	assert_int_equal(fs_held(&s.v[0], FS_RATE, T0_US + 1), RATE); /* until it confirms */
	for (i = 0; i < s.n; i++)
		renew(&s, i, RATE, BURST, 1, T0_US + 2);
	assert_grants(&s, r3, b3);
	for (i = 0; i < s.n; i++)
		renew(&s, i, RATE, BURST, 1, T0_US + 3);
	assert_grants(&s, r3, b3);
}

/* One node wants a tenth of the key: it gets that, the other three the rest. */
static void test_one_small_demand(void **state)
{
	static const __u64 r[] = { 100, 300, 300, 300 }, b[] = { 10, 30, 30, 30 };
	struct key_state s = { .n = 4 };
	size_t i, k;

	(void)state;
	for (k = 0; k < 4; k++)
		for (i = 0; i < s.n; i++)
			renew(&s, i, i ? RATE : RATE / 10, i ? BURST : BURST / 10, 1, T0_US + k);
	assert_grants(&s, r, b);
	assert_int_equal(s.a[0].fair[FS_RATE], 100);
	assert_int_equal(s.a[1].fair[FS_RATE], 300);
}

#define QUANTUM	     20ULL     /* a burst quantum: BURST is 5 of them */
#define MANY_NODES   MAX_NODES /* more nodes than quanta */
#define FEW_NODES    3	       /* fewer */
#define WHOLE_ROUNDS 4

/*
 * The burst in whole quanta (fs_ask's quantum), @n nodes wanting the
 * whole key, settled renewals in rounds: each node's burst share is its
 * fair share rounded down to a quantum, at least one quantum while one
 * is free; the rate, without a quantum, is split as before. Returns the
 * nodes that hold a burst share in the end; checks every grant is whole
 * and the burst shares held never add up to more than BURST.
 */
static size_t whole_units(size_t n, __u64 fair_burst)
{
	const struct fs_ask q = { .want = { RATE, BURST },
				  .ttl_us = TTL_US,
				  .quantum = { [FS_BURST] = QUANTUM },
				  .settled = 1 };
	struct key_state s = { .n = n };
	size_t i, k, holding = 0;
	__u64 held;

	for (k = 0; k < WHOLE_ROUNDS; k++) {
		for (i = 0; i < n; i++) {
			fs_renew(caps, s.v, s.n, i, &s.bank, &q, T0_US + k, &s.a[i]);
			assert_int_equal(s.a[i].grant[FS_BURST] % QUANTUM, 0);
		}
		for (held = 0, i = 0; i < n; i++)
			held += fs_held(&s.v[i], FS_BURST, T0_US + k);
		assert_true(held <= BURST);
	}
	for (i = 0; i < n; i++) {
		assert_int_equal(s.a[i].grant[FS_RATE], RATE / n);
		assert_int_equal(s.a[i].fair[FS_BURST], fair_burst);
		assert_true(s.a[i].grant[FS_BURST] == fair_burst || !s.a[i].grant[FS_BURST]);
		holding += s.a[i].grant[FS_BURST] != 0;
	}
	return holding;
}

/*
 * More nodes than burst quanta: an even split (BURST / 8 = 12) is below
 * a quantum, which a kernel spending whole units never reaches, so no
 * node would admit; in whole quanta the first BURST / QUANTUM = 5 nodes
 * to ask hold one each, the other 3 none. Fewer nodes than quanta: each
 * holds its fair share rounded down (33 → 20).
 */
static void test_whole_units(void **state)
{
	(void)state;
	assert_int_equal(whole_units(MANY_NODES, QUANTUM), BURST / QUANTUM);
	assert_int_equal(whole_units(FEW_NODES, QUANTUM), FEW_NODES);
}

struct move_row {
	const char *name;
	__u64 a_after; /* what A wants once the demand moved */
	int b_first;   /* B renews before A has reported its lower demand */
	__u64 b_first_grant, b_fair;
	__u64 a_rate, b_rate; /* the shares in the end */
};

/*
 * A holds the whole key; then its demand moves to B. A renews on the drop,
 * settled: it promises to enforce no more than it now wants, so what it
 * gives up is free at once, and B has its fair share at its second
 * renewal at the latest (at its first, when A renewed before it).
 */
static const struct move_row move_rows[] = {
	{ "all of it, B first", 0, 1, 0, RATE / 2, 0, RATE },
	{ "all of it, A first", 0, 0, RATE, RATE, 0, RATE },
	{ "most of it, B first", 200, 1, 0, RATE / 2, 200, RATE - 200 },
	{ "most of it, A first", 200, 0, RATE - 200, RATE - 200, 200, RATE - 200 },
};

static void test_demand_moves(void **state)
{
	const struct move_row *row = *state;
	struct key_state s = { .n = 2 };
	__u64 t = T0_US, a_burst = row->a_after * BURST / RATE;

	assert_int_equal(renew(&s, 0, RATE, BURST, 1, t), RATE);
	t += US_PER_SEC;
	if (row->b_first) {
		assert_int_equal(renew(&s, 1, RATE, BURST, 1, t), row->b_first_grant);
		assert_int_equal(s.a[1].fair[FS_RATE], row->b_fair);
		assert_int_equal(renew(&s, 0, row->a_after, a_burst, 1, t + 1), row->a_rate);
		assert_int_equal(renew(&s, 1, RATE, BURST, 1, t + 2), row->b_rate);
	} else {
		assert_int_equal(renew(&s, 0, row->a_after, a_burst, 1, t), row->a_rate);
		assert_int_equal(renew(&s, 1, RATE, BURST, 1, t + 1), row->b_first_grant);
		assert_int_equal(row->b_first_grant, row->b_rate);
	}
	assert_int_equal(s.a[1].fair[FS_RATE], row->b_rate);
	assert_int_equal(s.a[1].grant[FS_BURST], BURST - a_burst);
}

/*
 * A and B share the key; B dies. Until B's lease expires A keeps its half;
 * from then on, the whole key.
 */
static void test_dead_node(void **state)
{
	struct key_state s = { .n = 2 };
	__u64 b_exp;
	int k;

	(void)state;
	for (k = 0; k < 3; k++) {
		renew(&s, 0, RATE, BURST, 1, T0_US + 2 * k);
		renew(&s, 1, RATE, BURST, 1, T0_US + 2 * k + 1);
	}
	assert_int_equal(s.a[0].grant[FS_RATE], RATE / 2);
	assert_int_equal(s.a[1].grant[FS_RATE], RATE / 2);
	b_exp = s.a[1].exp_us;
	assert_int_equal(renew(&s, 0, RATE, BURST, 1, b_exp - 1), RATE / 2);
	assert_int_equal(s.a[0].grant[FS_BURST], BURST / 2);
	assert_int_equal(renew(&s, 0, RATE, BURST, 1, b_exp), RATE);
	assert_int_equal(s.a[0].grant[FS_BURST], BURST);
}

/*
 * A holds the key; B joins. A's renewal lowers it to half, but the answer
 * is lost: A's kernel may still enforce the whole key until that lease
 * expires, so B gets nothing until then, or until A, having applied a
 * later answer, renews settled.
 */
static void test_lost_answer(void **state)
{
	struct key_state s = { .n = 2 };
	__u64 a_exp;

	(void)state;
	renew(&s, 0, RATE, BURST, 1, T0_US);
	a_exp = s.a[0].exp_us;
	assert_int_equal(renew(&s, 1, RATE, BURST, 1, T0_US + 1), 0);
	assert_int_equal(renew(&s, 0, RATE, BURST, 1, T0_US + 2), RATE / 2); /* lost */
	assert_int_equal(renew(&s, 1, RATE, BURST, 1, T0_US + 3), 0);
	assert_int_equal(renew(&s, 1, RATE, BURST, 1, a_exp - 1), 0);
	assert_int_equal(renew(&s, 1, RATE, BURST, 1, a_exp), RATE / 2);

	/* Again, and this time A confirms before its old lease expires. */
	memset(&s, 0, sizeof(s));
	s.n = 2;
	renew(&s, 0, RATE, BURST, 1, T0_US);
	renew(&s, 1, RATE, BURST, 1, T0_US + 1);
	renew(&s, 0, RATE, BURST, 1, T0_US + 2);			     /* lost */
	assert_int_equal(renew(&s, 0, RATE, BURST, 0, T0_US + 3), RATE / 2); /* applied */
	assert_int_equal(renew(&s, 1, RATE, BURST, 1, T0_US + 4), 0);
	assert_int_equal(renew(&s, 0, RATE, BURST, 1, T0_US + 5), RATE / 2);
	assert_int_equal(renew(&s, 1, RATE, BURST, 1, T0_US + 6), RATE / 2);
}

/*
 * A renewal for less time than the lease it replaces (a shorter sync
 * interval after a reload): the node's kernel may enforce the old answer
 * until that expires, so the store counts it until then, not until the
 * new lease's end.
 */
static void test_shorter_ttl(void **state)
{
	const struct fs_ask shorter = { .want = { RATE, BURST },
					.ttl_us = TTL_US / 3,
					.settled = 1 };
	struct key_state s = { .n = 2 };
	struct fs_answer a;

	(void)state;
	renew(&s, 0, RATE, BURST, 1, T0_US);
	fs_renew(caps, s.v, s.n, 0, &s.bank, &shorter, T0_US + 1, &a);
	assert_int_equal(a.grant[FS_RATE], RATE);
	assert_int_equal(a.exp_us, T0_US + 1 + TTL_US / 3);
	assert_int_equal(fs_held(&s.v[0], FS_RATE, a.exp_us), RATE);
	assert_int_equal(renew(&s, 1, RATE, BURST, 1, a.exp_us), 0);
	assert_int_equal(fs_held(&s.v[0], FS_RATE, T0_US + TTL_US), 0);
	assert_int_equal(renew(&s, 1, RATE, BURST, 1, T0_US + TTL_US), RATE);
}

#define LEVEL	    60 /* of BURST, what a kernel had saved when it handed back */
#define LEVEL_HALF  30 /* ... of half the burst */
#define LEVEL_SMALL 5
#define THIRD_R	    (RATE / 3)
#define THIRD	    (BURST / 3)
#define LEVEL_BIG   (THIRD + 7) /* above a third: more than handing back a third frees */

static void assert_bank_is(const struct fs_bank *b, __u64 rate, __u64 burst, __u64 level,
			   __u64 at_us, __u64 exp_us)
{
	assert_int_equal(b->rate, rate);
	assert_int_equal(b->burst, burst);
	assert_int_equal(b->level, level);
	assert_int_equal(b->at_us, at_us);
	assert_int_equal(b->exp_us, exp_us);
}

static void assert_no_bank(const struct fs_bank *b)
{
	assert_bank_is(b, 0, 0, 0, 0, 0);
}

/* Settled renewals of @s's nodes, all wanting the whole key, until each holds its fair share. */
static void converge_even(struct key_state *s, __u64 *t)
{
	size_t i, k;

	for (k = 0; k < 4; k++, (*t)++)
		for (i = 0; i < s->n; i++)
			renew(s, i, RATE, BURST, 1, *t);
	for (i = 0; i < s->n; i++) {
		assert_int_equal(s->a[i].grant[FS_RATE], RATE / s->n);
		assert_int_equal(s->a[i].grant[FS_BURST], BURST / s->n);
		assert_no_bank(&s->a[i].taken);
	}
}

/*
 * A holds the whole key and hands it back, settled, its kernel having
 * saved LEVEL: the bank holds A's rate and burst with that level, saved
 * at the hand-back, for a lease's life, and A holds nothing. B raises
 * both shares: it gets the whole key and takes the whole bank.
 */
static void test_bank_hand_back(void **state)
{
	struct key_state s = { .n = 2 };
	__u64 t = T0_US, back;

	(void)state;
	renew(&s, 0, RATE, BURST, 1, t);
	back = ++t;
	assert_int_equal(renew_level(&s, 0, 0, 0, 1, LEVEL, back), 0);
	assert_int_equal(s.a[0].grant[FS_BURST], 0);
	assert_no_bank(&s.a[0].taken);
	assert_int_equal(fs_held(&s.v[0], FS_RATE, back), 0);
	assert_int_equal(fs_held(&s.v[0], FS_BURST, back), 0);
	assert_bank_is(&s.bank, RATE, BURST, LEVEL, back, back + TTL_US);
	assert_int_equal(renew(&s, 1, RATE, BURST, 1, ++t), RATE);
	assert_int_equal(s.a[1].grant[FS_BURST], BURST);
	assert_bank_is(&s.a[1].taken, RATE, BURST, LEVEL, back, back + TTL_US);
	assert_no_bank(&s.bank);
}

/*
 * A and B hold half each; A hands back. B renewing for the same shares
 * leaves the bank as it is; B raising its rate alone, its burst share
 * unchanged, takes the whole bank, burst and level included.
 */
static void test_bank_rate_raise(void **state)
{
	struct key_state s = { .n = 2 };
	__u64 t = T0_US, back;

	(void)state;
	converge_even(&s, &t);
	back = t;
	renew_level(&s, 0, 0, 0, 1, LEVEL_HALF, back);
	assert_bank_is(&s.bank, RATE / 2, BURST / 2, LEVEL_HALF, back, back + TTL_US);
	assert_int_equal(renew(&s, 1, RATE / 2, BURST / 2, 1, ++t), RATE / 2);
	assert_no_bank(&s.a[1].taken);
	assert_bank_is(&s.bank, RATE / 2, BURST / 2, LEVEL_HALF, back, back + TTL_US);
	assert_int_equal(renew(&s, 1, RATE, BURST / 2, 1, ++t), RATE);
	assert_int_equal(s.a[1].grant[FS_BURST], BURST / 2);
	assert_bank_is(&s.a[1].taken, RATE / 2, BURST / 2, LEVEL_HALF, back, back + TTL_US);
	assert_no_bank(&s.bank);
}

/*
 * Three nodes hold a third each. A hands back with a level above its
 * third: the bank holds A's shares and a level of the third it frees.
 * B hands back with LEVEL_SMALL: the two deposits add up, rates, bursts
 * and levels, saved at B's call and living a lease from it. C raises:
 * it takes both.
 */
static void test_bank_merge(void **state)
{
	struct key_state s = { .n = 3 };
	__u64 t = T0_US, a_back, b_back;

	(void)state;
	converge_even(&s, &t);
	a_back = t;
	renew_level(&s, 0, 0, 0, 1, LEVEL_BIG, a_back);
	assert_bank_is(&s.bank, THIRD_R, THIRD, THIRD, a_back, a_back + TTL_US);
	b_back = ++t;
	renew_level(&s, 1, 0, 0, 1, LEVEL_SMALL, b_back);
	assert_no_bank(&s.a[1].taken);
	assert_bank_is(&s.bank, 2 * THIRD_R, 2 * THIRD, THIRD + LEVEL_SMALL, b_back,
		       b_back + TTL_US);
	assert_int_equal(renew(&s, 2, RATE, BURST, 1, ++t), RATE);
	assert_int_equal(s.a[2].grant[FS_BURST], BURST);
	assert_bank_is(&s.a[2].taken, 2 * THIRD_R, 2 * THIRD, THIRD + LEVEL_SMALL, b_back,
		       b_back + TTL_US);
	assert_no_bank(&s.bank);
}

/*
 * A lowering without a level banks nothing: the capacity it frees is
 * the others' at once, as before there was a bank; nor does a level with
 * a lowered rate alone, which frees no burst.
 */
static void test_bank_no_level(void **state)
{
	struct key_state s = { .n = 2 };

	(void)state;
	renew(&s, 0, RATE, BURST, 1, T0_US);
	assert_int_equal(renew(&s, 0, RATE / 2, BURST / 2, 1, T0_US + 1), RATE / 2);
	assert_int_equal(fs_held(&s.v[0], FS_BURST, T0_US + 1), BURST / 2);
	assert_no_bank(&s.bank);
	assert_int_equal(renew_level(&s, 0, RATE / 4, BURST / 2, 1, LEVEL, T0_US + 2), RATE / 4);
	assert_int_equal(fs_held(&s.v[0], FS_RATE, T0_US + 2), RATE / 4);
	assert_no_bank(&s.bank);
	assert_int_equal(renew(&s, 1, RATE, BURST, 1, T0_US + 3), RATE - RATE / 4);
	assert_int_equal(s.a[1].grant[FS_BURST], BURST / 2);
	assert_no_bank(&s.a[1].taken);
}

/*
 * An unsettled hand-back banks nothing: the node's kernel may still
 * enforce its old share (its answer may have been lost), so the call
 * frees nothing.
 */
static void test_bank_unsettled(void **state)
{
	struct key_state s = { .n = 2 };

	(void)state;
	renew(&s, 0, RATE, BURST, 1, T0_US);
	renew_level(&s, 0, 0, 0, 0, LEVEL, T0_US + 1);
	assert_int_equal(s.a[0].grant[FS_BURST], 0);
	assert_int_equal(fs_held(&s.v[0], FS_BURST, T0_US + 1), BURST);
	assert_no_bank(&s.bank);
	assert_int_equal(renew(&s, 1, RATE, BURST, 1, T0_US + 2), 0);
	assert_no_bank(&s.a[1].taken);
}

/*
 * A bank lapses with the lease of the call that made it. A hands its
 * half back; B renews for its half, keeping its lease past the bank's.
 * A raise takes the bank the microsecond before it lapses, nothing at
 * its expiry. B's own hand-back then banks its half alone, not on top
 * of the lapsed one; and once that has lapsed too, a call that neither
 * raises nor banks leaves the bank empty.
 */
static void test_bank_expired(void **state)
{
	struct key_state s = { .n = 2 }, copy;
	__u64 t = T0_US, back, exp;

	(void)state;
	converge_even(&s, &t);
	back = t;
	exp = back + TTL_US;
	renew_level(&s, 0, 0, 0, 1, LEVEL_HALF, back);
	renew(&s, 1, RATE / 2, BURST / 2, 1, back + 1);
	assert_bank_is(&s.bank, RATE / 2, BURST / 2, LEVEL_HALF, back, exp);
	copy = s;
	assert_int_equal(renew(&copy, 1, RATE, BURST, 1, exp - 1), RATE);
	assert_bank_is(&copy.a[1].taken, RATE / 2, BURST / 2, LEVEL_HALF, back, exp);
	copy = s;
	assert_int_equal(renew(&copy, 1, RATE, BURST, 1, exp), RATE);
	assert_no_bank(&copy.a[1].taken);
	assert_no_bank(&copy.bank);
	renew_level(&s, 1, 0, 0, 1, LEVEL_HALF, exp);
	assert_bank_is(&s.bank, RATE / 2, BURST / 2, LEVEL_HALF, exp, exp + TTL_US);
	renew(&s, 0, 0, 0, 1, exp + TTL_US);
	assert_no_bank(&s.a[0].taken);
	assert_no_bank(&s.bank);
}

#define BANK_PERIOD_US 1000 /* fs_bank_level()'s rate period */
#define BANK_AT_US     5000
#define BANK_BIG_RATE  (1ULL << 50) /* × an elapsed 2^20 µs: above 2^64 */

/*
 * A bank's level refills at its rate a period, from its at_us, up to its
 * burst: none before at_us, nor with a period of 0; and a product of the
 * rate and the time above 2^64 is exact.
 */
static void test_bank_level(void **state)
{
	const struct fs_bank b = {
		.rate = 100, .burst = 50, .level = 10, .at_us = BANK_AT_US, .exp_us = 1
	};
	const struct fs_bank big = { .rate = BANK_BIG_RATE, .burst = ~0ULL, .at_us = 0 };

	(void)state;
	assert_int_equal(fs_bank_level(&b, BANK_AT_US, BANK_PERIOD_US), 10);
	assert_int_equal(fs_bank_level(&b, BANK_AT_US + 100, BANK_PERIOD_US), 20);
	assert_int_equal(fs_bank_level(&b, BANK_AT_US + 109, BANK_PERIOD_US), 20); /* floored */
	assert_int_equal(fs_bank_level(&b, BANK_AT_US + 400, BANK_PERIOD_US), 50);
	assert_int_equal(fs_bank_level(&b, BANK_AT_US + 401, BANK_PERIOD_US), 50);
	assert_int_equal(fs_bank_level(&b, 10 * BANK_AT_US, BANK_PERIOD_US), 50);
	assert_int_equal(fs_bank_level(&b, BANK_AT_US - 1, BANK_PERIOD_US), 10);
	assert_int_equal(fs_bank_level(&b, 0, BANK_PERIOD_US), 10);
	assert_int_equal(fs_bank_level(&b, BANK_AT_US + 400, 0), 10);
	assert_int_equal(fs_bank_level(&big, 1ULL << 20, 1ULL << 10), BANK_BIG_RATE << 10);
}

/* The randomized check: a seeded xorshift64, so a failure reproduces. */
#define SEED	    0x5eed1e55ULL
#define SEQUENCES   4000
#define STEPS	    200
#define STEP_US_MAX (TTL_US / 2)
#define FAIL_ONE_IN 8 /* a call that fails before the store runs it */
#define LOST_ONE_IN 6 /* an answer lost after the store ran the call */
/*
 * Rounds of renewals by every node, answered, that reach the fair shares
 * from any state: the first reports every want (a node whose last answer
 * was lost renews unsettled); the second gives each at most its fair
 * share, a node lowered keeping what it may still enforce; the third
 * confirms (settled) and frees that; the fourth grants the fair shares.
 */
#define CONVERGE_ROUNDS 4
#define RAND_CAP_MAX	5000

static __u64 rnd_state;

static __u64 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static __u64 rnd_below(__u64 n)
{
	return rnd() % n;
}

/* What one node's kernel enforces, and its call in flight. */
struct node_sim {
	__u64 v[FS_DIMS], exp_us;
	int pending;  /* a call the store ran; its answer travels */
	int answered; /* the answer to its last call arrived */
	__u64 want[FS_DIMS];
};

struct fleet_sim {
	__u64 cap[FS_DIMS];
	__u64 quantum; /* the burst's (fs_ask's quantum), or 0 */
	struct key_state s;
	struct node_sim k[MAX_NODES];
	__u64 now;
	size_t takes, deposits; /* calls that took the bank, that banked */
};

/* The max-min fair share by the textbook: wants sorted, each gets the even split or its want. */
static __u64 reference_fair(const struct fleet_sim *f, size_t me, int d)
{
	__u64 w[MAX_NODES], rem = f->cap[d], share, t;
	size_t i, j, n = 0, mine = 0;

	for (i = 0; i < f->s.n; i++) {
		if (i != me && f->s.v[i].exp_us <= f->now)
			continue;
		w[n] = f->s.v[i].want[d]; /* as reported, at most the capacity */
		if (i == me)
			mine = w[n];
		n++;
	}
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && w[j - 1] > w[j]; j--) {
			t = w[j];
			w[j] = w[j - 1];
			w[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		share = rem / (n - i);
		if (w[i] > share)
			return mine < share ? mine : share;
		rem -= w[i];
	}
	return mine;
}

/* The fair share in whole quanta, as fs_renew() rounds it: down, or one for a node wanting one. */
static __u64 expected_fair(const struct fleet_sim *f, size_t me, int d)
{
	__u64 fair = reference_fair(f, me, d), q = d == FS_BURST ? f->quantum : 0;

	if (q <= 1)
		return fair;
	fair -= fair % q;
	return fair || f->s.v[me].want[d] < q ? fair : q;
}

/*
 * The invariant: no kernel enforces more than the store counts it for,
 * and the store counts no more than the capacity, in each dimension,
 * the live bank's rate and burst with the shares; and the bank's level
 * is at most its burst.
 */
static void check_invariant(const struct fleet_sim *f)
{
	__u64 enforced, held;
	size_t i;
	int d;

	for (d = 0; d < FS_DIMS; d++) {
		enforced = held = 0;
		for (i = 0; i < f->s.n; i++) {
			__u64 k = f->k[i].exp_us > f->now ? f->k[i].v[d] : 0;
			__u64 h = fs_held(&f->s.v[i], d, f->now);

			assert_true(k <= h);
			if (d == FS_BURST && f->quantum)
				assert_int_equal(f->s.v[i].grant[d] % f->quantum, 0);
			if (f->s.v[i].exp_us > f->now)
				assert_true(f->s.v[i].grant[d] <= f->s.v[i].want[d]);
			enforced += k;
			held += h;
		}
		if (f->s.bank.exp_us > f->now)
			held += d == FS_RATE ? f->s.bank.rate : f->s.bank.burst;
		assert_true(enforced <= f->cap[d]);
		assert_true(held <= f->cap[d]);
	}
	assert_true(f->s.bank.level <= f->s.bank.burst);
}

/*
 * Node @i's call, for a lease of a random life: settled when its last
 * answer arrived (it lowers to its want first); one that lowers its
 * burst reports a random level of what its kernel enforced.
 */
static void node_call(struct fleet_sim *f, size_t i, int fail)
{
	struct node_sim *k = &f->k[i];
	struct fs_ask q = { .ttl_us = 1 + rnd_below(TTL_US),
			    .quantum = { [FS_BURST] = f->quantum },
			    .settled = k->answered };
	__u64 burst = k->exp_us > f->now ? k->v[FS_BURST] : 0;
	const struct fs_bank live = f->s.bank.exp_us > f->now ? f->s.bank : (struct fs_bank){ 0 };
	const struct fs_bank *taken = &f->s.a[i].taken;
	int d;

	if (k->want[FS_BURST] < burst)
		q.level = rnd_below(burst + 1);
	for (d = 0; d < FS_DIMS; d++) {
		q.want[d] = k->want[d];
		if (q.settled && k->v[d] > k->want[d])
			k->v[d] = k->want[d]; /* its promise: lowered before it asks */
	}
	k->answered = 0;
	if (fail)
		return; /* the store never ran it */
	fs_renew(f->cap, f->s.v, f->s.n, i, &f->s.bank, &q, f->now, &f->s.a[i]);
	for (d = 0; d < FS_DIMS; d++)
		assert_int_equal(f->s.a[i].fair[d], expected_fair(f, i, d));
	if (taken->exp_us) { /* the whole live bank, and none left */
		assert_memory_equal(taken, &live, sizeof(live));
		assert_int_equal(f->s.bank.exp_us, 0);
		f->takes++;
	} else {
		assert_no_bank(taken);
		f->deposits += memcmp(&f->s.bank, &live, sizeof(live)) != 0;
	}
	k->pending = 1;
}

static void node_answer(struct fleet_sim *f, size_t i, int lost)
{
	struct node_sim *k = &f->k[i];
	int d;

	k->pending = 0;
	if (lost)
		return;
	for (d = 0; d < FS_DIMS; d++)
		k->v[d] = f->s.a[i].grant[d];
	k->exp_us = f->s.a[i].exp_us;
	k->answered = 1;
}

static void random_wants(struct fleet_sim *f, size_t i)
{
	int d;

	for (d = 0; d < FS_DIMS; d++)
		f->k[i].want[d] = rnd_below(4) ? rnd_below(f->cap[d] + f->cap[d] / 2) : f->cap[d];
}

static void random_step(struct fleet_sim *f)
{
	size_t i = rnd_below(f->s.n);

	switch (rnd_below(3)) {
	case 0: f->now += rnd_below(STEP_US_MAX); break;
	case 1:
		if (f->k[i].pending)
			break;
		if (rnd_below(2))
			random_wants(f, i);
		node_call(f, i, !rnd_below(FAIL_ONE_IN));
		break;
	default:
		if (f->k[i].pending)
			node_answer(f, i, !rnd_below(LOST_ONE_IN));
		break;
	}
	check_invariant(f);
}

/*
 * Node @i holds its fair share of @d; in whole quanta, or none where it
 * is the one quantum more nodes than quanta want and the others hold
 * all that is whole.
 */
static int converged(const struct fleet_sim *f, size_t i, int d)
{
	__u64 fair = expected_fair(f, i, d), g = f->s.a[i].grant[d], others = 0;
	size_t j;

	if (g == fair)
		return 1;
	for (j = 0; j < f->s.n; j++)
		others += j == i ? 0 : fs_held(&f->s.v[j], d, f->now);
	return d == FS_BURST && !g && fair == f->quantum && others + f->quantum > f->cap[d];
}

/* Rounds of settled renewals, answered, in random orders: the grants become the fair shares. */
static size_t converge(struct fleet_sim *f)
{
	size_t order[MAX_NODES] = { 0 }, i, j, t, round;
	int d, done = 0;

	for (i = 0; i < f->s.n; i++)
		if (f->k[i].pending)
			node_answer(f, i, 0);
	for (round = 1; round <= CONVERGE_ROUNDS + 1 && !done; round++) {
		for (i = 0; i < f->s.n; i++)
			order[i] = i;
		for (i = f->s.n; i-- > 1;) {
			j = rnd_below(i + 1);
			t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i < f->s.n; i++) {
			node_call(f, order[i], 0);
			node_answer(f, order[i], 0);
			check_invariant(f);
		}
		done = 1;
		for (i = 0; i < f->s.n; i++)
			for (d = 0; d < FS_DIMS; d++)
				done &= converged(f, i, d);
	}
	assert_true(done);
	return round - 1;
}

static void test_random_sequences(void **state)
{
	size_t seq, step, rounds, worst = 0, hist[CONVERGE_ROUNDS + 2] = { 0 };
	size_t takes = 0, deposits = 0;
	struct fleet_sim f;
	size_t i;

	(void)state;
	rnd_state = SEED;
	for (seq = 0; seq < SEQUENCES; seq++) {
		memset(&f, 0, sizeof(f));
		f.cap[FS_RATE] = 1 + rnd_below(RAND_CAP_MAX);
		f.cap[FS_BURST] = 1 + rnd_below(RAND_CAP_MAX);
		f.s.n = 1 + rnd_below(MAX_NODES);
		f.quantum = seq % 2 ? 1 + rnd_below(f.cap[FS_BURST]) : 0;
		f.now = T0_US;
		for (i = 0; i < f.s.n; i++)
			random_wants(&f, i);
		for (step = 0; step < STEPS; step++)
			random_step(&f);
		rounds = converge(&f);
		takes += f.takes;
		deposits += f.deposits;
		hist[rounds]++;
		if (rounds > worst)
			worst = rounds;
	}
	print_message("%d sequences of %d steps: fair shares after 1/2/3/4 rounds: "
		      "%zu/%zu/%zu/%zu; %zu calls banked, %zu took the bank\n",
		      SEQUENCES, STEPS, hist[1], hist[2], hist[3], hist[4], deposits, takes);
	assert_true(worst <= CONVERGE_ROUNDS);
	assert_true(deposits > 0);
	assert_true(takes > 0);
}

int main(void)
{
	struct CMUnitTest tests[15 + ARRAY_SIZE(fair_rows) + ARRAY_SIZE(move_rows)];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_fair, fair_rows);
	SUITE_ADD(&s, test_equal_demands);
	SUITE_ADD(&s, test_one_small_demand);
	SUITE_ADD(&s, test_whole_units);
	SUITE_ADD_ROWS(&s, test_demand_moves, move_rows);
	SUITE_ADD(&s, test_dead_node);
	SUITE_ADD(&s, test_lost_answer);
	SUITE_ADD(&s, test_shorter_ttl);
	SUITE_ADD(&s, test_bank_hand_back);
	SUITE_ADD(&s, test_bank_rate_raise);
	SUITE_ADD(&s, test_bank_merge);
	SUITE_ADD(&s, test_bank_no_level);
	SUITE_ADD(&s, test_bank_unsettled);
	SUITE_ADD(&s, test_bank_expired);
	SUITE_ADD(&s, test_bank_level);
	SUITE_ADD(&s, test_random_sequences);
	return _cmocka_run_group_tests("fairshare", tests, s.n, NULL, NULL);
}
