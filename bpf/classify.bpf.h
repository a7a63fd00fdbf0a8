/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Policy lookup. The source (when the generation has an allowlist or
 * source sets) and the destination (when it has destination sets) are each
 * looked up once in an LPM trie whose longest match tells which prefix sets
 * the address is in; the packet's service (its port, or its protocol) indexes
 * an array whose slot names the list of every policy that may apply, most
 * specific first, as precomputed by user/policy/compile.c. Two array reads, which
 * the verifier inlines: an LPM trie here cost a helper call, ~24 ns (make
 * bench). The cost does not depend on how many policies or prefixes are
 * loaded. Whether each of those policies does apply (its prefix sets, its
 * tcp_syn) is the first thing a layer asks (policy_for(), layer.bpf.h).
 */
#ifndef SLUICE_CLASSIFY_BPF_H
#define SLUICE_CLASSIFY_BPF_H

#include "maps.bpf.h"
#include "parse.bpf.h"
#include "sluice/svc.h"

static __always_inline struct sluice_ctl *ctl_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&sluice_ctl, &zero);
}

/* The longest prefix of @addr in @trie for generation @gen, or NULL. */
static __always_inline struct sluice_addr_val *addr_lookup(void *trie, __u32 gen, const __u32 *addr)
{
	struct sluice_addr_key k = {
		.prefixlen = SLUICE_ADDR_KEY_BITS(SLUICE_ADDR_BITS),
		.gen = gen,
	};

	__builtin_memcpy(k.addr, addr, SLUICE_ADDR_LEN);
	return bpf_map_lookup_elem(trie, &k);
}

/*
 * Service @svc's list of policies in generation @gen: its slot in
 * sluice_match, 0 for none. Services that the same policies may apply to
 * share a slot (compile.c), so the slot, not the port, is what the policy
 * walk depends on (the deny cache's flow, deny.bpf.h).
 */
static __always_inline __u32 class_slot(__u32 gen, __u32 svc)
{
	__u32 i = gen * SLUICE_SVCS + svc;
	__u64 *slot = bpf_map_lookup_elem(&sluice_class, &i);

	return slot && *slot < SLUICE_MATCH_SLOTS ? (__u32)*slot : 0;
}

/* The policies of slot @slot (class_slot()) in generation @gen, or NULL. */
static __always_inline struct sluice_match *match_of(__u32 gen, __u32 slot)
{
	__u32 i = gen * SLUICE_MATCH_SLOTS + slot;
	struct sluice_match *match;

	if (!slot)
		return NULL;
	match = bpf_map_lookup_elem(&sluice_match, &i);
	return match && match->count ? match : NULL;
}

/* The slot of @m's service: its protocol and destination port. */
static __always_inline __u32 classify_slot(const struct pkt_meta *m, __u32 gen)
{
	return class_slot(gen, sluice_svc_of(m->proto, m->has_ports, bpf_ntohs(m->dst_port)));
}

#endif /* SLUICE_CLASSIFY_BPF_H */
