#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make bench-banapi: the ban lists at #29's scale (docs/bans.md).
#
#   - The local API's operations per second: `sluice run --ban-socket` on a
#     veth in a network namespace, loaded by sluice-banapi-load with 1, 4
#     and 16 connections at once (each one request at a time, kept alive),
#     API_N bans of distinct addresses per run, the median of ROUNDS runs;
#     first without stress-ng, then with both CPUs busy (stress-ng --cpu
#     2 for the whole row), then once more with LIST_N entries already in
#     the API's list (a state that large is written every 0.5 s).
#   - A LIST_N-entry list replace (`sluice ban --list --file`): its wall
#     time, and the packets of a source in both the old and the new list
#     that got through while it ran (PPS of them, through the veth).
#
# The agent and the clients run at SCHED_FIFO (e2e_realtime), as the rest
# of make bench does: other tasks of a shared machine would otherwise set
# the figures; stress-ng runs at normal priority. The figures are printed,
# not checked: tests/e2e/test_banlists.sh checks what they do. Usage: bench/banapi.sh <build-dir>. Needs root; tests/e2e/lib.sh's
# EXIT trap removes the namespaces, the agent, stress-ng and the pins.
BUILD=${1:?usage: bench/banapi.sh <build-dir>}
E2E_ID=${E2E_ID:-b$$}
SLUICE=$BUILD/sluice
FLOOD=$BUILD/sluice-flood
source "$(dirname "$0")/../tests/e2e/lib.sh"

LOAD=$BUILD/sluice-banapi-load
SINK=$BUILD/sluice-sink
API_N=${API_N:-20000} # bans per run
ROUNDS=${ROUNDS:-3}
CONNS="1 4 16"
LIST_N=100000 # #29's bulk list
MAX_BANS=$((3 * LIST_N)) # LIST_N and the runs on it, then two lists of LIST_N
STRESS_S=600 # stress-ng's own bound, should this script die first
PORT=9000
PPS=4000 # the staying source's packets per second during the replace
STAY=10.202.0.1

e2e_require
e2e_realtime
for b in "$LOAD" "$SINK"; do [ -x "$b" ] || e2e_fail "build first: $b"; done
command -v stress-ng >/dev/null || e2e_fail "stress-ng is missing (tools/deps.sh)"
e2e_topology

printf 'policies:\n  - name: other\n    match: { proto: udp, dst_port: 9999 }\n    rate: 100/s\n    burst: 100\n' \
	>"$WORK/policy.yaml"
SOCK=$WORK/ban.sock
e2e_start_agent "$WORK/policy.yaml" --max-bans "$MAX_BANS" --ban-socket "$SOCK" --ban-socket-group 0

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

NEXT=0 # the next run's first address: 10.64.0.0 + NEXT, never reused
next_addr() { echo "10.$((64 + NEXT / 65536)).$((NEXT / 256 % 256)).$((NEXT % 256))"; }
# ops CONNS: OPS, the median ops/s of ROUNDS runs of API_N bans on CONNS connections.
ops() {
	local r out all=""
	for ((r = 0; r < ROUNDS; r++)); do
		out=$("$LOAD" "$SOCK" "$API_N" "$(next_addr)" bench 1h "$1") || e2e_fail "load: $out"
		NEXT=$((NEXT + API_N))
		all+="${out##*ops_per_s=}"$'\n'
	done
	OPS=$(printf '%s' "$all" | median)
}

STRESS_PID=
stress_start() {
	chrt -o 0 stress-ng --cpu 2 --timeout "$STRESS_S" >/dev/null 2>&1 &
	STRESS_PID=$!
	_pids+=("$STRESS_PID")
	sleep 1
}
stress_stop() {
	kill -TERM "$STRESS_PID"
	wait "$STRESS_PID" || true # stress-ng's status after SIGTERM
}

# unban_bench: empty the API's list (the command waits for the API's lock).
unban_bench() {
	"$SLUICE" unban --pin-root "$PIN_ROOT" --state-dir "$WORK/state" --list bench >/dev/null ||
		e2e_fail "unban --list bench failed"
}
declare -A idle busy big
for c in $CONNS; do ops "$c" && idle[$c]=$OPS; done
unban_bench
stress_start
for c in $CONNS; do ops "$c" && busy[$c]=$OPS; done
stress_stop
unban_bench
# LIST_N entries in the list, then the same runs.
"$LOAD" "$SOCK" "$LIST_N" "$(next_addr)" bench 1h 16 >/dev/null || e2e_fail "filling the list failed"
NEXT=$((NEXT + LIST_N))
for c in $CONNS; do ops "$c" && big[$c]=$OPS; done
unban_bench

