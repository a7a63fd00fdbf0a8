// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The lease planner (budget/planner.c) when memory runs out, without root:
 * a round whose scratch cannot be allocated fails with -ENOMEM, names the
 * cause, and leaves the planner's state as it was (#12, item 10: the old
 * round_free() walked r->n_add when only r->add had been allocated, and
 * dereferenced NULL). The link wraps calloc (UNIT_LDFLAGS_planner in the
 * Makefile), so each row can fail one chosen call.
 *
 * The same link fakes the lease maps (empty), and a fake backend
 * (budget/backend.h) records what each sync was handed, so that a
 * sequence of syncs over two attachments can be followed without root:
 * one beat per round, and each attachment's own hot sets, read while the
 * call runs (#12, item 10: the hot list, b->hot, was left pointing at the
 * freed array of the attachment before); and which early rounds a starved
 * key asks in (starved_every()). Rounds against the real kernel and
 * replies from a socket are tested in tests/bpf/test_lease.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "budget/cluster.h"
#include "budget/planner.h"
#include "kernel/leases_wrap.h"
#include "rows.h"

#define TEST_FLEET  "test-fleet"
#define TEST_NODE   "test-node"
#define BEAT_TTL_US 1000000ULL
#define INTERVAL_NS 100000000ULL
#define TEST_N_POL  2
#define NO_FAILURE  0 /* calloc_fail_at: let every call succeed */
#define ERR_NOMEM   "lease sync: Cannot allocate memory"
#define TEST_N_ATT  2
#define LIVE_NODES  3  /* what the fake store's beat answers */
#define MAX_CALLS   16 /* store calls one test records */
/* A member the fake store returns in every hot set: ::ffff:10.0.0.1 */
#define HOT_MEMBER "00000000000000000000ffff0a000001"

/* The names ld's --wrap gives; reserved, and only the linker's to choose. */
void *__real_calloc(size_t n, size_t size); /* NOLINT(bugprone-reserved-identifier) */
void *__wrap_calloc(size_t n, size_t size); /* NOLINT(bugprone-reserved-identifier) */

/*
 * Which calloc() from now on fails (1 = the next); NO_FAILURE for none.
 * File-scope and mutable because the wrapper has no other way to be told:
 * test-only, and the tests run one at a time.
 */
static unsigned int calloc_fail_at;

void *__wrap_calloc(size_t n, size_t size) /* NOLINT(bugprone-reserved-identifier) */
{
	if (calloc_fail_at && !--calloc_fail_at) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, size);
}

/* What the fake store was handed in one call, copied while the call ran. */
struct store_call {
	int beat; /* b->fleet was set */
	size_t n_hot;
	char hot[TEST_N_POL][LEASE_KEY_LEN];
	size_t n_leases;
};

/* The fake kernel and store: as file-scope as calloc_fail_at, and for the same reason. */
static struct {
	struct store_call call[MAX_CALLS];
	size_t n_calls;
	struct sluice_key created[MAX_CALLS];
	size_t n_created;
	size_t n_leases; /* 0 or 1: the lease map holds @lease, and the spend map @spend */
	struct sluice_key key;
	struct sluice_lease lease;
	struct sluice_spend spend;
} fake;

/* A copy of @n_ of @size bytes at @src in a new allocation, into *@dst; 0 or -ENOMEM. */
static int fake_read(void **dst, const void *src, size_t size, size_t n_)
{
	*dst = NULL;
	if (!n_)
		return 0;
	*dst = malloc(size);
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, size);
	return 0;
}

/* NOLINTBEGIN(bugprone-reserved-identifier): the names ld's --wrap gives */
/* Record @b, read every hot set it points to, and answer: each set holds HOT_MEMBER. */
static int fake_sync(struct budget_backend *be, struct budget_sync *b, char *err, size_t len)
{
	struct store_call *c = &fake.call[fake.n_calls];
	size_t i;

	(void)be;
	(void)err;
	(void)len;
	assert_true(fake.n_calls < MAX_CALLS);
	assert_true(b->n_hot <= TEST_N_POL);
	c->beat = b->fleet != NULL;
	c->n_hot = b->n_hot;
	for (i = 0; i < b->n_hot; i++) {
		memcpy(c->hot[i], b->hot[i].key, sizeof(c->hot[i]));
		assert_int_equal(b->on_member(b->arg, i, HOT_MEMBER), 0);
	}
	if (b->fleet)
		b->live_nodes = LIVE_NODES;
	c->n_leases = b->n_leases;
	for (i = 0; i < b->n_leases; i++)
		b->grants[i] = (struct lease_grant){ .held = b->leases[i].want, .err = -EPROTO };
	fake.n_calls++;
	return 0;
}

