// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Named ban lists: the state file, list files, and the difference a
 * replacement writes to the ban maps (banlists.h).
 */
#include <bpf/bpf.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/addr.h"
#include "base/clock.h"
#include "base/escape.h"
#include "base/log.h"
#include "kernel/banlists.h"
#include "policy/policy.h"

#define STATE_MAGIC    "# sluice bans 1" /* the state file's first line */
#define STATE_DIR_MODE 0750
#define LINE_MAX_LEN   512 /* a list file's or the state's longest line */
#define GROW_FIRST     16  /* elements of an array's first allocation; then doubled */
#define BATCH_ENOTSUPP 524 /* the kernel's ENOTSUPP: a map without batch operations */

int banlist_name_ok(const char *s)
{
	size_t i, len = strlen(s);

	if (!len || len >= BANLIST_NAME_LEN)
		return 0;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return 0;
	return 1;
}

int banlist_state_path(char *buf, const char *dir, const char *iface)
{
	int len = snprintf(buf, PATH_MAX, "%s/bans/%s", dir, iface);

	return len < 0 || len >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static int cmp_key(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct sluice_addr_key));
}

int banlist_entry_cmp(const void *a, const void *b)
{
	const struct banlist_entry *x = a, *y = b;

	return cmp_key(&x->key, &y->key) ?: strcmp(x->list, y->list);
}

static void sort_state(struct banlist_state *s)
{
	if (s->n)
		qsort(s->e, s->n, sizeof(*s->e), banlist_entry_cmp);
}

