// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The ban list's map I/O: the trie, its gate and the lock writers hold.
 * Errors are returned as -errno and reported by the command.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/addr.h"
#include "base/clock.h"
#include "kernel/bans.h"

#define KERNEL_ENOTSUPP 524 /* what a map without batch operations answers (maps.c) */

void bans__key(struct sluice_addr_key *k, const __u8 *addr, unsigned int bits)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = SLUICE_ADDR_KEY_BITS(bits);
	k->gen = SLUICE_BAN_GEN;
	addr_mask(addr, bits, k->addr);
}

unsigned int bans__key_bits(const struct sluice_addr_key *k)
{
	return k->prefixlen - SLUICE_ADDR_KEY_BITS(0);
}

/* The map of @k: the hash for a single address, else the trie. */
static int ban_fd(const struct sluice_maps *m, const struct sluice_addr_key *k)
{
	return m->fd[k->prefixlen == SLUICE_ADDR_KEY_BITS(SLUICE_ADDR_BITS) ? SLUICE_MAP_BAN_HOST
									    : SLUICE_MAP_BAN];
}

#define BAN_BATCH 4096 /* entries per lookup batch of the hash */

/*
 * The entries of hash @fd, in batches: appended to @e (NULL: only
 * counted) while *@i < @max. 0, -EOPNOTSUPP when the kernel has no batch
 * lookup for it, or -errno.
 */
static int read_hash(int fd, struct ban_entry *e, size_t *i, size_t max)
{
	struct sluice_addr_key *keys = calloc(BAN_BATCH, sizeof(*keys));
	struct sluice_ban *vals = calloc(BAN_BATCH, sizeof(*vals));
	__u32 batch, count, j;
	int err = keys && vals ? 0 : -ENOMEM, done = 0;
	void *in = NULL;

	while (!err && !done && *i < max) {
		count = BAN_BATCH;
		if (bpf_map_lookup_batch(fd, in, &batch, keys, vals, &count, NULL)) {
			if (errno != ENOENT)
				err = -errno;
			done = 1; /* ENOENT: this was the last batch */
		}
		for (j = 0; !err && j < count && *i < max; j++, (*i)++) {
			if (e) {
				e[*i].key = keys[j];
				e[*i].ban = vals[j];
			}
		}
		in = &batch;
	}
	free(keys);
	free(vals);
	return err == -KERNEL_ENOTSUPP ? -EOPNOTSUPP : err;
}

/*
 * The keys in map @fd into *@n: in batches if @hash (and the kernel has
 * them), else key by key. Only a hash may be batched here: read_hash()'s
 * token is the hash's bucket number, while the batch the kernel gives a
 * trie (generic_map_lookup_batch()) takes a whole key as its token, and a
 * bucket number there reads as a key not in the trie, from which the next
 * batch starts over: past BAN_BATCH prefixes the count never ended.
 * 0 or -errno.
 */
static int count_keys(int fd, int hash, __u32 *n)
{
	struct sluice_addr_key k[2];
	int cur = 0, err = -EOPNOTSUPP;
	size_t i = 0;

	if (hash)
		err = read_hash(fd, NULL, &i, SIZE_MAX);
	*n = (__u32)i;
	if (err != -EOPNOTSUPP && err != -EINVAL)
		return err;
	*n = 0;
	errno = 0;
	while (!bpf_map_get_next_key(fd, *n ? &k[!cur] : NULL, &k[cur])) {
		(*n)++;
		cur = !cur;
	}
	return errno == ENOENT ? 0 : -errno;
}

/* Entries in both maps into *@gate. 0 or -errno. */
static int count_bans(const struct sluice_maps *m, struct sluice_ban_gate *gate)
{
	return count_keys(m->fd[SLUICE_MAP_BAN_HOST], 1, &gate->hosts)
		       ?: count_keys(m->fd[SLUICE_MAP_BAN], 0, &gate->prefixes);
}

int bans__capacity(const struct sluice_maps *m, __u32 *capacity)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(m->fd[SLUICE_MAP_BAN_HOST], &info, &len))
		return -errno;
	*capacity = info.max_entries;
	return 0;
}

int bans__lock(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

void bans__unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* drops the lock; nothing was written through it */
}

int bans__put(const struct sluice_maps *m, const struct sluice_addr_key *k,
	      const struct sluice_ban *b)
{
	struct sluice_ban_gate gate = { 0 };
	struct sluice_ban old, v = *b;
	int fd = ban_fd(m, k), err, is_full = 0;
	__u32 zero = 0, capacity = 0;

	v.drops_pkts = 0;
	err = bans__capacity(m, &capacity);
	if (err)
		return err;
	/*
	 * The bound is on both maps together. The gate counts them: every
	 * writer recounts it after a change, holding bans__lock() (the
	 * trie's lookup cannot say whether @k is new, so always ask).
	 */
	if (fd == m->fd[SLUICE_MAP_BAN] || bpf_map_lookup_elem(fd, k, &old)) {
		err = bpf_map_lookup_elem(m->fd[SLUICE_MAP_BAN_GATE], &zero, &gate) ? -errno : 0;
		if (err)
			return err;
		is_full = gate.hosts + gate.prefixes >= capacity;
	}
	if (!is_full) {
		err = bpf_map_update_elem(fd, k, &v, BPF_NOEXIST) ? -errno : 0;
		if (err != -EEXIST)
			return err;
	}
	/*
	 * Replace @k's entry, if it has one. In the trie, the longest prefix
	 * of @k's own length that matches it is @k's entry, if any.
	 */
	if (!bpf_map_lookup_elem(fd, k, &old))
		v.drops_pkts = old.drops_pkts;
	err = bpf_map_update_elem(fd, k, &v, BPF_EXIST) ? -errno : 0;
	return err == -ENOENT && is_full ? -ENOSPC : err;
}

