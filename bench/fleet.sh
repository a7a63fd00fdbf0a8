#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make bench-fleet: what the shared budget costs its store at fleet scale
# (docs/shared-budget.md, "Cost at fleet scale"). sluice-fleet-sim
# (tools/fleet_sim.c) runs NODES_LIST simulated nodes, each offering KEYS
# saturated hot keys, through the real planner ("lump": the lease of
# tokens topped up, before) and through rate leases ("rate":
# --rate-leases, after), against a private redis-server on 127.0.0.1,
# then (CLUSTER=1) a private 3-primary Redis Cluster on 127.0.0.1 (no
# replicas). It prints one markdown row a run, and each run's command on
# stderr.
#
# The policy is one a fleet of 500 nodes would use on a hot key: RATE
# units a second, BURST units. BURST must be at least the nodes sharing
# the key: a node's burst share is granted in whole units, so with more
# nodes than units some nodes hold none and admit nothing.
#
# Nothing runs at real-time priority: on a shared machine the rows say
# where the machine, not the design, is the limit (achieved against
# planned syncs, the simulator's own CPU, the load average).
#
# Usage: bench/fleet.sh <build-dir>. No root needed. Every redis-server
# started here is ended by its PID on exit (trap), its files removed.
set -u
BUILD=${1:?usage: bench/fleet.sh <build-dir>}
SIM=$BUILD/sluice-fleet-sim
NODES_LIST=${NODES_LIST:-10 100 500}
KEYS=${KEYS:-1000}
RATE=${RATE:-5000}   # units a second per key, across the fleet
BURST=${BURST:-2500} # units: at least the most nodes of NODES_LIST
SYNC_MS=${SYNC_MS:-100}
WARMUP=${WARMUP:-3}
SECONDS_RUN=${SECONDS_RUN:-5}
MODES=${MODES:-lump rate}
CLUSTER=${CLUSTER:-1}
read -r -a SIM_ARGS <<<"${SIM_ARGS:-}" # more options for every run (--demand, --skew ...)
PRIMARIES=3
MS_PER_S=1000
BUS_OFFSET=10000 # a cluster node's bus port is its port + this
PORT_BASE=$((20000 + $$ % 20000))
UP_S=10 # a redis-server must answer within this

pids=()
WORK=$(mktemp -d /tmp/sluice-fleet.XXXXXX)
cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill -KILL "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
	echo "bench/fleet.sh: $*" >&2
	exit 1
}

[ -x "$SIM" ] || fail "build first: $SIM (make fleet-sim)"
for bin in redis-server redis-cli jq; do
	command -v "$bin" >/dev/null || fail "$bin is not installed (tools/deps.sh)"
done
for n in $NODES_LIST; do
	((BURST >= n)) || echo "note: burst $BURST < $n nodes: some nodes hold no burst unit" >&2
done
ulimit -n "$(ulimit -Hn)" # a node's connection to each primary: 500 nodes x 3

# free_port FROM: the first port from FROM that nothing listens on, nor on its bus port.
free_port() {
	local p=$1
	while [ -n "$(ss -Htln "( sport = :$p or sport = :$((p + BUS_OFFSET)) )")" ]; do
		p=$((p + 1))
	done
	echo "$p"
}

# start_redis PORT NAME ARGS...: a private redis-server on 127.0.0.1:PORT.
start_redis() {
	local port=$1 dir=$WORK/$2 deadline=$((SECONDS + UP_S))
	shift 2
	mkdir -p "$dir"
	redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir" \
		--logfile "$dir/log" "$@" &
	pids+=("$!")
	until [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; do
		((SECONDS < deadline)) || fail "redis-server on port $port did not answer: $dir/log"
		sleep 0.05
	done
}

# row STORE URL STATS...: one run per NODES_LIST entry and mode, a row each.
row() {
	local store=$1 url=$2 n m out rc args=() mode=()
	shift 2
	for s in "$@"; do args+=(--stats "$s"); done
	args+=(--rate "$RATE" --burst "$BURST" --sync-ms "$SYNC_MS" --keys "$KEYS"
		--warmup "$WARMUP" --seconds "$SECONDS_RUN" "${SIM_ARGS[@]}")
	for n in $NODES_LIST; do
		for m in $MODES; do
			mode=()
			[ "$m" = rate ] && mode=(--rate-leases)
			echo "\$ sluice-fleet-sim --url $url ${args[*]} ${mode[*]} --nodes $n --json" >&2
			rc=0
			out=$("$SIM" --url "$url" "${args[@]}" "${mode[@]}" --nodes "$n" --json) || rc=$?
			if [ "$rc" -gt 1 ] || [ -z "$out" ]; then
				echo "| $n | $KEYS | $m | $store | error (exit $rc) |"
				continue
			fi
			jq -r --arg m "$m" --arg s "$store" --arg load "$(cut -d' ' -f1 /proc/loadavg)" \
				--argjson plan $((MS_PER_S / SYNC_MS)) '
				"| \(.nodes) | \(.keys) | \($m) | \($s) | \(.cmds_per_node_key_s) | " +
				"\(.store_cpu_pct | map(round | tostring) | join("+")) | " +
				"\(.syncs_per_node_s)/\($plan) | \(.pairs_per_core) | " +
				"\(.worst_window)/\(.bound)\(if .ok then "" else " OVER" end) | " +
				"\(.admitted_per_limit) | \(.sim_cpu_pct | round) | \($load) |"' <<<"$out"
		done
	done
}

echo "policy: $RATE/s, burst $BURST, sync interval $SYNC_MS ms; $WARMUP s warm-up, $SECONDS_RUN s measured"
echo
echo "| nodes | hot keys | mode | store | cmds/node/key/s | Redis CPU % | syncs/node/s achieved/planned | pairs/core | worst 1 s window/bound | admit/limit | sim CPU % | load |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
port=$(free_port "$PORT_BASE")
start_redis "$port" single
row "one Redis" "redis://127.0.0.1:$port"

[ "$CLUSTER" = 1 ] || exit 0
addrs=()
for ((r = 0; r < PRIMARIES; r++)); do
	port=$(free_port $((port + 1)))
	start_redis "$port" "c$r" --cluster-enabled yes --cluster-config-file nodes.conf
	addrs+=("127.0.0.1:$port")
done
redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$WORK/create.log" 2>&1 ||
	{ cat "$WORK/create.log" >&2; fail "redis-cli --cluster create failed"; }
deadline=$((SECONDS + 2 * UP_S))
until redis-cli -p "${addrs[0]#*:}" cluster info | grep -q 'cluster_state:ok'; do
	((SECONDS < deadline)) || fail "the cluster did not become ok"
	sleep 0.1
done
row "$PRIMARIES primaries" "cluster://${addrs[0]}" "${addrs[@]}"
