// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The in-memory store (budget/backend_mem.h). Each operation is the one of
 * the Redis backend's scripts (budget/redis.c) in C: lease() is LEASE_LUA
 * for one key, beat() BEAT_LUA, hot() HOT_LUA, on the same integers (the
 * scripts' numbers stay below 2^53, where Lua's doubles are exact, so the
 * answers are the same). A bucket past its live is as good as absent
 * there, and is freed here when next looked up, where Redis reaps it by
 * sampling; sorted sets drop their members past the TTL at each call, as
 * the scripts do. rate_lease() is budget/fairshare.c's fs_renew() on a
 * key's holders, as RATE_LUA is; a holder that can enforce nothing any
 * more is dropped at the key's next call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget/backend_mem.h"
#include "budget/fairshare.h"
#include "budget/keys.h"
#include "budget/redis_scripts.h" /* the scripts it mirrors: LEASE_LIVE_SLACK_US */

#define MEM_HASH_SLOTS 1024 /* bucket chains: a simulated fleet's hot keys, a few per chain */
#define MEM_LIVE_SLACK_US                                                                          \
	1000000 /* a bucket's live, with this to spare (redis.h's LEASE_LIVE_SLACK_US) */

/* A node's lease on a bucket: the script's "node units exp". */
struct mem_lease {
	char holder[STORE_NAME_LEN];
	__u64 units, exp;
};

/* One bucket: the script's "tok ts live" and its leases. */
struct mem_bucket {
	char key[LEASE_KEY_LEN];
	char field[LEASE_FIELD_LEN];
	__u64 tok, ts, live;
	struct mem_lease *leases;
	size_t n_leases;
	struct mem_bucket *next;
};

/* One key's rate leases: each holder's, and its bank, as budget/fairshare.h keeps them. */
struct mem_rate {
	char key[LEASE_KEY_LEN];
	char field[LEASE_FIELD_LEN];
	struct fs_lease *v;
	char (*holder)[STORE_NAME_LEN]; /* v[i]'s */
	size_t n;
	struct fs_bank bank;
	struct mem_rate *next;
};

struct mem_member {
	char *name;
	__u64 score; /* the store's time it was last added */
};

/* A sorted set: the fleet's members, or a policy's hot set. */
struct mem_zset {
	char key[LEASE_KEY_LEN];
	struct mem_member *v;
	size_t n, cap;
	struct mem_zset *next;
};

struct mem_store {
	__u64 now_us;
	struct mem_bucket *slot[MEM_HASH_SLOTS];
	struct mem_rate *rate_slot[MEM_HASH_SLOTS];
	struct mem_zset *zsets;
};

/* A node's backend on a shared store. */
struct backend_mem {
	struct budget_backend be; /* first: the backend is the state */
	struct mem_store *m;
	int fail_ret, fail_ran; /* the next sync's failure (backend_mem__fail_next()); 0: none */
};

static struct backend_mem *mem_of(struct budget_backend *be)
{
	return (struct backend_mem *)be;
}

