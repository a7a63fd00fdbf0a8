// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The Lua scripts of the shared budget's Redis side; see
 * budget/redis_scripts.h. The bound they keep is argued in
 * docs/shared-budget.md and at the top of LEASE_LUA.
 */
#include "sluice/compiler.h"
#include "budget/backend.h" /* RATE_LEASE_UNIT */
#include "budget/redis_scripts.h"

_Static_assert(LEASE_KEY_ARGS == LEASE_KEY_ARGS_N, "LEASE_LUA reads LEASE_KEY_ARGS_N a key");
_Static_assert(RATE_KEY_ARGS == RATE_KEY_ARGS_N, "RATE_LUA reads RATE_KEY_ARGS_N a key");
_Static_assert(RATE_LEASE_UNIT == 1ULL << RATE_LEASE_SHIFT, "RATE_LUA's unit of a burst share");

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
 * The lease script's frame: reading each hash's fields
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
 * Rate leases (redis_scripts.h: RATE_KEY_ARGS, the key's hash):
 * budget/fairshare.c's fs_renew() for each key of the call, in order,
 * on the same integers, so the memory store's rate_lease() gives the
 * same answers (test_rate_parity holds them to it). Returns RATE_FIELDS
 * a key, flat.
 *
 * A call costs O(1) of a key's holders: it reads the summary and its own
 * holder (one HMGET), and writes them back (one HSET). The summary keeps
 * what fs_renew() would sum over every holder: the shares they hold now
 * (held), and the max-min split of the wants of the live ones, as the
 * sets below and above its level s: their count and sum below, a bound
 * on the largest want below (hi) and on the smallest above (lo). A
 * renewal takes its holder's old want out and puts the new one in; the
 * level that follows, s' = (cap - sum) / (live - count), is the split
 * when hi <= s' < lo, since the split's level is the one fixed point.
 * Otherwise, and once the summary's ev has come (a holder's share or
 * want may have lapsed since: the earliest expiry it knows of), the call
 * rebuilds the summary from every holder (HGETALL, O(n log n): the wants
 * sorted), and deletes those that can enforce nothing any more. A
 * holder renewing every T/2 leaves ev behind about once a T/2, so that
 * is one rebuild a T/2 per key, not per call.
 *
 * The key's bank (RATE_BANK_FIELD) is read in the same HMGET. The
 * summary's held_* count its rate and burst while it is live, but the
 * caller's shares are granted out of the others' alone, since it may
 * take the bank; then a raise of either share takes the whole bank, and
 * a lowered burst with a level banks what it frees, as fs_renew() does,
 * written in the same HSET (or an HDEL, once taken). A call that changes
 * any of the bank's words writes the summary's ev as its own time, so
 * the next call rebuilds the summary rather than trust its split's
 * counts (where the bank is a holder that wants nothing). The bank's
 * words are sums and differences of shares, levels and times, never a
 * product, so they stay exact too.
 *
 * Every share, want, capacity and sum is at most 2^53 (the C side checks
 * the capacities against 2^52, and what the summary sums stays within
 * a capacity but for one want), so Lua's doubles are exact; quotients
 * are floored by hand, since a double quotient may round up.
 */
