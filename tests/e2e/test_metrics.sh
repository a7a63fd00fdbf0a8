#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The Prometheus endpoint of a running agent: per-policy counters equal to
# what `sluice status` reads, and the limiter's own health — store up and
# probe failures, the fail mode each policy is in, reload results —
# changing as the store is paused and a reload is rejected. promtool (Debian's
# prometheus package) checks the page, as served, before and after.
#
# The agent runs on an interface whose name holds '"' and '\' (issue #13):
# every label must carry it escaped, exactly, and `status --json` must
# parse (jq) and give the name back as it is.
source "$(dirname "$0")/lib.sh"
e2e_require
command -v jq >/dev/null || e2e_fail "no jq (tools/deps.sh installs it)"
VETH_RX=$E2E_ID'"q\1'          # as ec"q\1 in the issue; E2E_ID keeps it unique, in 15 bytes
VETH_RX_LABEL=$E2E_ID'\"q\\1' # the same as a Prometheus label value
e2e_realtime
e2e_topology
e2e_start_redis

PORT=9190
cat >"$WORK/policy.yaml" <<YAML
store: { redis: "unix://$REDIS_SOCK", timeout: 20ms, sync_interval: 100ms, hold_down: 1s }
policies:
  - name: lenient
    scope: cluster
    on_store_error: open
    match: { proto: udp, dst_port: 8201 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
YAML
e2e_start_agent "$WORK/policy.yaml" --metrics ":$PORT" # every address

# GET /metrics from namespace NS at address HOST, with bash's /dev/tcp (no client needed).
scrape_at() { # NS HOST
	in_ns "$1" bash -c "exec 3<>/dev/tcp/$2/$PORT &&
		printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && cat <&3"
}
scrape() { # over the agent's namespace's loopback
	scrape_at "$NS_RX" 127.0.0.1
}
metric() { # exact series name with labels -> value (through ENVIRON: awk -v would unescape)
	scrape | K=$1 awk '$1 == ENVIRON["K"] { print $2 }'
}
wait_metric() { # series value: poll up to 5 s
	local deadline=$((SECONDS + 5))
	until [ "$(metric "$1")" = "$2" ]; do
		((SECONDS < deadline)) || e2e_fail "$1 did not become $2 within 5 s (is $(metric "$1"))"
		sleep 0.1
	done
	echo "ok: $1 = $2"
}

# promtool (Debian's prometheus) on the page as served: its parser and its
# lint (HELP and TYPE for every family, _total on counters, units), silent.
promtool_check() { # label
	local out rc=0
	out=$(scrape | sed '1,/^\r$/d' | promtool check metrics 2>&1) || rc=$?
	if [ "$rc" != 0 ] || [ -n "$out" ]; then
		e2e_fail "promtool check metrics ($1), status $rc: $out"
	fi
	echo "ok: promtool check metrics ($1): status 0, no output"
}

# --metrics :PORT serves every address of both families: loopback, and the
# veth's addresses from the sender's namespace.
for at in "$NS_RX 127.0.0.1" "$NS_RX ::1" "$NS_TX $RX4" "$NS_TX $RX6"; do
	read -r ns host <<<"$at"
	page=$(scrape_at "$ns" "$host")
	status_line=${page%%$'\r'*}
	e2e_equal "GET http://$host:$PORT/metrics from $ns" "$status_line" "HTTP/1.1 200 OK"
	grep -q '^Content-Type: text/plain; version=0.0.4' <<<"$page" || e2e_fail "wrong content type"
done

# The build: the binary's version, the ABI of abi.h and the tree's git describe
# (the binary must be built from this tree as it is now: rebuild after an edit).
version=$("$SLUICE" -V)
abi=$(sed -n 's/^#define SLUICE_ABI_VERSION \([0-9]*\)$/\1/p' "$ROOT/include/sluice/abi.h")
revision=
if [ -e "$ROOT/.git" ]; then
	revision=$(git -C "$ROOT" describe --always --dirty)
fi
build="sluice_build_info{version=\"${version#sluice }\",abi_version=\"$abi\",revision=\"$revision\"}"
e2e_equal "$build" "$(metric "$build")" 1

e2e_flood --proto udp --dport 8201 --src 10.200.1.1 --dst "$RX4" --count 100 --pps 1000 >/dev/null
"$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json >"$WORK/status.json"
e2e_equal "status --json: iface, parsed by jq" "$(jq -r .iface "$WORK/status.json")" "$VETH_RX"
passed=$(jq '.policies[] | select(.name == "lenient") | .passed_pkts' "$WORK/status.json")
L="iface=\"$VETH_RX_LABEL\",policy=\"lenient\""
e2e_equal "passed packets in metrics = status" \
	"$(metric "sluice_policy_packets_total{$L,outcome=\"passed\"}")" "$passed"
e2e_equal "dropped packets in metrics" \
	"$(metric "sluice_policy_packets_total{$L,outcome=\"dropped\"}")" $((100 - passed))
wait_metric "sluice_store_up{store=\"unix://$REDIS_SOCK\"}" 1
wait_metric "sluice_policy_fail_mode{$L,mode=\"normal\"}" 1
# The flooded key turned hot: it holds a lease entry, and the agent syncs it.
S="store=\"unix://$REDIS_SOCK\""
wait_metric "sluice_store_hot_keys{$S}" 1
# Its first lease call waits out the layout switch the fleet's first beat
# starts (LAYOUT_SWITCH_SYNCS intervals, user/budget/planner.h): polled.
for m in sluice_store_syncs_total sluice_store_lease_calls_total; do
	deadline=$((SECONDS + 5))
	until v=$(metric "$m{$S}") && ((v > 0)); do
		((SECONDS < deadline)) || e2e_fail "$m is '$v' after 5 s, expected more than 0"
		sleep 0.1
	done
	echo "ok: $m = $v"
done

promtool_check "every family has samples"

kill -STOP "$REDIS_PID"
wait_metric "sluice_store_up{store=\"unix://$REDIS_SOCK\"}" 0
wait_metric "sluice_policy_fail_mode{$L,mode=\"open\"}" 1
failed=$(metric "sluice_store_probes_total{store=\"unix://$REDIS_SOCK\",result=\"failed\"}")
((failed > 0)) || e2e_fail "no failed probe counted while the store is paused"
echo "ok: failed probes counted: $failed"
kill -CONT "$REDIS_PID"
wait_metric "sluice_store_up{store=\"unix://$REDIS_SOCK\"}" 1
wait_metric "sluice_policy_fail_mode{$L,mode=\"normal\"}" 1
e2e_equal "fail-mode transitions: open, then normal" \
	"$(metric sluice_fail_mode_transitions_total)" 2

# A reload keeps the same store's counters: none of them goes back.
P="sluice_store_probes_total{$S"
before=$(metric "$P,result=\"failed\"}") syncs=$(metric "sluice_store_syncs_total{$S}")
"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" >/dev/null ||
	e2e_fail "a reload of the same file failed"
e2e_equal "failed probes after a reload" "$(metric "$P,result=\"failed\"}")" "$before"
after=$(metric "sluice_store_syncs_total{$S}")
((after >= syncs)) || e2e_fail "sluice_store_syncs_total went back from $syncs to $after"
echo "ok: sluice_store_syncs_total from $syncs to $after through the reload"

printf 'policies: [\n' >"$WORK/policy.yaml" # a bad file
"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" 2>/dev/null &&
	e2e_fail "a bad file was accepted"
e2e_equal "rejected reloads" "$(metric 'sluice_reloads_total{result="rejected"}')" 1
promtool_check "after a store fault and a rejected reload"
e2e_stop_agent
echo "test_metrics: all checks passed"
