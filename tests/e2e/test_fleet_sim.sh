#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# tools/fleet_sim.c against a real redis-server: a short run of 4 nodes on
# 20 saturated keys keeps every fleet window within burst + rate·1 s and
# counts the store's commands; the same run with the nodes' policy at 3×
# the limit is reported over its bound (exit 1), so the check can fail; a
# bad option is refused (exit 2). The bound holds whatever the timing (the
# store conserves tokens), so it is asserted exactly. The same two runs on
# rate leases (--rate-leases, after a warm-up that lets the first shares
# settle): within the bound at most COST_MAX commands per node, key and
# second, and over it at 3×. A rolling upgrade across the store layout
# (--old): 2 nodes of the lump layout alone stop at OLD_STOP s while 2 of
# the rate layout run on; every window stays within the one limit, and
# the new nodes take rate leases only once the old nodes' last beat has
# expired and every lump lease with it (no sooner than its TTL and the
# switch's intervals after it: exact, the store's TIME decides it);
# with --no-agree (rate leases at once) the two layouts admit over it.
source "$(dirname "$0")/lib.sh"

SIM=${SIM:-$ROOT/build/sluice-fleet-sim}
[ -x "$SIM" ] || e2e_fail "build first: $SIM (make all)"
command -v redis-server >/dev/null || e2e_fail "no redis-server (tools/deps.sh installs it)"
e2e_realtime
e2e_start_redis

RATE=40
BURST=20
CHEAT=3
sim() { # ARGS...: a run's JSON line; sets RC
	RC=0
	OUT=$("$SIM" --url "unix://$REDIS_SOCK" --nodes 4 --keys 20 --rate "$RATE" \
		--burst "$BURST" --warmup 1 --seconds 2 --json "$@") || RC=$?
}
field() { # NAME: a number of the last run's JSON
	python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$OUT" "$1"
}

sim
[ "$RC" = 0 ] || e2e_fail "a run within the limit exited $RC: $OUT"
bound=$(field bound)
[ "$bound" = $((BURST + RATE)) ] || e2e_fail "bound $bound, not burst + rate·1 s = $((BURST + RATE))"
worst=$(field worst_window)
((worst <= bound)) || e2e_fail "worst window $worst over its bound $bound: $OUT"
((worst > 0)) || e2e_fail "nothing admitted: $OUT"
python3 -c 'import sys; sys.exit(not float(sys.argv[1]) > 0)' "$(field cmds_per_node_key_s)" ||
	e2e_fail "no store commands counted: $OUT"
echo "within: worst window $worst of $bound, $(field cmds_per_node_key_s) commands/node/key/s"

sim --cheat "$CHEAT"
[ "$RC" = 1 ] || e2e_fail "a run at $CHEAT× the limit exited $RC, not 1: $OUT"
worst=$(field worst_window)
((worst > bound)) || e2e_fail "at $CHEAT× the limit the worst window $worst is within $bound"
[ "$(field ok)" = False ] || e2e_fail "at $CHEAT× the limit: ok is not false: $OUT"
echo "over: at ${CHEAT}× the limit the worst window is $worst of $bound"

COST_MAX=3 # store commands per node, hot key and second on rate leases (#28)
RATE_WARMUP=4
sim --rate-leases --warmup "$RATE_WARMUP"
[ "$RC" = 0 ] || e2e_fail "rate leases within the limit exited $RC: $OUT"
worst=$(field worst_window)
((worst <= bound)) || e2e_fail "rate leases: worst window $worst over its bound $bound: $OUT"
((worst > 0)) || e2e_fail "rate leases: nothing admitted: $OUT"
cost=$(field cmds_per_node_key_s)
python3 -c 'import sys; sys.exit(not 0 < float(sys.argv[1]) <= float(sys.argv[2]))' \
	"$cost" "$COST_MAX" || e2e_fail "rate leases: $cost commands/node/key/s, not in (0, $COST_MAX]"
echo "rate leases within: worst window $worst of $bound, $cost commands/node/key/s"

sim --rate-leases --warmup "$RATE_WARMUP" --cheat "$CHEAT"
[ "$RC" = 1 ] || e2e_fail "rate leases at $CHEAT× the limit exited $RC, not 1: $OUT"
echo "rate leases over: at ${CHEAT}× the limit the worst window is $(field worst_window) of $bound"

OLD_STOP=2
UPGRADE=(--rate-leases --old 2 --old-stop "$OLD_STOP" --seconds 3)
sim "${UPGRADE[@]}"
[ "$RC" = 0 ] || e2e_fail "a rolling upgrade exited $RC: $OUT"
worst=$(field worst_window)
((worst <= bound)) || e2e_fail "a rolling upgrade: worst window $worst over its bound $bound: $OUT"
[ "$(field rate_nodes)" = 2 ] || e2e_fail "a rolling upgrade: not both new nodes took rate leases: $OUT"
python3 -c 'import sys; o, f, t, s = map(float, sys.argv[1:]); sys.exit(not f >= o + t + s)' \
	"$(field old_last_beat_s)" "$(field rate_from_s)" "$(field beat_ttl_s)" "$(field switch_s)" ||
	e2e_fail "a rolling upgrade: rate leases before the old beat expired: $OUT"
echo "rolling upgrade: worst window $worst of $bound; old nodes' last beat at" \
	"$(field old_last_beat_s) s, rate leases from $(field rate_from_s) s" \
	"(beat TTL $(field beat_ttl_s) s + switch $(field switch_s) s)"

sim "${UPGRADE[@]}" --no-agree
[ "$RC" = 1 ] || e2e_fail "two layouts at once exited $RC, not 1: $OUT"
echo "no agreement: two layouts at once, the worst window is $(field worst_window) of $bound"

RC=0
"$SIM" --nodes 0 2>/dev/null || RC=$?
[ "$RC" = 2 ] || e2e_fail "--nodes 0 exited $RC, not 2"
RC=0
"$SIM" --old 1 2>/dev/null || RC=$?
[ "$RC" = 2 ] || e2e_fail "--old without --rate-leases exited $RC, not 2"
echo PASS
