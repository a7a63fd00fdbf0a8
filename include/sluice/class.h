/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A packet's class (abi.h, enum sluice_class_base): the index the XDP
 * program looks up in sluice_class and user/policy/compile.c fills. Shared so the
 * two cannot disagree on it.
 */
#ifndef SLUICE_CLASS_H
#define SLUICE_CLASS_H

#ifdef __bpf__
#include <linux/in.h>
#else
#include <netinet/in.h>
#endif

#include "abi.h"

/* The class of a packet of @proto to host-order @port; @has_ports: it has them. */
SLUICE_INLINE __u32 sluice_class_of(__u8 proto, int has_ports, __u16 port)
{
	if (has_ports && proto == IPPROTO_TCP)
		return SLUICE_CLASS_TCP + port;
	if (has_ports && proto == IPPROTO_UDP)
		return SLUICE_CLASS_UDP + port;
	return SLUICE_CLASS_PROTO + proto;
}

#endif /* SLUICE_CLASS_H */
