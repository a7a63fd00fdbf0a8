// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The real lease planner (budget/planner.c) of two nodes, each through a
 * backend of its own on one in-memory store (budget/backend_mem.h), whose
 * clock the test sets; without root. The link wraps the lease maps
 * (UNIT_LDFLAGS_memstore in the Makefile): each node's kernel is a table
 * here, which spends a lease as the XDP program does (while spent stays
 * within granted, and only a lease that has been answered).
 *
 * One hot key, burst BURST and RATE units a second, strict (its bucket
 * starts full). Sync rounds SYNC_US apart bring RATE_PER_ROUND units.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "budget/backend_mem.h"
#include "budget/planner.h"
#include "kernel/leases_wrap.h"
#include "policy/compile.h"
#include "rows.h"

#define N_NODES	       2
#define MAX_KEYS       4
#define FLEET	       "sim:nodes"
#define PREFIX	       "sim"
#define POLICY_ID      1
#define BURST	       100ULL
#define RATE	       100ULL /* units a second */
#define US_PER_SEC     1000000ULL
#define SYNC_US	       100000ULL /* the plan's sync interval */
#define RATE_PER_ROUND (RATE * SYNC_US / US_PER_SEC)
#define LEASE_TTL_US   (LEASE_TTL_SYNCS * SYNC_US) /* the store's lease, as the planner asks */
#define T0_US	       1000000ULL		   /* the store's clock at the start */
#define DEMAND	       1000ULL /* units a node's traffic asks per round: more than it gets */
#define ROUNDS	       20
#define KEY_HEX	       "00000000000000000000ffff0a000001" /* ::ffff:10.0.0.1 */
#define ERR_EIO	       "memory store: Input/output error"

static const char *const node_name[N_NODES] = { "a", "b" };
static const char *const holder[N_NODES] = { "a/eth0", "b/eth0" };

/* One node's kernel: its lease and spend entries, and the keys asked to be made hot. */
struct fake_entry {
	struct sluice_key k;
	struct sluice_lease l;
	struct sluice_spend s;
};

struct fake_kernel {
	struct fake_entry e[MAX_KEYS];
	size_t n;
	struct sluice_key hot[MAX_KEYS];
	size_t n_hot;
};

/* File-scope because the wrapped map calls have no other way in: test-only, one test at a time. */
static struct fake_kernel kern[N_NODES];

static const struct sluice_key the_key = {
	.policy_id = POLICY_ID,
	.addr = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 1 },
};

static struct fake_entry *entry_of(const struct lease_maps *m, const struct sluice_key *k)
{
	struct fake_kernel *fk = &kern[m->lease];
	size_t i;

	for (i = 0; i < fk->n; i++)
		if (!memcmp(&fk->e[i].k, k, sizeof(*k)))
			return &fk->e[i];
	return NULL;
}

/* A copy of @n values of @size bytes, each at @stride from @src; NULL for none. */
static void *copy_out(const void *src, size_t size, size_t stride, size_t n)
{
	char *v = n ? malloc(n * size) : NULL;
	size_t i;

	if (n)
		assert_non_null(v);
	for (i = 0; i < n; i++)
		memcpy(v + i * size, (const char *)src + i * stride, size);
	return v;
}

/* NOLINTBEGIN(bugprone-reserved-identifier): the names ld's --wrap gives */
/* As kernel/leases.c: an entry unless there is one, live at once only with @expires. */
int __wrap_lease_maps__create(const struct lease_maps *m, const struct sluice_key *k, __u64 want,
			      __u64 expires)
{
	struct fake_kernel *fk = &kern[m->lease];
	struct fake_entry *e;

	if (entry_of(m, k))
		return 0;
	assert_true(fk->n < MAX_KEYS);
	e = &fk->e[fk->n++];
	memset(e, 0, sizeof(*e));
	e->k = *k;
	e->l.want = want;
	e->l.key = *k;
	e->l.expires = expires;
	if (expires)
		e->l.flags = SLUICE_LEASE_F_FROZEN | SLUICE_LEASE_F_RELEASED;
	return 0;
}

