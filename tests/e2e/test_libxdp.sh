#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Sharing the interface through libxdp (#13). sluice and Debian's real
# xdp-filter (xdp-tools) are programs of one libxdp dispatcher on the
# receiving veth, loaded in both orders. In each order:
#   - sluice enforces: exactly its burst of a 1/min policy, and burst +
#     rate·t of a 200/s one (lib.sh's e2e_admitted bounds);
#   - xdp-filter still drops the port it lists (none arrive), and passes
#     what sluice admits on other ports (all arrive): sluice chains on PASS;
#   - enforcement survives `kill -9` of the agent (the dispatcher is pinned);
#   - `sluice detach` removes sluice only: xdp-filter stays, still dropping.
# First, an interface holding a program not attached through libxdp is
# refused, naming the program and its id, and nothing is left pinned.
#
# A kernel that refuses libxdp's dispatcher (its freplace programs; the
# Firecracker 6.18 CI runs on) gets what is true there instead: libxdp
# attaches sluice as a lone program, which enforces exactly its burst;
# xdp-filter, loaded after it, is refused (libxdp cannot add a program to a
# lone one) and sluice still enforces; `sluice detach` leaves the hook
# empty. The sharing checks themselves run in the kernel matrix
# (tests/kernel/matrix.sh), which boots Debian 12's 6.1 under QEMU and
# fails unless this test passed there with them.
source "$(dirname "$0")/lib.sh"
e2e_require
command -v xdp-filter >/dev/null || e2e_skip "no xdp-filter (apt-get install xdp-tools)"
PASS_OBJ=$ROOT/build/bench/pass.bpf.o
[ -r "$PASS_OBJ" ] || e2e_fail "build first: $PASS_OBJ (make test-e2e builds it)"
e2e_realtime
e2e_topology

BURST=10  # slow: at 1/min nothing refills during the test
SENT=30   # per exact check
BLOCKED=9999 # the port xdp-filter drops
FREE=7000    # a port neither limits
PRIO=5       # DISPATCH_PRIORITY_DEFAULT, printed by status
PORT=9190    # the agent's /metrics, on the namespace's own loopback

