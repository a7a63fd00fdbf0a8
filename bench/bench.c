// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sluice-bench: the XDP program's cost per packet, measured with
 * BPF_PROG_TEST_RUN beside baselines from the same run: an empty program
 * (the floor), a program doing one LRU-hash lookup keyed by the source (the
 * practical limit of a keyed limiter), and a front program that rotates the
 * source address and tail-calls sluice or the empty program, for rows with
 * many distinct sources; rows under other policy files (one, eight
 * layered, a thousand, with and without a 10^4-prefix allowlist) and rows
 * run by two threads on two CPUs at once; then the kernel memory of each
 * map. It reports and asserts nothing about speed; it
 * does check that every row measured what its label says (verdicts, and
 * sluice's own counters), and exits 1 when one did not.
 *
 * sluice is loaded through the test harness (loader.c into a private pin
 * root, policy through policy.c, compile.c and maps.c), so the benchmark
 * runs the agent's path. Not here: any assertion on time (CONTRIBUTING.md, Tests).
 */
#define _GNU_SOURCE
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <getopt.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "sluice.skel.h"
#include "lib/harness.h"
#include "base/addr.h"
#include "base/log.h"
#include "kernel/bans.h"
#include "policy/policy.h"
#include "rotate.h"

#define BENCH_ROUNDS_DEFAULT	5
#define BENCH_ROUNDS_MAX	1000
#define BENCH_REPEAT_DEFAULT	1000000U
#define BENCH_MAX_KEYS		SLUICE_STATE_ENTRIES_DEFAULT /* sluice_state as `sluice run` sizes it */
#define BENCH_WARMUP_MAX_PKTS	(2ULL * BENCH_MAX_KEYS)	     /* fills sluice_state, then evicts */
#define BENCH_SOURCES_FEW	1000U
#define BENCH_SOURCES_MID	100000U
#define BENCH_SOURCES_DENY_MISS 10000U /* > the deny cache's 2^13 slots: ~70 % miss it */
#define BENCH_SOURCES_MANY	1000000U
#define BENCH_SOURCES_EVICT	10000000U   /* > BENCH_MAX_KEYS: every packet inserts and evicts */
#define BENCH_ROTATE_BASE_HOST	(10U << 24) /* 10.0.0.0: BENCH_SOURCES_EVICT fit in 10/8 */
#define BENCH_SPRAY_PORTS	65536U	    /* every UDP destination port, from 0 */
#define BENCH_THREADS_MAX	2	    /* rows run by this many threads on as many CPUs */
#define BENCH_LAYERS		SLUICE_MAX_LAYERS /* policies on one port in the layered rows */
#define BENCH_MANY_POLICIES	1000U
#define BENCH_MANY_PORT_FIRST	10000 /* the other policies of the 1000: one port each */
#define BENCH_ALLOW_PREFIXES	10000U
#define BENCH_BANS		10000U /* the ban list of SCEN_BAN_MANY, _PREFIXES */
#define BENCH_BAN_PREFIX_BITS	(SLUICE_V4MAPPED_BITS + 24) /* SCEN_BAN_PREFIXES: /24s */
#define BENCH_SAMPLE_N		1000 /* #30: a sampled drop's row samples 1 in this many */
#define BENCH_FDINFO_LINE	128
#define BENCH_LAYER_DROP_PREFIX 24 /* shorter than /32: udp-drop is the last layer */
#define NSEC_PER_SEC_F		1e9
/* #32's targets: a path's ns over the floor, at most this many times its parts' */
#define TARGET_PARTS_X	   1.3	/* a pass, 8 layers that admit: no match + key steps */
#define TARGET_ALLOWED_X   1.2	/* an allowlisted source's pass: a pass */
#define TARGET_STEP_MANY_X 1.3	/* key step at 10^6 sources: lookup+insert over as many */
#define TARGET_PASS_MANY_X 1.15 /* a pass at 10^6 sources: the key step over as many */
#define TARGET_SHARED_X	   1.15 /* 2 CPUs passing one key: distinct keys */
#define TARGET_SAMPLED_X   1.05 /* #30: a drop sampled 1 in 1000: a cached drop */
#define TARGET_PATH_WIDTH  28	/* the targets' columns: the longest label fits */
#define TARGET_PARTS_WIDTH 32
#define LABEL_WIDTH	   40
#define CHECK_LEN	   96
#define CPU_MODEL_LEN	   128
#define CMDLINE_LEN	   1024

#define SPORT	   40000
#define DPORT_PASS 80 /* the policies with a huge burst: every packet passes */
#define DPORT_DROP 53 /* the policies with a burst of 1 at 1/h: all but the first drop */
#define DPORT_NONE 9  /* no policy matches */
#define RATE_PASS  "10000000/s"
#define BURST_PASS "100000000"
#define RATE_DROP  "1/h"
#define BURST_DROP "1"
#define SRC_V4	   "192.0.2.1"
#define SRC_V4_B   "192.0.2.2"	/* the second thread's source in the distinct-key rows */
#define SRC_V4_OK  "192.0.2.16" /* the first of the allowlist's /32s, next to SRC_V4 */
#define DST_V4	   "198.51.100.53"
#define SRC_V6	   "2001:db8::1"
#define DST_V6	   "2001:db8:ffff::53"

static const __u8 mac_dst[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x02 };
static const __u8 mac_src[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x01 };

static volatile sig_atomic_t stop_requested;

/* The programs a row runs; the first three are the files in --bench-dir. */
enum bench_prog {
	PROG_EMPTY = 0,
	PROG_LOOKUP,
	PROG_ROTATE,
	PROG_LOOKUP_INSERT,
	PROG_STEP,
	PROG_STEP_LAYERS,
	PROG_SLUICE,
	PROG_MAX,
};

#define BENCH_OBJS PROG_SLUICE /* bench objects: every prog before sluice */

static const char *const prog_files[BENCH_OBJS] = {
	[PROG_EMPTY] = "empty.bpf.o",
	[PROG_LOOKUP] = "lookup.bpf.o",
	[PROG_ROTATE] = "rotate.bpf.o",
	[PROG_LOOKUP_INSERT] = "lookup.bpf.o", /* an object of its own: its own table */
	[PROG_STEP] = "step.bpf.o",
	[PROG_STEP_LAYERS] = "step.bpf.o",
};

static const char *const prog_names[BENCH_OBJS] = {
	[PROG_EMPTY] = "bench_empty",
	[PROG_LOOKUP] = "bench_lookup",
	[PROG_ROTATE] = "bench_rotate",
	[PROG_LOOKUP_INSERT] = "bench_lookup_insert",
	[PROG_STEP] = "bench_step",		  /* one key */
	[PROG_STEP_LAYERS] = "bench_step_layers", /* 8 keys, /32 to /25 */
};

enum bench_flow {
	FLOW_V4_UDP = 0,
	FLOW_V4_SYN,
	FLOW_V6_UDP,
	FLOW_V4_ACK,
	FLOW_V4_UDP_B,
	FLOW_V4_ALLOWED,
	FLOW_V4_FRAG_FIRST,
	FLOW_V4_FRAG_LATER,
	FLOW_MAX,
};

/* Which part of a fragmented UDP datagram a flow's packet is (#11). */
enum bench_frag {
	FRAG_NONE = 0,
	FRAG_FIRST, /* its first BENCH_FRAG_BYTES: tracked for the rest */
	FRAG_LATER, /* what follows: follows the first's verdict */
};

#define BENCH_FRAG_PAYLOAD 1472 /* a datagram of a full 1500-byte IPv4 packet */
#define BENCH_FRAG_BYTES   1024 /* its first fragment's share, a multiple of 8 */

struct flow {
	const char *src, *dst;
	__be32 tcp_flags; /* TCP_FLAG_* of a TCP segment; 0: UDP */
	enum bench_frag frag;
};

static const struct flow flows[FLOW_MAX] = {
	[FLOW_V4_UDP] = { SRC_V4, DST_V4, 0 },
	[FLOW_V4_SYN] = { SRC_V4, DST_V4, TCP_FLAG_SYN },
	[FLOW_V6_UDP] = { SRC_V6, DST_V6, 0 },
	[FLOW_V4_ACK] = { SRC_V4, DST_V4, TCP_FLAG_ACK },
	[FLOW_V4_UDP_B] = { SRC_V4_B, DST_V4, 0 },
	[FLOW_V4_ALLOWED] = { SRC_V4_OK, DST_V4, 0 },
	[FLOW_V4_FRAG_FIRST] = { SRC_V4, DST_V4, 0, FRAG_FIRST },
	[FLOW_V4_FRAG_LATER] = { SRC_V4, DST_V4, 0, FRAG_LATER },
};

/* The policy file a row runs under; bench__run_row applies it as a reload would. */
enum bench_scen {
	SCEN_BASE = 0,	    /* udp-pass, udp-drop, syn-pass, syn-drop: one per port and proto */
	SCEN_ONE,	    /* udp-drop alone */
	SCEN_LAYERED,	    /* port 53: 7 pass layers, then udp-drop; port 80: 8 pass layers */
	SCEN_MANY,	    /* udp-drop and 999 more, each on its own port */
	SCEN_ALLOW_ONE,	    /* SCEN_ONE with BENCH_ALLOW_PREFIXES allowlisted */
	SCEN_ALLOW_LAYERED, /* SCEN_LAYERED with BENCH_ALLOW_PREFIXES allowlisted */
	SCEN_ONE_PRECISE,   /* SCEN_ONE with clock: precise */
	SCEN_BAN_ONE,	    /* SCEN_ONE with SRC_V4 banned */
	SCEN_BAN_MANY,	    /* SCEN_ONE with SRC_V4 and BENCH_BANS - 1 more /32s banned */
	SCEN_BAN_PREFIXES,  /* SCEN_ONE with SRC_V4's /24 and BENCH_BANS - 1 more /24s banned */
	SCEN_SPRAY,	    /* udp-any-drop alone: every UDP port, keyed by source */
	SCEN_ONE_SAMPLED,   /* SCEN_ONE with events: { sample: 1/BENCH_SAMPLE_N } (#30) */
	SCEN_MAX,
};

enum bench_row_id {
	ROW_EMPTY = 0,
	ROW_LOOKUP_V4_UDP,
	ROW_LOOKUP_V4_SYN,
	ROW_LOOKUP_V6_UDP,
	ROW_STEP_V4_UDP, /* before the pass rows: their xref reference */
	ROW_STEP_LAYERED,
	ROW_NONE_V4_UDP,
	ROW_ACK_V4,
	ROW_PASS_V4_UDP,
	ROW_PASS_V4_SYN,
	ROW_PASS_V6_UDP,
	ROW_DROP_V4_UDP,
	ROW_DROP_V4_SYN,
	ROW_DROP_V6_UDP,
	ROW_FRAG_FIRST,
	ROW_FRAG_LATER,
	ROW_ROT_EMPTY_1,
	ROW_ROT_PASS_1,
	ROW_ROT_EMPTY_FEW,
	ROW_ROT_PASS_FEW,
	ROW_ROT_DROP_FEW,
	ROW_ROT_LOOKUP_MISS, /* before the drop rows: their xref reference */
	ROW_ROT_DROP_MISS,
	ROW_ROT_DROP_LAYERED,
	ROW_ROT_EMPTY_MID,
	ROW_ROT_PASS_MID,
	ROW_ROT_LOOKUP_MID,
	ROW_ROT_DROP_MID,
	ROW_ROT_EMPTY_MANY,
	ROW_ROT_LOOKUP_MANY, /* before the pass row: its xref reference */
	ROW_ROT_STEP_MANY,
	ROW_ROT_PASS_MANY,
	ROW_ROT_EMPTY_EVICT,
	ROW_ROT_LOOKUP_EVICT,
	ROW_ROT_PASS_EVICT,
	ROW_SPRAY_EMPTY,
	ROW_SPRAY_DROP,
	ROW_MT_EMPTY,
	ROW_MT_LOOKUP,
	ROW_MT_DROP_SAME,
	ROW_MT_DROP_DISTINCT,
	ROW_MT_PASS_SAME,
	ROW_MT_PASS_DISTINCT,
	ROW_POL_ONE,
	ROW_POL_PRECISE,
	ROW_POL_SAMPLED,
	ROW_POL_MANY,
	ROW_POL_LAYERED_DROP,
	ROW_POL_LAYERED_PASS,
	ROW_ALLOW_ONE,
	ROW_ALLOW_LAYERED,
	ROW_ALLOWED,
	ROW_BAN_ONE,
	ROW_BAN_MANY,
	ROW_BAN_MISS,
	ROW_BAN_PREFIXES,
	ROW_MAX,
};

struct bench_row {
	const char *group; /* heading printed before the row, or NULL */
	const char *label;
	enum bench_prog prog; /* what BPF_PROG_TEST_RUN runs */
	enum bench_prog tail; /* PROG_ROTATE rows: what it tail-calls */
	enum bench_flow flow;
	__u16 dport;
	__u32 sources;		   /* PROG_ROTATE rows: distinct sources */
	__u32 ports;		   /* PROG_ROTATE rows: 0, or distinct destination ports */
	int verdict;		   /* expected XDP verdict of every packet */
	const char *policy;	   /* sluice rows: the policy that counts every packet */
	enum sluice_pstat counted; /* ... as this */
	enum bench_row_id floor;   /* subtracted: the same path without sluice */
	enum bench_row_id lookup;  /* one lookup of the same family */
	enum bench_row_id ref;	   /* xref divides by this row's -floor; itself: none */
	enum bench_scen scen;	   /* the policy file it runs under */
	__u32 threads;		   /* 0 or 1: one thread; else this many, one per CPU */
	enum bench_flow flow2;	   /* the other threads' flow (same key: the same flow) */
	int cas_may_drop;	   /* 2 CPUs on a key: SLUICE_CAS_RETRIES lost races drop */
	int fresh_keys;		   /* its tail's table emptied before and after the row */
};

#define LOOKUP_ROW(id, what, fl)                                                                   \
	[id] = { .label = "one LRU lookup, " what,                                                 \
		 .prog = PROG_LOOKUP,                                                              \
		 .flow = fl,                                                                       \
		 .dport = DPORT_PASS,                                                              \
		 .verdict = XDP_DROP,                                                              \
		 .floor = ROW_EMPTY,                                                               \
		 .lookup = id,                                                                     \
		 .ref = id }
#define SLUICE_ROW(id, grp, what, fl, port, verd, pol, cnt, lk)                                    \
	SLUICE_ROW_REF(id, grp, what, fl, port, verd, pol, cnt, lk, id)
#define SLUICE_ROW_REF(id, grp, what, fl, port, verd, pol, cnt, lk, ref_id)                        \
	[id] = { .group = grp,                                                                     \
		 .label = what,                                                                    \
		 .prog = PROG_SLUICE,                                                              \
		 .flow = fl,                                                                       \
		 .dport = port,                                                                    \
		 .verdict = verd,                                                                  \
		 .policy = pol,                                                                    \
		 .counted = cnt,                                                                   \
		 .floor = ROW_EMPTY,                                                               \
		 .lookup = lk,                                                                     \
		 .ref = ref_id }
/*
 * The key step (bench/step.bpf.c), program @pr, on IPv4 UDP; xref vs
 * @ref_id. What each policy that admits a packet costs at least. Not a
 * sluice row: its keys are in a table of its own.
 */
#define STEP_ROW(id, what, pr, ref_id)                                                             \
	[id] = { .label = what,                                                                    \
		 .prog = pr,                                                                       \
		 .flow = FLOW_V4_UDP,                                                              \
		 .dport = DPORT_PASS,                                                              \
		 .verdict = XDP_PASS,                                                              \
		 .floor = ROW_EMPTY,                                                               \
		 .lookup = ROW_LOOKUP_V4_UDP,                                                      \
		 .ref = ref_id }
/*
 * rotate -> sluice at @n sources to @port, every packet @verd and counted by
 * @pol as @cnt, under policy file @sc; its floor is rotate -> empty at the
 * same @n.
 */
#define ROTATE_SLUICE_ROW(id, empty_id, verb, what, n, port, verd, pol, cnt, ref_id)               \
	ROTATE_SLUICE_ROW_SCEN(id, empty_id, verb, what, n, port, verd, pol, cnt, ref_id, SCEN_BASE)
#define ROTATE_SLUICE_ROW_SCEN(id, empty_id, verb, what, n, port, verd, pol, cnt, ref_id, sc)      \
	[id] = { .label = "rotate->sluice " verb ", " what,                                        \
		 .prog = PROG_ROTATE,                                                              \
		 .tail = PROG_SLUICE,                                                              \
		 .flow = FLOW_V4_UDP,                                                              \
		 .dport = port,                                                                    \
		 .sources = n,                                                                     \
		 .verdict = verd,                                                                  \
		 .policy = pol,                                                                    \
		 .counted = cnt,                                                                   \
		 .floor = empty_id,                                                                \
		 .lookup = ROW_LOOKUP_V4_UDP,                                                      \
		 .ref = ref_id,                                                                    \
		 .scen = sc,                                                                       \
		 .fresh_keys = (n) >= BENCH_SOURCES_MANY }
/*
 * A row of rotate -> @tl (not sluice) over @n sources, every packet
 * dropped: its floor is @empty_id, rotate -> empty at the same @n.
 */
#define ROTATE_BASE_ROW(id, grp, what, tl, n, empty_id)                                            \
	ROTATE_TAIL_ROW(id, grp, what, tl, n, empty_id, XDP_DROP, id, 0)
/*
 * Any row of rotate -> @tl over @n sources, every packet @verd; xref vs
 * @ref_id; @fresh: @tl's table emptied before and after the row.
 */
#define ROTATE_TAIL_ROW(id, grp, what, tl, n, empty_id, verd, ref_id, fresh)                       \
	[id] = { .group = grp,                                                                     \
		 .label = what,                                                                    \
		 .prog = PROG_ROTATE,                                                              \
		 .tail = tl,                                                                       \
		 .flow = FLOW_V4_UDP,                                                              \
		 .dport = DPORT_PASS,                                                              \
		 .sources = n,                                                                     \
		 .verdict = verd,                                                                  \
		 .floor = empty_id,                                                                \
		 .lookup = ROW_LOOKUP_V4_UDP,                                                      \
		 .ref = ref_id,                                                                    \
		 .fresh_keys = fresh }
#define ROTATE_ROWS(grp, empty_id, id, what, n)                                                    \
	ROTATE_ROWS_REF(grp, empty_id, id, what, n, ROW_ROT_PASS_1)
#define ROTATE_ROWS_REF(grp, empty_id, id, what, n, ref_id)                                        \
	ROTATE_BASE_ROW(empty_id, grp, "rotate->empty, " what, PROG_EMPTY, n, empty_id),           \
		ROTATE_SLUICE_ROW(id, empty_id, "pass", what, n, DPORT_PASS, XDP_PASS, "udp-pass", \
				  SLUICE_PSTAT_PASSED, ref_id)
/*
 * One LRU lookup per packet over @n sources, inserting on a miss (as
 * sluice's key lookup does): what a keyed limiter cannot go below at that
 * table size. Pass rows at the same @n divide by it (xref).
 */
#define ROTATE_LOOKUP_ROW(id, empty_id, what, n)                                                   \
	ROTATE_TAIL_ROW(id, NULL, "rotate->lookup+insert, " what, PROG_LOOKUP_INSERT, n, empty_id, \
			XDP_DROP, id, (n) >= BENCH_SOURCES_MANY)
/*
 * @n sources over the drop limit: those the deny cache holds (it has 2^13
 * slots per CPU) drop from it, the rest take the full path. xref: vs @ref_id.
 */
#define ROTATE_DROP_ROW(id, empty_id, what, n, ref_id)                                             \
	ROTATE_SLUICE_ROW(id, empty_id, "drop", what, n, DPORT_DROP, XDP_DROP, "udp-drop",         \
			  SLUICE_PSTAT_DROPPED, ref_id)
/* Two threads on two CPUs at once: IPv4 UDP on the first, @fl2 on the second. */
#define MT_ROW(id, what, port, fl2, verd, pol, cnt, one_cpu, cas)                                  \
	[id] = { .label = what,                                                                    \
		 .prog = PROG_SLUICE,                                                              \
		 .flow = FLOW_V4_UDP,                                                              \
		 .flow2 = fl2,                                                                     \
		 .dport = port,                                                                    \
		 .verdict = verd,                                                                  \
		 .policy = pol,                                                                    \
		 .counted = cnt,                                                                   \
		 .floor = ROW_MT_EMPTY,                                                            \
		 .lookup = ROW_LOOKUP_V4_UDP,                                                      \
		 .ref = one_cpu,                                                                   \
		 .threads = BENCH_THREADS_MAX,                                                     \
		 .cas_may_drop = cas }
/* One thread under policy file @sc; xref: vs one policy's drop. */
#define POL_ROW(id, grp, what, sc, fl, port, verd, pol, cnt)                                       \
	POL_ROW_REF(id, grp, what, sc, fl, port, verd, pol, cnt, ROW_POL_ONE)
#define POL_ROW_REF(id, grp, what, sc, fl, port, verd, pol, cnt, ref_id)                           \
	[id] = { .group = grp,                                                                     \
		 .label = what,                                                                    \
		 .prog = PROG_SLUICE,                                                              \
		 .flow = fl,                                                                       \
		 .dport = port,                                                                    \
		 .verdict = verd,                                                                  \
		 .policy = pol,                                                                    \
		 .counted = cnt,                                                                   \
		 .floor = ROW_EMPTY,                                                               \
		 .lookup = ROW_LOOKUP_V4_UDP,                                                      \
		 .ref = ref_id,                                                                    \
		 .scen = sc }

static const struct bench_row rows[ROW_MAX] = {
	[ROW_EMPTY] = { .group = "baselines (floor: the empty program)",
			.label = "empty: return XDP_DROP",
			.prog = PROG_EMPTY,
			.flow = FLOW_V4_UDP,
			.dport = DPORT_PASS,
			.verdict = XDP_DROP,
			.floor = ROW_EMPTY,
			.lookup = ROW_LOOKUP_V4_UDP,
			.ref = ROW_EMPTY },
	LOOKUP_ROW(ROW_LOOKUP_V4_UDP, "IPv4 UDP", FLOW_V4_UDP),
	LOOKUP_ROW(ROW_LOOKUP_V4_SYN, "IPv4 TCP SYN", FLOW_V4_SYN),
	LOOKUP_ROW(ROW_LOOKUP_V6_UDP, "IPv6 UDP", FLOW_V6_UDP),
	/* #16: the pass rows beside the least their policies cost (xref: vs one step). */
	STEP_ROW(ROW_STEP_V4_UDP, "key step, IPv4 UDP", PROG_STEP, ROW_STEP_V4_UDP),
	STEP_ROW(ROW_STEP_LAYERED, "8 key steps, /32 to /25, IPv4 UDP", PROG_STEP_LAYERS,
		 ROW_STEP_V4_UDP),
	SLUICE_ROW(ROW_NONE_V4_UDP, "sluice, one source (floor: empty)",
		   "no policy matches, IPv4 UDP", FLOW_V4_UDP, DPORT_NONE, XDP_PASS, NULL,
		   SLUICE_PSTAT_PASSED, ROW_LOOKUP_V4_UDP),
	SLUICE_ROW(ROW_ACK_V4, NULL, "TCP ACK, only a SYN policy matches", FLOW_V4_ACK, DPORT_PASS,
		   XDP_PASS, NULL, SLUICE_PSTAT_PASSED, ROW_LOOKUP_V4_SYN),
	SLUICE_ROW_REF(ROW_PASS_V4_UDP, NULL, "under limit (pass), IPv4 UDP", FLOW_V4_UDP,
		       DPORT_PASS, XDP_PASS, "udp-pass", SLUICE_PSTAT_PASSED, ROW_LOOKUP_V4_UDP,
		       ROW_STEP_V4_UDP),
	SLUICE_ROW(ROW_PASS_V4_SYN, NULL, "under limit (pass), IPv4 TCP SYN", FLOW_V4_SYN,
		   DPORT_PASS, XDP_PASS, "syn-pass", SLUICE_PSTAT_PASSED, ROW_LOOKUP_V4_SYN),
	SLUICE_ROW(ROW_PASS_V6_UDP, NULL, "under limit (pass), IPv6 UDP", FLOW_V6_UDP, DPORT_PASS,
		   XDP_PASS, "udp-pass", SLUICE_PSTAT_PASSED, ROW_LOOKUP_V6_UDP),
	SLUICE_ROW(ROW_DROP_V4_UDP, NULL, "over limit (drop), IPv4 UDP", FLOW_V4_UDP, DPORT_DROP,
		   XDP_DROP, "udp-drop", SLUICE_PSTAT_DROPPED, ROW_LOOKUP_V4_UDP),
	SLUICE_ROW(ROW_DROP_V4_SYN, NULL, "over limit (drop), IPv4 TCP SYN", FLOW_V4_SYN,
		   DPORT_DROP, XDP_DROP, "syn-drop", SLUICE_PSTAT_DROPPED, ROW_LOOKUP_V4_SYN),
	SLUICE_ROW(ROW_DROP_V6_UDP, NULL, "over limit (drop), IPv6 UDP", FLOW_V6_UDP, DPORT_DROP,
		   XDP_DROP, "udp-drop", SLUICE_PSTAT_DROPPED, ROW_LOOKUP_V6_UDP),
	/* Fragments (#11): a first is decided and tracked; a later one follows it. */
	SLUICE_ROW(ROW_FRAG_FIRST, "sluice, a fragmented IPv4 UDP datagram (floor: empty)",
		   "first fragment, pass (tracked)", FLOW_V4_FRAG_FIRST, DPORT_PASS, XDP_PASS,
		   "udp-pass", SLUICE_PSTAT_PASSED, ROW_LOOKUP_V4_UDP),
	SLUICE_ROW(ROW_FRAG_LATER, NULL, "later fragment of a passed first", FLOW_V4_FRAG_LATER,
		   DPORT_PASS, XDP_PASS, NULL, SLUICE_PSTAT_PASSED, ROW_LOOKUP_V4_UDP),
	ROTATE_ROWS("sluice, IPv4 UDP from N sources via rotate (floor: rotate->empty, same N)",
		    ROW_ROT_EMPTY_1, ROW_ROT_PASS_1, "1 source", 1),
	ROTATE_ROWS(NULL, ROW_ROT_EMPTY_FEW, ROW_ROT_PASS_FEW, "10^3 sources", BENCH_SOURCES_FEW),
	ROTATE_DROP_ROW(ROW_ROT_DROP_FEW, ROW_ROT_EMPTY_FEW, "10^3 sources", BENCH_SOURCES_FEW,
			ROW_DROP_V4_UDP),
	/*
	 * #16: a flood of 10^4 or 10^5 sources beside one lookup over as many
	 * keys, the memory-bound floor of a packet that reads its source's
	 * state (xref: vs it).
	 */
	ROTATE_LOOKUP_ROW(ROW_ROT_LOOKUP_MISS, ROW_ROT_EMPTY_FEW, "10^4 sources",
			  BENCH_SOURCES_DENY_MISS),
	ROTATE_DROP_ROW(ROW_ROT_DROP_MISS, ROW_ROT_EMPTY_FEW, "10^4 sources",
			BENCH_SOURCES_DENY_MISS, ROW_ROT_LOOKUP_MISS),
	/* The same flood at the 8th of 8 layers: a walk that peeks first (layer.bpf.h). */
	ROTATE_SLUICE_ROW_SCEN(ROW_ROT_DROP_LAYERED, ROW_ROT_EMPTY_FEW, "drop",
			       "10^4 sources, 8 layered", BENCH_SOURCES_DENY_MISS, DPORT_DROP,
			       XDP_DROP, "udp-drop", SLUICE_PSTAT_DROPPED, ROW_ROT_DROP_MISS,
			       SCEN_LAYERED),
	ROTATE_ROWS(NULL, ROW_ROT_EMPTY_MID, ROW_ROT_PASS_MID, "10^5 sources", BENCH_SOURCES_MID),
	ROTATE_LOOKUP_ROW(ROW_ROT_LOOKUP_MID, ROW_ROT_EMPTY_MID, "10^5 sources", BENCH_SOURCES_MID),
	ROTATE_DROP_ROW(ROW_ROT_DROP_MID, ROW_ROT_EMPTY_MID, "10^5 sources", BENCH_SOURCES_MID,
			ROW_ROT_LOOKUP_MID),

	/* #16: beside 10^6 and 10^7 sources, their memory-bound floor (xref: vs it). */
	ROTATE_ROWS_REF(NULL, ROW_ROT_EMPTY_MANY, ROW_ROT_PASS_MANY, "10^6 sources",
			BENCH_SOURCES_MANY, ROW_ROT_LOOKUP_MANY),
	ROTATE_LOOKUP_ROW(ROW_ROT_LOOKUP_MANY, ROW_ROT_EMPTY_MANY, "10^6 sources",
			  BENCH_SOURCES_MANY),
	/* The key step over the same keys, in a table of its own (xref: vs the lookup). */
	ROTATE_TAIL_ROW(ROW_ROT_STEP_MANY, NULL, "rotate->key step, 10^6 sources", PROG_STEP,
			BENCH_SOURCES_MANY, ROW_ROT_EMPTY_MANY, XDP_PASS, ROW_ROT_LOOKUP_MANY, 1),
	ROTATE_ROWS_REF(NULL, ROW_ROT_EMPTY_EVICT, ROW_ROT_PASS_EVICT, "10^7 sources",
			BENCH_SOURCES_EVICT, ROW_ROT_LOOKUP_EVICT),
	ROTATE_LOOKUP_ROW(ROW_ROT_LOOKUP_EVICT, ROW_ROT_EMPTY_EVICT, "10^7 sources",
			  BENCH_SOURCES_EVICT),
	/* #16: a flow identity with the port in it missed the deny cache on every packet. */
	[ROW_SPRAY_EMPTY] = { .group = "one IPv4 source spraying every UDP port, one policy keyed "
				       "by "
				       "source (floor: rotate->empty, same spray)",
			      .label = "rotate->empty, 65,536 ports",
			      .prog = PROG_ROTATE,
			      .tail = PROG_EMPTY,
			      .flow = FLOW_V4_UDP,
			      .dport = DPORT_PASS,
			      .sources = 1,
			      .ports = BENCH_SPRAY_PORTS,
			      .verdict = XDP_DROP,
			      .floor = ROW_SPRAY_EMPTY,
			      .lookup = ROW_LOOKUP_V4_UDP,
			      .ref = ROW_SPRAY_EMPTY },
	[ROW_SPRAY_DROP] = { .label = "rotate->sluice drop, 65,536 ports",
			     .prog = PROG_ROTATE,
			     .tail = PROG_SLUICE,
			     .flow = FLOW_V4_UDP,
			     .dport = DPORT_DROP,
			     .sources = 1,
			     .ports = BENCH_SPRAY_PORTS,
			     .verdict = XDP_DROP,
			     .policy = "udp-any-drop",
			     .counted = SLUICE_PSTAT_DROPPED,
			     .floor = ROW_SPRAY_EMPTY,
			     .lookup = ROW_LOOKUP_V4_UDP,
			     .ref = ROW_DROP_V4_UDP,
			     .scen = SCEN_SPRAY },
	[ROW_MT_EMPTY] = { .group = "IPv4 UDP on two CPUs at once, ns/pkt per CPU "
				    "(floor: empty on 2 CPUs; xref: vs 1 CPU)",
			   .label = "2 CPUs: empty",
			   .prog = PROG_EMPTY,
			   .flow = FLOW_V4_UDP,
			   .flow2 = FLOW_V4_UDP,
			   .dport = DPORT_PASS,
			   .verdict = XDP_DROP,
			   .floor = ROW_MT_EMPTY,
			   .lookup = ROW_LOOKUP_V4_UDP,
			   .ref = ROW_MT_EMPTY,
			   .threads = BENCH_THREADS_MAX },
	[ROW_MT_LOOKUP] = { .label = "2 CPUs: one LRU lookup, same key",
			    .prog = PROG_LOOKUP,
			    .flow = FLOW_V4_UDP,
			    .flow2 = FLOW_V4_UDP,
			    .dport = DPORT_PASS,
			    .verdict = XDP_DROP,
			    .floor = ROW_MT_EMPTY,
			    .lookup = ROW_LOOKUP_V4_UDP,
			    .ref = ROW_LOOKUP_V4_UDP,
			    .threads = BENCH_THREADS_MAX },
	MT_ROW(ROW_MT_DROP_SAME, "2 CPUs: drop, same key", DPORT_DROP, FLOW_V4_UDP, XDP_DROP,
	       "udp-drop", SLUICE_PSTAT_DROPPED, ROW_DROP_V4_UDP, 0),
	MT_ROW(ROW_MT_DROP_DISTINCT, "2 CPUs: drop, distinct keys", DPORT_DROP, FLOW_V4_UDP_B,
	       XDP_DROP, "udp-drop", SLUICE_PSTAT_DROPPED, ROW_DROP_V4_UDP, 0),
	MT_ROW(ROW_MT_PASS_SAME, "2 CPUs: pass, same key", DPORT_PASS, FLOW_V4_UDP, XDP_PASS,
	       "udp-pass", SLUICE_PSTAT_PASSED, ROW_PASS_V4_UDP, 1),
	MT_ROW(ROW_MT_PASS_DISTINCT, "2 CPUs: pass, distinct keys", DPORT_PASS, FLOW_V4_UDP_B,
	       XDP_PASS, "udp-pass", SLUICE_PSTAT_PASSED, ROW_PASS_V4_UDP, 0),
	POL_ROW(ROW_POL_ONE, "IPv4 UDP under other policy files (floor: empty; xref: vs 1 policy)",
		"1 policy, drop", SCEN_ONE, FLOW_V4_UDP, DPORT_DROP, XDP_DROP, "udp-drop",
		SLUICE_PSTAT_DROPPED),
	POL_ROW(ROW_POL_PRECISE, NULL, "1 policy, clock: precise, drop", SCEN_ONE_PRECISE,
		FLOW_V4_UDP, DPORT_DROP, XDP_DROP, "udp-drop", SLUICE_PSTAT_DROPPED),
	/* #30: beside the same drop unsampled; nobody reads the ring, so it fills: then lost. */
	POL_ROW(ROW_POL_SAMPLED, NULL, "1 policy, drop sampled 1/1000", SCEN_ONE_SAMPLED,
		FLOW_V4_UDP, DPORT_DROP, XDP_DROP, "udp-drop", SLUICE_PSTAT_DROPPED),
	POL_ROW(ROW_POL_MANY, NULL, "1000 policies (own ports), drop", SCEN_MANY, FLOW_V4_UDP,
		DPORT_DROP, XDP_DROP, "udp-drop", SLUICE_PSTAT_DROPPED),
	POL_ROW(ROW_POL_LAYERED_DROP, NULL, "8 layered, the 8th drops", SCEN_LAYERED, FLOW_V4_UDP,
		DPORT_DROP, XDP_DROP, "udp-drop", SLUICE_PSTAT_DROPPED),
	/* #16: vs one policy's pass (the target), beside the 8 key steps' own xref. */
	POL_ROW_REF(ROW_POL_LAYERED_PASS, NULL, "8 layered, all 8 admit (pass)", SCEN_LAYERED,
		    FLOW_V4_UDP, DPORT_PASS, XDP_PASS, "udp-pass", SLUICE_PSTAT_PASSED,
		    ROW_PASS_V4_UDP),
	POL_ROW(ROW_ALLOW_ONE, NULL, "1 policy, 10^4 allowlisted, drop", SCEN_ALLOW_ONE,
		FLOW_V4_UDP, DPORT_DROP, XDP_DROP, "udp-drop", SLUICE_PSTAT_DROPPED),
	POL_ROW(ROW_ALLOW_LAYERED, NULL, "8 layered, 10^4 allowlisted, drop", SCEN_ALLOW_LAYERED,
		FLOW_V4_UDP, DPORT_DROP, XDP_DROP, "udp-drop", SLUICE_PSTAT_DROPPED),
	POL_ROW(ROW_ALLOWED, NULL, "an allowlisted source (pass)", SCEN_ALLOW_LAYERED,
		FLOW_V4_ALLOWED, DPORT_DROP, XDP_PASS, NULL, SLUICE_PSTAT_PASSED),
	/* To a port no policy matches: only the ban can drop these. */
	POL_ROW(ROW_BAN_ONE, "IPv4 UDP and the ban list (floor: empty; xref: vs 1 policy)",
		"1 ban, the banned source (drop)", SCEN_BAN_ONE, FLOW_V4_UDP, DPORT_PASS, XDP_DROP,
		NULL, SLUICE_PSTAT_DROPPED),
	POL_ROW(ROW_BAN_MANY, NULL, "10^4 bans, a banned source (drop)", SCEN_BAN_MANY, FLOW_V4_UDP,
		DPORT_PASS, XDP_DROP, NULL, SLUICE_PSTAT_DROPPED),
	POL_ROW(ROW_BAN_MISS, NULL, "10^4 bans, not banned, 1 policy, drop", SCEN_BAN_MANY,
		FLOW_V4_UDP_B, DPORT_DROP, XDP_DROP, "udp-drop", SLUICE_PSTAT_DROPPED),
	/* Prefixes go to the trie, whose walk grows with its depth. */
	POL_ROW(ROW_BAN_PREFIXES, NULL, "10^4 /24 bans, a banned source (drop)", SCEN_BAN_PREFIXES,
		FLOW_V4_UDP, DPORT_PASS, XDP_DROP, NULL, SLUICE_PSTAT_DROPPED),
};

/* A policy file being written into @buf; @err is the first error. */
struct yaml_buf {
	char *buf;
	size_t len, used;
	int err;
};

struct bench_opts {
	const char *obj_path;
	const char *bench_dir;
	__u32 rounds;
	__u32 repeat;
	const char *only; /* --only: substrings of labels, '|' between them; NULL: every row */
};

struct bench {
	const struct bench_opts *o;
	struct harness h;
	struct bpf_object *obj[BENCH_OBJS];
	int prog_fd[PROG_MAX];
	int target_fd;	      /* rotate's bench_target */
	int cfg_fd;	      /* rotate's bench_cfg */
	int keys_fd;	      /* lookup's bench_keys */
	int keys_insert_fd;   /* the table of lookup+insert, its own object's */
	int step_state_fd;    /* the key step's sluice_state, its own object's */
	enum bench_scen scen; /* the policy file in force */
	struct yaml_buf yaml; /* its text */
};

struct bench_result {
	double median_ns, min_ns, max_ns; /* per packet */
	__u64 keys;			  /* sluice rows: keys in sluice_state afterwards */
	int is_sluice;
	int is_bad;
	int is_skipped; /* not measured here (too few CPUs); check says why */
	char check[CHECK_LEN];
};

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* SIGINT and SIGTERM interrupt the running BPF_PROG_TEST_RUN (-EINTR), so cleanup runs. */
static int install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL))
		return -errno;
	return 0;
}

