/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Key derivation shared by the XDP program and the tests: the policy id
 * plus the source address masked to the policy's prefix for its family.
 * One masking function serves every prefix of both families because IPv4
 * is stored IPv4-mapped (abi.h).
 */
#ifndef SLUICE_KEY_H
#define SLUICE_KEY_H

#include "abi.h"

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
