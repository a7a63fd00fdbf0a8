#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# sluice run --watch-config with the policy in a Kubernetes ConfigMap
# volume, the kubelet's update emulated exactly: the files in a new
# "..<timestamp>" directory, a "..data_tmp" symlink to it renamed over
# "..data" (rename(2), atomic), the old directory removed; policy.yaml is
# a symlink to ..data/policy.yaml throughout and never written itself.
#   - a valid change is applied within WATCH_BOUND_MS (2 s), measured from
#     the rename to the new generation in /metrics, and enforced;
#   - a bad one is refused: the old policy keeps enforcing (traffic counted
#     by nftables), /readyz answers 503 and says why, the metrics count it
#     (sluice_reloads_total{result="rejected"}, sluice_reload_last_ok 0);
#   - a good one after it makes the agent ready again;
#   - plain editors: a file renamed over policy.yaml, and one written in
#     place, are both applied; a change to another file in the directory
#     is not a reload;
#   - /healthz: a FIFO renamed over policy.yaml makes the reload block in
#     open(2), so the main loop stalls; /healthz answers 503 no sooner than
#     agent.timeout (STALL_MS) after the rename, and 200 again once a
#     writer lets the reload through;
#   - a stream of swaps closer together than the debounce reloads within
#     WATCH_BOUND_MS all the same.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
e2e_topology

PORT=9190
WATCH_BOUND_MS=2000 # issue #14: a changed ConfigMap is applied within 2 s
QUIET_S=1	    # how long nothing must happen after an unrelated change (5 debounces)
STALL_MS=1000	    # agent.timeout below: /healthz's limit
STALL_SLACK_MS=2000 # and at most this later: debounce, tick, reload, poll
SENT=20
STREAM_S=4 # swaps every 50 ms, for longer than WATCH_BOUND_MS
CM=$WORK/configmap
mkdir "$CM"