static int fake_is_reachable(const struct budget_backend *be, const char *key)
{
	(void)be;
	(void)key;
	return 1;
}

/* The fake store: only what a lease round calls. */
static const struct backend_ops fake_ops = { .sync = fake_sync, .is_reachable = fake_is_reachable };
static struct budget_backend fake_be = { .ops = &fake_ops };

int __wrap_lease_maps__read_leases(const struct lease_maps *m, struct sluice_key **keys,
				   struct sluice_lease **vals, size_t *n)
{
	(void)m;
	*n = fake.n_leases;
	if (fake_read((void **)keys, &fake.key, sizeof(**keys), *n) ||
	    fake_read((void **)vals, &fake.lease, sizeof(**vals), *n))
		return -ENOMEM;
	return 0;
}

int __wrap_lease_maps__read_spends(const struct lease_maps *m, struct sluice_key **keys,
				   struct sluice_spend **vals, size_t *n)
{
	(void)m;
	*n = fake.n_leases;
	if (fake_read((void **)keys, &fake.key, sizeof(**keys), *n) ||
	    fake_read((void **)vals, &fake.spend, sizeof(**vals), *n))
		return -ENOMEM;
	return 0;
}

int __wrap_lease_maps__take_hot(const struct lease_maps *m, struct sluice_key **keys,
				struct sluice_hot **vals, size_t *n)
{
	(void)m;
	*keys = NULL;
	*vals = NULL;
	*n = 0;
	return 0;
}

int __wrap_lease_maps__create(const struct lease_maps *m, const struct sluice_key *k, __u64 want,
			      __u64 expires)
{
	(void)m;
	(void)want;
	(void)expires;
	assert_true(fake.n_created < MAX_CALLS);
	fake.created[fake.n_created++] = *k;
	return 0;
}
/* NOLINTEND(bugprone-reserved-identifier) */

/* A round's scratch, allocated in this order at its start (round_att()). */
enum round_alloc {
	ROUND_ALLOC_ADD = 1, /* r.add: the hex members seen hot, by policy */
	ROUND_ALLOC_N_ADD,   /* r.n_add: how many, by policy */
};

struct nomem_row {
	const char *name;
	enum round_alloc fail; /* the call that fails */
	int full;	       /* a full sync, or an early top-up */
};

static const struct nomem_row nomem_rows[] = {
	{ "full sync, hot members list", ROUND_ALLOC_ADD, 1 },
	{ "full sync, hot member counts", ROUND_ALLOC_N_ADD, 1 },
	{ "early top-up, hot members list", ROUND_ALLOC_ADD, 0 },
	{ "early top-up, hot member counts", ROUND_ALLOC_N_ADD, 0 },
};

/*
 * @n_att attachments of TEST_N_POL cluster policies each, over the fake
 * maps (their fds, -1, are never used), each policy as @tmpl but for its
 * id and name.
 */
static struct lease_state *new_state_as(size_t n_att, const struct lease_policy *tmpl)
{
	struct lease_plan *plan = calloc(1, sizeof(*plan));
	struct lease_att *att;
	struct lease_state *ls;
	size_t a, i;

	assert_non_null(plan);
	plan->interval_ns = INTERVAL_NS;
	strcpy(plan->prefix, TEST_FLEET);
	plan->att = calloc(n_att, sizeof(*plan->att));
	assert_non_null(plan->att);
	plan->n_att = n_att;
	for (a = 0; a < n_att; a++) {
		att = &plan->att[a];
		att->maps = (struct lease_maps){ .lease = -1, .spend = -1, .hot = -1 };
		att->pol = calloc(TEST_N_POL, sizeof(*att->pol));
		assert_non_null(att->pol);
		att->n_pol = TEST_N_POL;
		for (i = 0; i < TEST_N_POL; i++) {
			/* ids differ between attachments, as names do: "p<att>.<i>" */
			att->pol[i] = *tmpl;
			att->pol[i].id = (__u32)(a * TEST_N_POL + i + 1);
			snprintf(att->pol[i].name, sizeof(att->pol[i].name), "p%zu.%zu", a, i);
		}
	}
	ls = lease_state__new(plan);
	assert_non_null(ls);
	return ls;
}

static struct lease_state *new_state(size_t n_att)
{
	const struct lease_policy tmpl = { .burst = 1 };

	return new_state_as(n_att, &tmpl);
}