/* The first entry of @s's sorted part whose key is not below @k. */
static size_t lower_bound(const struct banlist_state *s, const struct sluice_addr_key *k)
{
	size_t lo = 0, hi = s->n - s->tail;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_key(&s->e[mid].key, k) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Monotonic expiry of a realtime one (0: never), on clocks read at @mono and @real. */
static __u64 to_mono(__u64 expires_real, __u64 mono, __u64 real)
{
	if (!expires_real)
		return 0;
	return expires_real > real ? mono + (expires_real - real) : mono;
}

/*
 * Merge entry @e of a key into @b's expiry (realtime, *@exp) and reason:
 * the latest expiry (0, never, over all) and the reason of the first list
 * by name. *@first: the list whose reason @b holds, NULL before any.
 */
static void merge_one(const struct banlist_entry *e, __u64 *exp, struct sluice_ban *b,
		      const char **first)
{
	if (!*first || (*exp && (!e->expires_real_ns || e->expires_real_ns > *exp)))
		*exp = e->expires_real_ns;
	if (!*first || strcmp(e->list, *first) < 0) {
		memcpy(b->reason, e->reason, SLUICE_BAN_REASON_LEN);
		*first = e->list;
	}
}

/* The run of @k in the sorted part of @s: [*lo, *hi). */
static void run_of(const struct banlist_state *s, const struct sluice_addr_key *k, size_t *lo,
		   size_t *hi)
{
	*lo = lower_bound(s, k);
	for (*hi = *lo; *hi < s->n - s->tail && !cmp_key(&s->e[*hi].key, k); (*hi)++)
		;
}

int banlist_state__value(const struct banlist_state *s, const struct sluice_addr_key *k,
			 struct sluice_ban *b)
{
	__u64 mono = mono_ns(), real = clock_ns(CLOCK_REALTIME), exp = 0;
	const char *first = NULL;
	size_t lo, hi, i;

	memset(b, 0, sizeof(*b));
	run_of(s, k, &lo, &hi);
	for (i = lo; i < hi; i++)
		if (!s->e[i].dead)
			merge_one(&s->e[i], &exp, b, &first);
	for (i = s->n - s->tail; i < s->n; i++)
		if (!cmp_key(&s->e[i].key, k))
			merge_one(&s->e[i], &exp, b, &first);
	if (!first)
		return 0;
	b->expires_ns = to_mono(exp, mono, real);
	b->since_ns = mono;
	return 1;
}

/* One line of a list file: its key into @k. 0, 1 for no entry, or -EINVAL after @err. */
static int parse_line(char *line, struct sluice_addr_key *k, char *err, size_t errlen)
{
	struct policy_prefix p;
	char *s = line, *end;

	while (isspace((unsigned char)*s))
		s++;
	if (!*s || *s == '#' || *s == ';')
		return 1;
	for (end = s; *end && !isspace((unsigned char)*end) && *end != '#' && *end != ';'; end++)
		;
	*end = '\0';
	if (policy_parse_prefix(s, &p, err, errlen))
		return -EINVAL;
	bans__key(k, p.addr, p.bits);
	return 0;
}

/* Grow *@a of *@cap elements of @size to hold @n + 1. 0 or -ENOMEM. */
static int grow(void **a, size_t *cap, size_t n, size_t size)
{
	void *p;

	if (n < *cap)
		return 0;
	p = reallocarray(*a, *cap ? *cap * 2 : GROW_FIRST, size);
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = *cap ? *cap * 2 : GROW_FIRST;
	return 0;
}

/* Sort and drop duplicates. */
static size_t unique_keys(struct sluice_addr_key *k, size_t n)
{
	size_t i, out = 0;

	if (!n)
		return 0;
	qsort(k, n, sizeof(*k), cmp_key);
	for (i = 0; i < n; i++)
		if (!out || cmp_key(&k[out - 1], &k[i]))
			k[out++] = k[i];
	return out;
}

int banlist__read_file(FILE *f, const char *name, struct sluice_addr_key **keys, size_t *n,
		       char *err, size_t errlen)
{
	struct sluice_addr_key *k = NULL;
	char line[LINE_MAX_LEN], why[DIAG_MSG_LEN];
	size_t cap = 0, lineno = 0, len;
	int rc = 0;

	*n = 0;
	while (!rc && fgets(line, sizeof(line), f)) {
		lineno++;
		len = strlen(line);
		if (len == sizeof(line) - 1 && line[len - 1] != '\n' && !feof(f)) {
			snprintf(err, errlen, "%s:%zu: the line is longer than %d characters", name,
				 lineno, LINE_MAX_LEN - 2);
			rc = -EINVAL;
			break;
		}
		rc = grow((void **)&k, &cap, *n, sizeof(*k));
		if (rc)
			break;
		rc = parse_line(line, &k[*n], why, sizeof(why));
		if (rc == -EINVAL)
			snprintf(err, errlen, "%s:%zu: prefix: %s", name, lineno, why);
		else if (!rc)
			(*n)++;
		rc = rc < 0 ? rc : 0;
	}
	if (!rc && ferror(f))
		rc = -EIO;
	if (rc) {
		free(k);
		return rc;
	}
	*n = unique_keys(k, *n);
	*keys = k;
	return 0;
}

/* ---- the state file ---------------------------------------------------------- */

/* One line of the state file: "<list> <prefix> <expires_real_ns> [<reason>]". */
static int parse_state_line(char *line, struct banlist_entry *e, char *why, size_t len)
{
	char list[LINE_MAX_LEN], prefix[LINE_MAX_LEN], text[DIAG_MSG_LEN / 2];
	unsigned long long exp;
	int at = 0;

	memset(e, 0, sizeof(*e));
	line[strcspn(line, "\n")] = '\0';
	if (sscanf(line, "%511s %511s %llu %n", list, prefix, &exp, &at) != 3) {
		snprintf(why, len, "line: expected '<list> <prefix> <expires_ns> [<reason>]'");
		return -EINVAL;
	}
	if (!banlist_name_ok(list)) {
		snprintf(why, len, "list: '%.64s' is not a list name", list);
		return -EINVAL;
	}
	if (parse_line(prefix, &e->key, text, sizeof(text))) {
		snprintf(why, len, "prefix: %s", text);
		return -EINVAL;
	}
	memcpy(e->list, list, strlen(list) + 1);
	e->expires_real_ns = exp;
	snprintf(e->reason, sizeof(e->reason), "%s", at ? line + at : "");
	return 0;
}

int banlist_state__load(struct banlist_state *s, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char line[LINE_MAX_LEN], why[DIAG_MSG_LEN];
	size_t cap = 0, lineno = 0;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	if (!f) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return rc;
	}
	while (!rc && fgets(line, sizeof(line), f)) {
		if (++lineno == 1 && !strncmp(line, STATE_MAGIC, strlen(STATE_MAGIC)))
			continue;
		if (lineno == 1) {
			snprintf(err, errlen, "%s:1: not a sluice ban state (no '%s' line)", path,
				 STATE_MAGIC);
			rc = -EINVAL;
			break;
		}
		rc = grow((void **)&s->e, &cap, s->n, sizeof(*s->e));
		if (!rc && parse_state_line(line, &s->e[s->n], why, sizeof(why))) {
			snprintf(err, errlen, "%s:%zu: %s", path, lineno, why);
			rc = -EINVAL;
		}
		if (!rc)
			s->n++;
	}
	fclose(f);
	if (rc)
		banlist_state__free(s);
	else
		sort_state(s);
	return rc;
}

