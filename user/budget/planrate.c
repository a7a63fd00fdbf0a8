// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The planner's rate-lease half; see budget/planrate.h. A table per
 * interface keeps each hot key's rs_key between rounds; each round
 * rebuilds it from the keys the kernel holds now, so a key the planner
 * deleted leaves it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/compiler.h"
#include "sluice/gcra.h"
#include "budget/planrate.h"

struct rate_slot {
	struct sluice_key key; /* first: slot_cmp() */
	struct rs_key rs;
};

struct rate_table {
	struct rate_slot *v; /* sorted by key */
	size_t n;
};

static int slot_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct sluice_key));
}

struct rate_table *rate_table__new(void)
{
	return calloc(1, sizeof(struct rate_table));
}

void rate_table__clear(struct rate_table *t)
{
	if (!t)
		return;
	free(t->v);
	t->v = NULL;
	t->n = 0;
}

void rate_table__free(struct rate_table *t)
{
	rate_table__clear(t);
	free(t);
}

static __u64 min_u64(__u64 a, __u64 b)
{
	return a < b ? a : b;
}

/*
 * A key asked to turn hot here has no measured demand (its packets took
 * the cold share): it asks for the whole rate, which the store splits
 * max-min fairly; its next calls ask for what it then spent and was
 * denied, at every sync while the other nodes join (RS_JOIN_SYNCS).
 * So does a key this agent has just met on a live rate entry (@resumed:
 * the agent restarted or reloaded), so its share comes back at the first
 * sync, not once a demand has been measured.
 */
static void first_demand(struct rs_key *s, const struct rate_key *k, int resumed)
{
	if ((k->pending || resumed) && !s->until_ns && !s->demand) {
		s->demand = k->lk.rate_units << RATE_LEASE_SHIFT;
		s->guessed = 1;
	}
}

/* Whether @k's kernel entry is a rate lease's, and live at @now_ns. */
static int rate_entry_live(const struct rate_key *k, __u64 now_ns)
{
	return (k->l.flags & SLUICE_LEASE_F_RATE) && k->l.expires > sluice_gcra_ticks(now_ns);
}

/*
 * Fill @k->l from its share @s; @ok: this key's shard answered. As lump
 * leases are, an entry lives LEASE_KERNEL_SYNCS intervals past the last
 * sync the store answered (@r->ok_ns), so a store that fails sends each
 * key into its policy's fail mode as soon as it did; a closed policy's key
 * whose shard alone failed is denied at once. Written only when it
 * changed: between syncs, when an answer changed the share. A credit from
 * the store's bank goes into this write, or is lost (rs_key.credit).
 */
static void entry_of(struct rate_key *k, struct rs_key *rs, const struct rate_round *r, int ok)
{
	const __u64 life_ns = SLUICE_LEASE_KERNEL_SYNCS * r->interval_ns;
	const __u64 now = sluice_gcra_ticks(r->now_ns);
	const int live = rate_entry_live(k, r->now_ns);
	const struct rs_key none = { 0 }, *s = rs;
	const __u64 credit = rs->credit;
	struct sluice_lease l = k->l, was = k->l;
	__u64 until = r->ok_ns + life_ns;

	k->write = 0;
	rs->credit = 0;
	if (!r->be || (k->pending && !s->until_ns))
		return; /* the store failed: nothing renewed; or cold until its first share */
	if (!ok) {
		if (!k->fault_closed)
			return; /* it expires into the policy's fail mode */
		s = &none;	/* closed: denied */
		until = r->now_ns + life_ns;
	} else if (s->until_ns) {
		until = min_u64(until, s->until_ns);
	} else if (!r->full) {
		return; /* a sync holds it */
	}		/* else held: denied, its demand counted */
	rs_share(s, &k->lk, &l, now, live);
	if (s->until_ns)
		rs_credit(&k->lk, &l, credit);
	l.expires = sluice_gcra_ticks(until);
	l.flags = SLUICE_LEASE_F_RATE; /* an agent that starts on these needs no switch */
	l.want = 0;
	/* what a lump check would allow, nothing, moves with spent: no reason to write */
	l.granted = l.reported = was.granted = was.reported = k->s.spent;
	k->write = memcmp(&l, &was, sizeof(l)) != 0;
	k->l = l;
}

