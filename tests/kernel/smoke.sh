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

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: smoke
    match: { proto: udp, dst_port: $PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
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
policies=${status%%\"totals\"*}
passed=$(echo "$policies" | grep -o '"passed_pkts":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
dropped=$(echo "$policies" | grep -o '"dropped_pkts":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
e2e_equal "sluice passed + dropped = sent" $((passed + dropped)) "$sent_total"
e2e_equal "sluice passed = sink counted" "$passed" "$(wc -l <"$WORK/rec")"
e2e_stop_agent
echo "smoke: all checks passed"
