/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The key state, sluice_state: its key and value, and the key derivation
 * shared by the XDP program and the tests: the policy id plus the source
 * address masked to the policy's prefix for its family. One masking
 * function serves every prefix of both families because IPv4 is stored
 * IPv4-mapped (addr.h).
 *
 * The key and the value are part of the ABI: abi.h says how they may
 * change.
 */
#ifndef SLUICE_KEY_H
#define SLUICE_KEY_H

#include "addr.h"
#include "policy.h"

/* Keys held at once in sluice_state, by default (the loader may change it). */
#define SLUICE_STATE_ENTRIES_DEFAULT (1U << 20)
#define SLUICE_CAS_RETRIES	     8 /* compare-and-swap attempts on one key per packet */

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

#define SLUICE_ADDR_WORDS (SLUICE_ADDR_LEN / 4)
#define SLUICE_WORD_BITS  32

/* A mask of the first @bits bits (1..31) of a big-endian 32-bit word, in memory order. */
SLUICE_INLINE __u32 sluice_word_mask(__u32 bits)
{
	__u32 host = ~0U << (SLUICE_WORD_BITS - bits);

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return __builtin_bswap32(host);
#else
	return host;
#endif
}

/*
 * Fill @key for policy @p and source @addr (16 bytes, network order, IPv4
 * mapped when @is_ipv4). Bits past the family's prefix are zeroed.
 */
SLUICE_INLINE void sluice_key_derive(struct sluice_key *key, const struct sluice_policy *p,
				     const __u32 *addr, int is_ipv4)
{
	__u32 bits = is_ipv4 ? p->prefix4 : p->prefix6;
	__u32 *out = (__u32 *)key->addr;
	int i;

	key->policy_id = p->id;
#ifdef __clang__
#pragma unroll
#endif
	for (i = 0; i < SLUICE_ADDR_WORDS; i++) {
		__u32 start = i * SLUICE_WORD_BITS;

		if (bits >= start + SLUICE_WORD_BITS)
			out[i] = addr[i];
		else if (bits <= start)
			out[i] = 0;
		else
			out[i] = addr[i] & sluice_word_mask(bits - start);
	}
}

#endif /* SLUICE_KEY_H */
