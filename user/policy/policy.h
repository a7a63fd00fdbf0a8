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

#include "sluice/addr.h"
#include "sluice/ctl.h"
#include "sluice/policy.h"
#include "base/diag.h"
#include "policy/units.h"

#define POLICY_PROTO_ANY      0 /* match every IP protocol; IPPROTO_IP is never a match value */
#define POLICY_FILE_MAX_BYTES (1 << 20) /* larger policy files are refused */
#define POLICY_NESTING_MAX    16	/* collections inside collections; a file needs 5 */
#define POLICY_IFNAME_LEN     16	/* IFNAMSIZ */
#define POLICY_MAX_IFACES     64

#define POLICY_MAX_PREFIXES	  1024	/* entries of one prefix list */
#define POLICY_ALLOW_MAX_PREFIXES 65536 /* entries of the allowlist */

/* An address or prefix; IPv4 is stored IPv4-mapped, as in the kernel. */
struct policy_prefix {
	__u8 addr[SLUICE_ADDR_LEN]; /* network order; bits past @bits are zero */
	__u8 bits;		    /* in the mapped space: IPv4 /24 is 96 + 24 = 120 */
	struct src_pos pos;
};

struct policy_prefix_list {
	struct policy_prefix *v; /* owned */
	size_t n;
};

struct policy_match {
	__u8 proto;    /* IPPROTO_TCP, _UDP, _ICMP, _ICMPV6 or POLICY_PROTO_ANY */
	int has_port;  /* 0: any destination port */
	__u16 port_lo; /* host order, inclusive; port_lo == port_hi for one port */
	__u16 port_hi;
	int tcp_syn;			      /* only SYN without ACK (proto must be tcp) */
	struct policy_prefix_list src;	      /* empty: any source */
	struct policy_prefix_list src_except; /* sources in @src that do not match */
	struct policy_prefix_list dst;	      /* empty: any destination */
	char (*ifaces)[POLICY_IFNAME_LEN];    /* owned; none: every interface */
	size_t n_ifaces;
};

#define POLICY_URL_LEN	     256
#define POLICY_NAME_MAX	     128 /* a node or fleet name, with its NUL */
#define POLICY_FLEET_DEFAULT "sluice"
#define POLICY_PATH_LEN	     4096

/* One store endpoint (Redis). */
struct policy_store {
	char url[POLICY_URL_LEN];	     /* redis://host:port or unix:///path; "" none */
	char username[POLICY_NAME_MAX];	     /* a Redis ACL user; "" the default user */
	char password_file[POLICY_PATH_LEN]; /* "" none: then $SLUICE_STORE_PASSWORD, if set */
	__u64 timeout_ns;		     /* every connect and command */
	int cleartext_auth;		     /* a password may cross to cluster:// nodes in clear */
	struct src_pos pos;
};

#define POLICY_STORE_TIMEOUT_NS_DEFAULT 5000000ULL     /* 5 ms */
#define POLICY_SYNC_INTERVAL_NS_DEFAULT 100000000ULL   /* 100 ms */
#define POLICY_HOLD_DOWN_NS_DEFAULT	10000000000ULL /* 10 s */

#define POLICY_LIST_LEN		      32	    /* a ban list's name, NUL included */
#define POLICY_ESCALATE_AFTER_MAX     1000000000ULL /* denials: a billion, past any window's flood */
#define POLICY_ESCALATE_WITHIN_MIN_NS 1000000000ULL    /* 1 s: the agent looks 4 times a second */
#define POLICY_ESCALATE_WITHIN_MAX_NS 3600000000000ULL /* 1 h: the agent keeps 64 slots of it */
#define POLICY_ESCALATE_BAN_MIN_NS    1000000000ULL    /* 1 s */
#define POLICY_ESCALATE_BAN_MAX_NS    2592000000000000ULL /* 30 days; sluice ban takes longer */

/*
 * escalate: a key denied @after times within @within_ns becomes a ban of
 * its source prefix for @ban_ns on ban list @list (agent/escalate.h).
 */
struct policy_escalate {
	int on; /* 0: the policy has no escalate */
	__u64 after;
	__u64 within_ns;
	__u64 ban_ns;
	char list[POLICY_LIST_LEN];
};

/*
 * While the agent is lost or the store is failing: @mode, and for
 * SLUICE_FAIL_DEGRADED, closed once the fault has lasted closed_after_ns
 * (policy.closed_after_ns; 0 = never).
 */
