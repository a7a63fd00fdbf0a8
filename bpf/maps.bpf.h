/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Every map of the XDP program. Types and sizes come from
 * include/sluice/abi.h; names are pin files under the per-interface pin
 * root (LIBBPF_PIN_BY_NAME), so a restarted agent reuses them and no key
 * state is lost. sluice_state's size is the default; the loader may change
 * it before load.
 */
#ifndef SLUICE_MAPS_BPF_H
#define SLUICE_MAPS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice/abi.h"
#include "sluice/deny.h"
#include "sluice/frag.h"

/* Shared, not per-CPU: per-CPU limit state would admit ncpu times the limit. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_STATE_ENTRIES_DEFAULT);
	__type(key, struct sluice_key);
	__type(value, struct sluice_state);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_POLICY_GENS *SLUICE_MAX_POLICIES);
	__type(key, __u32);
	__type(value, struct sluice_policy);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_policy SEC(".maps");

/*
 * The classifier: a packet's service → a slot of sluice_match (abi.h).
 * Mapped by the agent, which writes a generation's 2^17 slots in one pass.
 * A u64 each: an array element takes 8 bytes in memory whatever its size.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_POLICY_GENS *SLUICE_SVCS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_class SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_POLICY_GENS *SLUICE_MATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct sluice_match);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_match SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_MAX_POLICIES);
	__type(key, __u32);
	__type(value, struct sluice_pstats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_totals);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_ctl);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_ctl SEC(".maps");

/*
 * The coarse clock as this CPU last read it, and the jiffy it read it in
 * (limit.bpf.h, clock_read). A cache, so not pinned: a new program starts
 * it empty.
 */
struct sluice_clock {
	__u64 jiffies;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_clock);
} sluice_clock SEC(".maps");

/* A cache, per CPU so that a slot has one writer; not pinned. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_DENY_SLOTS);
	__type(key, __u32);
	__type(value, struct sluice_deny);
} sluice_deny SEC(".maps");

/* Which slots of this CPU's sluice_deny may hold a live drop. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_deny_bits);
} sluice_deny_bits SEC(".maps");

/* Which policy lists this CPU walks peeking first (layer.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_walk_bits);
} sluice_walk SEC(".maps");

/*
 * Datagrams whose later fragments are still to come (frag.bpf.h). Shared,
 * not per-CPU: a datagram's fragments may arrive on any CPU. Not pinned:
 * the program's own. The loader may change its size before load.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_FRAG_ENTRIES_DEFAULT);
	__type(key, struct sluice_frag_key);
	__type(value, struct sluice_frag);
} sluice_frags SEC(".maps");

/* A first fragment's entry while it is built: off the 512-byte stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_frag_tmp);
} sluice_frag_tmp SEC(".maps");

/* An address trie: (generation, address) → the prefix sets it is in. */
#define SLUICE_ADDR_TRIE(name)                                                                     \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);                                               \
		__uint(max_entries, SLUICE_ADDR_ENTRIES);                                          \
		__type(key, struct sluice_addr_key);                                               \
		__type(value, struct sluice_addr_val);                                             \
		__uint(map_flags, BPF_F_NO_PREALLOC);                                              \
		__uint(pinning, LIBBPF_PIN_BY_NAME);                                               \
	} name SEC(".maps")

/* Source prefixes: the allowlist and the source sets policies match on. */
SLUICE_ADDR_TRIE(sluice_src);

/* Destination prefixes: the destination sets policies match on. */
SLUICE_ADDR_TRIE(sluice_dst);

/* Fail modes the agent sets per policy on store faults. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_MAX_POLICIES);
	__type(key, __u32);
	__type(value, struct sluice_fail_state);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_fail SEC(".maps");

/*
 * The shared budget (abi.h): leases the agent writes, what the program spent
 * of them, and keys asking to become hot. Not preallocated: an entry that is
 * replaced or deleted is freed only after every program that may hold a
 * pointer to it has finished (RCU), so a reader never sees another key's
 * values in a recycled element.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SLUICE_LEASE_ENTRIES);
	__type(key, struct sluice_key);
	__type(value, struct sluice_lease);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_lease SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SLUICE_LEASE_ENTRIES);
	__type(key, struct sluice_key);
	__type(value, struct sluice_spend);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_spend SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_HOT_ENTRIES);
	__type(key, struct sluice_key);
	__type(value, struct sluice_hot);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_hot SEC(".maps");

/*
 * The ban list (abi.h, bpf/ban.bpf.h): prefixes in a trie (which must not
 * be preallocated), single addresses in a hash. Not preallocated either:
 * a deleted entry is freed only after every program that may hold a
 * pointer to it has finished (RCU), so a drop is never counted on a
 * recycled element.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SLUICE_BAN_ENTRIES);
	__type(key, struct sluice_addr_key);
	__type(value, struct sluice_ban);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_ban SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_ban_gate);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_ban_gate SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SLUICE_BAN_ENTRIES);
	__type(key, struct sluice_addr_key);
	__type(value, struct sluice_ban);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_ban_host SEC(".maps");

/*
 * The word of this CPU's entry of @map, a per-CPU bitmap of @words __u64
 * in one entry (sluice_deny_bits, sluice_walk), that holds bit @bit; NULL
 * when there is no entry.
 */
static __always_inline __u64 *bitmap_word(void *map, __u32 words, __u32 bit)
{
	__u32 zero = 0;
	__u64 *w = bpf_map_lookup_elem(map, &zero);

	return w ? &w[(bit / SLUICE_DENY_WORD_SLOTS) % words] : NULL;
}

#define BITMAP_BIT(bit) (1ULL << ((bit) % SLUICE_DENY_WORD_SLOTS))

#endif /* SLUICE_MAPS_BPF_H */
