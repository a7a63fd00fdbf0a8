#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A store that lies or stalls (issue #12). A fake Redis
# (tests/store/fake_redis.py, a proxy in front of a real redis-server)
# passes everything through until the agent holds a lease of a hot key,
# then answers every script call with one bad shape: grants of 2^62, a
# bulk that never ends, an array of 2^31 - 1 elements, -OOM, -NOPERM,
# -MOVED, wrong types, or silence. For each shape, with a fresh agent:
#
#   - the store is in fault (the agent's "event=store_state ... to=fault")
#     within FAULT_BOUND_MS = 2 × (timeout + sync interval) of the switch,
#     or, for grants of 2^62, which only lease replies carry, within the
#     key's next rate-lease renewal and that (LEASE_LIE_BOUND_MS);
#   - the policy is in its on_store_error mode, closed, in `sluice status`,
#     and a flood gets at most what the last honest lease held (burst);
#   - `sluice reload` answers, and SIGTERM ends the agent, within 1 s each
#     (the policy still closed after the reload, but for grants of 2^62);
#   - the agent's VmRSS stays below RSS_BOUND_KB.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
command -v redis-server >/dev/null || e2e_fail "redis-server is not installed (tools/deps.sh)"
command -v python3 >/dev/null || e2e_fail "python3 is not installed"
e2e_topology
e2e_start_redis

FAKE=$ROOT/tests/store/fake_redis.py
FAKE_SOCK=$WORK/fake.sock
# The fleet tests' store timeout (lib.sh): an honest round trip here goes
# through the Python proxy too, and once took over 20 ms before any lie.
TIMEOUT_MS=$E2E_STORE_TIMEOUT_MS
INTERVAL_MS=100
FAULT_BOUND_MS=$((2 * (TIMEOUT_MS + INTERVAL_MS)))
# Grants of 2^62 are in lease replies alone, and a key one node holds at
# its fair share renews its rate lease once the lease is RS_RENEW_SYNCS
# intervals old (user/budget/rateshare.h), at the first full sync past
# it: the lie is seen at that renewal, within an interval more and the
# bound above.
RS_RENEW_SYNCS=20
LEASE_LIE_BOUND_MS=$(((RS_RENEW_SYNCS + 1) * INTERVAL_MS + FAULT_BOUND_MS))
ANSWER_BOUND_MS=1000
# Measured at the end of each shape: 20.4–20.7 MB, the endless and
# huge-array shapes included (before #12, 20 MB on the wire grew the agent
# to 362 MB); a round trip may cost its reply budget, 64 KiB plus what
# each call can be answered with (budget/wire.h), and nothing more.
RSS_BOUND_KB=$((32 * 1024))
RATE=10
BURST=10
SHAPES=${SHAPES:-huge endless array oom noperm moved wrongtype stall}
# The flood that makes the key hot outlasts its first leases (a lump
# lease, the layout switch, a rate lease and its renewal: about 2 s), the
# switch and the lie's bound: 6 s at 200/s.
FLOOD_COUNT=1200

cat >"$WORK/policy.yaml" <<YAML
node: { name: liar-test }
store:
  redis: unix://$FAKE_SOCK
  timeout: ${TIMEOUT_MS}ms
  sync_interval: ${INTERVAL_MS}ms
  hold_down: 1s
  fleet: lies-$E2E_ID
