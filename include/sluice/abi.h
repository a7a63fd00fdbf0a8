/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Everything the XDP program and user space exchange through maps: keys,
 * values, enums, limits and pin names. Maps are pinned and outlive both the
 * agent and upgrades, so the layout here is an ABI: never reorder a field;
 * append, or turn one into reserved, and bump SLUICE_ABI_VERSION. A loader
 * facing pinned maps whose sluice_ctl.abi_version differs replaces them
 * (user/kernel/loader.c), carrying their entries over only from
 * SLUICE_ABI_CARRY_SINCE on.
 *
 * Byte order: addresses and ports are network order (as on the wire), all
 * other integers host order. Addresses are 16 bytes; IPv4 is stored
 * IPv4-mapped (::ffff:a.b.c.d), so one key path serves both families.
 */
#ifndef SLUICE_ABI_H
#define SLUICE_ABI_H

#include "compiler.h"

#define SLUICE_ABI_VERSION 10
/*
 * The oldest ABI whose every map has the layout of this one: an upgrade
 * from it copies the maps whole (key state, policies, counters); from an
 * older or a newer one it starts fresh. ABI 8 moved the pins into a
 * directory per ABI and changed no map; ABI 9 added the ban maps, which an
 * upgrade from 7 or 8 starts empty; ABI 10 the event maps (events.h),
 * which an upgrade from an older one starts empty.
 */
#define SLUICE_ABI_CARRY_SINCE 7

/* Limits that size maps and loops. */
#define SLUICE_MAX_POLICIES	     4096  /* policy ids are 0 .. SLUICE_MAX_POLICIES - 1 */
#define SLUICE_POLICY_GENS	     2	   /* policy and match tables are double-buffered */
#define SLUICE_MAX_LAYERS	     8	   /* policies that may apply to one packet */
#define SLUICE_NAME_LEN		     32	   /* policy name including the terminating NUL */
#define SLUICE_MATCH_SLOTS	     16384 /* distinct policy lists per generation; slot 0: none */
#define SLUICE_STATE_ENTRIES_DEFAULT (1U << 20)
#define SLUICE_VLAN_MAX		     2	/* 802.1Q / 802.1ad tags parsed */
#define SLUICE_IPV6_EXT_MAX	     16 /* IPv6 extension headers followed; more: unparsed */
#define SLUICE_CAS_RETRIES	     8	/* compare-and-swap attempts on one key per packet */
#define SLUICE_MAX_SETS		     64 /* distinct source (and destination) prefix sets per generation */
#define SLUICE_ADDR_ENTRIES	     262144 /* prefixes of both generations in sluice_src, sluice_dst */
#define SLUICE_LEASE_ENTRIES	     65536 /* hot keys of cluster-scoped policies holding a lease */
#define SLUICE_HOT_ENTRIES	     8192 /* cold keys asking to become hot, until the agent reads them */
#define SLUICE_COARSE_LAG_TICKS	     2 /* the coarse clock's lag varies by this many ticks */
#define SLUICE_LEASE_KERNEL_SYNCS    2 /* a written lease lives this many sync intervals */

#define SLUICE_ADDR_LEN	     16
#define SLUICE_ADDR_BITS     128
#define SLUICE_V4MAPPED_BITS 96 /* bits of ::ffff:0:0/96 before the IPv4 address */
#define SLUICE_IPV4_BITS     32
#define SLUICE_PORT_BITS     16

/*
 * Pins: <root>/<iface>/ is the interface's directory (one agent's lock);
 * each set of maps, with the XDP link beside them, lives in a directory
 * of its own, <iface>/abi<SLUICE_ABI_VERSION>/. A start builds a new set
 * in <iface>/abi<N>-new/ and renames it when everything worked. Releases
 * before ABI 8 pinned their set in <iface>/ itself.
 */
#define SLUICE_PIN_ROOT	   "/sys/fs/bpf/sluice"
#define SLUICE_PIN_LINK	   "link" /* the pinned XDP bpf_link, beside the maps */
#define SLUICE_PIN_SET	   "abi"  /* + the ABI version in decimal: a set of pins */
#define SLUICE_PIN_STAGING "-new" /* + after a set's name: one being built (bpffs refuses dots) */

/* Cost unit of a policy: what one GCRA "cell" is. */
enum sluice_cost {
	SLUICE_COST_PKTS = 0,  /* every packet costs 1 */
	SLUICE_COST_BYTES = 1, /* a packet costs its L2 frame length (no FCS) */
	SLUICE_COST_MAX,
};

