// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The agent's side of the shared budget; see budget/planner.h and
 * docs/shared-budget.md. Runs only on the store's thread.
 *
 * Accounting. The kernel's spent only grows; each lease entry remembers
 * (reported) the spent it last told the store about. A sync reads spent S,
 * reports used = S − reported, and the store answers what this node now
 * holds, H: the part of its lease it did not use plus the top-up. The entry
 * becomes granted = S + H, reported = S. Whatever the kernel spends after S
 * is charged to H, so the units spent while the answer travels are neither
 * lost nor counted twice. When a sync fails nothing is written, and the
 * next one reports from the same reported: if the failed call did run in
 * Redis, the node is charged twice for the same units — an under-admission,
 * never an over-admission.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "sluice/compiler.h"
#include "sluice/gcra.h"
#include "budget/planner.h"
#include "budget/planrate.h"
#include "kernel/leases.h"

#define HEX_ADDR_LEN (2 * SLUICE_ADDR_LEN + 1)

/* One hot key as a round sees it. */
struct entry {
	struct sluice_key key;
	struct sluice_lease l;
	struct sluice_spend s;
	const struct lease_policy *p;
	int send;    /* part of this round's pipeline */
	int release; /* that call hands what is left back to the bucket */
	int hold;    /* kept without a call: nothing left to spend, expiry renewed */
	int gone;    /* deleted this round */
};

/* The fleet's hot keys of one interface, from the last full sync, sorted. */
struct key_set {
	struct sluice_key *v;
	size_t n, cap;
};

struct lease_state {
	struct lease_plan *plan;
	struct key_set *fleet;	  /* by attachment */
	__u64 live;		  /* the fleet's size at the last beat; 0 unknown */
	unsigned int layout;	  /* the fleet's store layout, as the last beat said */
	__u64 layout_from_ns;	  /* its leases from then on; before, none (hold) */
	__u64 ok_ns;		  /* when the last full sync the store answered began */
	unsigned int quiet;	  /* full syncs since the last answered beat */
	__u64 news;		  /* the fleet's news counter as last read (LEASE_NEWS_FMT) */
	int news_known;		  /* @news was read since the store opened */
	size_t told;		  /* keys this full sync added to the hot sets */
	struct rate_table **rate; /* by attachment */
	unsigned int early;	  /* early rounds since the last full sync */
	struct lease_stats stats;
};

/* Scratch of one attachment's round. */
struct round {
	struct lease_state *ls;
	struct lease_att *att;
	size_t att_i;
	struct entry *e;
	size_t n;
	char **add;	     /* hex members this node saw hot, by policy */
	size_t *n_add;	     /* by policy */
	struct key_set seen; /* members the store returned */
	struct budget_backend *be;
	size_t told; /* keys it added to the hot sets */
};

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct sluice_key));
}

static int set_add(struct key_set *s, const struct sluice_key *k)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct sluice_key *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = *k;
	return 0;
}

static int set_has(const struct key_set *s, const struct sluice_key *k)
{
	return s->n && bsearch(k, s->v, s->n, sizeof(*k), key_cmp);
}