static int print_usage(FILE *f)
{
	int n = fprintf(
		f,
		"usage: sluice-bench --obj <sluice.bpf.o> --bench-dir <dir> [--rounds <n>] "
		"[--repeat <n>]\n                    [--only <text>]\n\n"
		"  --obj <file>        the XDP object sluice-bench was built with\n"
		"  --bench-dir <dir>   where empty.bpf.o, lookup.bpf.o and rotate.bpf.o are\n"
		"  --rounds <n>        measured rounds per row, 1..%d (default %d)\n"
		"  --repeat <n>        packets per round, in one BPF_PROG_TEST_RUN "
		"(default %u)\n"
		"  --only <text>       only rows whose label holds <text> (or one of several\n"
		"                      texts separated by '|'), and their baselines\n"
		"  -h, --help          print this help\n",
		BENCH_ROUNDS_MAX, BENCH_ROUNDS_DEFAULT, BENCH_REPEAT_DEFAULT);

	return n < 0 ? -EIO : 0;
}

/* A whole number in 1..@max from @s, or -EINVAL. */
static int parse_count(const char *s, unsigned long long max, __u32 *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || !v || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int check_readable(const char *path, const char *what)
{
	if (!access(path, R_OK))
		return 0;
	fprintf(stderr, "sluice-bench: cannot read %s '%s': %s\n", what, path, strerror(errno));
	return -errno;
}

/* 0 to go on, else the exit status: 0 after --help, 2 for a usage error. */
static int parse_args(int argc, char **argv, struct bench_opts *o, int *status)
{
	static const struct option longopts[] = {
		{ "obj", required_argument, NULL, 'o' },
		{ "bench-dir", required_argument, NULL, 'd' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "repeat", required_argument, NULL, 'n' },
		{ "only", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, err = 0;

	*status = EXIT_SUCCESS;
	while (!err && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'o')
			o->obj_path = optarg;
		else if (c == 'd')
			o->bench_dir = optarg;
		else if (c == 'r')
			err = parse_count(optarg, BENCH_ROUNDS_MAX, &o->rounds);
		else if (c == 'n')
			err = parse_count(optarg, UINT32_MAX, &o->repeat);
		else if (c == 'O')
			o->only = optarg;
		else if (c == 'h')
			return print_usage(stdout) ?: -ECANCELED;
		else
			err = -EINVAL;
	}
	if (!err && (optind != argc || !o->obj_path || !o->bench_dir))
		err = -EINVAL;
	if (err) {
		print_usage(stderr);
		*status = 2;
		return err;
	}
	*status = EXIT_FAILURE;
	return check_readable(o->obj_path, "object") ?: check_readable(o->bench_dir, "directory");
}

/*
 * attachment__load() loads the object built into the skeleton, so --obj
 * can only be checked: it must be byte for byte what was built in.
 */
static int check_obj(const char *path)
{
	size_t built_len, len;
	const void *built = sluice_bpf__elf_bytes(&built_len);
	char *buf = calloc(built_len + 1, 1);
	FILE *f = fopen(path, "rb");
	int err = buf && f ? 0 : -errno;

	if (!err) {
		len = fread(buf, 1, built_len + 1, f);
		err = ferror(f) ? -EIO : 0;
	}
	if (!err && (len != built_len || memcmp(buf, built, built_len)))
		err = -ESTALE;
	if (f && fclose(f) && !err)
		err = -errno;
	free(buf);
	if (err == -ESTALE)
		fprintf(stderr,
			"sluice-bench: cannot use object '%s': it is not the object "
			"sluice-bench was built with; rebuild both (make bench)\n",
			path);
	else if (err)
		fprintf(stderr, "sluice-bench: cannot use object '%s': %s\n", path, strerror(-err));
	return err;
}

static int find_map_fd(struct bpf_object *obj, const char *name)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, name);

	return map ? bpf_map__fd(map) : -ENOENT;
}

