#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make bench-path: the whole receive path on a veth pair between two
# network namespaces, sluice beside XDP drop-all, nftables and iptables
# hashlimit, all in one run. The flood is made in the kernel:
# sluice-bench-gen runs bench/gen.bpf.c with BPF_F_TEST_XDP_LIVE_FRAMES on
# CPU $GEN_CPU, redirecting frames from $SOURCES sources into the sending
# veth. The receiving veth's NAPI runs as a thread of its own (threaded
# NAPI), pinned to CPU $RX_CPU, so everything the receiver does for a
# packet (XDP, and for the kernel limiters the skb, IP and netfilter) is
# that one thread's CPU time. Per configuration it reports the frames the
# receiver processed, their rate, the receiving thread's busy share and its
# CPU time per frame, and what the limiter dropped.
#
# Usage: bench/path.sh <build-dir>. Needs root and 2 CPUs. Traffic stays in
# the namespaces created here; tests/e2e/lib.sh's EXIT trap removes them,
# and with them every program, nftables table and iptables rule in them.
BUILD=${1:?usage: bench/path.sh <build-dir>}
E2E_ID=${E2E_ID:-b$$}
SLUICE=$BUILD/sluice
FLOOD=$BUILD/sluice-flood
source "$(dirname "$0")/../tests/e2e/lib.sh"

GEN=$BUILD/bench/sluice-bench-gen
SOURCES=${SLUICE_BENCH_SOURCES:-1000}
# #16: sluice also under a flood from this many sources: each is seen a few
# times a second, mostly within its limit (a spoofed flood gets past a
# per-source limit: what prefix keys are for), so every frame looks up a
# key that has left the CPU's caches. What it costs is the measure, not
# what is dropped: the row checks only that sluice counted drops at all.
SOURCES_SPOOFED=100000
SPOOFED_DROPPED_MIN_PCT=1
COUNT=${SLUICE_BENCH_PATH_COUNT:-10000000}
RATE_PPS=5 # per source: the flood offers far more, so nearly all is dropped
BURST=5
DPORT=9
DROPPED_MIN_PCT=90
SRC_FIRST=10.1.0.0
GEN_CPU=0
RX_CPU=1
# #32: the floor of sluice's receive path, and its target: sluice at least
# this share of the frames per receiving CPU second of a program that reads
# the source (Ethernet and IP to the source address) and drops.
FLOOR="XDP read source+drop-all"
TARGET_FLOOR_X=0.9
RT_PRIO=1 # SCHED_FIFO for the sender and the receiving thread: other tasks on a
	  # shared machine would otherwise take CPU from either mid-run

e2e_require
[ -x "$GEN" ] || e2e_fail "build first: $GEN"

# `ip link set ... xdpdrv obj` (the drop-all and pass baselines) makes
# iproute2's pin directories in bpffs; remove the ones this run created.
IPROUTE_PINS=(/sys/fs/bpf/ip /sys/fs/bpf/xdp /sys/fs/bpf/tc/globals /sys/fs/bpf/tc)
fresh_pins=()
for p in "${IPROUTE_PINS[@]}"; do [ -e "$p" ] || fresh_pins+=("$p"); done
remove_iproute_pins() {
	local p
	for p in "${fresh_pins[@]}"; do
		if [ -L "$p" ]; then rm -f "$p"; else rmdir "$p" 2>/dev/null; fi
	done
}
trap 'rc=$?; set +e; remove_iproute_pins; (exit "$rc"); e2e_cleanup' EXIT # keep the status; set +e: else (exit "$rc") would end the trap before e2e_cleanup
(($(nproc) >= 2)) || e2e_skip "the whole-path bench needs 2 CPUs (sender and receiver)"
e2e_topology

rx_sys() { # file under the receiving veth's statistics
	ip netns exec "$NS_RX" cat "/sys/class/net/$VETH_RX/$1"
}

