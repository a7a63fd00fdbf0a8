#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# sluice run --iface auto: the agent attaches to the interfaces that carry
# the default routes of its network namespace, and reads them again on
# reload. The node ($NS_RX) has two uplinks, $VETH_RX (to $NS_TX) and
# $UP2 (to $NS_TX2). The routes go through three states:
#   1. an IPv4 ECMP default route over both: both attached, both enforcing;
#   2. IPv4 via $VETH_RX alone, then `sluice reload`: $UP2 detached (its
#      pins gone, its traffic no longer limited), $VETH_RX still enforcing;
#   3. an IPv6 default route via $UP2 too, then `sluice reload`: $UP2
#      attached again, enforcing IPv6.
# Before that, without a default route, and with auto beside a named
# interface: a clear error, nothing attached.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_topology

NS_TX2=${E2E_ID}tx2
UP1=$VETH_RX
UP2=${E2E_ID}c
TX2_IF=${E2E_ID}d
TX2_4=10.201.0.1
RX2_4=10.201.0.2
TX2_6=fd00:201::1
RX2_6=fd00:201::2
BURST=5
SENT=20 # per check: BURST pass, the rest are dropped (rate 1/min refills nothing)

ip netns add "$NS_TX2"
_netns+=("$NS_TX2")
ip link add "$TX2_IF" netns "$NS_TX2" type veth peer name "$UP2" netns "$NS_RX"
for end in "$NS_TX2 $TX2_IF $TX2_4 $TX2_6" "$NS_RX $UP2 $RX2_4 $RX2_6"; do
	read -r ns ifname addr4 addr6 <<<"$end"
	in_ns "$ns" ip addr add "$addr4/24" dev "$ifname"
	in_ns "$ns" ip addr add "$addr6/64" dev "$ifname" nodad
	in_ns "$ns" ip link set "$ifname" up
done
UP2_MAC=$(in_ns "$NS_RX" ip -o link show "$UP2" | sed -n 's|.*link/ether \([0-9a-f:]*\).*|\1|p')

