// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-fleet-sim: N simulated nodes of one fleet, each running the real
 * budget planner (budget/planner.c, lease_round()) against one store: a
 * real Redis or Redis Cluster (its URL), or the in-memory store
 * (budget/backend_mem.h) for a quick run. Each node's kernel lease maps
 * (kernel/leases.h) are replaced at link time by the tables below (ld's
 * --wrap, FLEET_SIM_FAKED in the Makefile, as tests/unit/test_memstore.c
 * does), and its XDP program by kernel_step(), which spends a lease as
 * bpf/lease.bpf.h does: strict cold mode, so a key without a live lease
 * is denied and asks to be made hot.
 *
 * Every node has the same demand on every hot key (--demand, units a
 * second, per node), paced evenly; --skew S gives node i (i + 1)^-S of it.
 * Sync rounds run in real time, a full sync every --sync-ms and an early
 * top-up chance LEASE_EARLY_DIV times as often, as the store's thread
 * (budget/store.c) runs them; --threads threads share the nodes.
 *
 * Reported after --warmup s, over --seconds s: the store's commands (INFO
 * commandstats deltas, which count Lua scripts' own calls, summed over
 * every --stats server) per node, hot key and second; the store's CPU
 * (INFO cpu deltas over wall time, per server); the simulator's own CPU
 * (all its threads, over wall time); the full syncs a node achieved per
 * second against the plan's (where the machine, not the design, becomes
 * the limit); the (node, hot key) pairs one core of the
 * store would serve at the plan's sync rate (pairs × achieved / planned
 * syncs, over the store's CPU); and the worst fleet window: admitted units of
 * one key across all nodes over any 1 s from the start (warm-up included:
 * the first second's burst too), against burst + rate·1 s. Exit 0
 * when every window is within its bound, 1 when one is not, 2 on error.
 * --cheat K runs the nodes' policy at K× the rate and burst while the bound
 * stays the real one: a check that can fail.
 *
 * --rate-leases runs rate leases through the planner's rate-lease step
 * (budget/planrate.c, rate_table__step()) alone, not through the rest of
 * the planner (its kernel model has no cold path): every key is hot from
 * the start, and each round of a node steps its keys as the planner's
 * rate_step() does, so renewals due soon go with a call made anyway and
 * a share below its fair share asks again between syncs. No beat and no
 * hot sets: their cost is not in its figures.
 *
 * --old N (with --rate-leases) simulates a rolling upgrade across the
 * store layout (budget/backend.h, STORE_LAYOUT_*): nodes 0 .. N-1 are
 * agents of the lump layout alone (the planner's leases, its beat), and
 * stop at --old-stop S seconds (their kernels with them). The others
 * beat every full round as agents of the rate layout do, and use the
 * layout the beat says the fleet speaks: the planner's leases while an
 * old node's beat is live; on the switch they stop calling for them and
 * take rate leases LAYOUT_SWITCH_SYNCS intervals later, once every lump
 * lease any node may still spend has expired. --no-agree has them use
 * rate leases from the start, old nodes or not: two buckets, each up to
 * the limit. It prints when the old nodes last ran and when the others
 * took rate leases.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "base/clock.h"
#include "budget/backend_mem.h"
#include "budget/backends.h"
#include "budget/keys.h"
#include "budget/planner.h"
#include "budget/planrate.h"
#include "budget/store.h"
#include "kernel/leases_wrap.h"
#include "policy/compile.h"
#include "sluice/gcra.h"

#define POLICY_ID     1
#define KEY_ADDR_OFF  12 /* a key's index in the last 4 bytes of ::ffff:a.b.c.d */
#define KEYS_MAX      65536
#define NODES_MAX     4096
#define THREADS_MAX   64
#define STATS_MAX     BACKEND_SHARDS_MAX
#define BUCKET_MS     10 /* the fleet window's resolution */
#define WINDOW_MS     1000
#define MS_PER_SEC    1000ULL
#define US_PER_MS     1000ULL
#define NS_PER_MS     1000000ULL
#define PCT	      100.0
#define STATS_TIMEOUT 5 /* s, an INFO round trip */
#define ERR_EXIT      2

struct opts {
	char url[STORE_URL_LEN];
	const char *stats[STATS_MAX];
	size_t n_stats;
	unsigned nodes, keys, threads;
	__u64 rate, burst, sync_ms;
	double demand, skew, cheat, warmup, seconds;
	int json;
	int rate_leases;
	unsigned old;	 /* --old: nodes of the lump layout alone */
	double old_stop; /* --old-stop: when they stop, s */
	int no_agree;	 /* --no-agree: the others take rate leases regardless */
};

/* One key of one node's kernel: its lease and spend entries, and its demand. */
struct kentry {
	int present, hot;
	struct sluice_lease l;
	struct sluice_spend s;
	double due; /* demand not yet sent: fractions of a unit */
};

struct node {
	unsigned id;
	char name[STORE_NAME_LEN];
	struct kentry *e; /* one per key */
	double demand;	  /* units a second per key */
	struct budget_backend *be;
	struct lease_state *ls;
	struct rate_table *rate; /* --rate-leases: its keys' shares */
	struct rate_key *rk;	 /* ... and a round's keys, one per key */
	__u64 ok_ns;		 /* ... when its last full round reached the store */
	__u64 last_ns, next_ns, tick;
	__u64 full_ns; /* its last full round */
	__u64 full_rounds, failed;
	unsigned layout;    /* the store layout it uses: STORE_LAYOUT_* */
	__u64 rate_from_ns; /* ... switching to rate leases: from then on (0: not) */
	__u64 last_beat_ns; /* an old node's last full round, which beats */
};

struct sim {
	struct opts o;
	struct node *node;
	struct mem_store *mem;
	struct sluice_gcra g; /* the policy's limit, as compile.c makes it */
	char fleet[STORE_NAME_LEN], prefix[SLUICE_NAME_LEN];
	__u64 t0_ns, end_ns, measure_ns;
	__u64 *admit; /* [key][bucket]: units admitted across the fleet */
	size_t n_buckets;
	__u64 measured_full;  /* full rounds inside the measured time */
	__u64 old_stop_ns;    /* --old-stop, in mono_ns() */
	struct lease_key *lk; /* --rate-leases: each key's, as the store names it */
};

/* The kernels' maps: the wrapped lease_maps__* calls have no other way in. */
static struct sim *the_sim;

static unsigned key_index(const struct sluice_key *k)
{
	const __u8 *a = k->addr + KEY_ADDR_OFF;

	return (unsigned)a[0] << 24 | (unsigned)a[1] << 16 | (unsigned)a[2] << 8 | a[3];
}

static void key_of(unsigned i, struct sluice_key *k)
{
	memset(k, 0, sizeof(*k));
	k->policy_id = POLICY_ID;
	k->addr[10] = 0xff;
	k->addr[11] = 0xff;
	k->addr[KEY_ADDR_OFF] = (__u8)(i >> 24);
	k->addr[KEY_ADDR_OFF + 1] = (__u8)(i >> 16);
	k->addr[KEY_ADDR_OFF + 2] = (__u8)(i >> 8);
	k->addr[KEY_ADDR_OFF + 3] = (__u8)i;
}

static struct kentry *entry_of(const struct lease_maps *m, const struct sluice_key *k)
{
	unsigned i = key_index(k);

	if (k->policy_id != POLICY_ID || i >= the_sim->o.keys)
		return NULL;
	return &the_sim->node[m->lease].e[i];
}

/* Every present entry's key and @off-th field of @size bytes, or every hot request (@hot). */
static int read_all(const struct lease_maps *m, size_t off, size_t size, int hot,
		    struct sluice_key **keys, void **vals, size_t *n)
{
	struct node *nd = &the_sim->node[m->lease];
	unsigned i;

	*n = 0;
	*keys = calloc(the_sim->o.keys, sizeof(**keys));
	*vals = calloc(the_sim->o.keys, size);
	if (!*keys || !*vals)
		return -ENOMEM;
	for (i = 0; i < the_sim->o.keys; i++) {
		struct kentry *e = &nd->e[i];

		if (hot ? !e->hot : !e->present)
			continue;
		key_of(i, &(*keys)[*n]);
		if (!hot)
			memcpy((char *)*vals + *n * size, (const char *)e + off, size);
		e->hot = hot ? 0 : e->hot;
		(*n)++;
	}
	return 0;
}

/* NOLINTBEGIN(bugprone-reserved-identifier): the names ld's --wrap gives */
/* As kernel/leases.c: an entry unless there is one, live at once only with @expires. */
int __wrap_lease_maps__create(const struct lease_maps *m, const struct sluice_key *k, __u64 want,
			      __u64 expires)
{
	struct kentry *e = entry_of(m, k);

	if (!e)
		return -EINVAL;
	if (e->present)
		return 0;
	e->present = 1;
	memset(&e->l, 0, sizeof(e->l));
	memset(&e->s, 0, sizeof(e->s));
	e->l.want = want;
	e->l.key = *k;
	e->l.expires = expires;
	if (expires)
		e->l.flags = SLUICE_LEASE_F_FROZEN | SLUICE_LEASE_F_RELEASED;
	return 0;
}

int __wrap_lease_maps__delete(const struct lease_maps *m, const struct sluice_key *k)
{
	struct kentry *e = entry_of(m, k);

	if (e)
		e->present = 0;
	return 0;
}

int __wrap_lease_maps__write(const struct lease_maps *m, const struct sluice_key *k,
			     const struct sluice_lease *l)
{
	struct kentry *e = entry_of(m, k);

	if (e && e->present)
		e->l = *l;
	return 0;
}

int __wrap_lease_maps__read_spend(const struct lease_maps *m, const struct sluice_key *k,
				  struct sluice_spend *s)
{
	const struct kentry *e = entry_of(m, k);

	if (!e || !e->present)
		return -ENOENT;
	*s = e->s;
	return 0;
}

int __wrap_lease_maps__read_leases(const struct lease_maps *m, struct sluice_key **keys,
				   struct sluice_lease **vals, size_t *n)
{
	return read_all(m, offsetof(struct kentry, l), sizeof(**vals), 0, keys, (void **)vals, n);
}

int __wrap_lease_maps__read_spends(const struct lease_maps *m, struct sluice_key **keys,
				   struct sluice_spend **vals, size_t *n)
{
	return read_all(m, offsetof(struct kentry, s), sizeof(**vals), 0, keys, (void **)vals, n);
}

int __wrap_lease_maps__take_hot(const struct lease_maps *m, struct sluice_key **keys,
				struct sluice_hot **vals, size_t *n)
{
	return read_all(m, 0, sizeof(**vals), 1, keys, (void **)vals, n);
}
/* NOLINTEND(bugprone-reserved-identifier) */

/* The most a lease lets the program spend past reported (compile.c's lease_max_of()). */
static __u64 lease_max(const struct sim *x)
{
	__u64 life_ms = SLUICE_LEASE_KERNEL_SYNCS * x->o.sync_ms;
	double k = x->o.cheat;

	return (__u64)(k * (double)x->o.burst) +
	       (__u64)ceil(k * (double)x->o.rate * (double)life_ms / MS_PER_SEC);
}

/* Of @units, what a lump lease lets the program spend (lease_spend()). */
static __u64 lump_take(const struct kentry *e, __u64 max, __u64 units)
{
	__u64 used = e->s.spent - e->l.reported, room = 0;

	if (e->s.spent < e->l.granted && e->s.spent >= e->l.reported && used < max) {
		room = e->l.granted - e->s.spent;
		if (max - used < room)
			room = max - used;
	}
	return units < room ? units : room;
}

/* Of @units at @now (ticks), what a rate lease's share admits (share_spend()), one by one. */
static __u64 share_take(const struct sim *x, struct kentry *e, __u64 now, __u64 units)
{
	const __u64 incr = sluice_gcra_incr(1, x->g.interval_mant, x->g.interval_shift);
	const __u64 clock = sluice_share_clock(&e->l, now);
	const __u64 tol = e->l.tol < x->g.tolerance ? e->l.tol : x->g.tolerance;
	__u64 take = 0;

	while (take < units &&
	       sluice_share_admit(e->s.tat, e->l.floor, clock, incr, tol, &e->s.tat))
		take++;
	return take;
}

/*
 * Node @nd's XDP program from its last step to @now_ns: each key's demand
 * over that time, each unit spent from a live lease while it lasts
 * (bpf/lease.bpf.h's lease_spend() or share_spend()), else denied; a key without a live
 * lease is cold, and strict: denied, and asked to be made hot.
 */
static void kernel_step(struct sim *x, struct node *nd, __u64 now_ns)
{
	double dt = (double)(now_ns - nd->last_ns) / (double)SLUICE_NSEC_PER_SEC;
	__u64 now = sluice_gcra_ticks(now_ns), max = lease_max(x);
	size_t b = (now_ns - x->t0_ns) / (BUCKET_MS * NS_PER_MS);
	unsigned i;

	nd->last_ns = now_ns;
	for (i = 0; i < x->o.keys; i++) {
		struct kentry *e = &nd->e[i];
		__u64 units, take;

		e->due += nd->demand * dt;
		units = (__u64)e->due;
		e->due -= (double)units;
		if (!units)
			continue;
		if (!e->present || (__s64)(e->l.expires - now) <= 0) {
			e->hot = 1;
			/* rate leases: no hot request, the demand a cold key's asks */
			e->s.denied += x->o.rate_leases ? units : 0;
			continue;
		}
		if (e->l.flags & SLUICE_LEASE_F_RATE)
			take = share_take(x, e, now, units);
		else
			take = lump_take(e, max, units);
		e->s.spent += take;
		e->s.denied += units - take;
		if (take && b < x->n_buckets)
			__atomic_fetch_add(&x->admit[i * x->n_buckets + b], take, __ATOMIC_RELAXED);
	}
}

/* Each key's rate lease name: LEASE_RATE_FMT, in its group as the planner names buckets. */
static int rate_keys(struct sim *x, const struct lease_policy *p)
{
	static const char digits[] = "0123456789abcdef";
	struct sluice_key k;
	unsigned i, j;

	x->lk = calloc(x->o.keys, sizeof(*x->lk));
	if (!x->lk)
		return -ENOMEM;
	for (i = 0; i < x->o.keys; i++) {
		struct lease_key *lk = &x->lk[i];

		key_of(i, &k);
		for (j = 0; j < SLUICE_ADDR_LEN; j++) {
			lk->field[2 * j] = digits[k.addr[j] >> 4];
			lk->field[2 * j + 1] = digits[k.addr[j] & 0xf];
		}
		snprintf(lk->key, sizeof(lk->key), LEASE_RATE_FMT, x->prefix, p->name,
			 p->tag[keys_group(lk->field)]);
		lk->rate_units = p->rate_units;
		lk->rate_period_us = p->rate_period_us;
		lk->burst = p->burst;
		lk->tolerance = p->tolerance;
		lk->cap = p->burst;
	}
	return 0;
}

static int node_open(struct sim *x, struct node *nd, unsigned id)
{
	struct lease_plan *plan = calloc(1, sizeof(*plan));
	struct backend_config cfg = { .timeout_ns = STATS_TIMEOUT * SLUICE_NSEC_PER_SEC,
				      .cancel_fd = -1 };
	struct policy_rate rate = { .period_ns = SLUICE_NSEC_PER_SEC, .cost = SLUICE_COST_PKTS };
	char err[STORE_ERR_LEN];
	struct lease_policy *p;

	nd->id = id;
	snprintf(nd->name, sizeof(nd->name), "n%u", id);
	nd->demand = x->o.demand * pow(id + 1, -x->o.skew);
	nd->e = calloc(x->o.keys, sizeof(*nd->e));
	p = calloc(1, sizeof(*p));
	if (plan)
		plan->att = calloc(1, sizeof(*plan->att));
	if (!nd->e || !p || !plan || !plan->att) {
		free(p);
		lease_plan__free(plan);
		return -ENOMEM;
	}
	plan->interval_ns = x->o.sync_ms * NS_PER_MS;
	snprintf(plan->prefix, sizeof(plan->prefix), "%s", x->prefix);
	plan->n_att = 1;
	snprintf(plan->att[0].holder, sizeof(plan->att[0].holder), "%s/sim0", nd->name);
	plan->att[0].maps =
		(struct lease_maps){ .lease = (int)id, .spend = (int)id, .hot = (int)id };
	*p = (struct lease_policy){ .id = POLICY_ID,
				    .rate_units = (__u64)(x->o.cheat * (double)x->o.rate),
				    .rate_period_us = MS_PER_SEC * US_PER_MS,
				    .burst = (__u64)(x->o.cheat * (double)x->o.burst),
				    .strict = 1 };
	rate.amount = p->rate_units;
	if (compile_gcra(&rate, p->burst, &x->g, err, sizeof(err))) {
		fprintf(stderr, "sluice-fleet-sim: %s\n", err);
		free(p);
		lease_plan__free(plan);
		return -ERANGE;
	}
	p->tolerance = x->g.tolerance;
	snprintf(p->name, sizeof(p->name), "%s", x->prefix);
	lease_policy_tags(p);
	plan->att[0].pol = p;
	plan->att[0].n_pol = 1;
	nd->ls = lease_state__new(plan); /* owns @plan, and @p, from here on */
	if (!nd->ls)
		return -errno;
	/* Without --old, rate leases from the start; with it, what the first beat says. */
	nd->layout = x->o.rate_leases && !x->o.old ? STORE_LAYOUT_RATE : STORE_LAYOUT_LUMP;
	if (x->o.rate_leases) {
		nd->rate = rate_table__new();
		nd->rk = calloc(x->o.keys, sizeof(*nd->rk));
		if (!nd->rate || !nd->rk)
			return -ENOMEM;
		if (!id && rate_keys(x, p))
			return -ENOMEM;
	}
	if (x->mem) {
		nd->be = backend_mem__open(x->mem);
	} else {
		snprintf(cfg.url, sizeof(cfg.url), "%s", x->o.url);
		nd->be = backends__open(&cfg);
	}
	return nd->be ? 0 : -errno;
}

/*
 * A round of @nd on rate leases at @now_ns, as the planner's rate_step()
 * runs it: @call, renew what is due (not while switching layouts). Every
 * key is hot from the start (none pending), no policy is closed on a
 * failed shard (none renewed at every sync). The planner's last answered
 * sync is its beat's or probe's; here, a full round that reached the
 * store (node_round()), as the planner's would have.
 */
static int rate_round(struct sim *x, struct node *nd, __u64 now_ns, int full, int call, char *err,
		      size_t len)
{
	struct rate_round r = { .be = nd->be,
				.full = full,
				.call = call,
				.holder = nd->name,
				.interval_ns = x->o.sync_ms * NS_PER_MS,
				.now_ns = now_ns,
				.ok_ns = full ? now_ns : nd->ok_ns };
	unsigned i;
	int ret;

	nd->ok_ns = r.ok_ns;
	for (i = 0; i < x->o.keys; i++) {
		struct rate_key *k = &nd->rk[i];

		*k = (struct rate_key){ .lk = x->lk[i], .l = nd->e[i].l, .s = nd->e[i].s };
		key_of(i, &k->key);
	}
	ret = rate_table__step(nd->rate, &r, nd->rk, x->o.keys, err, len);
	for (i = 0; i < x->o.keys; i++) {
		if (!nd->rk[i].write)
			continue;
		nd->e[i].present = 1;
		nd->e[i].l = nd->rk[i].l;
	}
	return ret;
}

/*
 * A new node's beat (--old), as an agent of the rate layout beats: the
 * layout it uses from now on. 0, or the beat's error.
 */
static int layout_round(struct sim *x, struct node *nd, __u64 beat_us, char *err, size_t len)
{
	struct budget_sync b = { .fleet = x->fleet,
				 .node = nd->name,
				 .beat_ttl_us = beat_us,
				 .layout = STORE_LAYOUT_RATE };
	int ret = backend__sync(nd->be, &b, err, len);

	if (ret)
		return ret;
	if (x->o.no_agree || b.fleet_layout == STORE_LAYOUT_LUMP) {
		if (!x->o.no_agree)
			rate_table__clear(nd->rate); /* shares of a switch back: as note_layout() */
		nd->layout = x->o.no_agree ? STORE_LAYOUT_RATE : STORE_LAYOUT_LUMP;
		nd->rate_from_ns = 0;
	} else if (nd->layout == STORE_LAYOUT_LUMP) {
		nd->layout = STORE_LAYOUT_RATE;
		/* from the answer: later than any old beat's expiry, on any clock */
		nd->rate_from_ns = mono_ns() + LAYOUT_SWITCH_SYNCS * x->o.sync_ms * NS_PER_MS;
	}
	return 0;
}

/* One round of @nd on the layout it uses. */
static int layout_sync(struct sim *x, struct node *nd, __u64 now_ns, int full, __u64 *live,
		       char *err, size_t len)
{
	const __u64 beat_us = STORE_MEMBER_BEATS * x->o.sync_ms * US_PER_MS;
	const int old = nd->id < x->o.old;

	if (!old && x->o.old && full && layout_round(x, nd, beat_us, err, len))
		return -1;
	/* as the planner: while switching, full rounds hold every key, early ones wait */
	if (nd->layout == STORE_LAYOUT_RATE && now_ns < nd->rate_from_ns)
		return full ? rate_round(x, nd, now_ns, 1, 0, err, len) : 0;
	if (nd->layout == STORE_LAYOUT_RATE)
		return rate_round(x, nd, now_ns, full,
				  full || (nd->tick - 1) % LEASE_EARLY_DIV % RATE_EARLY_EVERY == 0,
				  err, len);
	return lease_round(nd->ls, nd->be, old || !x->o.old ? x->fleet : NULL, nd->name, beat_us,
			   full, live, err, len);
}

/* One round of @nd at @now_ns, as the store's thread runs it. */
static void node_round(struct sim *x, struct node *nd, __u64 now_ns)
{
	char err[STORE_ERR_LEN] = "";
	/*
	 * Every LEASE_EARLY_DIV rounds, as the store's thread runs them, and
	 * at the latest --sync-ms after the last: a node's rounds run late
	 * behind the other nodes' calls on its thread (an agent has its own),
	 * and it should still sync, renew and give back every interval.
	 */
	int full =
		nd->tick % LEASE_EARLY_DIV == 0 || now_ns - nd->full_ns >= x->o.sync_ms * NS_PER_MS;
	__u64 live = 0;

	if (full) {
		nd->tick = 0;
		nd->full_ns = now_ns;
	}
	nd->tick++;

	if (nd->id < x->o.old) {
		if (x->old_stop_ns && now_ns >= x->old_stop_ns)
			return; /* stopped, its kernel with it */
		nd->last_beat_ns = full ? now_ns : nd->last_beat_ns;
	}
	kernel_step(x, nd, now_ns);
	if (x->mem)
		mem_store__set_now(x->mem, now_ns / SLUICE_NSEC_PER_USEC);
	if (!nd->be->ops->is_connected(nd->be) &&
	    (!full || nd->be->ops->connect(nd->be, err, sizeof(err)))) {
		nd->failed += full;
		return;
	}
	if (layout_sync(x, nd, now_ns, full, &live, err, sizeof(err))) {
		if (!nd->failed++)
			fprintf(stderr, "fleet-sim: node %s: %s\n", nd->name, err);
		nd->be->ops->drop(nd->be);
		return;
	}
	if (full && now_ns >= x->measure_ns)
		__atomic_fetch_add(&x->measured_full, 1, __ATOMIC_RELAXED);
}

struct worker {
	struct sim *x;
	unsigned first, n;
};

/* Run nodes [first, first + n) until the end: each node's next round when it is due. */
static void *work(void *arg)
{
	const struct worker *w = arg;
	struct sim *x = w->x;
	__u64 step = x->o.sync_ms * NS_PER_MS / LEASE_EARLY_DIV, now;
	struct timespec ts;
	unsigned i;

	while ((now = mono_ns()) < x->end_ns) {
		__u64 next = x->end_ns;

		for (i = w->first; i < w->first + w->n; i++) {
			struct node *nd = &x->node[i];

			if (nd->next_ns <= now) {
				node_round(x, nd, now);
				/* behind: the next round at once, not a backlog of them */
				nd->next_ns = nd->next_ns + step > now ? nd->next_ns + step : now;
				now = mono_ns();
			}
			if (nd->next_ns < next)
				next = nd->next_ns;
		}
		if (next > now) {
			ts.tv_sec = (time_t)((next - now) / SLUICE_NSEC_PER_SEC);
			ts.tv_nsec = (long)((next - now) % SLUICE_NSEC_PER_SEC);
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

/* This process's CPU seconds so far, all threads. */
static double self_cpu(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) /
		       (double)(MS_PER_SEC * US_PER_MS);
}

/* A store server's INFO figures: commands (INFO itself not counted) and CPU seconds. */
struct server_stats {
	double calls, cpu;
};

static redisContext *stats_connect(const char *where)
{
	struct timeval tv = { .tv_sec = STATS_TIMEOUT };
	char host[BACKEND_ADDR_LEN];
	const char *colon = strrchr(where, ':');

	if (where[0] == '/')
		return redisConnectUnixWithTimeout(where, tv);
	if (!colon || (size_t)(colon - where) >= sizeof(host))
		return NULL;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - where), where);
	return redisConnectWithTimeout(host, atoi(colon + 1), tv);
}

static int server_stats(const char *where, struct server_stats *out)
{
	redisContext *c = stats_connect(where);
	redisReply *r = c && !c->err ? redisCommand(c, "INFO all") : NULL;
	const char *p;
	double u = 0, s = 0, n;
	int ret = -EIO;

	memset(out, 0, sizeof(*out));
	if (r && r->type == REDIS_REPLY_STRING) {
		for (p = r->str; (p = strstr(p, "cmdstat_")); p++) {
			if (strncmp(p, "cmdstat_info:", strlen("cmdstat_info:")) != 0 &&
			    sscanf(strchr(p, ':'), ":calls=%lf", &n) == 1)
				out->calls += n;
		}
		p = strstr(r->str, "used_cpu_sys:");
		if (p && sscanf(p, "used_cpu_sys:%lf", &s) == 1 &&
		    (p = strstr(r->str, "used_cpu_user:")) &&
		    sscanf(p, "used_cpu_user:%lf", &u) == 1) {
			out->cpu = s + u;
			ret = 0;
		}
	}
	if (ret)
		fprintf(stderr, "fleet-sim: %s: no INFO commandstats/cpu: %s\n", where,
			c && c->err ? c->errstr : "no reply");
	freeReplyObject(r);
	redisFree(c);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: sluice-fleet-sim [options]\n"
		"  --url URL        the store: redis://H:P, unix:///path, cluster://H:P, or mem\n"
		"                   (the in-memory store: one thread, no command counts)\n"
		"  --stats WHERE    a server whose INFO to read: H:P or /path.sock; repeat for\n"
		"                   each primary of a cluster (default: the URL's server)\n"
		"  --nodes N        simulated nodes (10)     --keys K   hot keys (100)\n"
		"  --rate R         the policy's units a second per key (40)\n"
		"  --burst B        its burst (20)           --sync-ms MS  the sync interval "
		"(100)\n"
		"  --demand D       units a second per node per key (4 x rate)\n"
		"  --skew S         node i's demand is D x (i+1)^-S (0: uniform)\n"
		"  --threads T      threads the nodes share (2)\n"
		"  --warmup S       seconds before measuring (3)  --seconds S  measured (10)\n"
		"  --cheat K        the nodes' policy at K x rate and burst, the bound not (1)\n"
		"  --rate-leases    rate leases (budget/planrate.h), not lump leases\n"
		"  --old N          with --rate-leases: N nodes speak the planner's leases\n"
		"                   alone; the others take rate leases once none of them is live\n"
		"  --old-stop S     the old nodes stop after S s (never)\n"
		"  --no-agree       the others take rate leases from the start, old nodes or not\n"
		"  --json           one JSON object instead of the table\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = { { "url", required_argument, NULL, 'u' },
					    { "stats", required_argument, NULL, 'S' },
					    { "nodes", required_argument, NULL, 'n' },
					    { "keys", required_argument, NULL, 'k' },
					    { "rate", required_argument, NULL, 'r' },
					    { "burst", required_argument, NULL, 'b' },
					    { "sync-ms", required_argument, NULL, 'i' },
					    { "demand", required_argument, NULL, 'd' },
					    { "skew", required_argument, NULL, 'z' },
					    { "threads", required_argument, NULL, 't' },
					    { "warmup", required_argument, NULL, 'w' },
					    { "seconds", required_argument, NULL, 's' },
					    { "cheat", required_argument, NULL, 'c' },
					    { "json", no_argument, NULL, 'j' },
					    { "rate-leases", no_argument, NULL, 'R' },
					    { "old", required_argument, NULL, 'o' },
					    { "old-stop", required_argument, NULL, 'O' },
					    { "no-agree", no_argument, NULL, 'A' },
					    { "help", no_argument, NULL, 'h' },
					    { 0 } };
	int c;

	*o = (struct opts){ .url = "mem",
			    .nodes = 10,
			    .keys = 100,
			    .threads = 2,
			    .rate = 40,
			    .burst = 20,
			    .sync_ms = 100,
			    .demand = -1,
			    .cheat = 1,
			    .warmup = 3,
			    .seconds = 10 };
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'u': snprintf(o->url, sizeof(o->url), "%s", optarg); break;
		case 'S':
			if (o->n_stats == STATS_MAX)
				return -1;
			o->stats[o->n_stats++] = optarg;
			break;
		case 'n': o->nodes = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'k': o->keys = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'r': o->rate = strtoull(optarg, NULL, 0); break;
		case 'b': o->burst = strtoull(optarg, NULL, 0); break;
		case 'i': o->sync_ms = strtoull(optarg, NULL, 0); break;
		case 'd': o->demand = strtod(optarg, NULL); break;
		case 'z': o->skew = strtod(optarg, NULL); break;
		case 't': o->threads = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'w': o->warmup = strtod(optarg, NULL); break;
		case 's': o->seconds = strtod(optarg, NULL); break;
		case 'c': o->cheat = strtod(optarg, NULL); break;
		case 'j': o->json = 1; break;
		case 'R': o->rate_leases = 1; break;
		case 'o': o->old = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'O': o->old_stop = strtod(optarg, NULL); break;
		case 'A': o->no_agree = 1; break;
		case 'h': usage(stdout); exit(0);
		default: return -1;
		}
	}
	if (o->demand < 0)
		o->demand = 4.0 * (double)o->rate;
	if (optind != argc || !o->nodes || o->nodes > NODES_MAX || !o->keys || o->keys > KEYS_MAX ||
	    !o->rate || !o->burst || o->sync_ms < LEASE_EARLY_DIV || !o->threads ||
	    o->threads > THREADS_MAX || o->cheat < 1 || o->seconds * MS_PER_SEC < WINDOW_MS ||
	    o->warmup < 0 || o->skew < 0 || o->old_stop < 0 ||
	    (o->old && (!o->rate_leases || o->old >= o->nodes)) ||
	    ((o->old_stop > 0 || o->no_agree) && !o->old))
		return -1;
	if (strcmp(o->url, "mem") == 0)
		o->threads = 1; /* the in-memory store is not thread-safe */
	else if (!o->n_stats && strncmp(o->url, "unix://", strlen("unix://")) == 0)
		o->stats[o->n_stats++] = o->url + strlen("unix://");
	else if (!o->n_stats && strncmp(o->url, "redis://", strlen("redis://")) == 0)
		o->stats[o->n_stats++] = o->url + strlen("redis://");
	return 0;
}

