// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Map I/O. Errors are returned as -errno and reported by the caller, which
 * knows the interface and the command.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sluice/events.h"
#include "sluice/gcra.h"
#include "base/clock.h"
#include "kernel/maps.h"

#define KEY_BATCH 4096 /* state entries read per syscall */

void maps__init(struct sluice_maps *m)
{
	int i;

	for (i = 0; i < SLUICE_MAP_MAX; i++)
		m->fd[i] = -1;
}

int pin_path(char *buf, const char *dir, const char *name)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

int maps__open_pinned(struct sluice_maps *m, const char *pin_dir)
{
	char path[PATH_MAX];
	struct sluice_ctl ctl;
	__u32 zero = 0;
	int fd, n = SLUICE_MAP_MAX;

	/* The set's own ABI says which maps it pinned; unreadable, all of them. */
	fd = pin_path(path, pin_dir, sluice_map_names[SLUICE_MAP_CTL]) ? -1 : bpf_obj_get(path);
	if (fd >= 0 && !bpf_map_lookup_elem(fd, &zero, &ctl) && ctl.abi_version)
		n = sluice_maps_of_abi(ctl.abi_version);
	if (fd >= 0)
		close(fd);
	return maps__open_pinned_n(m, pin_dir, n);
}

int maps__open_pinned_n(struct sluice_maps *m, const char *pin_dir, int n)
{
	char path[PATH_MAX];
	int i, err;

	maps__init(m);
	errno = 0;
	for (i = 0; i < n && i < SLUICE_MAP_MAX; i++) {
		m->fd[i] = pin_path(path, pin_dir, sluice_map_names[i]) ? -1 : bpf_obj_get(path);
		if (m->fd[i] < 0) {
			err = errno ? -errno : -ENAMETOOLONG;
			maps__close(m);
			return err;
		}
	}
	return 0;
}

void maps__close(struct sluice_maps *m)
{
	int i;

	for (i = 0; i < SLUICE_MAP_MAX; i++) {
		if (m->fd[i] >= 0)
			close(m->fd[i]);
		m->fd[i] = -1;
	}
}

int maps__read_ctl(const struct sluice_maps *m, struct sluice_ctl *ctl)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(m->fd[SLUICE_MAP_CTL], &zero, ctl) ? -errno : 0;
}

int maps__write_ctl(const struct sluice_maps *m, const struct sluice_ctl *ctl)
{
	__u32 zero = 0;

	return bpf_map_update_elem(m->fd[SLUICE_MAP_CTL], &zero, ctl, BPF_ANY) ? -errno : 0;
}

int maps__write_fail(const struct sluice_maps *m, __u32 id, const struct sluice_fail_state *st)
{
	return bpf_map_update_elem(m->fd[SLUICE_MAP_FAIL], &id, st, BPF_ANY) ? -errno : 0;
}

/* @n values into the array @fd from index @first on, in one call. */
static int write_array(int fd, __u32 first, const void *vals, __u32 n)
{
	__u32 *keys = calloc(n ? n : 1, sizeof(*keys)), i;
	int err;

	if (!keys)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		keys[i] = first + i;
	err = bpf_map_update_batch(fd, keys, vals, &n, NULL) ? -errno : 0;
	free(keys);
	return err;
}

/* Every policy slot of @gen: the compiled ones at their ids, zero for the rest. */
static int write_policies(const struct sluice_maps *m, const struct compiled *c)
{
	struct sluice_policy *vals = calloc(SLUICE_MAX_POLICIES, sizeof(*vals));
	__u32 i;
	int err;

	if (!vals)
		return -ENOMEM;
	for (i = 0; i < c->n_policies; i++)
		if (c->policies[i].name[0] && c->policies[i].id < SLUICE_MAX_POLICIES)
			vals[c->policies[i].id] = c->policies[i];
	err = write_array(m->fd[SLUICE_MAP_POLICY], c->gen * SLUICE_MAX_POLICIES, vals,
			  SLUICE_MAX_POLICIES);
	free(vals);
	return err;
}

