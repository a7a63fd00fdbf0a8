#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A packet limit counts wire packets in tc mode (issue #11, part 4): a TCP
# bulk transfer into a packet limit on clsact ingress, in two shapes. gso:
# the sender's veth keeps TSO, so the receiver gets the sender's 64 KiB GSO
# skbs; gro: the sender segments (tso, gso off) and the receiver's GRO
# merges them again (gro on). Either way the program sees aggregates of
# many segments, which the test checks independently (the receiver's
# IpInReceives counts far fewer skbs than segments were sent).
#
# The wire count is the sender's: TcpOutSegs + TcpRetransSegs, every TCP
# segment it put on its veth. Asserted:
# - what sluice charged (the policy's passed + dropped packets) is the
#   wire count, within 10 %;
# - what it admitted is at most the packet budget, burst + rate·t, plus
#   10 %, and at least E2E_LOW_PCT of it: TCP itself backs off when whole
#   aggregates are dropped, so it lags the budget a little (93 to 99 %);
# - what reached the receiving stack (IP bytes at the nftables input hook)
#   is no more than the budget's worth of full-size packets, plus 10 %.
# Then: the mode shows in the start-up log, `status`, `status --json` and
# /metrics; the filter stays when the agent exits and still enforces, and
# `sluice detach` removes it; auto on an interface without native XDP
# (the namespace's lo) attaches in tc mode and says why.
#
# TC_MODE=generic TC_MODE_OPT=--xdp-mode runs the transfer checks through
# generic XDP on a sluice that still has it (the commit before tc mode):
# it charges each aggregate as one packet, and fails them.
source "$(dirname "$0")/lib.sh"
e2e_require
command -v ethtool >/dev/null || e2e_skip "ethtool is not installed (tools/deps.sh installs it)"
command -v socat >/dev/null || e2e_skip "socat is not installed (tools/deps.sh installs it)"
e2e_topology

TC_MODE=${TC_MODE:-tc}
TC_MODE_OPT=${TC_MODE_OPT:---mode}
PORT=5201
METRICS_PORT=9192
RATE=2000 # packets per second
BURST=2000
SECS=3			# the transfer's length: the budget is about 8000 packets
MAX_BYTES=$((64 << 20)) # and its most bytes, should nothing limit it
MTU=1500		# the most IP bytes one wire packet carries
TOL_PCT=10

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: bulk
    match: { proto: tcp, dst_port: $PORT }
    rate: $RATE/s
    burst: $BURST
YAML
e2e_count_setup delivered "tcp dport $PORT"

delivered_bytes() {
	in_ns "$NS_RX" nft list counter inet e2e delivered | sed -n 's/.*bytes \([0-9]*\).*/\1/p'
}

nstat_sum() { # NS COUNTER... -> the sum of those SNMP counters in NS
	local ns=$1
	shift
	in_ns "$ns" nstat -az "$@" | awk 'NR > 1 { s += $2 } END { print s + 0 }'
}

policy_pkts() { # OUTCOME -> packets of policy bulk, from status --json
	"$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json |
		grep -o "\"$1_pkts\":[0-9]*" | awk -F: 'NR == 1 { print $2 }'
}

tc_filters() {
	in_ns "$NS_RX" tc filter show dev "$VETH_RX" ingress
}

# e2e_within with a percentage: VALUE within TOL_PCT % of WANT.
within_pct() {
	local label=$1 value=$2 want=$3
	e2e_within "$label (±$TOL_PCT % of $want)" "$value" \
		$((want * (100 - TOL_PCT) / 100)) $((want * (100 + TOL_PCT) / 100))
}

# One bulk transfer from $NS_TX: the sender writes for SECS (at most
# MAX_BYTES), and its socket then sends what it holds and closes; the
# transfer ends when the receiver has read it all (at most DRAIN_S more).
# Sets MS, WIRE (segments sent), SKBS (skbs the receiving IP layer saw),
# DELIVERED (bytes), and CHARGED and ADMITTED (what sluice counted).
DRAIN_S=20
transfer() {
	local wire0 skbs0 bytes0 passed0 dropped0 t0 rc=0 deadline
	ns_spawn "$NS_RX" socat -u "TCP-LISTEN:$PORT,reuseaddr" OPEN:/dev/null
	e2e_wait_listen
	wire0=$(nstat_sum "$NS_TX" TcpOutSegs TcpRetransSegs)
	skbs0=$(nstat_sum "$NS_RX" IpInReceives)
	bytes0=$(delivered_bytes)
	passed0=$(policy_pkts passed)
	dropped0=$(policy_pkts dropped)
	t0=$(date +%s%N)
	head -c "$MAX_BYTES" /dev/zero |
		in_ns "$NS_TX" timeout "$SECS" socat -u - "TCP:$RX4:$PORT" || rc=$?
	((rc == 0 || rc == 124)) || e2e_fail "the sender failed: status $rc"
	deadline=$((SECONDS + DRAIN_S))
	while kill -0 "$SPAWNED_PID" 2>/dev/null; do
		((SECONDS < deadline)) || e2e_fail "the receiver did not finish within $DRAIN_S s"
		sleep 0.05
	done
	wait "$SPAWNED_PID" || e2e_fail "the receiver failed: status $?"
	MS=$((($(date +%s%N) - t0) / 1000000))
	WIRE=$(($(nstat_sum "$NS_TX" TcpOutSegs TcpRetransSegs) - wire0))
	SKBS=$(($(nstat_sum "$NS_RX" IpInReceives) - skbs0))
	DELIVERED=$(($(delivered_bytes) - bytes0))
	ADMITTED=$(($(policy_pkts passed) - passed0))
	CHARGED=$((ADMITTED + $(policy_pkts dropped) - dropped0))
}

