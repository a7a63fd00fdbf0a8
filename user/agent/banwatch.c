// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The ban lists as the agent sees them: their changes and expiries as
 * events, their entries and drops as metrics (banwatch.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/banwatch.h"
#include "base/addr.h"
#include "base/clock.h"
#include "base/log.h"

#define LISTS_MAX 64 /* lists of one interface counted per event and in the metrics */

/* Per list: how many entries came, went and expired. */
struct list_count {
	char list[BANLIST_NAME_LEN];
	size_t entries, added, removed, expired;
	__u64 drops;
	const struct banlist_entry *last; /* the last one added or removed, for a single ban */
};

struct counts {
	struct list_count l[LISTS_MAX];
	size_t n;
};

/* The count of list @name in @c, made if new; NULL past LISTS_MAX. */
static struct list_count *count_of(struct counts *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->l[i].list, name))
			return &c->l[i];
	if (c->n == LISTS_MAX)
		return NULL;
	memset(&c->l[c->n], 0, sizeof(c->l[0]));
	memcpy(c->l[c->n].list, name, sizeof(c->l[0].list));
	return &c->l[c->n++];
}

static void prefix_of(char *buf, const struct banlist_entry *e)
{
	if (addr_text(buf, ADDR_TEXT_LEN, e->key.addr, (int)bans__key_bits(&e->key)))
		buf[0] = '\0';
}

/* One event per list that changed between @old and @new (both sorted). */
static void log_changes(const char *iface, const struct banlist_state *old,
			const struct banlist_state *new, __u64 now_real)
{
	struct counts c = { .n = 0 };
	char prefix[ADDR_TEXT_LEN];
	size_t i = 0, j = 0, k;

	while (i < old->n || j < new->n) {
		int d = i == old->n   ? 1
			: j == new->n ? -1
				      : banlist_entry_cmp(&old->e[i], &new->e[j]);
		const struct banlist_entry *e = d < 0 ? &old->e[i] : &new->e[j];
		struct list_count *lc = count_of(&c, e->list);

		/* Banned again (a new expiry) counts as added; an expired entry
		 * pruned by a command was logged when it expired. */
		int added = d > 0 || (!d && e->expires_real_ns != old->e[i].expires_real_ns);
		int removed = d < 0 && !(e->expires_real_ns && e->expires_real_ns <= now_real);

		if (lc) {
			lc->added += added;
			lc->removed += removed;
		}
		if (lc && d)
			lc->last = e;
		i += d <= 0;
		j += d >= 0;
	}
	for (k = 0; k < c.n; k++) {
		struct list_count *lc = &c.l[k];

		if (!lc->added && !lc->removed)
			continue;
		if (lc->added + lc->removed == 1 && !strcmp(lc->list, BANLIST_MANUAL) && lc->last) {
			prefix_of(prefix, lc->last);
			log_event(LOG_INFO, lc->added ? "ban" : "unban",
				  "iface=%s list=%s prefix=%s", iface, lc->list, prefix);
			continue;
		}
		log_event(LOG_INFO, "ban_list",
			  "iface=%s list=%s entries=%zu added=%zu removed=%zu", iface, lc->list,
			  banlist_state__count(new, lc->list), lc->added, lc->removed);
	}
}

/* One event per list whose entries expired in (w->checked_real, @now_real]. */
static void log_expiries(struct banwatch_iface *w, __u64 now_real)
{
	struct counts c = { .n = 0 };
	char prefix[ADDR_TEXT_LEN];
	size_t i;

	for (i = 0; i < w->s.n; i++) {
		const struct banlist_entry *e = &w->s.e[i];
		struct list_count *lc;

		if (!e->expires_real_ns || e->expires_real_ns <= w->checked_real ||
		    e->expires_real_ns > now_real || !(lc = count_of(&c, e->list)))
			continue;
		lc->expired++;
		lc->last = e;
	}
	w->checked_real = now_real;
	for (i = 0; i < c.n; i++) {
		if (c.l[i].expired == 1) {
			prefix_of(prefix, c.l[i].last);
			log_event(LOG_INFO, "ban_expired", "iface=%s list=%s prefix=%s", w->iface,
				  c.l[i].list, prefix);
		} else
			log_event(LOG_INFO, "ban_expired", "iface=%s list=%s entries=%zu", w->iface,
				  c.l[i].list, c.l[i].expired);
	}
}