# The receiving veth's NAPI as its own thread on $RX_CPU; prints its PID.
# Threaded mode needs a NAPI instance, which exists once XDP is attached.
rx_napi_thread() {
	local pid
	ip netns exec "$NS_RX" sh -c "echo 1 > /sys/class/net/$VETH_RX/threaded"
	pid=$(ps -eo pid=,comm= | awk -v c="napi/$VETH_RX-" 'index($2, c) == 1 { print $1 }')
	{ [ -n "$pid" ] && [ "$(wc -w <<<"$pid")" = 1 ]; } || e2e_fail "no single NAPI thread of $VETH_RX: '$pid'"
	taskset -p -c "$RX_CPU" "$pid" >/dev/null
	chrt -f -p "$RT_PRIO" "$pid"
	echo "$pid"
}

runtime_ns() { # the task's CPU time so far, from the scheduler
	cut -d' ' -f1 "/proc/$1/schedstat"
}

# measure [SOURCES]: one measured flood (bounded by $COUNT) from SOURCES
# sources ($SOURCES); prints "rx_frames elapsed_ns rx_cpu_ns".
measure() {
	local napi rx0 rx1 cpu0 cpu1 out sources=${1:-$SOURCES}
	napi=$(rx_napi_thread)
	rx0=$(rx_sys statistics/rx_packets)
	cpu0=$(runtime_ns "$napi")
	out=$(chrt -f "$RT_PRIO" taskset -c "$GEN_CPU" nsenter --net="/run/netns/$NS_TX" "$GEN" \
		--obj "$BUILD/bench/gen.bpf.o" --iface "$VETH_TX" --dst-mac "$RX_MAC" \
		--src "$SRC_FIRST" --dst "$RX4" --dport "$DPORT" --count "$COUNT" --sources "$sources")
	cpu1=$(runtime_ns "$napi")
	rx1=$(rx_sys statistics/rx_packets)
	echo "$((rx1 - rx0)) $(sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p' <<<"$out") $((cpu1 - cpu0))"
}

xdp_attach() { # object section
	in_ns "$NS_RX" ip link set dev "$VETH_RX" xdpdrv obj "$1" sec xdp
}

xdp_detach() {
	in_ns "$NS_RX" ip link set dev "$VETH_RX" xdpdrv off
}

declare -A NS_PER_PKT

# report NAME "rx elapsed cpu" DROPPED [MIN_PCT]
report() {
	local name=$1 rx elapsed cpu dropped=$3 min_pct=${4:-$DROPPED_MIN_PCT}
	read -r rx elapsed cpu <<<"$2"
	((rx > 0)) || e2e_fail "$name: the receiver processed no frames"
	# A limiter that dropped less than this did not measure a flood over its limit.
	((dropped * 100 >= rx * min_pct)) ||
		e2e_fail "$name: dropped $dropped of $rx frames, expected at least $min_pct %"
	NS_PER_PKT[$name]=$((cpu / rx))
	awk -v n="$name" -v rx="$rx" -v el="$elapsed" -v cpu="$cpu" -v d="$dropped" 'BEGIN {
		printf "  %-28s %10d %8.2f %6.0f%% %8.1f %8.2f %7.1f%%\n", n, rx, rx / el * 1000,
			cpu / el * 100, cpu / rx, 1000 / (cpu / rx), d / rx * 100 }'
}

bench_xdp() { # OBJECT NAME: an XDP program that drops every frame
	local m
	xdp_attach "$BUILD/bench/$1"
	m=$(measure)
	report "$2" "$m" "${m%% *}"
	xdp_detach
}

bench_sluice() { # [SOURCES]: the flood's sources, $SOURCES by default
	local m before after sources=${1:-$SOURCES} name=sluice min_pct=$DROPPED_MIN_PCT
	cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: flood-per-source
    match: { proto: udp, dst_port: $DPORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE_PPS/s
    burst: $BURST
YAML
	e2e_start_agent "$WORK/policy.yaml" --detach-on-exit
	before=$(sluice_dropped)
	m=$(measure "$sources")
	after=$(sluice_dropped)
	if ((sources != SOURCES)); then
		name="sluice, $sources sources"
		min_pct=$SPOOFED_DROPPED_MIN_PCT
	fi
	report "$name" "$m" $((after - before)) "$min_pct"
	e2e_stop_agent
}

sluice_dropped() {
	"$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json |
		grep -o '"dropped_pkts":[0-9]*' | tail -n 1 | cut -d: -f2 # the totals come last
}

bench_nft() {
	local m
	xdp_attach "$BUILD/bench/pass.bpf.o"
	in_ns "$NS_RX" nft -f - <<NFT
table inet sluicebench {
	set flood4 {
		type ipv4_addr
		size 65536
		flags dynamic,timeout
		timeout 60s
	}
	chain pre {
		type filter hook prerouting priority raw; policy accept;
		udp dport $DPORT update @flood4 { ip saddr limit rate over $RATE_PPS/second burst $BURST packets } counter drop
	}
}
NFT
	m=$(measure)
	report "nftables limit over, set" "$m" "$(in_ns "$NS_RX" nft list chain inet sluicebench pre |
		sed -n 's/.*counter packets \([0-9]*\) .*/\1/p')"
	in_ns "$NS_RX" nft delete table inet sluicebench
	xdp_detach
}

