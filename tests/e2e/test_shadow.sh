#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Shadow mode on real traffic. A shadow policy drops nothing: everything a
# flood sends reaches the receiver, and sluice counts passed + would_drop ==
# sent, with would_drop what the limit would have dropped (sent minus
# burst + rate·t, within the tolerance of test_rate.sh). Switching the same
# policy to enforce with `sluice reload` keeps its keys' state: a source
# that has just spent its bucket in shadow mode is limited from its first
# packets (at most the refill since its last packet), while a fresh source
# gets its full burst. Layered, a shadow per-/24 policy behind an enforcing
# per-source one only counts: the per-source limit decides what arrives.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
e2e_topology

# The burst is two seconds of the rate, so that a key kept across the
# reload (empty, refilling at RATE for the fraction of a second the reload
# takes) and a key reset by it (a full BURST) differ by far more than the
# tolerance.
RATE=50
BURST=100
PPS=1000 # per source: 20× the rate
TRIAL_PORT=9000
LAYER_PORT=9001
LAYER_SRC_RATE=200 # the enforcing per-source layer
LAYER_SRC_BURST=50
LAYER_NET_RATE=100 # the shadow per-/24 layer
LAYER_NET_BURST=20

SRC=10.200.0.10   # floods in shadow mode, then again right after the switch
FRESH=10.200.0.11 # first seen after the switch
NET_A=10.200.5.10 # one /24, two sources, for the layered pair
NET_B=10.200.5.11