/*
 * Before a call that asks for less than @k's live entry enforces: write
 * the share @s was lowered to (rs_request()) into the kernel at once, its
 * expiry as it was, so that nothing the store frees is spent meanwhile;
 * @k->l is then that entry. Returns the level the lowering cut, for the
 * store's bank (rs_level_cut()): on the spend read after the write, so
 * nothing spent meanwhile counts, at the round's start, so no refill after
 * the write does; 0 when that read failed.
 */
static __u64 lower_first(struct rate_key *k, const struct rs_key *s, const struct rate_round *r)
{
	const __u64 now = sluice_gcra_ticks(r->now_ns);
	struct sluice_lease l = k->l, was = k->l;

	if (!r->lower || !rate_entry_live(k, r->now_ns))
		return 0;
	rs_share(s, &k->lk, &l, now, 1);
	if (l.share >= was.share && l.tol >= was.tol)
		return 0;
	k->l = l;
	if (r->lower(r->ctx, k))
		return 0;
	return rs_level_cut(&k->lk, &was, &l, k->s.tat, now);
}

int rate_table__step(struct rate_table *t, struct rate_round *r, struct rate_key *v, size_t n,
		     char *err, size_t len)
{
	const __u64 ttl_us = RS_TTL_SYNCS * r->interval_ns / SLUICE_NSEC_PER_USEC;
	struct rate_slot *nv = calloc(n ? n : 1, sizeof(*nv)), *old;
	struct rate_lease_req *q = calloc(n ? n : 1, sizeof(*q));
	struct rate_lease_grant *g = calloc(n ? n : 1, sizeof(*g));
	size_t *at = calloc(n ? n : 1, sizeof(*at)), *soon = calloc(n ? n : 1, sizeof(*soon));
	struct rate_sync rq = { .holder = r->holder, .lease_ttl_us = ttl_us };
	size_t i, m = 0, n_soon = 0;
	int ret = -ENOMEM, *failed = calloc(n ? n : 1, sizeof(*failed));

	if (!nv || !q || !g || !at || !soon || !failed)
		goto out;
	for (i = 0; i < n; i++) {
		struct rs_key *s = &nv[i].rs;

		nv[i].key = v[i].key;
		old = t->n ? bsearch(&v[i].key, t->v, t->n, sizeof(*t->v), slot_cmp) : NULL;
		if (old)
			*s = old->rs;
		if (r->full) {
			const int resumed = !s->last_ns && rate_entry_live(&v[i], r->now_ns);

			rs_refill(s, &v[i].lk, r->now_ns, v[i].s.spent, v[i].s.denied);
			first_demand(s, &v[i], resumed);
		} else {
			rs_tick(s, r->now_ns, v[i].s.spent, v[i].s.denied);
		}
		if (!r->be || !r->call)
			continue;
		if (r->full ? v[i].every_sync || rs_due(s, r->now_ns, r->interval_ns)
			    : rs_early(s, &v[i].lk, r->now_ns)) {
			rs_request(s, &v[i].lk, &q[m]);
			at[m++] = i;
		} else if (r->full && rs_due_soon(s, r->now_ns, r->interval_ns)) {
			soon[n_soon++] = i;
		}
	}
	/* a call goes anyway: the renewals due soon go with it (RS_ALIGN_DIV) */
	for (i = 0; i < n_soon && m; i++) {
		rs_request(&nv[soon[i]].rs, &v[soon[i]].lk, &q[m]);
		at[m++] = soon[i];
	}
	for (i = 0; i < m; i++)
		q[i].level = lower_first(&v[at[i]], &nv[at[i]].rs, r);
	rq.leases = q;
	rq.grants = g;
	rq.n_leases = m;
	ret = m ? backend__rate_lease(r->be, &rq, err, len) : 0;
	r->calls += m;
	for (i = 0; i < m; i++) {
		if (!ret && !g[i].err) {
			rs_answer(&nv[at[i]].rs, &v[at[i]].lk, &g[i], r->now_ns, ttl_us,
				  r->interval_ns);
		} else {
			rs_failed(&nv[at[i]].rs);
			failed[at[i]] = 1;
		}
	}
	for (i = 0; i < n; i++)
		entry_of(&v[i], &nv[i].rs, r,
			 r->be && !failed[i] && backend__is_reachable(r->be, v[i].lk.key));
	if (n) /* qsort(NULL, 0) is undefined: glibc declares it nonnull */
		qsort(nv, n, sizeof(*nv), slot_cmp);
	free(t->v);
	t->v = nv;
	t->n = n;
	nv = NULL;
out:
	free(nv);
	free(q);
	free(g);
	free(at);
	free(soon);
	free(failed);
	return ret;
}
