// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The program: parse → allowlist → bans → classify → limit → count, one pipeline
 * (sluice_pipeline()) behind two hooks: XDP in the driver (sluice_xdp),
 * and TC on clsact ingress (sluice_tc), for interfaces without native
 * XDP. TC runs after GRO, where one skb may stand for many wire packets:
 * the pipeline counts and charges each frame as the packets and bytes the
 * wire carried (parse_frame()). Both share every map. Policy lives in maps
 * that user space writes; this file only reads them. Every path ends at
 * the single `out:` label, which counts the verdict.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "ban.bpf.h"
#include "classify.bpf.h"
#include "deny.bpf.h"
#include "events.bpf.h"
#include "layer.bpf.h"
#include "maps.bpf.h"
#include "parse.bpf.h"
#include "stats.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Headers sluice_tc() makes linear: Ethernet, two VLAN tags, IPv6 with 16
 * eight-byte extension headers and TCP with options come to 230. The
 * parser reads an extension chain with bpf_skb_load_bytes(), linear or
 * not, but the transport header from the linear bytes: after a longer
 * chain it finds no ports, as in XDP past the end of a frame.
 */
#define SLUICE_TC_PULL_BYTES 256
#define GSO_SEGS_MAX	     0xffff /* the kernel's GSO_MAX_SEGS: skb_shared_info.gso_segs is u16 */
#define WIRE_BYTES_MAX	     0xffffffffULL /* pkt_meta.len_bytes is 32 bits, as skb->len is */

/*
 * The segments and wire bytes of a GRO/GSO aggregate whose headers, up to
 * the transport payload, are @hdr_bytes long, into @m: every segment
 * carried those headers, so the wire saw len_bytes + (segs − 1) × hdr_bytes.
 * A device that leaves the count to the stack (virtio_net and tun:
 * SKB_GSO_DODGY, @gso_segs 0) gets it as the kernel's GSO would compute
 * it, from the payload and @gso_size: the one division on the packet
 * path, taken by such frames only. An encapsulated aggregate's inner
 * headers are counted once (the parser stops at the outer ports).
 */
static __always_inline void frame_segments(struct pkt_meta *m, __u64 hdr_bytes, __u32 gso_segs,
					   __u32 gso_size)
{
	__u64 segs = gso_segs, wire;

	if (!segs && m->len_bytes > hdr_bytes)
		segs = (m->len_bytes - hdr_bytes + gso_size - 1) / gso_size;
	if (segs <= 1)
		return;
	if (segs > GSO_SEGS_MAX)
		segs = GSO_SEGS_MAX;
	m->segs = segs;
	/* In 64 bits (< 2^16 · 2^32: hdr_bytes < len_bytes), then at most 2^32 − 1 in m. */
	wire = m->len_bytes + (segs - 1) * hdr_bytes;
	m->len_bytes = wire > WIRE_BYTES_MAX ? WIRE_BYTES_MAX : wire;
}

/*
 * Parse the frame of @ctx, from hook @hook (enum frame_hook), from @data to
 * @data_end, into @m; returns an enum parse_result. It is @len_bytes long
 * (an skb may hold fewer of them in line), and a GRO/GSO aggregate when
 * @gso_size (its segments' payload) is not 0, of @gso_segs segments.
 *
 * Inline: as a global function (verified once) it cost 23 ns per packet
 * (make bench, drop path 159 vs 136 ns over the floor); walk_layers()
 * being global is what keeps verification small.
 */
static __always_inline int parse_frame(void *ctx, int hook, void *data, void *data_end,
				       __u64 len_bytes, __u32 gso_segs, __u32 gso_size,
				       struct pkt_meta *m)
{
	struct cursor c = { .pos = data, .end = data_end };
	int parsed;