/* What a policy does with a packet its limit denies. */
enum sluice_mode {
	SLUICE_MODE_ENFORCE = 0, /* drop it */
	SLUICE_MODE_SHADOW = 1,	 /* count it as would-drop, pass it, leave the key untouched */
	SLUICE_MODE_MAX,
};

/* Where a policy's limit holds (struct sluice_policy.scope). */
enum sluice_scope {
	SLUICE_SCOPE_NODE = 0,	  /* this node's own limit */
	SLUICE_SCOPE_CLUSTER = 1, /* one limit across the fleet, through the store */
	SLUICE_SCOPE_MAX,
};

/* What a limit is for; it sets the default fail modes (docs/fail-modes.md). */
enum sluice_class {
	SLUICE_CLASS_SHEDDING = 0, /* protects capacity: fails degraded, never closed by default */
	SLUICE_CLASS_ABUSE = 1,	   /* makes an attack uneconomical: degraded, then closed */
	SLUICE_CLASS_MAX,
};

/* A policy's behaviour while the limiter cannot decide normally. */
enum sluice_fail {
	SLUICE_FAIL_NONE = 0,	  /* normal enforcement */
	SLUICE_FAIL_OPEN = 1,	  /* pass the policy's traffic unlimited */
	SLUICE_FAIL_DEGRADED = 2, /* enforce the local bound */
	SLUICE_FAIL_CLOSED = 3,	  /* drop the policy's traffic (allowlisted sources still pass) */
	SLUICE_FAIL_MAX,
};

/*
 * The unit of a byte limit's arithmetic: compile.c bounds the increment of
 * a cost this large, and larger ones (a GRO aggregate) are charged in whole
 * units of it (gcra.h, sluice_gcra_incr_cost()).
 */
#define SLUICE_COST_BYTES_SHIFT 16
#define SLUICE_COST_BYTES_MAX	(1ULL << SLUICE_COST_BYTES_SHIFT)

/* Key of sluice_state: one GCRA cell per policy and (masked) source. */
struct sluice_key {
	__u32 policy_id; /* stable id: survives reloads and restarts */
	union {
		__u8 addr[SLUICE_ADDR_LEN]; /* source masked to the policy's prefix, network
					     * order; all zero for one global key */
		__u32 addr32[SLUICE_ADDR_LEN / 4];
	};
};
SLUICE_ASSERT_SIZE(struct sluice_key, 20);
SLUICE_ASSERT_OFFSET(struct sluice_key, addr, 4);

/* Value of sluice_state. Written only by compare-and-swap in the XDP program. */
struct sluice_state {
	__u64 tat; /* GCRA theoretical arrival time, ticks (gcra.h); wraps */
};
SLUICE_ASSERT_SIZE(struct sluice_state, 8);

/* Bits of struct sluice_policy.flags. */
enum sluice_policy_flag {
	SLUICE_POLICY_F_TCP_SYN = 1 << 0,     /* only TCP segments with SYN set and ACK clear */
	SLUICE_POLICY_F_LOCAL_LIMIT = 1 << 1, /* degraded is an explicit local_limit: not shared */
	SLUICE_POLICY_F_COLD_STRICT = 1 << 2, /* cluster scope: a key without a lease is dropped
					       * (cold_mode: strict), not held to the share */
};

/*
 * One GCRA limit. The emission interval of one cost unit is
 * interval_mant / 2^interval_shift ticks; tolerance is burst × that
 * interval. compile.c derives both and guarantees the bounds gcra.h states.
 */
struct sluice_gcra {
	__u64 interval_mant; /* ticks << interval_shift per cost unit */
	__u64 tolerance;     /* ticks: burst × interval, at most SLUICE_GCRA_TOL_MAX */
	__u8 interval_shift; /* 0 .. SLUICE_GCRA_SHIFT_MAX */
	__u8 reserved[7];
};
SLUICE_ASSERT_SIZE(struct sluice_gcra, 24);

