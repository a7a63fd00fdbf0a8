// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Many sources from one test packet: sluice rewrites nothing, so this
 * front program sets the source address (IPv4 saddr, or the low 32 bits
 * of the IPv6 saddr) to base + (n mod sources), n counting this CPU's
 * packets, and, when the bench asks for a port spray, an IPv4 UDP
 * packet's destination port to base_port + (n mod ports); then it
 * tail-calls whatever the bench put in bench_target (sluice,
 * or the empty program for the row's floor). Checksums are left stale:
 * sluice does not verify them. Returns XDP_ABORTED when the tail call
 * fails, which the bench reports.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "rotate.h"

#define IPV6_ADDR_LOW_WORD 3 /* the last 32 bits of an IPv6 address */
#define IPV4_IHL_BYTES	   4 /* the unit of iph->ihl */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, BENCH_TARGET_SLOT + 1);
	__type(key, __u32);
	__type(value, __u32);
} bench_target SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_rotate_cfg);
} bench_cfg SEC(".maps");

/* Packets this CPU has rotated: per-CPU, so no atomics and no sharing. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bench_seq SEC(".maps");

/* The word of the source address to rewrite, or NULL for anything but IP. */
static __always_inline __be32 *source_word(void *data, void *end)
{
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6;
	struct iphdr *iph;

	if ((void *)(eth + 1) > end)
		return NULL;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		iph = (void *)(eth + 1);
		return (void *)(iph + 1) > end ? NULL : &iph->saddr;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		ip6 = (void *)(eth + 1);
		return (void *)(ip6 + 1) > end ? NULL
					       : &ip6->saddr.in6_u.u6_addr32[IPV6_ADDR_LOW_WORD];
	}
	return NULL;
}

/* An IPv4 UDP packet's destination port, or NULL for any other packet. */
static __always_inline __be16 *dport_word(void *data, void *end)
{
	struct ethhdr *eth = data;
	struct udphdr *udp;
	struct iphdr *iph;

	iph = (void *)(eth + 1);
	if ((void *)(iph + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) ||
	    iph->protocol != IPPROTO_UDP)
		return NULL;
	udp = (void *)iph + iph->ihl * IPV4_IHL_BYTES;
	return (void *)(udp + 1) > end ? NULL : &udp->dest;
}

SEC("xdp")
int bench_rotate(struct xdp_md *ctx)
{
	struct bench_rotate_cfg *cfg;
	__u32 zero = 0;
	__be16 *port;
	__be32 *word;
	__u64 *seq;

	cfg = bpf_map_lookup_elem(&bench_cfg, &zero);
	seq = bpf_map_lookup_elem(&bench_seq, &zero);
	word = source_word((void *)(long)ctx->data, (void *)(long)ctx->data_end);
	if (!cfg || !seq || !word || !cfg->sources)
		return XDP_ABORTED;
	*word = bpf_htonl(cfg->base_host + (__u32)(*seq % cfg->sources));
	if (cfg->ports) {
		port = dport_word((void *)(long)ctx->data, (void *)(long)ctx->data_end);
		if (!port)
			return XDP_ABORTED;
		*port = bpf_htons(cfg->base_port + (__u32)(*seq % cfg->ports));
	}
	(*seq)++;
	bpf_tail_call(ctx, &bench_target, BENCH_TARGET_SLOT);
	return XDP_ABORTED;
}
