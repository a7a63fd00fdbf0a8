// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Escalation: denials counted per key, and the bans they make
 * (escalate.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice/ctl.h"
#include "sluice/gcra.h"
#include "agent/escalate.h"
#include "base/addr.h"
#include "base/escape.h"
#include "base/log.h"
#include "kernel/banlists.h"
#include "kernel/bans.h"
#include "kernel/maps.h"
#include "policy/units.h"

#define ESCALATE_KEYS_MIN 64 /* the first allocation of an interface's keys */

_Static_assert(POLICY_LIST_LEN == BANLIST_NAME_LEN, "a policy's list is a ban list's name");

__u64 esc_slot_ns(__u64 within_ns)
{
	return (within_ns + ESCALATE_SLOTS - 1) / ESCALATE_SLOTS;
}

void esc_window__add(struct esc_window *w, __u64 within_ns, __u64 now, __u64 n)
{
	__u64 slot = now / esc_slot_ns(within_ns);
	size_t i = slot % ESCALATE_SLOTS;

	if (w->slot[i] != slot + 1) {
		w->slot[i] = slot + 1;
		w->n[i] = 0;
	}
	w->n[i] += n;
}

__u64 esc_window__sum(const struct esc_window *w, __u64 within_ns, __u64 now)
{
	__u64 width = esc_slot_ns(within_ns), last = now / width;
	/* The first slot that began after now - within: 64 of them at most, the ring's size. */
	__u64 first = now >= within_ns ? (now - within_ns) / width + 1 : 0;
	__u64 sum = 0;
	size_t i;

	for (i = 0; i < ESCALATE_SLOTS; i++)
		if (w->slot[i] && w->slot[i] - 1 >= first && w->slot[i] - 1 <= last)
			sum += w->n[i];
	return sum;
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct sluice_key));
}

/* The counts of @k on @f, made if new; NULL without memory. Keeps f->keys sorted. */
static struct esc_key *key_get(struct esc_iface *f, const struct sluice_key *k)
{
	struct esc_key *e = bsearch(k, f->keys, f->n, sizeof(*e), key_cmp), *grown;
	size_t at = 0;

	if (e)
		return e;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : ESCALATE_KEYS_MIN;

		grown = realloc(f->keys, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		f->keys = grown;
		f->cap = cap;
	}
	while (at < f->n && key_cmp(&f->keys[at].key, k) < 0)
		at++;
	memmove(&f->keys[at + 1], &f->keys[at], (f->n - at) * sizeof(*f->keys));
	f->n++;
	e = &f->keys[at];
	memset(e, 0, sizeof(*e));
	e->key = *k;
	return e;
}

/* One look at one interface. */
struct look {
	const struct policy *file[SLUICE_MAX_POLICIES]; /* by id: policies with escalate */
	struct sluice_policy active[SLUICE_MAX_POLICIES];
	const struct sluice_policy *by_id[SLUICE_MAX_POLICIES];
	__u64 delta[SLUICE_MAX_POLICIES]; /* drops since the last look */
	__u64 at_limit[SLUICE_MAX_POLICIES];
	struct sluice_key *hit; /* keys at their limit, of policies that dropped */
	size_t n_hit, cap_hit;
	__u64 now_ticks;
	__u64 slack; /* clock_slack() */
};

/*
 * How much earlier than the agent's clock a key's TAT may have been
 * reckoned, in GCRA ticks: the program's coarse clock lags CLOCK_MONOTONIC
 * by up to SLUICE_COARSE_LAG_TICKS + 1 scheduler ticks (limit.bpf.h).
 */
static __u64 clock_slack(void)
{
	struct timespec res = { 0 };

	clock_getres(CLOCK_MONOTONIC_COARSE, &res);
	return sluice_gcra_ticks(((__u64)res.tv_sec * SLUICE_NSEC_PER_SEC + (__u64)res.tv_nsec) *
				 (SLUICE_COARSE_LAG_TICKS + 1));
}

