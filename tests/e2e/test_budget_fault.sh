#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Store faults while hot keys run on leases (#5): two nodes, each with its
# own veth, XDP program and agent, one real redis-server, one source
# flooding both nodes. Redis is paused (SIGSTOP: every call times out), then
# killed and restarted empty, in the middle of a flood. Each policy must
# follow its on_store_error once its leases expire — `shared` degrades to
# the share, `lenient` fails open — admit no more than the documented
# store-fault bound (docs/shared-budget.md), and go back to leases within
# two sync intervals of Redis answering again. The receiving stacks count
# (nftables), independently of the agents.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
SINK=${SINK:-$ROOT/build/sluice-sink} # `sluice-sink now`: the floods' clock
[ -x "$SINK" ] || e2e_fail "build first: $SINK"
e2e_start_redis

NODES=2
RATE=400
BURST=100
PPS=800 # per node: 4 times the rate in all
INTERVAL_MS=100
FLOOD_MS=4000
FAULT_AT_MS=1000
FAULT_MS=1500
LEAD_MS=100 # floods to both nodes start together this long after they are spawned
POLL_S=0.02
# The restart's flood must outlast the agent's stop, FAULT_MS, its start
# and resume_ms: the gap was 6 s with both CPUs at a load of 20.
RESTART_FLOOD_MS=12000
RESUME_MAX_MS=1000 # two intervals plus the agent's timeouts and this script's polling