/* clang-format off */
static const char RATE_LUA[] =
	"local node, ttl, slack = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local fmt = function(x) return string.format('%d', x) end\n"
	"local n = (#ARGV - 3) / " SLUICE_STR(RATE_KEY_ARGS_N) "\n"
	"local INF = " SLUICE_STR(RATE_LUA_INF) "\n"
	"local Q = " SLUICE_STR(RATE_LEASE_UNIT) "\n"
	"local BANK = '" RATE_BANK_FIELD "'\n"
	"local res = {}\n"
	/* A summary's RATE_SUMMARY_WORDS words. */
	"local SUM = '^' .. string.rep('(%d+) ', " SLUICE_STR(RATE_SUMMARY_WORDS) " - 1) .. '(%d+)$'\n"
	"local summary = function(s, key)\n"
	"  local x = { string.match(s, SUM) }\n"
	"  if not x[" SLUICE_STR(RATE_SUMMARY_WORDS) "] then\n"
	"    error({ err = 'rate lease ' .. key .. ' is not one' })\n"
	"  end\n"
	"  for i = 1, #x do x[i] = tonumber(x[i]) end\n"
	"  return x\n"
	"end\n"
	/* A holder's RATE_HOLDER_WORDS words. */
	"local PAT = '^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+) (%d+)$'\n"
	"local lease = function(s, key)\n"
	"  if not s then return { g = { 0, 0 }, exp = 0, p = { 0, 0 }, pexp = 0, w = { 0, 0 } } end\n"
	"  local x = { string.match(s, PAT) }\n"
	"  if not x[" SLUICE_STR(RATE_HOLDER_WORDS) "] then error({ err = 'rate lease ' .. key .. ' is not one' }) end\n"
	"  for i = 1, 8 do x[i] = tonumber(x[i]) end\n"
	"  return { g = { x[1], x[2] }, exp = x[3], p = { x[4], x[5] }, pexp = x[6], w = { x[7], x[8] } }\n"
	"end\n"
	/* A lease in a holder's RATE_HOLDER_WORDS words. */
	"local words = function(l)\n"
	"  return string.format('%d %d %d %d %d %d %d %d', l.g[1], l.g[2], l.exp, l.p[1], l.p[2],\n"
	"                       l.pexp, l.w[1], l.w[2])\n"
	"end\n"
	/* fs_held(): what @l's node may enforce of dimension d. */
	"local held = function(l, d)\n"
	"  local x = l.exp > now and l.g[d] or 0\n"
	"  if l.pexp > now and l.p[d] > x then x = l.p[d] end\n"
	"  return x\n"
	"end\n"
	/* When what @l holds or wants next changes by time alone. */
	"local nextev = function(l)\n"
	"  local e = INF\n"
	"  if l.exp > now then e = l.exp end\n"
	"  if l.pexp > now and l.pexp < e then e = l.pexp end\n"
	"  return e\n"
	"end\n"
	"local fdiv = function(a, b)\n"
	"  local q = math.floor(a / b)\n"
	"  if q * b > a then q = q - 1 end\n"
	"  return q\n"
	"end\n"
	/* The max-min split of the wants @ws (at most cap each): below and above its level. */
	"local split = function(ws, cap)\n"
	"  table.sort(ws)\n"
	"  local m, c, sum = #ws, 0, 0\n"
	"  while c < m do\n"
	"    local s = fdiv(cap - sum, m - c)\n"
	"    if ws[c + 1] > s then\n"
	"      return { c = c, sum = sum, s = s, hi = c > 0 and ws[c] or 0, lo = ws[c + 1] }\n"
	"    end\n"
	"    c = c + 1\n"
	"    sum = sum + ws[c]\n"
	"  end\n"
	"  return { c = m, sum = sum, s = INF, hi = m > 0 and ws[m] or 0, lo = INF }\n"
	"end\n"
	/* The split's level after a want went in or out, if the bounds show it; nil: rebuild. */
	"local settle = function(x, cap, live)\n"
	"  if x.sum > cap then return nil end\n"
	"  if x.c == live then return INF end\n"
	"  local s = fdiv(cap - x.sum, live - x.c)\n"
	"  if x.hi > s or x.lo <= s then return nil end\n"
	"  return s\n"
	"end\n"
	/*
	 * The summary from every holder but the caller: what they hold, the
	 * live ones' wants (in ws, to split with the caller's), the earliest
	 * change; the dead are deleted. @alone (the caller's field count, when
	 * it is the hash's only holder field): there is nothing to read.
	 */
	"local rebuild = function(key, cap, tl, alone)\n"
	"  local st = { live = 0, tl = tl, ev = INF, np = 0, nf = 0, h = { 0, 0 }, ws = { {}, {} } }\n"
	"  if alone then\n"
	"    st.nf = alone\n"
	"    return st\n"
	"  end\n"
	"  local all, gone = redis.call('HGETALL', key), {}\n"
	"  local h1, h2, ws1, ws2, np, ev, live, nf = 0, 0, st.ws[1], st.ws[2], 0, INF, 0, 0\n"
	"  local max, min = math.max, math.min\n"
	/* lease(), held() and nextev() inline: this loop is the rebuild's cost. */
	"  for i = 1, #all, 2 do\n"
	"    if all[i] ~= '' then nf = nf + 1 end\n"
	"    if all[i] ~= '' and all[i] ~= node then\n"
	"      local g1, g2, e, p1, p2, pe, w1, w2 = string.match(all[i + 1], PAT)\n"
	"      if not w2 then error({ err = 'rate lease ' .. key .. ' is not one' }) end\n"
	"      e, pe = tonumber(e), tonumber(pe)\n"
	"      if e <= now and pe <= now then\n"
	"        gone[#gone + 1] = all[i]\n"
	"      else\n"
	"        local x1, x2, ne = 0, 0, INF\n"
	"        if e > now then\n"
	"          x1, x2, ne, np = tonumber(g1), tonumber(g2), e, np + 1\n"
	"          ws1[#ws1 + 1] = min(tonumber(w1), cap[1])\n"
	"          ws2[#ws2 + 1] = min(tonumber(w2), cap[2])\n"
	"        end\n"
	"        if pe > now then\n"
	"          x1, x2, ne = max(x1, tonumber(p1)), max(x2, tonumber(p2)), min(ne, pe)\n"
	"        end\n"
	"        h1, h2, ev, live = h1 + x1, h2 + x2, min(ev, ne), max(live, e, pe)\n"
	"      end\n"
	"    end\n"
	"  end\n"
	"  st.h[1], st.h[2], st.np, st.ev, st.live = h1, h2, np, ev, live\n"
	"  st.nf = nf - #gone\n"
	"  for i = 1, #gone, " SLUICE_STR(RATE_HDEL_FIELDS) " do\n"
	"    redis.call('HDEL', key, unpack(gone, i, math.min(i + " SLUICE_STR(RATE_HDEL_FIELDS) " - 1, #gone)))\n"
	"  end\n"
	"  return st\n"
	"end\n"
	"for k = 1, n do\n"
	"local a = 3 + (k - 1) * " SLUICE_STR(RATE_KEY_ARGS_N) "\n"
	"local key = KEYS[tonumber(ARGV[a + 1])] .. ':' .. ARGV[a + 2]\n"
	"local cap = { tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]) }\n"
	"local want = { tonumber(ARGV[a + 5]), tonumber(ARGV[a + 6]) }\n"
	"local settled = tonumber(ARGV[a + 7]) == 1\n"
	"local level = tonumber(ARGV[a + 8])\n"
	"local r = redis.call('HMGET', key, '', node, BANK)\n"
	"do\n"
	"  local st, l\n"
	"  if r[1] then\n"
	"    local x = summary(r[1], key)\n"
	"    st = { live = x[1], tl = x[2], ev = x[3], np = x[4], h = { x[5], x[6] },\n"
	"           cap = { x[7], x[8] }, f = { { c = x[9], sum = x[10], s = x[11], hi = x[12], lo = x[13] },\n"
	"                   { c = x[14], sum = x[15], s = x[16], hi = x[17], lo = x[18] } }, nf = x[19] }\n"
	"  end\n"
	"  l = lease(r[2], key)\n"
	"  local b = lease(r[3], key)\n"
	"  local mine = r[2] and 1 or 0\n"
	/* Nothing of it can be enforced any more, nor the bank spent: start afresh. */
	"  if st and st.live <= now then\n"
	"    redis.call('DEL', key)\n"
	"    st, l, mine = nil, lease(nil), 0\n"
	"  end\n"
	/* The live bank's words, or none (a lapsed one's field goes with the rebuild it forces). */
	"  local bw = st and b.exp > now and r[3] or nil\n"
	"  if not bw then b = lease(nil) end\n"
	"  if not st then\n"
	"    st = { live = 0, tl = 0, ev = INF, np = 0, nf = 0, h = { 0, 0 }, cap = cap,\n"
	"           f = { { c = 0, sum = 0, s = INF, hi = 0, lo = INF },\n"
	"                 { c = 0, sum = 0, s = INF, hi = 0, lo = INF } } }\n"
	"  end\n"
	/* The caller's field the only one: a rebuild would read only it. */
	"  local alone = st.nf == mine and mine or nil\n"
	"  if now >= st.ev or st.cap[1] ~= cap[1] or st.cap[2] ~= cap[2] then\n"
	"    st = rebuild(key, cap, st.tl, alone)\n"
	"  else\n"
	/* The others' sums: the caller's old lease out. */
	"    for d = 1, 2 do\n"
	"      st.h[d] = st.h[d] - held(l, d)\n"
	"      local w = math.min(l.w[d], cap[d])\n"
	"      if l.exp > now and w <= st.f[d].s then\n"
	"        st.f[d].c, st.f[d].sum = st.f[d].c - 1, st.f[d].sum - w\n"
	"      end\n"
	"    end\n"
	"    if l.exp > now then st.np = st.np - 1 end\n"
	"  end\n"
	"  local nx = { g = { 0, 0 }, exp = now + ttl, p = { 0, 0 }, pexp = 0, w = { 0, 0 } }\n"
	"  local f, fs = {}, {}\n"
	"  st.np = st.np + 1\n"
	"  for d = 1, 2 do\n"
	"    nx.w[d] = math.min(want[d], cap[d])\n"
	"    if st.ws then\n"
	"      st.ws[d][#st.ws[d] + 1] = nx.w[d]\n"
	"      st.f = st.f or {}\n"
	"      st.f[d] = split(st.ws[d], cap[d])\n"
	"      fs[d] = st.f[d].s\n"
	"    else\n"
	"      local x = st.f[d]\n"
	"      if nx.w[d] <= x.s then\n"
	"        x.c, x.sum, x.hi = x.c + 1, x.sum + nx.w[d], math.max(x.hi, nx.w[d])\n"
	"      else\n"
	"        x.lo = math.min(x.lo, nx.w[d])\n"
	"      end\n"
	"      fs[d] = settle(x, cap[d], st.np)\n"
	"    end\n"
	"  end\n"
	"  if not fs[1] or not fs[2] then\n"
	"    st = rebuild(key, cap, st.tl, alone)\n"
	"    st.np = st.np + 1\n"
	"    st.f = {}\n"
	"    for d = 1, 2 do\n"
	"      st.ws[d][#st.ws[d] + 1] = nx.w[d]\n"
	"      st.f[d] = split(st.ws[d], cap[d])\n"
	"      fs[d] = st.f[d].s\n"
	"    end\n"
	"  end\n"
	"  for d = 1, 2 do\n"
	"    st.f[d].s = fs[d]\n"
	"    f[d] = nx.w[d] <= fs[d] and nx.w[d] or fs[d]\n"
	"  end\n"
	/* A burst share in whole units: rounded down, or one for a node that wants one. */
	"  f[2] = f[2] - f[2] % Q\n"
	"  if f[2] == 0 and nx.w[2] >= Q then f[2] = Q end\n"
	/*
	 * fs_renew() for the caller, the others' held shares summed in st.h
	 * but for the bank's: the caller may take that.
	 */
	/* A settled node enforces at most its last answer, which lives until exp. */
	"  local pexp = settled and l.exp or math.max(l.exp, l.pexp)\n"
	"  local any_prev = false\n"
	"  for d = 1, 2 do\n"
	"    local others = st.h[d] - held(b, d)\n"
	"    if others < cap[d] then nx.g[d] = math.min(f[d], cap[d] - others) end\n"
	"    if d == 2 then nx.g[d] = nx.g[d] - nx.g[d] % Q end\n"
	"    local ceiling = held(l, d)\n"
	"    if settled then ceiling = l.exp > now and math.min(l.g[d], want[d]) or 0 end\n"
	/* Lowered, or renewed for less time than the lease it may still enforce. */
	"    if ceiling > nx.g[d] or (ceiling > 0 and pexp > nx.exp) then\n"
	"      nx.p[d], any_prev = ceiling, true\n"
	"    end\n"
	"  end\n"
	"  if any_prev then nx.pexp = pexp end\n"
	/*
	 * fs_renew()'s bank_move(): a raise takes the whole bank; a lowered
	 * burst with a level banks what it freed of both shares.
	 */
	"  local before, after = { held(l, 1), held(l, 2) }, { held(nx, 1), held(nx, 2) }\n"
	"  local took, nb = nx.g[1] > before[1] or nx.g[2] > before[2], b\n"
	"  if took then\n"
	"    nb = lease(nil)\n"
	"  elseif before[2] > after[2] and level > 0 then\n"
	"    nb = { g = { b.g[1] + before[1] - after[1], b.g[2] + before[2] - after[2] },\n"
	"           exp = now + ttl, p = { b.p[1] + math.min(level, before[2] - after[2]), now },\n"
	"           pexp = 0, w = { 0, 0 } }\n"
	"  end\n"
	"  local tk = took and b or lease(nil)\n"
	"  local nw = nb.exp > now and words(nb) or nil\n"
	"  for d = 1, 2 do st.h[d] = st.h[d] - held(b, d) + held(nx, d) + held(nb, d) end\n"
	/* Changed: its count in the split's sums is left to the next call's rebuild. */
	"  st.ev = nw ~= bw and now or math.min(st.ev, nextev(nx))\n"
	"  st.live = math.max(st.live, nx.exp, nx.pexp, nb.exp)\n"
	"  local o = { st.live, st.tl, st.ev, st.np, st.h[1], st.h[2], cap[1], cap[2] }\n"
	"  for d = 1, 2 do\n"
	"    local x = st.f[d]\n"
	"    for _, v in ipairs({ x.c, x.sum, x.s, x.hi, x.lo }) do o[#o + 1] = v end\n"
	"  end\n"
	"  o[#o + 1] = st.nf + 1 - mine + (nw and 1 or 0) - (bw and 1 or 0)\n"
	"  local extend = st.live > st.tl\n"
	"  if extend then o[2] = st.live + slack end\n"
	"  for i = 1, #o do o[i] = fmt(o[i]) end\n"
	"  local kv = { '', table.concat(o, ' '), node, words(nx) }\n"
	"  if nw and nw ~= bw then kv[5], kv[6] = BANK, nw end\n"
	"  redis.call('HSET', key, unpack(kv))\n"
	"  if bw and not nw then redis.call('HDEL', key, BANK) end\n"
	"  if extend then\n"
	"    redis.call('PEXPIRE', key, fmt(math.ceil((st.live + slack - now) / 1000) + 1))\n"
	"  end\n"
	"  res[#res + 1] = nx.g[1]\n"
	"  res[#res + 1] = nx.g[2]\n"
	"  res[#res + 1] = f[1]\n"
	"  res[#res + 1] = f[2]\n"
	"  res[#res + 1] = nx.exp\n"
	"  res[#res + 1] = now\n"
	"  res[#res + 1] = tk.p[1]\n"
	"  res[#res + 1] = tk.g[1]\n"
	"  res[#res + 1] = tk.g[2]\n"
	"  res[#res + 1] = tk.p[2]\n"
	"end\n"
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

