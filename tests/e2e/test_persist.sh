#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Enforcement and key state outlive the agent: after SIGTERM the program
# keeps limiting (native: in libxdp's dispatcher, which libxdp pins),
# `sluice status` still reads the pinned maps, a new agent reuses them (a
# source at its limit stays at its limit), and only `sluice detach`, run
# where the interface is, removes the program and its pins. In tc mode
# the agent attaches a TC filter instead.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_topology

BURST=10 # at 1/min nothing refills during the test
SRC=10.200.0.10
SENT=30

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: slow
    match: { proto: udp, dst_port: 5353 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/min
    burst: $BURST
YAML
e2e_count_setup arrived "ip saddr $SRC udp dport 5353"

send() {
	e2e_flood --proto udp --dport 5353 --src "$SRC" --dst "$RX4" --count "$SENT" \
		--pps 1000 >/dev/null
}

arrived_since() { # previous count -> prints the increase
	echo $(($(e2e_count arrived) - $1))
}

link_show() { # prints $VETH_RX's `ip link show`: it names an XDP program attached
	in_ns "$NS_RX" ip link show "$VETH_RX"
}

tc_filters() { # prints $VETH_RX's ingress filters: sluice's in tc mode
	in_ns "$NS_RX" tc filter show dev "$VETH_RX" ingress
}

e2e_start_agent "$WORK/policy.yaml"
send
e2e_equal "first agent: burst admitted" "$(e2e_count arrived)" "$BURST"
# sluice top: the key is at its limit (a 1/min key drains for about a minute).
top=$("$SLUICE" top --pin-root "$PIN_ROOT" --iface "$VETH_RX")
echo "$top"
grep -Eq "^slow +$SRC/32 +100\.0% +[0-9.]+s$" <<<"$top" || e2e_fail "top does not show $SRC at 100 %"

e2e_stop_agent
grep -q 'event=exit.*enforcement=kept' "$AGENT_LOG" || e2e_fail "agent did not log its exit"
link=$(link_show)
grep -q xdp <<<"$link" || e2e_fail "XDP detached with the agent"
before=$(e2e_count arrived)
send
e2e_equal "no agent: still limited" "$(arrived_since "$before")" 0

status=$(e2e_status --iface "$VETH_RX") # the agent is gone, and may be taken for lost
echo "$status"
# Columns: POLICY MODE STATE... PASSED DROPPED KEYS (STATE may be two words).
counts=$(echo "$status" | awk '$1 == "slow" { print $(NF - 2), $(NF - 1) }')
e2e_equal "status without an agent: passed dropped" "$counts" "$BURST $((2 * SENT - BURST))"

e2e_start_agent "$WORK/policy.yaml"
grep -q 'key_state=kept' "$AGENT_LOG" || e2e_fail "second agent did not reuse the pinned maps"
before=$(e2e_count arrived)
send
e2e_equal "second agent: the source is still at its limit" "$(arrived_since "$before")" 0
e2e_stop_agent

in_ns "$NS_RX" "$SLUICE" detach --pin-root "$PIN_ROOT" --iface "$VETH_RX"
link=$(link_show)
grep -q xdp <<<"$link" && e2e_fail "XDP still attached after detach"
[ -e "$PIN_ROOT/$VETH_RX" ] && e2e_fail "pins left in $PIN_ROOT/$VETH_RX after detach"
before=$(e2e_count arrived)
send
e2e_equal "after detach: everything arrives" "$(arrived_since "$before")" "$SENT"

# --detach-on-exit: the agent removes what it attached.
e2e_start_agent "$WORK/policy.yaml" --detach-on-exit
e2e_stop_agent
[ -e "$PIN_ROOT/$VETH_RX" ] && e2e_fail "pins left after --detach-on-exit"
link=$(link_show)
grep -q xdp <<<"$link" && e2e_fail "XDP left after --detach-on-exit"
# --mode tc attaches a filter on clsact ingress, and still enforces; the
# agent's exit with --detach-on-exit removes the filter.
e2e_start_agent "$WORK/policy.yaml" --detach-on-exit --mode tc
grep -q 'event=start.* mode=tc' "$AGENT_LOG" || e2e_fail "start-up log does not say mode=tc"
grep -q 'bpf' <<<"$(tc_filters)" || e2e_fail "no TC filter on $VETH_RX in tc mode"
grep -q xdp <<<"$(link_show)" && e2e_fail "XDP attached in tc mode"
before=$(e2e_count arrived)
send
e2e_equal "tc mode: a fresh key admits its burst" "$(arrived_since "$before")" "$BURST"
e2e_stop_agent
grep -q 'bpf' <<<"$(tc_filters)" && e2e_fail "TC filter left after --detach-on-exit"
echo "test_persist: all checks passed"
