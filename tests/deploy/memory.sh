#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# What one node's agent costs in memory, for the DaemonSet's resources
# (docs/kubernetes.md): for each --max-keys in $KEYS_LIST (default: the
# agent's default, 2^20), an agent attached to a veth in a namespace of its
# own, with examples/k8s-node.yaml's policy; prints the kernel memory of
# every map its program uses (bpftool's bytes_memlock: the state map, the
# per-CPU maps, the rest) and the agent's resident set (VmRSS) after 3 s
# and 5 scrapes. With FILL=1 it then sends one TCP SYN to port 443 from
# each of max_keys sources (a bounded flood inside the test's namespaces),
# so the key table is full, changes a limit and reloads (the agent carries
# the policy's keys), and prints the agent's peak resident set (VmHWM).
# A measurement, not a test: it asserts nothing, and is not in `make test`.
#   KEYS_LIST="65536 262144 1048576" FILL=1 tests/deploy/memory.sh
source "$(dirname "$0")/lib.sh"
e2e_require
command -v jq >/dev/null || e2e_fail "no jq (tools/deps.sh installs it)"
e2e_topology

PORT=9190
SETTLE_S=3
SCRAPES=5
sed "s/^interfaces:.*/interfaces: [$VETH_RX]/" "$ROOT/examples/k8s-node.yaml" >"$WORK/policy.yaml"

# The maps of the program attached to $VETH_RX, through its pinned link.
maps_json() { # DIR
	local prog_id
	prog_id=$(bpftool -j link show pinned "$1/link" | jq -r .prog_id)
	for id in $(bpftool -j prog show id "$prog_id" | jq -r '.map_ids[]'); do
		bpftool -j map show id "$id"
	done | jq -s .
}

FLOOD_MS=60000 # the flood's hard cap
SRC_SPAN=65536
printf '%10s %12s %12s %12s %12s %8s %8s %8s\n' max_keys state_bytes percpu_bytes other_bytes \
	memlock_bytes rss_kb keys hwm_kb
for keys in ${KEYS_LIST:-1048576}; do
	ns_spawn "$NS_RX" "$SLUICE" -q run --config "$WORK/policy.yaml" --iface "$VETH_RX" \
		--pin-root "$PIN_ROOT" --mode native --max-keys "$keys" --detach-on-exit \
		--metrics "127.0.0.1:$PORT" >"$WORK/agent.$keys.log" 2>&1
	AGENT_PID=$SPAWNED_PID
	deadline=$((SECONDS + 20))
	until [ -e "$(e2e_set_dir "$VETH_RX")/link" ]; do
		kill -0 "$AGENT_PID" 2>/dev/null || { cat "$WORK/agent.$keys.log" >&2; e2e_fail "agent exited"; }
		((SECONDS < deadline)) || e2e_fail "agent did not attach within 20 s"
		sleep 0.05
	done
	sleep "$SETTLE_S" # a measurement: the agent's first ticks and key walk
	for _ in $(seq "$SCRAPES"); do
		deploy_get "$PORT" >/dev/null
	done
	maps=$(maps_json "$PIN_ROOT/$VETH_RX")
	state=$(jq '[.[] | select(.name == "sluice_state") | .bytes_memlock] | add' <<<"$maps")
	percpu=$(jq '[.[] | select(.type | startswith("percpu")) | .bytes_memlock] | add' <<<"$maps")
	total=$(jq '[.[].bytes_memlock] | add' <<<"$maps")
	rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$AGENT_PID/status")
	if [ -n "${FILL:-}" ]; then
		# One flood per /16 of sources: sluice-flood takes at most SRC_SPAN.
		per=$((keys < SRC_SPAN ? keys : SRC_SPAN))
		for i in $(seq 0 $((keys / per - 1))); do
			e2e_flood --proto tcp-syn --dport 443 --src "11.$i.0.0" --src-count "$per" \
				--dst "$RX4" --count "$per" --duration-ms "$FLOOD_MS" >/dev/null
		done
		sed -i '0,/rate: 50\/s/s//rate: 60\/s/' "$WORK/policy.yaml"
		"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" >/dev/null
		sed -i '0,/rate: 60\/s/s//rate: 50\/s/' "$WORK/policy.yaml"
		sleep "$SETTLE_S" # a measurement: the tick's key walk over the full table
	fi
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$AGENT_PID/status")
	# sluice status exits 1 while a policy is in a fail mode; it prints all the same.
	used=$("$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json | jq .keys) ||
		[ $? = 1 ]
	printf '%10d %12d %12d %12d %12d %8d %8d %8d\n' "$keys" "$state" "$percpu" \
		$((total - state - percpu)) "$total" "$rss" "$used" "$hwm"
	[ -z "${VERBOSE:-}" ] || jq -r '.[] | "\(.name) \(.type) \(.max_entries) \(.bytes_memlock)"' <<<"$maps"
	e2e_stop_agent
	rm -rf "${PIN_ROOT:?}/$VETH_RX"
done