/*
 * BEAT_LUA for a node that speaks STORE_LAYOUT_RATE: KEYS[1] the fleet
 * set, KEYS[2] its speakers of that layout (LEASE_LAYOUT_FMT, on the
 * fleet set's slot). ARGV as BEAT_LUA's. The node beats in both at one
 * TIME, both drop the members past the TTL at the same cutoff, and the
 * script returns {live members, live members that speak the layout}: the
 * fleet may use the layout when they are equal (budget/backend.h,
 * fleet_layout). A node of an older agent beats in the fleet set alone,
 * so it is counted as one that does not speak the layout until its beat
 * expires. It drops members with its own, shorter TTL, from the fleet set
 * alone (RATE_BEAT_SYNCS): so the speakers are counted among the fleet
 * set's members (ZMSCORE, in chunks that Lua's unpack() takes), not by
 * the sets' sizes, which could then be equal with that node live. A
 * node new to either set bumps the fleet's news counter, KEYS[3]
 * (LEASE_NEWS_FMT, on the same slot), so that nodes between their beats
 * count it at their next sync.
 */
static const char BEAT_LAYOUT_LUA[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local ttl = tonumber(ARGV[2])\n"
	"local r = {}\n"
	"local new = 0\n"
	"for i = 1, 2 do\n"
	"  new = new + redis.call('ZADD', KEYS[i], string.format('%d', now), ARGV[1])\n"
	"  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', string.format('%d', now - ttl))\n"
	"  redis.call('PEXPIRE', KEYS[i], string.format('%d', math.ceil(ttl / 1000) + 1))\n"
	"  r[i] = redis.call('ZCARD', KEYS[i])\n"
	"end\n"
	"if new > 0 then redis.call('INCR', KEYS[3]) end\n"
	"if r[2] >= r[1] then\n"
	"  local m, chunk = redis.call('ZRANGE', KEYS[1], 0, -1), 1000\n"
	"  r[2] = 0\n"
	"  for i = 1, #m, chunk do\n"
	"    local s = redis.call('ZMSCORE', KEYS[2], unpack(m, i, math.min(i + chunk - 1, #m)))\n"
	"    for j = 1, #s do\n"
	"      if s[j] then r[2] = r[2] + 1 end\n"
	"    end\n"
	"  end\n"
	"end\n"
	"return r\n";

const char *const redis_script_src[STORE_SCRIPT_MAX] = {
	[STORE_SCRIPT_LEASE] = LEASE_LUA,
	[STORE_SCRIPT_BEAT] = BEAT_LUA,
	[STORE_SCRIPT_HOT] = HOT_LUA,
	[STORE_SCRIPT_RATE] = RATE_LUA,
	[STORE_SCRIPT_BEAT_LAYOUT] = BEAT_LAYOUT_LUA,
};