/* Value of sluice_policy, indexed by gen * SLUICE_MAX_POLICIES + id. */
struct sluice_policy {
	struct sluice_gcra limit;    /* normal enforcement */
	struct sluice_gcra degraded; /* the local bound, in SLUICE_FAIL_DEGRADED */
	__u64 closed_after_ns;	     /* agent lost and degraded this long: closed; 0 never */
	__u32 id;		     /* stable policy id: sluice_key.policy_id and stats index */
	__u8 cost;		     /* enum sluice_cost */
	__u8 prefix4;		     /* key bits of an IPv4 source, counted in the mapped address:
				      * SLUICE_V4MAPPED_BITS + IPv4 prefix; 0 = one key for all */
	__u8 prefix6;		     /* key bits of an IPv6 source, 0 .. 128; 0 = one key for all */
	__u8 flags;		     /* enum sluice_policy_flag */
	__u8 mode;		     /* enum sluice_mode */
	__u8 on_agent_loss;	     /* enum sluice_fail, applied by the XDP program itself */
	__u8 src_set;		     /* 1 + bit of sluice_addr_val.sets the source needs; 0: any */
	__u8 dst_set;		     /* likewise for the destination */
	__u8 on_store_error;	     /* enum sluice_fail; the agent applies it (sluice_fail) */
	__u8 class;		     /* enum sluice_class, for status */
	__u8 scope;		     /* enum sluice_scope */
	__u8 reserved[1];
	char name[SLUICE_NAME_LEN]; /* NUL-terminated, for status without the agent */
	__u64 lease_max;	    /* cluster scope, cost units: the most one written lease lets
				     * the program spend past its reported, whatever its granted:
				     * burst + rate × SLUICE_LEASE_KERNEL_SYNCS sync intervals */
};
SLUICE_ASSERT_SIZE(struct sluice_policy, 112);
SLUICE_ASSERT_OFFSET(struct sluice_policy, name, 72);
SLUICE_ASSERT_OFFSET(struct sluice_policy, lease_max, 104);

/*
 * Key of the sluice_src and sluice_dst LPM tries: generation (8 bits) then
 * the 16-byte address (IPv4 mapped). prefixlen counts both.
 */
struct sluice_addr_key {
	__u32 prefixlen;
	__u8 gen;
	__u8 addr[SLUICE_ADDR_LEN];
} __attribute__((packed));
SLUICE_ASSERT_SIZE(struct sluice_addr_key, 21);

#define SLUICE_ADDR_KEY_BITS(addr_bits) (8 + (addr_bits))

enum sluice_addr_flag {
	SLUICE_ADDR_F_ALLOW = 1 << 0, /* sluice_src: an allowlisted source */
};

/* Value of sluice_src and sluice_dst: what the longest matching prefix means. */
struct sluice_addr_val {
	__u64 sets;  /* bit n: the address is in prefix set n (see sluice_policy.src_set) */
	__u32 flags; /* enum sluice_addr_flag */
	__u32 reserved;
};
SLUICE_ASSERT_SIZE(struct sluice_addr_val, 16);

/*
 * The classifier (bpf/classify.bpf.h): sluice_class maps a packet's service
 * — its TCP or UDP destination port, or its protocol when it has no ports —
 * to a slot of sluice_match, the list of every policy that may apply. Both
 * are arrays with a half per generation: gen × SLUICE_SVCS + service, gen
 * × SLUICE_MATCH_SLOTS + slot. user/policy/compile.c fills them from prefixes of
 * (protocol, port), longest first, as a trie would answer.
 */
#define SLUICE_PROTOS 256 /* IP protocol numbers */

enum sluice_svc_base {
	SLUICE_SVC_TCP = 0,					      /* + port */
	SLUICE_SVC_UDP = SLUICE_SVC_TCP + (1U << SLUICE_PORT_BITS),   /* + port */
	SLUICE_SVC_PROTO = SLUICE_SVC_UDP + (1U << SLUICE_PORT_BITS), /* + protocol */
	SLUICE_SVC_UNPARSED = SLUICE_SVC_PROTO + SLUICE_PROTOS, /* unparsed: charge, any protocol */
	SLUICE_SVCS,
};

/* Value of sluice_match: every policy that applies, most specific first. */
struct sluice_match {
	__u32 count;		      /* 1 .. SLUICE_MAX_LAYERS */
	__u32 ids[SLUICE_MAX_LAYERS]; /* policy ids */
};
SLUICE_ASSERT_SIZE(struct sluice_match, 36);