e2e_fleet_tx
for i in $(seq 1 $NODES); do
	e2e_fleet_node "$i"
	{
		e2e_fleet_yaml_head "$i"
		cat <<YAML
policies:
  - name: shared
    scope: cluster
    on_store_error: degraded
    match: { proto: udp, dst_port: 9100 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
  - name: lenient
    scope: cluster
    on_store_error: open
    match: { proto: udp, dst_port: 9102 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
YAML
	} >"$WORK/node$i.yaml"
	NS_RX=${NODE_NS[i]} e2e_count_setup shared "udp dport 9100" lenient "udp dport 9102"
	e2e_fleet_agent "$i" "$WORK/node$i.yaml"
done
mapfile -t all < <(seq 1 "$NODES") # the node numbers
e2e_fleet_wait_share shared "$NODES" "${all[@]}"

counted() { # counter: what every node's receiving stack counted
	local n sum=0
	for n in "${all[@]}"; do sum=$((sum + $(NS_RX=${NODE_NS[n]} e2e_count "$1"))); done
	echo "$sum"
}
leased() { # node policy: packets the node's leases decided
	e2e_status --iface "${NODE_IF[$1]}" --json |
		grep -o "{\"name\":\"$2\"[^}]*}" | grep -o '"leased_pkts":[0-9]*' | cut -d: -f2
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# start_floods PORT SRC [MS]: both nodes at $PPS for MS (default
# $FLOOD_MS), in the background, starting together LEAD_MS from now.
FLOODS=()
start_floods() {
	local n t0
	FLOODS=()
	t0=$(($("$SINK" now) + LEAD_MS * 1000000))
	for n in "${all[@]}"; do
		ns_spawn "$NS_TX" "$FLOOD" --iface "${TX_IF[n]}" --dst-mac "${NODE_MAC[n]}" --proto udp \
			--dport "$1" --src "$2" --dst "${NODE_ADDR[n]}" --pps "$PPS" \
			--count $((PPS * ${3:-$FLOOD_MS} / 1000)) --start-at-ns "$t0" >"$WORK/flood-$1-$n.out"
		FLOODS+=("$SPAWNED_PID")
	done
}
wait_floods() {
	local p
	for p in "${FLOODS[@]}"; do wait "$p" || e2e_fail "a flood failed"; done
}

# span_ms PORT: from the floods' common start to the last frame either of
# them sent to PORT, as they measured it: the t of rate·t in the bounds. A
# sender held up does not stretch the bound beyond what it really sent over.
span_ms() {
	local n out late ms max=0
	for n in "${all[@]}"; do
		out=$WORK/flood-$1-$n.out
		late=$(sed -n 's/.*start_late_ms=\([0-9]*\).*/\1/p' "$out")
		ms=$(sed -n 's/.*elapsed_ms=\([0-9]*\).*/\1/p' "$out")
		{ [ -n "$late" ] && [ -n "$ms" ]; } || e2e_fail "no summary from a flood: $(cat "$out")"
		if ((late + ms > max)); then max=$((late + ms)); fi
	done
	echo "$max"
}

# sleep_ms MS: from when the floods were spawned, MS into them.
sleep_ms() {
	sleep "$(awk "BEGIN { print $1 / 1000 }")"
}

# resume_ms: after Redis answers again, how long until node 1's leases
# decide packets of 'shared' again (its leased counter moves).
resume_ms() {
	local t0 base deadline
	t0=$(now_ms)
	deadline=$((t0 + 3000))
	sleep 0.05
	base=$(leased 1 shared)
	until [ "$(leased 1 shared)" -gt "$base" ]; do
		(($(now_ms) < deadline)) || {
			echo 99999
			return
		}
		base=$(leased 1 shared)
		sleep "$POLL_S"
	done
	echo $(($(now_ms) - t0))
}

# The documented bound while the store fails (docs/shared-budget.md): what
# leases held when it failed (at most the burst), the degraded share's own
# burst and rate (at most the burst and the rate, fleet-wide), the fresh
# burst the store's bucket refilled to while nobody could draw on it
# (leases after the store answers again), and the rate: 3·burst + rate·t,
# plus one packet per node for rounding; t from span_ms.
fault_bound() { # span_ms
	echo $((3 * BURST + RATE * $1 / 1000 + NODES))
}

# A fault in the middle of a flood of both policies.
# fault NAME SRC_SHARED SRC_LENIENT BEGIN_CMD END_CMD
fault() {
	local name=$1 s0 l0 s1 l1 ms bound
	s0=$(counted shared)
	l0=$(counted lenient)
	start_floods 9100 "$2"
	local shared_floods=("${FLOODS[@]}")
	start_floods 9102 "$3"
	FLOODS+=("${shared_floods[@]}")
	sleep_ms $((LEAD_MS + FAULT_AT_MS))
	eval "$4"
	sleep_ms "$FAULT_MS"
	eval "$5"
	ms=$(resume_ms)
	wait_floods
	s1=$(($(counted shared) - s0))
	l1=$(($(counted lenient) - l0))
	bound=$(fault_bound "$(span_ms 9100)")
	echo "figure: $name: shared admitted $s1 (bound $bound), lenient $l1," \
		"leases back ${ms} ms after Redis answered"
	((s1 <= bound)) || e2e_fail "$name: shared admitted $s1 > bound $bound"
	# Degraded, not closed: the share kept admitting while the store was out.
	((s1 >= RATE * FLOOD_MS / 1000 / 2)) || e2e_fail "$name: shared admitted only $s1"
	# Open: while the store was out lenient passed everything sent to it.
	((l1 > bound)) || e2e_fail "$name: lenient admitted $l1, not more than the bound $bound: it did not fail open"
	((ms <= RESUME_MAX_MS)) || e2e_fail "$name: leases not back within $RESUME_MAX_MS ms ($ms)"
	echo "ok: $name: each policy followed on_store_error and came back to leases"
}

# Leases first: the key turns hot on both nodes.
start_floods 9100 10.3.0.1
wait_floods
for n in "${all[@]}"; do
	[ "$(leased "$n" shared)" -gt 0 ] || e2e_fail "node $n: no packet was decided by a lease"
done
echo "ok: both nodes run 'shared' on leases"

# fault() evals its commands when they are due, so they name $REDIS_PID
# unexpanded: the restart replaces the server and its PID.
# shellcheck disable=SC2016 # expanded by fault()'s eval, on purpose
fault "Redis paused" 10.3.0.2 10.3.0.3 'kill -STOP "$REDIS_PID"' 'kill -CONT "$REDIS_PID"'
# shellcheck disable=SC2016 # expanded by fault()'s eval, on purpose
fault "Redis killed, restarted empty" 10.3.0.4 10.3.0.5 \
	'kill -KILL "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true' 'e2e_start_redis'

# Node 1's agent restarts in the middle of a flood: its leases and their
# accounting are in the pinned maps, so the new agent carries on from them.
# While it is gone its leases run out and the key is cold there: that node
# holds it to its share while the others keep spending leases, so the fleet
# admits at most burst + rate·t plus the share over the gap,
# (burst + rate·gap)/k, plus the transition back (rate·interval), plus one
# packet per node for rounding. t is span_ms; the gap is measured from just
# before the agent is stopped to when its leases are seen back: the
# FAULT_MS the script sleeps, the new agent's start-up and resume_ms, all of
# which a busy machine lengthens (at most POLL_S and one status call late).
restart_bound() { # span_ms gap_ms
	echo $((BURST + RATE * $1 / 1000 + (BURST + RATE * $2 / 1000) / NODES +
		RATE * INTERVAL_MS / 1000 + NODES))
}
s0=$(counted shared)
start_floods 9100 10.3.0.6 "$RESTART_FLOOD_MS"
sleep_ms $((LEAD_MS + FAULT_AT_MS))
stopped_ms=$(now_ms)
e2e_fleet_stop_agent 1
sleep_ms "$FAULT_MS"
e2e_fleet_agent 1 "$WORK/node1.yaml"
ms=$(resume_ms)
gap_ms=$(($(now_ms) - stopped_ms))
wait_floods
s1=$(($(counted shared) - s0))
bound=$(restart_bound "$(span_ms 9100)" "$gap_ms")
echo "figure: agent restarted: shared admitted $s1 (bound $bound for a gap of $gap_ms ms)," \
	"node 1's leases back ${ms} ms after it started"
((s1 <= bound)) || e2e_fail "agent restarted: shared admitted $s1 > bound $bound"
((ms <= RESUME_MAX_MS)) || e2e_fail "agent restarted: leases not back within $RESUME_MAX_MS ms ($ms)"
grep -q "key_state=kept" "${NODE_LOG[1]}" || e2e_fail "the restarted agent did not keep the key state"
echo "ok: agent restarted: kept its state and came back to leases"

for n in "${all[@]}"; do e2e_fleet_stop_agent "$n"; done
echo "test_budget_fault: all checks passed"
