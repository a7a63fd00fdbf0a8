/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The counters the program keeps and user space sums over the CPUs: per
 * policy (sluice_stats) and per interface (sluice_totals).
 *
 * Part of the ABI: abi.h says how it may change.
 */
#ifndef SLUICE_ABI_STATS_H
#define SLUICE_ABI_STATS_H

#include "compiler.h"

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

#endif /* SLUICE_ABI_STATS_H */
