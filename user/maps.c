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
#include <unistd.h>

#include "maps.h"

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
	int i, err;

	maps__init(m);
	errno = 0;
	for (i = 0; i < SLUICE_MAP_MAX; i++) {
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

int maps__next_gen(const struct sluice_maps *m, __u32 *gen)
{
	struct sluice_ctl ctl;
	int err = maps__read_ctl(m, &ctl);

	if (err)
		return err;
	*gen = ctl.generation ? (ctl.active_gen + 1) % SLUICE_POLICY_GENS : 0;
	return 0;
}

/* Every policy slot of @gen: the compiled ones, zero for the rest. */
static int write_policies(const struct sluice_maps *m, const struct compiled *c)
{
	struct sluice_policy *vals = calloc(SLUICE_MAX_POLICIES, sizeof(*vals));
	__u32 *keys = calloc(SLUICE_MAX_POLICIES, sizeof(*keys));
	__u32 i, n = SLUICE_MAX_POLICIES;
	int err = -ENOMEM;

	if (!vals || !keys)
		goto out;
	for (i = 0; i < SLUICE_MAX_POLICIES; i++)
		keys[i] = c->gen * SLUICE_MAX_POLICIES + i;
	memcpy(vals, c->policies, c->n_policies * sizeof(*vals));
	err = bpf_map_update_batch(m->fd[SLUICE_MAP_POLICY], keys, vals, &n, NULL) ? -errno : 0;
out:
	free(vals);
	free(keys);
	return err;
}

/* Remove the classifier entries of @gen; the other generation is untouched. */
static int clear_match(const struct sluice_maps *m, __u32 gen)
{
	int fd = m->fd[SLUICE_MAP_MATCH];
	struct sluice_match_key key, next;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		if (key.gen == gen) {
			if (bpf_map_delete_elem(fd, &key))
				return -errno;
			prev = NULL; /* the walk restarts after a delete */
			continue;
		}
		prev = &key;
	}
	return errno == ENOENT ? 0 : -errno;
}

int maps__apply(const struct sluice_maps *m, const struct compiled *c)
{
	struct sluice_ctl ctl;
	__u32 zero = 0;
	size_t i;
	int err;

	err = maps__read_ctl(m, &ctl);
	if (!err)
		err = write_policies(m, c);
	if (!err)
		err = clear_match(m, c->gen);
	for (i = 0; !err && i < c->n_match; i++)
		if (bpf_map_update_elem(m->fd[SLUICE_MAP_MATCH], &c->match[i].key, &c->match[i].val,
					BPF_ANY))
			err = -errno;
	if (err)
		return err;
	ctl.abi_version = SLUICE_ABI_VERSION;
	ctl.active_gen = c->gen;
	ctl.generation++;
	return bpf_map_update_elem(m->fd[SLUICE_MAP_CTL], &zero, &ctl, BPF_ANY) ? -errno : 0;
}

/* Sum a per-CPU value of @n_words u64 counters over every possible CPU. */
static int read_percpu(int fd, __u32 key, __u64 *sum, size_t n_words)
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

/* Count tracked keys per policy id into @per_id (SLUICE_MAX_POLICIES entries). */
static int count_keys(const struct sluice_maps *m, __u64 *per_id, __u64 *total)
{
	struct sluice_key *keys = calloc(KEY_BATCH, sizeof(*keys));
	struct sluice_state *vals = calloc(KEY_BATCH, sizeof(*vals));
	__u32 batch, count, i;
	void *in = NULL;
	int err = -ENOMEM, done = 0;

	*total = 0;
	while (keys && vals && !done) {
		count = KEY_BATCH;
		err = bpf_map_lookup_batch(m->fd[SLUICE_MAP_STATE], in, &batch, keys, vals, &count,
					   NULL);
		if (err && errno != ENOENT) {
			err = -errno;
			break;
		}
		done = !!err;
		err = 0;
		for (i = 0; i < count; i++) {
			(*total)++;
			if (keys[i].policy_id < SLUICE_MAX_POLICIES)
				per_id[keys[i].policy_id]++;
		}
		in = &batch;
	}
	free(keys);
	free(vals);
	return err;
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

int maps__read_status(const struct sluice_maps *m, struct status *st)
{
	__u64 *per_id = calloc(SLUICE_MAX_POLICIES, sizeof(*per_id));
	struct sluice_policy *all = calloc(SLUICE_POLICY_GENS * SLUICE_MAX_POLICIES, sizeof(*all));
	struct bpf_map_info info = {};
	__u32 id, zero = 0, info_len = sizeof(info);
	struct policy_status *ps;
	struct sluice_policy *p;
	int err;

	memset(st, 0, sizeof(*st));
	st->policies = calloc(SLUICE_MAX_POLICIES, sizeof(*st->policies));
	err = per_id && all && st->policies ? maps__read_ctl(m, &st->ctl) : -ENOMEM;
	if (!err)
		err = read_policies(m, all);
	if (!err)
		err = read_percpu(m->fd[SLUICE_MAP_TOTALS], zero, (__u64 *)&st->totals,
				  sizeof(st->totals) / sizeof(__u64));
	if (!err)
		err = count_keys(m, per_id, &st->keys);
	if (!err)
		err = bpf_obj_get_info_by_fd(m->fd[SLUICE_MAP_STATE], &info, &info_len) ? -errno : 0;
	st->keys_max = info.max_entries;
	for (id = 0; !err && st->ctl.generation && id < SLUICE_MAX_POLICIES; id++) {
		p = &all[(st->ctl.active_gen % SLUICE_POLICY_GENS) * SLUICE_MAX_POLICIES + id];
		if (!p->name[0])
			continue;
		ps = &st->policies[st->n_policies++];
		ps->policy = *p;
		ps->keys = per_id[id];
		err = read_percpu(m->fd[SLUICE_MAP_STATS], id, (__u64 *)&ps->stats,
				  sizeof(ps->stats) / sizeof(__u64));
	}
	free(per_id);
	free(all);
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