e2e_wait_listen() {
	local deadline=$((SECONDS + 5))
	until in_ns "$NS_RX" ss -Hltn "sport = :$PORT" | grep -q LISTEN; do
		((SECONDS < deadline)) || e2e_fail "socat did not listen on :$PORT within 5 s"
		sleep 0.05
	done
}

check_transfer() { # SHAPE
	local budget
	budget=$(e2e_bound "$BURST" "$RATE" "$MS")
	echo "$1: wire=$WIRE skbs=$SKBS charged=$CHARGED admitted=$ADMITTED budget=$budget" \
		"delivered_bytes=$DELIVERED ms=$MS"
	((SKBS * 2 < WIRE)) || e2e_fail "$1: no aggregates formed ($SKBS skbs for $WIRE segments)"
	within_pct "$1: charged = segments sent" "$CHARGED" "$WIRE"
	e2e_within "$1: admitted ≤ the budget + $TOL_PCT %" "$ADMITTED" \
		$((budget * E2E_LOW_PCT / 100)) $((budget * (100 + TOL_PCT) / 100))
	e2e_within "$1: delivered full-size packets ≤ budget + $TOL_PCT %" \
		$((DELIVERED / MTU)) 0 $((budget * (100 + TOL_PCT) / 100))
}

# ---- gso: the sender's GSO skbs, whole ---------------------------------
e2e_start_agent "$WORK/policy.yaml" "$TC_MODE_OPT" "$TC_MODE" --metrics "127.0.0.1:$METRICS_PORT"
transfer
check_transfer gso

if [ "$TC_MODE" = tc ]; then
	grep -q "event=start iface=$VETH_RX mode=tc " "$AGENT_LOG" ||
		e2e_fail "the start-up log does not say mode=tc"
	"$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" | grep -q "^$VETH_RX: tc mode," ||
		e2e_fail "status does not say tc mode"
	"$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json | grep -q '"mode":"tc"' ||
		e2e_fail "status --json does not say \"mode\":\"tc\""
	in_ns "$NS_RX" bash -c "exec 3<>/dev/tcp/127.0.0.1/$METRICS_PORT &&
		printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3" |
		grep -qx "sluice_attach_info{iface=\"$VETH_RX\",mode=\"tc\"} 1" ||
		e2e_fail "/metrics has no sluice_attach_info for tc mode"
	echo "ok: the mode shows in the log, status, status --json and /metrics"

	# The filter is no link: it stays when the agent exits, and enforces.
	e2e_stop_agent
	grep -q bpf <<<"$(tc_filters)" || e2e_fail "the TC filter went with the agent"
	transfer
	((CHARGED > ADMITTED && ADMITTED > 0)) ||
		e2e_fail "no agent: the TC filter admitted $ADMITTED of $CHARGED"
	echo "ok: no agent: the TC filter still limits (admitted $ADMITTED of $CHARGED)"
	in_ns "$NS_RX" "$SLUICE" detach --pin-root "$PIN_ROOT" --iface "$VETH_RX"
	grep -q bpf <<<"$(tc_filters)" && e2e_fail "TC filter left after detach"
	[ -e "$PIN_ROOT/$VETH_RX" ] && e2e_fail "pins left after detach"
	echo "ok: detach removes the TC filter and the pins"
else
	e2e_stop_agent
	in_ns "$NS_RX" "$SLUICE" detach --pin-root "$PIN_ROOT" --iface "$VETH_RX"
fi

# ---- gro: segments on the wire, merged again by the receiver's GRO -----
in_ns "$NS_TX" ethtool -K "$VETH_TX" tso off gso off >/dev/null
in_ns "$NS_RX" ethtool -K "$VETH_RX" gro on >/dev/null
e2e_start_agent "$WORK/policy.yaml" "$TC_MODE_OPT" "$TC_MODE"
transfer
check_transfer gro
e2e_stop_agent
[ "$TC_MODE" = tc ] || exit 0

# ---- auto: no native XDP on the namespace's lo, so tc, saying why ------
ns_spawn "$NS_RX" "$SLUICE" -v run --config "$WORK/policy.yaml" --iface lo \
	--pin-root "$PIN_ROOT" --mode auto --max-keys 1024 >"$WORK/auto.log" 2>&1
AGENT_PID=$SPAWNED_PID
e2e_wait_start "$WORK/auto.log"
grep -q "event=attach_fallback iface=lo from=native to=tc err=" "$WORK/auto.log" ||
	e2e_fail "auto: no attach_fallback line"
grep -q "event=start iface=lo mode=tc " "$WORK/auto.log" || e2e_fail "auto: did not start in tc mode"
e2e_stop_agent
in_ns "$NS_RX" "$SLUICE" detach --pin-root "$PIN_ROOT" --iface lo
echo "ok: auto on lo: tc, with the reason native failed"
echo "test_tc: all checks passed"
