// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* See addr.h. inet_pton() and inet_ntop() do the text; this file does the mapping. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/addr.h"

#define BITS_PER_BYTE 8

/* ::ffff:0:0/96, the prefix of an IPv4-mapped address */
static const __u8 v4mapped_prefix[ADDR_V4MAPPED_LEN] = {
	[ADDR_V4MAPPED_LEN - 2] = 0xff,
	[ADDR_V4MAPPED_LEN - 1] = 0xff,
};

int addr_is_v4mapped(const __u8 *addr)
{
	return !memcmp(addr, v4mapped_prefix, sizeof(v4mapped_prefix));
}

int addr_parse(const char *s, __u8 *out)
{
	if (inet_pton(AF_INET, s, out + ADDR_V4MAPPED_LEN) == 1) {
		memcpy(out, v4mapped_prefix, sizeof(v4mapped_prefix));
		return 1;
	}
	return inet_pton(AF_INET6, s, out) == 1 ? 0 : -EINVAL;
}

void addr_mask(const __u8 *in, unsigned int bits, __u8 *out)
{
	size_t i;

	for (i = 0; i < SLUICE_ADDR_LEN; i++) {
		unsigned int keep = bits > BITS_PER_BYTE ? BITS_PER_BYTE : bits;

		out[i] = keep ? in[i] & (__u8)(UINT8_MAX << (BITS_PER_BYTE - keep)) : 0;
		bits -= keep;
	}
}

int addr_text(char *buf, size_t len, const __u8 *addr, int bits)
{
	int is_ipv4 = addr_is_v4mapped(addr) && (bits < 0 || bits >= SLUICE_V4MAPPED_BITS);
	char text[INET6_ADDRSTRLEN];
	int n;

	if (!inet_ntop(is_ipv4 ? AF_INET : AF_INET6, is_ipv4 ? addr + ADDR_V4MAPPED_LEN : addr,
		       text, sizeof(text)))
		return -errno; /* cannot happen: text holds any address */
	if (bits < 0)
		n = snprintf(buf, len, "%s", text);
	else
		n = snprintf(buf, len, "%s/%d", text, is_ipv4 ? bits - SLUICE_V4MAPPED_BITS : bits);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
