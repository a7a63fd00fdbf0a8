/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Per-CPU counters. Plain increments are safe: a per-CPU slot has one
 * writer (XDP and TC run with preemption off). User space sums the CPUs.
 * A frame counts as the wire packets and bytes it stands for (struct
 * pkt_meta): one packet for XDP, every segment of a GRO aggregate for TC.
 */
#ifndef SLUICE_STATS_BPF_H
#define SLUICE_STATS_BPF_H

#include "maps.bpf.h"
#include "parse.bpf.h"

static __always_inline void counter_add(struct sluice_counter *c, const struct pkt_meta *m)
{
	c->pkts += m->segs;
	c->bytes += m->len_bytes;
}

static __always_inline void count_total(struct sluice_totals *t, enum sluice_total what,
					const struct pkt_meta *m)
{
	if (t && what < SLUICE_TOTAL_MAX)
		counter_add(&t->c[what], m);
}

static __always_inline void count_policy(__u32 id, enum sluice_pstat what, const struct pkt_meta *m)
{
	struct sluice_pstats *s = bpf_map_lookup_elem(&sluice_stats, &id);

	if (s && what < SLUICE_PSTAT_MAX)
		counter_add(&s->c[what], m);
}

#endif /* SLUICE_STATS_BPF_H */