static void hex_of(const __u8 *addr, char *out)
{
	static const char digits[] = "0123456789abcdef";
	int i;

	for (i = 0; i < SLUICE_ADDR_LEN; i++) {
		out[2 * i] = digits[addr[i] >> 4];
		out[2 * i + 1] = digits[addr[i] & 0xf];
	}
	out[2 * SLUICE_ADDR_LEN] = '\0';
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* 0, or -EINVAL for anything but 32 lowercase hex digits. */
static int addr_of_hex(const char *hex, __u8 *addr)
{
	int i, hi, lo;

	if (strlen(hex) != 2 * SLUICE_ADDR_LEN)
		return -EINVAL;
	for (i = 0; i < SLUICE_ADDR_LEN; i++) {
		hi = nibble(hex[2 * i]);
		lo = nibble(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		addr[i] = hi << 4 | lo;
	}
	return 0;
}

static const struct lease_policy *policy_of(const struct lease_att *a, __u32 id)
{
	size_t i;

	for (i = 0; i < a->n_pol; i++)
		if (a->pol[i].id == id)
			return &a->pol[i];
	return NULL;
}

static __u64 live_of(const struct lease_state *ls)
{
	return ls->live ? ls->live : 1;
}

/* What a key asks for when it turns hot here: its share of the burst. */
static __u64 first_want(const struct lease_state *ls, const struct lease_policy *p)
{
	__u64 live = live_of(ls);

	return (p->burst + live - 1) / live;
}

static int note_hot(struct round *r, const struct lease_policy *p, const struct sluice_key *k)
{
	size_t j = p - r->att->pol;
	char *hex;

	if (r->n_add[j] >= LEASE_HOT_LIMIT)
		return 0; /* the rest are announced by the next syncs */
	hex = malloc(HEX_ADDR_LEN);
	if (!hex)
		return -ENOMEM;
	hex_of(k->addr, hex);
	r->add[j * LEASE_HOT_LIMIT + r->n_add[j]++] = hex;
	return 0;
}

/*
 * Count a failed lease map call (the store's report carries the count to
 * the agent, which logs it). A full sluice_lease is no failure: a new hot
 * key stays cold until entries free up (docs/shared-budget.md).
 */
static int count_map_err(struct round *r, int err)
{
	if (err && err != -E2BIG)
		r->ls->stats.map_errors++;
	return err;
}

/*
 * Keys the XDP program asked to make hot: give each an entry, tell the
 * fleet. How many it tells.
 */
static size_t drain_requests(struct round *r)
{
	const struct lease_policy *p;
	struct sluice_key *keys = NULL;
	struct sluice_hot *vals = NULL;
	size_t n = 0, i, told = 0;

	if (count_map_err(r, lease_maps__take_hot(&r->att->maps, &keys, &vals, &n)))
		n = 0; /* what was taken before the failure is lost: it asks again */
	for (i = 0; i < n; i++) {
		p = policy_of(r->att, keys[i].policy_id);
		if (p && !count_map_err(r, lease_maps__create(&r->att->maps, &keys[i],
							      first_want(r->ls, p), 0))) {
			note_hot(r, p, &keys[i]);
			told++;
		}
	}
	free(keys);
	free(vals);
	return told;
}

/*
 * Keys the fleet has hot and this node has no entry for, right after a
 * sync read them: hold them too, live at once with nothing to spend, so
 * this node stops spending its cold share on them; a packet of theirs
 * here is denied and asks for a top-up.
 */
static void adopt_fleet(struct round *r, __u64 expires)
{
	const struct key_set *f = &r->ls->fleet[r->att_i];
	size_t i;

	for (i = 0; i < f->n; i++)
		count_map_err(r, lease_maps__create(&r->att->maps, &f->v[i], 0, expires));
}

/* A spend counter with its key first, so key_cmp() sorts and finds it. */
struct spend_of {
	struct sluice_key key;
	struct sluice_spend s;
};

/* Read every entry with its counters; drop those of policies gone. */
static int collect(struct round *r)
{
	struct sluice_key *lk = NULL, *sk = NULL;
	struct sluice_lease *lv = NULL;
	struct sluice_spend *sv = NULL;
	struct spend_of *so = NULL, *found;
	size_t nl = 0, ns = 0, i;
	int err;

	err = lease_maps__read_leases(&r->att->maps, &lk, &lv, &nl);
	if (!err)
		err = lease_maps__read_spends(&r->att->maps, &sk, &sv, &ns);
	so = err ? NULL : calloc(ns ? ns : 1, sizeof(*so));
	r->e = so ? calloc(nl ? nl : 1, sizeof(*r->e)) : NULL;
	if (!err && !r->e)
		err = -ENOMEM;
	for (i = 0; !err && i < ns; i++)
		so[i] = (struct spend_of){ .key = sk[i], .s = sv[i] };
	if (!err)
		qsort(so, ns, sizeof(*so), key_cmp);
	for (i = 0; !err && i < nl; i++) {
		struct entry *e = &r->e[r->n];

		e->key = lk[i];
		e->p = policy_of(r->att, lk[i].policy_id);
		if (!e->p) {
			count_map_err(r, lease_maps__delete(&r->att->maps, &lk[i]));
			continue;
		}
		found = ns ? bsearch(&lk[i], so, ns, sizeof(*so), key_cmp) : NULL;
		if (!found)
			continue; /* being created or torn down */
		e->l = lv[i];
		e->s = found->s;
		r->n++;
	}
	free(lk);
	free(lv);
	free(sk);
	free(sv);
	free(so);
	return err;
}

static __u64 sat_sub(__u64 a, __u64 b)
{
	return a > b ? a - b : 0;
}

static __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

/* Demand per interval that keeps a key hot: half this node's share of the rate. */
static __u64 hot_threshold(const struct round *r, const struct lease_policy *p)
{
	__u64 interval_us = r->ls->plan->interval_ns / SLUICE_NSEC_PER_USEC;
	__u64 per_interval = p->rate_units * interval_us / p->rate_period_us;

	return per_interval / (2 * live_of(r->ls)) + 1;
}

/* A locally requested key waiting for its first lease: it stays cold until then. */
static int is_pending(const struct entry *e)
{
	return !e->l.expires && e->l.want;
}

/*
 * Lower what the kernel may spend to what it has spent. That only lowers
 * it, so it needs no store: the kernel entry stays live (its expiry is
 * renewed while syncs succeed), the key stays hot here, and its packets are
 * denied until a top-up — rather than falling back to the cold share.
 */
static void freeze(struct entry *e)
{
	if (e->l.granted > e->s.spent)
		e->l.granted = e->s.spent;
	e->l.flags |= SLUICE_LEASE_F_FROZEN;
	e->l.want = 0; /* reported stays: the store still has to hear of what was spent */
	e->hold = 1;
}

/*
 * A live, unfrozen lease of a key seen within the store's lease time,
 * holding less than the demand that makes a key hot in an interval: too
 * little to be worth handing back, and what lets a sparse key (a few
 * packets a second on this node) pass its next packet at once instead of
 * waiting for a top-up after every quiet interval. Quiet for longer, it is
 * frozen like any other, and costs no calls.
 */
static int is_small(const struct round *r, const struct entry *e)
{
	return e->l.expires && !(e->l.flags & SLUICE_LEASE_F_FROZEN) &&
	       e->l.idle < LEASE_TTL_SYNCS &&
	       sat_sub(e->l.granted, e->s.spent) < hot_threshold(r, e->p);
}

/* Frozen a round ago and nothing spent or denied since: hand the rest back. */
static int can_release(const struct entry *e, __u64 d)
{
	return !d && (e->l.flags & SLUICE_LEASE_F_FROZEN) &&
	       !(e->l.flags & SLUICE_LEASE_F_RELEASED);
}

/*
 * Full round: decide each entry's want from the last interval's demand
 * (spent and denied since the last full sync), keep the key hot in the
 * fleet while that demand is real, and give back what an idle node holds,
 * so that it cannot sit unspent while other nodes need it:
 *
 *   a whole interval without demand   freeze, no call — unless what is
 *                                     left is small (is_small): renew it;
 *   the next round (interval / 10)    one call that reports what was spent
 *                                     and hands the rest back to the bucket:
 *                                     frozen a round earlier, nothing of it
 *                                     can still be spent (a program holds a
 *                                     lease for microseconds), and the
 *                                     store's lease has not expired;
 *   then                              hold, no calls, until demand returns
 *                                     (its first packet waits for an early
 *                                     top-up) or the key leaves the hot set.
 *
 * A hot key the fleet knows and this node never saw is held from the start.
 */
static void plan_full(struct round *r, int lump)
{
	size_t i;

	r->ls->stats.hot_keys += r->n;
	for (i = 0; i < r->n; i++) {
		struct entry *e = &r->e[i];
		__u64 d = sat_sub(e->s.spent + e->s.denied, e->l.seen);
		__u64 dr = sat_sub(e->s.spent + e->s.denied, e->l.topup_seen);

		e->l.idle = d ? 0 : e->l.idle + 1;
		if (e->l.idle >= LEASE_IDLE_SYNCS && !set_has(&r->ls->fleet[r->att_i], &e->key)) {
			count_map_err(r, lease_maps__delete(&r->att->maps, &e->key));
			e->gone = 1;
			continue;
		}
		if (d >= hot_threshold(r, e->p))
			note_hot(r, e->p, &e->key);
		e->l.seen = e->s.spent + e->s.denied;
		if (!lump) {
			continue; /* rate leases, or between layouts */
		} else if (is_pending(e)) {
			e->send = 1; /* its first want stands */
		} else if (d) {
			/* No demand since the last top-up: the traffic stopped; ask for no more. */
			e->l.want = dr ? min_u64(e->p->burst, LEASE_LOOKAHEAD * d) : 0;
			e->send = 1;
		} else if (can_release(e, d)) {
			e->l.want = 0;
			e->release = e->send = 1;
		} else if (is_small(r, e)) {
			e->l.want = 0; /* keep it: renew what is held, ask for no more */
			e->send = 1;
		} else {
			freeze(e);
		}
	}
}

/*
 * How many early rounds a starved key waits between top-ups: while the
 * fleet's bucket is dry, a call brings only what refilled since the last
 * one, so asking every round (interval / LEASE_EARLY_DIV) costs calls and
 * brings no more units. Its units wait in the bucket, which may fill
 * meanwhile but not overflow: at most half the burst's refill time
 * passes. And at most LEASE_STARVED_EVERY_MAX rounds: what waits there is
 * admitted a little later, which moves units from one 1-second window to
 * the next (test_budget.sh's steady windows, L ± 5 %, allow two rounds
 * of refill, not five).
 */
static unsigned int starved_every(const struct round *r, const struct lease_policy *p)
{
	__u64 round_ns = r->ls->plan->interval_ns / LEASE_EARLY_DIV;
	__u64 half_ns = p->burst * p->rate_period_us * SLUICE_NSEC_PER_USEC / (2 * p->rate_units);
	__u64 every = round_ns ? half_ns / round_ns : 1;

	if (every < 1)
		return 1;
	return every < LEASE_STARVED_EVERY_MAX ? (unsigned int)every : LEASE_STARVED_EVERY_MAX;
}

/*
 * Early round: a lease that would not cover the demand seen since its last
 * top-up once more (about half used, or used up: a saturated key asks
 * every round, at any packet rate, and a node whose traffic stopped stops
 * asking at once), but a starved one only every starved_every() rounds;
 * keys still waiting for their first lease; and frozen leases to hand
 * back.
 */
static size_t plan_early(struct round *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->n; i++) {
		struct entry *e = &r->e[i];
		__u64 d = sat_sub(e->s.spent + e->s.denied, e->l.seen);
		__u64 dr = sat_sub(e->s.spent + e->s.denied, e->l.topup_seen);
		__u64 left = sat_sub(e->l.granted, e->s.spent);

		if (can_release(e, d)) {
			e->l.want = 0;
			e->release = 1;
		} else if (!is_pending(e)) {
			if (!dr || left > dr)
				continue;
			if ((e->l.flags & SLUICE_LEASE_F_STARVED) &&
			    r->ls->early % starved_every(r, e->p))
				continue;
			e->l.want = min_u64(e->p->burst,
					    e->l.want > d ? e->l.want : LEASE_LOOKAHEAD * d);
		}
		e->send = 1;
		n++;
	}
	return n;
}

/* A member of hot set @hot from the store: a key, or the reply is wrong (-EINVAL). */
static int on_member(void *arg, size_t hot, const char *member)
{
	struct round *r = arg;
	struct sluice_key k = { .policy_id = r->att->pol[hot].id };
	int err = addr_of_hex(member, k.addr);

	return err ? err : set_add(&r->seen, &k);
}

/* The kernel's expiry of what a sync sent at @sent_ns brings: before the store's. */
static __u64 kernel_expiry(const struct round *r, __u64 sent_ns)
{
	return sluice_gcra_ticks(sent_ns + LEASE_KERNEL_SYNCS * r->ls->plan->interval_ns);
}

void lease_policy_tags(struct lease_policy *p)
{
	keys_group_tags(p->name, p->tag);
}

/*
 * The group of @p's bucket for @k and its field there, into @lk (keys.h):
 * a lump lease's (LEASE_BUCKET_FMT), or with @rate a rate lease's
 * (LEASE_RATE_FMT), with @p's limit.
 */
static void bucket_key(const struct lease_state *ls, const struct lease_policy *p,
		       const struct sluice_key *k, struct lease_key *lk, int rate)
{
	_Static_assert(HEX_ADDR_LEN <= LEASE_FIELD_LEN, "a bucket's field is its key in hex");
	unsigned int tag;

	hex_of(k->addr, lk->field);
	tag = p->tag[keys_group(lk->field)];
	if (rate)
		snprintf(lk->key, sizeof(lk->key), LEASE_RATE_FMT, ls->plan->prefix, p->name, tag);
	else
		snprintf(lk->key, sizeof(lk->key), LEASE_BUCKET_FMT, ls->plan->prefix, p->name,
			 tag);
	lk->rate_units = p->rate_units;
	lk->rate_period_us = p->rate_period_us;
	lk->burst = lk->cap = p->burst;
	lk->tolerance = p->tolerance;
	lk->start_empty = !p->strict;
}

/* Whether the shard of @e's bucket answered (always, but on a cluster). */
static int is_reachable(const struct round *r, const struct entry *e)
{
	struct lease_key lk;

	bucket_key(r->ls, e->p, &e->key, &lk, 0);
	return backend__is_reachable(r->be, lk.key);
}

/*
 * A key whose shard failed (on a cluster) under a closed policy: live,
 * with nothing more to spend, so it is denied until its shard answers
 * again. What was reported stays, so the next answer counts from it.
 */
static void close_lease(struct entry *e, __u64 expires)
{
	e->l.granted = e->s.spent;
	e->l.expires = expires;
}

/* Overwrite @e's lease, counting a failure (the entry keeps its old lease). */
static void write_lease(struct round *r, const struct entry *e)
{
	count_map_err(r, lease_maps__write(&r->att->maps, &e->key, &e->l));
}

/*
 * Write each answer of a round the store answered in full, every reply
 * checked (by the backend). Held entries stay live only while the store answers:
 * after a failed round nothing is written, so they expire and their keys
 * follow the policy's fail mode.
 */
static void install(struct round *r, const struct lease_grant *g, __u64 sent_ns)
{
	__u64 expires = kernel_expiry(r, sent_ns);
	size_t i, k = 0;

	for (i = 0; i < r->n; i++) {
		struct entry *e = &r->e[i];

		if (e->hold && is_reachable(r, e)) {
			e->l.expires = expires;
			write_lease(r, e);
		} else if (e->hold && e->p->fault_closed) {
			close_lease(e, expires);
			write_lease(r, e);
		}
		if (!e->send)
			continue;
		if (g[k].err) { /* its shard failed: the lease runs out, or closes */
			if (e->p->fault_closed) {
				close_lease(e, expires);
				write_lease(r, e);
			}
			k++;
			continue;
		}
		if (!(is_pending(e) && !g[k].held)) {
			e->l.granted = e->s.spent + g[k].held;
			e->l.reported = e->s.spent;
			e->l.topup_seen = e->s.spent + e->s.denied;
			e->l.expires = expires;
			e->l.flags =
				e->release ? SLUICE_LEASE_F_FROZEN | SLUICE_LEASE_F_RELEASED : 0;
			if (!e->release && g[k].held < e->l.want)
				e->l.flags |= SLUICE_LEASE_F_STARVED;
			write_lease(r, e);
		} else {
			/* Pending and nothing yet: stays cold; what was spent is reported. */
			e->l.granted = e->l.reported = e->s.spent;
			write_lease(r, e);
		}
		k++;
	}
}

static void round_free(struct round *r)
{
	size_t j, i;

	for (j = 0; r->add && r->n_add && j < r->att->n_pol; j++)
		for (i = 0; i < r->n_add[j]; i++)
			free(r->add[j * LEASE_HOT_LIMIT + i]);
	free(r->add);
	free(r->n_add);
	free(r->e);
	free(r->seen.v);
}

/*
 * Build and send one attachment's pipeline, and install the answers. @beat
 * gives the membership beat's fields; the sync itself lives here, so that
 * nothing outlives the arrays it points to.
 */
static int send_round(struct round *r, struct budget_sync *beat, int full, char *err, size_t len)
{
	struct budget_sync b = *beat, *bp = &b;
	struct lease_key *keys = calloc(r->n ? r->n : 1, sizeof(*keys));
	struct lease_req *q = calloc(r->n ? r->n : 1, sizeof(*q));
	struct lease_grant *g = calloc(r->n ? r->n : 1, sizeof(*g));
	struct hot_req *h = calloc(r->att->n_pol ? r->att->n_pol : 1, sizeof(*h));
	size_t i, n = 0;
	__u64 sent_ns;
	int ret = -ENOMEM;

	if (!keys || !q || !g || !h)
		goto out;
	for (i = 0; i < r->n; i++) {
		struct entry *e = &r->e[i];

		if (!e->send)
			continue;
		bucket_key(r->ls, e->p, &e->key, &keys[n], 0);
		q[n].k = &keys[n];
		q[n].held = sat_sub(e->l.granted, e->l.reported);
		q[n].used = sat_sub(e->s.spent, e->l.reported);
		q[n].want = e->l.want;
		q[n].release = e->release;
		n++;
	}
	for (i = 0; full && i < r->att->n_pol; i++) {
		snprintf(h[i].key, sizeof(h[i].key), LEASE_HOT_FMT, r->ls->plan->prefix,
			 r->att->pol[i].name);
		h[i].add = (const char *const *)&r->add[i * LEASE_HOT_LIMIT];
		h[i].n_add = r->n_add[i];
		h[i].ttl_us = LEASE_HOT_SYNCS * r->ls->plan->interval_ns / SLUICE_NSEC_PER_USEC;
		h[i].limit = LEASE_HOT_LIMIT;
	}
	bp->hot = h;
	bp->n_hot = full ? r->att->n_pol : 0;
	bp->on_member = on_member;
	bp->arg = r;
	bp->holder = r->att->holder;
	bp->lease_ttl_us = LEASE_TTL_SYNCS * r->ls->plan->interval_ns / SLUICE_NSEC_PER_USEC;
	bp->leases = q;
	bp->n_leases = n;
	bp->grants = g;
	sent_ns = mono_ns();
	ret = backend__sync(r->be, bp, err, len);
	r->ls->stats.rounds++;
	r->ls->stats.leases += n;
	if (ret)
		goto out; /* a wrong reply is a lie about all of them: install nothing */
	beat->live_nodes = bp->live_nodes;
	beat->fleet_layout = bp->fleet_layout;
	install(r, g, sent_ns);
	if (full && !bp->hot_failed) {
		if (r->seen.n) /* qsort(NULL, 0) is undefined: glibc declares it nonnull */
			qsort(r->seen.v, r->seen.n, sizeof(*r->seen.v), key_cmp);
		free(r->ls->fleet[r->att_i].v);
		r->ls->fleet[r->att_i] = r->seen;
		memset(&r->seen, 0, sizeof(r->seen));
	}
	/* A hot set not read (its shard down, on a cluster): the last one stands. */
	if (full)
		adopt_fleet(r, kernel_expiry(r, sent_ns));
out:
	free(keys);
	free(q);
	free(g);
	free(h);
	return ret;
}

#define LAYOUT_UNKNOWN 0U /* ls->layout before the first beat's answer (STORE_LAYOUT_* from 1) */

/* The leases a round calls for, as the fleet's layout and its switch say. */
enum round_mode {
	MODE_LUMP, /* lump leases (STORE_LAYOUT_LUMP) */
	MODE_RATE, /* rate leases (STORE_LAYOUT_RATE), at full syncs only */
	MODE_WAIT, /* none: the layout changed, the old one's leases may still be spent */
};

static enum round_mode mode_of(const struct lease_state *ls, __u64 now_ns)
{
	if (ls->layout == LAYOUT_UNKNOWN || now_ns < ls->layout_from_ns)
		return MODE_WAIT;
	return ls->layout == STORE_LAYOUT_RATE ? MODE_RATE : MODE_LUMP;
}

/* Whether @r's kernel holds a lease of a layout other than @layout that can still be spent. */
static int other_layout_live(const struct round *r, unsigned int layout, __u64 now_ns)
{
	const __u64 now = sluice_gcra_ticks(now_ns);
	size_t i;

	for (i = 0; i < r->n; i++) {
		const struct entry *e = &r->e[i];
		unsigned int of =
			e->l.flags & SLUICE_LEASE_F_RATE ? STORE_LAYOUT_RATE : STORE_LAYOUT_LUMP;

		if (!e->gone && of != layout && e->l.expires > now && e->l.granted > e->s.spent)
			return 1;
	}
	return 0;
}

/*
 * The beat's answer, @layout, at @now_ns, with @r's kernel entries. A
 * change stops this node's calls of the old layout at once and starts the
 * new one's LAYOUT_SWITCH_SYNCS intervals later, both ways: every other
 * node's beat says so within an interval, and the old layout's leases live
 * LEASE_KERNEL_SYNCS intervals more on its kernel. Meanwhile the keys are
 * held (rate_step()). The first answer after a start or a reload (the
 * layout unknown, no calls made yet) waits so only for leases of the other
 * layout that the kernel could still spend: an agent restarted on its own
 * rate leases takes rate leases at once.
 */
static void note_layout(struct lease_state *ls, const struct round *r, unsigned int layout,
			__u64 now_ns)
{
	const __u64 wait_ns = LAYOUT_SWITCH_SYNCS * ls->plan->interval_ns;
	size_t i;

	if (layout != STORE_LAYOUT_RATE)
		layout = STORE_LAYOUT_LUMP;
	if (layout == ls->layout)
		return;
	if (ls->layout == LAYOUT_UNKNOWN) {
		ls->layout = layout;
		ls->layout_from_ns = other_layout_live(r, layout, now_ns) ? now_ns + wait_ns : 0;
		return;
	}
	ls->layout = layout;
	ls->layout_from_ns = now_ns + wait_ns;
	for (i = 0; i < ls->plan->n_att; i++)
		rate_table__clear(ls->rate[i]);
}

/*
 * Write a lowered share before its call, then read its spend (struct
 * rate_round's lower); a key deleted meanwhile has none, and no error.
 */
static int lower_now(void *ctx, struct rate_key *k)
{
	struct round *r = ctx;
	int err = count_map_err(r, lease_maps__write(&r->att->maps, &k->key, &k->l));

	if (err)
		return err;
	err = lease_maps__read_spend(&r->att->maps, &k->key, &k->s);
	return err == -ENOENT ? err : count_map_err(r, err);
}

/*
 * The rate-lease half of a round (planrate.h): at a @full sync, renew what
 * is due when @call, refill every key and write its entry; between syncs,
 * refill the keys with shares and write theirs. @ok: the round's sync
 * succeeded (else shares stand until their ends and nothing is held).
 */
static int rate_step(struct round *r, int full, int call, int ok, char *err, size_t len)
{
	struct rate_key *v = calloc(r->n ? r->n : 1, sizeof(*v));
	struct backend_report rep;
	struct rate_round rr = { .be = ok ? r->be : NULL,
				 .full = full,
				 .call = call,
				 .holder = r->att->holder,
				 .interval_ns = r->ls->plan->interval_ns,
				 .now_ns = mono_ns(),
				 .ok_ns = r->ls->ok_ns,
				 .lower = lower_now,
				 .ctx = r };
	size_t i, n = 0;
	int ret;

	if (!v)
		return -ENOMEM;
	r->be->ops->report(r->be, &rep);
	for (i = 0; i < r->n; i++) {
		const struct entry *e = &r->e[i];

		if (e->gone)
			continue;
		v[n] = (struct rate_key){ .key = e->key,
					  .l = e->l,
					  .s = e->s,
					  .pending = is_pending(e),
					  .fault_closed = e->p->fault_closed,
					  /* a closed key's shard, checked as lump leases were */
					  .every_sync = e->p->fault_closed && rep.n_shards };
		bucket_key(r->ls, e->p, &e->key, &v[n++].lk, 1);
	}
	ret = rate_table__step(r->ls->rate[r->att_i], &rr, v, n, err, len);
	r->ls->stats.rounds += rr.calls > 0;
	r->ls->stats.leases += rr.calls;
	for (i = 0; i < n; i++)
		if (v[i].write)
			count_map_err(r, lease_maps__write(&r->att->maps, &v[i].key, &v[i].l));
	free(v);
	return ret;
}

/*
 * A full sync: @hot, it sends the beat (@b->fleet, the first
 * attachment's) and the hot sets; else it follows a read of the news
 * counter (rate leases between beats), and sends the hot sets only when a
 * key turned hot here, which lease_round() then tells the fleet.
 */
static int round_att(struct lease_state *ls, size_t ai, struct budget_backend *be,
		     struct budget_sync *b, int full, int hot, char *err, size_t len)
{
	struct round r = { .ls = ls, .att = &ls->plan->att[ai], .att_i = ai, .be = be };
	int ret = -ENOMEM, beat = b->fleet != NULL, share = hot;
	enum round_mode mode;
	__u64 sent_ns;

	if (full && !beat && ls->layout == LAYOUT_UNKNOWN)
		ls->layout = STORE_LAYOUT_LUMP; /* no beat, no answer to wait for: lump leases */
	mode = mode_of(ls, mono_ns());

	if (!full && mode == MODE_WAIT)
		return 0;
	r.add = calloc(r.att->n_pol * LEASE_HOT_LIMIT + 1, sizeof(*r.add));
	r.n_add = calloc(r.att->n_pol + 1, sizeof(*r.n_add));
	if (!r.add || !r.n_add)
		goto out;
	if (full && (r.told = drain_requests(&r)))
		share = 1;
	ret = collect(&r);
	if (ret)
		goto out;
	if (!full && mode == MODE_RATE) {
		/* a share below its fair share asks again every RATE_EARLY_EVERY rounds */
		ret = rate_step(&r, 0, ls->early % RATE_EARLY_EVERY == 0, 1, err, len);
		goto out;
	}
	if (full)
		plan_full(&r, mode == MODE_LUMP);
	else if (!plan_early(&r))
		goto out; /* nothing running low: no call */
	sent_ns = mono_ns();
	ret = !full || share ? send_round(&r, b, full, err, len) : 0;
	if (!ret)
		ls->told += r.told;
	if (!full || !ls->plan->rate_leases)
		goto out;
	if (!ret && hot)
		ls->ok_ns = sent_ns; /* else lease_round()'s read of the news did */
	if (!ret && beat && b->live_nodes)
		note_layout(ls, &r, b->fleet_layout, mono_ns());
	mode = mode_of(ls, mono_ns());
	if (mode != MODE_LUMP && ls->layout != LAYOUT_UNKNOWN) {
		/* a failed sync's cause stays in @err: the step then calls nothing */
		int step = rate_step(&r, 1, mode == MODE_RATE, !ret, err, len);

		ret = ret ? ret : step;
	}
out:
	if (ret == -ENOMEM)
		snprintf(err, len, "lease sync: %s", strerror(ENOMEM));
	round_free(&r);
	return ret;
}

static int speaks_rate(const struct lease_state *ls)
{
	return ls->plan && ls->plan->rate_leases;
}

/*
 * Whether this full sync beats and sends the hot sets: every interval,
 * but on rate leases every RATE_BEAT_SYNCS-th, and every interval again
 * while the beat fails.
 */
static int is_hot_sync(const struct lease_state *ls)
{
	return mode_of(ls, mono_ns()) != MODE_RATE || ls->quiet + 1 >= RATE_BEAT_SYNCS;
}

/*
 * A full sync between beats: read the fleet's news counter, which tells
 * that the store is there as a sync it answered would. 1 when it
 * moved since the last read (a node joined or a key turned hot), or when
 * the counter's shard alone failed (-EAGAIN: the beat and hot sets then
 * say which of the store's shards answer): this sync beats and reads the
 * hot sets. 0, or the read's failure.
 */
static int read_news(struct lease_state *ls, struct budget_backend *be, const char *news, char *err,
		     size_t len)
{
	__u64 sent_ns = mono_ns(), v = 0;
	int ret = be->ops->news(be, news, 0, &v, err, len);

	if (ret == -EAGAIN) {
		err[0] = '\0';
		return 1;
	}
	if (ret)
		return ret;
	ls->ok_ns = sent_ns;
	if (ls->news_known && v == ls->news)
		return 0;
	ls->news = v;
	ls->news_known = 1;
	return 1;
}

/*
 * Tell the fleet that this sync added keys to the hot sets, after they
 * landed. When no other node bumped meanwhile, the bump is not news here.
 * 0, or the bump's failure (the counter's shard alone failing is none:
 * the others find the keys at their next beat).
 */
static int tell_news(struct lease_state *ls, struct budget_backend *be, const char *news, char *err,
		     size_t len)
{
	__u64 v;
	int ret = be->ops->news(be, news, 1, &v, err, len);

	if (ret == -EAGAIN)
		err[0] = '\0';
	if (ret)
		return ret == -EAGAIN ? 0 : ret;
	if (ls->news_known && v == ls->news + 1)
		ls->news = v;
	return 0;
}

int lease_round(struct lease_state *ls, struct budget_backend *be, const char *fleet,
		const char *node, __u64 beat_ttl_us, int full, __u64 *live, char *err, size_t len)
{
	char news[LEASE_KEY_LEN] = "";
	int hot = full && is_hot_sync(ls), ret = 0;
	struct budget_sync b = { .node = node,
				 .beat_ttl_us = speaks_rate(ls) ? RATE_BEAT_SYNCS * beat_ttl_us
								: beat_ttl_us,
				 .layout = speaks_rate(ls) ? STORE_LAYOUT_RATE : 0 };
	size_t n_att = ls->plan ? ls->plan->n_att : 0, i;

	*live = 0;
	err[0] = '\0';
	if (fleet)
		snprintf(news, sizeof(news), LEASE_NEWS_FMT, fleet, fleet);
	ls->early = full ? 0 : ls->early + 1;
	ls->told = 0;
	if (full)
		ls->stats.hot_keys = 0;
	if (full && !hot && fleet) {
		ret = read_news(ls, be, news, err, len);
		hot = ret > 0;
		ret = ret > 0 ? 0 : ret;
	}
	b.fleet = hot ? fleet : NULL;
	if (!ret && !n_att && hot)
		ret = backend__sync(be, &b, err, len);
	for (i = 0; i < n_att && !ret; i++) {
		ret = round_att(ls, i, be, &b, full, hot, err, len);
		b.fleet = NULL; /* one beat per round */
	}
	if (!ret && ls->told && fleet && speaks_rate(ls))
		ret = tell_news(ls, be, news, err, len);
	if (full && !ret && hot && b.live_nodes)
		ls->quiet = 0; /* the beat landed (on a cluster, its shard may be down alone) */
	else if (full && ls->quiet < RATE_BEAT_SYNCS)
		ls->quiet++;
	/* On a cluster the beat's shard may be down alone: keep the last count. */
	if (!ret && hot && b.live_nodes)
		ls->live = b.live_nodes;
	if (!ret && hot)
		*live = b.live_nodes;
	return ret;
}

struct lease_state *lease_state__new(struct lease_plan *plan)
{
	struct lease_state *ls = calloc(1, sizeof(*ls));

	size_t i, n_att = plan ? plan->n_att : 0;

	if (ls) {
		ls->fleet = calloc(n_att ? n_att : 1, sizeof(*ls->fleet));
		ls->rate = calloc(n_att ? n_att : 1, sizeof(struct rate_table *));
	}
	for (i = 0; ls && ls->rate && i < n_att; i++) {
		ls->rate[i] = rate_table__new();
		if (!ls->rate[i])
			break;
	}
	if (!ls || !ls->fleet || !ls->rate || i < n_att) {
		for (i = 0; ls && ls->rate && i < n_att; i++)
			rate_table__free(ls->rate[i]);
		if (ls) {
			free(ls->rate);
			free(ls->fleet);
		}
		free(ls);
		lease_plan__free(plan);
		errno = ENOMEM;
		return NULL;
	}
	ls->plan = plan;
	/* a speaker of rate leases calls for none until the first beat's answer */
	ls->layout = plan && plan->rate_leases ? LAYOUT_UNKNOWN : STORE_LAYOUT_LUMP;
	return ls;
}

void lease_plan__free(struct lease_plan *plan)
{
	size_t i;

	if (!plan)
		return;
	for (i = 0; i < plan->n_att; i++)
		free(plan->att[i].pol);
	free(plan->att);
	free(plan);
}

void lease_state__free(struct lease_state *ls)
{
	size_t i;

	if (!ls)
		return;
	for (i = 0; ls->plan && i < ls->plan->n_att; i++) {
		free(ls->fleet[i].v);
		rate_table__free(ls->rate[i]);
	}
	free(ls->fleet);
	free(ls->rate);
	lease_plan__free(ls->plan);
	free(ls);
}

void lease_state__stats(const struct lease_state *ls, struct lease_stats *out)
{
	*out = ls->stats;
}
