#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Escalation on a veth, with a bounded flood (docs/policy.md, "Escalation"):
#   - an abuser flooding at FLOOD_PPS against 100/s is banned on list
#     "repeat-offenders" within W + 1 s of the flood's start, measured:
#     `sluice bans` shows its /32 with the list as its reason, the state
#     file holds it, and the agent logs `escalate` (policy, key, list) and
#     the ban list's event;
#   - a polite source beside it, at POLITE_PPS (under its limit), sending
#     all along and for W + 1 s after, is never banned;
#   - after the ban, the abuser's packets are dropped with reason ban
#     (sampled 1/1: one event each), and cost the policy nothing.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_topology

PORT=9000
ABUSER=10.200.1.7
POLITE=10.200.1.8
W_S=2 # escalate.within
AFTER=1000
LIST=repeat-offenders
FLOOD_PPS=2000
FLOOD_MS=4000 # the abuser's flood, and the polite source's traffic beside it
POLITE_PPS=20 # a fifth of the rate: never denied
BAN_N=20
STATE=$WORK/state

cat >"$WORK/policy.yaml" <<YAML
events: { sample: 1/1 }
policies:
  - name: per-source
    match: { proto: udp, dst_port: $PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 100/s
    burst: 20
    escalate: { after: $AFTER, within: ${W_S}s, ban: 1h, list: $LIST }
YAML

e2e_start_agent "$WORK/policy.yaml"
prefixes() { "$SLUICE" bans --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json | jq -r '.bans[].prefix'; }
flood() { # NAME SRC PPS: in the background, FLOOD_MS long; sets FLOOD_PID
	ns_spawn "$NS_TX" "$FLOOD" --iface "$VETH_TX" --dst-mac "$RX_MAC" --proto udp \
		--dport "$PORT" --src "$2" --dst "$RX4" --pps "$3" --count $(($3 * FLOOD_MS / 1000)) \
		>"$WORK/$1.out"
	FLOOD_PID=$SPAWNED_PID
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- the flood: the abuser is banned within W + 1 s, the polite source not -------------
flood polite "$POLITE" "$POLITE_PPS"
POLITE_PID=$FLOOD_PID
start=$(now_ms)
flood abuser "$ABUSER" "$FLOOD_PPS"
ABUSER_PID=$FLOOD_PID
bound_ms=$(((W_S + 1) * 1000))
until prefixes | grep -qx "$ABUSER/32"; do
	(($(now_ms) - start <= bound_ms)) || e2e_fail "$ABUSER not banned within $bound_ms ms"
	sleep 0.05
done
e2e_within "ms from the flood's start to the ban" $(($(now_ms) - start)) 0 "$bound_ms"
wait "$ABUSER_PID" || e2e_fail "the abuser's flood: exit status $?"
wait "$POLITE_PID" || e2e_fail "the polite source: exit status $?"
sleep $((W_S + 1)) # a window and a look more: the polite source would be banned by now
e2e_equal "banned prefixes" "$(prefixes | tr '\n' ' ')" "$ABUSER/32 "
e2e_equal "the ban's reason" \
	"$("$SLUICE" bans --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json | jq -r '.bans[0].reason')" \
	"$LIST"
expires_ms=$("$SLUICE" bans --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json |
	jq -r '.bans[0].expires_in_ms')
e2e_within "the ban's time left (1h, less the test's seconds)" "$expires_ms" 3500000 3600000
grep -q "^$LIST $ABUSER/32 " "$STATE/bans/$VETH_RX" ||
	e2e_fail "the state file does not hold $ABUSER in $LIST: $(cat "$STATE/bans/$VETH_RX")"
e2e_equal "escalate events" "$(grep -c 'event=escalate ' "$AGENT_LOG")" 1
grep -q "event=escalate iface=$VETH_RX policy=per-source key=$ABUSER/32 list=$LIST denials=" \
	"$AGENT_LOG" || e2e_fail "no escalate event for $ABUSER: $(grep escalate "$AGENT_LOG")"
grep -q "event=ban_list iface=$VETH_RX list=$LIST entries=1 added=1 removed=0" "$AGENT_LOG" ||
	e2e_fail "no ban event for $LIST: $(grep ban_ "$AGENT_LOG")"
grep "event=escalate " "$AGENT_LOG"

# ---- after the ban: dropped with reason ban, before the policy -------------------------
dropped() {
	"$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json |
		jq -r '.policies[] | select(.name == "per-source") | .dropped_pkts'
}
before=$(dropped)
ns_spawn "$NS_RX" "$SLUICE" events --pin-root "$PIN_ROOT" --iface "$VETH_RX" --for 2s \
	>"$WORK/ban.json"
EVENTS_PID=$SPAWNED_PID
sleep 0.3 # the reader opens the ring
e2e_flood --src "$ABUSER" --dst "$RX4" --dport "$PORT" --count "$BAN_N" >/dev/null
wait "$EVENTS_PID" || e2e_fail "sluice events: exit status $?"
e2e_equal "ban events of the abuser's $BAN_N packets" \
	"$(jq -r 'select(.kind == "event") | "\(.reason) \(.src)"' "$WORK/ban.json" | sort | uniq -c |
		awk '{ print $1, $2, $3 }')" "$BAN_N ban $ABUSER"
e2e_equal "the policy's drops meanwhile" $(($(dropped) - before)) 0
echo "ok: escalation"