int __wrap_lease_maps__delete(const struct lease_maps *m, const struct sluice_key *k)
{
	struct fake_kernel *fk = &kern[m->lease];
	struct fake_entry *e = entry_of(m, k);

	if (e)
		*e = fk->e[--fk->n];
	return 0;
}

int __wrap_lease_maps__write(const struct lease_maps *m, const struct sluice_key *k,
			     const struct sluice_lease *l)
{
	struct fake_entry *e = entry_of(m, k);

	if (e)
		e->l = *l;
	return 0;
}

int __wrap_lease_maps__read_spend(const struct lease_maps *m, const struct sluice_key *k,
				  struct sluice_spend *s)
{
	const struct fake_entry *e = entry_of(m, k);

	if (!e)
		return -ENOENT;
	*s = e->s;
	return 0;
}

int __wrap_lease_maps__read_leases(const struct lease_maps *m, struct sluice_key **keys,
				   struct sluice_lease **vals, size_t *n)
{
	const struct fake_kernel *fk = &kern[m->lease];

	*n = fk->n;
	*keys = copy_out(&fk->e[0].k, sizeof(**keys), sizeof(fk->e[0]), fk->n);
	*vals = copy_out(&fk->e[0].l, sizeof(**vals), sizeof(fk->e[0]), fk->n);
	return 0;
}

int __wrap_lease_maps__read_spends(const struct lease_maps *m, struct sluice_key **keys,
				   struct sluice_spend **vals, size_t *n)
{
	const struct fake_kernel *fk = &kern[m->lease];

	*n = fk->n;
	*keys = copy_out(&fk->e[0].k, sizeof(**keys), sizeof(fk->e[0]), fk->n);
	*vals = copy_out(&fk->e[0].s, sizeof(**vals), sizeof(fk->e[0]), fk->n);
	return 0;
}

int __wrap_lease_maps__take_hot(const struct lease_maps *m, struct sluice_key **keys,
				struct sluice_hot **vals, size_t *n)
{
	struct fake_kernel *fk = &kern[m->lease];

	*n = fk->n_hot;
	*keys = copy_out(fk->hot, sizeof(**keys), sizeof(fk->hot[0]), fk->n_hot);
	*vals = fk->n_hot ? calloc(fk->n_hot, sizeof(**vals)) : NULL;
	fk->n_hot = 0;
	return 0;
}
/* NOLINTEND(bugprone-reserved-identifier) */

/* The policy's GCRA, as compile.c makes it (the_policy()). */
static struct sluice_gcra the_gcra;

/*
 * Of @demand units now, what @e's lease admits: a lump's granted, or a
 * rate lease's share (sluice_share_admit()), which moves *@tat.
 */
