// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The Lua scripts of the shared budget's Redis side; see
 * budget/redis_scripts.h. The bound they keep is argued in
 * docs/shared-budget.md and at the top of LEASE_LUA.
 */
#include "sluice/compiler.h"
#include "budget/redis_scripts.h"

_Static_assert(LEASE_KEY_ARGS == LEASE_KEY_ARGS_N, "LEASE_LUA reads LEASE_KEY_ARGS_N a key");

/*
 * KEYS[1..m] bucket hashes (redis.h), one call for several keys (#17: a
 * hot key used to cost a call of its own, and then a hash of its own:
 * HGETALL and HSET for each key). ARGV: node, ttl_us, live_slack_us, then
 * for each key LEASE_KEY_ARGS values: its hash (an index into KEYS), its
 * field, rate_units, rate_period_us, burst, cap, used, want, empty,
 * release. Returns {held, expires_us, now_us, granted} for each key in
 * order, flat. A bucket that does not exist, or whose live has passed,
 * starts full, or empty when empty is 1. With release 1 the caller hands
 * back what it holds beyond want: it promises it can no longer spend that
 * (it stopped spending a whole sync interval before asking). One TIME
 * serves every key of the call, one HMGET reads each hash's fields of the
 * call and one HSET writes them; the keys are served in order, so a key
 * twice in a call sees its first answer. On a Redis Cluster the hashes of
 * a call share a slot (the caller groups them).
 *
 * Invariant, after every call: tok + Σ live lease × P <= burst × P, where
 * P = rate_period_us and tok is scaled by P, so refill (elapsed_us × units)
 * is an exact integer and nothing drifts. Every number stays below 2^53
 * (the C side checks burst × P and units against 2^52), so Lua's doubles
 * are exact. Values are written with %d: tostring() would print %.14g.
 *
 * A node's lease is topped up, and handed back only by release: the caller
 * reports what it spent since its last call (used, clamped to what it
 * holds), keeps the rest, and is granted up to min(want, cap) held in all.
 * So the units a node spends between reading its counter and installing
 * the answer are part of what Redis still counts as held: nothing is lost
 * in between. A release moves held units back into tok, which leaves
 * tok + Σ lease unchanged.
 *
 * The bound: a unit is spent only out of a lease, and a lease grows only
 * out of tok, which gains at most units × elapsed / P by refill, besides
 * released units, which their node can no longer spend (so each unit is
 * spendable by one node at a time). So the fleet spends, over any interval
 * Δ, at most what was held at its start (tok + outstanding <= burst) plus
 * units × Δ / P. A lease that expires is
 * deleted without crediting tok (written off): its unspent part is lost to
 * the fleet until refill covers it again, which can only under-admit.
 * Reporting more than it holds gains a node nothing, and it never holds
 * more than cap, so no node can drain more than cap.
 *
 * A bucket's live is when its last lease has expired and refill has filled
 * it: from then on it is what an absent bucket is (full; an empty-start key
 * restarts empty, which can only under-admit). So no field needs a TTL of
 * its own: a call that creates buckets in a hash (absent, or past their
 * live) samples LEASE_REAP_PER_KEY fields of it for each (HRANDFIELD) and
 * deletes those past their live, and the hash itself has a TTL that covers
 * its fields' lives. Only a created bucket can die, so a hash whose keys
 * stay hot costs no sampling.
 */