/* Every sample of @gen (sluice_ev_rate): the compiled ones at their ids, zero for the rest. */
static int write_samples(const struct sluice_maps *m, const struct compiled *c)
{
	__u32 *vals = calloc(SLUICE_EVENT_SLOTS, sizeof(*vals)), i;
	int err;

	if (!vals)
		return -ENOMEM;
	for (i = 0; c->samples && i < c->n_policies; i++)
		if (c->policies[i].name[0] && c->policies[i].id < SLUICE_MAX_POLICIES)
			vals[c->policies[i].id] = c->samples[i];
	vals[SLUICE_EVENT_UNOWNED] = c->sample_unowned;
	err = write_array(m->fd[SLUICE_MAP_EVENT_RATE], c->gen * SLUICE_EVENT_SLOTS, vals,
			  SLUICE_EVENT_SLOTS);
	free(vals);
	return err;
}

/* Remove the entries of generation @gen from an LPM trie keyed by (prefixlen, gen, ...). */
static int clear_gen(int fd, size_t key_size, __u32 gen)
{
	__u8 key[sizeof(struct sluice_addr_key)], next[sizeof(struct sluice_addr_key)];
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, key_size);
		/* The generation comes right after the 32-bit prefixlen. */
		if (key[sizeof(__u32)] == gen) {
			if (bpf_map_delete_elem(fd, key))
				return -errno;
			prev = NULL; /* the walk restarts after a delete */
			continue;
		}
		prev = key;
	}
	return errno == ENOENT ? 0 : -errno;
}

/*
 * @classes into generation @gen's half of sluice_class, through a mapping:
 * 2^17 updates one by one cost ~20 ms per reload (bench/agent.sh), a copy
 * a fraction of one. The program reads only the other half meanwhile.
 */
static int write_classes(int fd, __u32 gen, const __u32 *classes)
{
	size_t len = SLUICE_POLICY_GENS * SLUICE_SVCS * sizeof(__u64), i;
	__u64 *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), *half;

	if (map == MAP_FAILED)
		return -errno;
	half = map + (size_t)gen * SLUICE_SVCS;
	for (i = 0; i < SLUICE_SVCS; i++)
		half[i] = classes[i];
	return munmap(map, len) ? -errno : 0;
}

/* The classifier into generation c->gen's half of sluice_match and sluice_class. */
static int write_match(const struct sluice_maps *m, const struct compiled *c)
{
	__u32 gen = c->gen % SLUICE_POLICY_GENS;
	int err;

	if (!c->classes || !c->slots)
		return -EINVAL; /* not through compile_assign_ids() */
	err = write_array(m->fd[SLUICE_MAP_MATCH], gen * SLUICE_MATCH_SLOTS, c->slots,
			  (__u32)c->n_slots);
	return err ? err : write_classes(m->fd[SLUICE_MAP_CLASS], gen, c->classes);
}

static int write_addrs(int fd, __u32 gen, const struct addr_entry *e, size_t n)
{
	int err = clear_gen(fd, sizeof(e->key), gen);
	size_t i;

	for (i = 0; !err && i < n; i++)
		if (bpf_map_update_elem(fd, &e[i].key, &e[i].val, BPF_ANY))
			err = -errno;
	return err;
}

int maps__apply(const struct sluice_maps *m, const struct compiled *c, __u32 next_id)
{
	struct sluice_ctl ctl;
	int err;

	err = maps__read_ctl(m, &ctl);
	if (!err)
		err = write_policies(m, c);
	if (!err)
		err = write_samples(m, c);
	if (!err)
		err = write_match(m, c);
	if (!err)
		err = write_addrs(m->fd[SLUICE_MAP_SRC], c->gen, c->src, c->n_src);
	if (!err)
		err = write_addrs(m->fd[SLUICE_MAP_DST], c->gen, c->dst, c->n_dst);
	if (err)
		return err;
	ctl.abi_version = SLUICE_ABI_VERSION;
	ctl.gen_flags[c->gen % SLUICE_POLICY_GENS] = c->gen_flags;
	ctl.active_gen = c->gen;
	ctl.next_id = next_id;
	ctl.generation++;
	return maps__write_ctl(m, &ctl);
}

int maps__read_event_stats(const struct sluice_maps *m, struct sluice_event_stats *sum)
{
	__u64 words[sizeof(*sum) / sizeof(__u64)];
	int err;

	if (m->fd[SLUICE_MAP_EVENT_STATS] < 0)
		return -ENOENT;
	err = maps__read_percpu(m->fd[SLUICE_MAP_EVENT_STATS], 0, words,
				sizeof(words) / sizeof(words[0]));
	if (err)
		return err;
	*sum = (struct sluice_event_stats){ .sent = words[0],
					    .lost = words[1],
					    .capped = words[2] };
	return 0;
}

