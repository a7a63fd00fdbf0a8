/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Addresses as sluice holds them: 16 bytes in network order, IPv4 stored
 * IPv4-mapped (::ffff:a.b.c.d), as in include/sluice/addr.h. The mapped
 * test, prefix masking and the text of an address or a prefix live here
 * and nowhere else in user space, the test packet builder and the tests.
 * Prefix lengths count bits of the 16-byte address: IPv4 /24 is 96 + 24.
 * What a prefix means to a policy (parsing its text with messages, lists,
 * containment) is policy/'s.
 */
#ifndef SLUICE_ADDR_H
#define SLUICE_ADDR_H

#include <netinet/in.h>
#include <stddef.h>

#include "sluice/addr.h"

#define ADDR_V4MAPPED_LEN (SLUICE_V4MAPPED_BITS / 8)	      /* bytes of ::ffff:0:0/96 */
#define ADDR_TEXT_LEN	  (INET6_ADDRSTRLEN + sizeof("/128")) /* any address/prefix and NUL */

/* 1 when @addr (SLUICE_ADDR_LEN bytes) is in ::ffff:0:0/96, else 0. */
int addr_is_v4mapped(const __u8 *addr);

/*
 * "192.0.2.1" or "2001:db8::1" into @out (SLUICE_ADDR_LEN bytes; IPv4
 * mapped). Returns 1 for IPv4, 0 for IPv6, or -EINVAL for anything else,
 * leaving @out undefined.
 */
int addr_parse(const char *s, __u8 *out);

/* @in with every bit past the first @bits (0..128) cleared, into @out; @out may be @in. */
void addr_mask(const __u8 *in, unsigned int bits, __u8 *out);

/*
 * The text of @addr in @buf of @len bytes: an IPv4-mapped address dotted
 * ("192.0.2.1"), any other as IPv6 ("2001:db8::1"). With @bits >= 0 the
 * prefix length follows, counted in the address's family: "10.0.0.0/8"
 * for 96 + 8 bits, "2001:db8::/32"; a mapped address is dotted only when
 * @bits is 96 or more (or negative). Returns 0, or -ENAMETOOLONG when @len
 * is too small (ADDR_TEXT_LEN always suffices).
 */
int addr_text(char *buf, size_t len, const __u8 *addr, int bits);

#endif /* SLUICE_ADDR_H */