/* clang-format off */
static const char LEASE_LUA[] =
	"local node, ttl, slack = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local fmt = function(x) return string.format('%d', x) end\n"
	"local n = (#ARGV - 3) / " SLUICE_STR(LEASE_KEY_ARGS_N) "\n"
	"local fields, val, put, hlive, born = {}, {}, {}, {}, {}\n"
	"for h = 1, #KEYS do\n"
	"  fields[h], val[h], put[h], hlive[h], born[h] = {'live'}, {}, {}, 0, 0\n"
	"end\n"
	"for k = 1, n do\n"
	"  local a = 3 + (k - 1) * " SLUICE_STR(LEASE_KEY_ARGS_N) "\n"
	"  local f = fields[tonumber(ARGV[a + 1])]\n"
	"  f[#f + 1] = ARGV[a + 2]\n"
	"end\n"
	"for h = 1, #KEYS do\n"
	"  local v = redis.call('HMGET', KEYS[h], unpack(fields[h]))\n"
	"  for i = 1, #v do val[h][fields[h][i]] = v[i] end\n"
	"end\n"
	"local res = {}\n"
	"for k = 1, n do\n"
	"local a = 3 + (k - 1) * " SLUICE_STR(LEASE_KEY_ARGS_N) "\n"
	"local h, field = tonumber(ARGV[a + 1]), ARGV[a + 2]\n"
	"local units, per = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])\n"
	"local burst, cap = tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6])\n"
	"local used, want = tonumber(ARGV[a + 7]), tonumber(ARGV[a + 8])\n"
	"local release = tonumber(ARGV[a + 10]) == 1\n"
	"local tok = tonumber(ARGV[a + 9]) == 1 and 0 or burst * per\n"
	"local ts, live, leases = now, 0, {}\n"
	"local s = val[h][field]\n"
	"if s then\n"
	"  local w = string.gmatch(s, '%S+')\n"
	"  local t0, t1, t2 = tonumber(w()), tonumber(w()), tonumber(w())\n"
	"  if t2 >= now then\n"
	"    tok, ts, live = t0, t1, t2\n"
	"    for name in w do leases[name] = { tonumber(w()), tonumber(w()) } end\n"
	"  end\n"
	"end\n"
	"if live == 0 then born[h] = born[h] + 1 end\n"
	"local out, maxexp = 0, now + ttl\n"
	"for name, l in pairs(leases) do\n"
	"  if l[2] <= now then\n"
	"    leases[name] = nil\n"
	"  else\n"
	"    out = out + l[1]\n"
	"    if l[2] > maxexp then maxexp = l[2] end\n"
	"  end\n"
	"end\n"
	/*
	 * The caller's live lease: what it did not spend stays its own; what it
	 * spent has left the fleet's budget, so it is not outstanding any more.
	 */
	"local keep = leases[node] and leases[node][1] or 0\n"
	"if used > keep then used = keep end\n"
	"keep = keep - used\n"
	"out = out - used\n"
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
	"if release and keep > want then\n"
	"  tok = tok + (keep - want) * per\n"
	"  keep = want\n"
	"end\n"
	"local g = math.floor(tok / per)\n"
	"if g * per > tok then g = g - 1 end\n"
	"if want - keep < g then g = want - keep end\n"
	"if cap - keep < g then g = cap - keep end\n"
	"if g < 0 then g = 0 end\n"
	"tok = tok - g * per\n"
	"leases[node] = keep + g > 0 and { keep + g, now + ttl } or nil\n"
	"local need = maxexp + math.ceil(burst * per / units)\n"
	"if live < need then live = need + slack end\n"
	"if live > hlive[h] then hlive[h] = live end\n"
	"local o = { string.format('%d %d %d', tok, ts, live) }\n"
	"for name, l in pairs(leases) do\n"
	"  o[#o + 1] = string.format('%s %d %d', name, l[1], l[2])\n"
	"end\n"
	"val[h][field] = table.concat(o, ' ')\n"
	"put[h][field] = val[h][field]\n"
	"res[#res + 1] = keep + g\n"
	"res[#res + 1] = now + ttl\n"
	"res[#res + 1] = now\n"
	"res[#res + 1] = g\n"
	"end\n"
	/*
	 * Write each hash once; set its TTL only when its 'live' no longer
	 * covers its buckets', with slack to spare: about once a second of
	 * calls rather than at each. Then reap what is past its live.
	 */
	"for h = 1, #KEYS do\n"
	"  local kv, hl = {}, tonumber(val[h]['live'])\n"
	"  for f, v in pairs(put[h]) do\n"
	"    kv[#kv + 1] = f\n"
	"    kv[#kv + 1] = v\n"
	"  end\n"
	"  local extend = not hl or hl < hlive[h]\n"
	"  if extend then\n"
	"    hl = hlive[h] + slack\n"
	"    kv[#kv + 1] = 'live'\n"
	"    kv[#kv + 1] = fmt(hl)\n"
	"  end\n"
	"  redis.call('HSET', KEYS[h], unpack(kv))\n"
	"  if extend then redis.call('PEXPIRE', KEYS[h], fmt(math.ceil((hl - now) / 1000) + 1)) end\n"
	"  local r = {}\n"
	"  if born[h] > 0 then\n"
	"    r = redis.call('HRANDFIELD', KEYS[h],\n"
	"                   " SLUICE_STR(LEASE_REAP_PER_KEY) " * born[h] + 1, 'WITHVALUES')\n"
	"  end\n"
	"  local dead = {}\n"
	"  for i = 1, #r, 2 do\n"
	"    if r[i] ~= 'live' then\n"
	"      local l = tonumber(string.match(r[i + 1], '^%S+ %S+ (%S+)'))\n"
	"      if not l or l < now then dead[#dead + 1] = r[i] end\n"
	"    end\n"
	"  end\n"
	"  if #dead > 0 then redis.call('HDEL', KEYS[h], unpack(dead)) end\n"
	"end\n"
	"return res\n";
/* clang-format on */

/*
 * KEYS[1] a policy's hot set (member: a key's address in hex, score: Redis
 * TIME of the last time a node saw it hot, µs). ARGV: ttl_us, limit, then
 * members this node saw hot. Drops members not seen for ttl_us and returns
 * up to limit members, the most recently hot first, adding the members in
 * ZADDs of STORE_HOT_ZADD_MEMBERS.
 */
/* clang-format off */
static const char HOT_LUA[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local ttl, limit = tonumber(ARGV[1]), tonumber(ARGV[2])\n"
	"local fmt = function(x) return string.format('%d', x) end\n"
	"local add, stamp = {}, fmt(now)\n"
	"for i = 3, #ARGV do\n"
	"  add[#add + 1] = stamp\n"
	"  add[#add + 1] = ARGV[i]\n"
	"  if #add == 2 * " SLUICE_STR(STORE_HOT_ZADD_MEMBERS) " or i == #ARGV then\n"
	"    redis.call('ZADD', KEYS[1], unpack(add))\n"
	"    add = {}\n"
	"  end\n"
	"end\n"
	"redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', fmt(now - ttl))\n"
	"redis.call('PEXPIRE', KEYS[1], fmt(math.ceil(ttl / 1000) + 1))\n"
	"return redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', '-inf', 'LIMIT', 0, limit)\n";
/* clang-format on */

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

const char *const redis_script_src[STORE_SCRIPT_MAX] = {
	[STORE_SCRIPT_LEASE] = LEASE_LUA,
	[STORE_SCRIPT_BEAT] = BEAT_LUA,
	[STORE_SCRIPT_HOT] = HOT_LUA,
};
