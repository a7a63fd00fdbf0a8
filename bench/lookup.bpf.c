// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The practical limit of a keyed limiter: parse Ethernet and IPv4 or IPv6
 * as briefly as possible, and do exactly one BPF_MAP_TYPE_LRU_HASH lookup
 * keyed by the 16-byte source (IPv4 mapped, as sluice keys it). No VLANs,
 * no extension headers, no classification, no clock, no write, no counter.
 * Returns XDP_DROP when the key was found, so the bench can check that it
 * measured a hit, and XDP_PASS otherwise.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "sluice/abi.h"

#define V4MAPPED_WORD	   2	  /* the ffff word of ::ffff:a.b.c.d */
#define V4MAPPED_MARK	   0xffff /* its value, host order */
#define V4MAPPED_ADDR_WORD 3	  /* where the IPv4 address goes */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct bench_addr {
	__u32 w[SLUICE_ADDR_LEN / sizeof(__u32)]; /* network order, IPv4 mapped */
};

/* Same size as sluice_state by default, so the hash has as many buckets. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_STATE_ENTRIES_DEFAULT);
	__type(key, struct bench_addr);
	__type(value, __u64);
} bench_keys SEC(".maps");

/* The source of @data..@end into @a; 0, or -1 for anything but IPv4/IPv6. */
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
		return 0;
	}
	return -1;
}

SEC("xdp")
int bench_lookup(struct xdp_md *ctx)
{
	struct bench_addr a = {};

	if (parse_source((void *)(long)ctx->data, (void *)(long)ctx->data_end, &a) < 0)
		return XDP_PASS;
	return bpf_map_lookup_elem(&bench_keys, &a) ? XDP_DROP : XDP_PASS;
}

/*
 * The same lookup, and on a miss an insert, as sluice's key lookup does:
 * rotated over more sources than the table holds, every packet inserts and
 * the LRU evicts. XDP_DROP for every IP packet.
 */
SEC("xdp")
int bench_lookup_insert(struct xdp_md *ctx)
{
	struct bench_addr a = {};
	__u64 zero = 0;

	if (parse_source((void *)(long)ctx->data, (void *)(long)ctx->data_end, &a) < 0)
		return XDP_PASS;
	if (!bpf_map_lookup_elem(&bench_keys, &a))
		bpf_map_update_elem(&bench_keys, &a, &zero, BPF_NOEXIST);
	return XDP_DROP;
}
