#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# An upgrade across an ABI change, under traffic (#13). The previous ABI's
# sluice is built from git history (the newest commit whose
# SLUICE_ABI_VERSION differs from this tree's), runs on the veth, and a
# flood runs through what follows: the old agent stops; two starts of this
# build fail, one before the program is swapped (its key-state map cannot
# be created) and one after (a second interface's pin directory is
# squatted), and each leaves
# the old pins and program as they were; then this build starts on the old
# pins and replaces them. Over the whole flood what arrived is at most
# burst + rate·t, no policy entered a fail mode, a key at its limit before
# is at its limit after, and the counters went on from where they were.
# Then a failed start of this build on its own pins changes nothing. Last,
# the same in tc mode, without the flood: a failed start after the swap
# puts the old filter program back, and the upgrade carries the key state.
source "$(dirname "$0")/lib.sh"
e2e_require
command -v jq >/dev/null || e2e_fail "no jq (tools/deps.sh installs it)"
command -v bpftool >/dev/null || e2e_fail "no bpftool (tools/deps.sh installs it)"
git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 ||
	e2e_fail "'$ROOT' is not a git clone: the previous ABI is built from its history"
e2e_realtime
e2e_topology

# --- the previous ABI's build ---------------------------------------------------------------
abi_of() { # REV (or "tree"): its SLUICE_ABI_VERSION
	local text
	if [ "$1" = tree ]; then
		text=$(cat "$ROOT/include/sluice/abi.h")
	else
		text=$(git -C "$ROOT" show "$1:include/sluice/abi.h")
	fi
	sed -n 's/^#define SLUICE_ABI_VERSION \([0-9][0-9]*\)$/\1/p' <<<"$text"
}
ABI=$(abi_of tree)
# HEAD when the tree bumped the ABI and has not committed it; else the
# parent of the commit that last changed the version line.
OLD_REV=$(git -C "$ROOT" rev-parse HEAD)
if [ "$(abi_of "$OLD_REV")" = "$ABI" ]; then
	bump=$(git -C "$ROOT" log -1 --format=%H -G'^#define SLUICE_ABI_VERSION ' -- include/sluice/abi.h)
	[ -n "$bump" ] || e2e_fail "no commit changed SLUICE_ABI_VERSION: is the clone shallow?"
	OLD_REV=$(git -C "$ROOT" rev-parse "$bump^")
fi
OLD_ABI=$(abi_of "$OLD_REV")
{ [ -n "$OLD_ABI" ] && [ "$OLD_ABI" != "$ABI" ]; } || e2e_fail "no previous ABI at $OLD_REV"

# Built once per revision under the build directory; a rerun reuses it.
OLD_DIR=$(dirname "$SLUICE")/upgrade/$OLD_REV
OLD_SLUICE=$OLD_DIR/build/sluice
if [ ! -x "$OLD_SLUICE" ]; then
	mkdir -p "$(dirname "$OLD_DIR")"
	tmp=$(mktemp -d "$OLD_DIR.XXXXXX")
	echo "building ABI $OLD_ABI ($OLD_REV) in $OLD_DIR"
	git -C "$ROOT" archive "$OLD_REV" | tar -x -C "$tmp"
	make -s -C "$tmp" -j2 build/sluice >"$WORK/old-build.log" 2>&1 || {
		tail -20 "$WORK/old-build.log" >&2
		rm -rf "$tmp"
		e2e_fail "cannot build ABI $OLD_ABI from $OLD_REV"
	}
	mv -T "$tmp" "$OLD_DIR" 2>/dev/null || rm -rf "$tmp" # another run built it first
fi
echo "previous ABI: $OLD_ABI at $OLD_REV; this tree: ABI $ABI"

