/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The policy file: YAML in, a validated struct policy_set out, with every
 * error of the file reported as FILE:LINE:COL: FIELD: problem. This is the
 * only code that reads YAML, and it makes no BPF calls; compile.c turns a
 * policy_set into map entries.
 */
#ifndef SLUICE_POLICY_H
#define SLUICE_POLICY_H

#include <linux/types.h>

#include "sluice/abi.h"
#include "diag.h"

#define POLICY_PROTO_ANY 0 /* match every IP protocol; IPPROTO_IP is never a match value */
#define POLICY_FILE_MAX_BYTES (1 << 20) /* larger policy files are refused */
#define POLICY_IFNAME_LEN 16		/* IFNAMSIZ */
#define POLICY_MAX_IFACES 64

struct policy_rate {
	__u64 amount;	 /* cost units admitted per period_ns: packets or bytes */
	__u64 period_ns; /* > 0; bit rates are stored as bits per (8 × period) */
	enum sluice_cost cost;
};

struct policy_match {
	__u8 proto;	/* IPPROTO_TCP, _UDP, _ICMP, _ICMPV6 or POLICY_PROTO_ANY */
	int has_port;	/* 0: any destination port */
	__u16 port_lo;	/* host order, inclusive; port_lo == port_hi for one port */
	__u16 port_hi;
	int tcp_syn;	/* only SYN without ACK (proto must be tcp) */
};

struct policy {
	char name[SLUICE_NAME_LEN];
	struct policy_match match;
	int keyed;		/* 0: one global key for the policy */
	__u8 ipv4_prefix;	/* 1..32 when keyed */
	__u8 ipv6_prefix;	/* 1..128 when keyed */
	struct policy_rate rate;
	__u64 burst;		/* cost units, >= 1 */
	struct src_pos pos;	/* the policy's mapping in the file */
	struct src_pos rate_pos;
	struct src_pos burst_pos;
};

struct policy_set {
	char ifaces[POLICY_MAX_IFACES][POLICY_IFNAME_LEN];
	size_t n_ifaces;
	struct policy *policies;
	size_t n_policies;
};

/*
 * Parse and validate @path. On success returns a policy_set the caller
 * frees with policy_set__free(). On failure returns NULL with errno set;
 * for bad input (errno EINVAL) every problem found is in @diags, whose
 * file member is set to @path.
 */
struct policy_set *policy_set__load(const char *path, struct diag_list *diags);

/* Same, from a buffer; @name is what messages call the file. */
struct policy_set *policy_set__parse(const char *name, const char *buf, size_t len,
				     struct diag_list *diags);

void policy_set__free(struct policy_set *ps);

/* "100/s", "5/15m", "10Mbit/s": 0, or -EINVAL with a message in @err. */
int policy_parse_rate(const char *s, struct policy_rate *out, char *err, size_t errlen);

#endif /* SLUICE_POLICY_H */