/* The worst 1 s of admitted units of any key in the measured buckets, and its key. */
static __u64 worst_window(const struct sim *x, size_t from, unsigned *key)
{
	size_t w = WINDOW_MS / BUCKET_MS, b;
	__u64 worst = 0, sum;
	unsigned i;

	for (i = 0; i < x->o.keys; i++) {
		const __u64 *a = &x->admit[i * x->n_buckets];

		for (sum = 0, b = from; b < x->n_buckets; b++) {
			sum += a[b];
			if (b >= from + w)
				sum -= a[b - w];
			if (sum > worst) {
				worst = sum;
				*key = i;
			}
		}
	}
	return worst;
}

/*
 * --old: when the old nodes last beat, and when the others took rate
 * leases (LAYOUT_SWITCH_SYNCS intervals after the answer of their first
 * beat that allowed it), seconds from the start; how many did.
 */
struct layout_times {
	double old_last, first, last;
	unsigned n;
};

static struct layout_times layout_times(const struct sim *x)
{
	__u64 old_last = 0, first = 0, last = 0, t;
	struct layout_times lt = { 0 };
	unsigned i;

	for (i = 0; i < x->o.nodes; i++) {
		const struct node *nd = &x->node[i];

		if (i < x->o.old) {
			old_last = nd->last_beat_ns > old_last ? nd->last_beat_ns : old_last;
			continue;
		}
		if (nd->layout != STORE_LAYOUT_RATE)
			continue;
		t = nd->rate_from_ns ? nd->rate_from_ns : x->t0_ns;
		first = !lt.n || t < first ? t : first;
		last = t > last ? t : last;
		lt.n++;
	}
	lt.old_last = (double)(old_last - x->t0_ns) / SLUICE_NSEC_PER_SEC;
	lt.first = lt.n ? (double)(first - x->t0_ns) / SLUICE_NSEC_PER_SEC : 0;
	lt.last = lt.n ? (double)(last - x->t0_ns) / SLUICE_NSEC_PER_SEC : 0;
	return lt;
}

