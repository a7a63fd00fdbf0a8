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

e2e_fleet_tx
for i in $(seq 1 $NODES); do
	e2e_fleet_node "$i"
	{
		e2e_fleet_yaml_head "$i"
		e2e_fleet_policies $RATE $BURST
	} >"$WORK/node$i.yaml"
	e2e_fleet_count_setup "$i"
	e2e_fleet_agent "$i" "$WORK/node$i.yaml"
done

# A fresh source for each flood (a cold key): 10.1.0.1 and on.
SRC_N=0
next_src() { SRC_N=$((SRC_N + 1)) && SRC=10.1.0.$SRC_N; }

# check_shared LABEL K NODES...: one fresh source at $PPS for
# $SECONDS_FLOOD s on every listed node, under the cluster limit: the
# fleet admits it once (e2e_fleet_check). The bound is a healthy store's.
# If an agent lost the store on the way (a call slower than the timeout:
# on a loaded machine one took 50 ms), it still holds with what that adds
# (docs/shared-budget.md, "Store faults"): each such node, once its lease
# expired, was held to its share, (burst + rate·t)/k, while the others
# kept spending leases. That is checked, the flood is void, and it runs
# again with a fresh source, at most FLEET_TRIES times in all: a healthy
# one must follow, so an agent that always loses the store fails.
FLEET_TRIES=3
check_shared() {
	local label=$1 k=$2 try m extra
	shift 2
	for ((try = 1; ; try++)); do
		next_src
		e2e_fleet_flood_once shared $E2E_FLEET_PORT_SHARED "$SRC" $PPS $((PPS * SECONDS_FLOOD)) "$@"
		if [ -z "$FLEET_FAULTED" ]; then
			e2e_fleet_check "$label" "$k" 1 $RATE $BURST $INTERVAL_MS
			return
		fi
		read -r -a m <<<"$FLEET_FAULTED"
		extra=$((${#m[@]} * ((BURST + RATE * FLEET_MS / 1000 + k - 1) / k)))
		e2e_fleet_check "$label; node(s) $FLEET_FAULTED lost the store, each held to its share: bound + $extra" \
			"$k" 1 $RATE $BURST $INTERVAL_MS "$extra"
		echo "  void (try $try of $FLEET_TRIES): node(s) $FLEET_FAULTED lost the store; again with a fresh source"
		((try < FLEET_TRIES)) || e2e_fail "$label: an agent lost the store in $FLEET_TRIES floods in a row"
	done
}

# check_control LABEL K NODES...: the node-scoped control, K times the
# limit; it uses no store, so a store fault changes nothing.
check_control() {
	local label=$1 k=$2
	shift 2
	next_src
	e2e_fleet_flood_once control $E2E_FLEET_PORT_CONTROL "$SRC" $PPS $((PPS * SECONDS_FLOOD)) "$@"
	e2e_fleet_check "$label" "$k" "$k" $RATE $BURST $INTERVAL_MS
}

mapfile -t all < <(seq 1 "$NODES") # the node numbers
e2e_fleet_wait_share shared "$NODES" "${all[@]}"
check_shared "$NODES nodes, one source on all of them: the fleet admits the limit once" $NODES "${all[@]}"
check_control "$NODES nodes, node-scoped control: $NODES times the limit" $NODES "${all[@]}"

# Two nodes leave (their agents stop); the others see the fleet shrink.
for i in 3 4; do e2e_fleet_stop_agent "$i"; done
e2e_fleet_wait_share shared 2 1 2
check_shared "2 nodes: the fleet admits the limit once" 2 1 2
check_control "2 nodes, node-scoped control: 2 times the limit" 2 1 2
grep -q "event=fleet .*live_nodes=2" "${NODE_LOG[1]}" || e2e_fail "node 1 did not log the fleet of 2"
for i in 1 2; do e2e_fleet_stop_agent "$i"; done
echo "test_fleet: all checks passed"