/* Is @st's key at its limit: would a packet of one cost unit be denied now? */
static int at_limit(const struct sluice_policy *p, const struct sluice_state *st, __u64 now,
		    __u64 slack)
{
	const struct sluice_gcra *g = &p->limit;
	__u64 ahead = sluice_gcra_ahead(st->tat, now, g->tolerance);
	__u64 incr = sluice_gcra_incr(1, g->interval_mant, g->interval_shift);

	return ahead + incr + slack > g->tolerance;
}

static int collect(const struct sluice_key *key, const struct sluice_state *st, void *arg)
{
	struct look *l = arg;
	__u32 id = key->policy_id;
	struct sluice_key *grown;

	if (id >= SLUICE_MAX_POLICIES || !l->delta[id] || !l->by_id[id] ||
	    !at_limit(l->by_id[id], st, l->now_ticks, l->slack))
		return 0;
	if (l->n_hit == l->cap_hit) {
		l->cap_hit = l->cap_hit ? 2 * l->cap_hit : ESCALATE_KEYS_MIN;
		grown = realloc(l->hit, l->cap_hit * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		l->hit = grown;
	}
	l->hit[l->n_hit++] = *key;
	l->at_limit[id]++;
	return 0;
}

/* Read each escalate policy's drops since the last look into l->delta; 1 when any moved. */
static int read_drops(struct esc_iface *f, struct look *l, const struct sluice_maps *m)
{
	struct sluice_pstats s;
	int moved = 0;
	__u32 id;

	for (id = 0; id < SLUICE_MAX_POLICIES; id++) {
		__u64 drops;

		if (!l->file[id] || maps__read_percpu(m->fd[SLUICE_MAP_STATS], id, (__u64 *)&s,
						      sizeof(s) / sizeof(__u64)))
			continue;
		drops = s.c[SLUICE_PSTAT_DROPPED].pkts;
		/* Fewer than before: the id was reset, and counts from zero. */
		l->delta[id] = !f->primed	       ? 0
			       : drops >= f->drops[id] ? drops - f->drops[id]
						       : drops;
		f->drops[id] = drops;
		moved |= l->delta[id] != 0;
	}
	f->primed = 1;
	return moved;
}

/* Ban @k's source prefix as @p says, on every interface; log it. */
static void ban(const struct esc_iface *f, const struct policy *p, const struct sluice_policy *sp,
		const struct sluice_key *k, __u64 denials, struct banapi *writer)
{
	int bits = addr_is_v4mapped(k->addr) ? sp->prefix4 : sp->prefix6;
	char text[ADDR_TEXT_LEN], within[UNITS_TEXT_LEN], dur[UNITS_TEXT_LEN];
	char why[DIAG_MSG_LEN] = "", err_text[ESCAPE_LOGFMT_LEN(DIAG_MSG_LEN)];
	struct sluice_addr_key bk;
	int err;

	bans__key(&bk, k->addr, (unsigned int)bits);
	addr_text(text, sizeof(text), k->addr, bits);
	units_duration_text(within, (double)p->escalate.within_ns);
	units_duration_text(dur, (double)p->escalate.ban_ns);
	err = banapi__apply(writer, p->escalate.list, &bk, p->escalate.ban_ns, why, sizeof(why));
	if (err) {
		log_event(LOG_WARN, "escalate_failed", "iface=%s policy=%s key=%s list=%s err=%s",
			  f->iface, p->name, text, p->escalate.list,
			  escape_logfmt_text(err_text, sizeof(err_text), why));
		return;
	}
	log_event(LOG_INFO, "escalate",
		  "iface=%s policy=%s key=%s list=%s denials=%llu within=%s ban=%s", f->iface,
		  p->name, text, p->escalate.list, (unsigned long long)denials, within, dur);
}

/* Share each policy's new drops among its keys at their limit; ban those past their count. */
static int count(struct esc_iface *f, struct look *l, struct banapi *writer, __u64 now)
{
	__u64 given[SLUICE_MAX_POLICIES] = { 0 };
	size_t i;

	for (i = 0; i < l->n_hit; i++) {
		const struct sluice_key *k = &l->hit[i];
		__u32 id = k->policy_id;
		const struct policy *p = l->file[id];
		__u64 share = l->delta[id] / l->at_limit[id];
		struct esc_key *e;

		/* The remainder goes one each to the first keys, so the shares add up. */
		share += given[id]++ < l->delta[id] % l->at_limit[id];
		e = key_get(f, k);
		if (!e)
			return -ENOMEM;
		esc_window__add(&e->w, p->escalate.within_ns, now, share);
		if (esc_window__sum(&e->w, p->escalate.within_ns, now) < p->escalate.after)
			continue;
		ban(f, p, l->by_id[id], k, esc_window__sum(&e->w, p->escalate.within_ns, now),
		    writer);
		memset(&e->w, 0, sizeof(e->w)); /* banned: its denials start again */
	}
	return 0;
}

/* Forget the keys whose windows are empty, or whose policy no longer escalates. */
static void prune(struct esc_iface *f, const struct look *l, __u64 now)
{
	size_t i, kept = 0;

	for (i = 0; i < f->n; i++) {
		__u32 id = f->keys[i].key.policy_id; /* < SLUICE_MAX_POLICIES: collect() saw it */
		const struct policy *p = l->file[id];

		if (p && esc_window__sum(&f->keys[i].w, p->escalate.within_ns, now))
			f->keys[kept++] = f->keys[i];
	}
	f->n = kept;
}

static int look_iface(struct esc_iface *f, struct look *l, const struct policy_set *ps,
		      const struct attachment *att, const __u32 *ids, struct banapi *writer,
		      __u64 now)
{
	size_t i, n_active = 0;
	int err;

	for (i = 0; i < ps->n_policies; i++)
		if (ps->policies[i].escalate.on && ids[i] < SLUICE_MAX_POLICIES)
			l->file[ids[i]] = &ps->policies[i];
	err = maps__read_active(&att->maps, l->active, &n_active);
	if (err)
		return err;
	for (i = 0; i < n_active; i++)
		if (l->active[i].id < SLUICE_MAX_POLICIES && l->file[l->active[i].id])
			l->by_id[l->active[i].id] = &l->active[i];
	if (read_drops(f, l, &att->maps)) {
		l->now_ticks = sluice_gcra_ticks(now);
		l->slack = clock_slack();
		err = maps__walk_keys(&att->maps, collect, l) ?: count(f, l, writer, now);
	}
	prune(f, l, now);
	return err;
}

void escalate__tick(struct escalate *e, const struct policy_set *ps, const struct attachment *att,
		    size_t n, __u32 (*ids)[SLUICE_MAX_POLICIES], struct banapi *writer, __u64 now)
{
	struct look *l;
	size_t i, j;
	int any = 0, err;

	if (now - e->last_ns < ESCALATE_LOOK_NS || !writer)
		return;
	e->last_ns = now;
	for (j = 0; j < ps->n_policies; j++)
		any |= ps->policies[j].escalate.on;
	if (!any)
		return;
	l = malloc(sizeof(*l));
	if (!l)
		return;
	for (i = 0; i < n && i < POLICY_MAX_IFACES; i++) {
		struct esc_iface *f = &e->ifs[i];

		if (strcmp(f->iface, att[i].iface) != 0) {
			free(f->keys);
			memset(f, 0, sizeof(*f));
			snprintf(f->iface, sizeof(f->iface), "%s", att[i].iface);
		}
		memset(l, 0, sizeof(*l));
		err = look_iface(f, l, ps, &att[i], ids[i], writer, now);
		free(l->hit);
		if (err)
			pr_warn("cannot count the denials of '%s': %s", f->iface, strerror(-err));
	}
	free(l);
}

void escalate__free(struct escalate *e)
{
	size_t i;

	for (i = 0; i < POLICY_MAX_IFACES; i++)
		free(e->ifs[i].keys);
	memset(e, 0, sizeof(*e));
}
