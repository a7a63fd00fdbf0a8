/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Policy lookup: one LPM-trie lookup on (generation, protocol, destination
 * port) returns every policy that applies to the packet, most specific
 * first, as precomputed by user/compile.c. The cost does not depend on how
 * many policies are loaded.
 */
#ifndef SLUICE_CLASSIFY_BPF_H
#define SLUICE_CLASSIFY_BPF_H

#include "maps.bpf.h"
#include "parse.bpf.h"

static __always_inline __u32 active_gen(void)
{
	__u32 zero = 0;
	struct sluice_ctl *ctl = bpf_map_lookup_elem(&sluice_ctl, &zero);

	return ctl ? ctl->active_gen % SLUICE_POLICY_GENS : 0;
}

static __always_inline struct sluice_match *classify(const struct pkt_meta *m, __u32 gen)
{
	struct sluice_match_key k = {
		.prefixlen = m->has_ports ? SLUICE_MATCH_BITS_PORT : SLUICE_MATCH_BITS_PROTO,
		.gen = gen,
		.proto = m->proto,
		.dst_port = m->has_ports ? m->dst_port : 0,
	};

	return bpf_map_lookup_elem(&sluice_match, &k);
}

/* The policy @id of generation @gen, or NULL when it does not apply to @m. */
static __always_inline struct sluice_policy *policy_for(const struct pkt_meta *m, __u32 gen,
							__u32 id)
{
	__u32 slot = gen * SLUICE_MAX_POLICIES + id;
	struct sluice_policy *p;

	if (id >= SLUICE_MAX_POLICIES)
		return NULL;
	p = bpf_map_lookup_elem(&sluice_policy, &slot);
	if (!p || ((p->flags & SLUICE_POLICY_F_TCP_SYN) && !m->is_syn))
		return NULL;
	return p;
}

#endif /* SLUICE_CLASSIFY_BPF_H */