/* Open and load <bench_dir>/<prog_files[i]>; 0 or -errno, reported. */
static int bench__open_obj(struct bench *b, enum bench_prog i)
{
	struct bpf_program *prog;
	struct bpf_map *map;
	char path[PATH_MAX];
	int n, err = 0;

	n = snprintf(path, sizeof(path), "%s/%s", b->o->bench_dir, prog_files[i]);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	b->obj[i] = bpf_object__open_file(path, NULL);
	if (!b->obj[i]) {
		err = -errno;
		fprintf(stderr, "sluice-bench: cannot open '%s': %s\n", path, strerror(-err));
		return err;
	}
	/* bench/step.bpf.c has sluice's maps, pinned by name: not these copies. */
	bpf_object__for_each_map(map, b->obj[i]) if (!err) err = bpf_map__set_pin_path(map, NULL);
	if (!err)
		err = bpf_object__load(b->obj[i]);
	prog = err ? NULL : bpf_object__find_program_by_name(b->obj[i], prog_names[i]);
	if (!err && !prog)
		err = -ENOENT;
	if (err) {
		fprintf(stderr, "sluice-bench: cannot load '%s' from '%s': %s\n", prog_names[i],
			path, strerror(-err));
		return err;
	}
	b->prog_fd[i] = bpf_program__fd(prog);
	return 0;
}

