/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The interfaces that carry this network namespace's default routes, read
 * from the kernel over rtnetlink: what `sluice run --iface auto` attaches
 * to. Reads only; knows nothing of sluice's maps or policy.
 */
#ifndef SLUICE_ROUTE_H
#define SLUICE_ROUTE_H

#include <net/if.h>
#include <stddef.h>

/*
 * The names of the interfaces that carry a default route (IPv4 0.0.0.0/0
 * or IPv6 ::/0, unicast, in the main table; every next hop of a multipath
 * route) into @names, at most @max of them, sorted by name, each once.
 * Loopback interfaces are left out. @n receives the count, which may be 0.
 * 0, -E2BIG when there are more than @max, or -errno of the netlink dump.
 */
int route_default_ifaces(char (*names)[IF_NAMESIZE], size_t max, size_t *n);

#endif /* SLUICE_ROUTE_H */