/* Read @iface's state file again if it changed; log what did. */
static void look(struct banwatch_iface *w, const char *iface, const char *state_dir, __u64 now_real)
{
	char path[PATH_MAX], err[DIAG_MSG_LEN + PATH_MAX];
	struct banlist_state next;
	struct stat st = { 0 };
	int first = strcmp(w->iface, iface) != 0;

	if (first) {
		banlist_state__free(&w->s);
		memset(w, 0, sizeof(*w));
		snprintf(w->iface, sizeof(w->iface), "%s", iface);
		w->checked_real = now_real;
	}
	if (banlist_state_path(path, state_dir, iface) || (stat(path, &st) && errno != ENOENT))
		return;
	if (!first && st.st_ino == w->ino && st.st_size == w->size &&
	    st.st_mtim.tv_sec * (__s64)SLUICE_NSEC_PER_SEC + st.st_mtim.tv_nsec == w->mtime_ns)
		return;
	if (banlist_state__load(&next, path, err, sizeof(err)))
		return; /* the command that wrote it said why */
	if (!first)
		log_changes(iface, &w->s, &next, now_real);
	banlist_state__free(&w->s);
	w->s = next;
	w->ino = st.st_ino;
	w->size = st.st_size;
	w->mtime_ns = st.st_mtim.tv_sec * (__s64)SLUICE_NSEC_PER_SEC + st.st_mtim.tv_nsec;
}

static int cmp_ban_key(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct sluice_addr_key));
}

/* Each list of @w with its live entries and their drops in @m, appended to @out. */
static size_t count_lists(const struct banwatch_iface *w, const struct sluice_maps *m,
			  __u64 now_real, struct metrics_ban_list *out, size_t room)
{
	struct counts c = { .n = 0 };
	struct ban_entry *e = NULL;
	size_t i, n = 0;

	if (bans__read(m, &e, &n))
		n = 0;
	if (n)
		qsort(e, n, sizeof(*e), cmp_ban_key); /* the key is the entry's first member */
	for (i = 0; i < w->s.n; i++) {
		const struct banlist_entry *s = &w->s.e[i];
		struct list_count *lc = count_of(&c, s->list);
		const struct ban_entry *k;

		if (!lc || (s->expires_real_ns && s->expires_real_ns <= now_real))
			continue;
		lc->entries++;
		k = n ? bsearch(&s->key, e, n, sizeof(*e), cmp_ban_key) : NULL;
		lc->drops += k ? k->ban.drops_pkts : 0;
	}
	free(e);
	for (i = 0; i < c.n && i < room; i++) {
		snprintf(out[i].iface, sizeof(out[i].iface), "%s", w->iface);
		memcpy(out[i].list, c.l[i].list, sizeof(out[i].list));
		out[i].entries = c.l[i].entries;
		out[i].drops = c.l[i].drops;
	}
	return i;
}

/* Publish every interface's lists to @snap. */
static void publish(struct banwatch *w, const struct attachment *att, size_t n,
		    struct metrics_snapshot *snap, __u64 now_real)
{
	struct metrics_ban_list *l = calloc(n * LISTS_MAX + 1, sizeof(*l)), *old;
	size_t i, k = 0;

	if (!l)
		return;
	for (i = 0; i < n; i++)
		k += count_lists(&w->ifs[i], &att[i].maps, now_real, l + k, LISTS_MAX);
	pthread_mutex_lock(&snap->lock);
	old = snap->ban_lists;
	snap->ban_lists = l;
	snap->n_ban_lists = k;
	pthread_mutex_unlock(&snap->lock);
	free(old);
}

void banwatch__tick(struct banwatch *w, const struct attachment *att, size_t n,
		    const char *state_dir, struct metrics_snapshot *snap, __u64 now)
{
	__u64 now_real;
	size_t i;

	if (now - w->last_ns < BANWATCH_NS)
		return;
	w->last_ns = now;
	now_real = clock_ns(CLOCK_REALTIME);
	for (i = 0; i < n && i < POLICY_MAX_IFACES; i++) {
		look(&w->ifs[i], att[i].iface, state_dir, now_real);
		log_expiries(&w->ifs[i], now_real);
	}
	if (snap && now - w->counted_ns >= METRICS_KEYS_NS) {
		w->counted_ns = now;
		publish(w, att, n, snap, now_real);
	}
}

void banwatch__free(struct banwatch *w)
{
	size_t i;

	for (i = 0; i < POLICY_MAX_IFACES; i++)
		banlist_state__free(&w->ifs[i].s);
}
