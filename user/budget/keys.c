// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The store's key layout; see budget/keys.h. The slot function follows
 * the Redis Cluster specification (CRC16-CCITT, XMODEM: polynomial 0x1021,
 * initial value 0, no reflection; its check value, CRC16("123456789"), is
 * 0x31C3).
 */
#include <stdio.h>
#include <string.h>

#include "sluice/policy.h"
#include "budget/keys.h"

#define CRC16_POLY    0x1021
#define CRC16_TOP_BIT 0x8000
#define BITS_PER_BYTE 8

static __u16 crc16(const char *buf, size_t len)
{
	__u16 crc = 0;
	size_t i;
	int b;

	for (i = 0; i < len; i++) {
		crc ^= (__u16)((unsigned char)buf[i] << BITS_PER_BYTE);
		for (b = 0; b < BITS_PER_BYTE; b++)
			crc = crc & CRC16_TOP_BIT ? (__u16)(crc << 1) ^ CRC16_POLY
						  : (__u16)(crc << 1);
	}
	return crc;
}

__u16 cluster_key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close;

	/* The hash tag: from the first '{' to the first '}' after it, if not empty. */
	if (open) {
		close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
		if (close && close > open + 1) {
			key = open + 1;
			len = (size_t)(close - key);
		}
	}
	return crc16(key, len) % CLUSTER_SLOTS;
}

unsigned int keys_group(const char *hex)
{
	return cluster_key_slot(hex, strlen(hex)) % LEASE_GROUPS;
}

void keys_group_tags(const char *name, __u32 tag[LEASE_GROUPS])
{
	char t[SLUICE_NAME_LEN + sizeof("{:4294967295}")];
	__u32 g, n, i;
	int len;

	for (g = 0; g < LEASE_GROUPS; g++) {
		tag[g] = g; /* all LEASE_TAG_TRIES missed (e^-174 likely): a tag, less even */
		for (i = 0, n = g; i < LEASE_TAG_TRIES; i++, n += LEASE_GROUPS) {
			len = snprintf(t, sizeof(t), "{%s:%u}", name, n);
			if ((__u32)cluster_key_slot(t, (size_t)len) * LEASE_GROUPS /
				    CLUSTER_SLOTS ==
			    g) {
				tag[g] = n;
				break;
			}
		}
	}
}
