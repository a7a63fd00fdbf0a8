/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The datagram tracking table's entries, shared by the XDP program
 * (bpf/frag.bpf.h, which explains the tracking) and the loader and tests
 * that size and read it. Not ABI: the table is the program's own and never
 * pinned, so only one build ever reads what it wrote; a new program starts
 * it empty, and a datagram in flight across a restart loses its later
 * fragments (orphans).
 */
#ifndef SLUICE_FRAG_H
#define SLUICE_FRAG_H

#include "addr.h"
#include "classify.h"
#include "gcra.h"

/*
 * Datagrams tracked at once, by default (the loader may change it). Each
 * entry is ~150 bytes of kernel memory with the hash's own, ~10 MB in all.
 */
#define SLUICE_FRAG_ENTRIES_DEFAULT (1U << 16)

/*
 * How long later fragments follow their first: the longer of Linux's two
 * reassembly timeouts (net.ipv4.ipfrag_time 30 s, net.ipv6.ip6frag_time
 * 60 s), after which the kernel has given the datagram up.
 */
#define SLUICE_FRAG_TTL_NS    (60 * SLUICE_NSEC_PER_SEC)
#define SLUICE_FRAG_TTL_TICKS (SLUICE_FRAG_TTL_NS << SLUICE_GCRA_TICK_SHIFT)

/*
 * The most data one datagram has, bytes: its fragments' ends (offset plus
 * length) and their sum stay within it (IPv4's total length and IPv6's
 * payload length are 16 bits). A fragment past either is dropped.
 */
#define SLUICE_FRAG_MAX_BYTES 0xffffU

/* Key of sluice_frags: a datagram, as the kernel's reassembly keys it (and its family). */
struct sluice_frag_key {
	__u32 src[SLUICE_ADDR_LEN / 4]; /* network order, IPv4 mapped */
	__u32 dst[SLUICE_ADDR_LEN / 4]; /* likewise */
	__be32 id;			/* IPv4 id (16 bits, widened) or IPv6 identification */
	__u8 proto;			/* IPv4 protocol, or the fragment header's next header */
	__u8 is_ipv4;
	__u8 pad[2];
};
SLUICE_ASSERT_SIZE(struct sluice_frag_key, 40);

/* Value of sluice_frags: what the datagram's first fragment decided, and what came since. */
struct sluice_frag {
	__u64 until;		      /* GCRA ticks: later fragments follow it before then */
	__u32 ids[SLUICE_MAX_LAYERS]; /* the policies that admitted it: later fragments'
				       * bytes are charged to their keys */
	__u32 drop_id;		      /* the policy that dropped it, when result drops */
	__u8 n_ids;
	__u8 result; /* the program's enum limit_result of the first fragment */
	__u16 end;   /* the datagram's end, bytes, once its last fragment came; else 0 */
	__u32 seen;  /* data of its fragments so far, bytes, duplicates and overlaps too */
	__u32 pad;
};
SLUICE_ASSERT_SIZE(struct sluice_frag, 56);

/* Value of sluice_frag_tmp: one packet's entry while it is built, per CPU, off the stack. */
struct sluice_frag_tmp {
	struct sluice_frag_key key;
	struct sluice_frag val;
};

#endif /* SLUICE_FRAG_H */