static int bench__open_objs(struct bench *b)
{
	enum bench_prog i;
	int err = 0;

	for (i = 0; !err && i < BENCH_OBJS; i++)
		err = bench__open_obj(b, i);
	if (err)
		return err;
	b->keys_fd = find_map_fd(b->obj[PROG_LOOKUP], "bench_keys");
	b->keys_insert_fd = find_map_fd(b->obj[PROG_LOOKUP_INSERT], "bench_keys");
	b->step_state_fd = find_map_fd(b->obj[PROG_STEP], "sluice_state");
	b->target_fd = find_map_fd(b->obj[PROG_ROTATE], "bench_target");
	b->cfg_fd = find_map_fd(b->obj[PROG_ROTATE], "bench_cfg");
	if (b->keys_fd < 0 || b->keys_insert_fd < 0 || b->step_state_fd < 0 || b->target_fd < 0 ||
	    b->cfg_fd < 0) {
		fprintf(stderr,
			"sluice-bench: cannot find the maps of the bench objects in '%s'; "
			"rebuild them (make bench)\n",
			b->o->bench_dir);
		return -ENOENT;
	}
	return 0;
}

static void bench__close_objs(struct bench *b)
{
	enum bench_prog i;

	for (i = 0; i < BENCH_OBJS; i++) {
		bpf_object__close(b->obj[i]);
		b->obj[i] = NULL;
	}
}