int maps__read_percpu(int fd, __u32 key, __u64 *sum, size_t n_words)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;
	size_t cpu, w;

	if (ncpu < 0)
		return ncpu;
	vals = calloc((size_t)ncpu * n_words, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, vals)) {
		free(vals);
		return -errno;
	}
	memset(sum, 0, n_words * sizeof(*sum));
	for (cpu = 0; cpu < (size_t)ncpu; cpu++)
		for (w = 0; w < n_words; w++)
			sum[w] += vals[cpu * n_words + w];
	free(vals);
	return 0;
}

int maps__walk_keys(const struct sluice_maps *m,
		    int (*fn)(const struct sluice_key *key, const struct sluice_state *st,
			      void *arg),
		    void *arg)
{
	struct sluice_key *keys = calloc(KEY_BATCH, sizeof(*keys));
	struct sluice_state *vals = calloc(KEY_BATCH, sizeof(*vals));
	int err = keys && vals ? 0 : -ENOMEM, done = 0;
	__u32 batch, count, i;
	void *in = NULL;

	while (!err && !done) {
		count = KEY_BATCH;
		if (bpf_map_lookup_batch(m->fd[SLUICE_MAP_STATE], in, &batch, keys, vals, &count,
					 NULL)) {
			if (errno != ENOENT)
				err = -errno;
			done = 1; /* ENOENT: this was the last batch */
		}
		for (i = 0; !err && i < count; i++)
			err = fn(&keys[i], &vals[i], arg);
		in = &batch;
	}
	free(keys);
	free(vals);
	return err;
}

/*
 * The kernel's ENOTSUPP (include/linux/errno.h), which it is not meant to
 * return to user space but does for a batch operation a map type lacks
 * (an LPM trie).
 */
#define KERNEL_ENOTSUPP 524
#define COPY_BATCH	1024 /* entries per batch of a map copy */

/* The bytes one entry's value takes in a syscall: per-CPU values are 8-aligned, one per CPU. */
static long value_bytes(const struct bpf_map_info *info)
{
	int ncpu;

	switch (info->type) {
	case BPF_MAP_TYPE_PERCPU_ARRAY:
	case BPF_MAP_TYPE_PERCPU_HASH:
	case BPF_MAP_TYPE_LRU_PERCPU_HASH:
		ncpu = libbpf_num_possible_cpus();
		return ncpu < 0 ? ncpu : (long)ncpu * (((long)info->value_size + 7) & ~7L);
	default: return info->value_size;
	}
}

/* Copy @from into @to one entry at a time: for maps without batch operations. */
static int copy_by_key(int from, int to, void *key, void *next, void *val, __u32 key_size)
{
	void *prev = NULL;

	while (!bpf_map_get_next_key(from, prev, next)) {
		memcpy(key, next, key_size);
		prev = key;
		if (bpf_map_lookup_elem(from, key, val)) {
			if (errno == ENOENT)
				continue; /* deleted since: an LRU eviction */
			return -errno;
		}
		if (bpf_map_update_elem(to, key, val, BPF_ANY))
			return -errno;
	}
	return errno == ENOENT ? 0 : -errno;
}

/* Copy @from into @to in batches; -KERNEL_ENOTSUPP when the map type has none. */
static int copy_batched(int from, int to, void *keys, void *vals)
{
	__u32 count, token;
	void *in = NULL;
	int err = 0, done = 0;

	while (!err && !done) {
		count = COPY_BATCH;
		if (bpf_map_lookup_batch(from, in, &token, keys, vals, &count, NULL)) {
			if (errno != ENOENT)
				return -errno;
			done = 1; /* ENOENT: this was the last batch */
		}
		if (count && bpf_map_update_batch(to, keys, vals, &count, NULL))
			err = -errno;
		in = &token;
	}
	return err;
}

/* Copy every entry of map @from into @to, whose type and sizes are the same. */
static int copy_map(int from, int to, const struct bpf_map_info *info)
{
	long vsize = value_bytes(info);
	void *keys = NULL, *vals = NULL, *next = NULL;
	int err;

	if (vsize < 0)
		return (int)vsize;
	keys = calloc(COPY_BATCH, info->key_size);
	vals = calloc(COPY_BATCH, (size_t)vsize);
	next = calloc(1, info->key_size);
	err = keys && vals && next ? copy_batched(from, to, keys, vals) : -ENOMEM;
	if (err == -KERNEL_ENOTSUPP || err == -EOPNOTSUPP)
		err = copy_by_key(from, to, keys, next, vals, info->key_size);
	free(keys);
	free(vals);
	free(next);
	return err;
}

