/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The control map, sluice_ctl: the live generation of the policy maps and
 * what it needs looked up, what the file says of packets the program
 * cannot parse whole, the agent's heartbeat, and where the program is
 * attached.
 *
 * Part of the ABI: abi.h says how it may change.
 */
#ifndef SLUICE_ABI_CTL_H
#define SLUICE_ABI_CTL_H

#include "policy.h"

/* How far the parser follows headers (bpf/parse.bpf.h); past that a packet is unparsed. */
#define SLUICE_VLAN_MAX	    2  /* 802.1Q / 802.1ad tags parsed */
#define SLUICE_IPV6_EXT_MAX 16 /* IPv6 extension headers followed; more: unparsed */

/* The clock a generation reads unless SLUICE_GEN_F_PRECISE: the coarse one (bpf/limit.bpf.h). */
#define SLUICE_COARSE_LAG_TICKS 2 /* the coarse clock's lag varies by this many ticks */

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

#endif /* SLUICE_ABI_CTL_H */
