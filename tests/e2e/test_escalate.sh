#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Escalation on a veth, with a bounded flood (docs/policy.md, "Escalation"):
#   - an abuser flooding at FLOOD_PPS against 100/s is banned on list
#     "repeat-offenders" within W + 1 s of the flood's start (#30's bound),
#     and not before it can have been denied AFTER times; the time is the
#     ban's own (its expiry in the state file, less its 1 h), printed;
#   - `sluice bans` shows its /32 with the list as its reason, the state
#     file holds it, and the agent logs one `escalate` event (time, policy,
#     key, list, denials) and the ban list's `ban_list` event;
#   - a polite source beside it in the same policy, at POLITE_PPS (half
#     its limit), is never banned, and every one of its packets arrives;
#   - after the ban, the abuser's packets take the ban path: the `banned`
#     total counts each of them, the ban's own counter the first at least
#     and never more than the total (a cached ban's drops reach it at the
#     flow's next look, docs/bans.md), the policy counts none, none
#     arrives, and each is a drop event of reason ban (sampled 1/1).
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
e2e_topology

PORT=9000
ABUSER=10.200.1.7
POLITE=10.200.1.8
RATE=100
BURST=20
W_S=2 # escalate.within
AFTER=1000
BAN_S=3600 # escalate.ban
LIST=repeat-offenders
FLOOD_PPS=2000
FLOOD_MS=4000  # the abuser's flood, and the polite source's traffic beside it
POLITE_PPS=50  # half the rate: never denied, while it sends on time (below)
START_MS=300   # the floods start together, this long after they are spawned
LOOK_SLACK=1.2 # packets: RATE × 3 ticks of the coarse clock (escalate.c's clock_slack())
BAN_N=20
STATE=$WORK/state

