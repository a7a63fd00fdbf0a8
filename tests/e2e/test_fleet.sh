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

flood_all() { # PORT SRC NODES...: $PPS for $SECONDS_FLOOD s from SRC to every listed node
	local counter=shared
	[ "$1" = "$E2E_FLEET_PORT_CONTROL" ] && counter=control
	e2e_fleet_flood "$counter" "$1" "$2" $PPS $((PPS * SECONDS_FLOOD)) "${@:3}"
}

check_fleet() { # label k times
	e2e_fleet_check "$1" "$2" "$3" $RATE $BURST $INTERVAL_MS
}

mapfile -t all < <(seq 1 "$NODES") # the node numbers
e2e_fleet_wait_share shared "$NODES" "${all[@]}"
flood_all $E2E_FLEET_PORT_SHARED 10.1.0.1 "${all[@]}"
check_fleet "$NODES nodes, one source on all of them: the fleet admits the limit once" $NODES 1
flood_all $E2E_FLEET_PORT_CONTROL 10.1.0.2 "${all[@]}"
check_fleet "$NODES nodes, node-scoped control: $NODES times the limit" $NODES $NODES

# Two nodes leave (their agents stop); the others see the fleet shrink.
for i in 3 4; do e2e_fleet_stop_agent "$i"; done
e2e_fleet_wait_share shared 2 1 2
flood_all $E2E_FLEET_PORT_SHARED 10.1.0.3 1 2
check_fleet "2 nodes: the fleet admits the limit once" 2 1
flood_all $E2E_FLEET_PORT_CONTROL 10.1.0.4 1 2
check_fleet "2 nodes, node-scoped control: 2 times the limit" 2 2
grep -q "event=fleet .*live_nodes=2" "${NODE_LOG[1]}" || e2e_fail "node 1 did not log the fleet of 2"
for i in 1 2; do e2e_fleet_stop_agent "$i"; done
echo "test_fleet: all checks passed"
