#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The demo behind `make demo`: two network namespaces joined by a veth pair,
# sluice attached (native XDP) on the victim side, and bounded floods from
# several sources: polite ones under their limit, abusive ones far over it,
# and a botnet spread over one /24. Prints what arrived and what sluice
# dropped, per source and per policy, then removes everything it created.
#
# usage: tools/demo.sh <sluice> <sluice-flood>
set -euo pipefail

SLUICE=$(realpath "$1")
FLOOD=$(realpath "$2")
export SLUICE FLOOD E2E_ID=demo$$
# The test library owns topology and cleanup; the demo is its first user.
source "$(dirname "$0")/../tests/e2e/lib.sh"
e2e_require
e2e_topology

cat >"$WORK/demo.yaml" <<'YAML'
# What the victim enforces: per-source DNS, per-/24 (and /64) DNS, SSH SYNs.
policies:
  - name: dns-per-source
    match: { proto: udp, dst_port: 53 }
    key: { ipv4_prefix: 32, ipv6_prefix: 64 }
    rate: 100/s
    burst: 50
  - name: dns-per-24
    match: { proto: udp, dst_port: 53 }
    key: { ipv4_prefix: 24, ipv6_prefix: 48 }
    rate: 300/s
    burst: 100
  - name: ssh-syn
    match: { proto: tcp, dst_port: 22, tcp_syn: true }
    key: { ipv4_prefix: 32, ipv6_prefix: 64 }
    rate: 10/s
    burst: 5
YAML

echo "== policy"
"$SLUICE" check "$WORK/demo.yaml"
e2e_start_agent "$WORK/demo.yaml"

# label | protocol | port | destination | sources | pps per source
FLOODS=(
	"polite client|udp|53|$RX4|10.200.0.20|50"
	"abusive client|udp|53|$RX4|10.200.0.66|2000"
	"botnet (one /24, 8 hosts)|udp|53|$RX4|10.200.9.1,10.200.9.2,10.200.9.3,10.200.9.4,10.200.9.5,10.200.9.6,10.200.9.7,10.200.9.8|250"
	"abusive IPv6 client|udp|53|$RX6|fd00:200::66|2000"
	"SSH scanner|tcp-syn|22|$RX4|10.200.0.77|500"
)
DURATION_S=3

counters=()
i=0
for f in "${FLOODS[@]}"; do
	IFS='|' read -r label proto port dst srcs pps <<<"$f"
	fam=ip
	[[ $dst == *:* ]] && fam=ip6
	l4="udp dport $port"
	[ "$proto" = tcp-syn ] && l4="tcp dport $port tcp flags & (syn | ack) == syn"
	counters+=("f$i" "$fam saddr { $srcs } $l4")
	i=$((i + 1))
done
e2e_count_setup "${counters[@]}"

echo
echo "== flooding for ${DURATION_S}s from $((${#FLOODS[@]})) groups of sources (all at once)"
i=0
pids=()
for f in "${FLOODS[@]}"; do
	IFS='|' read -r label proto port dst srcs pps <<<"$f"
	n=$(($(tr -cd , <<<"$srcs" | wc -c) + 1))
	ns_spawn "$NS_TX" "$FLOOD" --iface "$VETH_TX" --dst-mac "$RX_MAC" --proto "$proto" \
		--dport "$port" --src "$srcs" --dst "$dst" --pps $((pps * n)) \
		--count $((pps * n * DURATION_S)) >"$WORK/flood$i.out"
	pids+=("$SPAWNED_PID")
	i=$((i + 1))
done
for p in "${pids[@]}"; do wait "$p"; done

echo
printf '%-30s %10s %10s %8s\n' "SOURCES" "SENT" "ARRIVED" "DROPPED"
i=0
for f in "${FLOODS[@]}"; do
	IFS='|' read -r label _ <<<"$f"
	sent=$(sed -n 's/.*sent=\([0-9]*\).*/\1/p' "$WORK/flood$i.out")
	got=$(e2e_count "f$i")
	printf '%-30s %10s %10s %7s%%\n' "$label" "$sent" "$got" $(((sent - got) * 100 / sent))
	i=$((i + 1))
done

echo
echo "== sluice status (read from the pinned maps)"
"$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX"
e2e_stop_agent
echo
echo "demo done; namespaces, XDP program and pins are being removed"