bench_hashlimit() { # iptables binary
	local ipt=$1 m
	xdp_attach "$BUILD/bench/pass.bpf.o"
	in_ns "$NS_RX" "$ipt" -t raw -A PREROUTING -p udp --dport "$DPORT" -m hashlimit \
		--hashlimit-name sluicebench --hashlimit-mode srcip --hashlimit-above "$RATE_PPS/sec" \
		--hashlimit-burst "$BURST" --hashlimit-htable-size 65536 --hashlimit-htable-max 65536 \
		-j DROP
	m=$(measure)
	report "$ipt hashlimit" "$m" "$(in_ns "$NS_RX" "$ipt" -t raw -L PREROUTING -v -x -n |
		awk '$3 == "DROP" { print $1 }')"
	in_ns "$NS_RX" "$ipt" -t raw -F PREROUTING
	xdp_detach
}

printf 'sluice bench-path: the receive path of a veth pair, %s frames per run\n' "$COUNT"
printf 'flood:   %d IPv4 UDP sources, 60-byte frames, BPF_F_TEST_XDP_LIVE_FRAMES on CPU %d\n' \
	"$SOURCES" "$GEN_CPU"
printf 'limit:   per source %d/s, burst %d; receiver: threaded NAPI pinned to CPU %d\n' \
	"$RATE_PPS" "$BURST" "$RX_CPU"
printf 'tools:   %s; %s; kernel %s\n\n' "$(nft --version)" "$(iptables -V)" "$(uname -r)"
printf '  %-28s %10s %8s %7s %8s %8s %8s\n' config "rx frames" Mpps "rx CPU" ns/frame \
	Mpps/CPU dropped
bench_xdp empty.bpf.o "XDP drop-all"
bench_xdp touch.bpf.o "XDP read+drop-all"
bench_xdp readsrc.bpf.o "$FLOOR"
bench_sluice
bench_sluice "$SOURCES_SPOOFED"
bench_nft
bench_hashlimit iptables
if command -v iptables-legacy >/dev/null; then
	bench_hashlimit iptables-legacy
fi
awk -v d="${NS_PER_PKT[XDP drop-all]}" -v s="${NS_PER_PKT[sluice]}" \
	-v t="${NS_PER_PKT[XDP read+drop-all]}" -v f="${NS_PER_PKT[$FLOOR]}" \
	-v n="${NS_PER_PKT[nftables limit over, set]}" -v i="${NS_PER_PKT[iptables hashlimit]}" \
	-v l="${NS_PER_PKT[iptables-legacy hashlimit]:-0}" -v x="$TARGET_FLOOR_X" 'BEGIN {
	printf "\nframes per receiving CPU second, sluice vs: XDP drop-all %.2fx, XDP read+drop-all %.2fx,\n", d / s, t / s
	printf "nftables %.2fx, iptables hashlimit %.2fx", n / s, i / s
	if (l) printf ", iptables-legacy hashlimit %.2fx", l / s
	printf "\n#32, receive path: sluice %d ns/frame, XDP read source+drop-all %d: %.2fx its speed (target: >= %.1fx): %s\n",
		s, f, f / s, x, (f / s >= x ? "met" : "not met") }'
printf '(Mpps: frames the receiver processed / wall time of the flood; rx CPU: the\n'
printf 'NAPI thread busy share; ns/frame: its CPU time / frames; Mpps/CPU: 1000 / ns/frame;\n'
printf 'dropped: what the limiter dropped, of the frames processed)\n'