/* mkdir -p of @path's parent, mode STATE_DIR_MODE. 0 or -errno. */
static int make_parent(const char *path)
{
	char dir[PATH_MAX], *p;

	snprintf(dir, sizeof(dir), "%s", path);
	for (p = dir + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(dir, STATE_DIR_MODE) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

/* Write @s into open @f; 0 or -errno. */
static int write_state(const struct banlist_state *s, FILE *f)
{
	char prefix[ADDR_TEXT_LEN];
	size_t i;

	fprintf(f, "%s\n", STATE_MAGIC);
	for (i = 0; i < s->n; i++) {
		const struct banlist_entry *e = &s->e[i];

		if (addr_text(prefix, sizeof(prefix), e->key.addr, (int)bans__key_bits(&e->key)))
			return -EINVAL;
		fprintf(f, "%s %s %llu %s\n", e->list, prefix,
			(unsigned long long)e->expires_real_ns, e->reason);
	}
	return fflush(f) || ferror(f) ? -EIO : 0;
}

int banlist_state__save(struct banlist_state *s, const char *path)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd, err = make_parent(path);

	banlist_state__settle(s);
	if (err)
		return err;
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		unlink(tmp);
		return err;
	}
	err = write_state(s, f);
	if (!err && fsync(fd))
		err = -errno;
	if (fclose(f) && !err)
		err = -EIO;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

void banlist_state__free(struct banlist_state *s)
{
	free(s->e);
	memset(s, 0, sizeof(*s));
}

size_t banlist_state__prune(struct banlist_state *s, __u64 now_real)
{
	size_t i, out = 0;

	banlist_state__settle(s);
	for (i = 0; i < s->n; i++)
		if (!s->e[i].expires_real_ns || s->e[i].expires_real_ns > now_real)
			s->e[out++] = s->e[i];
	i = s->n - out;
	s->n = out;
	return i;
}

size_t banlist_state__count(const struct banlist_state *s, const char *list)
{
	size_t i, n = 0;

	for (i = 0; i < s->n; i++)
		n += !s->e[i].dead && !strcmp(s->e[i].list, list);
	return n;
}

/* Put @e at the end of @s's unsorted tail. 0 or -ENOMEM. */
static int append(struct banlist_state *s, const struct banlist_entry *e)
{
	size_t cap = s->cap < s->n ? s->n : s->cap;

	if (grow((void **)&s->e, &cap, s->n, sizeof(*s->e)))
		return -ENOMEM;
	s->cap = cap;
	s->e[s->n++] = *e;
	s->tail++;
	if (s->tail > BANLIST_TAIL_MAX)
		banlist_state__settle(s);
	return 0;
}

int banlist_state__set(struct banlist_state *s, const char *list, const struct sluice_addr_key *k,
		       __u64 expires_real, const char *reason)
{
	struct banlist_entry e = { .key = *k, .expires_real_ns = expires_real }, *p;
	size_t lo, hi, i;

	/* The sorted part is edited in place (O(log n)); new entries go to the tail. */
	run_of(s, k, &lo, &hi);
	if (!list) {
		for (i = lo; i < hi; i++) {
			s->dead += !s->e[i].dead;
			s->e[i].dead = 1;
		}
		for (i = s->n - s->tail; i < s->n;) {
			if (cmp_key(&s->e[i].key, k) != 0) {
				i++;
				continue;
			}
			s->e[i] = s->e[--s->n];
			s->tail--;
		}
		return 0;
	}
	snprintf(e.list, sizeof(e.list), "%s", list);
	snprintf(e.reason, sizeof(e.reason), "%s", reason);
	for (p = NULL, i = lo; !p && i < hi; i++)
		if (!strcmp(s->e[i].list, list))
			p = &s->e[i];
	for (i = s->n - s->tail; !p && i < s->n; i++)
		if (!cmp_key(&s->e[i].key, k) && !strcmp(s->e[i].list, list))
			p = &s->e[i];
	if (!p)
		return append(s, &e);
	s->dead -= p->dead;
	*p = e;
	return 0;
}

void banlist_state__settle(struct banlist_state *s)
{
	size_t i, w = 0, sorted = s->n - s->tail, tail = s->tail;
	struct banlist_entry *t;

	if (!s->tail && !s->dead)
		return;
	for (i = 0; i < sorted; i++)
		if (!s->e[i].dead)
			s->e[w++] = s->e[i];
	memmove(&s->e[w], &s->e[sorted], tail * sizeof(*s->e));
	sorted = w;
	s->n = sorted + tail;
	s->tail = s->dead = 0;
	t = malloc(tail * sizeof(*t) + 1);
	if (!t) { /* sort it all in place: slower, the same result */
		sort_state(s);
		return;
	}
	memcpy(t, &s->e[sorted], tail * sizeof(*t));
	if (tail)
		qsort(t, tail, sizeof(*t), banlist_entry_cmp);
	/* Merge from the end: the sorted part moves up by the tail's length at most. */
	for (w = s->n; tail;) {
		if (sorted && banlist_entry_cmp(&s->e[sorted - 1], &t[tail - 1]) > 0)
			s->e[--w] = s->e[--sorted];
		else
			s->e[--w] = t[--tail];
	}
	free(t);
}

/* ---- map writes ---------------------------------------------------------------- */

/* Map writes, split by map: a single address goes to the hash, a prefix to the trie. */
struct ops {
	struct sluice_addr_key *key;
	struct sluice_ban *val; /* NULL for deletes */
	size_t n, cap;
};

static int ops_add(struct ops *o, const struct sluice_addr_key *k, const struct sluice_ban *v)
{
	size_t cap = o->cap;

	if (grow((void **)&o->key, &cap, o->n, sizeof(*o->key)))
		return -ENOMEM;
	if (v && grow((void **)&o->val, &o->cap, o->n, sizeof(*o->val)))
		return -ENOMEM;
	o->cap = cap;
	o->key[o->n] = *k;
	if (v)
		o->val[o->n] = *v;
	o->n++;
	return 0;
}

static void ops_free(struct ops *o)
{
	free(o->key);
	free(o->val);
}

static int is_host(const struct sluice_addr_key *k)
{
	return k->prefixlen == SLUICE_ADDR_KEY_BITS(SLUICE_ADDR_BITS);
}

/*
 * Apply @o to map @fd: one batch where the map has batch operations (the
 * hash), one call per entry where it has not (the trie). 0 or -errno.
 */
static int apply_ops(int fd, const struct ops *o)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);
	__u32 count = (__u32)o->n;
	size_t i;
	int err;

	if (!o->n)
		return 0;
	err = o->val ? bpf_map_update_batch(fd, o->key, o->val, &count, &opts)
		     : bpf_map_delete_batch(fd, o->key, &count, &opts);
	if (!err)
		return 0;
	err = -errno;
	if (err != -BATCH_ENOTSUPP && err != -EOPNOTSUPP && err != -EINVAL)
		return err;
	for (i = 0; i < o->n; i++) {
		if (o->val ? bpf_map_update_elem(fd, &o->key[i], &o->val[i], BPF_ANY)
			   : bpf_map_delete_elem(fd, &o->key[i]) && errno != ENOENT)
			return -errno;
	}
	return 0;
}

