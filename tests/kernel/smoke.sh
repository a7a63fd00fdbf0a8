#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Attach and enforce, on whatever kernel this runs on: the kernel matrix
# (tests/kernel/matrix.sh) runs it inside each VM, and on the running kernel.
# The agent attaches in native mode to a veth between two namespaces; one
# IPv4 and one IPv6 source flood a UDP port at 4× the limit; a sink behind
# XDP counts what arrived. Each key's arrivals must be at most
# burst + rate·(t + lag) (e2e_bound, t the sender's measured duration) and at
# least E2E_LOW_PCT of it, and sluice's passed + dropped must be every frame
# sent. Prints one "smoke: ..." line per family for the matrix's report.
#
# Where the kernel has 802.1Q (Debian's 8021q module; the matrix loads it),
# VLAN-tagged frames too: one 802.1Q tag, and two (802.1ad outside, 802.1Q
# inside), each from its own source, sent by the sender's own VLAN devices
# over the veth with the tags in the frame (tx-vlan offload off, so XDP
# reads them as it would from a NIC that leaves them in) and received on the
# receiver's VLAN devices. A policy of burst $VLAN_BURST per hour: exactly
# the burst must arrive at each VLAN device (nftables counts), and sluice's
# counters must say the same. Prints "smoke: vlan ..." lines; where 8021q
# is missing, one "smoke: vlan skipped: ..." line.
source "$(dirname "$0")/../e2e/lib.sh"
e2e_require
e2e_topology

SINK=${SINK:-$ROOT/build/sluice-sink}
RATE=100 # packets per second per key
BURST=20
PPS=400
SECONDS_SENT=2
PORT=5353
SINK_MS=60000 # the sink's own stop, should the test not stop it
VLAN_PORT=5454
VLAN_BURST=5
VLAN_SENT=50
VLAN_ID=100    # the one-tag pair's 802.1Q id
VLAN_OUTER=200 # the two-tag pair's 802.1ad id
VLAN_INNER=300 # and its inner 802.1Q id
VLAN_WAIT_S=20 # for sluice to decide every frame: TCG on a busy machine

# vlan_topology: on each side of the veth, ${veth}q (802.1Q $VLAN_ID, in
# 10.201.0.0/24) and ${veth}qq (802.1Q $VLAN_INNER on ${veth}s, 802.1ad
# $VLAN_OUTER; in 10.202.0.0/24); fails when the kernel has no 802.1Q.
vlan_topology() {
	local ns dev host d
	for host in 1 2; do
		ns=$NS_TX dev=$VETH_TX
		[ $host = 1 ] || ns=$NS_RX dev=$VETH_RX
		in_ns "$ns" ip link add link "$dev" name "${dev}q" type vlan id $VLAN_ID 2>&1 || return 1
		in_ns "$ns" ip link add link "$dev" name "${dev}s" type vlan proto 802.1ad id $VLAN_OUTER
		in_ns "$ns" ip link add link "${dev}s" name "${dev}qq" type vlan id $VLAN_INNER
		in_ns "$ns" ip addr add "10.201.0.$host/24" dev "${dev}q"
		in_ns "$ns" ip addr add "10.202.0.$host/24" dev "${dev}qq"
		for d in q s qq; do in_ns "$ns" ip link set "$dev$d" up; done
	done
}

