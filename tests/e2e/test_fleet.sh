#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# One limit across a fleet, membership and the share (#5): k nodes, each a
# network namespace with its own veth, XDP program and agent, and one real
# redis-server. Nodes register in the fleet through Redis; each node holds
# a cold key of a cluster-scoped policy at rate/k with burst/k, and a key
# that turns hot moves to leases, so a source flooding every node at once
# gets the limit once fleet-wide, not k times (plus, for the window of the
# cold->hot transition, at most rate x sync_interval: docs/shared-budget.md).
# Nodes leaving shrink the share. tests/e2e/test_budget.sh checks windows.
# A node-scoped control policy in the same run shows k times the limit:
# proof that the harness can see over-admission. Counting is done by each
# node's receiving stack (nftables), independently of the agents.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
SINK=${SINK:-$ROOT/build/sluice-sink} # `sluice-sink now`: the floods' clock
[ -x "$SINK" ] || e2e_fail "build first: $SINK"
e2e_start_redis

NODES=4
RATE=200
BURST=48 # divisible by 2 and 4
PPS=1000
SECONDS_FLOOD=2
INTERVAL_MS=100
LEAD_MS=100 # the floods to every node start together this long after they are spawned

e2e_fleet_tx
for i in $(seq 1 $NODES); do
	e2e_fleet_node "$i"
	{
		e2e_fleet_yaml_head "$i"
		cat <<YAML
policies:
  - name: shared
    scope: cluster
    match: { proto: udp, dst_port: 9100 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
  - name: per-node          # the control: the multiplication trap
    match: { proto: udp, dst_port: 9101 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
YAML
	} >"$WORK/node$i.yaml"
	NS_RX=${NODE_NS[i]} e2e_count_setup shared "udp dport 9100" control "udp dport 9101"
	e2e_fleet_agent "$i" "$WORK/node$i.yaml"
done

count_of() { # node counter
	NS_RX=${NODE_NS[$1]} e2e_count "$2"
}

# flood_all PORT SRC NODES...: the same source at $PPS to every listed node at
# once; sets FLEET (what all of them let through) and MS (from the floods'
# common start to the last frame any of them sent, as they measured it).
flood_all() {
	local port=$1 src=$2 n pids=() before=0 after=0 counter=shared t0 late ms
	shift 2
	[ "$port" = 9101 ] && counter=control
	for n in "$@"; do before=$((before + $(count_of "$n" $counter))); done
	t0=$(($("$SINK" now) + LEAD_MS * 1000000))
	for n in "$@"; do
		ns_spawn "$NS_TX" "$FLOOD" --iface "${TX_IF[n]}" --dst-mac "${NODE_MAC[n]}" --proto udp \
			--dport "$port" --src "$src" --dst "${NODE_ADDR[n]}" --pps "$PPS" \
			--count $((PPS * SECONDS_FLOOD)) --start-at-ns "$t0" >"$WORK/flood$n.out"
		pids+=("$SPAWNED_PID")
	done
	for n in "${pids[@]}"; do wait "$n" || e2e_fail "a flood failed"; done
	MS=0
	for n in "$@"; do
		late=$(sed -n 's/.*start_late_ms=\([0-9]*\).*/\1/p' "$WORK/flood$n.out")
		ms=$(sed -n 's/.*elapsed_ms=\([0-9]*\).*/\1/p' "$WORK/flood$n.out")
		{ [ -n "$late" ] && [ -n "$ms" ]; } || e2e_fail "no summary from a flood: $(cat "$WORK/flood$n.out")"
		if ((late + ms > MS)); then MS=$((late + ms)); fi
		after=$((after + $(count_of "$n" $counter)))
	done
	FLEET=$((after - before))
	e2e_fleet_no_fault "$@"
}

# The fleet-wide bound burst + rate·t, plus one packet per node for the
# rounding of burst/k and of t to a millisecond.
check_fleet() { # label k times
	local label=$1 k=$2 times=$3
	local hi=$(((BURST + RATE * MS / 1000) * times + k))
	((times == 1)) && hi=$((hi + RATE * INTERVAL_MS / 1000)) # the cold->hot transition
	e2e_within "$label" "$FLEET" $((hi * 85 / 100)) "$hi"
}

mapfile -t all < <(seq 1 "$NODES") # the node numbers
e2e_fleet_wait_share shared "$NODES" "${all[@]}"
flood_all 9100 10.1.0.1 "${all[@]}"
check_fleet "$NODES nodes, one source on all of them: the fleet admits the limit once" $NODES 1
flood_all 9101 10.1.0.2 "${all[@]}"
check_fleet "$NODES nodes, node-scoped control: $NODES times the limit" $NODES $NODES

# Two nodes leave (their agents stop); the others see the fleet shrink.
for i in 3 4; do e2e_fleet_stop_agent "$i"; done
e2e_fleet_wait_share shared 2 1 2
flood_all 9100 10.1.0.3 1 2
check_fleet "2 nodes: the fleet admits the limit once" 2 1
flood_all 9101 10.1.0.4 1 2
check_fleet "2 nodes, node-scoped control: 2 times the limit" 2 2
grep -q "event=fleet .*live_nodes=2" "${NODE_LOG[1]}" || e2e_fail "node 1 did not log the fleet of 2"
for i in 1 2; do e2e_fleet_stop_agent "$i"; done
echo "test_fleet: all checks passed"