/* Admitted units over the measured buckets, all keys. */
static __u64 admitted(const struct sim *x, size_t from)
{
	__u64 sum = 0;
	size_t i, b;

	for (i = 0; i < x->o.keys; i++)
		for (b = from; b < x->n_buckets; b++)
			sum += x->admit[i * x->n_buckets + b];
	return sum;
}

int main(int argc, char **argv)
{
	struct server_stats s0[STATS_MAX], s1[STATS_MAX];
	struct worker w[THREADS_MAX];
	pthread_t th[THREADS_MAX];
	static struct sim x; /* static: the_sim, which the wrapped map calls use, points at it */
	double wall, calls = 0, cmds, cpu, worst_ratio, steady, syncs, per_core, sim0, sim_cpu;
	__u64 worst, bound, failed = 0;
	unsigned i, per, worst_key = 0;
	struct layout_times lt;
	size_t from;
	int stats_ok = 1;

	if (parse(argc, argv, &x.o)) {
		usage(stderr);
		return ERR_EXIT;
	}
	the_sim = &x;
	snprintf(x.prefix, sizeof(x.prefix), "fleetsim%d", (int)getpid());
	snprintf(x.fleet, sizeof(x.fleet), "%s:nodes", x.prefix);
	x.n_buckets = (size_t)((x.o.warmup + x.o.seconds) * MS_PER_SEC / BUCKET_MS) + 1;
	x.admit = calloc((size_t)x.o.keys * x.n_buckets, sizeof(*x.admit));
	x.node = calloc(x.o.nodes, sizeof(*x.node));
	if (strcmp(x.o.url, "mem") == 0)
		x.mem = mem_store__new(mono_ns() / SLUICE_NSEC_PER_USEC);
	if (!x.admit || !x.node || (strcmp(x.o.url, "mem") == 0 && !x.mem)) {
		fprintf(stderr, "fleet-sim: out of memory\n");
		return ERR_EXIT;
	}
	for (i = 0; i < x.o.nodes; i++) {
		if (node_open(&x, &x.node[i], i)) {
			fprintf(stderr, "fleet-sim: node %u: %s\n", i, strerror(errno));
			return ERR_EXIT;
		}
	}
	x.t0_ns = mono_ns();
	x.measure_ns = x.t0_ns + (__u64)(x.o.warmup * SLUICE_NSEC_PER_SEC);
	x.end_ns = x.measure_ns + (__u64)(x.o.seconds * SLUICE_NSEC_PER_SEC);
	if (x.o.old_stop > 0)
		x.old_stop_ns = x.t0_ns + (__u64)(x.o.old_stop * SLUICE_NSEC_PER_SEC);
	for (i = 0; i < x.o.nodes; i++) {
		/* phases spread over an interval, as independent agents' are */
		x.node[i].next_ns = x.t0_ns + (__u64)i * x.o.sync_ms * NS_PER_MS / x.o.nodes;
		x.node[i].last_ns = x.node[i].next_ns;
	}
	per = (x.o.nodes + x.o.threads - 1) / x.o.threads;
	for (i = 0; i < x.o.threads && i * per < x.o.nodes; i++) {
		w[i] = (struct worker){ .x = &x, .first = i * per, .n = x.o.nodes - i * per };
		if (w[i].n > per)
			w[i].n = per;
		if (pthread_create(&th[i], NULL, work, &w[i])) {
			fprintf(stderr, "fleet-sim: no thread\n");
			return ERR_EXIT;
		}
	}
	/* the measured time: INFO at its start and end */
	while (mono_ns() < x.measure_ns)
		usleep(BUCKET_MS * US_PER_MS);
	for (per = 0; per < x.o.n_stats; per++)
		stats_ok &= !server_stats(x.o.stats[per], &s0[per]);
	sim0 = self_cpu();
	while (i--)
		pthread_join(th[i], NULL);
	wall = (double)(mono_ns() - x.measure_ns) / SLUICE_NSEC_PER_SEC;
	sim_cpu = PCT * (self_cpu() - sim0) / wall;
	for (per = 0; per < x.o.n_stats; per++) {
		stats_ok &= !server_stats(x.o.stats[per], &s1[per]);
		calls += s1[per].calls - s0[per].calls;
	}
	if (!stats_ok)
		return ERR_EXIT;
	for (i = 0; i < x.o.nodes; i++)
		failed += x.node[i].failed;

	lt = layout_times(&x);
	from = (size_t)(x.o.warmup * MS_PER_SEC / BUCKET_MS);
	worst = worst_window(&x, 0, &worst_key); /* from the start: the first second too */
	bound = x.o.burst + x.o.rate * WINDOW_MS / MS_PER_SEC;
	worst_ratio = (double)worst / (double)bound;
	cmds = calls / wall;
	syncs = (double)x.measured_full / x.o.nodes / wall;
	for (cpu = 0, per = 0; per < x.o.n_stats; per++)
		cpu += (s1[per].cpu - s0[per].cpu) / wall;
	/* (node, hot key) pairs one store core serves at the plan's sync rate */
	per_core = cpu > 0 ? x.o.nodes * x.o.keys * syncs * x.o.sync_ms / MS_PER_SEC / cpu : 0;
	steady = (double)admitted(&x, from) / (double)x.o.keys / x.o.seconds / (double)x.o.rate;
	if (x.o.json) {
		printf("{\"nodes\":%u,\"keys\":%u,\"rate\":%llu,\"burst\":%llu,\"sync_ms\":%llu,"
		       "\"demand\":%g,\"cheat\":%g,\"seconds\":%.3f,\"store_cmds_per_s\":%.1f,"
		       "\"cmds_per_node_key_s\":%.2f,\"syncs_per_node_s\":%.2f,"
		       "\"failed_rounds\":%llu,\"admitted_per_limit\":%.3f,\"worst_window\":%llu,"
		       "\"bound\":%llu,\"worst_key\":%u,\"pairs_per_core\":%.0f,"
		       "\"sim_cpu_pct\":%.1f,\"store_cpu_pct\":[",
		       x.o.nodes, x.o.keys, x.o.rate, x.o.burst, x.o.sync_ms, x.o.demand, x.o.cheat,
		       wall, cmds, cmds / x.o.nodes / x.o.keys, syncs, failed, steady, worst, bound,
		       worst_key, per_core, sim_cpu);
		for (per = 0; per < x.o.n_stats; per++)
			printf("%s%.1f", per ? "," : "", PCT * (s1[per].cpu - s0[per].cpu) / wall);
		printf("]");
		if (x.o.old)
			printf(",\"old_last_beat_s\":%.6f,\"rate_nodes\":%u,\"rate_from_s\":%.6f,"
			       "\"rate_all_from_s\":%.6f,\"beat_ttl_s\":%.3f,\"switch_s\":%.3f",
			       lt.old_last, lt.n, lt.first, lt.last,
			       (double)(STORE_MEMBER_BEATS * x.o.sync_ms) / MS_PER_SEC,
			       (double)(LAYOUT_SWITCH_SYNCS * x.o.sync_ms) / MS_PER_SEC);
		printf(",\"ok\":%s}\n", worst <= bound ? "true" : "false");
	} else {
		printf("%-6s %-6s %-9s %-15s %-12s %-9s %-11s %-10s %s\n", "nodes", "keys",
		       "cmds/s", "cmds/node/key/s", "syncs/node/s", "admit/lim", "worst/bound",
		       "pairs/core", "store CPU %");
		printf("%-6u %-6u %-9.0f %-15.2f %-12.2f %-9.3f %5llu/%-5llu %-10.0f ", x.o.nodes,
		       x.o.keys, cmds, cmds / x.o.nodes / x.o.keys, syncs, steady, worst, bound,
		       per_core);
		for (per = 0; per < x.o.n_stats; per++)
			printf("%s%.0f", per ? "+" : "", PCT * (s1[per].cpu - s0[per].cpu) / wall);
		printf("%s\n", x.o.n_stats ? "" : "n/a");
		if (x.o.old)
			printf("layout: old nodes' last beat %.3f s; %u of %u others on rate "
			       "leases, from %.3f s to %.3f s (%u intervals after their switch)\n",
			       lt.old_last, lt.n, x.o.nodes - x.o.old, lt.first, lt.last,
			       LAYOUT_SWITCH_SYNCS);
		printf("plan: %llu syncs/node/s; failed rounds %llu; simulator CPU %.0f %%; "
		       "worst window %.3f of its bound (key %u): %s\n",
		       MS_PER_SEC / x.o.sync_ms, failed, sim_cpu, worst_ratio, worst_key,
		       worst <= bound ? "within" : "OVER");
	}
	for (i = 0; i < x.o.nodes; i++) {
		lease_state__free(x.node[i].ls);
		backend__free(x.node[i].be);
		free(x.node[i].e);
		rate_table__free(x.node[i].rate);
		free(x.node[i].rk);
	}
	free(x.lk);
	mem_store__free(x.mem);
	free(x.node);
	free(x.admit);
	return worst <= bound ? 0 : 1;
}
