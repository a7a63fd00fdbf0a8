// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The Lua scripts of the shared budget's Redis side; see
 * budget/redis_scripts.h. The bound they keep is argued in
 * docs/shared-budget.md and at the top of LEASE_LUA.
 */
#include "sluice/compiler.h"
#include "budget/redis_scripts.h"

_Static_assert(LEASE_KEY_ARGS == LEASE_KEY_ARGS_N, "LEASE_LUA reads LEASE_KEY_ARGS_N a key");
_Static_assert(RATE_KEY_ARGS == RATE_KEY_ARGS_N, "RATE_LUA reads RATE_KEY_ARGS_N a key");

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
/*
 * What the lease and rate lease scripts share: reading each hash's fields
 * of the call at one TIME, the call's arguments (enum lease_arg) and n,
 * its keys (@args_n arguments each); and, after the keys, writing each
 * hash once, its TTL and the reaping of fields the script's dead()
 * finds past their live.
 */
#define HASHES_READ_LUA(args_n)                                                        \
	"local node, ttl, slack = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])\n"     \
	"local t = redis.call('TIME')\n"                                               \
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"                      \
	"local fmt = function(x) return string.format('%d', x) end\n"                  \
	"local n = (#ARGV - 3) / " SLUICE_STR(args_n) "\n"                             \
	"local fields, val, put, hlive, born = {}, {}, {}, {}, {}\n"                   \
	"for h = 1, #KEYS do\n"                                                        \
	"  fields[h], val[h], put[h], hlive[h], born[h] = {'live'}, {}, {}, 0, 0\n"    \
	"end\n"                                                                        \
	"for k = 1, n do\n"                                                            \
	"  local a = 3 + (k - 1) * " SLUICE_STR(args_n) "\n"                           \
	"  local f = fields[tonumber(ARGV[a + 1])]\n"                                  \
	"  f[#f + 1] = ARGV[a + 2]\n"                                                  \
	"end\n"                                                                        \
	"for h = 1, #KEYS do\n"                                                        \
	"  local v = redis.call('HMGET', KEYS[h], unpack(fields[h]))\n"                \
	"  for i = 1, #v do val[h][fields[h][i]] = v[i] end\n"                         \
	"end\n"                                                                        \
	"local res = {}\n"

/*
 * Write each hash once; set its TTL only when its 'live' no longer
 * covers its fields', with slack to spare: about once a second of calls
 * rather than at each. Then reap what is past its live.
 */
#define HASHES_WRITE_LUA                                                                        \
	"for h = 1, #KEYS do\n"                                                                 \
	"  local kv, hl = {}, tonumber(val[h]['live'])\n"                                       \
	"  for f, v in pairs(put[h]) do\n"                                                      \
	"    kv[#kv + 1] = f\n"                                                                 \
	"    kv[#kv + 1] = v\n"                                                                 \
	"  end\n"                                                                               \
	"  local extend = not hl or hl < hlive[h]\n"                                            \
	"  if extend then\n"                                                                    \
	"    hl = hlive[h] + slack\n"                                                           \
	"    kv[#kv + 1] = 'live'\n"                                                            \
	"    kv[#kv + 1] = fmt(hl)\n"                                                           \
	"  end\n"                                                                               \
	"  redis.call('HSET', KEYS[h], unpack(kv))\n"                                           \
	"  if extend then redis.call('PEXPIRE', KEYS[h], fmt(math.ceil((hl - now) / 1000) + 1)) end\n" \
	"  local r = {}\n"                                                                      \
	"  if born[h] > 0 then\n"                                                               \
	"    r = redis.call('HRANDFIELD', KEYS[h],\n"                                           \
	"                   " SLUICE_STR(LEASE_REAP_PER_KEY) " * born[h] + 1, 'WITHVALUES')\n"  \
	"  end\n"                                                                               \
	"  local gone = {}\n"                                                                   \
	"  for i = 1, #r, 2 do\n"                                                               \
	"    if r[i] ~= 'live' and dead(r[i + 1]) then gone[#gone + 1] = r[i] end\n"            \
	"  end\n"                                                                               \
	"  if #gone > 0 then redis.call('HDEL', KEYS[h], unpack(gone)) end\n"                   \
	"end\n"                                                                                 \
	"return res\n"

static const char LEASE_LUA[] =
	HASHES_READ_LUA(LEASE_KEY_ARGS_N)
	/* A bucket past its live (its third word), or not a bucket. */
	"local dead = function(s)\n"
	"  local l = tonumber(string.match(s, '^%S+ %S+ (%S+)'))\n"
	"  return not l or l < now\n"
	"end\n"
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
	HASHES_WRITE_LUA;
/* clang-format on */

/*
 * Rate leases (redis_scripts.h: RATE_KEY_ARGS, the field's words):
 * budget/fairshare.c's fs_renew() for each key of the call, in order,
 * after forgetting the holders that can enforce nothing any more (the
 * memory store's rate_lease(), which test_rate_lease holds to this
 * script's answers). KEYS, the call's arguments, one TIME and one HMGET
 * and HSET a hash as LEASE_LUA. Returns RATE_FIELDS a key, flat.
 *
 * Every share, want and capacity is below 2^53 (the C side checks), and
 * the others' held shares add up to at most the capacity, so Lua's
 * doubles are exact; a share of the fair split is floored by hand, since
 * a double quotient may round up to the next integer.
 */
/* clang-format off */
static const char RATE_LUA[] =
	HASHES_READ_LUA(RATE_KEY_ARGS_N)
	"local dead = function(s)\n"
	"  local l = tonumber(string.match(s, '^(%S+)'))\n"
	"  return not l or l <= now\n"
	"end\n"
	/* fs_held(): what @l's node may enforce of dimension d. */
	"local held = function(l, d)\n"
	"  local x = l.exp > now and l.g[d] or 0\n"
	"  if l.pexp > now and l.p[d] > x then x = l.p[d] end\n"
	"  return x\n"
	"end\n"
	/* fs_fair(): max-min by water-filling over the asker's and the live leases' wants. */
	"local fair = function(cap, v, me, want, d)\n"
	"  if want > cap then want = cap end\n"
	"  local ws, level = {}, 0\n"
	"  for j, l in ipairs(v) do\n"
	"    if j == me then ws[#ws + 1] = want\n"
	"    elseif l.exp > now then ws[#ws + 1] = math.min(l.w[d], cap) end\n"
	"  end\n"
	"  while true do\n"
	"    local sum, sat = 0, 0\n"
	"    for _, w in ipairs(ws) do\n"
	"      if w <= level then sum, sat = sum + w, sat + 1 end\n"
	"    end\n"
	"    if sat == #ws then return want end\n"
	"    local share = math.floor((cap - sum) / (#ws - sat))\n"
	"    if share * (#ws - sat) > cap - sum then share = share - 1 end\n"
	"    local rises = 0\n"
	"    for _, w in ipairs(ws) do\n"
	"      if w > level and w <= share then rises = rises + 1 end\n"
	"    end\n"
	"    if rises == 0 then return math.min(want, share) end\n"
	"    level = share\n"
	"  end\n"
	"end\n"
	"for k = 1, n do\n"
	"local a = 3 + (k - 1) * " SLUICE_STR(RATE_KEY_ARGS_N) "\n"
	"local h, field = tonumber(ARGV[a + 1]), ARGV[a + 2]\n"
	"local cap = { tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]) }\n"
	"local want = { tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]) }\n"
	"local settled = tonumber(ARGV[a + 7]) == 1\n"
	"local v, me, s = {}, nil, val[h][field]\n"
	"local w = s and string.gmatch(s, '%S+')\n"
	"local live = w and tonumber(w() or '') or 0\n"
	"if live <= now then\n"
	"  born[h] = born[h] + 1\n"
	"else\n"
	"  for name in w do\n"
	"    local x = {}\n"
	"    for i = 1, 8 do x[i] = tonumber(w() or '') end\n"
	"    if not x[8] then\n"
	"      return redis.error_reply('rate lease ' .. KEYS[h] .. ' ' .. field .. ' is not one')\n"
	"    end\n"
	"    local l = { name = name, g = { x[1], x[2] }, exp = x[3], p = { x[4], x[5] },\n"
	"                pexp = x[6], w = { x[7], x[8] } }\n"
	"    if name == node then\n"
	"      me = #v + 1\n"
	"      v[me] = l\n"
	"    elseif l.exp > now or l.pexp > now then\n"
	"      v[#v + 1] = l\n"
	"    end\n"
	"  end\n"
	"end\n"
	"if not me then\n"
	"  me = #v + 1\n"
	"  v[me] = { name = node, g = { 0, 0 }, exp = 0, p = { 0, 0 }, pexp = 0, w = { 0, 0 } }\n"
	"end\n"
	"local l = v[me]\n"
	"local nx = { name = node, g = { 0, 0 }, exp = now + ttl, p = { 0, 0 }, pexp = 0,\n"
	"             w = { 0, 0 } }\n"
	/* A settled node enforces at most its last answer, which lives until exp. */
	"local pexp = settled and l.exp or math.max(l.exp, l.pexp)\n"
	"local any_prev, f = false, {}\n"
	"for d = 1, 2 do\n"
	"  local others = 0\n"
	"  for j, o in ipairs(v) do\n"
	"    if j ~= me then others = others + held(o, d) end\n"
	"  end\n"
	"  nx.w[d] = math.min(want[d], cap[d])\n"
	"  f[d] = fair(cap[d], v, me, nx.w[d], d)\n"
	"  if others < cap[d] then nx.g[d] = math.min(f[d], cap[d] - others) end\n"
	"  local ceiling = held(l, d)\n"
	"  if settled then ceiling = l.exp > now and math.min(l.g[d], want[d]) or 0 end\n"
	/* Lowered, or renewed for less time than the lease it may still enforce. */
	"  if ceiling > nx.g[d] or (ceiling > 0 and pexp > nx.exp) then\n"
	"    nx.p[d], any_prev = ceiling, true\n"
	"  end\n"
	"end\n"
	"if any_prev then nx.pexp = pexp end\n"
	"v[me] = nx\n"
	"live = 0\n"
	"local o = { '' }\n"
	"for _, x in ipairs(v) do\n"
	"  live = math.max(live, x.exp, x.pexp)\n"
	"  o[#o + 1] = string.format('%s %d %d %d %d %d %d %d %d', x.name, x.g[1], x.g[2],\n"
	"                            x.exp, x.p[1], x.p[2], x.pexp, x.w[1], x.w[2])\n"
	"end\n"
	"o[1] = fmt(live)\n"
	"if live > hlive[h] then hlive[h] = live end\n"
	"val[h][field] = table.concat(o, ' ')\n"
	"put[h][field] = val[h][field]\n"
	"res[#res + 1] = nx.g[1]\n"
	"res[#res + 1] = nx.g[2]\n"
	"res[#res + 1] = f[1]\n"
	"res[#res + 1] = f[2]\n"
	"res[#res + 1] = nx.exp\n"
	"res[#res + 1] = now\n"
	"end\n"
	HASHES_WRITE_LUA;
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
	[STORE_SCRIPT_RATE] = RATE_LUA,
};
