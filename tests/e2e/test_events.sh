#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Sampled drop events on a veth, with a bounded flood (docs/events.md):
#   - `sluice events`, started before the flood and stopped by SIGTERM,
#     streams one JSON line per sampled drop, each naming the policy, the
#     reason, the source and destination with their ports; their number is
#     the policy's drops (sluice status) over the sample's N, within one
#     per CPU (each CPU counts down on its own); a last line counts what
#     was sent, lost and capped, and nothing was lost; /metrics counts as
#     many sent (sluice_events_sent_total) and none lost;
#   - every line is valid against docs/schema/events.json;
#   - a ban's drops are sampled by the top-level `events:`, with no policy;
#     --reason keeps only those;
#   - `sluice dump --pcap FILE --count N` writes N frames that `tcpdump -r`
#     reads back as the flood's datagrams, and `--pcap -` pipes into it;
#   - bad arguments are refused with exit status 2.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_topology

VALIDATE=$ROOT/tests/e2e/json_schema.py
SCHEMA=$ROOT/docs/schema/events.json
PORT=9000
SPORT=40000 # sluice-flood's default source port
SAMPLE=10
FLOOD_N=3000
FLOOD_PPS=20000
ABUSER=10.200.1.7
BANNED=10.200.1.9
BAN_N=20
DUMP_N=5
NCPU=$(nproc)

cat >"$WORK/policy.yaml" <<YAML
events: { sample: 1/1 }
policies:
  - name: flood-udp
    match: { proto: udp, dst_port: $PORT }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 100/s
    burst: 10
    events: { sample: 1/$SAMPLE }
YAML

METRICS_PORT=9193
e2e_start_agent "$WORK/policy.yaml" --metrics "127.0.0.1:$METRICS_PORT"
# metric NAME: its value on /metrics (the agent's namespace, over loopback).
metric() {
	in_ns "$NS_RX" bash -c "exec 3<>/dev/tcp/127.0.0.1/$METRICS_PORT &&
		printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && cat <&3" |
		K="$1{iface=\"$VETH_RX\"}" awk '$1 == ENVIRON["K"] { print $2 }'
}
events() { "$SLUICE" events --pin-root "$PIN_ROOT" --iface "$VETH_RX" "$@"; }
dropped() {
	"$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json |
		python3 -c 'import json,sys; o=json.loads(sys.stdin.readline());
print(next(p["dropped_pkts"] for p in o["policies"] if p["name"] == "flood-udp"))'
}
# field FILE KEY: KEY of every event line of FILE, one per line.
field() {
	python3 -c 'import json,sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o["kind"] == "event":
        print(o[sys.argv[2]])' "$1" "$2"
}
counts() { grep '"kind":"counts"' "$1" | tail -n 1; }

# ---- bad input ---------------------------------------------------------------
bad() { # EXPECTED-TEXT ARGS...: exit 2, the message names the argument
	local want=$1 out rc=0
	shift
	out=$("$SLUICE" "$@" --pin-root "$PIN_ROOT" 2>&1) || rc=$?
	e2e_equal "exit status of sluice $*" "$rc" 2
	grep -qF -- "$want" <<<"$out" || e2e_fail "sluice $*: no '$want' in: $out"
}
bad "--reason 'rate': expected limit, ban, unparsed, fragment or fail" events --reason rate
bad "--count '0' is not a count" events --count 0
bad "--for '5x': expected a duration such as 10s" events --for 5x
bad "which file? give --pcap <file>|-" dump
bad "unknown option '--pcap'" events --pcap x

# ---- a flood, streamed --------------------------------------------------------
ns_spawn "$NS_RX" "$SLUICE" events --pin-root "$PIN_ROOT" --iface "$VETH_RX" --for 60s \
	>"$WORK/events.json" 2>"$WORK/events.err"
EVENTS_PID=$SPAWNED_PID
sleep 0.3 # the reader opens the ring; events sent before it are read too
before=$(dropped)
read -r sent _ < <(e2e_flood --proto udp --dport "$PORT" --src "$ABUSER" --dst "$RX4" \
	--pps "$FLOOD_PPS" --count "$FLOOD_N")
e2e_equal "datagrams sent" "$sent" "$FLOOD_N"
drops=$(($(dropped) - before))
want=$((drops / SAMPLE))
deadline=$((SECONDS + 10))
until (($(grep -c '"kind":"event"' "$WORK/events.json") >= want - NCPU)); do
	((SECONDS < deadline)) || e2e_fail "events: fewer than $((want - NCPU)) lines within 10 s"
	sleep 0.1