/* A pending write or delete set, both maps. */
struct plan {
	struct ops put[2], del[2];    /* [0] the trie, [1] the hash */
	struct sluice_addr_key *trie; /* the trie's keys, sorted, read at the first need */
	size_t n_trie;
	int trie_read;
	long grows;    /* entries the maps gain (new ones less deleted ones) */
	size_t needed; /* entries the maps hold after it */
};

/* Read the trie's keys into @p (its lookup answers a key with a shorter prefix). */
static int read_trie(const struct sluice_maps *m, struct plan *p)
{
	int fd = m->fd[SLUICE_MAP_BAN];
	size_t cap = 0;
	int err = 0;

	p->trie_read = 1;
	errno = 0;
	while (!(err = grow((void **)&p->trie, &cap, p->n_trie, sizeof(*p->trie))) &&
	       !bpf_map_get_next_key(fd, p->n_trie ? &p->trie[p->n_trie - 1] : NULL,
				     &p->trie[p->n_trie]))
		p->n_trie++;
	if (err)
		return err;
	if (errno && errno != ENOENT)
		return -errno;
	qsort(p->trie, p->n_trie, sizeof(*p->trie), cmp_key);
	return 0;
}

/* Does a map of @m hold @k itself? Its value into @b. 1, 0, or -errno. */
static int held(const struct sluice_maps *m, struct plan *p, const struct sluice_addr_key *k,
		struct sluice_ban *b)
{
	int host = is_host(k), err;

