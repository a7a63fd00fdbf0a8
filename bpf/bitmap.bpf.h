/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A per-CPU bitmap held in the one entry of a per-CPU array, a bit per
 * slot: the deny cache's slots in use (deny.bpf.h, sluice_deny_bits) and
 * the policy lists walked peeking first (layer.bpf.h, sluice_walk).
 */
#ifndef SLUICE_BITMAP_BPF_H
#define SLUICE_BITMAP_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice/deny.h"

/*
 * The word of this CPU's entry of @map, a per-CPU bitmap of @words __u64
 * in one entry, that holds bit @bit; NULL when there is no entry.
 */
static __always_inline __u64 *bitmap_word(void *map, __u32 words, __u32 bit)
{
	__u32 zero = 0;
	__u64 *w = bpf_map_lookup_elem(map, &zero);

	return w ? &w[(bit / SLUICE_DENY_WORD_SLOTS) % words] : NULL;
}

#define BITMAP_BIT(bit) (1ULL << ((bit) % SLUICE_DENY_WORD_SLOTS))

#endif /* SLUICE_BITMAP_BPF_H */
