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

cat >"$WORK/demo.yaml" <<YAML
# What the victim enforces: per-source and per-/24 DNS, SSH SYNs as an abuse
# limit, a new limit being trialled in shadow mode, and a health checker
# that is never limited. Short agent timings so the demo can show what the
# kernel does by itself when the agent dies.
agent: { heartbeat: 200ms, timeout: 1s }
allow: [10.200.0.250]               # the load balancer's health checks
policies:
  - name: dns-per-source
    match: { proto: udp, dst_port: 53 }
    key: { ipv4_prefix: 32, ipv6_prefix: 64 }
    rate: 100/s
    burst: 50
    local_limit: 20/s               # if the agent dies: degraded to this
  - name: dns-per-24
    match: { proto: udp, dst_port: 53 }
    key: { ipv4_prefix: 24, ipv6_prefix: 48 }
    rate: 300/s
    burst: 100
  - name: ssh-syn
    class: abuse                    # degraded if the agent dies, closed 2s later
    closed_after: 2s
    match: { proto: tcp, dst_port: 22, tcp_syn: true }
    key: { ipv4_prefix: 32, ipv6_prefix: 64 }
    rate: 10/s
    burst: 5
  - name: ntp-trial
    mode: shadow                    # counts what it would drop, drops nothing
    match: { proto: udp, dst_port: 123 }
    key: { ipv4_prefix: 32, ipv6_prefix: 64 }
    rate: 10/s
    burst: 10
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
	"NTP client (shadow policy)|udp|123|$RX4|10.200.0.88|200"
	"health checker (allowlisted)|udp|53|$RX4|10.200.0.250|2000"
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
counters+=(lost_ssh "ip saddr 10.200.0.78 tcp dport 22" lost_dns "ip saddr 10.200.0.79 udp dport 53")
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

echo
echo "== kill -9 the agent: the XDP program keeps enforcing, and after the 1s"
echo "   agent timeout applies each policy's on_agent_loss by itself"
{ kill -KILL "$AGENT_PID" && wait "$AGENT_PID"; } 2>/dev/null || : # no "Killed" notice
e2e_wait_state ssh-syn closed
for f in "new SSH scanner (abuse: closed)|tcp-syn|22|10.200.0.78|lost_ssh" \
	"new DNS client (degraded to 20/s)|udp|53|10.200.0.79|lost_dns"; do
	IFS='|' read -r label proto port src counter <<<"$f"
	e2e_flood --proto "$proto" --dport "$port" --src "$src" --dst "$RX4" --pps 1000 \
		--count 1000 >/dev/null
	printf '  %-36s sent 1000 in 1s, arrived %s\n' "$label" "$(e2e_count "$counter")"
done
e2e_status --iface "$VETH_RX" # exit status 1: the agent is lost (sluice(8), EXIT STATUS)
echo
echo "demo done; namespaces, XDP program and pins are being removed"