cat >"$WORK/policy.yaml" <<YAML
events: { sample: 1/1 }
policies:
  - name: per-source
    match: { proto: udp, dst_port: $PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
    escalate: { after: $AFTER, within: ${W_S}s, ban: ${BAN_S}s, list: $LIST }
YAML

e2e_count_setup abuser "ip saddr $ABUSER udp dport $PORT" polite "ip saddr $POLITE udp dport $PORT"
e2e_start_agent "$WORK/policy.yaml"
bans_json() { in_ns "$NS_RX" "$SLUICE" bans --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json; }
prefixes() { bans_json | jq -r '.bans[].prefix'; }
status_json() { "$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json; }
# flood NAME SRC PPS: FLOOD_MS of it from $START_NS, in the background; sets FLOOD_PID.
flood() {
	ns_spawn "$NS_TX" "$FLOOD" --iface "$VETH_TX" --dst-mac "$RX_MAC" --proto udp \
		--dport "$PORT" --src "$2" --dst "$RX4" --pps "$3" --count $(($3 * FLOOD_MS / 1000)) \
		--start-at-ns "$START_NS" >"$WORK/$1.out"
	FLOOD_PID=$SPAWNED_PID
}
flood_field() { sed -n "s/.*$2=\([0-9]*\).*/\1/p" "$WORK/$1.out"; } # NAME FIELD
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- the flood: the abuser is banned within W + 1 s, the polite source not -------------
# Both clocks at once: the floods start on CLOCK_MONOTONIC, a ban's expiry is CLOCK_REALTIME.
read -r mono real < <(python3 -c 'import time; print(time.monotonic_ns(), time.time_ns())')
START_NS=$((mono + START_MS * 1000000))
start_real_ns=$((real + START_MS * 1000000))
flood polite "$POLITE" "$POLITE_PPS"
POLITE_PID=$FLOOD_PID
flood abuser "$ABUSER" "$FLOOD_PPS"
ABUSER_PID=$FLOOD_PID
bound_ms=$(((W_S + 1) * 1000))
deadline=$(($(now_ms) + START_MS + bound_ms + 1000)) # the loop's own time: the ban says when
until prefixes | grep -qx "$ABUSER/32"; do
	(($(now_ms) <= deadline)) || e2e_fail "$ABUSER not banned $((bound_ms + 1000)) ms after the flood"
	sleep 0.2 # at SCHED_FIFO as the agent: poll gently
done
wait "$ABUSER_PID" || e2e_fail "the abuser's flood: exit status $?"
wait "$POLITE_PID" || e2e_fail "the polite source: exit status $?"
echo "abuser: $(cat "$WORK/abuser.out"); polite: $(cat "$WORK/polite.out")"
e2e_equal "the abuser's packets sent" "$(flood_field abuser sent)" $((FLOOD_PPS * FLOOD_MS / 1000))
e2e_equal "the polite source's packets sent" "$(flood_field polite sent)" \
	$((POLITE_PPS * FLOOD_MS / 1000))
# A sender held off the CPU catches up at once: late by BURST packets' time, it
# would send more than its burst together, and be denied for the harness's fault.
e2e_within "the polite sender's lateness (ms)" "$(flood_field polite late_max_ms)" 0 \
	$((BURST * 1000 / POLITE_PPS - 1))
sleep 0.6 # the ban writer's state file (BANAPI_FLUSH_NS, 0.5 s), and the ban list's look

# When the ban was made: its expiry, less BAN_S. The flood began start_late_ms late.
expiry_ns=$(awk -v l="$LIST" -v p="$ABUSER/32" '$1 == l && $2 == p { print $3 }' "$STATE/bans/$VETH_RX")
[ -n "$expiry_ns" ] || e2e_fail "the state file does not hold $ABUSER in $LIST: $(cat "$STATE/bans/$VETH_RX")"
late_ms=$(flood_field abuser start_late_ms)
ban_ms=$(((expiry_ns - BAN_S * 1000000000 - start_real_ns) / 1000000 - late_ms))
# The earliest: AFTER denials need AFTER + BURST packets sent at FLOOD_PPS, the limit
# admitting RATE meanwhile, less the clock's slack and the flood's first packet at 0.
min_ms=$(python3 -c "print(int(($AFTER + $BURST - 1 - $LOOK_SLACK) * 1000 / ($FLOOD_PPS - $RATE)))")
e2e_within "ms from the flood's start to the ban" "$ban_ms" "$min_ms" "$bound_ms"

e2e_equal "banned prefixes" "$(prefixes | tr '\n' ' ')" "$ABUSER/32 "
e2e_equal "the ban's reason" "$(bans_json | jq -r '.bans[0].reason')" "$LIST"
left_ms=$(bans_json | jq -r '.bans[0].expires_in_ms')
e2e_within "the ban's time left" "$left_ms" \
	$((BAN_S * 1000 - ($(now_ms) - start_real_ns / 1000000))) $((BAN_S * 1000))
e2e_equal "the polite source's packets delivered" "$(e2e_count polite)" \
	$((POLITE_PPS * FLOOD_MS / 1000))

e2e_equal "escalate events" "$(grep -c 'event=escalate ' "$AGENT_LOG")" 1
line=$(grep 'event=escalate ' "$AGENT_LOG")
echo "$line"
want="^ts=[-0-9T:.]*Z level=info event=escalate iface=$VETH_RX policy=per-source key=$ABUSER/32"
want+=" list=$LIST denials=[0-9]* within=${W_S}s ban=1h$"
grep -qx "$want" <<<"$line" || e2e_fail "the escalate event: expected $want"
denials=$(sed -n 's/.* denials=\([0-9]*\) .*/\1/p' <<<"$line")
# No fewer than AFTER, and no more than the abuser sent before the ban (a late
# sender catches up, never runs ahead): the polite source was never denied.
e2e_within "the denials that made the ban" "$denials" "$AFTER" $((FLOOD_PPS * (ban_ms + 1) / 1000 + 1))
grep -q "event=ban_list iface=$VETH_RX list=$LIST entries=1 added=1 removed=0" "$AGENT_LOG" ||
	e2e_fail "no ban_list event for $LIST: $(grep ban_ "$AGENT_LOG")"
grep -q 'event=escalate_failed' "$AGENT_LOG" && e2e_fail "$(grep escalate_failed "$AGENT_LOG")"

# ---- after the ban: the ban path, before the policy ---------------------------------------
# Read what the flood's drops left in the ring first: it holds about 1300 events.
"$SLUICE" events --pin-root "$PIN_ROOT" --iface "$VETH_RX" --for 500ms >/dev/null
policy_pkts() { status_json | jq -r '.policies[] | select(.name == "per-source") | .passed_pkts + .dropped_pkts'; }
ban_drops() { bans_json | jq -r --arg p "$ABUSER/32" '.bans[] | select(.prefix == $p) | .drops_pkts'; }
banned_total() { status_json | jq -r .totals.banned_pkts; }
policy_before=$(policy_pkts)
ban_before=$(ban_drops)
total_before=$(banned_total)
arrived_before=$(e2e_count abuser)
ns_spawn "$NS_RX" "$SLUICE" events --pin-root "$PIN_ROOT" --iface "$VETH_RX" --for 2s \
	>"$WORK/ban.json"
EVENTS_PID=$SPAWNED_PID
sleep 0.3 # the reader opens the ring
e2e_flood --src "$ABUSER" --dst "$RX4" --dport "$PORT" --count "$BAN_N" >/dev/null
wait "$EVENTS_PID" || e2e_fail "sluice events: exit status $?"
e2e_equal "drop events of the abuser's $BAN_N packets (reason, source, policy)" \
	"$(jq -r 'select(.kind == "event") | "\(.reason) \(.src) \(.policy)"' "$WORK/ban.json" |
		sort | uniq -c | awk '{ print $1, $2, $3, $4 }')" "$BAN_N ban $ABUSER null"
# The only ban: its count takes what the caches held from the flood, never more than the total.
e2e_within "the ban's own drop counter" "$(ban_drops)" $((ban_before + 1)) "$(banned_total)"
e2e_equal "the banned total" $(($(banned_total) - total_before)) "$BAN_N"
e2e_equal "the policy's packets meanwhile" $(($(policy_pkts) - policy_before)) 0
e2e_equal "the abuser's packets delivered meanwhile" $(($(e2e_count abuser) - arrived_before)) 0
echo "ok: escalation"
