/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The seam between the budget planner (planner.h) and its store: what one
 * sync round asks of a store, and the operations every store backend
 * offers. The planner and the store's thread (store.c) know only this;
 * Redis (one server, or Sentinel's master) and Redis Cluster are one backend
 * (backend_redis.h), an in-memory store for tests and simulations another
 * (backend_mem.h), and backends.h opens the one a URL names.
 *
 * A backend keeps, for each bucket, the conserving lease of
 * docs/shared-budget.md: tokens that refill at rate_units per
 * rate_period_us up to burst, less what nodes hold as leases; a lease
 * lives a TTL from its last grant, and one that expires is written off.
 * Buckets and hot sets are named by the planner; to a backend a name is
 * an opaque string (a bucket: a group's name and its field in it).
 */
#ifndef SLUICE_BACKEND_H
#define SLUICE_BACKEND_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#include "budget/fairshare.h"

#define STORE_URL_LEN	    256
#define STORE_ERR_LEN	    640 /* a URL, a backend's error and our words */
#define STORE_NAME_LEN	    160 /* a fleet, node or policy name (< 128) and a suffix */
#define LEASE_KEY_LEN	    320 /* a bucket group's or hot set's name, NUL-terminated */
#define LEASE_FIELD_LEN	    64	/* a bucket's field: lower-case hex digits, NUL-terminated */
#define LEASE_SCALED_MAX    (1ULL << 52) /* Lua numbers are doubles: exact below 2^53 */
#define LEASE_TTL_US_MAX    (1ULL << 40) /* ~12.7 days */
#define STORE_NODES_MAX	    65536	 /* a live node count above this is a lie, not a fleet */
#define STORE_HOT_LIMIT_MAX 65536	 /* hot set members read back per call, at most */
#define STORE_TIME_US_MAX   (1ULL << 53) /* a store's time in µs until 2255: above it, a lie */
#define BACKEND_SHARDS_MAX  16		 /* shards a backend reports, at most (metrics labels) */
#define BACKEND_ADDR_LEN    64		 /* a shard's host:port, NUL-terminated */

/*
 * One key's limit: rate_units per rate_period_us, at most burst outstanding
 * plus banked, and at most cap granted to one node at a time. Ranges
 * (checked, -EINVAL): all >= 1, burst × rate_period_us <= LEASE_SCALED_MAX,
 * rate_units <= LEASE_SCALED_MAX, cap <= burst; @key not empty, @field 1 to
 * LEASE_FIELD_LEN - 1 lower-case hex digits.
 */
struct lease_key {
	char key[LEASE_KEY_LEN];     /* the group of buckets that holds it */
	char field[LEASE_FIELD_LEN]; /* the bucket in that group */
	__u64 rate_units;	     /* cost units refilled per rate_period_us */
	__u64 rate_period_us;
	__u64 burst;	 /* cost units */
	__u64 tolerance; /* the policy's GCRA tolerance (ticks, gcra.h): a rate lease's burst */
	__u64 cap;	 /* cost units: the most one node may hold at a time */
	int start_empty; /* a bucket that does not exist yet starts empty, not full */
};

struct lease_req {
	const struct lease_key *k;
	__u64 held;  /* what this node held at its last answer: the store may answer up to
		      * max(held, cap) (a lease granted before the burst was lowered) */
	__u64 used;  /* units this node spent since its last call; clamped to what it holds */
	__u64 want;  /* units to hold after the call; <= LEASE_SCALED_MAX */
	int release; /* hand back what is held beyond want: the node can no longer spend it */
};

struct lease_grant {
	__u64 held;	  /* units the node holds now: what it kept, plus @granted */
	__u64 granted;	  /* units added: min(want, cap) − kept, at most the whole tokens */
	__u64 expires_us; /* the store's time: spend nothing of this lease from then on */
	__u64 now_us;	  /* the store's time when the grant was made */
	int err;	  /* 0, or -EPROTO: an error or a reply out of range (see @err text) */
};

/* One policy's hot set in a budget sync. */
struct hot_req {
	char key[LEASE_KEY_LEN]; /* the set's name */
	const char *const *add;	 /* members this node saw hot: key addresses in hex */
	size_t n_add;
	__u64 ttl_us; /* members not seen hot this long leave the set */
	__u64 limit;  /* members returned at most, the most recent first; <= STORE_HOT_LIMIT_MAX */
};

/*
 * Everything one sync sends, in one round (one pipelined round trip on
 * Redis): the membership beat (when @fleet is set), every hot set, every
 * lease. For each lease, in order: write off expired leases of that
 * bucket, refill, take @used off what @holder holds (never below zero) and
 * top its lease up toward @want, valid for @lease_ttl_us from now.
 */
struct budget_sync {
	const char *fleet; /* the membership set; NULL: no beat */
	const char *node;
	__u64 beat_ttl_us;     /* members whose last beat is this old leave */
	__u64 live_nodes;      /* out: the fleet's live count, @node included */
	unsigned layout;       /* the newest store layout @node speaks (0: STORE_LAYOUT_LUMP) */
	unsigned fleet_layout; /* out, with @fleet: the layout every live member speaks */
	const struct hot_req *hot;
	size_t n_hot;
	/* Each returned member; non-zero refuses it (not a key: the reply is wrong). */
	int (*on_member)(void *arg, size_t hot, const char *member);
	void *arg;
	const char *holder; /* whose leases (one per node and interface) */
	__u64 lease_ttl_us;
	const struct lease_req *leases;
	size_t n_leases;
	struct lease_grant *grants; /* out: one per lease, in order */
	size_t failed;		    /* out, on a sharded store: calls whose shard failed (their
				     * grants' err says which); the others' answers stand */
	size_t hot_failed;	    /* out, on a sharded store: hot sets not read (shard failed) */
};

/*
 * The store layouts (docs/shared-budget.md, "Rolling upgrades across the
 * layout"): lump leases' buckets (LEASE_BUCKET_FMT), and rate leases'
 * (LEASE_RATE_FMT). Agents of different layouts would draw on different
 * buckets, each up to the limit: so a node that speaks the rate layout
 * also beats in its speakers' set, and the fleet uses it only while
 * every live member does (fleet_layout); a member of an older agent
 * counts as one that does not until its beat expires.
 */
#define STORE_LAYOUT_LUMP 1U
#define STORE_LAYOUT_RATE 2U

/*
 * Whether @b's input is in range (every key, TTL, limit and the holder);
 * 0, or -EINVAL with the cause in @err: then nothing may be sent.
 */
int budget_sync_check(const struct budget_sync *b, char *err, size_t len);

/*
 * Rate leases (docs/shared-budget.md, "Rate leases"): a node's share of a
 * key's rate and burst until an expiry, max-min fair among the nodes
 * that ask (budget/fairshare.h). Shares are in 2^-RATE_LEASE_SHIFT of a
 * unit, so the floor of an even split loses less than a unit in all for
 * up to that many nodes. Burst shares are granted in whole units
 * (RATE_LEASE_UNIT): a kernel spends whole units, so a share below one
 * would admit nothing.
 */
#define RATE_LEASE_SHIFT     10
#define RATE_LEASE_UNIT	     1024	  /* 1 << RATE_LEASE_SHIFT, a literal for RATE_LUA */
#define RATE_LEASE_UNITS_MAX (1ULL << 42) /* rate_units, burst: scaled, within FS_CAP_MAX */

struct rate_lease_req {
	const struct lease_key *k; /* rate_units per rate_period_us and burst: R and B */
	__u64 want_rate;	   /* units per rate_period_us, scaled (above R: R) */
	__u64 want_burst;	   /* units, scaled (above B: B) */
	int settled; /* the answer to this node's last call of this key arrived, and it
		      * enforces, since before this call, at most that and its wants */
	__u64 level; /* units, scaled: what its kernel could still have spent of the burst
		      * this call gives up (struct fs_bank); banked up to what it frees */
};

struct rate_lease_grant {
	__u64 rate, burst; /* the node's shares until @expires_us, scaled */
	__u64 fair_rate,
		fair_burst; /* its max-min fair shares: above its shares, others hold them */
	__u64 expires_us;   /* the store's time: enforce nothing of it from then on */
	__u64 now_us;	    /* the store's time when the grant was made */
	/* the key's bank, taken by this call (zero: none; Redis sends no exp_us): its level is
	 * credited */
	struct fs_bank taken;
	int err; /* 0, or -EPROTO, as a lease_grant's */
};

/* One node's renewals of rate leases, in one round. */
struct rate_sync {
	const char *holder; /* whose leases (one per node and interface) */
	__u64 lease_ttl_us;
	const struct rate_lease_req *leases;
	size_t n_leases;
	struct rate_lease_grant *grants; /* out: one per lease, in order */
};

/* Whether @r's input is in range; 0, or -EINVAL with the cause in @err: then send nothing. */
int rate_sync_check(const struct rate_sync *r, char *err, size_t len);

/* What a backend opens from. */
struct backend_config {
	char url[STORE_URL_LEN];       /* the store's URL; the backend's scheme */
	char username[STORE_NAME_LEN]; /* empty: the default user */
	char password[STORE_URL_LEN];  /* empty: none */
	__u64 timeout_ns;	       /* every connect, and every round trip as a whole */
	int cancel_fd;		       /* readable: give up any wait at once; -1: never */
};

/* One shard of a sharded store (a cluster's primary), as its report shows it. */
struct store_shard {
	char addr[BACKEND_ADDR_LEN]; /* host:port */
	__u64 ok, failed;	     /* round trips to it since the store opened */
	int down;		     /* its last round trip failed */
};

/* A backend's totals since it opened, for the store's report. */
struct backend_report {
	__u64 n_shards;	     /* 0: not sharded, or not known yet */
	__u64 map_refreshes; /* shard maps read */
	struct store_shard shards[BACKEND_SHARDS_MAX];
};

struct budget_backend;

/*
 * A backend's operations. All run on the store's thread, one at a time.
 * Every one that can fail returns 0 or -errno with the cause in @err
 * (-EPROTO: the store answered, wrongly).
 */
struct backend_ops {
	/* Connect unless connected (a sharded store connects per shard, on use). */
	int (*connect)(struct budget_backend *be, char *err, size_t len);
	int (*is_connected)(const struct budget_backend *be);
	/* Forget the connection after a failed round: the next full sync reconnects. */
	void (*drop)(struct budget_backend *be);
	/* Is the store there (a sync without a node: PING, or a cluster's slot map)? */
	int (*probe)(struct budget_backend *be, char *err, size_t len);
	/*
	 * The fleet's news counter @key (LEASE_NEWS_FMT) into *@value, 0
	 * while it does not exist; @bump adds one first. A store that answers
	 * it is there, as a probe's. -EAGAIN: on a sharded store, the shard
	 * of @key alone failed; the caller learns the rest from a sync.
	 */
	int (*news)(struct budget_backend *be, const char *key, int bump, __u64 *value, char *err,
		    size_t len);
	/*
	 * Run @b (budget_sync_check() first: -EINVAL sends nothing). 0 when
	 * every answer arrived and is what the store can answer (a hot set:
	 * at most its limit of members); -EPROTO when any is an error or out
	 * of range (each grant's err says whether its key was); -ENOMEM; or
	 * -EIO, -ETIMEDOUT, -ECANCELED (the connection failed: drop it). On a
	 * sharded store a shard that fails fails only its own calls
	 * (@b->failed, each grant's err; a failed beat leaves
	 * @b->live_nodes 0, a failed hot set is not read): 0 when any call was
	 * answered, else the first failure.
	 */
	int (*sync)(struct budget_backend *be, struct budget_sync *b, char *err, size_t len);
	/*
	 * Renew @r's rate leases (rate_sync_check() first), as sync does
	 * leases: 0, -EPROTO, -ENOMEM or a failed connection. NULL: the
	 * backend has none (backend__rate_lease(): -EOPNOTSUPP).
	 */
	int (*rate_lease)(struct budget_backend *be, struct rate_sync *r, char *err, size_t len);
	/* Whether the shard that holds group @key answered its last round trip (else 1). */
	int (*is_reachable)(const struct budget_backend *be, const char *key);
	void (*report)(const struct budget_backend *be, struct backend_report *out);
	void (*free)(struct budget_backend *be);
};

/* A backend: its implementation's state begins with this. */
struct budget_backend {
	const struct backend_ops *ops;
};

static inline int backend__sync(struct budget_backend *be, struct budget_sync *b, char *err,
				size_t len)
{
	return be->ops->sync(be, b, err, len);
}

static inline int backend__rate_lease(struct budget_backend *be, struct rate_sync *r, char *err,
				      size_t len)
{
	if (!be->ops->rate_lease) {
		snprintf(err, len, "this store has no rate leases");
		return -EOPNOTSUPP;
	}
	return be->ops->rate_lease(be, r, err, len);
}

static inline int backend__is_reachable(const struct budget_backend *be, const char *key)
{
	return be->ops->is_reachable(be, key);
}

/* Accepts NULL. */
static inline void backend__free(struct budget_backend *be)
{
	if (be)
		be->ops->free(be);
}

#endif /* SLUICE_BACKEND_H */
