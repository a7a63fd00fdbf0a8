#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Real traffic through a veth pair into sluice attached in native mode:
# per-source and per-prefix limits for IPv4 and IPv6, UDP and TCP SYN. What
# reaches the receiving stack (nftables counters behind XDP) must match
# burst + rate·t: at most that plus one packet, at least 90 % of it, where t
# is the sender's own measured duration. sluice's counters must agree
# exactly with the receiver and the sender.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
e2e_topology

RATE=200 # packets per second per key
BURST=50
SYN_RATE=100
SYN_BURST=20
PER_SOURCE_PPS=1000 # offered per source: 5× and 10× the limits
FLOOD_SECONDS=2

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: udp-per-source
    match: { proto: udp, dst_port: 5353 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
  - name: udp-per-prefix
    match: { proto: udp, dst_port: 5354 }
    key: { ipv4_prefix: 24, ipv6_prefix: 64 }
    rate: $RATE/s
    burst: $BURST
  - name: syn-per-source
    match: { proto: tcp, dst_port: 8080, tcp_syn: true }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $SYN_RATE/s
    burst: $SYN_BURST
YAML

V4_SRCS=(10.200.0.10 10.200.0.11 10.200.0.12 10.200.0.13)
V6_SRCS=(fd00:200::10 fd00:200::11)
P4_SAME=(10.200.1.10 10.200.1.11 10.200.1.12 10.200.1.13) # one /24: one key
P4_OTHER=10.200.2.10
P6_SAME=(fd00:201::10 fd00:201::1:0:0:11)                 # one /64, one key
SYN_SRCS4=(10.200.3.10 10.200.3.11)
SYN_SRCS6=(fd00:203::10)

name_of() { local s=${1//./_}; echo "c_${s//:/_}"; }

counters=()
for s in "${V4_SRCS[@]}"; do counters+=("$(name_of "$s")" "ip saddr $s udp dport 5353"); done
for s in "${V6_SRCS[@]}"; do counters+=("$(name_of "$s")" "ip6 saddr $s udp dport 5353"); done
counters+=(p4_same "ip saddr 10.200.1.0/24 udp dport 5354")
counters+=(p4_other "ip saddr $P4_OTHER udp dport 5354")
counters+=(p6_same "ip6 saddr fd00:201::/64 udp dport 5354")
for s in "${SYN_SRCS4[@]}"; do
	counters+=("$(name_of "$s")" "ip saddr $s tcp dport 8080 tcp flags & (syn | ack) == syn")
done
for s in "${SYN_SRCS6[@]}"; do
	counters+=("$(name_of "$s")" "ip6 saddr $s tcp dport 8080 tcp flags & (syn | ack) == syn")
done
e2e_count_setup "${counters[@]}"

e2e_start_agent "$WORK/policy.yaml"

SENT_TOTAL=0
# flood LABEL PROTO DPORT DST SRC... : every source at PER_SOURCE_PPS; sets FLOOD_MS.
flood() {
	local label=$1 proto=$2 dport=$3 dst=$4 n sent ms srcs
	shift 4
	n=$#
	srcs=$(IFS=,; echo "$*")
	read -r sent ms < <(e2e_flood --proto "$proto" --dport "$dport" --src "$srcs" \
		--dst "$dst" --pps $((PER_SOURCE_PPS * n)) \
		--count $((PER_SOURCE_PPS * n * FLOOD_SECONDS)))
	e2e_equal "$label: frames sent" "$sent" $((PER_SOURCE_PPS * n * FLOOD_SECONDS))
	FLOOD_MS=$ms
	SENT_TOTAL=$((SENT_TOTAL + sent))
}

# At most burst + rate·(t + 2 ticks) (e2e_bound); at least 90 % of it.
check_key() {
	local label=$1 got=$2 burst=$3 rate=$4
	local hi
	hi=$(e2e_bound "$burst" "$rate" "$FLOOD_MS")
	e2e_within "$label: admitted over ${FLOOD_MS} ms" "$got" $((hi * 9 / 10)) "$hi"
}

flood "ipv4 per source" udp 5353 "$RX4" "${V4_SRCS[@]}"
for s in "${V4_SRCS[@]}"; do
	check_key "ipv4 $s" "$(e2e_count "$(name_of "$s")")" $BURST $RATE
done

flood "ipv6 per source" udp 5353 "$RX6" "${V6_SRCS[@]}"
for s in "${V6_SRCS[@]}"; do
	check_key "ipv6 $s" "$(e2e_count "$(name_of "$s")")" $BURST $RATE
done

# Four sources of one /24 share one key; a source of another /24 has its own.
flood "ipv4 per prefix" udp 5354 "$RX4" "${P4_SAME[@]}" "$P4_OTHER"
check_key "ipv4 one /24, 4 sources" "$(e2e_count p4_same)" $BURST $RATE
check_key "ipv4 other /24" "$(e2e_count p4_other)" $BURST $RATE

flood "ipv6 per prefix" udp 5354 "$RX6" "${P6_SAME[@]}"
check_key "ipv6 one /64, 2 sources" "$(e2e_count p6_same)" $BURST $RATE

flood "ipv4 syn" tcp-syn 8080 "$RX4" "${SYN_SRCS4[@]}"
for s in "${SYN_SRCS4[@]}"; do
	check_key "ipv4 syn $s" "$(e2e_count "$(name_of "$s")")" $SYN_BURST $SYN_RATE
done
flood "ipv6 syn" tcp-syn 8080 "$RX6" "${SYN_SRCS6[@]}"
for s in "${SYN_SRCS6[@]}"; do
	check_key "ipv6 syn $s" "$(e2e_count "$(name_of "$s")")" $SYN_BURST $SYN_RATE
done

# sluice's own counters: every frame sent was decided, and what it passed
# is exactly what the receiving stack counted.
status=$("$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json)
echo "$status"
counted=0
for c in "${counters[@]}"; do
	case $c in
	c_* | p4_* | p6_*) counted=$((counted + $(e2e_count "$c"))) ;;
	esac
done
policies=${status%%\"totals\"*} # the per-policy part of the JSON
policy_passed=$(echo "$policies" | grep -o '"passed_pkts":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
policy_dropped=$(echo "$policies" | grep -o '"dropped_pkts":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
e2e_equal "sluice passed = receiver counted" "$policy_passed" "$counted"
e2e_equal "sluice passed + dropped = sent" $((policy_passed + policy_dropped)) "$SENT_TOTAL"
e2e_stop_agent
echo "test_rate: all checks passed"
