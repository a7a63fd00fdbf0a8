/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Per-CPU counters. Plain increments are safe: a per-CPU slot has one
 * writer (XDP runs with preemption off). User space sums the CPUs.
 */
#ifndef SLUICE_STATS_BPF_H
#define SLUICE_STATS_BPF_H

#include "maps.bpf.h"

static __always_inline void counter_add(struct sluice_counter *c, __u64 len_bytes)
{
	c->pkts++;
	c->bytes += len_bytes;
}

static __always_inline void count_total(struct sluice_totals *t, enum sluice_total what,
					__u64 len_bytes)
{
	if (t && what < SLUICE_TOTAL_MAX)
		counter_add(&t->c[what], len_bytes);
}

static __always_inline void count_policy(__u32 id, enum sluice_pstat what, __u64 len_bytes)
{
	struct sluice_pstats *s = bpf_map_lookup_elem(&sluice_stats, &id);

	if (s && what < SLUICE_PSTAT_MAX)
		counter_add(&s->c[what], len_bytes);
}

#endif /* SLUICE_STATS_BPF_H */