	if (!host && !p->trie_read && (err = read_trie(m, p)))
		return err;
	if (!host && !bsearch(k, p->trie, p->n_trie, sizeof(*k), cmp_key))
		return 0;
	if (!bpf_map_lookup_elem(m->fd[host ? SLUICE_MAP_BAN_HOST : SLUICE_MAP_BAN], k, b))
		return 1;
	return errno == ENOENT ? 0 : -errno;
}

/* Queue the write of @k with @b, keeping a live entry's count. 0 or -errno. */
static int plan_put(const struct sluice_maps *m, struct plan *p, const struct sluice_addr_key *k,
		    struct sluice_ban *b)
{
	struct sluice_ban old = { 0 };
	int err = held(m, p, k, &old);

	if (err < 0)
		return err;
	if (err)
		b->drops_pkts = old.drops_pkts;
	else
		p->grows++;
	return ops_add(&p->put[is_host(k)], k, b);
}

static int plan_del(const struct sluice_maps *m, struct plan *p, const struct sluice_addr_key *k)
{
	struct sluice_ban old = { 0 };
	int err = held(m, p, k, &old);

	if (err <= 0)
		return err; /* not in the maps (written by hand, or deleted): nothing to do */
	p->grows--;
	return ops_add(&p->del[is_host(k)], k, NULL);
}

/* Deletes first, then writes: a kept entry is in neither. 0, -ENOSPC or -errno. */
static int plan_apply(const struct sluice_maps *m, struct plan *p, __u32 capacity)
{
	__u32 entries = 0;
	int i, err = bans__sync_gate(m) ?: bans__read_gate(m, &entries);

	p->needed = (size_t)((long)entries + p->grows);
	if (!err && p->needed > capacity)
		err = -ENOSPC;
	for (i = 0; !err && i < 2; i++)
		err = apply_ops(m->fd[i ? SLUICE_MAP_BAN_HOST : SLUICE_MAP_BAN], &p->del[i]);
	for (i = 0; !err && i < 2; i++)
		err = apply_ops(m->fd[i ? SLUICE_MAP_BAN_HOST : SLUICE_MAP_BAN], &p->put[i]);
	return err ?: bans__sync_gate(m);
}

static void plan_free(struct plan *p)
{
	int i;

	for (i = 0; i < 2; i++) {
		ops_free(&p->put[i]);
		ops_free(&p->del[i]);
	}
	free(p->trie);
}

/* Queue @k's merged value over @s, or its delete when no list holds it. */
static int plan_key(const struct sluice_maps *m, struct plan *p, const struct banlist_state *s,
		    const struct sluice_addr_key *k)
{
	struct sluice_ban b;

	return banlist_state__value(s, k, &b) ? plan_put(m, p, k, &b) : plan_del(m, p, k);
}

/*
 * The new state: @s without @list's entries, and @keys in @list, key i
 * expiring at @exp[i] (NULL: all at @expires_real). Old entries of @list
 * into *@old (sorted by key).
 */