cleanup() {
	local rc=$?
	set +e
	in_ns "$NS_RX" xdp-filter unload "$VETH_RX" 2>/dev/null
	(exit "$rc")
	e2e_cleanup
}
trap cleanup EXIT

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: slow
    match: { proto: udp, dst_port: 5353 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/min
    burst: $BURST
  - name: rated
    match: { proto: udp, dst_port: 8001 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 200/s
    burst: 50
YAML
e2e_count_setup slow "udp dport 5353" rated "udp dport 8001" \
	blocked "udp dport $BLOCKED" free "udp dport $FREE"

src_n=0
# send COUNTER PORT [N]: SENT packets from source N, by default one never
# used before; sets GOT (what arrived) and SRC_N (the source's number).
send() {
	local before
	src_n=$((src_n + 1))
	SRC_N=${3:-$src_n}
	before=$(e2e_count "$1")
	e2e_flood --proto udp --dport "$2" --src "10.200.2.$SRC_N" --dst "$RX4" --count "$SENT" \
		--pps 1000 >/dev/null
	GOT=$(($(e2e_count "$1") - before))
}

filter_load() {
	in_ns "$NS_RX" xdp-filter load --mode native "$VETH_RX"
	in_ns "$NS_RX" xdp-filter port --proto udp "$BLOCKED"
}

# The agent's sluice_attach_info series, over bash's /dev/tcp.
attach_info() {
	in_ns "$NS_RX" bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT &&
		printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && cat <&3" |
		grep '^sluice_attach_info{'
}

# The programs in the dispatcher, as xdp-loader lists them.
programs() {
	in_ns "$NS_RX" xdp-loader status "$VETH_RX"
}

# attached_as LABEL STATUS METRIC: `sluice status` matches STATUS (a grep
# pattern), and the sluice_attach_info series' labels end with METRIC.
attached_as() {
	local status
	status=$(in_ns "$NS_RX" "$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX")
	grep -q "$2" <<<"$status" || e2e_fail "$1: status does not say how it is attached: $status"
	e2e_equal "$1: the metric says so too" "$(attach_info)" \
		"sluice_attach_info{iface=\"$VETH_RX\",mode=\"native\"$3} 1"
}

# spend_burst LABEL: a new source gets exactly the 1/min policy's burst;
# sets SPENT_SRC, the source: at 1/min its burst stays spent.
spend_burst() {
	send slow 5353
	e2e_equal "$1: sluice admits exactly the burst" "$GOT" "$BURST"
	SPENT_SRC=$SRC_N
}

# both_enforce ORDER: sluice limits, xdp-filter drops, both in one dispatcher.
both_enforce() {
	local progs
	progs=$(programs)
	echo "$progs"
	grep -Eq "=> +$PRIO +sluice_xdp .*XDP_PASS" <<<"$progs" ||
		e2e_fail "$1: sluice_xdp at priority $PRIO, chaining on XDP_PASS, is not in the dispatcher"
	grep -q "xdpfilt_" <<<"$progs" || e2e_fail "$1: xdp-filter is not in the dispatcher"
	attached_as "$1" "native mode (libxdp dispatcher, priority $PRIO)" ",xdp_priority=\"$PRIO\""
	spend_burst "$1"
	e2e_send rated 8001
	e2e_admitted "$1: sluice admits burst + rate·t" 50 200
	send blocked "$BLOCKED"
	e2e_equal "$1: xdp-filter drops its port" "$GOT" 0
	send free "$FREE"
	e2e_equal "$1: what both pass arrives" "$GOT" "$SENT"
}

# survives_kill ORDER: the agent killed, the dispatcher keeps both programs.
survives_kill() {
	kill -KILL "$AGENT_PID"
	wait "$AGENT_PID" 2>/dev/null || :
	send slow 5353
	e2e_equal "$1, agent killed: sluice still admits exactly the burst" \
		"$GOT" "$BURST"
	send blocked "$BLOCKED"
	e2e_equal "$1, agent killed: xdp-filter still drops" "$GOT" 0
}

# detach_leaves_filter ORDER: sluice detached, xdp-filter alone, still dropping.
detach_leaves_filter() {
	local progs
	in_ns "$NS_RX" "$SLUICE" detach --pin-root "$PIN_ROOT" --iface "$VETH_RX"
	progs=$(programs)
	if grep -q sluice_xdp <<<"$progs"; then
		e2e_fail "$1: sluice_xdp still attached after detach: $progs"
	fi
	grep -q "xdpfilt_" <<<"$progs" || e2e_fail "$1: detach removed xdp-filter too: $progs"
	send slow 5353
	e2e_equal "$1, sluice detached: nothing limits" "$GOT" "$SENT"
	send blocked "$BLOCKED"
	e2e_equal "$1, sluice detached: xdp-filter still drops" "$GOT" 0
	in_ns "$NS_RX" xdp-filter unload "$VETH_RX"
}

# lone: the kernel refuses the dispatcher, so libxdp attaches sluice alone.
# sluice enforces, xdp-filter cannot join it, `sluice detach` empties the hook.
lone() {
	local progs rc=0 out filter_dir=/sys/fs/bpf/xdp-filter had_dir=0
	e2e_start_agent "$WORK/policy.yaml" --xdp-share --metrics "127.0.0.1:$PORT"
	progs=$(programs)
	echo "$progs"
	grep -Eq "^$VETH_RX +sluice_xdp +native " <<<"$progs" ||
		e2e_fail "lone: sluice_xdp is not the interface's one program"
	if grep -q xdp_dispatcher <<<"$progs"; then
		e2e_fail "lone: a dispatcher is attached after all"
	fi
	attached_as lone "^$VETH_RX: native mode, generation" "" # alone: no dispatcher, no priority
	spend_burst lone
	send free "$FREE"
	e2e_equal "lone: what sluice does not limit arrives" "$GOT" "$SENT"

	# xdp-filter cannot join a lone program; a refused load leaves its
	# (empty) pin directory behind, which is removed if this test made it.
	[ ! -d "$filter_dir" ] || had_dir=1
	out=$(in_ns "$NS_RX" xdp-filter load --mode native "$VETH_RX" 2>&1) || rc=$?
	((had_dir)) || rmdir "$filter_dir/programs" "$filter_dir" 2>/dev/null || :
	((rc != 0)) || e2e_fail "lone: xdp-filter loaded beside a lone sluice: $out"
	want="Existing program is not using a dispatcher, can't replace"
	grep -qF "$want" <<<"$out" || e2e_fail "lone: expected '$want' from xdp-filter in: $out"
	echo "ok: lone: xdp-filter is refused (exit status $rc): $(grep -F "$want" <<<"$out")"
	progs=$(programs)
	grep -Eq "^$VETH_RX +sluice_xdp +native " <<<"$progs" ||
		e2e_fail "lone: the refused xdp-filter load changed the hook: $progs"
	send slow 5353 "$SPENT_SRC"
	e2e_equal "lone, xdp-filter refused: a spent source still gets nothing" "$GOT" 0

	e2e_stop_agent
	in_ns "$NS_RX" "$SLUICE" detach --pin-root "$PIN_ROOT" --iface "$VETH_RX"
	grep -q "<No XDP program loaded!>" <<<"$(programs)" ||
		e2e_fail "lone: a program is still attached after detach: $(programs)"
	echo "ok: lone: sluice detach leaves no XDP program"
	send slow 5353 "$SPENT_SRC"
	e2e_equal "lone, sluice detached: nothing limits" "$GOT" "$SENT"
}

# 0. A program not attached through libxdp: refused, by name and id.
# bpftool, not ip (whose loader leaves directories in /sys/fs/bpf).
mkdir -p "$PIN_ROOT"
bpftool prog load "$PASS_OBJ" "$PIN_ROOT/pass"
in_ns "$NS_RX" bpftool net attach xdpdrv pinned "$PIN_ROOT/pass" dev "$VETH_RX"
rm "$PIN_ROOT/pass" # the attachment holds it
id=$(in_ns "$NS_RX" ip -d link show dev "$VETH_RX" | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p')
rc=0
out=$(in_ns "$NS_RX" timeout "$E2E_START_S" "$SLUICE" run --config "$WORK/policy.yaml" --iface "$VETH_RX" \
	--pin-root "$PIN_ROOT" --mode native --xdp-share 2>&1) || rc=$?
e2e_equal "a non-libxdp program: exit status" "$rc" 1
want="it holds program 'bench_pass' (id $id)" # the rest says why (docs/errors.md)
grep -qF "$want" <<<"$out" || e2e_fail "a non-libxdp program: expected '$want' in: $out"
echo "ok: a non-libxdp program: $(grep -F "$want" <<<"$out")"
e2e_equal "a non-libxdp program: left attached" \
	"$(in_ns "$NS_RX" ip -d link show dev "$VETH_RX" | grep -c "prog/xdp id $id ")" 1
in_ns "$NS_RX" bpftool net detach xdpdrv dev "$VETH_RX"
[ ! -e "$PIN_ROOT/$VETH_RX" ] || e2e_fail "a non-libxdp program: the refused start left pins"
echo "ok: a non-libxdp program: the refused start left nothing pinned"

# Does this kernel load libxdp's dispatcher? (Firecracker's 6.18 refuses
# its freplace programs with EPERM, and libxdp falls back to one program.)
filter_load
if ! programs | grep -q xdp_dispatcher; then
	in_ns "$NS_RX" xdp-filter unload "$VETH_RX"
	lone
	echo "test_libxdp: lone-program checks passed; this kernel refuses libxdp's" \
		"dispatcher, so the sharing checks run in the kernel matrix" \
		"(tests/kernel/matrix.sh) on Debian 12's 6.1"
	exit 0
fi

# 1. xdp-filter first, then sluice.
e2e_start_agent "$WORK/policy.yaml" --xdp-share --metrics "127.0.0.1:$PORT"
both_enforce "filter first"
survives_kill "filter first"
detach_leaves_filter "filter first"

# 2. sluice first, then xdp-filter.
e2e_start_agent "$WORK/policy.yaml" --xdp-share --metrics "127.0.0.1:$PORT"
filter_load
both_enforce "sluice first"
# A restarted agent replaces its program in the dispatcher, keeping one.
e2e_stop_agent
e2e_start_agent "$WORK/policy.yaml" --xdp-share
e2e_equal "sluice first, agent restarted: one sluice program" \
	"$(programs | grep -c sluice_xdp)" 1
send slow 5353 "$SPENT_SRC"
e2e_equal "sluice first, agent restarted: key state kept (a spent source gets nothing)" "$GOT" 0
survives_kill "sluice first"
detach_leaves_filter "sluice first"
echo "test_libxdp: all checks passed"