/* The map info of @fd, or -errno. */
static int map_info(int fd, struct bpf_map_info *info)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	return bpf_obj_get_info_by_fd(fd, info, &len) ? -errno : 0;
}

int maps__copy(const struct sluice_maps *from, const struct sluice_maps *to, int *bad)
{
	struct bpf_map_info fi[SLUICE_MAP_MAX], ti;
	int i, err, skip[SLUICE_MAP_MAX] = { 0 };

	for (i = 0; i < SLUICE_MAP_MAX; i++) {
		*bad = i;
		/* A ring buffer has no entries to copy: events not read yet are dropped. */
		skip[i] = from->fd[i] < 0 || i == SLUICE_MAP_EVENTS;
		if (skip[i])
			continue;
		err = map_info(from->fd[i], &fi[i]);
		if (!err)
			err = map_info(to->fd[i], &ti);
		if (err)
			return err;
		if (fi[i].type == ti.type && fi[i].key_size == ti.key_size &&
		    fi[i].value_size == ti.value_size &&
		    (i == SLUICE_MAP_STATE || i == SLUICE_MAP_BAN || i == SLUICE_MAP_BAN_HOST ||
		     fi[i].max_entries == ti.max_entries))
			continue;
		/*
		 * The interface-wide totals gain a counter now and then: they
		 * restart. The ban gate gained its epoch: the loader recounts it.
		 * The leases gained a share: the agent writes them at its first
		 * sync, and creates the spend counters with them.
		 */
		if (i != SLUICE_MAP_TOTALS && i != SLUICE_MAP_BAN_GATE && i != SLUICE_MAP_LEASE &&
		    i != SLUICE_MAP_SPEND)
			return -EPROTO;
		skip[i] = 1;
	}
	for (i = 0; i < SLUICE_MAP_MAX; i++) {
		*bad = i;
		if (skip[i])
			continue;
		err = copy_map(from->fd[i], to->fd[i], &fi[i]);
		if (err)
			return err;
	}
	return 0;
}

struct merge {
	const struct sluice_maps *to;
	__u64 now; /* ticks */
	int idle;  /* no program writes @to: overwrite, in batches */
	__u32 n;   /* entries waiting in keys, vals */
	struct sluice_key keys[COPY_BATCH];
	struct sluice_state vals[COPY_BATCH];
	struct idmap active;		/* ids of @to's active policies */
	__u64 tol[SLUICE_MAX_POLICIES]; /* by id: their tolerance */
};

static int merge_flush(struct merge *mg)
{
	__u32 n = mg->n;

	mg->n = 0;
	if (n && bpf_map_update_batch(mg->to->fd[SLUICE_MAP_STATE], mg->keys, mg->vals, &n, NULL))
		return -errno;
	return 0;
}

/*
 * Write @st into @arg's sluice_state where it is ahead of what is there, no
 * further ahead than the policy's tolerance there (as maps__carry_keys()).
 * While no program writes there, what is there is an older copy of @st or
 * was lowered by the policy's apply: @st, capped, is always ahead.
 */
static int merge_key(const struct sluice_key *key, const struct sluice_state *st, void *arg)
{
	struct merge *mg = arg;
	__u32 id = key->policy_id;
	struct sluice_state want, have;
	__u64 ahead;

	if (!idmap_has(&mg->active, id))
		return 0; /* no active policy there charges it */
	ahead = sluice_gcra_ahead(st->tat, mg->now, mg->tol[id]);
	if (!ahead)
		return 0; /* a full key: the same as none */
	want.tat = mg->now + ahead;
	if (mg->idle) {
		mg->keys[mg->n] = *key;
		mg->vals[mg->n++] = want;
		return mg->n == COPY_BATCH ? merge_flush(mg) : 0;
	}
	if (!bpf_map_lookup_elem(mg->to->fd[SLUICE_MAP_STATE], key, &have) &&
	    (__s64)(want.tat - have.tat) <= 0)
		return 0;
	if (bpf_map_update_elem(mg->to->fd[SLUICE_MAP_STATE], key, &want, BPF_ANY))
		return -errno;
	return 0;
}

