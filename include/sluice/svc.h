/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A packet's service (classify.h, enum sluice_svc_base): its protocol and
 * destination port, the index the XDP program looks up in the sluice_class
 * map and user/policy/compile.c fills. Shared so the two cannot disagree
 * on it. (A policy's class, abuse or shedding, is another thing:
 * enum sluice_class.)
 */
#ifndef SLUICE_SVC_H
#define SLUICE_SVC_H

#ifdef __bpf__
#include <linux/in.h>
#else
#include <netinet/in.h>
#endif

#include "classify.h"

/* The service of a packet of @proto to host-order @port; @has_ports: it has them. */
SLUICE_INLINE __u32 sluice_svc_of(__u8 proto, int has_ports, __u16 port)
{
	if (has_ports && proto == IPPROTO_TCP)
		return SLUICE_SVC_TCP + port;
	if (has_ports && proto == IPPROTO_UDP)
		return SLUICE_SVC_UDP + port;
	return SLUICE_SVC_PROTO + proto;
}

#endif /* SLUICE_SVC_H */