int bans__del(const struct sluice_maps *m, const struct sluice_addr_key *k)
{
	return bpf_map_delete_elem(ban_fd(m, k), k) ? -errno : 0;
}

/* Append map @fd's entries to @e, which holds *@i of @max. 0 or -errno. */
static int read_map(int fd, struct ban_entry *e, size_t *i, size_t max)
{
	struct sluice_addr_key k;
	const void *prev = NULL;

	errno = 0;
	/* An entry deleted while we walk ends the walk early: the list is a snapshot. */
	while (*i < max && !bpf_map_get_next_key(fd, prev, &k)) {
		e[*i].key = k;
		if (bpf_map_lookup_elem(fd, &k, &e[*i].ban))
			return -errno;
		prev = &e[(*i)++].key;
	}
	return errno && errno != ENOENT ? -errno : 0;
}

int bans__read(const struct sluice_maps *m, struct ban_entry **out, size_t *n)
{
	struct ban_entry *e = NULL;
	__u32 capacity = 0;
	size_t i = 0, max;
	int err = bans__capacity(m, &capacity);

	/* Both maps are sized alike: a full trie beside a full hash is twice that. */
	max = 2 * (size_t)capacity;
	if (!err && !(e = calloc(max ?: 1, sizeof(*e))))
		err = -ENOMEM;
	if (!err)
		err = read_hash(m->fd[SLUICE_MAP_BAN_HOST], e, &i, max);
	if (!err)
		err = read_map(m->fd[SLUICE_MAP_BAN], e, &i, max);
	if (err) {
		free(e);
		return err;
	}
	*out = e;
	*n = i;
	return 0;
}

int bans__allowed_by(const struct sluice_maps *m, const struct sluice_addr_key *k,
		     struct sluice_addr_key *by)
{
	int fd = m->fd[SLUICE_MAP_SRC], found = 0;
	struct sluice_addr_key cur, next, masked;
	struct sluice_addr_val v;
	struct sluice_ctl ctl;
	const void *prev = NULL;
	int err = maps__read_ctl(m, &ctl);

	if (err)
		return err;
	errno = 0;
	/* The trie holds the allowlist's own prefixes, and those nested in them flagged too. */
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		cur = next;
		prev = &cur;
		if (cur.gen != ctl.active_gen || cur.prefixlen > k->prefixlen ||
		    (found && cur.prefixlen >= by->prefixlen))
			continue;
		addr_mask(k->addr, bans__key_bits(&cur), masked.addr);
		if (memcmp(masked.addr, cur.addr, sizeof(cur.addr)) != 0)
			continue;
		if (bpf_map_lookup_elem(fd, &cur, &v)) {
			if (errno == ENOENT)
				continue; /* deleted by a reload while we walk */
			return -errno;
		}
		if (v.flags & SLUICE_ADDR_F_ALLOW) {
			*by = cur;
			found = 1;
		}
	}
	return errno && errno != ENOENT ? -errno : found;
}

int ban_is_expired(const struct sluice_ban *b, __u64 now_ns)
{
	return b->expires_ns && b->expires_ns <= now_ns;
}

int bans__prune(const struct sluice_maps *m, __u64 now_ns)
{
	struct ban_entry *e = NULL;
	size_t i, n = 0;
	int err = bans__read(m, &e, &n);

	for (i = 0; !err && i < n; i++)
		if (ban_is_expired(&e[i].ban, now_ns))
			err = bans__del(m, &e[i].key);
	free(e);
	return err;
}

int bans__write_gate(const struct sluice_maps *m, struct sluice_ban_gate *gate)
{
	__u32 zero = 0;

	gate->epoch = mono_ns();
	return bpf_map_update_elem(m->fd[SLUICE_MAP_BAN_GATE], &zero, gate, BPF_ANY) ? -errno : 0;
}

int bans__sync_gate(const struct sluice_maps *m)
{
	struct sluice_ban_gate gate = { 0 };

	return count_bans(m, &gate) ?: bans__write_gate(m, &gate);
}

int bans__new_epoch(const struct sluice_maps *m)
{
	struct sluice_ban_gate gate;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->fd[SLUICE_MAP_BAN_GATE], &zero, &gate))
		return -errno;
	return bans__write_gate(m, &gate);
}

int bans__read_gate(const struct sluice_maps *m, __u32 *entries)
{
	struct sluice_ban_gate gate;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->fd[SLUICE_MAP_BAN_GATE], &zero, &gate))
		return -errno;
	*entries = gate.hosts + gate.prefixes;
	return 0;
}
