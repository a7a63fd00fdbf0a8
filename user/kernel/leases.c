// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The lease maps, for the budget planner (kernel/leases.h). Batched reads
 * (BPF_MAP_LOOKUP_BATCH, 5.6): one syscall per LEASE_BATCH entries, not
 * three per key.
 */
#include <errno.h>
#include <stdlib.h>

#include <bpf/bpf.h>

#include "kernel/leases.h"

#define LEASE_BATCH 4096 /* map entries per bpf_map_lookup_batch() */

int lease_maps__create(const struct lease_maps *m, const struct sluice_key *k, __u64 want,
		       __u64 expires)
{
	struct sluice_spend s = { 0 };
	struct sluice_lease l = { 0 };

	if (!bpf_map_lookup_elem(m->lease, k, &l))
		return 0;
	if (errno != ENOENT)
		return -errno;
	if (bpf_map_update_elem(m->spend, k, &s, BPF_NOEXIST) && errno != EEXIST)
		return -errno;
	if (bpf_map_lookup_elem(m->spend, k, &s))
		return -errno;
	l.granted = l.reported = s.spent;
	l.seen = s.spent + s.denied;
	l.want = want;
	l.key = *k;
	l.expires = expires;
	if (expires) /* live at once, with nothing to spend: held, nothing in the store */
		l.flags = SLUICE_LEASE_F_FROZEN | SLUICE_LEASE_F_RELEASED;
	if (bpf_map_update_elem(m->lease, k, &l, BPF_NOEXIST) && errno != EEXIST)
		return -errno;
	return 0;
}

/* -errno of a delete, or 0 when the entry was gone already. */
static int deleted(int ret)
{
	return ret && errno != ENOENT ? -errno : 0;
}

int lease_maps__delete(const struct lease_maps *m, const struct sluice_key *k)
{
	int err = deleted(bpf_map_delete_elem(m->lease, k));
	int err_spend = deleted(bpf_map_delete_elem(m->spend, k));

	return err ? err : err_spend;
}

int lease_maps__write(const struct lease_maps *m, const struct sluice_key *k,
		      const struct sluice_lease *l)
{
	if (bpf_map_update_elem(m->lease, k, l, BPF_EXIST) && errno != ENOENT)
		return -errno;
	return 0;
}

int lease_maps__read_spend(const struct lease_maps *m, const struct sluice_key *k,
			   struct sluice_spend *s)
{
	if (bpf_map_lookup_elem(m->spend, k, s))
		return -errno;
	return 0;
}

/*
 * Every entry of hash map @fd, deleting them as it reads when @drain: keys
 * into *@keys, values of @vsize bytes into *@vals, *@n of them.
 */
static int read_map(int fd, size_t vsize, int drain, struct sluice_key **keys, void **vals,
		    size_t *n)
{
	int (*batch_fn)(int, void *, void *, void *, void *, __u32 *,
			const struct bpf_map_batch_opts *) =
		drain ? bpf_map_lookup_and_delete_batch : bpf_map_lookup_batch;
	size_t cap = 0;
	__u32 batch, count;
	void *in = NULL, *v;
	int done = 0;

	*n = 0;
	while (!done) {
		if (*n + LEASE_BATCH > cap) {
			cap = *n + LEASE_BATCH;
			v = realloc(*keys, cap * sizeof(**keys));
			if (v)
				*keys = v;
			v = v ? realloc(*vals, cap * vsize) : NULL;
			if (!v)
				return -ENOMEM;
			*vals = v;
		}
		count = LEASE_BATCH;
		if (batch_fn(fd, in, &batch, *keys + *n, (char *)*vals + *n * vsize, &count,
			     NULL)) {
			if (errno != ENOENT)
				return -errno;
			done = 1; /* ENOENT: that was the last batch */
		}
		*n += count;
		in = &batch;
	}
	return 0;
}

int lease_maps__read_leases(const struct lease_maps *m, struct sluice_key **keys,
			    struct sluice_lease **vals, size_t *n)
{
	return read_map(m->lease, sizeof(**vals), 0, keys, (void **)vals, n);
}

int lease_maps__read_spends(const struct lease_maps *m, struct sluice_key **keys,
			    struct sluice_spend **vals, size_t *n)
{
	return read_map(m->spend, sizeof(**vals), 0, keys, (void **)vals, n);
}

int lease_maps__take_hot(const struct lease_maps *m, struct sluice_key **keys,
			 struct sluice_hot **vals, size_t *n)
{
	return read_map(m->hot, sizeof(**vals), 1, keys, (void **)vals, n);
}