/* The flows' sources, so every lookup of the one-lookup program is a hit. */
static int bench__fill_keys(struct bench *b)
{
	__u8 addr[SLUICE_ADDR_LEN];
	__u64 value = 0;
	int i;

	for (i = 0; i < FLOW_MAX; i++) {
		pkt_addr16(flows[i].src, addr);
		if (bpf_map_update_elem(b->keys_fd, addr, &value, BPF_ANY))
			return -errno;
	}
	return 0;
}

#define CELL_LEN 32

__attribute__((format(printf, 3, 4))) static void format_cell(char *buf, size_t len,
							      const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		snprintf(buf, len, "?");
}

__attribute__((format(printf, 2, 3))) static void yaml_add(struct yaml_buf *y, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (y->err)
		return;
	va_start(ap, fmt);
	n = vsnprintf(y->buf + y->used, y->len - y->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= y->len - y->used)
		y->err = -ENAMETOOLONG;
	else
		y->used += n;
}

struct bench_policy {
	const char *name;
	const char *proto;
	int dport;
	const char *extra; /* more match fields */
	const char *rate;
	const char *burst;
};

/* Keyed per source; pass and drop, for UDP and for TCP SYNs. */
static const struct bench_policy policies[] = {
	{ "udp-pass", "udp", DPORT_PASS, "", RATE_PASS, BURST_PASS },
	{ "udp-drop", "udp", DPORT_DROP, "", RATE_DROP, BURST_DROP },
	{ "syn-pass", "tcp", DPORT_PASS, ", tcp_syn: true", RATE_PASS, BURST_PASS },
	{ "syn-drop", "tcp", DPORT_DROP, ", tcp_syn: true", RATE_DROP, BURST_DROP },
};

enum bench_policy_id {
	POLICY_UDP_PASS = 0,
	POLICY_UDP_DROP,
	POLICY_SYN_PASS,
	POLICY_SYN_DROP,
	POLICY_MAX,
};

/* @p keyed by the IPv4 source masked to @prefix4 (IPv6: the whole source). */
static void yaml_policy(struct yaml_buf *y, const struct bench_policy *p, int prefix4)
{
	yaml_add(y,
		 "  - name: %s\n"
		 "    match: { proto: %s, dst_port: %d%s }\n"
		 "    key: { ipv4_prefix: %d, ipv6_prefix: %d }\n"
		 "    rate: %s\n"
		 "    burst: %s\n",
		 p->name, p->proto, p->dport, p->extra, prefix4, SLUICE_ADDR_BITS, p->rate,
		 p->burst);
}

/* Policy @name: a pass policy on @proto/@dport, keyed /@prefix4. */
static void yaml_pass(struct yaml_buf *y, const char *name, const char *proto, int dport,
		      int prefix4)
{
	struct bench_policy p = { name, proto, dport, "", RATE_PASS, BURST_PASS };

	yaml_policy(y, &p, prefix4);
}

/*
 * Eight policies on each of the two UDP ports, keyed /32, /31, ... (the
 * compiler refuses a layer that can never decide). On DPORT_DROP seven
 * pass layers come first and udp-drop, keyed by the shortest prefix and so
 * least specific, comes last (compile.c's order): every packet is admitted
 * by seven and denied by the eighth, which the walk finds by peeking once
 * it has had to refund the seven (walk_layers()).
 */
static void yaml_layered(struct yaml_buf *y)
{
	char name[SLUICE_NAME_LEN];
	__u32 i;

	for (i = 1; i < BENCH_LAYERS; i++) {
		format_cell(name, sizeof(name), "drop-layer-%u", i);
		yaml_pass(y, name, "udp", DPORT_DROP, SLUICE_IPV4_BITS + 1 - i);
	}
	yaml_policy(y, &policies[POLICY_UDP_DROP], BENCH_LAYER_DROP_PREFIX);
	yaml_policy(y, &policies[POLICY_UDP_PASS], SLUICE_IPV4_BITS);
	for (i = 1; i < BENCH_LAYERS; i++) {
		format_cell(name, sizeof(name), "pass-layer-%u", i);
		yaml_pass(y, name, "udp", DPORT_PASS, SLUICE_IPV4_BITS - i);
	}
}

/* udp-drop and BENCH_MANY_POLICIES - 1 others, UDP and TCP, one port each. */
static void yaml_many(struct yaml_buf *y)
{
	char name[SLUICE_NAME_LEN];
	__u32 i;

	yaml_policy(y, &policies[POLICY_UDP_DROP], SLUICE_IPV4_BITS);
	for (i = 1; i < BENCH_MANY_POLICIES; i++) {
		format_cell(name, sizeof(name), "port-%u", BENCH_MANY_PORT_FIRST + i);
		yaml_pass(y, name, i % 2 ? "tcp" : "udp", BENCH_MANY_PORT_FIRST + i,
			  SLUICE_IPV4_BITS);
	}
}

/*
 * BENCH_ALLOW_PREFIXES /32s from SRC_V4_OK up: a dense trie right beside
 * SRC_V4, so its lookup walks deep before it fails.
 */
static void yaml_allow(struct yaml_buf *y)
{
	char text[INET_ADDRSTRLEN];
	struct in_addr a = { 0 };
	__u32 first, i;

	if (inet_pton(AF_INET, SRC_V4_OK, &a) != 1)
		y->err = -EINVAL;
	first = ntohl(a.s_addr);
	yaml_add(y, "allow:\n");
	for (i = 0; !y->err && i < BENCH_ALLOW_PREFIXES; i++) {
		a.s_addr = htonl(first + i);
		if (!inet_ntop(AF_INET, &a, text, sizeof(text)))
			y->err = -errno;
		yaml_add(y, "  - %s/%d\n", text, SLUICE_IPV4_BITS);
	}
}

/* The text of policy file @sc into @y; 0 or -ENAMETOOLONG. */
static int scen_yaml(enum bench_scen sc, struct yaml_buf *y)
{
	size_t i;

	y->used = 0;
	y->err = 0;
	if (sc == SCEN_ALLOW_ONE || sc == SCEN_ALLOW_LAYERED)
		yaml_allow(y);
	yaml_add(y, "policies:\n");
	if (sc == SCEN_BASE)
		for (i = 0; i < POLICY_MAX; i++)
			yaml_policy(y, &policies[i], SLUICE_IPV4_BITS);
	else if (sc == SCEN_ONE || sc == SCEN_ALLOW_ONE || sc == SCEN_ONE_PRECISE ||
		 sc == SCEN_BAN_ONE || sc == SCEN_BAN_MANY || sc == SCEN_BAN_PREFIXES ||
		 sc == SCEN_ONE_SAMPLED)
		yaml_policy(y, &policies[POLICY_UDP_DROP], SLUICE_IPV4_BITS);
	if (sc == SCEN_ONE_PRECISE)
		yaml_add(y, "    clock: precise\n");
	else if (sc == SCEN_ONE_SAMPLED)
		yaml_add(y, "    events: { sample: 1/%d }\n", BENCH_SAMPLE_N);
	else if (sc == SCEN_LAYERED || sc == SCEN_ALLOW_LAYERED)
		yaml_layered(y);
	else if (sc == SCEN_MANY)
		yaml_many(y);
	else if (sc == SCEN_SPRAY)
		yaml_add(y,
			 "  - name: udp-any-drop\n"
			 "    match: { proto: udp }\n"
			 "    key: { ipv4_prefix: %d, ipv6_prefix: %d }\n"
			 "    rate: %s\n"
			 "    burst: %s\n",
			 SLUICE_IPV4_BITS, SLUICE_ADDR_BITS, RATE_DROP, BURST_DROP);
	return y->err;
}

/* sluice through the harness: the agent's loader, compiler and map writer. */
static int bench__load_sluice(struct bench *b)
{
	int err = check_obj(b->o->obj_path);

	if (err)
		return err;
	b->yaml.len = POLICY_FILE_MAX_BYTES;
	b->yaml.buf = calloc(b->yaml.len, 1);
	err = b->yaml.buf ? scen_yaml(SCEN_BASE, &b->yaml) : -ENOMEM;
	if (!err)
		err = harness_load(&b->h, b->yaml.buf, BENCH_MAX_KEYS);
	if (err) {
		fprintf(stderr, "sluice-bench: cannot load sluice with the bench policy: %s\n",
			strerror(-err));
		return err;
	}
	b->scen = SCEN_BASE;
	b->prog_fd[PROG_SLUICE] = b->h.att.prog_fd;
	return 0;
}

/*
 * The ban list of @sc, through kernel/bans.c as `sluice ban` writes it:
 * SRC_V4, then (SCEN_BAN_MANY) /32s from SRC_V4_B + 1 up, a dense hash
 * beside SRC_V4_B, which stays unbanned, or (SCEN_BAN_PREFIXES) SRC_V4's
 * /24 and the /24s above it, a dense trie; other files have none.
 */
