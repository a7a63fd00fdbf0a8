/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The baselines' parser (bench/lookup.bpf.c, bench/step.bpf.c): Ethernet
 * and IPv4 or IPv6, as briefly as possible, down to the 16-byte source
 * (IPv4 mapped, as sluice keys it). No VLANs, no extension headers, no
 * ports. Benchmark code: nothing in the product includes it.
 */
#ifndef SLUICE_BENCH_SOURCE_BPF_H
#define SLUICE_BENCH_SOURCE_BPF_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "sluice/addr.h"

#define V4MAPPED_WORD	   2	  /* the ffff word of ::ffff:a.b.c.d */
#define V4MAPPED_MARK	   0xffff /* its value, host order */
#define V4MAPPED_ADDR_WORD 3	  /* where the IPv4 address goes */

struct bench_addr {
	__u32 w[SLUICE_ADDR_LEN / sizeof(__u32)]; /* network order, IPv4 mapped */
};

/*
 * The source of @data..@end into @a, which the caller zeroed; 0 for IPv4,
 * 1 for IPv6, or -1 for anything else.
 */
static __always_inline int parse_source(void *data, void *end, struct bench_addr *a)
{
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6;
	struct iphdr *iph;

	if ((void *)(eth + 1) > end)
		return -1;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		iph = (void *)(eth + 1);
		if ((void *)(iph + 1) > end)
			return -1;
		a->w[V4MAPPED_WORD] = bpf_htonl(V4MAPPED_MARK);
		a->w[V4MAPPED_ADDR_WORD] = iph->saddr;
		return 0;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end)
			return -1;
		__builtin_memcpy(a->w, &ip6->saddr, SLUICE_ADDR_LEN);
		return 1;
	}
	return -1;
}

#endif /* SLUICE_BENCH_SOURCE_BPF_H */