policy() { # burst [rate]: a valid policy file, or with rate a bad one
	cat <<YAML
agent: { heartbeat: 100ms, timeout: ${STALL_MS}ms }
policies:
  - name: per-source
    match: { proto: udp, dst_port: 7000 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: ${2:-1/min}
    burst: $1
YAML
}

_ts=0
# kubelet_swap BURST [RATE]: the ConfigMap's new contents, as the kubelet writes them.
kubelet_swap() {
	local old new
	_ts=$((_ts + 1))
	new=..2026_12_01_20_00_0$_ts.00000000$_ts
	old=$(readlink "$CM/..data" || true)
	mkdir "$CM/$new"
	policy "$@" >"$CM/$new/policy.yaml"
	ln -s "$new" "$CM/..data_tmp"
	SWAP_US=${EPOCHREALTIME/./}
	mv -T "$CM/..data_tmp" "$CM/..data"
	[ -z "$old" ] || rm -rf "${CM:?}/$old"
}
kubelet_swap 5
ln -s ..data/policy.yaml "$CM/policy.yaml"

# GET PATH over the agent's namespace's loopback, with bash's /dev/tcp: the whole response.
http_get() {
	in_ns "$NS_RX" bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT &&
		printf 'GET $1 HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && cat <&3"
}
http_code() { http_get "$1" | awk 'NR == 1 { print $2 }'; }
http_body() { http_get "$1" | sed '1,/^\r$/d'; }
metric() { http_body /metrics | K=$1 awk '$1 == ENVIRON["K"] { print $2 }'; }

# wait_reloads RESULT N: until sluice_reloads_total{result=RESULT} is N
# (at most WATCH_BOUND_MS after the swap); sets APPLIED_MS.
wait_reloads() {
	local key="sluice_reloads_total{result=\"$1\"}" now_us
	while :; do
		now_us=${EPOCHREALTIME/./}
		APPLIED_MS=$(((now_us - SWAP_US) / 1000))
		[ "$(metric "$key")" = "$2" ] && break
		((APPLIED_MS <= WATCH_BOUND_MS)) ||
			e2e_fail "$key did not become $2 within $WATCH_BOUND_MS ms (is $(metric "$key"))"
		sleep 0.02
	done
	e2e_within "$key = $2 after the change, ms" "$APPLIED_MS" 0 "$WATCH_BOUND_MS"
}

e2e_count_setup limited "udp dport 7000"
# check LABEL WANT: SENT packets from a new source, exactly WANT arrive.
check() {
	e2e_send_n "$SENT"
	e2e_equal "$1 (of $SENT)" "$GOT" "$2"
}
_n=0
e2e_send_n() {
	local before
	_n=$((_n + 1))
	before=$(e2e_count limited)
	e2e_flood --proto udp --dport 7000 --src "10.200.1.$_n" --dst "$RX4" --count "$1" \
		--pps 1000 >/dev/null
	GOT=$(($(e2e_count limited) - before))
}

e2e_start_agent "$CM/policy.yaml" --watch-config --metrics "127.0.0.1:$PORT"
grep -q "event=watch dir=$CM/ file=policy.yaml" "$AGENT_LOG" || e2e_fail "no watch: $(cat "$AGENT_LOG")"
e2e_equal "/readyz once started" "$(http_code /readyz)" 200
echo "ok: /readyz says: $(http_body /readyz)"
e2e_equal "/healthz" "$(http_code /healthz)" 200
echo "ok: /healthz says: $(http_body /healthz)"
check "burst 5 enforced" 5

kubelet_swap 8
wait_reloads ok 1
echo "ok: kubelet swap to burst 8 applied in $APPLIED_MS ms"
check "burst 8 enforced" 8

kubelet_swap 3 100/sek
wait_reloads rejected 1
echo "ok: bad kubelet swap refused in $APPLIED_MS ms"
grep -q "level=warn event=reload_rejected file=$CM/policy.yaml line=6 col=11 field=policies\[0\].rate msg=\"'100/sek' is not a rate" "$AGENT_LOG" ||
	e2e_fail "the error was not logged: $(tail -3 "$AGENT_LOG")"
grep -q "level=warn event=reload_rejected file=$CM/policy.yaml generation=2 msg=\"still enforcing generation 2\"" "$AGENT_LOG" ||
	e2e_fail "the rejection was not logged: $(tail -3 "$AGENT_LOG")"
e2e_equal "/readyz after a refused change" "$(http_code /readyz)" 503
http_body /readyz | grep -q "^not ready: the last reload was rejected; still enforcing generation 2$" ||
	e2e_fail "/readyz did not say why: $(http_body /readyz)"
echo "ok: /readyz says: $(http_body /readyz)"
e2e_equal "sluice_reload_last_ok after a refused change" "$(metric sluice_reload_last_ok)" 0
e2e_equal "/healthz after a refused change" "$(http_code /healthz)" 200
check "the old policy (burst 8) still enforcing" 8

kubelet_swap 3
wait_reloads ok 2
e2e_equal "/readyz after a good change" "$(http_code /readyz)" 200
e2e_equal "sluice_reload_last_ok after a good change" "$(metric sluice_reload_last_ok)" 1
check "burst 3 enforced" 3

# Plain editors, on a plain file: a new file renamed over it, then a write in place.
rm "$CM/policy.yaml"
policy 4 >"$CM/policy.yaml.new"
SWAP_US=${EPOCHREALTIME/./}
mv "$CM/policy.yaml.new" "$CM/policy.yaml"
wait_reloads ok 3
check "renamed over: burst 4 enforced" 4
SWAP_US=${EPOCHREALTIME/./}
policy 6 >"$CM/policy.yaml"
wait_reloads ok 4
check "written in place: burst 6 enforced" 6

# Another file in the directory is no reason to reload.
echo other >"$CM/other.yaml"
sleep "$QUIET_S"
e2e_equal "reloads after another file changed" "$(metric 'sluice_reloads_total{result="ok"}')" 4
# A reload that blocks: the main loop stalls, /healthz says so after agent.timeout.
mkfifo "$WORK/stall.fifo"
ln "$WORK/stall.fifo" "$CM/policy.yaml.fifo"
SWAP_US=${EPOCHREALTIME/./}
mv "$CM/policy.yaml.fifo" "$CM/policy.yaml"
while [ "$(http_code /healthz)" != 503 ]; do
	STALLED_MS=$(((${EPOCHREALTIME/./} - SWAP_US) / 1000))
	((STALLED_MS <= STALL_MS + STALL_SLACK_MS)) || e2e_fail "/healthz still 200 after $STALLED_MS ms"
	sleep 0.02
done
STALLED_MS=$(((${EPOCHREALTIME/./} - SWAP_US) / 1000))
e2e_within "/healthz 503 after the stall began, ms" "$STALLED_MS" "$STALL_MS" \
	$((STALL_MS + STALL_SLACK_MS))
http_body /healthz | grep -q "^stalled: the main loop's last progress was .* s ago (limit 1.0 s)$" ||
	e2e_fail "/healthz did not say why: $(http_body /healthz)"
echo "ok: /healthz says: $(http_body /healthz)"
# A plain file in its place first (the watch queues it), then the FIFO's writer.
policy 7 >"$CM/policy.yaml.new"
mv "$CM/policy.yaml.new" "$CM/policy.yaml"
policy 2 >"$WORK/stall.fifo"
SWAP_US=${EPOCHREALTIME/./}
wait_reloads ok 6
e2e_equal "/healthz after the stall" "$(http_code /healthz)" 200
check "the plain file after the FIFO: burst 7 enforced" 7

# A stream of swaps, each sooner than the debounce after the one before:
# the first reload comes within WATCH_BOUND_MS of the stream's start
# (WATCH_MAX_DELAY_NS, 1 s), while the stream still runs.
SWAP_US=${EPOCHREALTIME/./}
ln -sfn ..data/policy.yaml "$CM/policy.yaml" # the ConfigMap's layout again
wait_reloads ok 7
(

	_ts=100
	end=$((SECONDS + STREAM_S))
	while ((SECONDS < end)); do
		kubelet_swap 9
		sleep 0.05
	done
) &
stream=$!
_pids+=("$stream")
SWAP_US=${EPOCHREALTIME/./}
wait_reloads ok 8
kill -0 "$stream" 2>/dev/null || e2e_fail "the stream ended before the reload"
wait "$stream"
sleep "$QUIET_S" # the last swap applied
check "burst 9 enforced after the stream" 9
e2e_stop_agent
echo "test_config_watch: all checks passed"
