/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The store's key layout: the names the planner gives buckets and hot
 * sets. Every backend stores under them as opaque names; they are chosen
 * so that Redis Cluster, whose slot function is here, spreads them evenly
 * and puts the buckets of one call on one slot.
 */
#ifndef SLUICE_KEYS_H
#define SLUICE_KEYS_H

#include <stddef.h>
#include <linux/types.h>

#define CLUSTER_SLOTS	16384 /* the Redis Cluster spec's hash slots */
#define LEASE_GROUPS	24    /* bucket keys of a policy share this many hash tags */
#define LEASE_TAG_TRIES 4096  /* candidates tried for a group's tag (keys_group_tags()) */

/*
 * The keys (#17): the part in braces is the hash tag. A policy's buckets
 * fall in LEASE_GROUPS groups by their address (keys_group()), each group
 * on one slot: on a Redis Cluster one lease call carries the keys of a
 * group (their scripts may only touch one slot). Each group's tag is
 * chosen so that the groups' slots are spread evenly over the slot space
 * (keys_group_tags()): a cluster whose shards hold equal ranges of slots,
 * as `redis-cli --cluster create` makes them, gives 2, 3, 4, 6, 8, 12 or
 * 24 shards the same number of groups. Each policy's hot set is on a slot
 * of its own. Fleet names with braces are refused for cluster stores
 * (they would be the tag).
 *
 * A group's buckets are the fields of one hash (redis.h), each named by
 * its key's address in hex. "b2": the second layout (the first, "b", had
 * a hash per key); agents of different layouts draw on different buckets.
 */
#define LEASE_BUCKET_FMT "%s:b2:{%s:%u}" /* fleet, policy, group's tag */
#define LEASE_HOT_FMT	 "%s:hot:{%s}"	 /* fleet, policy */
/*
 * Rate leases' names (redis_scripts.h, RATE_KEY_ARGS): the same groups
 * and tags as the buckets', so a group's rate leases are one call on one
 * slot; each key's leases are a hash of its own, this name, ':' and the
 * key's field. "r2": a summary and a field a holder; "r1" held every
 * holder in one field of a group's hash.
 */
/*
 * The fleet set's members that speak a layout (budget/backend.h,
 * STORE_LAYOUT_*): named after the fleet set, so that an ACL user's key
 * pattern for the fleet (~<fleet>:*, docs/shared-budget.md) covers it,
 * with the fleet set's whole name as the hash tag, so both are on one
 * slot (a fleet name with braces is refused for cluster stores, above).
 */
#define LEASE_LAYOUT_FMT "%s:l%u:{%s}" /* the fleet set, the layout, the fleet set */
/*
 * The fleet's news counter (budget/backend.h, news): bumped when a node
 * joins the fleet or a key joins a hot set, so that nodes which beat and
 * read the hot sets only now and then learn of either at their next
 * sync. Named and tagged as the speakers' set is.
 */
#define LEASE_NEWS_FMT "%s:news:{%s}"  /* the fleet set, the fleet set */
#define LEASE_RATE_FMT "%s:r2:{%s:%u}" /* fleet, policy, group's tag: then ":<field>" */

/*
 * The hash slot of @key (@len bytes): CRC16 (XMODEM) of its hash tag or
 * the whole key, mod CLUSTER_SLOTS.
 */
__u16 cluster_key_slot(const char *key, size_t len);

/* The group of the key whose address is @hex (LEASE_BUCKET_FMT): the same on every node. */
unsigned int keys_group(const char *hex);

/*
 * Choose policy @name's group tags: group g's tag is the first of g,
 * g + LEASE_GROUPS, g + 2 LEASE_GROUPS, ... whose slot falls in the g-th
 * of LEASE_GROUPS equal ranges of slots. Every node chooses the same.
 */
void keys_group_tags(const char *name, __u32 tag[LEASE_GROUPS]);

#endif /* SLUICE_KEYS_H */
