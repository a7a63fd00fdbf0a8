// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The XDP program: parse → classify → limit → count. Policy lives in maps
 * that user space writes; this file only reads them. Every path ends at the
 * single `out:` label, which counts the verdict.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice/key.h"
#include "classify.bpf.h"
#include "limit.bpf.h"
#include "maps.bpf.h"
#include "parse.bpf.h"
#include "stats.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * One policy for one packet: an enum limit_result, or -1 when the policy
 * does not apply (a SYN-only policy and a packet that is not a SYN).
 *
 * Verifier: a global (non-static, noinline) function is verified once, on
 * its own. Inlined into the layer loop, SLUICE_MAX_LAYERS × SLUICE_CAS_RETRIES
 * iterations made kernel 6.18 with clang 14 spend 0.65 s per load exploring
 * states; as a global function the whole program verifies in a few ms.
 */
__attribute__((noinline)) int limit_policy(const struct pkt_meta *m, __u32 gen, __u32 id,
					   __u64 now)
{
	const struct sluice_policy *p;
	struct sluice_key key;

	if (!m) /* a global function's pointer argument may be NULL for the verifier */
		return -1;
	p = policy_for(m, gen, id);
	if (!p)
		return -1;
	sluice_key_derive(&key, p, m->src, m->is_ipv4);
	return limit_key(&key, now, policy_incr(p, m->len_bytes), p->tolerance);
}

/*
 * Apply every matching policy, most specific first; the first denial
 * decides and is counted as that policy's drop. A passed packet is counted
 * as passed by every policy that admitted it. Returns the verdict and sets
 * *@why to a total to count besides the verdict, or leaves it alone.
 */
static __always_inline int apply_policies(const struct pkt_meta *m, const struct sluice_match *match,
					  __u32 gen, enum sluice_total *why)
{
	__u32 admitted[SLUICE_MAX_LAYERS];
	__u64 now = limit_now();
	__u32 i, n = 0;
	int r;

	for (i = 0; i < SLUICE_MAX_LAYERS && i < match->count; i++) {
		r = limit_policy(m, gen, match->ids[i], now);
		if (r == LIMIT_ADMIT)
			admitted[n++] = match->ids[i];
		if (r == LIMIT_STATE_ERR)
			*why = SLUICE_TOTAL_STATE_ERR;
		if (r == LIMIT_DENY || r == LIMIT_CAS_EXHAUSTED) {
			if (r == LIMIT_CAS_EXHAUSTED)
				*why = SLUICE_TOTAL_CAS_EXHAUSTED;
			count_policy(match->ids[i], SLUICE_PSTAT_DROPPED, m->len_bytes);
			return XDP_DROP;
		}
	}
	for (i = 0; i < n && i < SLUICE_MAX_LAYERS; i++)
		count_policy(admitted[i], SLUICE_PSTAT_PASSED, m->len_bytes);
	return XDP_PASS;
}

SEC("xdp")
int sluice_xdp(struct xdp_md *ctx)
{
	struct cursor c = {
		.pos = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};
	enum sluice_total why = SLUICE_TOTAL_MAX;
	struct sluice_totals *totals;
	struct sluice_match *match;
	struct pkt_meta m = {};
	int verdict = XDP_PASS;
	int no_ports = 0;
	__u32 zero = 0;
	__u32 gen;

	m.len_bytes = c.end - c.pos;
	if (parse_packet(&c, &m, &no_ports) < 0) {
		why = SLUICE_TOTAL_UNPARSED;
		goto out;
	}
	gen = active_gen();
	match = classify(&m, gen);
	if (!match) {
		why = SLUICE_TOTAL_NO_MATCH;
		goto out;
	}
	verdict = apply_policies(&m, match, gen, &why);
out:
	totals = bpf_map_lookup_elem(&sluice_totals, &zero);
	count_total(totals, verdict == XDP_DROP ? SLUICE_TOTAL_DROPPED : SLUICE_TOTAL_PASSED,
		    m.len_bytes);
	count_total(totals, why, m.len_bytes);
	if (no_ports)
		count_total(totals, SLUICE_TOTAL_NO_PORTS, m.len_bytes);
	return verdict;
}