static void test_round_nomem(void **state)
{
	const struct nomem_row *row = *state;
	struct lease_state *ls = new_state(1);
	struct lease_stats before, after;
	char err[256] = "unset";
	__u64 live = 1;
	int ret;

	lease_state__stats(ls, &before);
	calloc_fail_at = row->fail;
	ret = lease_round(ls, &fake_be, TEST_FLEET, TEST_NODE, BEAT_TTL_US, row->full, &live, err,
			  sizeof(err));
	calloc_fail_at = NO_FAILURE;
	assert_int_equal(ret, -ENOMEM);
	assert_string_equal(err, ERR_NOMEM);
	assert_int_equal(live, 0);
	lease_state__stats(ls, &after);
	assert_memory_equal(&before, &after, sizeof(before));
	lease_state__free(ls);
}

/* Round @full over every attachment; 0 expected, and *live. */
static void round_ok(struct lease_state *ls, int full, __u64 want_live)
{
	char err[256];
	__u64 live;

	assert_int_equal(lease_round(ls, &fake_be, TEST_FLEET, TEST_NODE, BEAT_TTL_US, full, &live,
				     err, sizeof(err)),
			 0);
	assert_string_equal(err, "");
	assert_int_equal(live, want_live);
}

/* Store calls [@from, @from + TEST_N_ATT): one full round, one call per attachment. */
static void assert_full_round(size_t from)
{
	char want[LEASE_KEY_LEN];
	size_t a, i;

	for (a = 0; a < TEST_N_ATT; a++) {
		const struct store_call *c = &fake.call[from + a];

		assert_int_equal(c->beat, a == 0); /* one beat per round, with the first */
		assert_int_equal(c->n_hot, TEST_N_POL);
		for (i = 0; i < TEST_N_POL; i++) {
			snprintf(want, sizeof(want), "%s:hot:{p%zu.%zu}", TEST_FLEET, a, i);
			assert_string_equal(c->hot[i], want);
		}
	}
}

/*
 * Full, early, full: each full round sends each attachment's own hot sets
 * (read by the fake while it runs: ASan would stop a read of a freed
 * list), beats once, and adopts each set's member under that attachment's
 * policy ids; an early round with no lease running low sends nothing.
 */
static void test_rounds_over_attachments(void **state)
{
	struct lease_state *ls = new_state(TEST_N_ATT);
	struct lease_stats st;
	size_t a, i, k = 0, pass;

	(void)state;
	memset(&fake, 0, sizeof(fake));
	round_ok(ls, 1, LIVE_NODES);
	assert_int_equal(fake.n_calls, TEST_N_ATT);
	assert_full_round(0);
	round_ok(ls, 0, 0);
	assert_int_equal(fake.n_calls, TEST_N_ATT);
	round_ok(ls, 1, LIVE_NODES);
	assert_int_equal(fake.n_calls, 2 * TEST_N_ATT);
	assert_full_round(TEST_N_ATT);
	/* Each full round: every policy's member given an entry, in order. */
	assert_int_equal(fake.n_created, 2 * TEST_N_ATT * TEST_N_POL);
	for (pass = 0; pass < 2; pass++)
		for (a = 0; a < TEST_N_ATT; a++)
			for (i = 0; i < TEST_N_POL; i++, k++)
				assert_int_equal(fake.created[k].policy_id, a * TEST_N_POL + i + 1);
	lease_state__stats(ls, &st);
	assert_int_equal(st.rounds, 2 * TEST_N_ATT);
	assert_int_equal(st.map_errors, 0);
	lease_state__free(ls);
}

/* ---- a starved key's early rounds ------------------------------------------------------------ */

#define EARLY_ROUNDS (LEASE_EARLY_DIV - 1) /* between two full syncs */
#define US_PER_SEC   1000000ULL

struct starved_row {
	const char *name;
	__u64 burst, per_second; /* the policy: burst, and rate units a second */
	__u32 flags;		 /* the lease's, from its last answer */
	const char *asks;	 /* each early round after a full sync: 'x' it asks, '.' not */
};

/*
 * Rounds are interval / LEASE_EARLY_DIV = 10 ms apart, the full sync
 * round 0. A starved key asks at every early round when half its burst
 * refills within one, else every LEASE_STARVED_EVERY_MAX-th counting from
 * the full sync (starved_every()); one that is not starved at every round
 * while its lease runs low.
 */
static const struct starved_row starved_rows[] = {
	{ "starved, half the burst in 5 ms: every round", 10, 1000, SLUICE_LEASE_F_STARVED,
	  "xxxxxxxxx" },
	{ "starved, half the burst in 20 ms: every 2nd", 40, 1000, SLUICE_LEASE_F_STARVED,
	  ".x.x.x.x." },
	{ "starved, half the burst in 500 ms: every 2nd (the most)", 1000, 1000,
	  SLUICE_LEASE_F_STARVED, ".x.x.x.x." },
	{ "not starved, half the burst in 500 ms: every round", 1000, 1000, 0, "xxxxxxxxx" },
};

