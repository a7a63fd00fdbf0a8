/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The ABI between the XDP program and user space: everything they exchange
 * through maps. Maps are pinned and outlive both the agent and upgrades,
 * so their layouts are an ABI: never reorder a field; append, or turn one
 * into reserved, and bump SLUICE_ABI_VERSION. A loader facing pinned maps
 * whose sluice_ctl.abi_version differs replaces them (user/kernel/loader.c),
 * carrying their entries over only from SLUICE_ABI_CARRY_SINCE on.
 *
 * This header holds the version, the pins and the names of the maps. Their
 * keys, values, enums and limits are in a header per domain, each with the
 * asserts of its layouts, and all included here: addresses (addr.h),
 * policies (policy.h), the key state (key.h), the classifier (classify.h),
 * the control map (ctl.h), fail modes (fail.h), leases of the shared
 * budget (lease.h), counters (stats.h), the ban list (ban.h), the sampled
 * drop events (events.h). Code includes the ones it needs.
 *
 * Byte order: addresses and ports are network order (as on the wire), all
 * other integers host order.
 */
#ifndef SLUICE_ABI_H
#define SLUICE_ABI_H

#include "compiler.h"
#include "addr.h"
#include "ban.h"
#include "classify.h"
#include "ctl.h"
#include "events.h"
#include "fail.h"
#include "key.h"
#include "lease.h"
#include "policy.h"
#include "stats.h"

#define SLUICE_ABI_VERSION 13
/*
 * The oldest ABI whose every map has the layout of this one: an upgrade
 * from it copies the maps whole (key state, policies, counters); from an
 * older or a newer one it starts fresh. ABI 8 moved the pins into a
 * directory per ABI and changed no map; ABI 9 added the ban maps, which an
 * upgrade from 7 or 8 starts empty; ABI 10 the event maps (events.h),
 * which an upgrade from an older one starts empty; ABI 11 gave a policy's
 * limits a batch (policy.h) in bytes that were reserved, and changed no
 * map; ABI 12 gave sluice_ban_gate an epoch (ban.h), which an upgrade
 * from 11 recounts instead of copying; ABI 13 gave a rate lease its share
 * and its TAT (lease.h): an upgrade from 12 starts the lease maps empty,
 * and the agent writes them again at its first sync (a key is cold
 * meanwhile).
 */
#define SLUICE_ABI_CARRY_SINCE 7

/*
 * Pins: <root>/<iface>/ is the interface's directory (one agent's lock);
 * each set of maps, with the XDP link beside them, lives in a directory
 * of its own, <iface>/abi<SLUICE_ABI_VERSION>/. A start builds a new set
 * in <iface>/abi<N>-new/ and renames it when everything worked. Releases
 * before ABI 8 pinned their set in <iface>/ itself.
 */
#define SLUICE_PIN_ROOT	   "/sys/fs/bpf/sluice"
#define SLUICE_PIN_LINK	   "link" /* the pinned XDP bpf_link, beside the maps */
#define SLUICE_PIN_SET	   "abi"  /* + the ABI version in decimal: a set of pins */
#define SLUICE_PIN_STAGING "-new" /* + after a set's name: one being built (bpffs refuses dots) */

/* Maps, by the index user space uses; the name is also the pin file. */
enum sluice_map {
	SLUICE_MAP_STATE = 0,
	SLUICE_MAP_POLICY,
	SLUICE_MAP_MATCH,
	SLUICE_MAP_STATS,
	SLUICE_MAP_TOTALS,
	SLUICE_MAP_CTL,
	SLUICE_MAP_SRC,
	SLUICE_MAP_DST,
	SLUICE_MAP_FAIL,
	SLUICE_MAP_LEASE,
	SLUICE_MAP_SPEND,
	SLUICE_MAP_HOT,
	SLUICE_MAP_CLASS,
	SLUICE_MAP_BAN,
	SLUICE_MAP_BAN_GATE,
	SLUICE_MAP_BAN_HOST,
	SLUICE_MAP_EVENTS, /* the ring buffer of sampled drops (events.h) */
	SLUICE_MAP_EVENT_RATE,
	SLUICE_MAP_EVENT_STATS,
	SLUICE_MAP_MAX,
};

