#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make bench-fleet: what the shared budget costs its store at fleet scale
# (docs/shared-budget.md, "Cost at fleet scale"). sluice-fleet-sim
# (tools/fleet_sim.c) runs NODES_LIST simulated nodes, each with KEYS
# saturated hot keys, through the real planner against a private
# redis-server on a Unix socket, then (CLUSTER=1) against a private
# 3-primary Redis Cluster on 127.0.0.1 (no replicas), each in MODES:
# "lump" (the planner's leases) and "rate" (--rate-leases), so before and
# after figures come from the same run. Redis and the
# simulator run at SCHED_FIFO 1, as make bench does: on a shared machine
# other tasks would otherwise decide Redis' share of a CPU.
#
# Usage: bench/fleet.sh <build-dir>. Needs root (SCHED_FIFO).
# tests/e2e/lib.sh's EXIT trap ends every redis-server started here.
BUILD=${1:?usage: bench/fleet.sh <build-dir>}
E2E_ID=${E2E_ID:-f$$}
source "$(dirname "$0")/../tests/e2e/lib.sh"

SIM=$BUILD/sluice-fleet-sim
NODES_LIST=${NODES_LIST:-10 100}
KEYS=${KEYS:-1000}
SECONDS_RUN=${SECONDS_RUN:-10}
CLUSTER=${CLUSTER:-1}
read -r -a SIM_ARGS <<<"${SIM_ARGS:-}" # more options for every run (--demand, --rate ...)
MODES=${MODES:-lump rate}
PRIMARIES=3
PORT0=$((20000 + $$ % 20000)) # the cluster's first port; the others follow it

[ -x "$SIM" ] || e2e_fail "build first: $SIM"
e2e_realtime
chrt -f -p 1 $$ >/dev/null # below the tests' priority, as make bench

run() { # URL STATS...: one row per NODES_LIST entry
	local url=$1 n s m mode args=()
	shift
	for s in "$@"; do args+=(--stats "$s"); done
	args+=("${SIM_ARGS[@]}")
	for n in $NODES_LIST; do
		for m in $MODES; do
			mode=()
			[ "$m" = rate ] && mode=(--rate-leases)
			echo "\$ sluice-fleet-sim --url $url ${args[*]} ${mode[*]} --nodes $n --keys $KEYS --seconds $SECONDS_RUN"
			"$SIM" --url "$url" "${args[@]}" "${mode[@]}" --nodes "$n" --keys "$KEYS" \
				--seconds "$SECONDS_RUN" || true
		done
	done
}

echo "one redis-server; load: $(cut -d' ' -f1-3 /proc/loadavg)"
e2e_start_redis
run "unix://$REDIS_SOCK"

[ "$CLUSTER" = 1 ] || exit 0
addrs=() stats=()
for ((r = 0; r < PRIMARIES; r++)); do
	port=$((PORT0 + r))
	mkdir -p "$WORK/c$r"
	(cd "$WORK/c$r" && exec redis-server --bind 127.0.0.1 --port "$port" --save '' \
		--appendonly no --cluster-enabled yes --cluster-config-file nodes.conf \
		--logfile "$WORK/c$r/log") &
	_pids+=("$!")
	addrs+=("127.0.0.1:$port")
	stats+=("127.0.0.1:$port")
done
deadline=$((SECONDS + 10))
for a in "${addrs[@]}"; do
	until [ "$(redis-cli -p "${a#*:}" ping 2>/dev/null)" = PONG ]; do
		((SECONDS < deadline)) || e2e_fail "redis-server $a did not answer"
		sleep 0.05
	done
done
redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$WORK/create.log" 2>&1 ||
	{ cat "$WORK/create.log" >&2; e2e_fail "redis-cli --cluster create failed"; }
until redis-cli -p "$PORT0" cluster info | grep -q 'cluster_state:ok'; do
	((SECONDS < deadline + 20)) || e2e_fail "the cluster did not become ok"
	sleep 0.1
done
echo
echo "a $PRIMARIES-primary Redis Cluster; load: $(cut -d' ' -f1-3 /proc/loadavg)"
run "cluster://${addrs[0]}" "${stats[@]}"