/*
 * One key whose lease is spent (granted 10, spent 10, 5 denied since its
 * last top-up): it runs low at every early round, and the row's flags say
 * whether it is starved. Each early round makes a store call with it, or
 * none at all.
 */
static void test_starved(void **state)
{
	const struct starved_row *row = *state;
	const struct lease_policy tmpl = { .rate_units = row->per_second,
					   .rate_period_us = US_PER_SEC,
					   .burst = row->burst };
	struct lease_state *ls = new_state_as(1, &tmpl);
	char asks[EARLY_ROUNDS + 1] = "";
	size_t i, calls;

	assert_int_equal(strlen(row->asks), EARLY_ROUNDS);
	memset(&fake, 0, sizeof(fake));
	fake.n_leases = 1;
	fake.key = (struct sluice_key){ .policy_id = 1 };
	fake.lease = (struct sluice_lease){
		.granted = 10, .expires = UINT64_MAX / 2, .want = 10, .flags = row->flags
	};
	fake.spend = (struct sluice_spend){ .spent = 10, .denied = 5 };
	round_ok(ls, 1, LIVE_NODES);
	for (i = 0; i < EARLY_ROUNDS; i++) {
		calls = fake.n_calls;
		fake.lease.flags = row->flags; /* as the kernel map still holds it */
		round_ok(ls, 0, 0);
		asks[i] = fake.n_calls > calls ? 'x' : '.';
		if (fake.n_calls > calls)
			assert_int_equal(fake.call[calls].n_leases, 1);
	}
	assert_string_equal(asks, row->asks);
	lease_state__free(ls);
}

/* ---- the groups' hash tags (#17) ---------------------------------------- */

struct tags_row {
	const char *name; /* a policy name */
};

static const struct tags_row tags_rows[] = {
	{ "shared" },
	{ "dns-per-source" },
	{ "a" },
	{ "0123456789abcdef0123456789abcde" }, /* the longest: SLUICE_NAME_LEN - 1 */
};

/* Shard counts whose equal ranges of slots hold whole ranges of groups. */
static const __u32 even_shards[] = { 2, 3, 4, 6, 8, 12, LEASE_GROUPS };

/*
 * Every group's tag is on a slot of its own range of slots, so that a
 * cluster of 2, 3, 4, 6, 8, 12 or 24 shards, each holding an equal range
 * (as redis-cli --cluster create makes them), holds as many groups on each
 * shard; and every node chooses the same tags.
 */
static void test_tags(void **state)
{
	const struct tags_row *row = *state;
	char tag[SLUICE_NAME_LEN + sizeof("{:4294967295}")];
	__u32 per_shard[LEASE_GROUPS], g, i, slot, n_shards;
	struct lease_policy p = { 0 }, again = { 0 };
	int len;

	snprintf(p.name, sizeof(p.name), "%s", row->name);
	assert_string_equal(p.name, row->name);
	again = p;
	lease_policy_tags(&p);
	lease_policy_tags(&again);
	assert_memory_equal(p.tag, again.tag, sizeof(p.tag));
	for (i = 0; i < ARRAY_SIZE(even_shards); i++) {
		n_shards = even_shards[i];
		memset(per_shard, 0, sizeof(per_shard));
		for (g = 0; g < LEASE_GROUPS; g++) {
			len = snprintf(tag, sizeof(tag), "{%s:%u}", p.name, p.tag[g]);
			slot = cluster_key_slot(tag, (size_t)len);
			assert_int_equal(slot * LEASE_GROUPS / CLUSTER_SLOTS, g);
			per_shard[slot * n_shards / CLUSTER_SLOTS]++;
		}
		for (g = 0; g < n_shards; g++)
			assert_int_equal(per_shard[g], LEASE_GROUPS / n_shards);
	}
}

int main(void)
{
	struct CMUnitTest tests[ARRAY_SIZE(nomem_rows) + 1 + ARRAY_SIZE(starved_rows) +
				ARRAY_SIZE(tags_rows)];
	char names[ARRAY_SIZE(tests)][TEST_NAME_LEN];
	struct suite s = SUITE_INIT(tests, names);

	SUITE_ADD_ROWS(&s, test_round_nomem, nomem_rows);
	SUITE_ADD(&s, test_rounds_over_attachments);
	SUITE_ADD_ROWS(&s, test_starved, starved_rows);
	SUITE_ADD_ROWS(&s, test_tags, tags_rows);
	return _cmocka_run_group_tests("planner", tests, s.n, NULL, NULL);
}
