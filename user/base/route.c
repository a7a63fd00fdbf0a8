// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * One RTM_GETROUTE dump over rtnetlink (both families at once), filtered
 * to default routes. Raw netlink rather than /proc/net/route: that file
 * shows only the first next hop of an IPv4 multipath (ECMP) route, and
 * sluice links no netlink library. Nothing here is cached: each call
 * reads the routes as they are now.
 */
#include <errno.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/route.h"

#define ROUTE_DUMP_SEQ 1
#define ROUTE_BUF_LEN  32768 /* one recv(); the kernel sends at most a page a message */
#define ROUTE_MAX_IDX  256   /* distinct interfaces a dump may name before we give up */

struct route_set {
	int idx[ROUTE_MAX_IDX];
	size_t n;
};

static int set_add(struct route_set *s, int ifindex)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->idx[i] == ifindex)
			return 0;
	if (s->n == ROUTE_MAX_IDX)
		return -E2BIG;
	s->idx[s->n++] = ifindex;
	return 0;
}

/* Every next hop's interface of an RTA_MULTIPATH attribute. */
static int add_multipath(struct route_set *s, const struct rtattr *a)
{
	const struct rtnexthop *nh = RTA_DATA(a);
	int len = RTA_PAYLOAD(a), err = 0;

	while (!err && RTNH_OK(nh, len)) {
		err = set_add(s, nh->rtnh_ifindex);
		len -= NLMSG_ALIGN(nh->rtnh_len);
		nh = RTNH_NEXT(nh);
	}
	return err;
}

/* A route's interfaces, when it is a unicast default route of the main table. */
static int add_route(struct route_set *s, const struct nlmsghdr *h)
{
	const struct rtmsg *rt = NLMSG_DATA(h);
	int len = RTM_PAYLOAD(h), table = rt->rtm_table, oif = 0, err = 0;
	const struct rtattr *a, *multipath = NULL;

	if (rt->rtm_dst_len || rt->rtm_type != RTN_UNICAST)
		return 0;
	for (a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == RTA_TABLE)
			table = *(const __u32 *)RTA_DATA(a);
		else if (a->rta_type == RTA_OIF)
			oif = *(const int *)RTA_DATA(a);
		else if (a->rta_type == RTA_MULTIPATH)
			multipath = a;
	}
	if (table != RT_TABLE_MAIN)
		return 0;
	if (oif)
		err = set_add(s, oif);
	if (!err && multipath)
		err = add_multipath(s, multipath);
	return err;
}

/* Read the dump's answers until NLMSG_DONE. 0 or -errno. */
static int read_dump(int fd, struct route_set *s, char *buf)
{
	const struct nlmsghdr *h;
	ssize_t len; /* wider than nlmsg_len, so NLMSG_OK compares no signs */
	int err = 0;

	for (;;) {
		len = recv(fd, buf, ROUTE_BUF_LEN, 0);
		if (len < 0)
			return -errno;
		for (h = (const struct nlmsghdr *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return err;
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((const struct nlmsgerr *)NLMSG_DATA(h))->error ?: -EPROTO;
			if (!err && h->nlmsg_type == RTM_NEWROUTE)
				err = add_route(s, h);
		}
	}
}

static int dump_routes(struct route_set *s)
{
	struct {
		struct nlmsghdr h;
		struct rtmsg rt;
	} req = {
		.h = { .nlmsg_len = sizeof(req),
		       .nlmsg_type = RTM_GETROUTE,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		       .nlmsg_seq = ROUTE_DUMP_SEQ },
		.rt = { .rtm_family = AF_UNSPEC },
	};
	char *buf = malloc(ROUTE_BUF_LEN);
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), err;

	if (fd < 0 || !buf) {
		err = -errno;
		goto out;
	}
	err = send(fd, &req, sizeof(req), 0) < 0 ? -errno : read_dump(fd, s, buf);
out:
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	free(buf);
	return err;
}

/* Is @name a loopback interface? One that vanished since the dump counts as one: skip it. */
static int is_loopback(int fd, const char *name)
{
	struct ifreq ifr = {};

	memcpy(ifr.ifr_name, name, IF_NAMESIZE);
	return ioctl(fd, SIOCGIFFLAGS, &ifr) < 0 || (ifr.ifr_flags & IFF_LOOPBACK);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

int route_default_ifaces(char (*names)[IF_NAMESIZE], size_t max, size_t *n)
{
	struct route_set *s = calloc(1, sizeof(*s));
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	char name[IF_NAMESIZE];
	size_t i;
	int err = -ENOMEM;

	*n = 0;
	if (fd < 0)
		err = -errno;
	if (!s || fd < 0)
		goto out;
	err = dump_routes(s);
	for (i = 0; !err && i < s->n; i++) {
		if (!if_indextoname(s->idx[i], name) || is_loopback(fd, name))
			continue; /* gone since the dump, or loopback */
		if (*n == max) {
			err = -E2BIG;
			break;
		}
		memcpy(names[(*n)++], name, IF_NAMESIZE);
	}
	if (!err)
		qsort(names, *n, IF_NAMESIZE, by_name);
out:
	if (fd >= 0 && close(fd) && !err)
		err = -errno;
	free(s);
	return err;
}