# ---- the replace ------------------------------------------------------------------
# Two lists of LIST_N /32s that share half their entries, and $STAY in both.
awk -v n=$((LIST_N - 1)) 'BEGIN { for (i = 0; i < n; i++)
	printf "10.%d.%d.%d ; a\n", 128 + int(i / 65536), int(i / 256) % 256, i % 256 }' >"$WORK/a.txt"
awk -v n=$((LIST_N - 1)) -v h=$((LIST_N / 2)) 'BEGIN { for (i = h; i < n + h; i++)
	printf "10.%d.%d.%d ; b\n", 128 + int(i / 65536), int(i / 256) % 256, i % 256 }' >"$WORK/b.txt"
echo "$STAY" | tee -a "$WORK/a.txt" >>"$WORK/b.txt"
ban_list() { "$SLUICE" ban --pin-root "$PIN_ROOT" --state-dir "$WORK/state" --list drop --file "$1"; }
now_ns() { date +%s%N; }
# replace FILE: one replace while $STAY sends; its wall time into MS, and
# how many of $STAY's packets got through into THROUGH.
replace() {
	local t0 t1 rec=$WORK/rec.$1.rec sink_pid flood_pid out
	ns_spawn "$NS_RX" "$SINK" record --port "$PORT" --out "$rec" --duration-ms 60000 >"$rec.log"
	sink_pid=$SPAWNED_PID
	until grep -q '^ready' "$rec.log"; do sleep 0.02; done
	ns_spawn "$NS_TX" "$FLOOD" --iface "$VETH_TX" --dst-mac "$RX_MAC" --proto udp --dport "$PORT" \
		--src "$STAY" --dst "$RX4" --pps "$PPS" --count $((PPS * 10)) --duration-ms 10000 >/dev/null
	flood_pid=$SPAWNED_PID
	sleep 0.5
	t0=$(now_ns)
	out=$(ban_list "$WORK/$1.txt") || e2e_fail "ban --list: $out"
	t1=$(now_ns)
	kill -TERM "$flood_pid" 2>/dev/null || true # it may have sent its count
	wait "$flood_pid" || true
	sleep 0.2
	kill -TERM "$sink_pid"
	wait "$sink_pid" || e2e_fail "the sink exited with status $?"
	MS=$(((t1 - t0) / 1000000))
	THROUGH=$(awk -v s="$STAY" '$2 == s { n++ } END { print n + 0 }' "$rec")
}
# $STAY first on its own, so that it is banned before the flood starts.
echo "$STAY" >"$WORK/stay.txt"
ban_list "$WORK/stay.txt" >/dev/null || e2e_fail "ban --list $STAY failed"
replace a
fresh_ms=$MS fresh_through=$THROUGH
replace b
half_ms=$MS half_through=$THROUGH
e2e_stop_agent

printf 'sluice bench-banapi: the local API (%d bans a run, median of %d runs) and a %d-entry list\n\n' \
	"$API_N" "$ROUNDS" "$LIST_N"
printf '  %-44s' "local API, ops/s, connections:"
for c in $CONNS; do printf ' %8s' "$c"; done
printf '\n  %-44s' "no stress-ng, empty list"
for c in $CONNS; do printf ' %8d' "${idle[$c]}"; done
printf '\n  %-44s' "stress-ng --cpu 2, empty list"
for c in $CONNS; do printf ' %8d' "${busy[$c]}"; done
printf '\n  %-44s' "no stress-ng, list of $LIST_N"
for c in $CONNS; do printf ' %8d' "${big[$c]}"; done
printf '\n\n  %-44s %8s %8s\n' "list replace, $PPS pkt/s from a kept source" "ms" "passed"
printf '  %-44s %8d %8d\n' "$LIST_N new entries" "$fresh_ms" "$fresh_through"
printf '  %-44s %8d %8d\n' "$LIST_N entries, half of them new" "$half_ms" "$half_through"
