#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A real Redis Sentinel failover under a sluice agent. A primary and a
# replica redis-server and one redis-sentinel listen on 127.0.0.1 of $NS_RX
# (the agent's namespace, so nothing leaves the test's loopback); the
# agent's store URL is sentinel://. Healthy, the cluster policy 'lenient'
# enforces; when the primary is killed the store faults and lenient fails
# open (its on_store_error); the sentinel promotes the replica, the agent
# finds it by asking the sentinel again, and after the hold-down lenient
# enforces again. Prints the fault and recovery times as "figure:" lines.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
for bin in redis-server redis-sentinel redis-cli; do
	command -v "$bin" >/dev/null || e2e_fail "$bin is not installed (tools/deps.sh)"
done
unset SLUICE_STORE_PASSWORD # these servers have none
e2e_topology

# A free TCP port on 127.0.0.1 of $NS_RX at or above $1 (in a high range
# derived from our PID); sets PORT.
pick_port() {
	PORT=$1
	while [ -n "$(in_ns "$NS_RX" ss -Hltn "sport = :$PORT")" ]; do
		PORT=$((PORT + 1))
	done
}
pick_port $((20000 + $$ % 10000 * 3))
PRIMARY_PORT=$PORT
pick_port $((PRIMARY_PORT + 1))
REPLICA_PORT=$PORT
pick_port $((REPLICA_PORT + 1))
SENTINEL_PORT=$PORT

cli() { # cli PORT ARGS...: redis-cli against 127.0.0.1:PORT in $NS_RX
	local port=$1
	shift
	in_ns "$NS_RX" redis-cli -h 127.0.0.1 -p "$port" "$@"
}

# wait_for WHAT SECONDS CMD...: poll CMD until it succeeds, or fail.
wait_for() {
	local what=$1 deadline=$((SECONDS + $2))
	shift 2
	until "$@"; do
		((SECONDS < deadline)) || e2e_fail "$what"
		sleep 0.05
	done
}

start_redis() { # start_redis PORT NAME [ARGS...]: sets SPAWNED_PID
	local port=$1 name=$2
	shift 2
	ns_spawn "$NS_RX" redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
		--daemonize no --dir "$WORK" --logfile "$WORK/$name.log" "$@"
}

start_redis "$PRIMARY_PORT" primary
PRIMARY_PID=$SPAWNED_PID
start_redis "$REPLICA_PORT" replica --replicaof 127.0.0.1 "$PRIMARY_PORT"
replica_linked() { grep -q '^master_link_status:up' <<<"$(cli "$REPLICA_PORT" info replication 2>/dev/null)"; }
wait_for "the replica did not sync with the primary within 10 s" 10 replica_linked

cat >"$WORK/sentinel.conf" <<CONF
port $SENTINEL_PORT
bind 127.0.0.1
dir $WORK
logfile $WORK/sentinel.log
sentinel monitor m 127.0.0.1 $PRIMARY_PORT 1
sentinel down-after-milliseconds m 500
sentinel failover-timeout m 3000
CONF
ns_spawn "$NS_RX" redis-sentinel "$WORK/sentinel.conf" # it rewrites the file: ours, in $WORK
master_port() { cli "$SENTINEL_PORT" sentinel get-master-addr-by-name m 2>/dev/null | sed -n 2p; }
knows_master() { [ "$(master_port)" = "$PRIMARY_PORT" ]; }
knows_replica() { # the sentinel can fail over only to a replica it has seen
	grep -qx "127.0.0.1:$REPLICA_PORT" <<<"$(cli "$SENTINEL_PORT" sentinel replicas m 2>/dev/null)"
}
wait_for "the sentinel did not report master m within 10 s" 10 knows_master
wait_for "the sentinel did not see the replica within 15 s" 15 knows_replica

STORE_URL="sentinel://127.0.0.1:$SENTINEL_PORT/m"
cat >"$WORK/policy.yaml" <<YAML
store:
  redis: "$STORE_URL"
  timeout: 50ms
  sync_interval: 100ms
  hold_down: 1s
policies:
  - name: lenient
    scope: cluster
    on_store_error: open
    match: { proto: udp, dst_port: 8103 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
YAML
e2e_count_setup lenient "udp dport 8103"
store_log() { # store_log FROM TO: whether the agent logged that store transition
	grep -q "event=store_state store=$STORE_URL from=$1 to=$2" "$AGENT_LOG"
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
leased() { # packets of 'lenient' that a lease (the shared budget) decided
	e2e_status --iface "$VETH_RX" --json |
		grep -o '{"name":"lenient"[^}]*}' | grep -o '"leased_pkts":[0-9]*' | cut -d: -f2
}

e2e_start_agent "$WORK/policy.yaml"
e2e_wait_state lenient normal
e2e_send lenient 8103; e2e_admitted "primary healthy: lenient enforces" 5 10
e2e_send lenient 8103; e2e_admitted "primary healthy, again: the key is hot" 5 10
LEASED=$(leased)
((LEASED > 0)) || e2e_fail "no packet of the hot key was decided by a lease"
echo "ok: the hot key runs on leases ($LEASED packets decided by them)"
store_log ok fault && e2e_fail "the store faulted before the primary was killed"

KILLED_MS=$(now_ms)
kill -KILL "$PRIMARY_PID"
wait "$PRIMARY_PID" 2>/dev/null || : # killed: its status is the signal's
e2e_wait_state lenient open
OPEN_MS=$(now_ms)
e2e_send lenient 8103; e2e_equal "primary dead: lenient fails open" "$GOT" "$E2E_PPS"
promoted() { [ "$(master_port)" = "$REPLICA_PORT" ]; }
wait_for "the sentinel did not promote the replica within 10 s" 10 promoted
PROMOTED_MS=$(now_ms)
e2e_equal "the new master is the former replica" \
	"$(cli "$REPLICA_PORT" role | sed -n 1p)" master
e2e_wait_state lenient normal
NORMAL_MS=$(now_ms)
LEASED=$(leased)
e2e_send lenient 8103; e2e_admitted "failed over to the replica: lenient enforces" 5 10
(($(leased) > LEASED)) || e2e_fail "after the failover no lease decided a packet"
echo "ok: after the failover, leases from the new master decide again"
store_log ok fault || e2e_fail "the agent did not log the store fault"
store_log fault ok || e2e_fail "the agent did not log the store's recovery"
echo "figure: kill -> lenient open: $((OPEN_MS - KILLED_MS)) ms"
echo "figure: kill -> sentinel names the replica: $((PROMOTED_MS - KILLED_MS)) ms (at most: polled after the 1 s open-mode send)"
echo "figure: kill -> lenient normal: $((NORMAL_MS - KILLED_MS)) ms (hold_down 1 s)"
e2e_stop_agent
echo "test_sentinel: all checks passed"
