// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Drop-all that reads what a limiter keyed by source must and no more
 * (#32): the Ethernet type and the IPv4 or IPv6 header to its source
 * address, into a 16-byte key as sluice makes it (source.bpf.h), then
 * drops whatever it read. The floor of sluice in `make bench-path`
 * (bench/path.sh): the frame's first cache line comes from the sending
 * CPU as it does for sluice, and no byte sluice does not need is read.
 */
#include "source.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int bench_readsrc(struct xdp_md *ctx)
{
	struct bench_addr a = {};
	__u32 i;

	if (parse_source((void *)(long)ctx->data, (void *)(long)ctx->data_end, &a) < 0)
		return XDP_PASS;
	for (i = 0; i < SLUICE_ADDR_LEN / sizeof(__u32); i++)
		barrier_var(a.w[i]); /* the key is read, though the verdict does not use it */
	return XDP_DROP;
}
