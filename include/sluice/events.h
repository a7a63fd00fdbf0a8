/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Sampled drop events (docs/events.md): what the XDP program writes into
 * the ring buffer sluice_events for one dropped packet in N, and the maps
 * that say N and count what was sent and lost.
 *
 * Part of the ABI: abi.h says how it may change (the maps are pinned).
 *
 * The drop path never waits: bpf_ringbuf_reserve() either hands a slot or
 * fails at once, and a failure is counted as lost. Per CPU, at most
 * SLUICE_EVENTS_CPU_PER_SEC events a second are sent; the rest are counted
 * as capped. Sampling is per policy (`events: { sample: 1/N }`), and the
 * top-level `events:` samples the drops no policy made (a ban, an
 * unparsed frame, a fragment): sluice_ev_rate holds N for each.
 */
#ifndef SLUICE_EVENTS_H
#define SLUICE_EVENTS_H

#include "addr.h"
#include "policy.h"

/* Slots of sluice_ev_rate per generation: one per policy id, then the drops no policy made. */
#define SLUICE_EVENT_UNOWNED SLUICE_MAX_POLICIES
#define SLUICE_EVENT_SLOTS   (SLUICE_MAX_POLICIES + 1)

/* The largest N of a 1-in-N sample: one event per million drops. */
#define SLUICE_EVENT_SAMPLE_MAX 1000000U

/*
 * Events one CPU sends per second at most: a flood sampled 1 in 1 cannot
 * make the reader's work grow with it. 4096 events of 192 bytes are
 * 0.8 MB/s per CPU.
 */
#define SLUICE_EVENTS_CPU_PER_SEC 4096

/* The ring's bytes: a power of two pages; ~1300 events the reader has not read yet. */
#define SLUICE_EVENTS_RING_BYTES (256U * 1024)

/* A frame's first bytes an event carries: L2 (two VLAN tags) to L4 of IPv6 with options. */
#define SLUICE_EVENT_FRAME_BYTES 128

/* Why the packet was dropped. */
enum sluice_event_reason {
	SLUICE_EVENT_LIMIT = 0,	   /* a policy's limit denied it (also a cached drop) */
	SLUICE_EVENT_BAN = 1,	   /* its source is banned (docs/bans.md) */
	SLUICE_EVENT_UNPARSED = 2, /* headers not finished, `unparsed: drop` */
	SLUICE_EVENT_FRAGMENT = 3, /* a tiny first fragment, or an orphan dropped */
	SLUICE_EVENT_FAIL = 4,	   /* a policy failed closed */
	SLUICE_EVENT_REASON_MAX,
};

/* One event in sluice_events. */
struct sluice_event {
	__u64 time_ns;		   /* bpf_ktime_get_ns() clock (CLOCK_MONOTONIC) of the drop */
	__u8 src[SLUICE_ADDR_LEN]; /* network order, IPv4 mapped; zero when unparsed */
	__u8 dst[SLUICE_ADDR_LEN]; /* likewise */
	__u32 policy_id;	   /* the policy that dropped it; SLUICE_EVENT_UNOWNED: none */
	__u32 wire_len;		   /* the frame's bytes on the wire */
	__be16 dst_port;	   /* network order; 0 when it has none. The source port
				    * is read from frame[]: the program's stack has no room */
	__u16 frame_len;	   /* bytes of frame[] that hold the frame */
	__u8 proto;		   /* IPPROTO_*, 0 when unparsed */
	__u8 reason;		   /* enum sluice_event_reason */
	__u16 reserved;
	__u32 ifindex;			      /* the interface it arrived on */
	__u8 frame[SLUICE_EVENT_FRAME_BYTES]; /* the frame's first bytes */
};
SLUICE_ASSERT_SIZE(struct sluice_event, 192);

/*
 * Value of sluice_ev_stats, a one-element per-CPU array the program
 * alone writes: what this CPU sampled, and its per-second cap's window.
 */
struct sluice_event_stats {
	__u64 sent;	 /* events in the ring */
	__u64 lost;	 /* sampled, but the ring was full */
	__u64 capped;	 /* sampled past SLUICE_EVENTS_CPU_PER_SEC */
	__u64 second;	 /* the window's second (time_ns / 10^9) */
	__u64 in_second; /* events sent in it */
};
SLUICE_ASSERT_SIZE(struct sluice_event_stats, 40);

#endif /* SLUICE_EVENTS_H */
