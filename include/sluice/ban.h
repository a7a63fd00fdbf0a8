/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The ban list's limits and entries: the values of sluice_ban,
 * sluice_ban_host and sluice_ban_gate.
 *
 * Part of the ABI: abi.h says how it may change.
 */
#ifndef SLUICE_ABI_BAN_H
#define SLUICE_ABI_BAN_H

#include "addr.h"

/*
 * The ban list (docs/bans.md): sources dropped after the allowlist and
 * before every policy, written by `sluice ban` and `sluice unban` with or
 * without an agent. A ban of one address (/32, /128) is in sluice_ban_host,
 * a hash, so a packet's lookup costs the same however many there are; a
 * ban of a shorter prefix is in sluice_ban, an LPM trie, which the program
 * reads only while it holds one (its walk grows with the trie's depth).
 * Both are keyed by struct sluice_addr_key with gen always 0 (bans have no
 * generation): prefixlen is SLUICE_ADDR_KEY_BITS() of the prefix's bits in
 * the mapped address, SLUICE_ADDR_KEY_BITS(SLUICE_ADDR_BITS) in the hash.
 */
#define SLUICE_BAN_ENTRIES    65536U /* bans per interface, both maps, expired ones included */
#define SLUICE_BAN_GEN	      0	     /* sluice_addr_key.gen of every ban */
#define SLUICE_BAN_REASON_LEN 40     /* reason including the terminating NUL */
/* The longest --for: a difference of ticks (gcra.h) must stay below 2^63. */
#define SLUICE_BAN_FOR_MAX_NS (1ULL << 54) /* 208 days */

/* Value of sluice_ban and sluice_ban_host. */
struct sluice_ban {
	__u64 expires_ns; /* bpf_ktime_get_ns() clock (CLOCK_MONOTONIC): from then on the
			   * ban drops nothing; 0 never expires */
	__u64 since_ns;	  /* same clock: when the ban was (last) written */
	__u64 drops_pkts; /* packets it dropped; the program adds atomically */
	char reason[SLUICE_BAN_REASON_LEN]; /* NUL-terminated, may be empty */
};
SLUICE_ASSERT_SIZE(struct sluice_ban, 64);

/*
 * Value of sluice_ban_gate, a one-element array: which ban maps the program
 * looks up at all. Only the ban commands write it, under a lock on the pin
 * root, never the agent (which rewrites sluice_ctl whole and would lose a
 * concurrent write there). Every write gives it a new epoch, after the
 * change to the ban maps: the program caches a ban's drop per flow
 * (bpf/ban.bpf.h) only while the epoch it was decided in stands, so an
 * unban or a shorter ban takes effect at once.
 */
struct sluice_ban_gate {
	__u32 hosts;	/* entries in sluice_ban_host, expired ones included; 0: skip it */
	__u32 prefixes; /* entries in sluice_ban, likewise */
	__u64 epoch;	/* CLOCK_MONOTONIC ns of the write: new on each */
};
SLUICE_ASSERT_SIZE(struct sluice_ban_gate, 16);

#endif /* SLUICE_ABI_BAN_H */
