#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Store faults with a real redis-server. The agent probes the store every
# sync interval with a tight timeout; when Redis is paused (SIGSTOP: every
# call times out), flapping, or killed and restarted empty, each
# cluster-scoped policy takes its on_store_error mode, checked by the
# traffic that gets through; node-scoped policies are untouched; recovery
# waits for the hold-down, so a flapping store does not flap the kernel.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
command -v redis-server >/dev/null || e2e_fail "redis-server is not installed (tools/deps.sh)"
e2e_topology
e2e_start_redis

HOLD_DOWN_S=2
CLOSED_AFTER_S=3
cat >"$WORK/policy.yaml" <<YAML
store:
  redis: unix://$REDIS_SOCK
  timeout: 20ms
  sync_interval: 100ms
  hold_down: ${HOLD_DOWN_S}s
policies:
  - name: shed
    scope: cluster
    match: { proto: udp, dst_port: 8101 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 200/s
    burst: 50
    local_limit: 50/s
    local_burst: 10
  - name: abuse
    scope: cluster
    class: abuse
    closed_after: ${CLOSED_AFTER_S}s
    match: { proto: udp, dst_port: 8102 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 100/s
    burst: 20
    local_limit: 20/s
    local_burst: 5
  - name: lenient
    scope: cluster
    on_store_error: open
    match: { proto: udp, dst_port: 8103 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
  - name: local
    match: { proto: udp, dst_port: 8104 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
YAML
e2e_count_setup shed "udp dport 8101" abuse "udp dport 8102" lenient "udp dport 8103" \
	local "udp dport 8104"

SENT=$E2E_PPS
transitions() { # policy to -> how many times the agent logged it
	grep -c "event=fail_mode policy=$1 .*to=$2" "$AGENT_LOG" || :
}

e2e_start_agent "$WORK/policy.yaml"
# A first probe slowed past its timeout (both CPUs busy) fails lenient open
# until the store answers: the healthy checks start once it is normal.
e2e_wait_state lenient normal
e2e_send lenient 8103; e2e_admitted "store healthy: lenient enforces" 5 10
e2e_send shed 8101; e2e_admitted "store healthy: shed enforces its limit" 50 200

# 1. Paused: every probe times out.
kill -STOP "$REDIS_PID"
e2e_wait_state lenient open
e2e_send abuse 8102; e2e_admitted "store paused, before closed_after: abuse is degraded" 5 20
e2e_send lenient 8103; e2e_equal "store paused: lenient fails open" "$GOT" "$SENT"
e2e_send shed 8101; e2e_admitted "store paused: shed is degraded to its local limit" 10 50
e2e_send local 8104; e2e_admitted "store paused: the node-scoped policy is untouched" 5 10
e2e_wait_state abuse closed # closed_after into the fault
e2e_send abuse 8102; e2e_equal "store paused past closed_after: abuse is closed" "$GOT" 0
grep -q "event=store_state store=unix://$REDIS_SOCK from=ok to=fault" "$AGENT_LOG" ||
	e2e_fail "the agent did not log the store fault"

# 2. Back: modes hold for the hold-down, then normal.
kill -CONT "$REDIS_PID"
e2e_send lenient 8103; e2e_equal "store back, within the hold-down: lenient still open" "$GOT" "$SENT"
e2e_wait_state lenient normal
e2e_send lenient 8103; e2e_admitted "store back after the hold-down: lenient enforces" 5 10
e2e_equal "one fault, one recovery so far" "$(transitions lenient open) $(transitions lenient normal)" "1 1"

# 3. Flapping: paused and continued every 300 ms for 3 s; the kernel stays failed over.
kill -STOP "$REDIS_PID"
e2e_wait_state lenient open
for _ in 1 2 3 4 5; do
	sleep 0.3; kill -CONT "$REDIS_PID"; sleep 0.3; kill -STOP "$REDIS_PID"
done
e2e_equal "flapping: lenient went open once more, never back" \
	"$(transitions lenient open) $(transitions lenient normal)" "2 1"
kill -CONT "$REDIS_PID"
e2e_wait_state lenient normal

# 4. Killed and restarted empty.
kill -KILL "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null || :
e2e_wait_state lenient open
e2e_send lenient 8103; e2e_equal "store dead: lenient fails open" "$GOT" "$SENT"
e2e_start_redis
e2e_wait_state lenient normal
e2e_send lenient 8103; e2e_admitted "store restarted empty: lenient enforces" 5 10
e2e_stop_agent
echo "test_store_fault: all checks passed"