/* Bits of struct sluice_ctl.gen_flags[]: which lookups a generation needs. */
enum sluice_gen_flag {
	SLUICE_GEN_F_SRC = 1 << 0,     /* an allowlist or source prefix sets: look up sluice_src */
	SLUICE_GEN_F_DST = 1 << 1,     /* destination prefix sets: look up sluice_dst */
	SLUICE_GEN_F_STORE = 1 << 2,   /* cluster-scoped policies: look up sluice_fail */
	SLUICE_GEN_F_PRECISE = 1 << 3, /* a policy asked for the precise clock: read it for all */
	SLUICE_GEN_F_UNPARSED_CHARGE = 1 << 4, /* unparsed: charge (neither bit: drop) */
	SLUICE_GEN_F_UNPARSED_PASS = 1 << 5,   /* unparsed: pass */
	SLUICE_GEN_F_ORPHAN_PASS = 1 << 6,     /* fragments.orphan: pass (else drop) */
	SLUICE_GEN_F_EVENTS = 1 << 7, /* drops are sampled (events.h): read sluice_ev_rate */
};

/*
 * What the file says of a packet whose headers the program cannot finish
 * (`unparsed:`, docs/policy.md): an IP header it cannot read, more VLAN
 * tags than SLUICE_VLAN_MAX, or more IPv6 extension headers than
 * SLUICE_IPV6_EXT_MAX. Compiled into sluice_ctl.gen_flags.
 */
enum sluice_unparsed {
	SLUICE_UNPARSED_DROP = 0,   /* the default: nothing the kernel delivers escapes */
	SLUICE_UNPARSED_CHARGE = 1, /* every policy whose address sets match, any protocol */
	SLUICE_UNPARSED_PASS = 2,
	SLUICE_UNPARSED_MAX,
};

/* What the file says of a later fragment whose first is not tracked (`fragments: { orphan: }`). */
enum sluice_orphan {
	SLUICE_ORPHAN_DROP = 0, /* the default: its datagram is never delivered without a first */
	SLUICE_ORPHAN_PASS = 1,
	SLUICE_ORPHAN_MAX,
};

/* Where the program runs on its interface (struct sluice_ctl.attach; docs/decisions.md). */
enum sluice_attach {
	SLUICE_ATTACH_NONE = 0,	  /* not attached yet; asked for, it means auto: native, else tc */
	SLUICE_ATTACH_NATIVE = 1, /* XDP in the driver, before GRO: a frame is a wire packet */
	SLUICE_ATTACH_TC = 2,	  /* TC on clsact ingress, after GRO: an aggregate is charged
				   * as its segments */
	SLUICE_ATTACH_MAX,
};

/* Value of sluice_ctl, a one-element array written only by the agent. */
struct sluice_ctl {
	__u32 abi_version;	/* SLUICE_ABI_VERSION of whoever created the maps */
	__u32 active_gen;	/* the live half of sluice_policy, _match, _src, _dst */
	__u64 generation;	/* policy loads since the maps were created */
	__u64 heartbeat_ns;	/* bpf_ktime_get_ns() clock of the agent's last beat; 0 never */
	__u64 agent_timeout_ns; /* a beat older than this means the agent is lost; 0 never */
	__u32 gen_flags[SLUICE_POLICY_GENS]; /* enum sluice_gen_flag, per generation */
	__u32 agent_pid;		     /* the running agent, for `sluice reload`; 0 none */
	__u32 next_id;			     /* the next stable policy id to hand out */
	__u32 reload_seq;		     /* reload requests the agent has answered */
	__s32 reload_err; /* 0, or -errno of the last one (-EINVAL: a bad file) */
	__u32 attach;	  /* enum sluice_attach, written when the loader attaches */
	__u32 reserved;
};
SLUICE_ASSERT_SIZE(struct sluice_ctl, 64);
/* Every release put abi_version first: a loader reads it from a ctl of any ABI. */
SLUICE_ASSERT_OFFSET(struct sluice_ctl, abi_version, 0);

/*
 * Value of sluice_fail, indexed by policy id: what the agent keeps per
 * cluster-scoped policy — the fail mode a store fault put it in, and the
 * fleet share. Each node enforces rate/share with burst/share, so the fleet
 * admits the limit once, not share times: the increment is multiplied by
 * share and the tolerance stays. Written only by the agent, which keeps
 * increment × share within SLUICE_GCRA_INCR_MAX.
 */
struct sluice_fail_state {
	__u8 mode; /* enum sluice_fail; SLUICE_FAIL_NONE when the store is healthy */
	__u8 reserved[3];
	__u32 share;	/* cluster scope: live nodes the limit is shared by (kept through
			 * faults: the last known count); 0 or 1: not shared */
	__u64 since_ns; /* bpf_ktime_get_ns() clock of the last transition */
};
SLUICE_ASSERT_SIZE(struct sluice_fail_state, 16);