static int split_state(const struct banlist_state *s, const char *list,
		       const struct sluice_addr_key *keys, const __u64 *exp, size_t n,
		       __u64 expires_real, struct banlist_state *next, struct banlist_state *old)
{
	size_t i;

	memset(next, 0, sizeof(*next));
	memset(old, 0, sizeof(*old));
	next->e = calloc(s->n + n + 1, sizeof(*next->e));
	old->e = calloc(s->n + 1, sizeof(*old->e));
	if (!next->e || !old->e)
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		if (strcmp(s->e[i].list, list) != 0)
			next->e[next->n++] = s->e[i];
		else
			old->e[old->n++] = s->e[i];
	}
	for (i = 0; i < n; i++) {
		struct banlist_entry *e = &next->e[next->n++];

		e->key = keys[i];
		e->expires_real_ns = exp ? exp[i] : expires_real;
		snprintf(e->list, sizeof(e->list), "%s", list);
		snprintf(e->reason, sizeof(e->reason), "%s", list);
	}
	sort_state(next);
	sort_state(old);
	return 0;
}

/* banlist__replace() and banlist__replace_each(): @exp NULL, or one expiry per key. */
static int replace(const struct sluice_maps *m, __u32 capacity, struct banlist_state *s,
		   const char *list, const struct sluice_addr_key *keys, const __u64 *exp, size_t n,
		   __u64 expires_real, struct banlist_change *c)
{
	struct banlist_state next, old;
	struct plan p = { 0 };
	size_t i = 0, j = 0;
	int err;

	banlist_state__settle(s);
	err = split_state(s, list, keys, exp, n, expires_real, &next, &old);

	memset(c, 0, sizeof(*c));
	/* Both sorted by key: a merge walk. */
	while (!err && (i < old.n || j < n)) {
		int d = i == old.n ? 1 : j == n ? -1 : cmp_key(&old.e[i].key, &keys[j]);

		if (d < 0) {
			c->removed++;
			err = plan_key(m, &p, &next, &old.e[i++].key);
		} else if (d > 0) {
			c->added++;
			err = plan_key(m, &p, &next, &keys[j++]);
		} else {
			c->kept++;
			if (old.e[i].expires_real_ns != (exp ? exp[j] : expires_real))
				err = plan_key(m, &p, &next, &keys[j]);
			i++;
			j++;
		}
	}
	if (!err)
		err = plan_apply(m, &p, capacity);
	c->needed = p.needed;
	c->written = p.put[0].n + p.put[1].n;
	c->deleted = p.del[0].n + p.del[1].n;
	plan_free(&p);
	free(old.e);
	if (err) {
		free(next.e);
		return err;
	}
	free(s->e);
	*s = next;
	return 0;
}

int banlist__replace(const struct sluice_maps *m, __u32 capacity, struct banlist_state *s,
		     const char *list, const struct sluice_addr_key *keys, size_t n,
		     __u64 expires_real, struct banlist_change *c)
{
	return replace(m, capacity, s, list, keys, NULL, n, expires_real, c);
}

int banlist__replace_each(const struct sluice_maps *m, __u32 capacity, struct banlist_state *s,
			  const char *list, const struct sluice_addr_key *keys, const __u64 *exp,
			  size_t n, struct banlist_change *c)
{
	return replace(m, capacity, s, list, keys, exp, n, 0, c);
}

int banlist__restore(const struct sluice_maps *m, __u32 capacity, const struct banlist_state *s,
		     size_t *n)
{
	struct plan p = { 0 };
	size_t i;
	int err = 0;

	for (i = 0; !err && i < s->n; i++)
		if (!i || cmp_key(&s->e[i - 1].key, &s->e[i].key))
			err = plan_key(m, &p, s, &s->e[i].key);
	if (!err)
		err = plan_apply(m, &p, capacity);
	*n = p.put[0].n + p.put[1].n;
	plan_free(&p);
	return err;
}