	m->segs = 1;
	m->len_bytes = len_bytes;
	parsed = parse_packet(&c, m, ctx, hook);
	if (gso_size &&
	    (parsed == PARSE_OK || parsed == PARSE_NO_PORTS || parsed == PARSE_FRAG_LATER))
		frame_segments(m, c.pos - data, gso_segs, gso_size);
	return parsed;
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
 * `unparsed: charge` (ctl.h): every policy whose address sets match, of any
 * protocol and port, and as a SYN, so that no policy the packet may belong
 * to is left out; for an orphan fragment (`orphan: pass`), every such
 * policy of a byte cost (policy_for()). Into @v; returns the total to count.
 */
static __always_inline int charge_unparsed(struct pkt_meta *m, struct limit_env *env,
					   struct verdict *v)
{
	struct sluice_match *match;

	if (classify_addrs(m, env))
		return SLUICE_TOTAL_ALLOWED;
	m->is_syn = 1;
	v->match_slot = class_slot(env->gen, SLUICE_SVC_UNPARSED);
	match = match_of(env->gen, v->match_slot);
	if (match)
		v->result = walk_layers(m, env, match, v);
	if (v->result == LIMIT_SKIP)
		v->result = LIMIT_PASS_UNCHARGED; /* counted as charged, not as no_match */
	return SLUICE_TOTAL_UNPARSED_CHARGE;
}

/*
 * What the program cannot decide by its policies (@parsed from
 * PARSE_FRAG_LATER on): a tiny fragment is dropped; a later fragment that
 * has no first (an orphan) and a frame the parser could not finish get
 * what the file says (ctl.h, sluice_gen_flag); a later fragment with a
 * first follows it. An allowlisted source is passed, as always, but for
 * a tiny fragment. Into @v; returns the total to count.
 */
static __always_inline int decide_odd(struct pkt_meta *m, struct limit_env *env, struct verdict *v,
				      int parsed)
{
	int why;

	if (parsed == PARSE_TINY) {
		v->result = LIMIT_REFUSED;
		return SLUICE_TOTAL_FRAG_TINY;
	}
	if (parsed == PARSE_FRAG_LATER) {
		why = frag_layers(m, env, v);
		if (why != SLUICE_TOTAL_FRAG_ORPHAN)
			return why;
		if (env->gen_flags & SLUICE_GEN_F_ORPHAN_PASS)
			return charge_unparsed(m, env, v) == SLUICE_TOTAL_ALLOWED
				       ? SLUICE_TOTAL_ALLOWED
				       : why;
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

/* SLUICE_EVENT_UNOWNED where a key must be in memory. */
static const __u32 drop_event_unowned = SLUICE_EVENT_UNOWNED;

/*
 * The sluice_ev_tick slot of a drop, as a key in memory (the pipeline's
 * stack has no room for one more): the policy that made it, in the
 * verdict itself, or SLUICE_EVENT_UNOWNED for a drop before the policies.
 */
static __always_inline const __u32 *drop_event_key(const struct verdict *v)
{
	return v->result == LIMIT_REFUSED || v->id >= SLUICE_MAX_POLICIES ? &drop_event_unowned
									  : &v->id;
}

/*
 * The sampled event of a drop (events.bpf.h), once the caller found it
 * may be due (event_counted()), or is (@due: event_due_cached()): why,
 * from what the stages left in @v and @why, and which policy. The
 * generation is read again: this is one drop in N.
 */
static __always_inline int drop_event(void *ctx, int hook, const struct pkt_meta *m,
				      const struct verdict *v, int why, int due)
{
	int reason = v->result == LIMIT_CLOSED ? SLUICE_EVENT_FAIL : SLUICE_EVENT_LIMIT;
	struct sluice_ctl *ctl = ctl_get();
	__u32 gen;

	if (!ctl)
		return 0;
	if (v->result == LIMIT_REFUSED) {
		if (why == SLUICE_TOTAL_BANNED)
			reason = SLUICE_EVENT_BAN;
		else if (why == SLUICE_TOTAL_UNPARSED_DROP)
			reason = SLUICE_EVENT_UNPARSED;
		else
			reason = SLUICE_EVENT_FRAGMENT;
	}
	gen = ctl->active_gen % SLUICE_POLICY_GENS;
	return event_send(ctx, hook, m, gen, event_stamp(ctl), *drop_event_key(v), reason, due);
}

/*
 * drop_event() for each hook, global as parse_ipv6_chain_xdp() is: verified
 * once, on its own, so its frame is not the pipeline's, which has no byte
 * of 6.1's 512 to spare. Returns 1 when an event was sent. Called for one
 * drop in N only (drop_event_call() after event_counted()): a call costs.
 */
__attribute__((noinline)) int drop_event_xdp(struct xdp_md *ctx, const struct pkt_meta *m,
					     const struct verdict *v, int why, int due)
{
	if (!ctx || !m || !v)
		return 0;
	return drop_event(ctx, FRAME_XDP, m, v, why, due);
}

__attribute__((noinline)) int drop_event_skb(struct __sk_buff *skb, const struct pkt_meta *m,
					     const struct verdict *v, int why, int due)
{
	if (!skb || !m || !v)
		return 0;
	return drop_event(skb, FRAME_SKB, m, v, why, due);
}

/* The event of a drop event_counted() found may be due (@due: is), from hook @hook. */
static __always_inline void drop_event_call(void *ctx, int hook, const struct pkt_meta *m,
					    const struct verdict *v, int why, int due)
{
	if (hook == FRAME_SKB)
		drop_event_skb(ctx, m, v, why, due);
	else
		drop_event_xdp(ctx, m, v, why, due);
}

/*
 * deny_arm(), global as drop_event_xdp() is: its lookups' keys would need
 * the pipeline's stack. Called when the full path stores a drop in the
 * deny cache while its generation samples some.
 */
__attribute__((noinline)) int deny_arm_global(__u32 slot, __u32 id, __u32 gen, __u64 stamp)
{
	deny_arm(slot, id, gen, stamp);
	return 0;
}

/*
 * ban_drop(), global as drop_event_xdp() is: verified on its own, its frame
 * is not the pipeline's, which has no byte of 6.1's 512 to spare. Called
 * only while a ban is in the maps (ban_any()).
 */
__attribute__((noinline)) int ban_drop_global(const struct pkt_meta *m, struct limit_env *env,
					      const struct sluice_flow *f, __u32 slot, __u64 stamp)
{
	if (!m || !env)
		return 0;
	return ban_drop(m, env, f, slot, stamp);
}

/*
 * The pipeline, for a frame as parse_frame() takes it; returns XDP_PASS or
 * XDP_DROP. What the parser learned is in m, what the packet is decided
 * under in env, and the answer in v: its result is written here alone,
 * and becomes the XDP verdict at out: (verdict_xdp()). A drop's sampled
 * event is sent at decided:, or for a drop of the deny cache where it is
 * found, without the generation (events.bpf.h). A first fragment's answer
 * is kept for its later fragments at remember:.
 */
static __always_inline int sluice_pipeline(void *ctx, int hook, void *data, void *data_end,
					   __u64 len_bytes, __u32 gso_segs, __u32 gso_size)
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

	parsed = parse_frame(ctx, hook, data, data_end, len_bytes, gso_segs, gso_size, &m);
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
	if (parsed >= PARSE_FRAG_LATER) {
		why = decide_odd(&m, &env, &v, parsed);
		goto decided;
	}
	flow.match_slot = classify_slot(&m, env.gen);
	cache = !(env.gen_flags & SLUICE_GEN_F_DST);
	if (cache) {
		flow_of(&m, &flow);
		slot = sluice_deny_slot(&flow);
		denied_by = deny_cached(&env, &flow, slot, stamp);
		if (denied_by == SLUICE_DENY_BAN) {
			why = SLUICE_TOTAL_BANNED;
			v.result = LIMIT_REFUSED;
			if ((env.gen_flags & SLUICE_GEN_F_EVENTS) &&
			    !event_counted_cached(&drop_event_unowned))
				drop_event_call(ctx, hook, &m, &v, why, 0);
			goto remember;
		}
		if (denied_by >= 0) {
			v.result = LIMIT_DENY;
			v.id = (__u32)denied_by;
			if (denied_by & DENY_SAMPLED)
				drop_event_call(ctx, hook, &m, &v, why, 1);
			goto remember;
		}
	}
	if (classify_addrs(&m, &env)) {
		why = SLUICE_TOTAL_ALLOWED;
		goto decided;
	}
	if (ban_any() && ban_drop_global(&m, &env, cache ? &flow : NULL, slot, stamp)) {
		why = SLUICE_TOTAL_BANNED;
		v.result = LIMIT_REFUSED;
		goto decided;
	}
	match = match_of(env.gen, flow.match_slot);
	if (!match) {
		v.result = LIMIT_SKIP;
		goto decided;
	}
	v.match_slot = flow.match_slot;
	v.result = walk_layers(&m, &env, match, &v);
	if (v.result == LIMIT_DENY && v.deny_ticks && cache) {
		deny_store(&flow, slot, stamp, v.id, env.now, v.deny_ticks);
		if (env.gen_flags & SLUICE_GEN_F_EVENTS)
			deny_arm_global(slot, v.id, env.gen, stamp);
	}
decided:
	if (is_drop(v.result) && (env.gen_flags & SLUICE_GEN_F_EVENTS)) {
		ctl = bpf_map_lookup_elem(&sluice_ctl, &zero); /* again: no stack to keep it */
		if (ctl && !event_counted(drop_event_key(&v), event_stamp(ctl)))
			drop_event_call(ctx, hook, &m, &v, why, 0);
	}
remember:
	if (m.frag == PKT_FRAG_FIRST) {
		clock_read(&env);
		frag_remember(&m, env.now, v.result, v.id, v.noted);
	}
out:
	xdp = verdict_xdp(&v, &why);
	if (xdp == XDP_DROP && v.result != LIMIT_REFUSED)
		count_drop(v.id, v.result, &m);
	totals = bpf_map_lookup_elem(&sluice_totals, &zero);
	count_total(totals, xdp == XDP_DROP ? SLUICE_TOTAL_DROPPED : SLUICE_TOTAL_PASSED, &m);
	count_total(totals, why, &m);
	if (parsed == PARSE_NO_PORTS)
		count_total(totals, SLUICE_TOTAL_NO_PORTS, &m);
	if (env.agent_lost_ns)
		count_total(totals, SLUICE_TOTAL_AGENT_LOST, &m);
	return xdp;
}

SEC("xdp")
int sluice_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *data_end = (void *)(long)ctx->data_end;

	return sluice_pipeline(ctx, FRAME_XDP, data, data_end, data_end - data, 0, 0);
}

/*
 * TC, on clsact ingress: after GRO, so an skb may be an aggregate
 * (struct __sk_buff's gso_segs and gso_size). The parser reads the skb's
 * linear bytes (an IPv6 extension chain with bpf_skb_load_bytes()): a
 * driver may leave headers in its pages, so the first SLUICE_TC_PULL_BYTES,
 * or the whole frame if shorter, are made linear first, which costs
 * nothing when they already are. A pass is TC_ACT_UNSPEC, so filters
 * after ours still run (as with XDP, sluice chains on pass only); a drop
 * is TC_ACT_SHOT.
 */
SEC("tc")
int sluice_tc(struct __sk_buff *skb)
{
	__u32 want = skb->len < SLUICE_TC_PULL_BYTES ? skb->len : SLUICE_TC_PULL_BYTES;

	if ((void *)(long)skb->data_end - (void *)(long)skb->data < want)
		bpf_skb_pull_data(skb, want); /* on failure, parse what is there */
	return sluice_pipeline(skb, FRAME_SKB, (void *)(long)skb->data, (void *)(long)skb->data_end,
			       skb->len, skb->gso_segs, skb->gso_size) == XDP_DROP
		       ? TC_ACT_SHOT
		       : TC_ACT_UNSPEC;
}
