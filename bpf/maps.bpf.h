/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The pinned maps of the XDP program, the ABI, and only those: each is a
 * row of enum sluice_map (include/sluice/abi.h), whose name is its pin
 * file under the per-interface pin root (LIBBPF_PIN_BY_NAME), so a
 * restarted agent reuses them and no key state is lost. Types and sizes
 * come from the domain headers abi.h includes. sluice_state's size is the
 * default; the loader may change it before load.
 *
 * The program's own maps, never pinned (enum sluice_cache), live beside
 * the code that uses them: the clock in limit.bpf.h, the deny cache in
 * deny.bpf.h, the walk's bitmap in layer.bpf.h, the datagram table in
 * frag.bpf.h, the drop events' countdown in events.bpf.h.
 */
#ifndef SLUICE_MAPS_BPF_H
#define SLUICE_MAPS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice/abi.h"

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
 * The classifier: a packet's service → a slot of sluice_match (classify.h).
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
 * The shared budget (lease.h): leases the agent writes, what the program spent
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
 * The ban list (ban.h, bpf/ban.bpf.h): prefixes in a trie (which must not
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

/* The sampled drops (events.bpf.h): the ring, each sample's N, what was sent and lost. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, SLUICE_EVENTS_RING_BYTES);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_events SEC(".maps");

/* N of each 1-in-N sample, by gen × SLUICE_EVENT_SLOTS + policy id; 0: not sampled. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_POLICY_GENS *SLUICE_EVENT_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_ev_rate SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_event_stats);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_ev_stats SEC(".maps");

#endif /* SLUICE_MAPS_BPF_H */
