// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * XDP_PASS and nothing else. `make bench-path` attaches it to the
 * receiving veth under nftables and iptables: a veth only receives
 * redirected frames (and runs NAPI, which bench/path.sh moves to a thread
 * of its own) while an XDP program is attached, so the kernel's own
 * limiters get the same receive path as sluice, plus this one call.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int bench_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}
