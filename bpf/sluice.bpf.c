// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The XDP program: parse → allowlist → classify → limit → count. Policy
 * lives in maps that user space writes; this file only reads them. Every
 * path ends at the single `out:` label, which counts the verdict.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "classify.bpf.h"
#include "deny.bpf.h"
#include "layer.bpf.h"
#include "maps.bpf.h"
#include "parse.bpf.h"
#include "stats.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Parse @ctx's frame into @m; returns an enum parse_result.
 *
 * Inline: as a global function (verified once) it cost 23 ns per packet
 * (make bench, drop path 159 vs 136 ns over the floor); walk_layers()
 * being global is what keeps verification small.
 */
static __always_inline int parse_frame(struct xdp_md *ctx, struct pkt_meta *m)
{
	struct cursor c = {
		.pos = (void *)(long)ctx->data,
		.end = (void *)(long)ctx->data_end,
	};

	m->len_bytes = c.end - c.pos;
	return parse_packet(&c, m, ctx);
}

/*
 * Source and destination prefix sets into @env, for its generation's
 * flags; returns 1 for an allowlisted source.
 */
static __always_inline int classify_addrs(const struct pkt_meta *m, struct limit_env *env)
{
	struct sluice_addr_val *v;

	if (env->gen_flags & SLUICE_GEN_F_SRC) {
		v = addr_lookup(&sluice_src, env->gen, m->src);
		if (v && (v->flags & SLUICE_ADDR_F_ALLOW))
			return 1;
		env->src_sets = v ? v->sets : 0;
	}
	if (env->gen_flags & SLUICE_GEN_F_DST) {
		v = addr_lookup(&sluice_dst, env->gen, m->dst);
		env->dst_sets = v ? v->sets : 0;
	}
	return 0;
}

/*
 * `unparsed: charge` (abi.h): every policy whose address sets match, of any
 * protocol and port, and as a SYN, so that no policy the packet may belong
 * to is left out. Into @v; returns the total to count.
 */
static __always_inline int charge_unparsed(struct pkt_meta *m, struct limit_env *env,
					   struct verdict *v)
{
	struct sluice_match *match;

	if (classify_addrs(m, env))
		return SLUICE_TOTAL_ALLOWED;
	m->is_syn = 1;
	match = classify_svc(env->gen, SLUICE_SVC_UNPARSED);
	if (match)
		v->result = walk_layers(m, env, match, v);
	if (v->result == LIMIT_SKIP)
		v->result = LIMIT_PASS_UNCHARGED; /* counted as charged, not as no_match */
	return SLUICE_TOTAL_UNPARSED_CHARGE;
}

/*
 * What the program cannot decide by its policies: a later fragment that
 * has no first (an orphan) and a frame the parser could not finish get
 * what the file says (abi.h, sluice_gen_flag); a later fragment with a
 * first follows it. An allowlisted source is passed, as always. Into @v;
 * returns the total to count.
 */
static __always_inline int decide_odd(struct pkt_meta *m, struct limit_env *env, struct verdict *v,
				      int parsed)
{
	int why;

	if (parsed != PARSE_UNFINISHED) {
		why = frag_layers(m, env, v);
		if (why != SLUICE_TOTAL_FRAG_ORPHAN || (env->gen_flags & SLUICE_GEN_F_ORPHAN_PASS))
			return why;
	} else if (env->gen_flags & SLUICE_GEN_F_UNPARSED_PASS) {
		return SLUICE_TOTAL_UNPARSED_PASS;
	} else if ((env->gen_flags & SLUICE_GEN_F_UNPARSED_CHARGE) && m->has_addrs) {
		return charge_unparsed(m, env, v);
	} else {
		why = SLUICE_TOTAL_UNPARSED_DROP; /* charge without addresses: no key to charge */
	}
	if (m->has_addrs && classify_addrs(m, env))
		return SLUICE_TOTAL_ALLOWED;
	v->result = LIMIT_REFUSED;
	return why;
}

/*
 * The pipeline. What the parser learned is in m, what the packet is
 * decided under in env, and the answer in v: its result is written here
 * alone, and becomes the XDP verdict at out: (verdict_xdp()). A first
 * fragment's answer is kept for its later fragments at decided:.
 */
SEC("xdp")
int sluice_xdp(struct xdp_md *ctx)
{
	struct verdict v = { .result = LIMIT_PASS_UNCHARGED };
	enum sluice_total why = SLUICE_TOTAL_MAX;
	struct sluice_totals *totals;
	struct sluice_match *match;
	/* Zeroed: 6.1's verifier does not see it is read only when cache is set. */
	struct sluice_flow flow = {};
	struct limit_env env = {};
	struct sluice_ctl *ctl;
	struct pkt_meta m = {};
	int xdp, cache, parsed;
	__u32 zero = 0, slot = 0;
	__u64 stamp;
	long denied_by;

	parsed = parse_frame(ctx, &m);
	if (parsed == PARSE_NOT_IP) {
		why = SLUICE_TOTAL_NOT_IP;
		goto out;
	}
	ctl = ctl_get();
	if (!ctl)
		goto out;
	env.gen = ctl->active_gen % SLUICE_POLICY_GENS;
	stamp = sluice_deny_stamp(ctl->generation, env.gen);
	env.gen_flags = ctl->gen_flags[env.gen];
	env.heartbeat_ns = ctl->heartbeat_ns;
	env.agent_timeout_ns = ctl->agent_timeout_ns;
	if (parsed == PARSE_TINY) {
		why = SLUICE_TOTAL_FRAG_TINY;
		v.result = LIMIT_REFUSED;
		goto decided;
	}
	if (parsed == PARSE_UNFINISHED || m.frag == PKT_FRAG_LATER) {
		why = decide_odd(&m, &env, &v, parsed);
		goto decided;
	}
	cache = !(env.gen_flags & SLUICE_GEN_F_DST);
	if (cache) {
		flow_of(&m, &flow);
		slot = sluice_deny_slot(&flow);
		denied_by = deny_cached(&env, &flow, slot, stamp);
		if (denied_by >= 0) {
			v.result = LIMIT_DENY;
			v.id = denied_by;
			goto decided;
		}
	}
	if (classify_addrs(&m, &env)) {
		why = SLUICE_TOTAL_ALLOWED;
		goto decided;
	}
	match = classify(&m, env.gen);
	if (!match) {
		v.result = LIMIT_SKIP;
		goto decided;
	}
	v.result = walk_layers(&m, &env, match, &v);
	if (v.result == LIMIT_DENY && v.deny_ticks && cache)
		deny_store(&flow, slot, stamp, v.id, env.now, v.deny_ticks);
decided:
	if (m.frag == PKT_FRAG_FIRST) {
		clock_read(&env);
		frag_remember(&m, env.now, v.result, v.id, v.noted);
	}
out:
	xdp = verdict_xdp(&v, &why);
	if (xdp == XDP_DROP && v.result != LIMIT_REFUSED)
		count_drop(v.id, v.result, m.len_bytes);
	totals = bpf_map_lookup_elem(&sluice_totals, &zero);
	count_total(totals, xdp == XDP_DROP ? SLUICE_TOTAL_DROPPED : SLUICE_TOTAL_PASSED,
		    m.len_bytes);
	count_total(totals, why, m.len_bytes);
	if (parsed == PARSE_NO_PORTS)
		count_total(totals, SLUICE_TOTAL_NO_PORTS, m.len_bytes);
	if (env.agent_lost_ns)
		count_total(totals, SLUICE_TOTAL_AGENT_LOST, m.len_bytes);
	return xdp;
}