/* The ABIs that appended the ban maps and the event maps: an older set pins those before them. */
#define SLUICE_ABI_BANS	  9
#define SLUICE_ABI_EVENTS 10

/* How many maps, the first of enum sluice_map, a set of ABI @abi pins. */
static inline int sluice_maps_of_abi(__u32 abi)
{
	if (abi >= SLUICE_ABI_EVENTS)
		return SLUICE_MAP_MAX;
	return abi >= SLUICE_ABI_BANS ? SLUICE_MAP_EVENTS : SLUICE_MAP_BAN;
}

#ifndef __bpf__
/* The only place map names appear as strings; tests check it against the object. */
static const char *const sluice_map_names[SLUICE_MAP_MAX] = {
	[SLUICE_MAP_STATE] = "sluice_state",
	[SLUICE_MAP_POLICY] = "sluice_policy",
	[SLUICE_MAP_MATCH] = "sluice_match",
	[SLUICE_MAP_STATS] = "sluice_stats",
	[SLUICE_MAP_TOTALS] = "sluice_totals",
	[SLUICE_MAP_CTL] = "sluice_ctl",
	[SLUICE_MAP_SRC] = "sluice_src",
	[SLUICE_MAP_DST] = "sluice_dst",
	[SLUICE_MAP_FAIL] = "sluice_fail",
	[SLUICE_MAP_LEASE] = "sluice_lease",
	[SLUICE_MAP_SPEND] = "sluice_spend",
	[SLUICE_MAP_HOT] = "sluice_hot",
	[SLUICE_MAP_CLASS] = "sluice_class",
	[SLUICE_MAP_BAN] = "sluice_ban",
	[SLUICE_MAP_BAN_GATE] = "sluice_ban_gate",
	[SLUICE_MAP_BAN_HOST] = "sluice_ban_host",
	[SLUICE_MAP_EVENTS] = "sluice_events",
	[SLUICE_MAP_EVENT_RATE] = "sluice_ev_rate",
	[SLUICE_MAP_EVENT_STATS] = "sluice_ev_stats",
};
#endif

/*
 * The program's own maps, each beside the code that uses it (the clock and
 * the per-CPU batches in bpf/limit.bpf.h, the deny cache in deny.bpf.h, the walk's bitmap in
 * layer.bpf.h, the datagram table in frag.bpf.h): per-CPU caches and
 * scratch, and the datagram table (an LRU hash every CPU shares). Not
 * pinned, so a new program starts them empty, and nothing but the program
 * reads them.
 */
enum sluice_cache {
	SLUICE_CACHE_CLOCK = 0,
	SLUICE_CACHE_DENY,
	SLUICE_CACHE_DENY_BITS,
	SLUICE_CACHE_FRAGS,
	SLUICE_CACHE_FRAG_TMP,
	SLUICE_CACHE_WALK,
	SLUICE_CACHE_EVENT_TICK,
	SLUICE_CACHE_CREDIT,
	SLUICE_CACHE_MAX,
};

#ifndef __bpf__
static const char *const sluice_cache_names[SLUICE_CACHE_MAX] = {
	[SLUICE_CACHE_CLOCK] = "sluice_clock",	       [SLUICE_CACHE_DENY] = "sluice_deny",
	[SLUICE_CACHE_DENY_BITS] = "sluice_deny_bits", [SLUICE_CACHE_FRAGS] = "sluice_frags",
	[SLUICE_CACHE_FRAG_TMP] = "sluice_frag_tmp",   [SLUICE_CACHE_WALK] = "sluice_walk",
	[SLUICE_CACHE_EVENT_TICK] = "sluice_ev_tick",  [SLUICE_CACHE_CREDIT] = "sluice_credit",
};
#endif

#endif /* SLUICE_ABI_H */
