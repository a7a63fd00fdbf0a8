// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Drop-all that reads the frame: the IPv4 source address decides the
 * verdict (drop anything but 0.0.0.0), so the frame's first cache line is
 * read as any limiter must read it. On the whole path (bench/path.sh) the
 * frame was written by the sending CPU, and that read is a cache miss the
 * plain drop-all never takes: the floor of a limiter, beside that of XDP.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int bench_touch(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = (void *)(eth + 1);

	if ((void *)(iph + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	return iph->saddr ? XDP_DROP : XDP_PASS;
}