/* FNV-1a over the group and the field. */
static size_t slot_of(const char *key, const char *field)
{
	__u64 h = 14695981039346656037ULL;
	const char *p;

	for (p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL; /* a separator no name holds */
	for (p = field; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return h % MEM_HASH_SLOTS;
}

static void bucket_free(struct mem_bucket *b)
{
	free(b->leases);
	free(b);
}

/*
 * Bucket @field of @key; a bucket past its live (the script treats it as
 * absent) is freed first. NULL: none.
 */
static struct mem_bucket *bucket_find(struct mem_store *m, const char *key, const char *field)
{
	struct mem_bucket **pp = &m->slot[slot_of(key, field)], *b;

	while ((b = *pp)) {
		if (!strcmp(b->key, key) && !strcmp(b->field, field)) {
			if (b->live >= m->now_us)
				return b;
			*pp = b->next;
			bucket_free(b);
			return NULL;
		}
		pp = &b->next;
	}
	return NULL;
}

static __u64 ceil_div(__u64 a, __u64 b)
{
	return (a + b - 1) / b;
}

/* @b's lease of @holder: its index, or b->n_leases. */
static size_t lease_of(const struct mem_bucket *b, const char *holder)
{
	size_t i;

	for (i = 0; i < b->n_leases && strcmp(b->leases[i].holder, holder) != 0; i++)
		;
	return i;
}

/*
 * LEASE_LUA for one key at the store's time: write off expired leases,
 * take @q->used off what @holder keeps, refill toward the room the live
 * leases leave, hand back what a release gives up, and grant up to
 * min(want, cap) held. 0 or -ENOMEM (nothing changed).
 */
static int lease(struct mem_store *m, const char *holder, __u64 ttl_us, const struct lease_req *q,
		 struct lease_grant *g)
{
	const struct lease_key *k = q->k;
	__u64 now = m->now_us, per = k->rate_period_us, units = k->rate_units;
	struct mem_bucket *b = bucket_find(m, k->key, k->field);
	__u64 out = 0, maxexp = now + ttl_us, keep = 0, used = q->used, room, grant, need;
	size_t i, me;

	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return -ENOMEM;
		snprintf(b->key, sizeof(b->key), "%s", k->key);
		snprintf(b->field, sizeof(b->field), "%s", k->field);
		b->tok = k->start_empty ? 0 : k->burst * per;
		b->ts = now;
		b->next = m->slot[slot_of(k->key, k->field)];
		m->slot[slot_of(k->key, k->field)] = b;
	}
	me = lease_of(b, holder);
	if (me == b->n_leases) {
		struct mem_lease *v = realloc(b->leases, (b->n_leases + 1) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->leases = v;
		memset(&v[me], 0, sizeof(v[me]));
		snprintf(v[me].holder, sizeof(v[me].holder), "%s", holder);
		b->n_leases++;
	}
	for (i = 0; i < b->n_leases; i++) {
		if (i != me && b->leases[i].exp <= now)
			continue; /* written off below */
		if (i == me && b->leases[i].exp <= now) {
			b->leases[i].units = 0; /* expired: written off, not credited */
			continue;
		}
		out += b->leases[i].units;
		if (b->leases[i].exp > maxexp)
			maxexp = b->leases[i].exp;
	}
	keep = b->leases[me].units;
	if (used > keep)
		used = keep;
	keep -= used;
	out -= used;
	room = out < k->burst ? (k->burst - out) * per : 0;
	if (now > b->ts) {
		if (room > b->tok) {
			if (now - b->ts >= ceil_div(room - b->tok, units))
				b->tok = room;
			else
				b->tok += (now - b->ts) * units;
		}
		b->ts = now;
	}
	if (b->tok > room)
		b->tok = room;
	if (q->release && keep > q->want) {
		b->tok += (keep - q->want) * per;
		keep = q->want;
	}
	grant = b->tok / per;
	if (q->want <= keep || k->cap <= keep)
		grant = 0;
	if (grant > q->want - keep)
		grant = q->want - keep;
	if (grant > k->cap - keep)
		grant = k->cap - keep;
	b->tok -= grant * per;
	b->leases[me].units = keep + grant;
	b->leases[me].exp = now + ttl_us;
	/* Drop the written-off leases and an empty one of the caller's. */
	for (i = b->n_leases; i-- > 0;)
		if (b->leases[i].exp <= now || !b->leases[i].units)
			b->leases[i] = b->leases[--b->n_leases];
	need = maxexp + ceil_div(k->burst * per, units);
	if (b->live < need)
		b->live = need + LEASE_LIVE_SLACK_US;
	*g = (struct lease_grant){
		.held = keep + grant, .granted = grant, .expires_us = now + ttl_us, .now_us = now
	};
	return 0;
}

/* @key's rate leases, made empty when it has none; NULL: -ENOMEM. */
static struct mem_rate *rate_get(struct mem_store *m, const char *key, const char *field)
{
	struct mem_rate **head = &m->rate_slot[slot_of(key, field)], *r;

	for (r = *head; r; r = r->next)
		if (!strcmp(r->key, key) && !strcmp(r->field, field))
			return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	snprintf(r->key, sizeof(r->key), "%s", key);
	snprintf(r->field, sizeof(r->field), "%s", field);
	r->next = *head;
	*head = r;
	return r;
}

/* @holder's index in @r, appended empty when it has none; r->n: -ENOMEM. */
static size_t rate_holder(struct mem_rate *r, const char *holder)
{
	struct fs_lease *v;
	char(*h)[STORE_NAME_LEN];
	size_t i;

	for (i = 0; i < r->n; i++)
		if (!strcmp(r->holder[i], holder))
			return i;
	v = realloc(r->v, (r->n + 1) * sizeof(*v));
	if (!v)
		return r->n;
	r->v = v;
	h = realloc(r->holder, (r->n + 1) * sizeof(*h));
	if (!h)
		return r->n;
	r->holder = h;
	memset(&v[i], 0, sizeof(v[i]));
	snprintf(h[i], sizeof(h[i]), "%s", holder);
	r->n++;
	return i;
}

/*
 * The rate lease call for one key at the store's time: forget the holders
 * that can enforce nothing any more, then renew @holder's lease by the
 * allocator. 0 or -ENOMEM.
 */
static int rate_lease(struct mem_store *m, const char *holder, __u64 ttl_us,
		      const struct rate_lease_req *q, struct rate_lease_grant *g)
{
	const __u64 caps[FS_DIMS] = {
		[FS_RATE] = q->k->rate_units << RATE_LEASE_SHIFT,
		[FS_BURST] = q->k->burst << RATE_LEASE_SHIFT,
	};
	const struct fs_ask ask = {
		.want = { [FS_RATE] = q->want_rate, [FS_BURST] = q->want_burst },
		.ttl_us = ttl_us,
		.quantum = { [FS_BURST] = RATE_LEASE_UNIT },
		.settled = q->settled,
		.level = q->level,
	};
	struct mem_rate *r = rate_get(m, q->k->key, q->k->field);
	struct fs_answer a;
	size_t i, me;

	if (!r)
		return -ENOMEM;
	for (i = r->n; i-- > 0;) {
		if (r->v[i].exp_us > m->now_us || r->v[i].prev_exp_us > m->now_us ||
		    !strcmp(r->holder[i], holder))
			continue;
		r->n--;
		r->v[i] = r->v[r->n];
		memcpy(r->holder[i], r->holder[r->n], sizeof(r->holder[i]));
	}
	me = rate_holder(r, holder);
	if (me == r->n)
		return -ENOMEM;
	fs_renew(caps, r->v, r->n, me, &r->bank, &ask, m->now_us, &a);
	*g = (struct rate_lease_grant){
		.rate = a.grant[FS_RATE],
		.burst = a.grant[FS_BURST],
		.fair_rate = a.fair[FS_RATE],
		.fair_burst = a.fair[FS_BURST],
		.expires_us = a.exp_us,
		.now_us = m->now_us,
		.taken = a.taken,
	};
	return 0;
}

static struct mem_zset *zset_get(struct mem_store *m, const char *key)
{
	struct mem_zset *z;

	for (z = m->zsets; z; z = z->next)
		if (!strcmp(z->key, key))
			return z;
	z = calloc(1, sizeof(*z));
	if (!z)
		return NULL;
	snprintf(z->key, sizeof(z->key), "%s", key);
	z->next = m->zsets;
	m->zsets = z;
	return z;
}

/* ZADD @name with the store's time as its score. 0 or -ENOMEM. */
/* ZADD: 1 when @name is new to @z, 0 when it was there, or -ENOMEM. */
static int zset_add(struct mem_zset *z, const char *name, __u64 now)
{
	size_t i;

	for (i = 0; i < z->n; i++) {
		if (!strcmp(z->v[i].name, name)) {
			z->v[i].score = now;
			return 0;
		}
	}
	if (z->n == z->cap) {
		size_t cap = z->cap ? 2 * z->cap : 16;
		struct mem_member *v = realloc(z->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		z->v = v;
		z->cap = cap;
	}
	z->v[z->n].name = strdup(name);
	if (!z->v[z->n].name)
		return -ENOMEM;
	z->v[z->n++].score = now;
	return 1;
}

/* GET (@add 0) or INCR (@add 1) of counter @key: its one member's score. */
static int news_add(struct mem_store *m, const char *key, __u64 add, __u64 *value)
{
	struct mem_zset *z = zset_get(m, key);

	if (!z || (!z->n && zset_add(z, "", 0) < 0))
		return -ENOMEM;
	z->v[0].score += add;
	*value = z->v[0].score;
	return 0;
}

/* ZREMRANGEBYSCORE -inf (now - ttl): members whose score is @ttl_us or more old. */
static void zset_expire(struct mem_zset *z, __u64 now, __u64 ttl_us)
{
	size_t i;

	for (i = z->n; i-- > 0;) {
		if (z->v[i].score + ttl_us > now)
			continue;
		free(z->v[i].name);
		z->v[i] = z->v[--z->n];
	}
}

/* ZREVRANGEBYSCORE's order: the highest score first, equal scores by name, last first. */
static int member_cmp(const void *a, const void *b)
{
	const struct mem_member *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return -strcmp(x->name, y->name);
}

/*
 * @node beats in set @key at the store's time; its live count into @live.
 * 1 when it is new to the set, 0, or -ENOMEM.
 */
static int beat_in(struct mem_store *m, const char *key, const struct budget_sync *b, __u64 *live)
{
	struct mem_zset *z = zset_get(m, key);
	int ret = z ? zset_add(z, b->node, m->now_us) : -ENOMEM;

	if (ret < 0)
		return ret;
	zset_expire(z, m->now_us, b->beat_ttl_us);
	*live = z->n;
	return ret;
}

/* How many of @z's members @in holds too. */
static size_t zset_common(const struct mem_zset *z, const struct mem_zset *in)
{
	size_t i, j, n = 0;

	for (i = 0; i < z->n; i++)
		for (j = 0; j < in->n; j++)
			if (!strcmp(z->v[i].name, in->v[j].name)) {
				n++;
				break;
			}
	return n;
}

/*
 * BEAT_LUA: @b->node beats in @b->fleet; the live count into
 * @b->live_nodes. BEAT_LAYOUT_LUA, when it speaks the rate layout: and
 * in that layout's speakers' set, which is the fleet's layout when it
 * holds every live member.
 */
static int beat(struct mem_store *m, struct budget_sync *b)
{
	char set[LEASE_KEY_LEN];
	__u64 speakers, news;
	int ret = beat_in(m, b->fleet, b, &b->live_nodes), joined = ret > 0;

	b->fleet_layout = STORE_LAYOUT_LUMP;
	if (ret < 0 || b->layout < STORE_LAYOUT_RATE)
		return ret < 0 ? ret : 0;
	snprintf(set, sizeof(set), LEASE_LAYOUT_FMT, b->fleet, STORE_LAYOUT_RATE, b->fleet);
	ret = beat_in(m, set, b, &speakers);
	if (ret < 0)
		return ret;
	if (speakers >= b->live_nodes &&
	    zset_common(zset_get(m, b->fleet), zset_get(m, set)) == b->live_nodes)
		b->fleet_layout = STORE_LAYOUT_RATE;
	if (!joined && !ret)
		return 0;
	snprintf(set, sizeof(set), LEASE_NEWS_FMT, b->fleet, b->fleet);
	return news_add(m, set, 1, &news);
}

/* HOT_LUA: add @h's members, drop the stale, hand the newest @h->limit to the callback. */
static int hot(struct mem_store *m, const struct budget_sync *b, size_t i, char *err, size_t len)
{
	const struct hot_req *h = &b->hot[i];
	struct mem_zset *z = zset_get(m, h->key);
	size_t j;
	int ret = z ? 0 : -ENOMEM;

	for (j = 0; j < h->n_add && ret >= 0; j++)
		ret = zset_add(z, h->add[j], m->now_us);
	if (ret < 0)
		return ret;
	zset_expire(z, m->now_us, h->ttl_us);
	if (z->n)
		qsort(z->v, z->n, sizeof(*z->v), member_cmp);
	for (j = 0; j < z->n && j < h->limit; j++) {
		if (b->on_member && b->on_member(b->arg, i, z->v[j].name)) {
			snprintf(err, len, "hot set '%s': a member that is not a key", h->key);
			return -EPROTO;
		}
	}
	return 0;
}

/* The next call's failure, set by backend_mem__fail_next(): 0, or fail it before it ran. */
static int take_fail(struct backend_mem *bm, int *fail, int *ran, char *err, size_t len)
{
	*fail = bm->fail_ret;
	*ran = bm->fail_ran;
	bm->fail_ret = bm->fail_ran = 0;
	if (!*fail || *ran)
		return 0;
	snprintf(err, len, "memory store: %s", strerror(-*fail));
	return *fail;
}

static int mem_sync(struct budget_backend *be, struct budget_sync *b, char *err, size_t len)
{
	struct backend_mem *bm = mem_of(be);
	int fail = 0, ran = 0, ret, bad;
	size_t i;

	err[0] = '\0';
	b->failed = b->hot_failed = 0;
	for (i = 0; i < b->n_leases; i++)
		b->grants[i].err = -EIO; /* until its answer is made */
	ret = budget_sync_check(b, err, len);
	if (!ret)
		ret = take_fail(bm, &fail, &ran, err, len);
	if (ret)
		return ret;
	/* As in one Redis pipeline: a wrong answer fails the sync, after all of it ran. */
	ret = b->fleet ? beat(bm->m, b) : 0;
	for (i = 0; i < b->n_hot && ret != -ENOMEM; i++) {
		bad = hot(bm->m, b, i, err, len);
		ret = ret ? ret : bad;
	}
	for (i = 0; i < b->n_leases && ret != -ENOMEM; i++) {
		b->grants[i].err =
			lease(bm->m, b->holder, b->lease_ttl_us, &b->leases[i], &b->grants[i]);
		ret = ret ? ret : b->grants[i].err;
	}
	if (ret == -ENOMEM)
		snprintf(err, len, "memory store: %s", strerror(ENOMEM));
	if (!ret && fail) {
		snprintf(err, len, "memory store: %s after the store ran the sync",
			 strerror(-fail));
		ret = fail;
	}
	return ret;
}

static int mem_rate_lease(struct budget_backend *be, struct rate_sync *r, char *err, size_t len)
{
	struct backend_mem *bm = mem_of(be);
	int fail = 0, ran = 0, ret;
	size_t i;

	err[0] = '\0';
	for (i = 0; i < r->n_leases; i++)
		r->grants[i].err = -EIO; /* until its answer is made */
	ret = rate_sync_check(r, err, len);
	if (!ret)
		ret = take_fail(bm, &fail, &ran, err, len);
	for (i = 0; i < r->n_leases && !ret; i++)
		ret = r->grants[i].err =
			rate_lease(bm->m, r->holder, r->lease_ttl_us, &r->leases[i], &r->grants[i]);
	if (ret == -ENOMEM)
		snprintf(err, len, "memory store: %s", strerror(ENOMEM));
	if (!ret && fail) {
		snprintf(err, len, "memory store: %s after the store ran the call",
			 strerror(-fail));
		ret = fail;
	}
	return ret;
}

static int mem_connect(struct budget_backend *be, char *err, size_t len)
{
	(void)be;
	(void)err;
	(void)len;
	return 0;
}

static int mem_is_connected(const struct budget_backend *be)
{
	(void)be;
	return 1;
}

static void mem_drop(struct budget_backend *be)
{
	(void)be;
}

static int mem_probe(struct budget_backend *be, char *err, size_t len)
{
	return mem_connect(be, err, len);
}

static int mem_news(struct budget_backend *be, const char *key, int bump, __u64 *value, char *err,
		    size_t len)
{
	int ret = mem_connect(be, err, len);

	if (!ret)
		ret = news_add(mem_of(be)->m, key, !!bump, value);
	if (ret == -ENOMEM)
		snprintf(err, len, "memory store: %s", strerror(ENOMEM));
	return ret;
}

static int mem_is_reachable(const struct budget_backend *be, const char *key)
{
	(void)be;
	(void)key;
	return 1;
}

static void mem_report(const struct budget_backend *be, struct backend_report *out)
{
	(void)be;
	memset(out, 0, sizeof(*out));
}

static void mem_free(struct budget_backend *be)
{
	free(mem_of(be));
}

static const struct backend_ops mem_ops = {
	.connect = mem_connect,
	.is_connected = mem_is_connected,
	.drop = mem_drop,
	.probe = mem_probe,
	.news = mem_news,
	.sync = mem_sync,
	.rate_lease = mem_rate_lease,
	.is_reachable = mem_is_reachable,
	.report = mem_report,
	.free = mem_free,
};

struct budget_backend *backend_mem__open(struct mem_store *m)
{
	struct backend_mem *bm = calloc(1, sizeof(*bm));

	if (!bm)
		return NULL;
	bm->be.ops = &mem_ops;
	bm->m = m;
	return &bm->be;
}

void backend_mem__fail_next(struct budget_backend *be, int ret, int ran)
{
	mem_of(be)->fail_ret = ret;
	mem_of(be)->fail_ran = ran;
}

struct mem_store *mem_store__new(__u64 now_us)
{
	struct mem_store *m = calloc(1, sizeof(*m));

	if (m)
		m->now_us = now_us;
	return m;
}

void mem_store__set_now(struct mem_store *m, __u64 now_us)
{
	m->now_us = now_us;
}

__u64 mem_store__now(const struct mem_store *m)
{
	return m->now_us;
}

__u64 mem_store__held(const struct mem_store *m, const char *field, const char *holder)
{
	const struct mem_bucket *b;
	__u64 held = 0;
	size_t i, j;

	for (i = 0; i < MEM_HASH_SLOTS; i++) {
		for (b = m->slot[i]; b; b = b->next) {
			if (strcmp(b->field, field) != 0 || b->live < m->now_us)
				continue;
			j = lease_of(b, holder);
			if (j < b->n_leases && b->leases[j].exp > m->now_us)
				held += b->leases[j].units;
		}
	}
	return held;
}

void mem_store__free(struct mem_store *m)
{
	struct mem_bucket *b, *nb;
	struct mem_zset *z, *nz;
	size_t i;

	if (!m)
		return;
	for (i = 0; i < MEM_HASH_SLOTS; i++) {
		for (b = m->slot[i]; b; b = nb) {
			nb = b->next;
			bucket_free(b);
		}
	}
	for (i = 0; i < MEM_HASH_SLOTS; i++) {
		struct mem_rate *r, *nr;

		for (r = m->rate_slot[i]; r; r = nr) {
			nr = r->next;
			free(r->v);
			free(r->holder);
			free(r);
		}
	}
	for (z = m->zsets; z; z = nz) {
		nz = z->next;
		for (i = 0; i < z->n; i++)
			free(z->v[i].name);
		free(z->v);
		free(z);
	}
	free(m);
}