int maps__merge_state(const struct sluice_maps *from, const struct sluice_maps *to, __u64 now,
		      int idle)
{
	struct sluice_policy *active = calloc(SLUICE_MAX_POLICIES, sizeof(*active));
	struct merge *mg = calloc(1, sizeof(*mg));
	size_t i, n = 0;
	int err = active && mg ? maps__read_active(to, active, &n) : -ENOMEM;

	for (i = 0; !err && i < n; i++) {
		idmap_add(&mg->active, active[i].id);
		mg->tol[active[i].id % SLUICE_MAX_POLICIES] = active[i].limit.tolerance;
	}
	if (!err) {
		mg->to = to;
		mg->now = now;
		mg->idle = idle;
		err = maps__walk_keys(from, merge_key, mg);
	}
	if (!err)
		err = merge_flush(mg);
	free(active);
	free(mg);
	return err;
}

struct carry {
	const struct sluice_maps *m;
	const struct idmap *changed;
	__u64 now;
	__u64 tol[SLUICE_MAX_POLICIES]; /* by id: the new tolerance */
	size_t n;
};

static int carry_key(const struct sluice_key *key, const struct sluice_state *st, void *arg)
{
	struct carry *c = arg;
	__u64 tol = c->tol[key->policy_id % SLUICE_MAX_POLICIES];
	struct sluice_state to = { .tat = c->now + tol };

	if (!idmap_has(c->changed, key->policy_id) || sluice_gcra_ahead(st->tat, c->now, tol) < tol)
		return 0;
	if (bpf_map_update_elem(c->m->fd[SLUICE_MAP_STATE], key, &to, BPF_EXIST) && errno != ENOENT)
		return -errno; /* ENOENT: evicted meanwhile */
	c->n++;
	return 0;
}

int maps__carry_keys(const struct sluice_maps *m, const struct compiled *c,
		     const struct idmap *changed, __u64 now, size_t *n)
{
	struct carry *cr;
	size_t i;
	int err;

	*n = 0;
	if (idmap_empty(changed))
		return 0; /* no limit changed: no walk over every key */
	cr = calloc(1, sizeof(*cr));
	if (!cr)
		return -ENOMEM;
	cr->m = m;
	cr->changed = changed;
	cr->now = now;
	for (i = 0; i < c->n_policies; i++)
		if (c->policies[i].name[0])
			cr->tol[c->policies[i].id % SLUICE_MAX_POLICIES] =
				c->policies[i].limit.tolerance;
	err = maps__walk_keys(m, carry_key, cr);
	*n = cr->n;
	free(cr);
	return err;
}

static int count_key(const struct sluice_key *key, const struct sluice_state *st, void *arg)
{
	struct key_counts *c = arg;

	(void)st;
	c->total++;
	if (key->policy_id < SLUICE_MAX_POLICIES)
		c->per_id[key->policy_id]++;
	return 0;
}

int maps__count_keys(const struct sluice_maps *m, struct key_counts *kc)
{
	memset(kc, 0, sizeof(*kc));
	return maps__walk_keys(m, count_key, kc);
}

/* Every slot of sluice_policy in one syscall: @out has room for all of them. */
static int read_policies(const struct sluice_maps *m, struct sluice_policy *out)
{
	__u32 n = SLUICE_POLICY_GENS * SLUICE_MAX_POLICIES, batch;
	__u32 *keys = calloc(n, sizeof(*keys));
	int err;

	if (!keys)
		return -ENOMEM;
	err = bpf_map_lookup_batch(m->fd[SLUICE_MAP_POLICY], NULL, &batch, keys, out, &n, NULL);
	err = err && errno != ENOENT ? -errno : 0;
	free(keys);
	return err;
}

/* A policy's summed counters, fail state and key count into @ps. */
static int read_policy_status(const struct sluice_maps *m, const __u64 *per_id,
			      struct policy_status *ps)
{
	__u32 id = ps->policy.id;

	ps->keys = per_id[id];
	if (bpf_map_lookup_elem(m->fd[SLUICE_MAP_FAIL], &id, &ps->fail))
		return -errno;
	return maps__read_percpu(m->fd[SLUICE_MAP_STATS], id, (__u64 *)&ps->stats,
				 sizeof(ps->stats) / sizeof(__u64));
}

