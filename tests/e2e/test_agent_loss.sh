#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The dead-man switch in the kernel. The agent is killed (-9), hung
# (SIGSTOP) and restarted while traffic flows; each policy's on_agent_loss
# is checked by what gets through, not by reading a map:
#   open      - everything passes;
#   degraded  - the local limit applies (shedding, the class default);
#   abuse     - degraded first, closed after closed_after;
#   allowlisted sources pass throughout;
# and a live agent (restarted, or continued) restores normal enforcement at
# once, with no key state lost.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
e2e_topology

TIMEOUT_MS=1000
CLOSED_AFTER_S=4
ALLOWED=10.200.0.99

cat >"$WORK/policy.yaml" <<YAML
agent: { heartbeat: 100ms, timeout: ${TIMEOUT_MS}ms }
allow: [$ALLOWED]
policies:
  - name: shed
    class: shedding                 # on_agent_loss: degraded (the default)
    match: { proto: udp, dst_port: 8001 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 200/s
    burst: 50
    local_limit: 50/s
    local_burst: 10
  - name: abuse
    class: abuse                    # degraded, closed after closed_after
    match: { proto: udp, dst_port: 8002 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 100/s
    burst: 20
    local_limit: 20/s
    local_burst: 5
    closed_after: ${CLOSED_AFTER_S}s
  - name: lenient
    on_agent_loss: open
    match: { proto: udp, dst_port: 8003 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
YAML
e2e_count_setup \
	shed "udp dport 8001 ip saddr != $ALLOWED" \
	abuse "udp dport 8002 ip saddr != $ALLOWED" \
	lenient "udp dport 8003 ip saddr != $ALLOWED" \
	allowed "ip saddr $ALLOWED"

sent=$E2E_PPS
is_lost() { # whether status says the agent is lost
	local status
	status=$(e2e_status --iface "$VETH_RX")
	grep -q "agent: LOST" <<<"$status"
}
wait_lost() { # until status says the agent is lost, at most 5 s
	local deadline=$((SECONDS + 5))
	until is_lost; do
		((SECONDS < deadline)) || e2e_fail "the agent was not seen lost within 5 s"
		sleep 0.05
	done
}
wait_alive() {
	local deadline=$((SECONDS + 5))
	while is_lost; do
		((SECONDS < deadline)) || e2e_fail "the agent was not seen alive within 5 s"
		sleep 0.05
	done
}

e2e_start_agent "$WORK/policy.yaml"
e2e_send shed 8001
e2e_admitted "agent alive: shed enforces its limit" 50 200
e2e_send lenient 8003
e2e_admitted "agent alive: lenient enforces its limit" 5 10

# 1. kill -9: within the timeout plus one heartbeat each policy is in its mode.
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || :
wait_lost
# abuse first: its degraded phase ends closed_after into the loss.
e2e_send abuse 8002
e2e_admitted "agent dead, before closed_after: abuse is degraded" 5 20
e2e_send shed 8001
e2e_admitted "agent dead: shed is degraded to its local limit" 10 50
e2e_send lenient 8003
e2e_equal "agent dead: lenient fails open" "$GOT" "$sent"
e2e_wait_state abuse closed # closed_after into the fault
e2e_send abuse 8002
e2e_equal "agent dead past closed_after: abuse is closed" "$GOT" 0
before=$(e2e_count allowed)
e2e_flood --proto udp --dport 8002 --src "$ALLOWED" --dst "$RX4" --pps "$E2E_PPS" --count "$sent" >/dev/null
e2e_equal "agent dead: an allowlisted source still passes a closed policy" \
	$(($(e2e_count allowed) - before)) "$sent"
status=$(e2e_status --iface "$VETH_RX")
echo "$status"
grep -Eq '^abuse +enforce +closed' <<<"$status" || e2e_fail "status does not show abuse closed"
grep -Eq '^lenient +enforce +open' <<<"$status" || e2e_fail "status does not show lenient open"
grep -q 'fail_open=' <<<"$status" || e2e_fail "status does not count fail-open passes"

# 2. A restarted agent: normal at once, and the key state survived.
e2e_start_agent "$WORK/policy.yaml"
grep -q 'key_state=kept' "$AGENT_LOG" || e2e_fail "the restarted agent did not reuse the maps"
for t in "shed from=degraded" "abuse from=closed" "lenient from=open"; do
	grep -q "event=fail_mode policy=${t% *} iface=$VETH_RX ${t#* } to=normal why=agent_back" \
		"$AGENT_LOG" || e2e_fail "the restarted agent did not log: $t to=normal why=agent_back"
done
wait_alive
e2e_send lenient 8003
e2e_admitted "agent restarted: lenient enforces again" 5 10
e2e_send abuse 8002
e2e_admitted "agent restarted: abuse enforces again" 20 100

# 3. SIGSTOP: a hung agent is a lost agent; SIGCONT brings it back.
kill -STOP "$AGENT_PID"
wait_lost
e2e_send lenient 8003
e2e_equal "agent hung: lenient fails open" "$GOT" "$sent"
kill -CONT "$AGENT_PID"
wait_alive
e2e_send lenient 8003
e2e_admitted "agent continued: lenient enforces again" 5 10
e2e_stop_agent
echo "test_agent_loss: all checks passed"