static int bench__set_bans(struct bench *b, enum bench_scen sc)
{
	__u32 n = sc == SCEN_BAN_ONE				   ? 1
		  : sc == SCEN_BAN_MANY || sc == SCEN_BAN_PREFIXES ? BENCH_BANS
								   : 0;
	unsigned int bits = sc == SCEN_BAN_PREFIXES ? BENCH_BAN_PREFIX_BITS : SLUICE_ADDR_BITS;
	const char *base = sc == SCEN_BAN_PREFIXES ? SRC_V4 : SRC_V4_B;
	const struct sluice_maps *m = &b->h.att.maps;
	__u32 i, first, step = 1U << (SLUICE_ADDR_BITS - bits);
	struct sluice_ban ban = { 0 };
	struct sluice_addr_key k;
	__u8 addr[SLUICE_ADDR_LEN];
	struct ban_entry *e = NULL;
	size_t j, have = 0;
	int err = bans__read(m, &e, &have);

	for (j = 0; !err && j < have; j++)
		err = bans__del(m, &e[j].key);
	free(e);
	if (!err)
		err = bans__sync_gate(m);
	if (!err && n && addr_parse(SRC_V4, addr) < 0)
		err = -EINVAL;
	if (!err && n) {
		bans__key(&k, addr, bits);
		err = bans__put(m, &k, &ban);
	}
	if (!err && n > 1 && addr_parse(base, addr) < 0)
		err = -EINVAL;
	memcpy(&first, addr + ADDR_V4MAPPED_LEN, sizeof(first));
	for (i = 1; !err && i < n; i++) {
		__u32 host = htonl(ntohl(first) + i * step); /* < 2^32: 10^4 × 2^8 */

		memcpy(addr + ADDR_V4MAPPED_LEN, &host, sizeof(host));
		bans__key(&k, addr, bits);
		err = bans__put(m, &k, &ban);
	}
	return err ?: bans__sync_gate(m);
}

/* Apply policy file @sc unless it is in force; 0 or -errno, reported. */
static int bench__apply(struct bench *b, enum bench_scen sc)
{
	int err;

	if (sc == b->scen)
		return 0;
	err = scen_yaml(sc, &b->yaml);
	if (!err)
		err = harness_apply(&b->h, b->yaml.buf);
	if (!err)
		err = bench__set_bans(b, sc);
	if (err) {
		fprintf(stderr, "sluice-bench: cannot apply policy file %d: %s\n", sc,
			strerror(-err));
		return err;
	}
	b->scen = sc;
	return 0;
}

/* Pin to the CPU we run on: per-CPU state (rotate's counter) stays on one CPU. */
static int pin_cpu(int *cpu)
{
	cpu_set_t set;

	*cpu = sched_getcpu();
	if (*cpu < 0)
		return -errno;
	CPU_ZERO(&set);
	CPU_SET(*cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static int bench__setup(struct bench *b, int *cpu)
{
	int err;

	if (geteuid() != 0) {
		fprintf(stderr, "sluice-bench: BPF_PROG_TEST_RUN needs root (CAP_BPF, "
				"CAP_NET_ADMIN)\n");
		return -EPERM;
	}
	err = install_signals();
	if (!err)
		err = pin_cpu(cpu);
	if (err) {
		fprintf(stderr, "sluice-bench: cannot set up signals and CPU affinity: %s\n",
			strerror(-err));
		return err;
	}
	err = bench__open_objs(b);
	if (!err)
		err = bench__load_sluice(b);
	if (err)
		return err;
	err = bench__fill_keys(b);
	if (err)
		fprintf(stderr, "sluice-bench: cannot fill map 'bench_keys': %s\n", strerror(-err));
	return err;
}

static void build_packet(struct pkt *p, enum bench_flow flow, __u16 dport)
{
	const struct flow *f = &flows[flow];
	struct pkt dgram;
	size_t rest;

	if (f->frag) {
		pkt_payload(pkt_udp(pkt_ip(pkt_eth(&dgram, mac_dst, mac_src), f->src, f->dst),
				    SPORT, dport),
			    BENCH_FRAG_PAYLOAD);
		pkt_finish(&dgram);
		rest = pkt_fragmentable_len(&dgram) - BENCH_FRAG_BYTES;
		if (f->frag == FRAG_FIRST)
			pkt_fragment(p, &dgram, 0, BENCH_FRAG_BYTES, 1);
		else
			pkt_fragment(p, &dgram, BENCH_FRAG_BYTES, rest, 0);
		return;
	}
	pkt_ip(pkt_eth(p, mac_dst, mac_src), f->src, f->dst);
	if (f->tcp_flags)
		pkt_tcp(p, SPORT, dport, f->tcp_flags);
	else
		pkt_udp(p, SPORT, dport);
	pkt_finish(p);
}

/* Rotate rows: the number of sources, and the program rotate tail-calls. */
static int bench__aim(struct bench *b, const struct bench_row *r)
{
	struct bench_rotate_cfg cfg = { .sources = r->sources,
					.base_host = BENCH_ROTATE_BASE_HOST,
					.ports = r->ports };
	__u32 zero = 0, slot = BENCH_TARGET_SLOT;
	int err;

	if (r->prog != PROG_ROTATE)
		return 0;
	if (bpf_map_update_elem(b->cfg_fd, &zero, &cfg, BPF_ANY) ||
	    bpf_map_update_elem(b->target_fd, &slot, &b->prog_fd[r->tail], BPF_ANY)) {
		err = -errno;
		fprintf(stderr, "sluice-bench: cannot point the rotator for '%s': %s\n", r->label,
			strerror(-err));
		return err;
	}
	return 0;
}

/*
 * @n packets through @prog_fd in one call: the CPU time per packet, and the
 * last verdict. CPU time of this thread, not wall time: on a shared machine
 * wall time also counts other tasks that preempt us (the kernel's own
 * duration excludes them too, but only in whole nanoseconds). The syscall
 * and the packet copy are in it, once per call: microseconds over n.
 */
static int run_pkts(int prog_fd, const struct pkt *p, __u32 n, double *ns_per_pkt, __u32 *verdict)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = p->buf, .data_size_in = p->len,
		    .repeat = n);
	struct timespec start, end;

	if (stop_requested)
		return -EINTR;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start) ||
	    bpf_prog_test_run_opts(prog_fd, &opts) || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end))
		return -errno;
	*ns_per_pkt =
		((end.tv_sec - start.tv_sec) * NSEC_PER_SEC_F + (end.tv_nsec - start.tv_nsec)) / n;
	*verdict = opts.retval;
	return 0;
}

/* One of the threads of a row run on several CPUs. */
struct bench_thread {
	pthread_t tid;
	pthread_barrier_t *start; /* all threads enter the kernel together */
	int prog_fd;
	int cpu;
	const struct pkt *p;
	__u32 n;
	double ns_per_pkt;
	__u32 verdict;
	int err;
};

static void *thread_main(void *arg)
{
	struct bench_thread *t = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	t->err = -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	pthread_barrier_wait(t->start);
	if (!t->err)
		t->err = run_pkts(t->prog_fd, t->p, t->n, &t->ns_per_pkt, &t->verdict);
	return NULL;
}

/*
 * @n packets of @p[i] on CPU i, for each of @threads threads at once: the
 * mean of their CPU time per packet, and each one's last verdict.
 */
static int run_threads(int prog_fd, const struct pkt *p, __u32 threads, __u32 n, double *ns,
		       __u32 *verdicts)
{
	struct bench_thread t[BENCH_THREADS_MAX];
	pthread_barrier_t start;
	__u32 i, started = 0;
	int err = -pthread_barrier_init(&start, NULL, threads);

	for (i = 0; !err && i < threads; i++) {
		t[i] = (struct bench_thread){
			.start = &start, .prog_fd = prog_fd, .cpu = i, .p = &p[i], .n = n
		};
		err = -pthread_create(&t[i].tid, NULL, thread_main, &t[i]);
		started += !err;
	}
	if (err && started) /* the barrier waits for @threads: never reached */
		abort();
	*ns = 0;
	for (i = 0; i < started; i++) {
		pthread_join(t[i].tid, NULL);
		err = err ?: t[i].err;
		*ns += t[i].ns_per_pkt / threads;
		verdicts[i] = t[i].verdict;
	}
	if (started || !err)
		pthread_barrier_destroy(&start);
	return err;
}

static __u32 row_threads(const struct bench_row *r)
{
	return r->threads > 1 ? r->threads : 1;
}

/* What a sluice row must move: its verdict's total and its policy's counter. */
struct counts {
	__u64 verdict_pkts; /* the total of the row's verdict */
	__u64 counted_pkts; /* the row's policy, as r->counted */
	__u64 other_pkts;   /* the row's policy, as the other outcome */
	__u64 error_pkts;   /* STATE_ERR total */
	__u64 cas_pkts;	    /* CAS_EXHAUSTED total */
	__u64 keys;	    /* keys in sluice_state */
};

static void counts_from(const struct status *st, const struct bench_row *r, struct counts *c)
{
	enum sluice_pstat other =
		r->counted == SLUICE_PSTAT_PASSED ? SLUICE_PSTAT_DROPPED : SLUICE_PSTAT_PASSED;
	enum sluice_total verdict =
		r->verdict == XDP_DROP ? SLUICE_TOTAL_DROPPED : SLUICE_TOTAL_PASSED;
	size_t i;

	memset(c, 0, sizeof(*c));
	c->verdict_pkts = st->totals.c[verdict].pkts;
	c->error_pkts = st->totals.c[SLUICE_TOTAL_STATE_ERR].pkts;
	c->cas_pkts = st->totals.c[SLUICE_TOTAL_CAS_EXHAUSTED].pkts;
	c->keys = st->keys;
	for (i = 0; r->policy && i < st->n_policies; i++) {
		if (strcmp(st->policies[i].policy.name, r->policy))
			continue;
		c->counted_pkts = st->policies[i].stats.c[r->counted].pkts;
		c->other_pkts = st->policies[i].stats.c[other].pkts;
	}
}

static int bench__read_counts(struct bench *b, const struct bench_row *r, struct counts *c)
{
	struct status st;
	int err = maps__read_status(&b->h.att.maps, &st, NULL);

	if (err) {
		fprintf(stderr, "sluice-bench: cannot read sluice's counters: %s\n",
			strerror(-err));
		return err;
	}
	counts_from(&st, r, c);
	status__free(&st);
	return 0;
}

static int is_sluice_row(const struct bench_row *r)
{
	return r->prog == PROG_SLUICE || (r->prog == PROG_ROTATE && r->tail == PROG_SLUICE);
}