write_policy() { # file mode-of-trial
	cat >"$1" <<YAML
policies:
  - name: trial
    match: { proto: udp, dst_port: $TRIAL_PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
    mode: $2
  - name: src-enforce
    match: { proto: udp, dst_port: $LAYER_PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $LAYER_SRC_RATE/s
    burst: $LAYER_SRC_BURST
  - name: net-shadow
    match: { proto: udp, dst_port: $LAYER_PORT }
    key: { ipv4_prefix: 24, ipv6_prefix: 64 }
    rate: $LAYER_NET_RATE/s
    burst: $LAYER_NET_BURST
    mode: shadow
YAML
}

write_policy "$WORK/live.yaml" shadow
e2e_count_setup src "ip saddr $SRC udp dport $TRIAL_PORT" \
	fresh "ip saddr $FRESH udp dport $TRIAL_PORT" \
	net_a "ip saddr $NET_A udp dport $LAYER_PORT" \
	net_b "ip saddr $NET_B udp dport $LAYER_PORT"
e2e_start_agent "$WORK/live.yaml"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

status_json() {
	STATUS=$("$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json)
}

policy_field() { # policy field: a number or a string of the last status_json
	echo "$STATUS" | grep -o "{\"name\":\"$1\"[^}]*}" | grep -o "\"$2\":[^,}]*" |
		cut -d: -f2 | tr -d '"'
}

# At most burst + rate·t + 1 (the +1: rounding t to ms); at least 90 % of it.
bounds() { # burst rate ms: sets HI and LO
	HI=$(($1 + $2 * $3 / 1000 + 1))
	LO=$((HI * 9 / 10))
}

# ---- shadow: everything arrives, would-drops are counted ------------------

t_start=$(now_ms)
read -r sent ms < <(e2e_flood --proto udp --dport "$TRIAL_PORT" --src "$SRC" --dst "$RX4" \
	--pps "$PPS" --count "$PPS")
e2e_equal "shadow: frames sent" "$sent" "$PPS"
# The flood paces packet i at start + i/PPS, so its last packet left no
# earlier than this.
last_ms=$((t_start + (sent - 1) * 1000 / PPS))
e2e_equal "shadow: the receiver got every frame" "$(e2e_count src)" "$sent"
status_json
e2e_equal "shadow: trial is in shadow mode" "$(policy_field trial mode)" shadow
trial_id=$(policy_field trial id)
passed=$(policy_field trial passed_pkts)
would_drop=$(policy_field trial would_drop_pkts)
e2e_equal "shadow: dropped nothing" "$(policy_field trial dropped_pkts)" 0
e2e_equal "shadow: passed + would_drop = sent" $((passed + would_drop)) "$sent"
bounds "$BURST" "$RATE" "$ms"
e2e_within "shadow: within the limit over $ms ms" "$passed" "$LO" "$HI"
e2e_within "shadow: would_drop = sent - (burst + rate·t)" "$would_drop" \
	$((sent - HI)) $((sent - LO))

# ---- switch to enforce: the kept key is limited at once, a fresh one is not

write_policy "$WORK/live.yaml" enforce
"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" >/dev/null
read -r sent ms < <(e2e_flood --proto udp --dport "$TRIAL_PORT" --src "$SRC,$FRESH" \
	--dst "$RX4" --pps $((2 * PPS)) --count $((2 * PPS * 3 / 10)))
t_end=$(now_ms)
e2e_equal "enforce: frames sent" "$sent" $((2 * PPS * 3 / 10))
status_json
e2e_equal "enforce: trial is enforcing" "$(policy_field trial mode)" enforce
e2e_equal "enforce: trial kept its id, so its keys" "$(policy_field trial id)" "$trial_id"
# The kept key left the shadow flood empty (at most one packet's credit), and
# has refilled at RATE since its last packet: for at most window_ms.
window_ms=$((t_end - last_ms))
kept=$(($(e2e_count src) - PPS))
e2e_within "enforce: kept key, $window_ms ms since its last packet" "$kept" \
	$(((RATE * ms / 1000) * 9 / 10 - 1)) $((2 + RATE * window_ms / 1000))
bounds "$BURST" "$RATE" "$ms"
e2e_within "enforce: fresh key, full burst over $ms ms" "$(e2e_count fresh)" "$LO" "$HI"
e2e_equal "enforce: sluice passed = receiver counted (both floods)" \
	$(($(policy_field trial passed_pkts) - passed)) $((kept + $(e2e_count fresh)))
e2e_equal "enforce: passed + dropped = sent" \
	$(($(policy_field trial passed_pkts) - passed + $(policy_field trial dropped_pkts))) "$sent"

# ---- layered: a shadow per-/24 behind an enforcing per-source -------------

read -r sent ms < <(e2e_flood --proto udp --dport "$LAYER_PORT" --src "$NET_A,$NET_B" \
	--dst "$RX4" --pps $((2 * PPS)) --count $((2 * PPS)))
e2e_equal "layered: frames sent" "$sent" $((2 * PPS))
bounds "$LAYER_SRC_BURST" "$LAYER_SRC_RATE" "$ms"
e2e_within "layered: $NET_A held to the per-source limit" "$(e2e_count net_a)" "$LO" "$HI"
e2e_within "layered: $NET_B held to the per-source limit" "$(e2e_count net_b)" "$LO" "$HI"
arrived=$(($(e2e_count net_a) + $(e2e_count net_b)))
status_json
e2e_equal "layered: src-enforce passed = receiver counted" \
	"$(policy_field src-enforce passed_pkts)" "$arrived"
e2e_equal "layered: src-enforce passed + dropped = sent" \
	$(($(policy_field src-enforce passed_pkts) + $(policy_field src-enforce dropped_pkts))) \
	"$sent"
# The shadow layer sees only what the per-source layer admitted, drops none
# of it, and would have held the /24 to its own, tighter limit.
e2e_equal "layered: net-shadow dropped nothing" "$(policy_field net-shadow dropped_pkts)" 0
net_passed=$(policy_field net-shadow passed_pkts)
e2e_equal "layered: net-shadow passed + would_drop = what arrived" \
	$((net_passed + $(policy_field net-shadow would_drop_pkts))) "$arrived"
bounds "$LAYER_NET_BURST" "$LAYER_NET_RATE" "$ms"
e2e_within "layered: net-shadow within its limit over $ms ms" "$net_passed" "$LO" "$HI"
e2e_stop_agent
echo "test_shadow: all checks passed"
