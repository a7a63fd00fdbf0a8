#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Demand that moves between nodes under rate leases (#28): two nodes, each
# a network namespace with its own veth, XDP program and agent, one real
# redis-server and one cluster-scoped policy. A bounded flood from one
# source goes through node 1 only for MOVE_MS, then through node 2 only
# for as long. Each node's receiver (build/sluice-sink) records what got
# through, independently of the agents. Checked, with L the rate and B the
# burst (docs/shared-budget.md, "Rate leases"):
#
#   - every 1-second fleet window, the first included, admits at most
#     B + L: the flood reaches one node at a time, so no other node spends
#     a cold share while the key turns hot, and a rate share's burst
#     arrives spent;
#   - every 1-second window from 2 s on, the move and a reload of node
#     1's agent mid-flood included, admits L within the tolerance
#     steady_slack derives (about L ± 8 %): the reload carries the
#     key's share on;
#   - node 2 admits at its fair share (all of L: node 1 wants nothing any
#     more) within two renewals of the move, RS_RENEW_SYNCS sync
#     intervals each (user/budget/rateshare.h): the design's bound.
#     The time it took is printed.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
SINK=${SINK:-$ROOT/build/sluice-sink}
[ -x "$SINK" ] || e2e_fail "build first: $SINK"
e2e_start_redis

RATE=400          # L, packets per second
BURST=100         # B
PPS=$((3 * RATE)) # offered, on one node at a time
INTERVAL_MS=100   # store.sync_interval
MOVE_MS=4000      # the flood is on node 1 this long, then on node 2 as long
RELOAD_MS=$((MOVE_MS / 2)) # node 1's agent reloads then, its key hot and saturated
LEAD_MS=300       # the floods start this long after they are spawned
LATE_MS=20        # a flood starting later than that is the machine's doing: again
SINK_MS=30000     # a sink's own stop, should the test not stop it
PORT=9100
TRIES=3
# user/budget/rateshare.h and planner.h
RS_RENEW_SYNCS=20
EARLY_MS=$((INTERVAL_MS / 10)) # an early round: interval / LEASE_EARLY_DIV
RENEWAL_MS=$((RS_RENEW_SYNCS * INTERVAL_MS))
# The share has arrived once node 2 admits this share of L over ARRIVE_MS:
# the refill of a full share, less a unit per early round for where in a
# round it arrived.
ARRIVE_MS=100
ARRIVE_MIN=$((RATE * ARRIVE_MS / 1000 - ARRIVE_MS / EARLY_MS))
# The old node's round after the one that saw its last packets finds it
# quiet and hands the share back, with what its kernel saved, through the
# store's bank; the new node takes it at its next round (test_budget.sh's
# HANDOVER_MS): a window's edge can cut that much of the refill.
HANDOVER_MS=$((EARLY_MS * 3))
TOL_PCT=5 # the steady windows' tolerance, measured: 0.96 .. 1.01 L (test_budget.sh's shift)