/*
 * The shared budget's kernel side (docs/shared-budget.md). A hot key of a
 * cluster-scoped policy spends a lease of the fleet's budget that the agent
 * got from the store. Every field has one writer: sluice_lease is written
 * only by the agent, as whole values; sluice_spend only by the XDP program,
 * by atomic operations (the agent creates entries zeroed and deletes them,
 * never updates them). Both are keyed like sluice_state.
 *
 * The XDP program admits a packet of cost c while now < expires,
 * spent + c <= granted, reported <= spent and spent + c - reported <=
 * sluice_policy.lease_max (a lease lets no more be spent than the fleet
 * could ever grant one node, whatever the agent wrote), counting c into
 * spent by compare-and-swap, so
 * concurrent CPUs never spend more than granted in total; a packet it
 * denies adds c to denied (local demand the lease did not cover). With no
 * live lease the key is cold: the policy's share (sluice_fail_state.share)
 * decides, or with SLUICE_POLICY_F_COLD_STRICT the packet is dropped.
 */
struct sluice_lease {
	__u64 granted;	       /* units: spend while spent + cost <= granted (both only grow) */
	__u64 expires;	       /* ticks (gcra.h): spend nothing from then on; set before the
				* store's own expiry of the lease */
	__u64 reported;	       /* agent's: spent as last reported to the store */
	__u64 seen;	       /* agent's: spent + denied at the last sync, for the demand */
	__u64 want;	       /* agent's: units asked to hold at the last sync */
	__u64 topup_seen;      /* agent's: spent + denied at the last top-up */
	__u32 idle;	       /* agent's: consecutive syncs without local demand */
	__u32 flags;	       /* agent's: enum sluice_lease_flag */
	struct sluice_key key; /* the entry's own key: see lease_live() in the program */
	__u32 reserved;
};
SLUICE_ASSERT_SIZE(struct sluice_lease, 80);

enum sluice_lease_flag {
	SLUICE_LEASE_F_FROZEN = 1 << 0,	  /* idle: granted lowered to spent, no call */
	SLUICE_LEASE_F_RELEASED = 1 << 1, /* frozen, and what was left handed back */
	SLUICE_LEASE_F_STARVED = 1 << 2,  /* the last answer held less than wanted */
};

struct sluice_spend {
	__u64 spent;  /* units admitted from the lease */
	__u64 denied; /* units denied for want of lease */
};
SLUICE_ASSERT_SIZE(struct sluice_spend, 16);

/*
 * Value of sluice_hot: a key of a cluster-scoped policy without a live
 * lease whose local demand crossed the hot threshold (half its share's
 * burst used, or a drop; in strict mode, any packet). Written by the XDP
 * program (create only), read and deleted by the agent.
 */
struct sluice_hot {
	__u64 since; /* ticks (gcra.h) of the first such packet */
};
SLUICE_ASSERT_SIZE(struct sluice_hot, 8);

struct sluice_counter {
	__u64 pkts;
	__u64 bytes; /* L2 frame bytes, no FCS */
};

/* Per-policy counters, a per-CPU array indexed by policy id. */
enum sluice_pstat {
	SLUICE_PSTAT_PASSED = 0,      /* admitted by this policy and by every other that applied */
	SLUICE_PSTAT_DROPPED = 1,     /* denied by this policy, and dropped */
	SLUICE_PSTAT_SHADOW = 2,      /* a shadow policy would have dropped it */
	SLUICE_PSTAT_FAIL_OPEN = 3,   /* passed unlimited because the policy failed open */
	SLUICE_PSTAT_FAIL_CLOSED = 4, /* dropped because the policy failed closed */
	SLUICE_PSTAT_DEGRADED = 5,    /* decided by the local bound, passed or dropped */
	SLUICE_PSTAT_LEASED = 6, /* decided by a lease of the shared budget, passed or dropped */
	SLUICE_PSTAT_MAX,
};

struct sluice_pstats {
	struct sluice_counter c[SLUICE_PSTAT_MAX];
};