int banlist__restore_iface(const struct sluice_maps *m, const char *pin_root, const char *state_dir,
			   const char *iface)
{
	char path[PATH_MAX], err_text[DIAG_MSG_LEN + PATH_MAX];
	char esc[ESCAPE_LOGFMT_LEN(DIAG_MSG_LEN + PATH_MAX)];
	struct banlist_state s = { 0 };
	size_t expired = 0, written = 0;
	__u32 capacity = 0;
	int lock = bans__lock(pin_root), err;

	if (lock < 0)
		return lock;
	err = banlist_state_path(path, state_dir, iface);
	if (!err)
		err = banlist_state__load(&s, path, err_text, sizeof(err_text));
	if (err && err != -EINVAL)
		snprintf(err_text, sizeof(err_text), "%s: %s", path, strerror(-err));
	if (!err) {
		expired = banlist_state__prune(&s, clock_ns(CLOCK_REALTIME));
		err = bans__prune(m, mono_ns()) ?: bans__capacity(m, &capacity);
		if (!err)
			err = banlist__restore(m, capacity, &s, &written);
		if (!err && expired)
			err = banlist_state__save(&s, path);
		if (err)
			snprintf(err_text, sizeof(err_text), "%s", strerror(-err));
	}
	bans__unlock(lock);
	if (err)
		log_event(LOG_WARN, "bans_restore_failed", "iface=%s err=%s", iface,
			  escape_logfmt_text(esc, sizeof(esc), err_text));
	else
		log_event(LOG_INFO, "bans_restore", "iface=%s entries=%zu expired=%zu written=%zu",
			  iface, s.n, expired, written);
	banlist_state__free(&s);
	return err;
}

int banlist_counts__read(const struct sluice_maps *m, struct banlist_counts *c)
{
	__u32 zero = 0;

	c->stale = 0;
	if (bpf_map_lookup_elem(m->fd[SLUICE_MAP_BAN_GATE], &zero, &c->gate))
		return -errno;
	return bans__capacity(m, &c->capacity);
}

int banlist_counts__write(const struct sluice_maps *m, struct banlist_counts *c)
{
	int err;

	if (!c->stale)
		return 0;
	err = bans__write_gate(m, &c->gate);
	if (!err)
		c->stale = 0;
	return err;
}

/*
 * Write @b as @k's entry of map @fd: a new one first (one call); a held one
 * keeps its count. 1 when the entry is new, 0 when it was held, or -errno.
 */
static int put_one(int fd, const struct sluice_addr_key *k, struct sluice_ban *b)
{
	struct sluice_ban old;

	if (!bpf_map_update_elem(fd, k, b, BPF_NOEXIST))
		return 1;
	if (errno != EEXIST)
		return -errno;
	/* Held: the trie's lookup of a held key finds the key itself, the longest match. */
	if (!bpf_map_lookup_elem(fd, k, &old))
		b->drops_pkts = old.drops_pkts;
	return bpf_map_update_elem(fd, k, b, BPF_ANY) ? -errno : 0;
}

int banlist__set_one(const struct sluice_maps *m, struct banlist_counts *c, struct banlist_state *s,
		     const char *list, const struct sluice_addr_key *k, __u64 expires_real,
		     const char *reason)
{
	int host = is_host(k), fd = m->fd[host ? SLUICE_MAP_BAN_HOST : SLUICE_MAP_BAN];
	__u32 *count = host ? &c->gate.hosts : &c->gate.prefixes, was = *count;
	struct sluice_ban b;
	struct plan p = { 0 };
	int err = 0, rewritten = 0;

	/* A prefix new to the maps on a full table: refused before anything changes. */
	if (list && c->gate.hosts + c->gate.prefixes >= c->capacity &&
	    !banlist_state__value(s, k, &b))
		err = held(m, &p, k, &b) ?: -ENOSPC;
	plan_free(&p);
	if (err < 0)
		return err;
	err = banlist_state__set(s, list, k, expires_real, reason);
	if (err)
		return err;
	if (banlist_state__value(s, k, &b)) {
		err = put_one(fd, k, &b);
		if (err < 0)
			return err;
		*count += (__u32)err;
		rewritten = !err;
		err = 0;
	} else if (!bpf_map_delete_elem(fd, k)) {
		(*count)--;
		rewritten = 1;
	} else if (errno != ENOENT) { /* ENOENT: not in the maps (deleted by hand) */
		return -errno;
	}
	c->stale |= *count != was;
	/* The program must see a map that gains its first entry before the answer. */
	if (!was != !*count)
		err = banlist_counts__write(m, c);
	/* Nor may a drop it cached under a ban that went or changed outlive the answer. */
	else if (rewritten)
		err = bans__new_epoch(m);
	return err;
}
