// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The shared budget's Redis side (#5): the conserving-lease script, the
 * membership script, and the pipelined calls that run them. Only the
 * store's thread calls these; nothing here touches the kernel or the agent.
 * The bound they keep is argued in docs/shared-budget.md and at the top of
 * LEASE_LUA.
 */
#include <errno.h>
#include <hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define NUM_LEN 24 /* a __u64 in decimal, NUL-terminated */

/*
 * KEYS[1] the bucket hash. ARGV: node, ttl_us, rate_units, rate_period_us,
 * burst, cap, used, want. Returns {granted, expires_us, now_us}.
 *
 * Invariant, after every call: tok + Σ live lease × P <= burst × P, where
 * P = rate_period_us and tok is scaled by P, so refill (elapsed_us × units)
 * is an exact integer and nothing drifts. Every number stays below 2^53
 * (the C side checks burst × P and units against 2^52), so Lua's doubles
 * are exact. Values are written with %d: tostring() would print %.14g.
 *
 * The bound: a unit is spent only out of a lease, a lease only out of tok,
 * and tok gains at most units × elapsed / P by refill plus what is returned
 * unspent. So the fleet spends, over any interval Δ, at most what was held
 * at its start (tok + outstanding <= burst) plus units × Δ / P. A lease that
 * expires is deleted without crediting tok (written off): its unspent part
 * is lost to the fleet until refill covers it again, which can only
 * under-admit. A node gives back granted − min(used, granted): reporting
 * more than it was granted returns nothing, and it never holds more than
 * cap, so no node can drain more than cap at a time.
 */
static const char LEASE_LUA[] =
	"local key, node = KEYS[1], ARGV[1]\n"
	"local ttl, units, per = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])\n"
	"local burst, cap = tonumber(ARGV[5]), tonumber(ARGV[6])\n"
	"local used, want = tonumber(ARGV[7]), tonumber(ARGV[8])\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local h = redis.call('HGETALL', key)\n"
	"local f = {}\n"
	"for i = 1, #h, 2 do f[h[i]] = tonumber(h[i + 1]) end\n"
	"local tok = f['tok'] or burst * per\n"
	"local ts = f['ts'] or now\n"
	"local out, maxexp = 0, now + ttl\n"
	"for name, v in pairs(f) do\n"
	"  if string.sub(name, 1, 6) == 'lease:' then\n"
	"    local e = f['exp:' .. string.sub(name, 7)] or 0\n"
	"    if e <= now then\n"
	"      redis.call('HDEL', key, name, 'exp:' .. string.sub(name, 7))\n"
	"      f[name] = nil\n"
	"    else\n"
	"      out = out + v\n"
	"      if e > maxexp then maxexp = e end\n"
	"    end\n"
	"  end\n"
	"end\n"
	/* Refill toward the room the live leases leave; never overflow 2^53. */
	"local room = (burst - out) * per\n"
	"if room < 0 then room = 0 end\n"
	"if now > ts then\n"
	"  local gap = room - tok\n"
	"  if gap > 0 then\n"
	"    if now - ts >= math.ceil(gap / units) then tok = room\n"
	"    else tok = tok + (now - ts) * units end\n"
	"  end\n"
	"  ts = now\n"
	"end\n"
	"if tok > room then tok = room end\n"
	/* The caller's live lease: its unspent part comes back, no more. */
	"local mine = f['lease:' .. node]\n"
	"if mine then\n"
	"  if used > mine then used = mine end\n"
	"  tok = tok + (mine - used) * per\n"
	"end\n"
	"local g = math.floor(tok / per)\n"
	"if g * per > tok then g = g - 1 end\n"
	"if want < g then g = want end\n"
	"if cap < g then g = cap end\n"
	"tok = tok - g * per\n"
	"local fmt = function(x) return string.format('%d', x) end\n"
	"redis.call('HSET', key, 'tok', fmt(tok), 'ts', fmt(ts))\n"
	"if g > 0 then\n"
	"  redis.call('HSET', key, 'lease:' .. node, fmt(g), 'exp:' .. node, fmt(now + ttl))\n"
	"else\n"
	"  redis.call('HDEL', key, 'lease:' .. node, 'exp:' .. node)\n"
	"end\n"
	/* Idle: gone once every lease has expired and the bucket is full again. */
	"local idle_us = maxexp - now + math.ceil(burst * per / units)\n"
	"redis.call('PEXPIRE', key, fmt(math.ceil(idle_us / 1000) + 1))\n"
	"return {g, now + ttl, now}\n";