/* Interface-wide counters, a one-element per-CPU array. */
enum sluice_total {
	SLUICE_TOTAL_PASSED = 0,   /* every XDP_PASS */
	SLUICE_TOTAL_DROPPED = 1,  /* every XDP_DROP */
	SLUICE_TOTAL_NOT_IP = 2,   /* neither IPv4 nor IPv6 (ARP, ...): no policy applies, passed */
	SLUICE_TOTAL_NO_PORTS = 3, /* IP parsed, ports not (a truncated TCP/UDP header that
				    * is no first fragment): classified by protocol only */
	SLUICE_TOTAL_NO_MATCH = 4, /* no policy applies: passed */
	SLUICE_TOTAL_STATE_ERR = 5,	/* a new key could not be stored: passed */
	SLUICE_TOTAL_CAS_EXHAUSTED = 6, /* SLUICE_CAS_RETRIES lost races on one key: dropped */
	SLUICE_TOTAL_ALLOWED = 7,	/* an allowlisted source: passed, never limited */
	SLUICE_TOTAL_AGENT_LOST = 8,	/* decided while the agent's heartbeat was stale */
	SLUICE_TOTAL_UNPARSED_DROP = 9, /* headers not finished (enum sluice_unparsed): dropped */
	SLUICE_TOTAL_UNPARSED_CHARGE = 10, /* likewise, charged to every policy that may apply */
	SLUICE_TOTAL_UNPARSED_PASS = 11,   /* likewise, passed */
	SLUICE_TOTAL_FRAGMENTS = 12,	   /* a later fragment: followed its first (frag.h) */
	SLUICE_TOTAL_FRAG_ORPHAN = 13,	   /* a later fragment whose first is not tracked:
					    * fragments.orphan decides */
	SLUICE_TOTAL_FRAG_TINY = 14,	   /* a first fragment cut short (RFC 1858, 7112), or
					    * IPv4 TCP at offset 1: dropped */
	SLUICE_TOTAL_BANNED = 15,	   /* a source on the ban list (sluice_ban): dropped */
	SLUICE_TOTAL_MAX,
};

struct sluice_totals {
	struct sluice_counter c[SLUICE_TOTAL_MAX];
};

/*
 * The ban list (docs/bans.md): sources dropped after the allowlist and
 * before every policy, written by `sluice ban` and `sluice unban` with or
 * without an agent. A ban of one address (/32, /128) is in sluice_ban_host,
 * a hash, so a packet's lookup costs the same however many there are; a
 * ban of a shorter prefix is in sluice_ban, an LPM trie, which the program
 * reads only while it holds one (its walk grows with the trie's depth).
 * Both are keyed by struct sluice_addr_key with gen always 0 (bans have no
 * generation): prefixlen is SLUICE_ADDR_KEY_BITS() of the prefix's bits in
 * the mapped address, SLUICE_ADDR_KEY_BITS(SLUICE_ADDR_BITS) in the hash.
 */
#define SLUICE_BAN_ENTRIES    65536U /* bans per interface, both maps, expired ones included */
#define SLUICE_BAN_GEN	      0	     /* sluice_addr_key.gen of every ban */
#define SLUICE_BAN_REASON_LEN 40     /* reason including the terminating NUL */
/* The longest --for: a difference of ticks (gcra.h) must stay below 2^63. */
#define SLUICE_BAN_FOR_MAX_NS (1ULL << 54) /* 208 days */

/* Value of sluice_ban and sluice_ban_host. */
struct sluice_ban {
	__u64 expires_ns; /* bpf_ktime_get_ns() clock (CLOCK_MONOTONIC): from then on the
			   * ban drops nothing; 0 never expires */
	__u64 since_ns;	  /* same clock: when the ban was (last) written */
	__u64 drops_pkts; /* packets it dropped; the program adds atomically */
	char reason[SLUICE_BAN_REASON_LEN]; /* NUL-terminated, may be empty */
};
SLUICE_ASSERT_SIZE(struct sluice_ban, 64);

/*
 * Value of sluice_ban_gate, a one-element array: which ban maps the program
 * looks up at all. Only the ban commands write it, under a lock on the pin
 * root, never the agent (which rewrites sluice_ctl whole and would lose a
 * concurrent write there).
 */
struct sluice_ban_gate {
	__u32 hosts;	/* entries in sluice_ban_host, expired ones included; 0: skip it */
	__u32 prefixes; /* entries in sluice_ban, likewise */
};
SLUICE_ASSERT_SIZE(struct sluice_ban_gate, 8);