vlan=1
why=$(vlan_topology) || { vlan=0 && echo "smoke: vlan skipped: ${why:-no 802.1Q}"; }
# Tags in the frame, not in the skb's metadata, where XDP would not see them.
((vlan == 0)) || in_ns "$NS_TX" ethtool -K "$VETH_TX" txvlan off tx-vlan-stag-hw-insert off

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: smoke
    match: { proto: udp, dst_port: $PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
  - name: vlan
    match: { proto: udp, dst_port: $VLAN_PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/h
    burst: $VLAN_BURST
YAML

e2e_start_agent "$WORK/policy.yaml"
ns_spawn "$NS_RX" "$SINK" record --port $PORT --out "$WORK/rec" --duration-ms $SINK_MS \
	>"$WORK/sink.out"
SINK_PID=$SPAWNED_PID
deadline=$((SECONDS + 20))
until grep -q '^ready' "$WORK/sink.out"; do
	kill -0 "$SINK_PID" 2>/dev/null || e2e_fail "the sink exited"
	((SECONDS < deadline)) || e2e_fail "the sink was not ready within 20 s"
	sleep 0.05
done

sent_total=0
declare -A ms_of
for src in 10.200.0.10 fd00:200::10; do
	dst=$RX4
	[[ $src == *:* ]] && dst=$RX6
	read -r sent ms < <(e2e_flood --proto udp --dport $PORT --src "$src" --dst "$dst" \
		--pps $PPS --count $((PPS * SECONDS_SENT)))
	e2e_equal "$src: frames sent" "$sent" $((PPS * SECONDS_SENT))
	sent_total=$((sent_total + sent))
	ms_of[$src]=$ms
done

# Everything sent has been decided by now; the sink reads what is queued on
# SIGTERM before it exits.
kill -TERM "$SINK_PID"
wait "$SINK_PID" || e2e_fail "the sink exited with status $?"

for src in 10.200.0.10 fd00:200::10; do
	got=$(awk -v s="$src" '$2 == s' "$WORK/rec" | wc -l)
	hi=$(e2e_bound $BURST $RATE "${ms_of[$src]}")
	echo "smoke: $src admitted $got of $((PPS * SECONDS_SENT)) in ${ms_of[$src]} ms, bound $hi"
	e2e_within "$src: admitted" "$got" $((hi * E2E_LOW_PCT / 100)) "$hi"
done

status=$("$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json)
policies=$(echo "$status" | grep -o '{"name":"smoke"[^}]*}')
passed=$(echo "$policies" | grep -o '"passed_pkts":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
dropped=$(echo "$policies" | grep -o '"dropped_pkts":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
e2e_equal "sluice passed + dropped = sent" $((passed + dropped)) "$sent_total"
e2e_equal "sluice passed = sink counted" "$passed" "$(wc -l <"$WORK/rec")"

# vlan_decided N: wait until the vlan policy has decided N frames (at most
# VLAN_WAIT_S), then a second more for the stack to deliver what it passed.
vlan_decided() {
	local deadline=$((SECONDS + VLAN_WAIT_S)) p
	while :; do
		p=$("$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json |
			grep -o '{"name":"vlan"[^}]*}')
		VLAN_PASSED=$(echo "$p" | grep -o '"passed_pkts":[0-9]*' | cut -d: -f2)
		VLAN_DROPPED=$(echo "$p" | grep -o '"dropped_pkts":[0-9]*' | cut -d: -f2)
		((VLAN_PASSED + VLAN_DROPPED < $1)) || break
		((SECONDS < deadline)) || e2e_fail "vlan: sluice decided $((VLAN_PASSED + VLAN_DROPPED)) of $1 frames in $VLAN_WAIT_S s"
		sleep 0.1
	done
	sleep 1
}

if ((vlan)); then
	e2e_count_setup vlan1 "iifname \"${VETH_RX}q\" udp dport $VLAN_PORT" \
		vlan2 "iifname \"${VETH_RX}qq\" udp dport $VLAN_PORT"
	for tags in 1 2; do
		dev=${VETH_TX}q dst=10.201.0.2
		[ $tags = 1 ] || dev=${VETH_TX}qq dst=10.202.0.2
		out=$(in_ns "$NS_TX" "$FLOOD" --iface "$dev" --dst-mac "$RX_MAC" --proto udp \
			--dport $VLAN_PORT --src "10.20$tags.0.10" --dst $dst --pps 1000 --count $VLAN_SENT)
		sent=$(echo "$out" | sed -n 's/.*sent=\([0-9]*\) .*/\1/p')
		e2e_equal "vlan: $tags tag(s): frames sent" "$sent" $VLAN_SENT
		vlan_decided $((tags * VLAN_SENT))
		got=$(e2e_count vlan$tags)
		echo "smoke: vlan $tags tag(s) delivered $got of $VLAN_SENT, burst $VLAN_BURST"
		e2e_equal "vlan: $tags tag(s): delivered at ${dev/$VETH_TX/$VETH_RX}" "$got" $VLAN_BURST
		e2e_equal "vlan: sluice passed" "$VLAN_PASSED" $((tags * VLAN_BURST))
		e2e_equal "vlan: sluice dropped" "$VLAN_DROPPED" $((tags * (VLAN_SENT - VLAN_BURST)))
	done
fi
e2e_stop_agent
echo "smoke: all checks passed"