# --- the scene ------------------------------------------------------------------------------
RATE=200 # per second: the flood's policy
BURST=100
SLOW_BURST=10 # at 1/min nothing refills during the test
SLOW_SENT=30
FLOOD_SRC=10.200.0.20
SLOW_SRC=10.200.0.21
TC_SRC=10.200.0.22 # the slow policy's key in the tc-mode upgrade
FLOOD_PPS=2000
FLOOD_S=12 # long enough for two failed starts and the upgrade, on a busy machine
cat >"$WORK/policy.yaml" <<YAML
agent: { heartbeat: 100ms, timeout: 10s }
policies:
  - name: flood
    match: { proto: udp, dst_port: 5353 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: $RATE/s
    burst: $BURST
  - name: slow
    match: { proto: udp, dst_port: 5354 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/min
    burst: $SLOW_BURST
YAML
e2e_count_setup flood "ip saddr $FLOOD_SRC udp dport 5353" slow "ip saddr $SLOW_SRC udp dport 5354" \
	slow_tc "ip saddr $TC_SRC udp dport 5354"
IFACE_DIR=$PIN_ROOT/$VETH_RX

send_slow() { # [SRC COUNTER]: SLOW_SENT packets of the slow policy; prints how many arrived
	local src=${1:-$SLOW_SRC} counter=${2:-slow} before
	before=$(e2e_count "$counter")
	e2e_flood --proto udp --dport 5354 --src "$src" --dst "$RX4" --count "$SLOW_SENT" \
		--pps 1000 >/dev/null
	echo $(($(e2e_count "$counter") - before))
}

status_json() { # sluice status --json of the veth (this build, whichever release pinned)
	e2e_status --iface "$VETH_RX" --json
}

counters() { # POLICY: "passed dropped" of its counters
	status_json | jq -r --arg p "$1" '.policies[] | select(.name == $p) |
		"\(.passed_pkts) \(.dropped_pkts)"'
}

pins() { # every pin under the interface's directory, sorted, on one line
	find "$IFACE_DIR" | sort | tr '\n' ' '
}

link_of() { # PIN: "link-id prog-id" of the pinned link
	bpftool -j link show pinned "$1" | jq -r '"\(.id) \(.prog_id)"'
}

tc_prog() { # the id of the program of the veth's clsact ingress filter
	in_ns "$NS_RX" bpftool -j net show dev "$VETH_RX" |
		jq -r '[.. | objects | select(.kind? == "clsact/ingress") | .id] | join(" ")'
}

MODE=native
running() { # what runs on the veth: "link-id prog-id" natively, the filter's program in tc mode
	if [ "$MODE" = tc ]; then tc_prog; else link_of "$LINK_PIN"; fi
}

# A start that must fail: this build with ARGS...; prints nothing, checks
# that it exited non-zero and left the pins and the link's program as they were.
expect_failed_start() {
	local label=$1 log=$WORK/failed.${1// /-}.log rc=0 pins_before running_before
	shift
	pins_before=$(pins)
	running_before=$(running)
	nsenter --net="/run/netns/$NS_RX" "$SLUICE" -v run --config "$WORK/policy.yaml" \
		--iface "$VETH_RX" --pin-root "$PIN_ROOT" --mode "$MODE" "$@" >"$log" 2>&1 || rc=$?
	sed 's/^/  agent: /' "$log"
	[ "$rc" != 0 ] || e2e_fail "$label: the start did not fail"
	e2e_equal "$label: the pins are as they were" "$(pins)" "$pins_before"
	e2e_equal "$label: the same program runs" "$(running)" "$running_before"
}

# --- the previous release --------------------------------------------------------------------
SLUICE=$OLD_SLUICE E2E_NO_STATE_DIR=1 e2e_start_agent "$WORK/policy.yaml"
OLD_PID=$AGENT_PID
if ((OLD_ABI < 8)); then # releases before ABI 8 pinned in the interface's directory
	OLD_SET=$IFACE_DIR
else
	OLD_SET=$IFACE_DIR/abi$OLD_ABI
fi
LINK_PIN=$OLD_SET/link
if [ ! -e "$LINK_PIN" ]; then # seen once in CI: say what there was
	sed 's/^/  previous agent: /' "$AGENT_LOG" >&2
	find "$PIN_ROOT" | sed 's/^/  pin: /' >&2
	in_ns "$NS_RX" ip -d link show dev "$VETH_RX" | sed 's/^/  link: /' >&2
	e2e_fail "the previous release pinned no link at $LINK_PIN"
fi
e2e_equal "previous release: the slow key's burst" "$(send_slow)" "$SLOW_BURST"
e2e_equal "previous release: the slow policy's counters, read by this build" \
	"$(counters slow)" "$SLOW_BURST $((SLOW_SENT - SLOW_BURST))"
read -r OLD_LINK OLD_PROG < <(link_of "$LINK_PIN")

ns_spawn "$NS_TX" "$FLOOD" --iface "$VETH_TX" --dst-mac "$RX_MAC" --proto udp --dport 5353 \
	--src "$FLOOD_SRC" --dst "$RX4" --pps "$FLOOD_PPS" --count $((FLOOD_PPS * FLOOD_S)) \
	--duration-ms $((2 * FLOOD_S * 1000)) >"$WORK/flood.out"
FLOOD_PID=$SPAWNED_PID
deadline=$((SECONDS + 10))
until (($(e2e_count flood) >= BURST)); do # the key is at its limit: the old program limits it
	((SECONDS < deadline)) || e2e_fail "the flood did not reach the sink within 10 s"
	sleep 0.05
done
read -r _ flood_dropped_before < <(counters flood)

AGENT_PID=$OLD_PID
e2e_stop_agent

# --- two starts that fail ---------------------------------------------------------------------
# Before the swap: a key-state map of 2^29 keys is more buckets than the
# kernel's hash map takes (E2BIG).
expect_failed_start "no map" --max-keys $((1 << 29))
# After the swap: a second interface whose pin directory is squatted (group
# and others may write it, so the loader refuses it): the first interface
# has been swapped by then, and must be swapped back.
SQUAT_IFACE=${E2E_ID:0:11}sq0
in_ns "$NS_RX" ip link add "$SQUAT_IFACE" type veth peer name "${E2E_ID:0:11}sq1"
mkdir -p "$PIN_ROOT/$SQUAT_IFACE"
chmod 0777 "$PIN_ROOT/$SQUAT_IFACE"
expect_swapped_back() { # a start that fails after it swapped the program: it swaps it back
	expect_failed_start "squatted" --iface "$SQUAT_IFACE"
	grep -q 'event=reattach' "$WORK/failed.squatted.log" ||
		e2e_fail "squatted: the start failed before it swapped the program"
	grep -q 'event=rollback.*enforcement=previous' "$WORK/failed.squatted.log" ||
		e2e_fail "squatted: no rollback logged"
}
expect_swapped_back

# --- the upgrade ---------------------------------------------------------------------------------
e2e_start_agent "$WORK/policy.yaml"
kill -0 "$FLOOD_PID" 2>/dev/null || e2e_fail "the flood ended before the upgrade: raise FLOOD_S"
deadline=$((SECONDS + 10)) # the start's commit follows its event=start
until grep -q 'event=upgrade' "$AGENT_LOG"; do
	((SECONDS < deadline)) || e2e_fail "no upgrade logged within 10 s"
	sleep 0.05
done
grep "event=upgrade" "$AGENT_LOG"
grep -q "event=upgrade .*from_abi=$OLD_ABI to_abi=$ABI .*key_state=carried" "$AGENT_LOG" ||
	e2e_fail "the upgrade did not carry the key state"
[ -e "$IFACE_DIR/abi$ABI/sluice_ctl" ] || e2e_fail "no pins in $IFACE_DIR/abi$ABI"
[ -e "$LINK_PIN" ] && e2e_fail "the previous release's link pin is left: $LINK_PIN"
[ -e "$OLD_SET/sluice_ctl" ] && e2e_fail "the previous release's maps are left in $OLD_SET"
[ -e "$IFACE_DIR/abi$ABI-new" ] && e2e_fail "a staging directory is left"
read -r link prog < <(link_of "$IFACE_DIR/abi$ABI/link")
e2e_equal "the program was swapped on the same link" "$link" "$OLD_LINK"
[ "$prog" != "$OLD_PROG" ] || e2e_fail "the link still runs the previous program ($prog)"

wait "$FLOOD_PID" || e2e_fail "the flood failed"
read -r sent FLOOD_MS < <(sed -n 's/.*sent=\([0-9]*\) elapsed_ms=\([0-9]*\).*/\1 \2/p' "$WORK/flood.out")
e2e_equal "the flood sent" "$sent" $((FLOOD_PPS * FLOOD_S))
GOT=$(e2e_count flood)
e2e_admitted "the flood across the upgrade (burst + rate·t over ${FLOOD_MS} ms)" "$BURST" "$RATE"

# --- after ---------------------------------------------------------------------------------------
e2e_equal "the slow policy's counters went on" "$(counters slow)" \
	"$SLOW_BURST $((SLOW_SENT - SLOW_BURST))"
e2e_equal "the slow key is still at its limit" "$(send_slow)" 0
e2e_equal "the slow policy's drops went on" "$(counters slow)" \
	"$SLOW_BURST $((2 * SLOW_SENT - SLOW_BURST))"
read -r _ dropped < <(counters flood)
((dropped > flood_dropped_before)) ||
	e2e_fail "the flood's drops did not go on: $dropped after, $flood_dropped_before before"
json=$(status_json)
e2e_equal "every policy in its normal mode" \
	"$(jq -r '[.policies[].state] | unique | join(",")' <<<"$json")" normal
e2e_equal "packets decided while the agent was lost" "$(jq -r .totals.agent_lost_pkts <<<"$json")" 0
"$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" >/dev/null ||
	e2e_fail "sluice status is not healthy after the upgrade (exit $?)"
grep -E 'event=fail_mode' "$AGENT_LOG" && e2e_fail "a policy entered a fail mode"

# A failed start on this build's own pins (a resize is refused) changes nothing.
e2e_stop_agent
LINK_PIN=$IFACE_DIR/abi$ABI/link
expect_failed_start "resize" --max-keys 131072

# --- tc mode: the filter's program is swapped, and swapped back by a failed start ----------------
"$SLUICE" detach --pin-root "$PIN_ROOT" --iface "$VETH_RX"
MODE=tc
SLUICE=$OLD_SLUICE E2E_NO_STATE_DIR=1 e2e_start_agent "$WORK/policy.yaml" --mode tc
e2e_equal "tc, previous release: the slow key's burst" "$(send_slow "$TC_SRC" slow_tc)" \
	"$SLOW_BURST"
old_prog=$(tc_prog)
[ -n "$old_prog" ] || e2e_fail "tc, previous release: no filter on $VETH_RX"
e2e_stop_agent
expect_swapped_back
e2e_start_agent "$WORK/policy.yaml" --mode tc
deadline=$((SECONDS + 10))
until grep -q 'event=upgrade' "$AGENT_LOG"; do
	((SECONDS < deadline)) || e2e_fail "tc: no upgrade logged within 10 s"
	sleep 0.05
done
grep -q "event=upgrade .*key_state=carried" "$AGENT_LOG" || e2e_fail "tc: the key state was not carried"
prog=$(tc_prog)
{ [ -n "$prog" ] && [ "$prog" != "$old_prog" ]; } ||
	e2e_fail "tc: the filter runs '$prog', not a new program"
[ -e "$IFACE_DIR/abi$ABI/link" ] && e2e_fail "tc: a link was pinned"
e2e_equal "tc: the slow key is still at its limit" "$(send_slow "$TC_SRC" slow_tc)" 0
echo "test_upgrade: all checks passed"
