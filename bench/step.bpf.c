// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The key step: the least a policy that admits a packet costs, in sluice's
 * own code. Parse as bench/lookup.bpf.c does; read the clock as sluice
 * does (clock_read(), coarse); then for each key derive it from the source
 * (include/sluice/key.h), charge it (limit_key(): lookup, GCRA,
 * compare-and-swap, insert on a miss) and count the packet under its
 * policy (count_policy()). Nothing else: no ports, no classification, no
 * policy lookup, no deny cache, fail mode, lease, walk or totals.
 *
 * bench_step charges one key, /32 (/128); bench_step_layers charges
 * BENCH_STEP_LAYERS keys, /32 to /25 (/128 to /121), as the bench's
 * layered policies are keyed. #16 sets sluice's pass path beside them
 * (docs/performance.md). Every packet is admitted and passed; a denied one
 * is dropped, which the bench reports as a wrong verdict.
 */
#include "source.bpf.h"
#include "../bpf/limit.bpf.h"
#include "../bpf/stats.bpf.h"
#include "sluice/key.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define BENCH_STEP_LAYERS SLUICE_MAX_LAYERS
#define BENCH_V4_BITS	  32
#define BENCH_V6_BITS	  128
/* The bench's pass policies' interval (10^7/s); the tolerance admits every packet. */
#define BENCH_STEP_INCR (100ULL << SLUICE_GCRA_TICK_SHIFT)
#define BENCH_STEP_TOL	SLUICE_GCRA_TOL_MAX

static __always_inline int step(struct xdp_md *ctx, __u32 layers)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct pkt_meta m = { .segs = 1, .len_bytes = end - data };
	struct sluice_policy p = {};
	struct sluice_gcra g = { .tolerance = BENCH_STEP_TOL }; /* no batch: the exact step */
	struct limit_env env = {};
	struct sluice_key key;
	__u64 tat, retry;
	int family;
	__u32 i;

	family = parse_source(data, end, (struct bench_addr *)m.src);
	if (family < 0)
		return XDP_DROP;
	clock_read(&env);
	for (i = 0; i < layers; i++) {
		p.id = i;
		p.prefix4 = SLUICE_V4MAPPED_BITS + BENCH_V4_BITS - i;
		p.prefix6 = BENCH_V6_BITS - i;
		sluice_key_derive(&key, &p, m.src, family == 0);
		if (limit_key(&key, env.now, BENCH_STEP_INCR, &g, &tat, &retry) != LIMIT_ADMIT)
			return XDP_DROP;
		count_policy(i, SLUICE_PSTAT_PASSED, &m);
	}
	return XDP_PASS;
}

SEC("xdp")
int bench_step(struct xdp_md *ctx)
{
	return step(ctx, 1);
}

SEC("xdp")
int bench_step_layers(struct xdp_md *ctx)
{
	return step(ctx, BENCH_STEP_LAYERS);
}
