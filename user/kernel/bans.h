/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The ban list's map I/O (docs/bans.md): sluice_ban_host, a hash of
 * single addresses, sluice_ban, an LPM trie of shorter prefixes, and
 * sluice_ban_gate, which tells the program which of them to look at. Every writer holds
 * bans__lock() on the pin root while it changes the trie and rewrites the gate, so two `sluice ban`
 * commands cannot leave the gate at 0 over a live ban. Not on the interface's own pin directory:
 * its agent holds a flock() on that for as long as it runs. Parsing the command line and printing
 * are the commands' (user/cli/ban.c).
 */
#ifndef SLUICE_BANS_H
#define SLUICE_BANS_H

#include <stddef.h>

#include "sluice/ban.h"
#include "kernel/maps.h"

struct ban_entry {
	struct sluice_addr_key key;
	struct sluice_ban ban;
};

/* sluice_ban's key of @addr masked to @bits (0..128, in the mapped space). */
void bans__key(struct sluice_addr_key *k, const __u8 *addr, unsigned int bits);

/* The prefix length of @k in the mapped address space (0..128). */
unsigned int bans__key_bits(const struct sluice_addr_key *k);

/* The bound on entries of both maps together (their size) into *@capacity. 0 or -errno. */
int bans__capacity(const struct sluice_maps *m, __u32 *capacity);

/* An exclusive flock() on directory @dir (the pin root), until bans__unlock(). fd or -errno. */
int bans__lock(const char *dir);
void bans__unlock(int fd);

/*
 * Write @b under @k, in the map its length picks, keeping the packets an
 * existing entry dropped (a packet dropped between the read and the write
 * is not counted: racy by design, a counter for people). 0, -ENOSPC when
 * the gate counts bans__capacity() in both maps together, or -errno.
 * Hold bans__lock(), have the gate counted (bans__sync_gate()) before, and
 * call bans__sync_gate() after.
 */
int bans__put(const struct sluice_maps *m, const struct sluice_addr_key *k,
	      const struct sluice_ban *b);

/* Delete the entry of exactly @k. 0, -ENOENT when there is none, or -errno. */
int bans__del(const struct sluice_maps *m, const struct sluice_addr_key *k);

/*
 * Every entry, expired ones included, into *@out (calloc'd; the caller
 * frees it) and their number into *@n. 0 or -errno.
 */
int bans__read(const struct sluice_maps *m, struct ban_entry **out, size_t *n);

/* Delete the entries expired at @now_ns (CLOCK_MONOTONIC). 0 or -errno. */
int bans__prune(const struct sluice_maps *m, __u64 now_ns);

/*
 * Write @gate as sluice_ban_gate, in a new epoch (stamped into @gate), so
 * that no drop the program cached under the old one stands
 * (bpf/ban.bpf.h): every gate write goes through here. 0 or -errno.
 */
int bans__write_gate(const struct sluice_maps *m, struct sluice_ban_gate *gate);

/* Count the entries of both maps into sluice_ban_gate, in a new epoch. 0 or -errno. */
int bans__sync_gate(const struct sluice_maps *m);

/*
 * A new epoch in sluice_ban_gate, its counts as they are: after a ban was
 * deleted or rewritten, so that no drop the program cached under the old
 * one stands (bpf/ban.bpf.h). 0 or -errno.
 */
int bans__new_epoch(const struct sluice_maps *m);

/* The entries sluice_ban_gate counts, in both maps, into *@entries. 0 or -errno. */
int bans__read_gate(const struct sluice_maps *m, __u32 *entries);

/*
 * The shortest allowlist prefix of the live policy that holds all of ban
 * key @k, into *@by (a sluice_src key: its gen is the generation's). 1 when
 * there is one, 0 when none, or -errno. The program passes an allowlisted
 * source before it looks at the bans, so such a ban has no effect.
 */
int bans__allowed_by(const struct sluice_maps *m, const struct sluice_addr_key *k,
		     struct sluice_addr_key *by);

/* Has @b expired at @now_ns? */
int ban_is_expired(const struct sluice_ban *b, __u64 now_ns);

#endif /* SLUICE_BANS_H */
