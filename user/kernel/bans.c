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
#include "kernel/bans.h"

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
	int fd = m->fd[SLUICE_MAP_BAN], err;
	struct sluice_ban old, v = *b;

	v.drops_pkts = 0;
	err = bpf_map_update_elem(fd, k, &v, BPF_NOEXIST) ? -errno : 0;
	if (err != -EEXIST)
		return err;
	/*
	 * @k is in the trie, so the longest prefix of @k's own length that
	 * matches it is @k's entry: this lookup reads that entry, no other.
	 */
	if (!bpf_map_lookup_elem(fd, k, &old))
		v.drops_pkts = old.drops_pkts;
	return bpf_map_update_elem(fd, k, &v, BPF_EXIST) ? -errno : 0;
}

int bans__del(const struct sluice_maps *m, const struct sluice_addr_key *k)
{
	return bpf_map_delete_elem(m->fd[SLUICE_MAP_BAN], k) ? -errno : 0;
}

int bans__read(const struct sluice_maps *m, struct ban_entry **out, size_t *n)
{
	struct ban_entry *e = calloc(SLUICE_BAN_ENTRIES, sizeof(*e));
	int fd = m->fd[SLUICE_MAP_BAN], err = 0;
	struct sluice_addr_key k;
	const void *prev = NULL;
	size_t i = 0;

	if (!e)
		return -ENOMEM;
	errno = 0;
	/* An entry deleted while we walk ends the walk early: the list is a snapshot. */
	while (i < SLUICE_BAN_ENTRIES && !bpf_map_get_next_key(fd, prev, &k)) {
		e[i].key = k;
		if (bpf_map_lookup_elem(fd, &k, &e[i].ban)) {
			err = -errno;
			break;
		}
		prev = &e[i++].key;
	}
	if (!err && errno && errno != ENOENT)
		err = -errno;
	if (err) {
		free(e);
		return err;
	}
	*out = e;
	*n = i;
	return 0;
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

int bans__sync_gate(const struct sluice_maps *m)
{
	struct sluice_ban_gate gate = { 0 };
	int fd = m->fd[SLUICE_MAP_BAN];
	struct sluice_addr_key k[2];
	__u32 zero = 0;
	int cur = 0;

	errno = 0;
	while (!bpf_map_get_next_key(fd, gate.entries ? &k[!cur] : NULL, &k[cur])) {
		gate.entries++;
		cur = !cur;
	}
	if (errno != ENOENT)
		return -errno;
	return bpf_map_update_elem(m->fd[SLUICE_MAP_BAN_GATE], &zero, &gate, BPF_ANY) ? -errno : 0;
}

int bans__read_gate(const struct sluice_maps *m, __u32 *entries)
{
	struct sluice_ban_gate gate;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->fd[SLUICE_MAP_BAN_GATE], &zero, &gate))
		return -errno;
	*entries = gate.entries;
	return 0;
}
