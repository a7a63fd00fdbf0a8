#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The exit statuses of `sluice status`, for Nagios-style checks (sluice(8),
# EXIT STATUS), on a real agent, in text and --json alike:
#   0  the agent is alive and every policy is in its normal mode;
#   1  a policy is in a fail mode (the store paused: on_store_error open),
#      or the agent is lost (kill -9, then past agent.timeout);
#   2  a usage error;
#   3  nothing pinned for an interface, or no interface under the pin root;
# over several interfaces the worst of them.
source "$(dirname "$0")/lib.sh"
e2e_require
command -v jq >/dev/null || e2e_fail "no jq (tools/deps.sh installs it)"
e2e_realtime
e2e_topology
e2e_start_redis

TIMEOUT_MS=300
cat >"$WORK/policy.yaml" <<YAML
agent: { heartbeat: 100ms, timeout: ${TIMEOUT_MS}ms }
store: { redis: "unix://$REDIS_SOCK", timeout: 20ms, sync_interval: 100ms, hold_down: 1s }
policies:
  - name: local
    match: { proto: udp, dst_port: 8301 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
  - name: shared
    scope: cluster
    on_store_error: open
    match: { proto: udp, dst_port: 8302 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
YAML

# expect_status WANT ARGS...: `sluice status ARGS...` exits WANT; for 0 and
# 1 it printed to stdout (and --json parses), for 3 it said why on stderr.
expect_status() {
	local want=$1 rc=0
	shift
	"$SLUICE" status "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
	[ "$rc" = "$want" ] || {
		sed 's/^/  stdout: /' "$WORK/out" >&2
		sed 's/^/  stderr: /' "$WORK/err" >&2
		e2e_fail "sluice status $*: exit status $rc, expected $want"
	}
	case $want in
	0 | 1) [ -s "$WORK/out" ] || e2e_fail "sluice status $*: printed nothing" ;;
	*) [ -s "$WORK/err" ] || e2e_fail "sluice status $*: exit $rc without a reason" ;;
	esac
	if [[ " $* " == *" --json "* ]]; then
		jq -e . "$WORK/out" >/dev/null || e2e_fail "sluice status $*: not JSON"
	fi
	echo "ok: sluice status $*: exit status $rc"
}
P=(--pin-root "$PIN_ROOT")

e2e_start_agent "$WORK/policy.yaml"
e2e_wait_state shared normal
expect_status 0 "${P[@]}" --iface "$VETH_RX"
expect_status 0 "${P[@]}" # every interface under the pin root
expect_status 0 "${P[@]}" --iface "$VETH_RX" --json
e2e_equal "healthy: agent_lost_ms" "$(jq .agent_lost_ms "$WORK/out")" 0

expect_status 3 "${P[@]}" --iface "$VETH_RX" --iface nosuchif0 # the worst wins
expect_status 3 "${P[@]}" --iface nosuchif0 --json
mkdir "$WORK/empty"
expect_status 3 --pin-root "$WORK/empty"
expect_status 3 --pin-root "$WORK/absent"
expect_status 2 "${P[@]}" --bogus
expect_status 2 "${P[@]}" extra

# A policy in a fail mode while the agent is alive: the store paused.
kill -STOP "$REDIS_PID"
e2e_wait_state shared open
expect_status 1 "${P[@]}" --iface "$VETH_RX"
expect_status 1 "${P[@]}" --iface "$VETH_RX" --json
e2e_equal "store paused: shared's state" \
	"$(jq -r '.policies[] | select(.name == "shared") | .state' "$WORK/out")" open
e2e_equal "store paused: the agent is not lost" "$(jq .agent_lost_ms "$WORK/out")" 0
expect_status 3 "${P[@]}" --iface "$VETH_RX" --iface nosuchif0 # still the worst
kill -CONT "$REDIS_PID"
e2e_wait_state shared normal
expect_status 0 "${P[@]}" --iface "$VETH_RX"

# The agent lost: kill -9, and its heartbeat goes stale past agent.timeout.
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || [ $? = 137 ] || e2e_fail "the agent did not die of SIGKILL"
e2e_wait_state local degraded # on_agent_loss, once the timeout has passed
expect_status 1 "${P[@]}" --iface "$VETH_RX"
grep -q '^  agent: LOST for ' "$WORK/out" || e2e_fail "status does not say the agent is lost"
expect_status 1 "${P[@]}" --iface "$VETH_RX" --json
lost_ms=$(jq .agent_lost_ms "$WORK/out")
((lost_ms > 0)) || e2e_fail "agent_lost_ms is $lost_ms with the agent killed"
echo "ok: agent lost for $lost_ms ms past its ${TIMEOUT_MS} ms timeout"
expect_status 1 "${P[@]}" # every interface

# A new agent ends the loss.
e2e_start_agent "$WORK/policy.yaml"
e2e_wait_state local normal
expect_status 0 "${P[@]}" --iface "$VETH_RX"
e2e_stop_agent
in_ns "$NS_RX" "$SLUICE" detach "${P[@]}" --iface "$VETH_RX"
expect_status 3 "${P[@]}" --iface "$VETH_RX"
echo "test_status: all checks passed"
