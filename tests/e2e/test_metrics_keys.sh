#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A scrape costs O(policies), not O(keys) (#12, item 7: each scrape walked
# the whole key map, 0.45 s of CPU at 10^6 keys, for anyone who reaches the
# port). The agent's tick counts the keys every METRICS_KEYS_NS and a
# scrape reads those counts. With 10^6 keys in the agent's sluice_state
# (batched updates from sluice-fill-keys), the agent's metrics thread makes
# exactly as many bpf() calls per scrape as with none (strace), and the
# page shows every key. The metrics thread's CPU per scrape is printed as a
# figure (docs/metrics.md), never asserted.
source "$(dirname "$0")/lib.sh"
e2e_require
FILL_KEYS=${FILL_KEYS:-$ROOT/build/tests/e2e/sluice-fill-keys}
[ -x "$FILL_KEYS" ] || e2e_fail "build first: $FILL_KEYS"
command -v strace >/dev/null || e2e_fail "no strace (tools/deps.sh installs it)"
e2e_topology

PORT=9190
KEYS=1000000
MAX_KEYS=1048576 # 2^20: room for KEYS
SCRAPES=20
KEYS_NS_S=10 # METRICS_KEYS_NS (user/agent/metrics.h): how old the counts may be
FIRST_SRC=10.64.0.0
POLICY=per-source

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: $POLICY
    match: { proto: udp, dst_port: 5353 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
  - name: per-net
    match: { proto: tcp, dst_port: 80 }
    key: { ipv4_prefix: 24, ipv6_prefix: 64 }
    rate: 100/s
    burst: 50
YAML

scrape() {
	in_ns "$NS_RX" bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT &&
		printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && cat <&3"
}

# The metric NAME{iface=...} of one scrape.
metric() {
	local page
	page=$(scrape) || e2e_fail "scrape failed"
	sed -n "s/^$1{iface=\"$VETH_RX\"} \([0-9]*\)\r\{0,1\}$/\1/p" <<<"$page"
}

# The agent's threads other than its main one: the metrics server's (no
# store is configured, so there is no store thread).
metrics_tids() {
	local t
	for t in /proc/"$AGENT_PID"/task/*; do
		[ "${t##*/}" = "$AGENT_PID" ] || echo "${t##*/}"
	done
}

# CPU time (ns) of the metrics threads so far: the tick's key count runs on
# the main thread and is not in it.
metrics_cpu_ns() {
	local t sum=0 ns
	for t in $(metrics_tids); do
		read -r ns _ <"/proc/$AGENT_PID/task/$t/schedstat"
		sum=$((sum + ns))
	done
	echo "$sum"
}

# SCRAPES scrapes; prints the metrics threads' mean CPU per scrape in us.
scrape_cpu_us() {
	local i c0
	c0=$(metrics_cpu_ns)
	for ((i = 0; i < SCRAPES; i++)); do
		scrape >/dev/null || e2e_fail "scrape $i failed"
	done
	echo $((($(metrics_cpu_ns) - c0) / SCRAPES / 1000))
}

# Whether every thread of the agent has a tracer.
traced() {
	! awk '$1 == "TracerPid:" && $2 == 0 { found = 1 } END { exit !found }' \
		/proc/"$AGENT_PID"/task/*/status
}

# SCRAPES scrapes under strace; prints the bpf() calls the metrics threads
# made in them (every thread is traced; the main thread's are left out).
scrape_bpf_calls() {
	local i trace=$WORK/strace.$1 pid rc
	strace -f -qq -e trace=bpf -o "$trace" -p "$AGENT_PID" &
	pid=$!
	_pids+=("$pid")
	until traced; do
		kill -0 "$pid" 2>/dev/null || e2e_fail "strace exited before it attached"
		sleep 0.05
	done
	for ((i = 0; i < SCRAPES; i++)); do
		scrape >/dev/null || e2e_fail "scrape $i failed"
	done
	kill -INT "$pid"
	rc=0
	wait "$pid" || rc=$?
	# strace 6.1 detaches on SIGINT and exits with its status, 128 + SIGINT.
	[ "$rc" = $((128 + 2)) ] || e2e_fail "strace exited with status $rc"
	grep -c -E "^($(metrics_tids | paste -sd '|')) +bpf\(" "$trace"
}

e2e_start_agent "$WORK/policy.yaml" --max-keys "$MAX_KEYS" --metrics "127.0.0.1:$PORT"
id=$(e2e_status --iface "$VETH_RX" --json | jq -r ".policies[] | select(.name == \"$POLICY\") | .id")
e2e_equal "keys before the fill" "$(metric sluice_keys)" 0
cpu0_us=$(scrape_cpu_us)
calls0=$(scrape_bpf_calls none)

start_ms=$(($(date +%s%N) / 1000000))
filled=$("$FILL_KEYS" "$(e2e_set_dir "$VETH_RX")/sluice_state" "$id" "$FIRST_SRC" "$KEYS")
echo "filled $filled keys in $(($(date +%s%N) / 1000000 - start_ms)) ms"
deadline=$((SECONDS + 6 * KEYS_NS_S)) # a walk of 10^6 keys on a loaded machine takes seconds
until [ "$(metric sluice_keys)" = "$KEYS" ]; do
	((SECONDS < deadline)) ||
		e2e_fail "sluice_keys is '$(metric sluice_keys)' after $((6 * KEYS_NS_S)) s, expected $KEYS:" \
			"$(scrape | grep '^sluice_keys')"
	sleep 0.5
done
e2e_equal "keys a scrape shows" "$(metric sluice_keys)" "$KEYS"
cpu1_us=$(scrape_cpu_us)
calls1=$(scrape_bpf_calls million)
e2e_equal "bpf() calls of $SCRAPES scrapes at $KEYS keys (as at 0)" "$calls1" "$calls0"
echo "bpf() calls per scrape: $((calls0 / SCRAPES))"
echo "metrics thread CPU per scrape (mean of $SCRAPES): ${cpu0_us} us at 0 keys, ${cpu1_us} us at $KEYS keys"
e2e_stop_agent
echo "test_metrics_keys: all checks passed"
