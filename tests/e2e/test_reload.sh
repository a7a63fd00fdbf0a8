#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Atomic reload under traffic. Two files swap which of two policies covers
# which port; a third policy is the same in both. While traffic flows to
# both ports, `sluice reload` swaps them hundreds of times. Every packet must
# be classified by exactly one policy (their passes add up to what was sent
# and received, and nothing is ever unmatched), and the unchanged policy's
# key must keep its state throughout. A bad file is rejected by `reload`
# and by the agent, and changes nothing.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_topology

RELOADS=${SLUICE_E2E_RELOADS:-300}
STEADY_BURST=5
SRC=10.200.0.10
FLOW_SRCS=10.200.0.20,10.200.0.21
FLOW_PPS=2000

write_policy() { # file port-of-a port-of-b
	cat >"$1" <<YAML
policies:
  - name: steady
    match: { proto: udp, dst_port: 7000 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/h # no token refills during the reloads, however long a busy machine makes them
    burst: $STEADY_BURST
  - name: flow-a
    match: { proto: udp, dst_port: $2 }
    rate: 10000000/s
    burst: 100000000
  - name: flow-b
    match: { proto: udp, dst_port: $3 }
    rate: 10000000/s
    burst: 100000000
YAML
}

write_policy "$WORK/a.yaml" 7001 7002
write_policy "$WORK/b.yaml" 7002 7001
cp "$WORK/a.yaml" "$WORK/live.yaml"
e2e_count_setup steady "ip saddr $SRC udp dport 7000" \
	flows "ip saddr { $FLOW_SRCS } udp dport { 7001, 7002 }"
e2e_start_agent "$WORK/live.yaml"

reload() {
	"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" "$@"
}

# The steady key spends its whole burst before the reloads.
e2e_flood --proto udp --dport 7000 --src "$SRC" --dst "$RX4" --count 20 --pps 1000 >/dev/null
e2e_equal "steady: burst admitted" "$(e2e_count steady)" "$STEADY_BURST"

# Traffic to both ports during the reload loop, stopped by us, or ended by
# the flood's own 120 s cap on a machine slow enough (300 reloads took over
# 120 s at a load average of 12): the counts below compare with what each
# generator says it sent, either way.
ns_spawn "$NS_TX" "$FLOOD" --iface "$VETH_TX" --dst-mac "$RX_MAC" --proto udp --sport 0 \
	--dport 7001 --src "$FLOW_SRCS" --dst "$RX4" --pps "$FLOW_PPS" --count 10000000 \
	--duration-ms 120000 >"$WORK/flow1.out"
flow1=$SPAWNED_PID
ns_spawn "$NS_TX" "$FLOOD" --iface "$VETH_TX" --dst-mac "$RX_MAC" --proto udp --sport 0 \
	--dport 7002 --src "$FLOW_SRCS" --dst "$RX4" --pps "$FLOW_PPS" --count 10000000 \
	--duration-ms 120000 >"$WORK/flow2.out"
flow2=$SPAWNED_PID

gen_before=$("$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json |
	grep -o '"generation":[0-9]*' | cut -d: -f2)
for i in $(seq 1 "$RELOADS"); do
	if ((i % 2)); then cp "$WORK/b.yaml" "$WORK/live.yaml"; else cp "$WORK/a.yaml" "$WORK/live.yaml"; fi
	reload >/dev/null || e2e_fail "reload $i failed"
done
kill -TERM "$flow1" "$flow2" 2>/dev/null || : # one may have ended on its cap
wait "$flow1" "$flow2" || e2e_fail "a flow generator failed"
sent=$(($(sed -n 's/.*sent=\([0-9]*\).*/\1/p' "$WORK/flow1.out") +
	$(sed -n 's/.*sent=\([0-9]*\).*/\1/p' "$WORK/flow2.out")))
echo "reloads: $RELOADS, flow packets sent: $sent"

status=$("$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json)
num() { grep -o "\"$1\":[0-9]*" <<<"$status" | awk -F: 'NR == 1 { print $2 }'; }
policy_num() { # policy field
	echo "$status" | grep -o "{\"name\":\"$1\"[^}]*}" | grep -o "\"$2\":[0-9]*" | cut -d: -f2
}
e2e_equal "generation advanced by every reload" "$(num generation)" $((gen_before + RELOADS))
e2e_equal "receiver got every flow packet" "$(e2e_count flows)" "$sent"
# Each flow packet can match only one of the two: fewer passes than packets
# would mean some went unclassified mid-reload, more that one was counted by both.
e2e_equal "flow-a + flow-b passed every flow packet exactly once" \
	$(($(policy_num flow-a passed_pkts) + $(policy_num flow-b passed_pkts))) "$sent"

# The unchanged policy kept its key: the source is still at its limit.
before=$(e2e_count steady)
e2e_flood --proto udp --dport 7000 --src "$SRC" --dst "$RX4" --count 20 --pps 1000 >/dev/null
e2e_equal "steady: still at its limit after $RELOADS reloads" $(($(e2e_count steady) - before)) 0

# A bad file: rejected before the agent is disturbed, and by the agent itself.
printf 'policies:\n  - name: broken\n    rate: 100/sek\n    burst: 1\n' >"$WORK/bad.yaml"
gen=$(num generation)
if reload --config "$WORK/bad.yaml" 2>"$WORK/err"; then e2e_fail "reload accepted a bad file"; fi
grep -q "bad.yaml:3:11: policies\[0\].rate" "$WORK/err" || e2e_fail "no file:line:col: $(cat "$WORK/err")"
grep -q "reload rejected; still enforcing generation $gen" "$WORK/err" ||
	e2e_fail "reload did not say what is still enforced: $(cat "$WORK/err")"
cp "$WORK/bad.yaml" "$WORK/live.yaml"
if reload 2>"$WORK/err"; then e2e_fail "the agent accepted a bad file"; fi
grep -q "reload rejected by agent" "$WORK/err" || e2e_fail "unexpected: $(cat "$WORK/err")"
status=$("$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json)
e2e_equal "a rejected reload changed no generation" "$(num generation)" "$gen"
# The agent logs the rejection as logfmt warning events: each error, then what it still enforces.
rejected='level=warn event=reload_rejected'
cause="'100/sek' is not a rate: unknown unit 'sek' (expected s, min, h or day, optionally with a count such as 15m)"
grep -E "^ts=[^ ]+ $rejected " "$AGENT_LOG" | cut -d' ' -f2- >"$WORK/rejected"
printf '%s\n' "$rejected file=$WORK/live.yaml line=3 col=11 field=policies[0].rate msg=\"$cause\"" \
	"$rejected file=$WORK/live.yaml generation=$gen msg=\"still enforcing generation $gen\"" \
	>"$WORK/rejected.want"
diff -u "$WORK/rejected.want" "$WORK/rejected" || e2e_fail "the agent's rejection events differ (above)"
# From its start on (before it, a refusal is a command's message) every line is an event.
if sed -n '/ event=start /,$p' "$AGENT_LOG" | grep -v '^ts='; then
	e2e_fail "the running agent logged the lines above outside logfmt"
fi
echo "ok: the rejection is logged as $(wc -l <"$WORK/rejected") logfmt warnings"
before=$(e2e_count steady)
e2e_flood --proto udp --dport 7000 --src "$SRC" --dst "$RX4" --count 20 --pps 1000 >/dev/null
e2e_equal "steady: still enforced after the rejected reload" $(($(e2e_count steady) - before)) 0
e2e_stop_agent

# A new agent on the same pins says the generation the maps say, not its own count.
cp "$WORK/a.yaml" "$WORK/live.yaml"
e2e_start_agent "$WORK/live.yaml"
reload >/dev/null || e2e_fail "a reload after the restart failed"
status=$("$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json)
e2e_equal "the restarted agent's logged generation is status's" \
	"$(sed -n 's/.*event=reload.*generation=\([0-9]*\).*/\1/p' "$AGENT_LOG" | tail -n 1)" \
	"$(num generation)"
e2e_stop_agent
echo "test_reload: all checks passed"