/*
 * KEYS[1] the fleet sorted set (member: node, score: Redis TIME of its last
 * beat, µs). ARGV: node, ttl_us. Returns the number of live members.
 */
static const char BEAT_LUA[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local ttl = tonumber(ARGV[2])\n"
	"redis.call('ZADD', KEYS[1], string.format('%d', now), ARGV[1])\n"
	"redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now - ttl))\n"
	"redis.call('PEXPIRE', KEYS[1], string.format('%d', math.ceil(ttl / 1000) + 1))\n"
	"return redis.call('ZCARD', KEYS[1])\n";

enum lease_arg {
	LEASE_ARG_NODE,
	LEASE_ARG_TTL,
	LEASE_ARG_UNITS,
	LEASE_ARG_PERIOD,
	LEASE_ARG_BURST,
	LEASE_ARG_CAP,
	LEASE_ARG_USED,
	LEASE_ARG_WANT,
	LEASE_ARG_MAX,
};

/* EVALSHA|EVAL, script, numkeys, key, then the script's arguments. */
#define CALL_HEAD 4
#define CALL_ARGS (CALL_HEAD + LEASE_ARG_MAX)

/* Load @src into Redis' script cache if @sha is "", keeping its SHA-1. */
static int script_load(redisContext *c, const char *src, char *sha, char *err, size_t len)
{
	redisReply *r;
	int ret = 0;

	if (sha[0])
		return 0;
	r = redisCommand(c, "SCRIPT LOAD %s", src);
	if (!r) {
		snprintf(err, len, "cannot load a script: %s", c->errstr);
		return -EIO;
	}
	if (r->type != REDIS_REPLY_STRING || r->len != LEASE_SHA_LEN - 1) {
		snprintf(err, len, "cannot load a script: %s",
			 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
		ret = -EPROTO;
	} else {
		memcpy(sha, r->str, LEASE_SHA_LEN);
	}
	freeReplyObject(r);
	return ret;
}

static int key_is_valid(const struct lease_key *k)
{
	return k->rate_units >= 1 && k->rate_units <= LEASE_SCALED_MAX && k->rate_period_us >= 1 &&
	       k->burst >= 1 && k->cap >= 1 && k->cap <= k->burst &&
	       k->burst <= LEASE_SCALED_MAX / k->rate_period_us && k->key[0];
}

static int reqs_are_valid(__u64 ttl_us, const struct lease_req *r, size_t n, char *err, size_t len)
{
	size_t i;

	if (ttl_us < 1 || ttl_us > LEASE_TTL_US_MAX) {
		snprintf(err, len, "lease ttl %" PRIu64 " us is out of range", (uint64_t)ttl_us);
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (!key_is_valid(r[i].k) || r[i].want > LEASE_SCALED_MAX) {
			snprintf(err, len, "lease key '%s' is out of range", r[i].k->key);
			return 0;
		}
	}
	return 1;
}

/* Append one call of the lease script for @q, by SHA-1 or, when @sha is NULL, by source. */
static int append_lease(redisContext *c, const char *sha, const char *node, __u64 ttl_us,
			const struct lease_req *q)
{
	char num[LEASE_ARG_MAX][NUM_LEN];
	const __u64 v[LEASE_ARG_MAX] = {
		[LEASE_ARG_TTL] = ttl_us,
		[LEASE_ARG_UNITS] = q->k->rate_units,
		[LEASE_ARG_PERIOD] = q->k->rate_period_us,
		[LEASE_ARG_BURST] = q->k->burst,
		[LEASE_ARG_CAP] = q->k->cap,
		[LEASE_ARG_USED] = q->used,
		[LEASE_ARG_WANT] = q->want,
	};
	const char *argv[CALL_ARGS] = { sha ? "EVALSHA" : "EVAL", sha ? sha : LEASE_LUA, "1",
					q->k->key };
	int i;

	argv[CALL_HEAD + LEASE_ARG_NODE] = node;
	for (i = LEASE_ARG_TTL; i < LEASE_ARG_MAX; i++) {
		snprintf(num[i], sizeof(num[i]), "%" PRIu64, (uint64_t)v[i]);
		argv[CALL_HEAD + i] = num[i];
	}
	return redisAppendCommandArgv(c, CALL_ARGS, argv, NULL) == REDIS_OK ? 0 : -EIO;
}

/* A NOSCRIPT error: the script did not run, so sending it again is safe. */
static int is_noscript(const redisReply *r)
{
	return r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", strlen("NOSCRIPT"));
}

/* Decode {granted, expires_us, now_us} into @g; 0 or -EPROTO with the cause in @err. */
static int grant_of(const redisReply *r, const char *key, struct lease_grant *g, char *err,
		    size_t len)
{
	memset(g, 0, sizeof(*g));
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER &&
	    r->element[1]->type == REDIS_REPLY_INTEGER &&
	    r->element[2]->type == REDIS_REPLY_INTEGER && r->element[0]->integer >= 0) {
		g->granted = r->element[0]->integer;
		g->expires_us = r->element[1]->integer;
		g->now_us = r->element[2]->integer;
		return 0;
	}
	if (!err[0])
		snprintf(err, len, "lease script failed on '%s': %s", key,
			 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
	g->err = -EPROTO;
	return g->err;
}

/*
 * Read the @n replies of one pipeline into @out. Replies that were
 * NOSCRIPT are marked in @again (and counted in the return value).
 */
static int read_grants(redisContext *c, const struct lease_req *r, size_t n,
		       struct lease_grant *out, unsigned char *again, char *err, size_t len)
{
	redisReply *rep;
	int n_again = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (redisGetReply(c, (void **)&rep) != REDIS_OK || !rep) {
			snprintf(err, len, "lease sync: %s", c->errstr);
			return -EIO;
		}
		again[i] = is_noscript(rep);
		if (again[i])
			n_again++;
		else
			grant_of(rep, r[i].k->key, &out[i], err, len);
		freeReplyObject(rep);
	}
	return n_again;
}

int store_lease_sync(struct redisContext *c, struct lease_scripts *sc, const char *node,
		     __u64 ttl_us, const struct lease_req *r, size_t n, struct lease_grant *out,
		     char *err, size_t len)
{
	unsigned char *again;
	size_t i;
	int ret;

	err[0] = '\0';
	if (!reqs_are_valid(ttl_us, r, n, err, len))
		return -EINVAL;
	ret = script_load(c, LEASE_LUA, sc->lease, err, len);
	if (ret)
		return ret;
	again = calloc(n ? n : 1, sizeof(*again));
	if (!again) {
		snprintf(err, len, "lease sync: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		if (append_lease(c, sc->lease, node, ttl_us, &r[i]))
			goto oom;
	ret = read_grants(c, r, n, out, again, err, len);
	if (ret <= 0)
		goto out;
	/* Redis restarted or flushed its scripts: send those again with the source. */
	sc->lease[0] = '\0';
	for (i = 0; i < n; i++)
		if (again[i] && append_lease(c, NULL, node, ttl_us, &r[i]))
			goto oom;
	for (i = 0; i < n; i++) {
		redisReply *rep;

		if (!again[i])
			continue;
		if (redisGetReply(c, (void **)&rep) != REDIS_OK || !rep) {
			snprintf(err, len, "lease sync: %s", c->errstr);
			ret = -EIO;
			goto out;
		}
		grant_of(rep, r[i].k->key, &out[i], err, len);
		freeReplyObject(rep);
	}
	ret = 0;
	goto out;
oom:
	snprintf(err, len, "lease sync: cannot queue a command: %s", c->errstr);
	ret = -EIO;
out:
	free(again);
	return ret;
}

int store_member_beat(struct redisContext *c, struct lease_scripts *sc, const char *fleet,
		      const char *node, __u64 ttl_us, __u64 *live_nodes, char *err, size_t len)
{
	char ttl[NUM_LEN];
	redisReply *r;
	int ret;

	err[0] = '\0';
	if (ttl_us < 1 || ttl_us > LEASE_TTL_US_MAX) {
		snprintf(err, len, "member ttl %" PRIu64 " us is out of range", (uint64_t)ttl_us);
		return -EINVAL;
	}
	snprintf(ttl, sizeof(ttl), "%" PRIu64, (uint64_t)ttl_us);
	ret = script_load(c, BEAT_LUA, sc->beat, err, len);
	if (ret)
		return ret;
	r = redisCommand(c, "EVALSHA %s 1 %s %s %s", sc->beat, fleet, node, ttl);
	if (r && is_noscript(r)) {
		freeReplyObject(r);
		sc->beat[0] = '\0';
		r = redisCommand(c, "EVAL %s 1 %s %s %s", BEAT_LUA, fleet, node, ttl);
	}
	if (!r) {
		snprintf(err, len, "member beat on '%s': %s", fleet, c->errstr);
		return -EIO;
	}
	if (r->type == REDIS_REPLY_INTEGER && r->integer >= 1) {
		*live_nodes = r->integer;
	} else {
		snprintf(err, len, "member beat on '%s': %s", fleet,
			 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
		ret = -EPROTO;
	}
	freeReplyObject(r);
	return ret;
}
