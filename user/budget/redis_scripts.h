/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The Lua scripts of the shared budget's Redis side (#5), and the layout
 * of their arguments and replies, which redis.c builds and decodes.
 *
 * A key's bucket is one field of a Redis hash that holds many keys' buckets
 * (one group of a policy, keys.h), so a call reads and writes all the
 * keys it carries of one hash in one HMGET and one HSET (#17). The field is
 * the key's address in hex; its value, words separated by one space:
 *   tok ts live [node units exp]...
 *   tok     tokens, scaled: units × rate_period_us (exact integers)
 *   ts      Redis TIME of the last refill, µs
 *   live    Redis TIME from which the bucket is full and holds no lease, µs:
 *           past it the field is as good as absent, and is reaped
 *   node units exp
 *           a lease: units granted to node and not yet accounted for, and
 *           the Redis TIME when it expires, µs
 * with the invariant tok + Σ live lease × rate_period_us <= burst × rate_period_us.
 * The hash's own field 'live' is the Redis TIME until which its TTL keeps it.
 */
#ifndef SLUICE_REDIS_SCRIPTS_H
#define SLUICE_REDIS_SCRIPTS_H

#include "budget/conn.h"

/*
 * A hot set's members go in ZADDs of this many (HOT_LUA): one ZADD per
 * member made a policy's hot set the busiest part of its shard (#17), and
 * unpack() of Redis's Lua 5.1 returns at most 8,000 values.
 */
#define STORE_HOT_ZADD_MEMBERS 1000
/*
 * Fields a lease call samples in a hash for each bucket it created there
 * (absent, or past its live), and one more for the hash's 'live', to reap
 * those past their live. Only a created bucket can later die; sampling
 * twice as many as were created keeps a hash's dead fields, on average,
 * fewer than its live ones.
 */
#define LEASE_REAP_PER_KEY 2
/* A bucket hash's TTL is set with this much to spare (µs), so not at every call. */
#define LEASE_LIVE_SLACK_US 1000000
/*
 * A rate lease hash's TTL is set this many lease lives beyond its latest
 * expiry: a lone holder renewing every half life extends it once in four
 * renewals, not at each (a slack below the half life would).
 */
#define RATE_LIVE_SLACK_TTLS 2

/* The lease script's arguments a key (enum lease_key_arg, which it must match). */
#define LEASE_KEY_ARGS_N 10

/* The lease script's arguments: the call's, then LEASE_KEY_ARGS per key. */
enum lease_arg {
	LEASE_ARG_NODE,
	LEASE_ARG_TTL,
	LEASE_ARG_LIVE_SLACK, /* LEASE_LIVE_SLACK_US; rate leases': RATE_LIVE_SLACK_TTLS lives */
	LEASE_ARG_KEYS,	      /* then each key's */
};

enum lease_key_arg {
	LEASE_KEY_HASH,	 /* its hash: an index into KEYS, from 1 */
	LEASE_KEY_FIELD, /* its field in that hash */
	LEASE_KEY_UNITS,
	LEASE_KEY_PERIOD,
	LEASE_KEY_BURST,
	LEASE_KEY_CAP,
	LEASE_KEY_USED,
	LEASE_KEY_WANT,
	LEASE_KEY_EMPTY,
	LEASE_KEY_RELEASE,
	LEASE_KEY_ARGS,
};

enum hot_arg {
	HOT_ARG_TTL,
	HOT_ARG_LIMIT,
	HOT_ARG_MEMBERS, /* then the members */
};

/* A lease reply: {held, expires_us, now_us, granted}. */
enum grant_field { GRANT_HELD, GRANT_EXPIRES, GRANT_NOW, GRANT_GRANTED, GRANT_FIELDS };

/*
 * The rate lease script (RATE_LUA): the call's arguments are the lease
 * script's (enum lease_arg, the node the holder), then RATE_KEY_ARGS per
 * key. Each key has a hash of its own, its group's name (LEASE_RATE_FMT),
 * ':' and its field, so a group's keys share a slot. Its field '' (no
 * holder's name: a holder is a word of printable characters) is the
 * key's summary, RATE_SUMMARY_WORDS words separated by one space:
 *   live tl ev np held_r held_b cap_r cap_b [c sum s hi lo] [c sum s hi lo] nf
 *   live    Redis TIME from which no holder may enforce anything, µs:
 *           past it the key is as good as absent, and is deleted
 *   tl      the hash's TTL lasts until then, µs
 *   ev      no holder's share or want lapses before then, µs
 *   np      the holders whose lease is live (their wants are split)
 *   held_*  the sum of what every holder may enforce (fs_held()), and
 *           of the bank's shares
 *   cap_*   the capacities the split was made for
 *   c sum s hi lo
 *           for the rate, then the burst: the max-min split of the live
 *           wants, its level s (RATE_LUA_INF: every want fits), the
 *           count and sum of the wants at most s, a bound above the
 *           largest of them and one below the smallest want above s
 *   nf      the holders' fields in the hash, live or not: when the
 *           caller's is the only one, nothing of another can lapse, and
 *           a call past ev needs no HGETALL (a key one node holds)
 * and each holder's field, named by the holder, its lease (struct
 * fs_lease of budget/fairshare.h), RATE_HOLDER_WORDS words:
 *   g_rate g_burst exp p_rate p_burst p_exp w_rate w_burst
 * shares scaled by 2^RATE_LEASE_SHIFT. The key's bank (struct fs_bank),
 * while it holds any, is the field RATE_BANK_FIELD in a holder's words:
 *   rate burst exp level at 0 0 0
 * that is g = {rate, burst} until exp, p = {level, at} with p_exp 0 and
 * w = {0, 0}: to a script that knows no bank, a holder that holds the
 * bank's rate and burst until exp and wants nothing (p_exp 0: it reads
 * no share in p). So the summary counts it as a holder, its shares in
 * held_* (a call that changes any of its words writes ev as its own
 * time: the next call rebuilds the summary), and an older script counts
 * it too, never pays it out, and deletes it once it has lapsed.
 */
#define RATE_SUMMARY_WORDS 19
#define RATE_HOLDER_WORDS  8
#define RATE_LUA_INF	   9007199254740992 /* 2^53: above any share, and exact in Lua */
#define RATE_HDEL_FIELDS   1000 /* dead holders deleted an HDEL: well within unpack()'s 8,000 */
#define RATE_KEY_ARGS_N	   8
#define RATE_BANK_FIELD	   " bank" /* a space: no holder's name (a holder is one word) */

enum rate_key_arg {
	RATE_KEY_HASH,	     /* its hash: an index into KEYS, from 1 */
	RATE_KEY_FIELD,	     /* its field in that hash */
	RATE_KEY_CAP_RATE,   /* R, scaled */
	RATE_KEY_CAP_BURST,  /* B, scaled */
	RATE_KEY_WANT_RATE,  /* scaled */
	RATE_KEY_WANT_BURST, /* scaled */
	RATE_KEY_SETTLED,    /* 1: fs_ask's settled */
	RATE_KEY_LEVEL,	     /* fs_ask's level, scaled */
	RATE_KEY_ARGS,
};

/*
 * A rate lease reply, per key: {rate, burst, fair_rate, fair_burst,
 * expires_us, now_us, taken_level, taken_rate, taken_burst, taken_at}:
 * the key's bank as the call took it (fs_answer.taken; zeros: none).
 */
enum rate_field {
	RATE_GRANT_RATE,
	RATE_GRANT_BURST,
	RATE_FAIR_RATE,
	RATE_FAIR_BURST,
	RATE_EXPIRES,
	RATE_NOW,
	RATE_TAKEN_LEVEL,
	RATE_TAKEN_RATE,
	RATE_TAKEN_BURST,
	RATE_TAKEN_AT,
	RATE_FIELDS,
};

/* Each script's source, by enum store_script. */
extern const char *const redis_script_src[STORE_SCRIPT_MAX];

#endif /* SLUICE_REDIS_SCRIPTS_H */