int maps__read_status(const struct sluice_maps *m, struct status *st, const struct key_counts *kc)
{
	struct key_counts *counted = kc ? NULL : calloc(1, sizeof(*counted));
	struct sluice_policy *active = calloc(SLUICE_MAX_POLICIES, sizeof(*active));
	struct bpf_map_info info = {};
	__u32 zero = 0, info_len = sizeof(info);
	struct sluice_ban_gate gate = { 0 };
	size_t i, n = 0;
	int err;

	memset(st, 0, sizeof(*st));
	st->policies = calloc(SLUICE_MAX_POLICIES, sizeof(*st->policies));
	err = (kc || counted) && active && st->policies ? maps__read_ctl(m, &st->ctl) : -ENOMEM;
	if (!err)
		err = maps__read_active(m, active, &n);
	if (!err)
		err = maps__read_percpu(m->fd[SLUICE_MAP_TOTALS], zero, (__u64 *)&st->totals,
					sizeof(st->totals) / sizeof(__u64));
	if (!err && counted)
		err = maps__count_keys(m, counted);
	if (!err && counted)
		kc = counted;
	if (!err)
		st->keys = kc->total;
	if (!err)
		err = bpf_obj_get_info_by_fd(m->fd[SLUICE_MAP_STATE], &info, &info_len) ? -errno
											: 0;
	st->keys_max = info.max_entries;
	if (!err && m->fd[SLUICE_MAP_BAN_GATE] >= 0) /* a set of an ABI before bans has none */
		err = bpf_map_lookup_elem(m->fd[SLUICE_MAP_BAN_GATE], &zero, &gate) ? -errno : 0;
	st->bans = gate.hosts + gate.prefixes;
	if (!err && m->fd[SLUICE_MAP_EVENT_STATS] >= 0) /* a set of an ABI before events has none */
		err = maps__read_event_stats(m, &st->events);
	for (i = 0; !err && i < n; i++) {
		st->policies[i].policy = active[i];
		err = read_policy_status(m, kc->per_id, &st->policies[i]);
	}
	st->n_policies = n;
	free(counted);
	free(active);
	if (err)
		status__free(st);
	return err;
}

void status__free(struct status *st)
{
	if (!st)
		return;
	free(st->policies);
	st->policies = NULL;
	st->n_policies = 0;
}

int maps__read_active(const struct sluice_maps *m, struct sluice_policy *out, size_t *n)
{
	struct sluice_policy *all = calloc(SLUICE_POLICY_GENS * SLUICE_MAX_POLICIES, sizeof(*all));
	struct sluice_ctl ctl;
	size_t id;
	int err = all ? maps__read_ctl(m, &ctl) : -ENOMEM;

	*n = 0;
	if (!err)
		err = read_policies(m, all);
	for (id = 0; !err && ctl.generation && id < SLUICE_MAX_POLICIES; id++) {
		struct sluice_policy *p =
			&all[(ctl.active_gen % SLUICE_POLICY_GENS) * SLUICE_MAX_POLICIES + id];

		if (p->name[0])
			out[(*n)++] = *p;
	}
	free(all);
	return err;
}

struct purge {
	const struct sluice_maps *m;
	const struct idmap *fresh;
};

static int purge_key(const struct sluice_key *key, const struct sluice_state *st, void *arg)
{
	const struct purge *p = arg;

	(void)st;
	if (idmap_has(p->fresh, key->policy_id) &&
	    bpf_map_delete_elem(p->m->fd[SLUICE_MAP_STATE], key) && errno != ENOENT)
		return -errno;
	return 0;
}

/* Delete every key of sluice_state whose policy id is in @fresh. */
static int purge_keys(const struct sluice_maps *m, const struct idmap *fresh)
{
	struct purge p = { m, fresh };

	return maps__walk_keys(m, purge_key, &p);
}

int maps__reset_ids(const struct sluice_maps *m, const struct idmap *fresh)
{
	int ncpu = libbpf_num_possible_cpus();
	struct sluice_fail_state none = { 0 };
	struct sluice_pstats *zero_stats;
	__u32 id;
	int err;

	if (ncpu < 0)
		return ncpu;
	zero_stats = calloc(ncpu, sizeof(*zero_stats));
	if (!zero_stats)
		return -ENOMEM;
	err = purge_keys(m, fresh);
	for (id = 0; !err && id < SLUICE_MAX_POLICIES; id++) {
		if (!idmap_has(fresh, id))
			continue;
		if (bpf_map_update_elem(m->fd[SLUICE_MAP_STATS], &id, zero_stats, BPF_ANY) ||
		    bpf_map_update_elem(m->fd[SLUICE_MAP_FAIL], &id, &none, BPF_ANY))
			err = -errno;
	}
	free(zero_stats);
	return err;
}