/* "ok", or what the counters say instead; sets res->is_bad. */
static void check_counts(const struct bench_row *r, const struct counts *before,
			 const struct counts *after, __u64 pkts, struct bench_result *res)
{
	__u64 verdict = after->verdict_pkts - before->verdict_pkts;
	__u64 counted = after->counted_pkts - before->counted_pkts;
	__u64 other = after->other_pkts - before->other_pkts;
	__u64 errors = after->error_pkts - before->error_pkts;
	__u64 cas = after->cas_pkts - before->cas_pkts, lost = r->cas_may_drop ? cas : 0;
	int n;

	/* Packets that lost every race were dropped, and counted so: the design's answer. */
	res->keys = after->keys;
	res->is_bad = verdict + lost != pkts || errors || cas != lost ||
		      (r->policy && (counted + lost != pkts || other != lost));
	if (!res->is_bad && lost)
		n = snprintf(res->check, sizeof(res->check), "ok, %llu lost %d races", lost,
			     SLUICE_CAS_RETRIES);
	else if (!res->is_bad)
		n = snprintf(res->check, sizeof(res->check), "ok");
	else
		n = snprintf(res->check, sizeof(res->check),
			     "BAD: of %llu: verdict %llu, %s %llu/%llu, errors %llu, cas %llu",
			     pkts, verdict, r->policy ? r->policy : "-", counted, other, errors,
			     cas);
	if (n < 0 || (size_t)n >= sizeof(res->check))
		res->check[0] = '\0';
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void summarize(double *ns, __u32 n, struct bench_result *res)
{
	qsort(ns, n, sizeof(*ns), cmp_double);
	res->min_ns = ns[0];
	res->max_ns = ns[n - 1];
	res->median_ns = n % 2 ? ns[n / 2] : (ns[n / 2 - 1] + ns[n / 2]) / 2;
}

/*
 * Rows that rotate through many sources (or ports) warm up until every
 * one was seen once, or until sluice_state is full and evicting, whichever is
 * first; others for one round (a drop row's key is over its limit after
 * its first packet).
 */
static __u32 warmup_pkts(const struct bench_row *r, __u32 repeat)
{
	__u64 n = r->prog != PROG_ROTATE ? repeat : r->ports > r->sources ? r->ports : r->sources;

	if (n > BENCH_WARMUP_MAX_PKTS)
		n = BENCH_WARMUP_MAX_PKTS;
	return n > repeat ? n : repeat;
}

static const char *verdict_name(__u32 verdict)
{
	static const char *const names[] = {
		[XDP_ABORTED] = "XDP_ABORTED",	 [XDP_DROP] = "XDP_DROP",
		[XDP_PASS] = "XDP_PASS",	 [XDP_TX] = "XDP_TX",
		[XDP_REDIRECT] = "XDP_REDIRECT",
	};

	return verdict < sizeof(names) / sizeof(names[0]) ? names[verdict] : "unknown";
}

/* Marks @res bad unless @verdict is the row's; returns whether it was. */
static int verdict_is_right(const struct bench_row *r, __u32 verdict, struct bench_result *res)
{
	if ((int)verdict == r->verdict)
		return 1;
	res->is_bad = 1;
	if (snprintf(res->check, sizeof(res->check), "BAD: verdict %s, expected %s",
		     verdict_name(verdict), verdict_name(r->verdict)) >= (int)sizeof(res->check))
		res->check[0] = '\0';
	return 0;
}

static int report_run(const struct bench_row *r, int err)
{
	if (err && err != -EINTR)
		fprintf(stderr, "sluice-bench: cannot run '%s': %s\n", r->label, strerror(-err));
	return err;
}

/* @n packets per thread of row @r; a wrong verdict marks @res bad. */
static int bench__run_pkts(struct bench *b, const struct bench_row *r, const struct pkt *p, __u32 n,
			   double *ns, struct bench_result *res)
{
	__u32 verdicts[BENCH_THREADS_MAX], i, threads = row_threads(r);
	int err;

	if (threads == 1)
		err = run_pkts(b->prog_fd[r->prog], p, n, ns, &verdicts[0]);
	else
		err = run_threads(b->prog_fd[r->prog], p, threads, n, ns, verdicts);
	for (i = 0; !err && i < threads; i++)
		if (!verdict_is_right(r, verdicts[i], res))
			break;
	return report_run(r, err);
}

/*
 * Empty the table of @r's tail (sluice_state, the lookup's or the key
 * step's own), before and after a row at 10^6 or 10^7 sources: each row
 * measures a table of its own keys, as it does run alone, and the rows it
 * is compared with too (in a whole run the lookup over 10^6 keys cost 179
 * ns over its floor after the rows at 10^5 had filled its table, 270 to
 * 320 alone). After the
 * rows before it (10^5 sources passed and 10^5 dropped, under two
 * policies: other keys) the table was at its 2^20 capacity, the LRU
 * evicting, and the 10^6 row cost twice as much (801 vs 340 ns over the
 * floor), which its reference, a table of 10^6 keys, never pays; and the
 * full table the 10^7 row leaves made the rows after it dearer (8 layers
 * that all admit: 534 vs 365 ns). Deletes each key once it has the next.
 */
_Static_assert(sizeof(struct sluice_key) >= SLUICE_ADDR_LEN,
	       "a key buffer holds every table's key");
static int bench__empty_keys(struct bench *b, const struct bench_row *r)
{
	int fd = r->tail == PROG_LOOKUP_INSERT ? b->keys_insert_fd
		 : r->tail == PROG_STEP	       ? b->step_state_fd
					       : bpf_map__fd(b->h.att.skel->maps.sluice_state);
	struct sluice_key k, next; /* the larger key: the lookup's is an address */
	int more = !bpf_map_get_next_key(fd, NULL, &k);

	while (more) {
		more = !bpf_map_get_next_key(fd, &k, &next);
		if (bpf_map_delete_elem(fd, &k) && errno != ENOENT)
			return -errno;
		k = next;
	}
	return 0;
}

static int bench__warm_up(struct bench *b, const struct bench_row *r, const struct pkt *p,
			  struct bench_result *res)
{
	double ns;

	return bench__run_pkts(b, r, p, warmup_pkts(r, b->o->repeat), &ns, res);
}

/* The measured rounds; a wrong verdict marks the row bad. */
static int bench__measure(struct bench *b, const struct bench_row *r, const struct pkt *p,
			  struct bench_result *res)
{
	double ns[BENCH_ROUNDS_MAX];
	__u32 i;
	int err = 0;

	for (i = 0; !err && !res->is_bad && i < b->o->rounds; i++)
		err = bench__run_pkts(b, r, p, b->o->repeat, &ns[i], res);
	if (!err && !res->is_bad)
		summarize(ns, b->o->rounds, res);
	return err;
}

static int bench__run_row(struct bench *b, enum bench_row_id id, struct bench_result *res)
{
	const struct bench_row *r = &rows[id];
	struct pkt p[BENCH_THREADS_MAX];
	struct counts before, after;
	__u32 i;
	int err;

	res->is_sluice = is_sluice_row(r);
	if (snprintf(res->check, sizeof(res->check), "ok") < 0)
		return -EIO;
	if (row_threads(r) > (__u32)sysconf(_SC_NPROCESSORS_ONLN)) {
		res->is_skipped = 1;
		format_cell(res->check, sizeof(res->check), "skipped: needs %u CPUs",
			    row_threads(r));
		return 0;
	}
	for (i = 0; i < row_threads(r); i++)
		build_packet(&p[i], i ? r->flow2 : r->flow, r->dport);
	err = bench__apply(b, r->scen);
	if (!err && r->fresh_keys)
		err = bench__empty_keys(b, r);
	if (!err)
		err = bench__aim(b, r);
	if (!err)
		err = bench__warm_up(b, r, p, res);
	if (!err && !res->is_bad && res->is_sluice)
		err = bench__read_counts(b, r, &before);
	if (!err && !res->is_bad)
		err = bench__measure(b, r, p, res);
	if (err || res->is_bad || !res->is_sluice)
		return err;
	err = bench__read_counts(b, r, &after);
	if (!err)
		check_counts(r, &before, &after,
			     (__u64)b->o->rounds * b->o->repeat * row_threads(r), res);
	if (!err && r->fresh_keys) /* and leaves none: the rows after it run as they do alone */
		err = bench__empty_keys(b, r);
	return err;
}

/* The "model name" of the first CPU in /proc/cpuinfo, or "unknown". */
static void read_cpu_model(char *buf, size_t len)
{
	static const char key[] = "model name";
	char line[CPU_MODEL_LEN];
	FILE *f = fopen("/proc/cpuinfo", "r");
	char *colon;

	format_cell(buf, len, "unknown");
	while (f && fgets(line, sizeof(line), f)) {
		colon = strchr(line, ':');
		if (strncmp(line, key, strlen(key)) || !colon)
			continue;
		colon[strcspn(colon, "\n")] = '\0';
		format_cell(buf, len, "%s", colon + 2 <= line + strlen(line) ? colon + 2 : "");
		break;
	}
	if (f && fclose(f))
		format_cell(buf, len, "unknown");
}

static void format_cmdline(char *buf, size_t len, int argc, char **argv)
{
	size_t used = 0;
	int i, n;

	buf[0] = '\0';
	for (i = 0; i < argc; i++) {
		n = snprintf(buf + used, len - used, "%s%s", i ? " " : "", argv[i]);
		if (n < 0 || (size_t)n >= len - used)
			return;
		used += n;
	}
}

static void print_header(const struct bench_opts *o, int cpu, int argc, char **argv)
{
	char date[CELL_LEN], model[CPU_MODEL_LEN], cmd[CMDLINE_LEN];
	struct utsname uts;
	time_t now = time(NULL);
	struct tm tm;

	if (!localtime_r(&now, &tm) || !strftime(date, sizeof(date), "%Y-%m-%d %H:%M %Z", &tm))
		format_cell(date, sizeof(date), "unknown");
	if (uname(&uts))
		format_cell(uts.release, sizeof(uts.release), "unknown");
	read_cpu_model(model, sizeof(model));
	format_cmdline(cmd, sizeof(cmd), argc, argv);
	printf("sluice-bench: XDP cost per packet with BPF_PROG_TEST_RUN\n"
	       "date:     %s\n"
	       "kernel:   %s\n"
	       "cpu:      %s, %ld online, bench pinned to CPU %d\n"
	       "command:  %s\n"
	       "method:   per row one warm-up call, then %u rounds of one call with repeat %u;\n"
	       "          ns/pkt = this thread's CPU time in the call / repeat\n"
	       "policies: keyed /32 and /128 (layered: /32 to /24); pass: rate %s burst %s;\n"
	       "          drop: rate %s burst %s\n\n",
	       date, uts.release, model, sysconf(_SC_NPROCESSORS_ONLN), cpu, cmd, o->rounds,
	       o->repeat, RATE_PASS, BURST_PASS, RATE_DROP, BURST_DROP);
	printf("  %-*s %7s %13s %7s %7s %5s %8s  %s\n", LABEL_WIDTH, "row", "ns/pkt", "min-max",
	       "-floor", "xlookup", "xref", "keys", "check");
}

static void print_row(enum bench_row_id id, const struct bench_result *all)
{
	const struct bench_row *r = &rows[id];
	const struct bench_result *res = &all[id];
	double over = res->median_ns - all[r->floor].median_ns;
	double lookup = all[r->lookup].median_ns - all[ROW_EMPTY].median_ns;
	double ref = all[r->ref].median_ns - all[rows[r->ref].floor].median_ns;
	char range[CELL_LEN], over_s[CELL_LEN], ratio[CELL_LEN], xref[CELL_LEN], keys[CELL_LEN];
	int has_ratio = r->floor != id && lookup > 0 && !all[r->lookup].is_bad;
	int has_ref = r->ref != id && ref > 0 && !all[r->ref].is_bad && !all[r->ref].is_skipped;

	if (r->group)
		printf("%s\n", r->group);
	if (res->is_bad || res->is_skipped) {
		printf("  %-*s %s\n", LABEL_WIDTH, r->label, res->check);
		return;
	}
	format_cell(range, sizeof(range), "%.1f-%.1f", res->min_ns, res->max_ns);
	format_cell(over_s, sizeof(over_s), r->floor == id ? "-" : "%.1f", over);
	format_cell(ratio, sizeof(ratio), has_ratio ? "%.2f" : "-", over / lookup);
	format_cell(xref, sizeof(xref), has_ref ? "%.2f" : "-", over / ref);
	format_cell(keys, sizeof(keys), res->is_sluice ? "%llu" : "-", res->keys);
	printf("  %-*s %7.1f %13s %7s %7s %5s %8s  %s\n", LABEL_WIDTH, r->label, res->median_ns,
	       range, over_s, ratio, xref, keys, res->check);
}

static void print_legend(void)
{
	printf("\nns/pkt: median of the rounds; min-max: fastest and slowest round;\n"
	       "-floor: ns/pkt minus the floor of its group; xlookup: -floor / (one LRU lookup\n"
	       "of the same family - empty); xref: -floor / -floor of the group's reference\n"
	       "(1 source, 1 CPU, 1 policy; the one-source pass row: the key step, the least\n"
	       "a policy that admits costs: clock, key, lookup, CAS, count; the 8 layered pass\n"
	       "row: 1 policy's pass); keys: entries in sluice_state after the row;\n"
	       "check: every verdict, and sluice's counters moved by exactly the packets sent.\n");
}

/* "<key>: <value>" of /proc/self/fdinfo/@fd into @out per @keys[i]; 0 or -errno. */
static int read_fdinfo(int fd, const char *const *keys, size_t n, unsigned long long *out)
{
	char path[PATH_MAX], line[BENCH_FDINFO_LINE];
	FILE *f;
	size_t i, len;

	format_cell(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	memset(out, 0, n * sizeof(*out));
	while (fgets(line, sizeof(line), f))
		for (i = 0; i < n; i++) {
			len = strlen(keys[i]);
			if (!strncmp(line, keys[i], len) && line[len] == ':')
				out[i] = strtoull(line + len + 1, NULL, 10);
		}
	return fclose(f) ? -errno : 0;
}

enum fdinfo_field {
	FDINFO_MAX_ENTRIES = 0,
	FDINFO_KEY_SIZE,
	FDINFO_VALUE_SIZE,
	FDINFO_MEMLOCK,
	FDINFO_MAX,
};

static const char *const fdinfo_keys[FDINFO_MAX] = {
	[FDINFO_MAX_ENTRIES] = "max_entries",
	[FDINFO_KEY_SIZE] = "key_size",
	[FDINFO_VALUE_SIZE] = "value_size",
	[FDINFO_MEMLOCK] = "memlock",
};

static void print_map_memory(const char *name, int fd)
{
	unsigned long long v[FDINFO_MAX];
	int err = read_fdinfo(fd, fdinfo_keys, FDINFO_MAX, v);

	if (err || !v[FDINFO_MAX_ENTRIES]) {
		printf("  %-16s cannot read /proc/self/fdinfo: %s\n", name, strerror(-err));
		return;
	}
	printf("  %-16s %9llu %5llu %6llu %12llu %9.1f\n", name, v[FDINFO_MAX_ENTRIES],
	       v[FDINFO_KEY_SIZE], v[FDINFO_VALUE_SIZE], v[FDINFO_MEMLOCK],
	       (double)v[FDINFO_MEMLOCK] / v[FDINFO_MAX_ENTRIES]);
}

/* Kernel memory of every sluice map (memlock, as bpftool map show prints it). */
static void print_memory(const struct bench *b)
{
	int i;

	printf("\nkernel memory per map (memlock from /proc/self/fdinfo, as `bpftool map show`):\n"
	       "  %-16s %9s %5s %6s %12s %9s\n",
	       "map", "entries", "key", "value", "memlock", "B/entry");
	for (i = 0; i < SLUICE_MAP_MAX; i++)
		print_map_memory(sluice_map_names[i], b->h.att.maps.fd[i]);
	for (i = 0; i < SLUICE_CACHE_MAX; i++)
		print_map_memory(
			sluice_cache_names[i],
			bpf_object__find_map_fd_by_name(b->h.att.skel->obj, sluice_cache_names[i]));
	print_map_memory("bench_keys", b->keys_fd);
	printf("(sluice_state: LRU hash, preallocated, sized by --max-keys; per-CPU maps are\n"
	       "counted once per possible CPU; LPM tries allocate per prefix, shown at their\n"
	       "current contents)\n");
}

/* Rows --only keeps into @keep: those it names and every row their figures use. */
/* Does @label hold one of the '|'-separated texts of @only (NULL: every label)? */
static int label_is_kept(const char *label, const char *only)
{
	const char *alt = only, *bar;
	size_t n;

	if (!only)
		return 1;
	for (; alt; alt = bar ? bar + 1 : NULL) {
		bar = strchr(alt, '|');
		n = bar ? (size_t)(bar - alt) : strlen(alt);
		if (n && memmem(label, strlen(label), alt, n))
			return 1;
	}
	return 0;
}

static void rows_kept(const char *only, int *keep)
{
	const struct bench_row *r;
	enum bench_row_id id;

	for (id = 0; id < ROW_MAX; id++) {
		r = &rows[id];
		if (!label_is_kept(r->label, only))
			continue;
		keep[id] = keep[r->floor] = keep[r->lookup] = keep[r->ref] = 1;
		keep[rows[r->ref].floor] = keep[ROW_EMPTY] = 1;
	}
}

/* Every row in order: floors and lookups come before the rows that use them. */
/* A row's ns over its floor when it and its floor were measured, else -1. */
static double row_over(const struct bench_result *all, const int *keep, enum bench_row_id id)
{
	enum bench_row_id floor = rows[id].floor;

	if (!keep[id] || all[id].is_bad || all[id].is_skipped || all[floor].is_bad)
		return -1;
	return all[id].median_ns - all[floor].median_ns;
}

/*
 * A target of #32: a path's ns over its floor beside the same of its parts
 * (one row, or two whose costs add up: what the path cannot go below).
 */
struct bench_target {
	const char *path, *parts;
	enum bench_row_id row;
	enum bench_row_id part[2]; /* the second: ROW_EMPTY when there is none */
	double max_x;		   /* met: row over parts at most this */
};

static const struct bench_target targets[] = {
	{ "pass, 1 source",
	  "no policy matches + key step",
	  ROW_PASS_V4_UDP,
	  { ROW_NONE_V4_UDP, ROW_STEP_V4_UDP },
	  TARGET_PARTS_X },
	{ "8 layered, all admit",
	  "no policy matches + 8 key steps",
	  ROW_POL_LAYERED_PASS,
	  { ROW_NONE_V4_UDP, ROW_STEP_LAYERED },
	  TARGET_PARTS_X },
	{ "an allowlisted source, pass",
	  "pass, 1 source",
	  ROW_ALLOWED,
	  { ROW_PASS_V4_UDP, ROW_EMPTY },
	  TARGET_ALLOWED_X },
	{ "key step, 10^6 sources",
	  "lookup+insert, 10^6 sources",
	  ROW_ROT_STEP_MANY,
	  { ROW_ROT_LOOKUP_MANY, ROW_EMPTY },
	  TARGET_STEP_MANY_X },
	{ "pass, 10^6 sources",
	  "key step, 10^6 sources",
	  ROW_ROT_PASS_MANY,
	  { ROW_ROT_STEP_MANY, ROW_EMPTY },
	  TARGET_PASS_MANY_X },
	{ "2 CPUs: pass, same key",
	  "2 CPUs: pass, distinct keys",
	  ROW_MT_PASS_SAME,
	  { ROW_MT_PASS_DISTINCT, ROW_EMPTY },
	  TARGET_SHARED_X },
	{ "drop sampled 1/1000",
	  "1 policy, drop (cached)",
	  ROW_POL_SAMPLED,
	  { ROW_POL_ONE, ROW_EMPTY },
	  TARGET_SAMPLED_X },
};

/* A part's ns over its floor; ROW_EMPTY, the floor itself, adds nothing. */
static double part_over(const struct bench_result *all, const int *keep, enum bench_row_id id)
{
	return id == ROW_EMPTY ? 0 : row_over(all, keep, id);
}

/*
 * #32's targets, each path beside the floor of its parts in this run
 * (docs/performance.md, "Targets against each path's parts"; the
 * receive path's is bench/path.sh's), and #30's sampled drop beside a
 * cached one, and whether each is met. A target whose rows --only left
 * out is not printed.
 */
static void print_targets(const struct bench_result *all, const int *keep)
{
	const struct bench_target *t;
	double path, a, b;
	size_t i;
	int head = 0;

	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		t = &targets[i];
		path = row_over(all, keep, t->row);
		a = part_over(all, keep, t->part[0]);
		b = part_over(all, keep, t->part[1]);
		if (path <= 0 || a < 0 || b < 0 || a + b <= 0)
			continue;
		if (!head++)
			printf("\nTargets of #32 and #30, ns over the floor (IPv4 UDP):\n"
			       "  %-*s %7s  %-*s %7s %6s  %-8s  %s\n",
			       TARGET_PATH_WIDTH, "path", "ns", TARGET_PARTS_WIDTH, "its parts",
			       "ns", "ratio", "target", "met");
		printf("  %-*s %7.1f  %-*s %7.1f %5.2fx  <= %4.2fx  %s\n", TARGET_PATH_WIDTH,
		       t->path, path, TARGET_PARTS_WIDTH, t->parts, a + b, path / (a + b), t->max_x,
		       path / (a + b) <= t->max_x ? "met" : "not met");
	}
}

static int bench__run(struct bench *b, struct bench_result *res, int *any_bad)
{
	int keep[ROW_MAX] = { 0 };
	enum bench_row_id id;
	int err = 0;

	*any_bad = 0;
	rows_kept(b->o->only, keep);
	for (id = 0; !err && id < ROW_MAX; id++) {
		if (!keep[id])
			continue;
		err = bench__run_row(b, id, &res[id]);
		if (err)
			break;
		print_row(id, res);
		*any_bad |= res[id].is_bad;
		if (fflush(stdout) == EOF)
			err = -errno;
	}
	if (!err)
		print_targets(res, keep);
	return err;
}

int main(int argc, char **argv)
{
	struct bench_opts o = { .rounds = BENCH_ROUNDS_DEFAULT, .repeat = BENCH_REPEAT_DEFAULT };
	struct bench b = { .o = &o };
	struct bench_result *res = NULL;
	int status, cpu, any_bad = 0, err;

	if (parse_args(argc, argv, &o, &status))
		return status;
	log_hook_libbpf();
	harness_guard(); /* a bench killed mid-row leaves no pins either */
	err = bench__setup(&b, &cpu);
	if (!err) {
		res = calloc(ROW_MAX, sizeof(*res));
		err = res ? 0 : -ENOMEM;
	}
	if (!err) {
		print_header(&o, cpu, argc, argv);
		err = bench__run(&b, res, &any_bad);
	}
	if (!err) {
		print_legend();
		print_memory(&b);
	}
	if (err == -EINTR)
		fprintf(stderr, "sluice-bench: interrupted\n");
	bench__close_objs(&b);
	harness_close(&b.h);
	free(b.yaml.buf);
	free(res);
	if (fflush(stdout) == EOF && !err)
		err = -errno;
	return harness_cleanup(err || any_bad ? EXIT_FAILURE : EXIT_SUCCESS);
}
