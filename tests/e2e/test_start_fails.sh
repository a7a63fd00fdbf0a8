#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A start that fails says why in one line, exits 1, and nothing else
# (#12, item 10: "a failed load ends with a stray 'Bad file descriptor'
# heartbeat warning"). An interface whose load failed was once counted, so
# the exit's last heartbeat wrote to its unopened maps: "cannot write the
# heartbeat of 'IFACE': Bad file descriptor". Each row fails at another
# step: before the load (another agent's lock), in it (a map the kernel
# cannot create), after it (the attach, the metrics port), and its whole
# output must be the one line that names the cause.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_topology

HUGE_KEYS=4294967295 # no kernel creates an LRU hash of 2^32 - 1 entries
METRICS_PORT=9190

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: slow
    match: { proto: udp, dst_port: 5353 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/min
    burst: 10
YAML

# start_fails LABEL WANT ARGS...: `sluice run` with ARGS must exit 1 and
# print exactly WANT (stdout and stderr together).
start_fails() {
	local label=$1 want=$2 out rc=0
	shift 2
	out=$(in_ns "$NS_RX" timeout 20 "$SLUICE" run --config "$WORK/policy.yaml" \
		--iface "$VETH_RX" --mode native "$@" 2>&1) || rc=$?
	e2e_equal "$label: exit status" "$rc" 1
	[ "$out" = "$want" ] || e2e_fail "$label: expected only '$want', got: $out"
	echo "ok: $label: $out"
}

# wait_listening PORT: return once something in $NS_RX listens on PORT.
wait_listening() {
	local deadline=$((SECONDS + 10))
	until [ -n "$(in_ns "$NS_RX" ss -Hltn "sport = :$1")" ]; do
		((SECONDS < deadline)) || e2e_fail "nothing listens on port $1 after 10 s"
		sleep 0.05
	done
}

start_fails "a map the kernel cannot create" \
	"sluice: cannot load the XDP program for '$VETH_RX': Argument list too long" \
	--pin-root "$PIN_ROOT/huge" --max-keys "$HUGE_KEYS"

ns_spawn "$NS_RX" socat -u "TCP-LISTEN:$METRICS_PORT,bind=127.0.0.1" /dev/null
holder=$SPAWNED_PID
wait_listening "$METRICS_PORT"
start_fails "the metrics port taken (after the attach)" \
	"sluice: cannot serve metrics on '127.0.0.1:$METRICS_PORT': Address already in use; choose another port, or stop what listens there" \
	--pin-root "$PIN_ROOT/port" --max-keys 65536 --metrics "127.0.0.1:$METRICS_PORT" \
	--detach-on-exit
kill -TERM "$holder"
rc=0
wait "$holder" || rc=$?
e2e_equal "the port's holder ended by our SIGTERM" "$rc" $((128 + 15))

e2e_start_agent "$WORK/policy.yaml"
first=$AGENT_PID
start_fails "the interface served by another agent" \
	"sluice: '$VETH_RX' is served by another agent (pid $first; pins in '$PIN_ROOT/$VETH_RX'): one agent per interface; stop it first, or change its policy with 'sluice reload'" \
	--pin-root "$PIN_ROOT" --max-keys 65536
start_fails "another program attached" \
	"sluice: cannot attach the XDP program to '$VETH_RX': another XDP program is attached (ip link show dev $VETH_RX); add --xdp-share to run beside it in libxdp's dispatcher, or use --mode tc" \
	--pin-root "$PIN_ROOT/other" --max-keys 65536
kill -0 "$first" 2>/dev/null || e2e_fail "the first agent died"
e2e_stop_agent

# The lock held by another process after an agent was killed (its pid is
# still in the pins): the refusal names the holder, not the dead agent.
e2e_start_agent "$WORK/policy.yaml"
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" || true
ns_spawn "$NS_RX" flock "$PIN_ROOT/$VETH_RX" sleep 60
holder=$SPAWNED_PID
for ((i = 0; i < 200; i++)); do # 10 s
	grep -q " FLOCK .* $holder " /proc/locks && break
	sleep 0.05
done
start_fails "the interface locked after its agent exited" \
	"sluice: '$VETH_RX' is served by another agent (pid $holder; pins in '$PIN_ROOT/$VETH_RX'): one agent per interface; stop it first, or change its policy with 'sluice reload'" \
	--pin-root "$PIN_ROOT" --max-keys 65536
kill -TERM "$holder"
wait "$holder" || true
echo "test_start_fails: all checks passed"