static __u64 room_of(const struct fake_entry *e, __u64 demand, __u64 *tat)
{
	const __u64 incr = sluice_gcra_incr(1, the_gcra.interval_mant, the_gcra.interval_shift);
	struct timespec ts;
	__u64 now, clock, n = 0;

	if (!(e->l.flags & SLUICE_LEASE_F_RATE)) {
		n = e->l.granted > e->s.spent ? e->l.granted - e->s.spent : 0;
		return demand < n ? demand : n;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = sluice_gcra_ticks((__u64)ts.tv_sec * SLUICE_NSEC_PER_SEC + (__u64)ts.tv_nsec);
	if (!sluice_ticks_after(e->l.expires, now))
		return 0; /* cold: strict */
	clock = sluice_share_clock(&e->l, now);
	while (n < demand && sluice_share_admit(*tat, e->l.floor, clock, incr, e->l.tol, tat))
		n++;
	return n;
}

/* The kernel of node @i: @demand units of the_key's traffic, spent while the lease covers them. */
static void spend(size_t i, __u64 demand)
{
	const struct lease_maps m = { .lease = (int)i };
	struct fake_entry *e = entry_of(&m, &the_key);
	__u64 take;

	assert_non_null(e);
	if (!e->l.expires)
		return; /* no answer yet: the key is cold here, not the lease's */
	take = room_of(e, demand, &e->s.tat);
	e->s.spent += take;
	e->s.denied += demand - take;
}

static __u64 spent(size_t i)
{
	const struct lease_maps m = { .lease = (int)i };
	const struct fake_entry *e = entry_of(&m, &the_key);

	return e ? e->s.spent : 0;
}

/* Two nodes on one store, each with a backend and a planner; the store's clock at T0_US. */
struct sim {
	struct mem_store *m;
	struct budget_backend *be[N_NODES];
	struct lease_state *ls[N_NODES];
	__u64 live; /* the fleet's count by the last round's beat; 0: it did not beat */
	char err[STORE_ERR_LEN];
};

/* The node whose planner speaks rate leases (test_layout_switch); N_NODES: none. */
static size_t rate_node = N_NODES;

static struct lease_state *node_new(size_t i)
{
	struct lease_plan *plan = calloc(1, sizeof(*plan));
	struct lease_policy *p;
	struct lease_state *ls;

	assert_non_null(plan);
	plan->interval_ns = SYNC_US * SLUICE_NSEC_PER_USEC;
	plan->rate_leases = i == rate_node;
	snprintf(plan->prefix, sizeof(plan->prefix), "%s", PREFIX);
	plan->att = calloc(1, sizeof(*plan->att));
	assert_non_null(plan->att);
	plan->n_att = 1;
	snprintf(plan->att[0].holder, sizeof(plan->att[0].holder), "%s", holder[i]);
	plan->att[0].maps = (struct lease_maps){ .lease = (int)i, .spend = (int)i, .hot = (int)i };
	p = calloc(1, sizeof(*p));
	assert_non_null(p);
	*p = (struct lease_policy){ .id = POLICY_ID,
				    .name = "p",
				    .rate_units = RATE,
				    .rate_period_us = US_PER_SEC,
				    .burst = BURST,
				    .tolerance = the_gcra.tolerance,
				    .strict = 1 };
	lease_policy_tags(p);
	plan->att[0].pol = p;
	plan->att[0].n_pol = 1;
	ls = lease_state__new(plan);
	assert_non_null(ls);
	return ls;
}

static void sim_open(struct sim *x)
{
	size_t i;
	const struct policy_rate rate = { .amount = RATE,
					  .period_ns = SLUICE_NSEC_PER_SEC,
					  .cost = SLUICE_COST_PKTS };
	char err[STORE_ERR_LEN];

	assert_int_equal(compile_gcra(&rate, BURST, &the_gcra, err, sizeof(err)), 0);
	memset(kern, 0, sizeof(kern));
	memset(x, 0, sizeof(*x));
	x->m = mem_store__new(T0_US);
	assert_non_null(x->m);
	for (i = 0; i < N_NODES; i++) {
		x->be[i] = backend_mem__open(x->m);
		assert_non_null(x->be[i]);
		x->ls[i] = node_new(i);
		kern[i].hot[kern[i].n_hot++] = the_key; /* its traffic asks to make the key hot */
	}
}

static void sim_close(struct sim *x)
{
	size_t i;

	for (i = 0; i < N_NODES; i++) {
		lease_state__free(x->ls[i]);
		backend__free(x->be[i]);
	}
	mem_store__free(x->m);
}

/* A full round of node @i at store time T0_US + @t_us; its result. */
static int sim_round(struct sim *x, size_t i, __u64 t_us)
{
	mem_store__set_now(x->m, T0_US + t_us);
	return lease_round(x->ls[i], x->be[i], FLEET, node_name[i], LEASE_TTL_US, 1, &x->live,
			   x->err, sizeof(x->err));
}

static void round_ok(struct sim *x, size_t i, __u64 t_us)
{
	assert_int_equal(sim_round(x, i, t_us), 0);
	assert_string_equal(x->err, "");
}

/*
 * Both nodes' traffic wants far more than the key allows, every round. A
 * syncs first and takes the whole burst; from then on each round brings
 * RATE_PER_ROUND, which A, whose report frees what it spent, takes
 * before B asks. Together they spend exactly BURST + RATE × t by round
 * t, never a unit more, and B, with nothing left to take, nothing.
 */
static void test_two_nodes_one_key(void **state)
{
	struct sim x;
	__u64 k, t;

	(void)state;
	sim_open(&x);
	for (k = 0; k < ROUNDS; k++) {
		t = k * SYNC_US;
		round_ok(&x, 0, t);
		round_ok(&x, 1, t);
		spend(0, DEMAND);
		spend(1, DEMAND);
		assert_int_equal(spent(0) + spent(1), BURST + RATE * t / US_PER_SEC);
		assert_int_equal(spent(1), 0);
		assert_int_equal(mem_store__held(x.m, KEY_HEX, holder[0]),
				 k ? RATE_PER_ROUND : BURST);
	}
	assert_int_equal(kern[1].n, 1); /* B's entry: waiting, cold, for a first lease */
	assert_int_equal(kern[1].e[0].l.expires, 0);
	sim_close(&x);
}

struct expiry_row {
	const char *name;
	__u64 at_us;	 /* B's first round, and A's second, after A's first at 0 */
	int a_first;	 /* A's second round comes before B's */
	__u64 a_back;	 /* what A holds after its second round, which reports 10 spent */
	__u64 a_held;	 /* what A holds after both */
	__u64 b_granted; /* what B is granted */
};

/*
 * A takes the whole burst at 0 and then spends 10 of it. Until its
 * lease's TTL has passed it holds it all, and B gets nothing; A's report
 * of 10 spent keeps the other 90. From then on A's lease is written off,
 * not credited: A keeps nothing of it, and B, and A again, get only what
 * refilled since A's call, RATE × TTL = 30 units, between them.
 */
static const struct expiry_row expiry_rows[] = {
	{ "B a microsecond before A's lease expires", LEASE_TTL_US - 1, 0, BURST - 10, BURST - 10,
	  0 },
	{ "B when A's lease expires, then A", LEASE_TTL_US, 0, 0, 0,
	  RATE *LEASE_TTL_US / US_PER_SEC },
	{ "A when its lease expires, then B", LEASE_TTL_US, 1, 10, 10,
	  RATE *LEASE_TTL_US / US_PER_SEC - 10 },
};

static void test_lease_expires(void **state)
{
	const struct expiry_row *row = *state;
	const struct lease_maps b = { .lease = 1 };
	const struct fake_entry *e;
	struct sim x;
	int n;

	sim_open(&x);
	round_ok(&x, 0, 0);
	assert_int_equal(mem_store__held(x.m, KEY_HEX, holder[0]), BURST);
	spend(0, 10);
	for (n = 0; n < 2; n++) {
		if (n == !row->a_first) {
			round_ok(&x, 0, row->at_us);
			assert_int_equal(mem_store__held(x.m, KEY_HEX, holder[0]), row->a_back);
		} else {
			round_ok(&x, 1, row->at_us);
		}
	}
	assert_int_equal(mem_store__held(x.m, KEY_HEX, holder[0]), row->a_held);
	assert_int_equal(mem_store__held(x.m, KEY_HEX, holder[1]), row->b_granted);
	e = entry_of(&b, &the_key);
	assert_non_null(e);
	assert_int_equal(e->l.granted, row->b_granted);
	/* Answered with nothing, B's key waits, cold, for its first lease. */
	assert_int_equal(e->l.expires != 0, row->b_granted != 0);
	sim_close(&x);
}

/*
 * A holds BURST and spends 40. A round that fails before the store runs
 * it, and one whose answer is lost after the store ran it, write nothing
 * into A's kernel. The next round reports the 40 again: the store, which
 * ran the lost call, charges them twice (planner.c: an under-admission,
 * never an over-admission), so A holds 40 after it, not 60 + the refill.
 */
static void test_failed_round_writes_nothing(void **state)
{
	const struct lease_maps a = { .lease = 0 };
	struct fake_entry before;
	struct sim x;

	(void)state;
	sim_open(&x);
	round_ok(&x, 0, 0);
	spend(0, 40);
	before = *entry_of(&a, &the_key);

	backend_mem__fail_next(x.be[0], -EIO, 0);
	assert_int_equal(sim_round(&x, 0, SYNC_US), -EIO);
	assert_string_equal(x.err, ERR_EIO);
	assert_memory_equal(entry_of(&a, &the_key), &before, sizeof(before));
	assert_int_equal(mem_store__held(x.m, KEY_HEX, holder[0]), BURST);

	backend_mem__fail_next(x.be[0], -EIO, 1);
	assert_int_equal(sim_round(&x, 0, SYNC_US), -EIO);
	assert_string_equal(x.err, ERR_EIO " after the store ran the sync");
	assert_memory_equal(entry_of(&a, &the_key), &before, sizeof(before));
	assert_int_equal(mem_store__held(x.m, KEY_HEX, holder[0]), BURST - 40);

	round_ok(&x, 0, 2 * SYNC_US);
	assert_int_equal(mem_store__held(x.m, KEY_HEX, holder[0]), 40);
	assert_int_equal(entry_of(&a, &the_key)->l.granted, 40 + 40);
	assert_int_equal(entry_of(&a, &the_key)->l.reported, 40);
	sim_close(&x);
}

/* Rate leases (docs/shared-budget.md, "Rate leases"): shares, scaled. */
#define SCALE	    (1ULL << RATE_LEASE_SHIFT)
#define RATE_TTL_US (3 * US_PER_SEC)
#define RATE_GROUP  "sim:r:{1:0}"

static const struct lease_key rate_key = {
	.key = RATE_GROUP,
	.field = KEY_HEX,
	.rate_units = RATE,
	.rate_period_us = US_PER_SEC,
	.burst = BURST,
	.cap = BURST,
};

/*
 * Node @i asks, at the store's time @t, for @want units a second and as
 * many of burst (RATE = BURST here); the call's return, its grant in @g.
 */
static int rate_call(struct sim *x, size_t i, __u64 t, __u64 want, int settled,
		     struct rate_lease_grant *g)
{
	const struct rate_lease_req q = {
		.k = &rate_key,
		.want_rate = want * SCALE,
		.want_burst = want * SCALE,
		.settled = settled,
	};
	struct rate_sync r = {
		.holder = holder[i],
		.lease_ttl_us = RATE_TTL_US,
		.leases = &q,
		.n_leases = 1,
		.grants = g,
	};

	mem_store__set_now(x->m, T0_US + t);
	return backend__rate_lease(x->be[i], &r, x->err, sizeof(x->err));
}

/* Node @i's rate share after a call that must succeed, in units a second. */
static __u64 rate_ok(struct sim *x, size_t i, __u64 t, __u64 want, int settled)
{
	struct rate_lease_grant g = { 0 };

	assert_int_equal(rate_call(x, i, t, want, settled, &g), 0);
	assert_string_equal(x->err, "");
	assert_int_equal(g.err, 0);
	assert_int_equal(g.expires_us, T0_US + t + RATE_TTL_US);
	assert_int_equal(g.burst, g.rate); /* wants in proportion: shares too */
	assert_int_equal(g.rate % SCALE, 0);
	return g.rate / SCALE;
}

/*
 * Two nodes on one key through their own backends. A asks first and gets
 * the whole key; B joins. A's renewal lowers it to half, which counts for
 * B once A confirms it (settled); then both hold half. B's answer lost,
 * then B dead: A keeps its half until B's lease expires, then the key.
 */
static void test_rate_leases_converge(void **state)
{
	struct rate_lease_grant g = { 0 };
	struct sim x;

	(void)state;
	sim_open(&x);
	assert_int_equal(rate_ok(&x, 0, 0, RATE, 1), RATE);
	assert_int_equal(rate_call(&x, 1, 1, RATE, 1, &g), 0);
	assert_int_equal(g.rate, 0);
	assert_int_equal(g.fair_rate, RATE / 2 * SCALE);
	assert_int_equal(rate_ok(&x, 0, 2, RATE, 1), RATE / 2);
	assert_int_equal(rate_ok(&x, 1, 3, RATE, 1), 0);
	assert_int_equal(rate_ok(&x, 0, SYNC_US, RATE, 1), RATE / 2);
	assert_int_equal(rate_ok(&x, 1, SYNC_US + 1, RATE, 1), RATE / 2);

	/* A call that fails before the store runs it changes nothing. */
	backend_mem__fail_next(x.be[0], -EIO, 0);
	assert_int_equal(rate_call(&x, 0, 2 * SYNC_US, 0, 1, &g), -EIO);
	assert_string_equal(x.err, ERR_EIO);
	assert_int_equal(rate_ok(&x, 1, 2 * SYNC_US + 1, RATE, 1), RATE / 2);

	/* B's answer is lost: the store ran it, and B renews unsettled. */
	backend_mem__fail_next(x.be[1], -EIO, 1);
	assert_int_equal(rate_call(&x, 1, 3 * SYNC_US, RATE, 1, &g), -EIO);
	assert_string_equal(x.err, ERR_EIO " after the store ran the call");
	assert_int_equal(rate_ok(&x, 1, 4 * SYNC_US, RATE, 0), RATE / 2);

	/* B dies: its half is A's from its lease's expiry, not a microsecond before. */
	assert_int_equal(rate_ok(&x, 0, 4 * SYNC_US + RATE_TTL_US - 1, RATE, 1), RATE / 2);
	assert_int_equal(rate_ok(&x, 0, 4 * SYNC_US + RATE_TTL_US, RATE, 1), RATE);
	sim_close(&x);
}

/* A backend without rate leases says so; a want out of range sends nothing. */
static void test_rate_lease_refusals(void **state)
{
	static const struct backend_ops no_rate = { 0 };
	struct budget_backend none = { .ops = &no_rate };
	const struct rate_lease_req q = {
		.k = &rate_key,
		.want_rate = (RATE_LEASE_UNITS_MAX << RATE_LEASE_SHIFT) + 1,
	};
	struct rate_lease_grant g = { 0 };
	struct rate_sync r = {
		.holder = holder[0],
		.lease_ttl_us = RATE_TTL_US,
		.leases = &q,
		.n_leases = 1,
		.grants = &g,
	};
	struct sim x;

	(void)state;
	sim_open(&x);
	assert_int_equal(backend__rate_lease(&none, &r, x.err, sizeof(x.err)), -EOPNOTSUPP);
	assert_string_equal(x.err, "this store has no rate leases");
	assert_int_equal(backend__rate_lease(x.be[0], &r, x.err, sizeof(x.err)), -EINVAL);
	assert_string_equal(x.err, "rate lease key '" RATE_GROUP "' " KEY_HEX " is out of range");
	assert_int_equal(g.err, -EIO);
	sim_close(&x);
}

/* Sleep @us of the planner's clock (CLOCK_MONOTONIC): it times a layout switch. */
static void sleep_us(__u64 us)
{
	struct timespec ts = { .tv_sec = (time_t)(us / US_PER_SEC),
			       .tv_nsec = (long)(us % US_PER_SEC * 1000) };

	while (nanosleep(&ts, &ts))
		;
}

/*
 * Whether node @i's kernel holds a lease of the_key it may spend: a lump's
 * granted beyond spent, or a rate share with a burst.
 */
static int holds(size_t i)
{
	const struct lease_maps m = { .lease = (int)i };
	const struct fake_entry *e = entry_of(&m, &the_key);

	assert_non_null(e);
	if (e->l.flags & SLUICE_LEASE_F_RATE)
		return e->l.tol > 0;
	return e->l.granted > e->s.spent;
}

/* What node @i's kernel may still spend of the_key now (up to twice the burst). */
static __u64 spendable(size_t i)
{
	const struct lease_maps m = { .lease = (int)i };
	const struct fake_entry *e = entry_of(&m, &the_key);
	__u64 tat;

	assert_non_null(e);
	tat = e->s.tat;
	return room_of(e, 2 * BURST, &tat);
}

/*
 * Node 0 speaks rate leases, node 1 is an older agent (lump leases only).
 * While node 1 beats, node 0 takes lump leases; once node 1's beat has
 * expired node 0 calls for neither layout and its kernel may spend
 * nothing for LAYOUT_SWITCH_SYNCS intervals, then its rate share refills;
 * when node 1 beats again, node 0 waits as long again, with nothing to
 * spend, and takes lump leases after. Both ways, no moment where a lease
 * of each layout can be spent on node 0.
 */
static void test_layout_switch(void **state)
{
	const __u64 wait_us = LAYOUT_SWITCH_SYNCS * SYNC_US, beat_us = LEASE_TTL_US;
	__u64 t = 0;
	unsigned int i;
	struct sim x;

	(void)state;
	rate_node = 0;
	sim_open(&x);
	rate_node = N_NODES;
	kern[1].n_hot = 0; /* node 1 only beats */
	round_ok(&x, 1, t);
	round_ok(&x, 0, t);
	spend(0, DEMAND);
	round_ok(&x, 0, t += SYNC_US);
	assert_true(spendable(0) > 0); /* a lump lease, while node 1 beats */

	/* node 1 stopped: its beat expires, by node 0's TTL (RATE_BEAT_SYNCS beats') */
	t += RATE_BEAT_SYNCS * beat_us + SYNC_US;
	spend(0, DEMAND);
	round_ok(&x, 0, t);
	assert_int_equal(spendable(0), 0); /* the switch's wait: nothing to spend */
	sleep_us(SYNC_US / 2);		   /* a share taken now would refill by then */
	spend(0, DEMAND);
	round_ok(&x, 0, t += SYNC_US);
	sleep_us(SYNC_US / 2);
	round_ok(&x, 0, t += SYNC_US);
	assert_int_equal(spendable(0), 0);
	sleep_us(wait_us);
	spend(0, DEMAND);
	round_ok(&x, 0, t += SYNC_US); /* the rate share: it starts spent */
	sleep_us(SYNC_US);
	assert_true(spendable(0) > 0); /* its refill */
	spend(0, DEMAND);
	round_ok(&x, 0, t += SYNC_US);

	round_ok(&x, 1, t += SYNC_US); /* node 1 beats again */
	for (i = 0; i < RATE_BEAT_SYNCS && holds(0); i++) {
		spend(0, DEMAND); /* node 0 learns it at its next beat */
		round_ok(&x, 0, t += SYNC_US);
	}
	assert_false(holds(0)); /* back to the wait */
	spend(0, DEMAND);
	round_ok(&x, 0, t += SYNC_US); /* a lump lease now would be one to spend */
	assert_int_equal(spendable(0), 0);
	sleep_us(wait_us);
	spend(0, DEMAND);
	round_ok(&x, 1, t += SYNC_US);
	round_ok(&x, 0, t + SYNC_US);
	assert_true(spendable(0) > 0); /* a lump lease again */
	sim_close(&x);
}

/* Node @i's agent restarts (or reloads), speaking rate leases: a new planner on the same maps. */
static void restart(struct sim *x, size_t i)
{
	lease_state__free(x->ls[i]);
	rate_node = i;
	x->ls[i] = node_new(i);
	rate_node = N_NODES;
}

/*
 * Node 0 speaks rate leases and is the whole fleet. Restarted on its own
 * rate leases, its kernel goes on spending the share its entry holds, and
 * the share is renewed at the first sync: no switch's wait, as there is
 * nothing of the lump layout to spend (a start on the lump layout held the
 * key through the switch).
 * Restarted while its kernel holds a live lump
 * lease (node 1, an older agent, beat until then, and is upgraded too),
 * it waits as a switch does.
 */
static void test_restart_keeps_layout(void **state)
{
	__u64 t = 0;
	int i;
	struct sim x;

	(void)state;
	rate_node = 0;
	sim_open(&x);
	rate_node = N_NODES;
	kern[1].n_hot = 0;
	round_ok(&x, 0, t); /* node 0 alone: the rate layout at once */
	sleep_us(SYNC_US);
	assert_true(spendable(0) > 0);
	spend(0, DEMAND);
	round_ok(&x, 0, t += SYNC_US);
	restart(&x, 0);
	for (i = 0; i <= (int)LAYOUT_SWITCH_SYNCS; i++) {
		sleep_us(SYNC_US);
		/* its share goes on, its kernel refilling it; a start on the
		 * lump layout would hold the key through the switch */
		assert_true(spendable(0) > 0);
		spend(0, DEMAND);
		round_ok(&x, 0, t += SYNC_US);
	}
	sim_close(&x);

	rate_node = 0;
	sim_open(&x);
	rate_node = N_NODES;
	kern[1].n_hot = 0;
	round_ok(&x, 1, t = 0); /* node 1 beats: the lump layout */
	round_ok(&x, 0, t);
	spend(0, DEMAND);
	round_ok(&x, 0, t += SYNC_US);
	assert_true(spendable(0) > 0); /* a live lump lease */
	restart(&x, 0);
	restart(&x, 1); /* node 1's agent upgraded: every live member speaks rate leases */
	round_ok(&x, 1, t);
	round_ok(&x, 0, t);
	assert_int_equal(spendable(0), 0); /* the lump lease's layout is gone: the wait */
	sim_close(&x);
}

/* Full syncs each node runs before both have beat and read the news counter once. */
#define NEWS_SETTLE_SYNCS 2

/*
 * Both nodes speak rate leases. Between its beats (RATE_BEAT_SYNCS) a
 * node reads only the fleet's news counter, and does not beat. Node 0
 * turns the key hot: its sync adds it to the hot set and bumps the
 * counter, so node 1's next sync beats and reads the hot set, and holds
 * an entry for the key one interval later, not at its next periodic beat.
 * Its sync after that finds no news, and does not beat.
 */
static void test_news_brings_hot_key(void **state)
{
	__u64 t = 0;
	int i;
	struct sim x;

	(void)state;
	sim_open(&x);
	restart(&x, 0);
	restart(&x, 1);
	kern[0].n_hot = kern[1].n_hot = 0;
	for (i = 0; i < NEWS_SETTLE_SYNCS; i++, t += SYNC_US) {
		round_ok(&x, 0, t);
		round_ok(&x, 1, t);
		assert_int_equal(x.live, N_NODES); /* a beat: a node joined, or the first read */
	}
	round_ok(&x, 1, t);
	assert_int_equal(x.live, 0); /* no news: no beat */
	kern[0].hot[kern[0].n_hot++] = the_key;
	round_ok(&x, 0, t);
	assert_int_equal(x.live, 0); /* it told the hot set, and did not beat */
	assert_int_equal(kern[1].n, 0);
	round_ok(&x, 1, t += SYNC_US);
	assert_int_equal(x.live, N_NODES);
	assert_int_equal(kern[1].n, 1); /* node 1 heard of the key */
	round_ok(&x, 1, t += SYNC_US);
	assert_int_equal(x.live, 0);
	round_ok(&x, 0, t);
	assert_int_equal(x.live, 0); /* its own bump was no news to it */
	sim_close(&x);
}

int main(void)
{
	struct CMUnitTest tests[7 + ARRAY_SIZE(expiry_rows)];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD(&s, test_two_nodes_one_key);
	SUITE_ADD_ROWS(&s, test_lease_expires, expiry_rows);
	SUITE_ADD(&s, test_failed_round_writes_nothing);
	SUITE_ADD(&s, test_rate_leases_converge);
	SUITE_ADD(&s, test_rate_lease_refusals);
	SUITE_ADD(&s, test_layout_switch);
	SUITE_ADD(&s, test_restart_keeps_layout);
	SUITE_ADD(&s, test_news_brings_hot_key);
	return _cmocka_run_group_tests("memstore", tests, s.n, NULL, NULL);
}
