/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Addresses and ports as every map holds them: addresses are 16 bytes,
 * network order, and IPv4 is stored IPv4-mapped (::ffff:a.b.c.d), so one
 * key path serves both families; the key of an address trie (the
 * classifier's sluice_src and sluice_dst, the ban list's sluice_ban).
 *
 * Part of the ABI: abi.h says how it may change.
 */
#ifndef SLUICE_ABI_ADDR_H
#define SLUICE_ABI_ADDR_H

#include "compiler.h"

#define SLUICE_ADDR_LEN	     16
#define SLUICE_ADDR_BITS     128
#define SLUICE_V4MAPPED_BITS 96 /* bits of ::ffff:0:0/96 before the IPv4 address */
#define SLUICE_IPV4_BITS     32
#define SLUICE_PORT_BITS     16

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

#endif /* SLUICE_ABI_ADDR_H */
