#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make bench-agent: what the agent costs. `sluice run` with 1000 policies
# on a veth in a network namespace: its CPU time per second while idle,
# then with 10^6 tracked keys; the wall time of `sluice status` (which
# counts every key with batched map reads) at 10^6 keys; and the wall time
# of `sluice reload` end to end (validate, signal, compile, apply, answer)
# with 1000 policies, with no keys and with 10^6. The keys are made by
# real frames: sluice-bench-gen floods 10^6 sources once each through the
# veth (NAPI on the sending CPU, so no frame is lost on the way).
#
# The agent serves /metrics here, so its tick counts the keys every 10 s
# (METRICS_KEYS_NS): the "with 10^6 keys" CPU figure includes that walk,
# and a scrape, which reads those counts, costs the same with or without
# keys. `sluice status` still counts the keys itself.
#
# Usage: bench/agent.sh <build-dir>. Needs root. tests/e2e/lib.sh's EXIT
# trap removes the namespaces, the agent and its pins.
BUILD=${1:?usage: bench/agent.sh <build-dir>}
E2E_ID=${E2E_ID:-a$$}
SLUICE=$BUILD/sluice
FLOOD=$BUILD/sluice-flood
source "$(dirname "$0")/../tests/e2e/lib.sh"

GEN=$BUILD/bench/sluice-bench-gen
POLICIES=1000
KEYS=1000000
MAX_KEYS=1048576 # the default of sluice run
IDLE_SECONDS=${IDLE:-10}
RELOADS=5
STATUS_RUNS=3
DPORT=9
PORT_FIRST=10000 # the other policies: one port each
SRC_FIRST=10.0.0.0

e2e_require
[ -x "$GEN" ] || e2e_fail "build first: $GEN"
e2e_topology

# A file of $POLICIES policies; $1 is the rate of the second, so two files
# differ in exactly one policy (which a reload then re-creates).
write_policies() {
	local i
	printf 'policies:\n  - name: flood-per-source\n    match: { proto: udp, dst_port: %d }\n' "$DPORT"
	printf '    key: { ipv4_prefix: 32, ipv6_prefix: 128 }\n    rate: 10/s\n    burst: 10\n'
	for ((i = 1; i < POLICIES; i++)); do
		printf '  - name: port-%d\n    match: { proto: %s, dst_port: %d }\n' \
			$((PORT_FIRST + i)) "$( ((i % 2)) && echo tcp || echo udp)" $((PORT_FIRST + i))
		printf '    key: { ipv4_prefix: 24, ipv6_prefix: 64 }\n    rate: %s\n    burst: 100\n' \
			"$( ((i == 1)) && echo "$1" || echo 100/s)"
	done
}

cpu_ns() { # CPU time of every thread of process $1 so far
	cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

now_ns() { date +%s%N; }

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

agent_cpu_per_s() { # CPU ns per wall second over $IDLE_SECONDS
	local c0 t0 c1 t1
	c0=$(cpu_ns "$AGENT_PID")
	t0=$(now_ns)
	sleep "$IDLE_SECONDS"
	c1=$(cpu_ns "$AGENT_PID")
	t1=$(now_ns)
	echo $(((c1 - c0) * 1000000000 / (t1 - t0)))
}

reload_ms() { # median wall time of $RELOADS reloads, alternating the two files
	local i t0
	for ((i = 0; i < RELOADS; i++)); do
		if ((i % 2)); then cp "$WORK/a.yaml" "$WORK/live.yaml"; else cp "$WORK/b.yaml" "$WORK/live.yaml"; fi
		t0=$(now_ns)
		"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" >/dev/null ||
			e2e_fail "reload $i failed"
		echo $((($(now_ns) - t0) / 1000000))
	done | median
}

status_json() {
	"$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json
}

# The agent's CPU per /metrics scrape: $SCRAPES scrapes over loopback in
# its namespace (#12: a scrape reads the tick's key counts, not the key map).
SCRAPES=20
METRICS_PORT=9190
scrape_cpu_us() {
	local i c0
	c0=$(cpu_ns "$AGENT_PID")
	for ((i = 0; i < SCRAPES; i++)); do
		in_ns "$NS_RX" bash -c "exec 3<>/dev/tcp/127.0.0.1/$METRICS_PORT &&
			printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3" >/dev/null ||
			e2e_fail "scrape $i failed"
	done
	echo $((($(cpu_ns "$AGENT_PID") - c0) / SCRAPES / 1000))
}

status_ms() {
	local i t0
	for ((i = 0; i < STATUS_RUNS; i++)); do
		t0=$(now_ns)
		status_json >/dev/null || e2e_fail "status failed"
		echo $((($(now_ns) - t0) / 1000000))
	done | median
}

write_policies 100/s >"$WORK/a.yaml"
write_policies 200/s >"$WORK/b.yaml"
cp "$WORK/a.yaml" "$WORK/live.yaml"
e2e_start_agent "$WORK/live.yaml" --max-keys "$MAX_KEYS" --metrics "$METRICS_PORT"
start_ms=$(($(cpu_ns "$AGENT_PID") / 1000000))

idle_ns=$(agent_cpu_per_s)
reload0_ms=$(reload_ms)
status0_ms=$(status_ms)
scrape0_us=$(scrape_cpu_us)

out=$(nsenter --net="/run/netns/$NS_TX" "$GEN" --obj "$BUILD/bench/gen.bpf.o" \
	--iface "$VETH_TX" --dst-mac "$RX_MAC" --src "$SRC_FIRST" --dst "$RX4" --dport "$DPORT" \
	--count "$KEYS" --sources "$KEYS")
keys=$(status_json | grep -o '"keys":[0-9]*' | awk -F: 'NR == 1 { print $2 }')
((keys >= KEYS)) || e2e_fail "expected $KEYS tracked keys after the flood ($out), found $keys"

busy_ns=$(agent_cpu_per_s)
status1_ms=$(status_ms)
scrape1_us=$(scrape_cpu_us)
reload1_ms=$(reload_ms)
e2e_stop_agent

# shellcheck disable=SC2016 # the backquotes are Markdown for the report, not a command
printf 'sluice bench-agent: `sluice run` with %d policies, sluice_state of %d entries\n\n' \
	"$POLICIES" "$MAX_KEYS"
printf '  %-48s %12s %12s\n' "" "no keys" "$keys keys"
printf '  %-48s %9d ms\n' "agent start-up CPU (load, attach, 1000 policies)" "$start_ms"
printf '  %-48s %9.3f ms %9.3f ms\n' "agent CPU per second, no traffic" \
	"$(awk -v n="$idle_ns" 'BEGIN { print n / 1e6 }')" "$(awk -v n="$busy_ns" 'BEGIN { print n / 1e6 }')"
printf '  %-48s %9d ms %9d ms\n' "sluice status --json, wall (median of $STATUS_RUNS)" \
	"$status0_ms" "$status1_ms"
printf '  %-48s %9d us %9d us\n' "agent CPU per /metrics scrape (mean of $SCRAPES)" \
	"$scrape0_us" "$scrape1_us"
printf '  %-48s %9d ms %9d ms\n' "sluice reload, $POLICIES policies, wall (median of $RELOADS)" \
	"$reload0_ms" "$reload1_ms"
printf '(each reload changes one policy, whose keys are then purged: a scan of sluice_state)\n'