/* Maps, by the index user space uses; the name is also the pin file. */
enum sluice_map {
	SLUICE_MAP_STATE = 0,
	SLUICE_MAP_POLICY,
	SLUICE_MAP_MATCH,
	SLUICE_MAP_STATS,
	SLUICE_MAP_TOTALS,
	SLUICE_MAP_CTL,
	SLUICE_MAP_SRC,
	SLUICE_MAP_DST,
	SLUICE_MAP_FAIL,
	SLUICE_MAP_LEASE,
	SLUICE_MAP_SPEND,
	SLUICE_MAP_HOT,
	SLUICE_MAP_CLASS,
	SLUICE_MAP_BAN,
	SLUICE_MAP_BAN_GATE,
	SLUICE_MAP_BAN_HOST,
	SLUICE_MAP_EVENTS, /* the ring buffer of sampled drops (events.h) */
	SLUICE_MAP_EVENT_RATE,
	SLUICE_MAP_EVENT_STATS,
	SLUICE_MAP_MAX,
};

/* The ABIs that appended the ban maps and the event maps: an older set pins those before them. */
#define SLUICE_ABI_BANS	  9
#define SLUICE_ABI_EVENTS 10

/* How many maps, the first of enum sluice_map, a set of ABI @abi pins. */
static inline int sluice_maps_of_abi(__u32 abi)
{
	if (abi >= SLUICE_ABI_EVENTS)
		return SLUICE_MAP_MAX;
	return abi >= SLUICE_ABI_BANS ? SLUICE_MAP_EVENTS : SLUICE_MAP_BAN;
}

#ifndef __bpf__
/* The only place map names appear as strings; tests check it against the object. */
static const char *const sluice_map_names[SLUICE_MAP_MAX] = {
	[SLUICE_MAP_STATE] = "sluice_state",
	[SLUICE_MAP_POLICY] = "sluice_policy",
	[SLUICE_MAP_MATCH] = "sluice_match",
	[SLUICE_MAP_STATS] = "sluice_stats",
	[SLUICE_MAP_TOTALS] = "sluice_totals",
	[SLUICE_MAP_CTL] = "sluice_ctl",
	[SLUICE_MAP_SRC] = "sluice_src",
	[SLUICE_MAP_DST] = "sluice_dst",
	[SLUICE_MAP_FAIL] = "sluice_fail",
	[SLUICE_MAP_LEASE] = "sluice_lease",
	[SLUICE_MAP_SPEND] = "sluice_spend",
	[SLUICE_MAP_HOT] = "sluice_hot",
	[SLUICE_MAP_CLASS] = "sluice_class",
	[SLUICE_MAP_BAN] = "sluice_ban",
	[SLUICE_MAP_BAN_GATE] = "sluice_ban_gate",
	[SLUICE_MAP_BAN_HOST] = "sluice_ban_host",
	[SLUICE_MAP_EVENTS] = "sluice_events",
	[SLUICE_MAP_EVENT_RATE] = "sluice_ev_rate",
	[SLUICE_MAP_EVENT_STATS] = "sluice_ev_stats",
};
#endif

/*
 * The program's own maps (bpf/maps.bpf.h): per-CPU caches and scratch, and
 * the datagram table (an LRU hash every CPU shares). Not pinned, so a new
 * program starts them empty, and nothing but the program reads them.
 */
enum sluice_cache {
	SLUICE_CACHE_CLOCK = 0,
	SLUICE_CACHE_DENY,
	SLUICE_CACHE_DENY_BITS,
	SLUICE_CACHE_FRAGS,
	SLUICE_CACHE_FRAG_TMP,
	SLUICE_CACHE_WALK,
	SLUICE_CACHE_EVENT_TICK,
	SLUICE_CACHE_MAX,
};

#ifndef __bpf__
static const char *const sluice_cache_names[SLUICE_CACHE_MAX] = {
	[SLUICE_CACHE_CLOCK] = "sluice_clock",	       [SLUICE_CACHE_DENY] = "sluice_deny",
	[SLUICE_CACHE_DENY_BITS] = "sluice_deny_bits", [SLUICE_CACHE_FRAGS] = "sluice_frags",
	[SLUICE_CACHE_FRAG_TMP] = "sluice_frag_tmp",   [SLUICE_CACHE_WALK] = "sluice_walk",
	[SLUICE_CACHE_EVENT_TICK] = "sluice_ev_tick",
};
#endif

#endif /* SLUICE_ABI_H */
