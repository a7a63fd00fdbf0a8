// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The flood of `make bench-path`: run by BPF_PROG_TEST_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES, it gives each IPv4 UDP frame the source
 * base + (n mod sources), n counting this CPU's frames, fixes the IPv4
 * header checksum (the receiving stack checks it before netfilter sees the
 * packet), clears the optional UDP checksum, and redirects the frame out of
 * the sending veth, so it arrives at the peer in the other namespace as if
 * from a wire. Returns XDP_ABORTED for a frame it cannot rewrite.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "gen.h"

#define CSUM_FOLD_BITS 16
#define CSUM_LOW_MASK  0xffff

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bench_gen_cfg);
} bench_gen_cfg SEC(".maps");

/* Frames this CPU has sent: per-CPU, so no atomics and no sharing. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} bench_gen_seq SEC(".maps");

/* RFC 1624 incremental update of @check for a 32-bit word @from → @to. */
static __always_inline __u16 csum_replace4(__u16 check, __be32 from, __be32 to)
{
	__u32 sum = (__u16)~check;

	sum += (__u16) ~(from >> CSUM_FOLD_BITS) + (__u16) ~(from & CSUM_LOW_MASK);
	sum += (to >> CSUM_FOLD_BITS) + (to & CSUM_LOW_MASK);
	sum = (sum & CSUM_LOW_MASK) + (sum >> CSUM_FOLD_BITS);
	sum = (sum & CSUM_LOW_MASK) + (sum >> CSUM_FOLD_BITS);
	return ~sum;
}

SEC("xdp")
int bench_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = (void *)(eth + 1);
	struct udphdr *udp = (void *)(iph + 1);
	struct bench_gen_cfg *cfg;
	__u32 zero = 0;
	__be32 saddr;
	__u64 *seq;

	cfg = bpf_map_lookup_elem(&bench_gen_cfg, &zero);
	seq = bpf_map_lookup_elem(&bench_gen_seq, &zero);
	if (!cfg || !seq || !cfg->sources || (void *)(udp + 1) > end ||
	    eth->h_proto != bpf_htons(ETH_P_IP) || iph->ihl * 4 != sizeof(*iph))
		return XDP_ABORTED;
	saddr = bpf_htonl(cfg->base_host + (__u32)(*seq % cfg->sources));
	(*seq)++;
	iph->check = csum_replace4(iph->check, iph->saddr, saddr);
	iph->saddr = saddr;
	udp->check = 0;
	return bpf_redirect(cfg->ifindex, 0);
}