cat >"$WORK/policy.yaml" <<YAML
interfaces: [auto]
policies:
  - name: per-source
    match: { proto: udp, dst_port: 7000 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/min
    burst: $BURST
YAML

# No default route (yet): a clear error, exit status 1, nothing pinned.
rc=0
in_ns "$NS_RX" "$SLUICE" run --config "$WORK/policy.yaml" --pin-root "$PIN_ROOT" \
	--mode native 2>"$WORK/none.err" || rc=$?
e2e_equal "no default route: exit status" "$rc" 1
grep -q 'no interface carries a default route' "$WORK/none.err" ||
	e2e_fail "no clear error: $(cat "$WORK/none.err")"
[ -z "$(ls -A "$PIN_ROOT" 2>/dev/null)" ] || e2e_fail "pins left: $(ls "$PIN_ROOT")"
echo "ok: no default route: $(grep -o 'no interface carries.*' "$WORK/none.err")"

# auto with a named interface: refused, for the same reasons.
rc=0
in_ns "$NS_RX" "$SLUICE" run --config "$WORK/policy.yaml" --pin-root "$PIN_ROOT" \
	--iface auto --iface "$UP1" 2>"$WORK/mixed.err" || rc=$?
e2e_equal "--iface auto --iface $UP1: exit status" "$rc" 78
grep -q "interface 'auto' stands alone" "$WORK/mixed.err" ||
	e2e_fail "no clear error: $(cat "$WORK/mixed.err")"
[ -z "$(ls -A "$PIN_ROOT" 2>/dev/null)" ] || e2e_fail "pins left: $(ls "$PIN_ROOT")"

e2e_count_setup up1 "iifname \"$UP1\" udp dport 7000" up2 "iifname \"$UP2\" udp dport 7000"
_src_n=0
# check LABEL IFACE WANT: SENT packets to port 7000 from a new source in through
# IFACE (IPv4, or IPv6 with a 4th argument), and exactly WANT arrive.
check() {
	local label=$1 iface=$2 want=$3 family=${4:-4} counter tx mac ns src dst before
	_src_n=$((_src_n + 1))
	if [ "$iface" = "$UP1" ]; then
		counter=up1 ns=$NS_TX tx=$VETH_TX mac=$RX_MAC src=10.200.0.$((100 + _src_n)) dst=$RX4
	else
		counter=up2 ns=$NS_TX2 tx=$TX2_IF mac=$UP2_MAC src=10.201.0.$((100 + _src_n)) dst=$RX2_4
	fi
	[ "$family" = 4 ] || src=fd00:201::$((100 + _src_n)) dst=$RX2_6
	before=$(e2e_count "$counter")
	in_ns "$ns" "$FLOOD" --iface "$tx" --dst-mac "$mac" --proto udp --dport 7000 \
		--src "$src" --dst "$dst" --count "$SENT" --pps 1000 >/dev/null
	e2e_equal "$label" $(($(e2e_count "$counter") - before)) "$want"
}

attached() { [ -d "$PIN_ROOT/$1" ] && e2e_status --iface "$1" >/dev/null 2>&1; }

# 1. IPv4 ECMP over both uplinks.
in_ns "$NS_RX" ip route add default nexthop via "$TX4" dev "$UP1" nexthop via "$TX2_4" dev "$UP2"
ns_spawn "$NS_RX" "$SLUICE" -v run --config "$WORK/policy.yaml" --pin-root "$PIN_ROOT" \
	--mode native --max-keys 65536 >"$WORK/agent.log" 2>&1
AGENT_PID=$SPAWNED_PID
e2e_wait_start "$WORK/agent.log"
deadline=$((SECONDS + 20))
until [ "$(grep -c 'event=start' "$WORK/agent.log")" = 2 ]; do
	((SECONDS < deadline)) || e2e_fail "not attached to both: $(cat "$WORK/agent.log")"
	sleep 0.05
done
want_ifaces=$(printf '%s\n' "$UP1" "$UP2" | sort | paste -sd,)
grep -q "event=iface_auto ifaces=$want_ifaces\$" "$WORK/agent.log" ||
	e2e_fail "auto did not log both: $(grep iface_auto "$WORK/agent.log")"
echo "ok: ECMP default route: attached to $want_ifaces"
check "ECMP: $UP1 enforcing (of $SENT)" "$UP1" "$BURST"
check "ECMP: $UP2 enforcing (of $SENT)" "$UP2" "$BURST"

# 2. The default route via $UP1 alone: $UP2 detached on reload.
in_ns "$NS_RX" ip route replace default via "$TX4" dev "$UP1"
"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$UP1" >/dev/null
grep -q "event=detach iface=$UP2 why=no_default_route" "$WORK/agent.log" ||
	e2e_fail "no detach logged: $(tail -5 "$WORK/agent.log")"
attached "$UP2" && e2e_fail "$UP2 still attached after its default route went"
echo "ok: route via $UP1 only, reload: $UP2 detached, its pins removed"
check "$UP2 no longer limited (of $SENT)" "$UP2" "$SENT"
check "$UP1 still enforcing (of $SENT)" "$UP1" "$BURST"

# 3. An IPv6 default route via $UP2: attached again on reload.
in_ns "$NS_RX" ip -6 route add default via "$TX2_6" dev "$UP2"
"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$UP1" >/dev/null || e2e_fail "reload after an IPv6 default route failed: $(tail -5 "$WORK/agent.log")"
attached "$UP2" || e2e_fail "$UP2 not attached after an IPv6 default route: $(tail -5 "$WORK/agent.log")"
echo "ok: IPv6 default route via $UP2, reload: attached again"
check "IPv6 via $UP2 enforcing (of $SENT)" "$UP2" "$BURST" 6
check "$UP1 still enforcing (of $SENT)" "$UP1" "$BURST"
e2e_stop_agent
echo "test_iface_auto: all checks passed"