struct policy {
	char name[SLUICE_NAME_LEN];
	struct policy_match match;
	int keyed;	  /* 0: one global key for the policy */
	__u8 ipv4_prefix; /* 1..32 when keyed */
	__u8 ipv6_prefix; /* 1..128 when keyed */
	struct policy_rate rate;
	__u64 burst;			/* cost units, >= 1 */
	enum sluice_mode mode;		/* enforce (default) or shadow */
	enum sluice_scope scope;	/* node (default) or cluster (needs a store) */
	int cold_strict;		/* cluster: cold_mode strict, a key without a lease drops */
	int clock_precise;		/* clock: precise (bpf_ktime_get_ns), not coarse */
	enum sluice_class class;	/* shedding (default) or abuse */
	enum sluice_fail on_agent_loss; /* default by class: degraded */
	enum sluice_fail on_store_error; /* default by class: degraded */
	__u64 closed_after_ns;		 /* default by class: shedding 0 (never), abuse 30 s */
	int has_local_limit;		 /* else the degraded bound is the policy's own limit */
	struct policy_rate local_rate;	 /* same cost unit as @rate, no looser */
	__u32 sample;			 /* events.sample: 1 drop in N is an event; 0 none */
	__u64 local_burst;		 /* default: burst scaled by local/rate, at least 1 */
	struct policy_escalate escalate; /* repeated denials into a ban */
	struct src_pos pos;		 /* the policy's mapping in the file */
	struct src_pos rate_pos;
	struct src_pos burst_pos;
};

#define POLICY_HEARTBEAT_NS_DEFAULT	1000000000ULL  /* 1 s */
#define POLICY_AGENT_TIMEOUT_NS_DEFAULT 5000000000ULL  /* 5 s */
#define POLICY_CLOSED_AFTER_NS_ABUSE	30000000000ULL /* 30 s */

struct policy_set {
	char ifaces[POLICY_MAX_IFACES][POLICY_IFNAME_LEN];
	size_t n_ifaces;
	struct policy_prefix_list allow; /* sources never limited, in any mode */
	__u64 heartbeat_ns;		 /* agent.heartbeat */
	__u64 agent_timeout_ns;		 /* agent.timeout: older heartbeat = agent lost */
	struct policy_store store;	 /* store: the shared budget; url "" when absent */
	struct policy_store abuse_store; /* store.abuse: abuse policies' own endpoint, or "" */
	__u64 sync_interval_ns;		 /* store.sync_interval */
	char fleet[POLICY_NAME_MAX];	 /* store.fleet: the membership key; default "sluice" */
	char node_name[POLICY_NAME_MAX]; /* node.name: this node in the fleet; "" = hostname */
	__u64 hold_down_ns;		 /* store.hold_down: healthy this long to leave a fault */
	enum sluice_unparsed unparsed;	 /* unparsed: headers the program cannot finish */
	struct src_pos unparsed_pos;	 /* of its value; {0} when the default */
	enum sluice_orphan orphan;	 /* fragments.orphan: a later fragment without a first */
	struct src_pos orphan_pos;	 /* of its value; {0} when the default */
	__u32 sample;			 /* events.sample of the drops no policy makes; 0 none */
	struct policy *policies;
	size_t n_policies;
};

/*
 * What a parsed set must also satisfy, which only its compiled form knows:
 * every rate and burst within gcra.h's range, at most SLUICE_MAX_LAYERS
 * policies on one packet, prefix sets and classifier lists that fit the
 * maps, on any interface. policy_set__load() calls it on every set it
 * returns. 0, -EINVAL with every problem in @diags, or -ENOMEM.
 */
int policy_validate(const struct policy_set *ps, struct diag_list *diags);

/*
 * Parse and validate @path (policy_validate() included). On success returns a policy_set the caller
 * frees with policy_set__free(). On failure returns NULL with errno set;
 * for bad input (errno EINVAL) every problem found is in @diags, whose
 * file member is set to @path.
 */
struct policy_set *policy_set__load(const char *path, struct diag_list *diags);

/*
 * Parse @buf as policy_set__load() does, without policy_validate(): every
 * field and what spans them, not what only compiling knows. @name is what
 * messages call the file.
 */
struct policy_set *policy_set__parse(const char *name, const char *buf, size_t len,
				     struct diag_list *diags);

void policy_set__free(struct policy_set *ps);

/* Does policy @p apply on interface @iface (NULL: any)? */
int policy_on_iface(const struct policy *p, const char *iface);

/* The word of match.proto for @proto ("tcp", ..., "any"), or NULL for none. */
const char *policy_proto_name(__u8 proto);

/* "10.0.0.0/8", "2001:db8::/32", "192.0.2.1": 0, or -EINVAL with a message in @err. */
int policy_parse_prefix(const char *s, struct policy_prefix *out, char *err, size_t errlen);

#endif /* SLUICE_POLICY_H */
