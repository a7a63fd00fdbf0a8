// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The practical limit of a keyed limiter: parse Ethernet and IPv4 or IPv6
 * as briefly as possible, and do exactly one BPF_MAP_TYPE_LRU_HASH lookup
 * keyed by the 16-byte source (IPv4 mapped, as sluice keys it). No VLANs,
 * no extension headers, no classification, no clock, no write, no counter.
 * Returns XDP_DROP when the key was found, so the bench can check that it
 * measured a hit, and XDP_PASS otherwise.
 */
#include "source.bpf.h"
#include "sluice/key.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Same size as sluice_state by default, so the hash has as many buckets. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_STATE_ENTRIES_DEFAULT);
	__type(key, struct bench_addr);
	__type(value, __u64);
} bench_keys SEC(".maps");

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