e2e_fleet_tx
for i in 1 2; do
	e2e_fleet_node "$i"
	{
		e2e_fleet_yaml_head "$i"
		cat <<YAML
policies:
  - name: shared
    scope: cluster
    match: { proto: udp, dst_port: $PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
YAML
	} >"$WORK/node$i.yaml"
	e2e_fleet_agent "$i" "$WORK/node$i.yaml"
done
e2e_fleet_wait_share shared 2 1 2

# flood I COUNT OFFSET_MS: COUNT packets from $SRC to node I at PPS, from T0 + OFFSET_MS.
flood() {
	FLOOD_OUTS+=("$WORK/$PHASE.flood.$1")
	ns_spawn "$NS_TX" "$FLOOD" --iface "${TX_IF[$1]}" --dst-mac "${NODE_MAC[$1]}" --proto udp \
		--dport $PORT --src "$SRC" --dst "${NODE_ADDR[$1]}" --pps $PPS --count "$2" \
		--duration-ms $((MOVE_MS + 100)) --start-at-ns $((T0 + $3 * 1000000)) \
		>"${FLOOD_OUTS[-1]}"
	FLOOD_PIDS+=("$SPAWNED_PID")
}

# arrival REC FROM_NS: ms from FROM_NS until the first window of ARRIVE_MS,
# starting every ms, in which record file REC holds ARRIVE_MIN datagrams
# of $SRC; -1 if none.
arrival() {
	awk -v src="$SRC" -v from="$2" -v w=$((ARRIVE_MS * 1000000)) -v need=$ARRIVE_MIN '
		$2 == src && $1 >= from { t[n++] = $1 }
		END {
			for (i = 0; i + need - 1 < n; i++)
				if (t[i + need - 1] - t[i] < w) { printf "%d\n", (t[i] - from) / 1e6; exit }
			print -1
		}' "$1"
}

# reload_at NS: node 1's agent rereads its policy file at CLOCK_MONOTONIC NS,
# mid-flood: it opens its store anew and must carry the key's share on.
reload_at() {
	local now
	now=$("$SINK" now)
	(($1 <= now)) || sleep "$(awk -v d=$(($1 - now)) 'BEGIN { printf "%.3f", d / 1e9 }')"
	"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "${NODE_IF[1]}" >/dev/null ||
		e2e_fail "sluice reload of node 1 failed"
}

SRC_N=0
for ((try = 1; ; try++)); do
	PHASE=move.$try
	SRC_N=$((SRC_N + 1))
	SRC=10.1.9.$SRC_N # a fresh source: a cold key
	FLOOD_PIDS=() FLOOD_OUTS=()
	e2e_fleet_wait_store 1 2
	e2e_fleet_sinks "$PHASE" $PORT $SINK_MS 1 2
	T0=$(($("$SINK" now) + LEAD_MS * 1000000))
	flood 1 $((PPS * MOVE_MS / 1000)) 0
	flood 2 $((PPS * MOVE_MS / 1000)) $MOVE_MS
	reload_at $((T0 + RELOAD_MS * 1000000))
	e2e_fleet_phase_end "$PHASE" 1 - 1 2
	e2e_fleet_disturbed $LATE_MS 1 2
	[ -n "$DISTURBED" ] || break
	echo "  $PHASE: void, the machine disturbed it: $DISTURBED"
	((try < TRIES)) || e2e_fail "disturbed $TRIES times in a row: the machine is too busy"
done

line=$("$SINK" analyze --key "$SRC" --port $PORT --start-ns "$T0" \
	--end-ns $((T0 + 2 * MOVE_MS * 1000000)) "$WORK/$PHASE.rec.1" "$WORK/$PHASE.rec.2") ||
	e2e_fail "the analysis failed"
declare -A A
for kv in $line; do A[${kv%%=*}]=${kv#*=}; done
for f in passed by_file max max_at_ms steady_min steady_max before_start; do
	[ -n "${A[$f]:-}" ] || e2e_fail "the analysis printed no $f: $line"
done
((A[before_start] == 0)) || e2e_fail "${A[before_start]} packets of $SRC before the start"
echo "  sent $SENT, passed ${A[passed]} (by node ${A[by_file]}), fullest 1 s window" \
	"${A[max]} at +${A[max_at_ms]} ms, steady windows ${A[steady_min]}..${A[steady_max]}"

# The tolerance: test_budget.sh's steady_slack (the refill a window's
# edge can cut while the share changes hands, HANDOVER_MS, the store's
# round trip and how late the floods ran, twice), at least TOL_PCT of L.
slack=$(((RATE * (HANDOVER_MS + E2E_STORE_TIMEOUT_MS + 2 * LATE_MAX) + 999) / 1000 + 1))
((slack >= RATE * TOL_PCT / 100)) || slack=$((RATE * TOL_PCT / 100))
lo=$((RATE - slack)) hi=$((RATE + slack))
move_ns=$((T0 + MOVE_MS * 1000000))
ms=$(arrival "$WORK/$PHASE.rec.2" $move_ns)
echo "  steady windows $(awk -v a="${A[steady_min]}" -v b="${A[steady_max]}" -v l=$RATE \
	'BEGIN { printf "%.3f..%.3f", a / l, b / l }') L; node 2 admits its fair share" \
	"(L: $ARRIVE_MIN in $ARRIVE_MS ms) from $ms ms after the move"
e2e_within "every 1 s window, the first and the move's included, within B + L" "${A[max]}" 0 \
	$((BURST + RATE))
e2e_within "steady windows' least (L $RATE, tolerance $slack)" \
	"${A[steady_min]}" "$lo" "$hi"
e2e_within "steady windows' most" "${A[steady_max]}" "$lo" "$hi"
e2e_within "ms until node 2's share arrived, at most two renewals" "$ms" 0 $((2 * RENEWAL_MS))
echo "test_demand_moves: all checks passed"
