// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The floor of the benchmark: an XDP program that does nothing. Its cost
 * per BPF_PROG_TEST_RUN repeat is the harness itself (dispatcher call, bh
 * disable/enable, timer check), which every other row also pays, so the
 * bench subtracts it. Also the cheapest tail-call target for the rotator.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int bench_empty(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_DROP;
}