done
sleep 0.3 # what is still in flight
kill -TERM "$EVENTS_PID"
wait "$EVENTS_PID" || e2e_fail "sluice events exited with status $? on SIGTERM"
[ ! -s "$WORK/events.err" ] || e2e_fail "sluice events wrote to stderr: $(cat "$WORK/events.err")"
n=$(grep -c '"kind":"event"' "$WORK/events.json")
e2e_within "events of $drops drops sampled 1/$SAMPLE on $NCPU CPUs" "$n" $((want - NCPU)) "$want"
for k in policy:flood-udp reason:limit src:$ABUSER dst:$RX4 proto:udp src_port:$SPORT \
	dst_port:$PORT iface:$VETH_RX; do
	e2e_equal "every event's ${k%%:*}" "$(field "$WORK/events.json" "${k%%:*}" | sort -u)" "${k#*:}"
done
last=$(counts "$WORK/events.json")
grep -q "\"events\":$n,\"sent\":$n,\"lost\":0,\"capped\":0}" <<<"$last" ||
	e2e_fail "the last counts line: $last (expected $n events, $n sent, none lost)"
python3 "$VALIDATE" "$SCHEMA" <"$WORK/events.json" || e2e_fail "events: not valid against $SCHEMA"
e2e_equal "sluice_events_sent_total" "$(metric sluice_events_sent_total)" "$n"
e2e_equal "sluice_events_lost_total" "$(metric sluice_events_lost_total)" 0

# ---- a ban's drops: no policy, reason ban -------------------------------------
in_ns "$NS_RX" "$SLUICE" ban --pin-root "$PIN_ROOT" --iface "$VETH_RX" "$BANNED" >/dev/null
e2e_flood --proto udp --dport "$PORT" --src "$BANNED" --dst "$RX4" --count "$BAN_N" >/dev/null
e2e_flood --proto udp --dport "$PORT" --src "$ABUSER" --dst "$RX4" --count "$BAN_N" >/dev/null
events --reason ban --for 1s >"$WORK/ban.json"
e2e_equal "ban events (sampled 1/1)" "$(grep -c '"kind":"event"' "$WORK/ban.json")" "$BAN_N"
e2e_equal "ban events' reason" "$(field "$WORK/ban.json" reason | sort -u)" ban
e2e_equal "ban events' policy" "$(field "$WORK/ban.json" policy | sort -u)" None
e2e_equal "ban events' source" "$(field "$WORK/ban.json" src | sort -u)" "$BANNED"
python3 "$VALIDATE" "$SCHEMA" <"$WORK/ban.json" || e2e_fail "ban events: not valid against $SCHEMA"

# ---- a pcap, read back by tcpdump ------------------------------------------------
ns_spawn "$NS_RX" "$SLUICE" dump --pin-root "$PIN_ROOT" --iface "$VETH_RX" \
	--pcap "$WORK/drops.pcap" --count "$DUMP_N" --reason limit --for 30s 2>"$WORK/dump.err"
DUMP_PID=$SPAWNED_PID
sleep 0.3
e2e_flood --proto udp --dport "$PORT" --src "$ABUSER" --dst "$RX4" --pps "$FLOOD_PPS" \
	--count "$FLOOD_N" >/dev/null
wait "$DUMP_PID" || e2e_fail "sluice dump exited with status $?"
grep -q "^sluice: dump: $DUMP_N frames written; 0 events lost" "$WORK/dump.err" ||
	e2e_fail "dump's summary: $(cat "$WORK/dump.err")"
tcpdump -nn -r "$WORK/drops.pcap" >"$WORK/tcpdump.txt" 2>"$WORK/tcpdump.err" ||
	e2e_fail "tcpdump -r: $(cat "$WORK/tcpdump.err")"
e2e_equal "frames tcpdump read" "$(wc -l <"$WORK/tcpdump.txt")" "$DUMP_N"
e2e_equal "frames of the flood" \
	"$(grep -c "IP $ABUSER.$SPORT > $RX4.$PORT: UDP" "$WORK/tcpdump.txt")" "$DUMP_N"
ns_spawn "$NS_RX" bash -c "'$SLUICE' dump --pin-root '$PIN_ROOT' --iface '$VETH_RX' --pcap - \
	--count 1 --for 30s 2>/dev/null | tcpdump -nn -r - >'$WORK/pipe.txt' 2>/dev/null"
PIPE_PID=$SPAWNED_PID
sleep 0.3
e2e_flood --proto udp --dport "$PORT" --src "$ABUSER" --dst "$RX4" --count "$FLOOD_N" \
	--pps "$FLOOD_PPS" >/dev/null
wait "$PIPE_PID" || e2e_fail "dump --pcap - | tcpdump -r -: exit status $?"
e2e_equal "frames through a pipe" "$(grep -c "IP $ABUSER.$SPORT > $RX4.$PORT: UDP" "$WORK/pipe.txt")" 1

e2e_stop_agent
echo "PASS: test_events"