policies:
  - name: lied
    scope: cluster
    on_store_error: closed
    match: { proto: udp, dst_port: 8201 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
YAML
e2e_count_setup lied "udp dport 8201"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# The fake, in pass mode; sets FAKE_PID and FAKE_LOG.
start_fake() {
	FAKE_LOG=$WORK/fake.$1.log
	echo pass >"$WORK/mode"
	rm -f "$FAKE_SOCK"
	python3 "$FAKE" --listen "$FAKE_SOCK" --upstream "$REDIS_SOCK" \
		--mode-file "$WORK/mode" >"$FAKE_LOG" 2>&1 &
	FAKE_PID=$!
	_pids+=("$FAKE_PID")
	wait_log "$FAKE_LOG" "listening on" 10
}

stop_fake() {
	kill -TERM "$FAKE_PID"
	wait "$FAKE_PID" || e2e_fail "the fake Redis exited with status $?"
}

# wait_log FILE PATTERN SECONDS: poll until FILE has a line matching PATTERN.
wait_log() {
	local deadline=$((SECONDS + $3))
	until grep -q "$2" "$1" 2>/dev/null; do
		((SECONDS < deadline)) || { cat "$1" >&2; e2e_fail "no '$2' in $1 within $3 s"; }
		sleep 0.01
	done
}

# The ms of the agent log's first line matching PATTERN (its ts=, UTC).
log_ms() {
	local ts
	ts=$(grep -m1 "$2" "$1" | sed -n 's/^ts=\([^ ]*\)Z .*/\1/p')
	[ -n "$ts" ] || e2e_fail "no '$2' in $1"
	echo $(($(date -u -d "$ts" +%s%N) / 1000000))
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

check_shape() {
	local shape=$1 flood_pid switch_ms fault_ms t0 rss bound
	start_fake "$shape"
	e2e_start_agent "$WORK/policy.yaml"
	# A key made hot: leases pass through the fake before it turns.
	in_ns "$NS_TX" "$FLOOD" --iface "$VETH_TX" --dst-mac "$RX_MAC" --proto udp --dport 8201 \
		--src 10.200.2.1 --dst "$RX4" --pps 200 --count $FLOOD_COUNT >/dev/null &
	flood_pid=$!
	_pids+=("$flood_pid")
	wait_log "$FAKE_LOG" "lease n=3" 10
	if grep "event=store_state" "$AGENT_LOG" >&2; then
		e2e_fail "$shape: the store was in fault before the switch (above)"
	fi
	e2e_equal "$shape: normal before the switch" "$(e2e_state lied)" normal

	echo "$shape" >"$WORK/mode"
	kill -USR1 "$FAKE_PID"
	wait_log "$FAKE_LOG" "mode=$shape" 5
	switch_ms=$(($(sed -n "s/^mode=$shape at_ns=\([0-9]*\)/\1/p" "$FAKE_LOG") / 1000000))
	wait_log "$AGENT_LOG" "event=store_state .*to=fault" 5
	fault_ms=$(($(log_ms "$AGENT_LOG" "event=store_state .*to=fault") - switch_ms))
	bound=$FAULT_BOUND_MS
	[ "$shape" != huge ] || bound=$LEASE_LIE_BOUND_MS
	e2e_within "$shape: store fault after the switch, ms" "$fault_ms" 0 "$bound"
	grep -m1 "event=store_state .*to=fault" "$AGENT_LOG"
	e2e_wait_state lied closed
	wait "$flood_pid"

	e2e_send lied 8201
	e2e_within "$shape: closed: what the last honest lease held, at most" "$GOT" 0 "$BURST"

	t0=$(now_ms)
	"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" >/dev/null ||
		e2e_fail "$shape: sluice reload failed"
	e2e_within "$shape: sluice reload answered, ms" $(($(now_ms) - t0)) 0 "$ANSWER_BOUND_MS"
	# Still in fault through the reload. Not so for grants of 2^62: they
	# come only in lease replies, and with the flood over no key calls for
	# a lease; the honest beats bring the store back after hold_down.
	[ "$shape" = huge ] || e2e_wait_state lied closed

	rss=$(rss_kb "$AGENT_PID")
	e2e_within "$shape: agent VmRSS, kB" "$rss" 1 "$RSS_BOUND_KB"
	t0=$(now_ms)
	e2e_stop_agent
	e2e_within "$shape: SIGTERM to exit, ms" $(($(now_ms) - t0)) 0 "$ANSWER_BOUND_MS"
	stop_fake
}

for shape in $SHAPES; do
	check_shape "$shape"
done
echo "test_store_lies: all checks passed"
