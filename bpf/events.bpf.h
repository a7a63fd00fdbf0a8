/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Sampled drop events (include/sluice/events.h, docs/events.md). The entry
 * calls event_send() for a drop only while its generation samples some
 * (SLUICE_GEN_F_EVENTS): with sampling off a drop costs one branch more.
 * The Nth drop of a policy on a CPU (its own countdown in
 * sluice_ev_tick, counted down inline by event_counted()) reserves a slot
 * in the ring, without waiting: a full ring counts the event as lost, a
 * CPU past its per-second cap as capped.
 */
#ifndef SLUICE_EVENTS_BPF_H
#define SLUICE_EVENTS_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "sluice/deny.h"
#include "sluice/events.h"
#include "maps.bpf.h"
#include "parse.bpf.h"

/*
 * This CPU's countdown to its next event of a policy id: the drops left
 * until it, this one included, as set in the generation of @stamp.
 */
struct event_tick {
	__u64 stamp; /* sluice_deny_stamp() of the generation @left was set in */
	__u32 left;  /* drops until the next event, counting the next; 0: not sampled */
	__u32 pad;
};

/* Each policy id's countdown (then SLUICE_EVENT_UNOWNED's): the program's own, not pinned. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_EVENT_SLOTS);
	__type(key, __u32);
	__type(value, struct event_tick);
} sluice_ev_tick SEC(".maps");

/* What a countdown is valid under: the policy generation of @ctl, and its half in use. */
static __always_inline __u64 event_stamp(const struct sluice_ctl *ctl)
{
	return sluice_deny_stamp(ctl->generation, ctl->active_gen % SLUICE_POLICY_GENS);
}

/*
 * Can this drop of slot @*slot be counted without event_send(), in the
 * generation of @stamp? Yes while this CPU's countdown, set in that
 * generation, has more than this drop left (counted here), or the slot
 * samples nothing: the caller's inline part, so that 999 drops in 1000
 * of a 1-in-1000 sample pay one per-CPU lookup and no call.
 */
static __always_inline int event_counted(const __u32 *slot, __u64 stamp)
{
	struct event_tick *t = bpf_map_lookup_elem(&sluice_ev_tick, slot);

	if (!t)
		return 1;
	if (t->stamp != stamp || t->left == 1)
		return 0;
	if (t->left)
		t->left--;
	return 1;
}

/*
 * Is this drop of @slot the Nth since this CPU's last event of it, N
 * being its rate at @idx in generation @stamp? A countdown set in another
 * generation starts again from N, this drop its first.
 */
static __always_inline int event_due(__u32 slot, __u32 idx, __u64 stamp)
{
	struct event_tick *t;
	__u32 *every;

	every = bpf_map_lookup_elem(&sluice_ev_rate, &idx);
	t = bpf_map_lookup_elem(&sluice_ev_tick, &slot);
	if (!every || !t)
		return 0;
	if (t->stamp != stamp) {
		t->stamp = stamp;
		t->left = *every;
	}
	if (!t->left)
		return 0;
	if (t->left > 1) {
		t->left--;
		return 0;
	}
	t->left = *every;
	return 1;
}

/* Has this CPU sent its SLUICE_EVENTS_CPU_PER_SEC events in the second of @now_ns? */
static __always_inline int event_capped(struct sluice_event_stats *s, __u64 now_ns)
{
	__u64 second = now_ns / SLUICE_NSEC_PER_SEC;

	if (second != s->second) {
		s->second = second;
		s->in_second = 0;
	}
	if (s->in_second >= SLUICE_EVENTS_CPU_PER_SEC) {
		s->capped++;
		return 1;
	}
	s->in_second++;
	return 0;
}

/*
 * The event of a drop of @m for @reason (enum
 * sluice_event_reason), if it is due: made in generation @gen (half of
 * the policy maps; @stamp: sluice_deny_stamp()) by the policy of id @slot
 * (SLUICE_EVENT_UNOWNED: none).
 * @ctx's frame comes from hook @hook.
 */
static __always_inline int event_send(void *ctx, int hook, const struct pkt_meta *m, __u32 gen,
				      __u64 stamp, __u32 slot, int reason)
{
	__u32 zero = 0, len, idx = gen * SLUICE_EVENT_SLOTS + slot; /* no division: a drop's path */
	struct sluice_event_stats *s;
	struct sluice_event *e;
	__u64 now;

	if (!event_due(slot, idx, stamp))
		return 0;
	s = bpf_map_lookup_elem(&sluice_ev_stats, &zero);
	if (!s)
		return 0;
	now = bpf_ktime_get_ns();
	if (event_capped(s, now))
		return 0;
	e = bpf_ringbuf_reserve(&sluice_events, sizeof(*e), 0);
	if (!e) {
		s->lost++;
		return 0;
	}
	e->time_ns = now;
	__builtin_memcpy(e->src, m->src, SLUICE_ADDR_LEN);
	__builtin_memcpy(e->dst, m->dst, SLUICE_ADDR_LEN);
	e->policy_id = slot;
	e->wire_len = m->len_bytes;
	e->dst_port = m->has_ports ? m->dst_port : 0;
	e->proto = m->proto;
	e->reason = reason;
	e->ifindex = hook == FRAME_SKB ? ((struct __sk_buff *)ctx)->ifindex
				       : ((struct xdp_md *)ctx)->ingress_ifindex;
	e->reserved = 0;
	len = hook == FRAME_SKB ? ((struct __sk_buff *)ctx)->len
				: ((struct xdp_md *)ctx)->data_end - ((struct xdp_md *)ctx)->data;
	if (len > SLUICE_EVENT_FRAME_BYTES)
		len = SLUICE_EVENT_FRAME_BYTES;
	/*
	 * 1 to SLUICE_EVENT_FRAME_BYTES (a power of two) in a form 6.1's
	 * verifier can follow: it refuses a length that may be 0.
	 */
	if (len)
		len = ((len - 1) & (SLUICE_EVENT_FRAME_BYTES - 1)) + 1;
	if (len && frame_load(ctx, hook, 0, e->frame, len))
		len = 0;
	e->frame_len = len;
	bpf_ringbuf_submit(e, 0);
	s->sent++;
	return 1;
}

#endif /* SLUICE_EVENTS_BPF_H */
