#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The ban list on a veth, with real traffic (docs/bans.md). A sink in the
# receiving namespace stamps every datagram that got through (kernel
# stamps, CLOCK_MONOTONIC, the clock of the bans' expiry), so times are
# measured against the commands' own returns:
#   - bad arguments are refused, naming the argument, and change nothing;
#   - a ban drops a steady flow within BAN_MS of `sluice ban` returning;
#   - status lists it with its drops, /metrics counts it (sluice_bans,
#     sluice_ban_drops_total);
#   - bans survive kill -9 of the agent, and ban/unban work without one;
#     a new agent reuses the pins and keeps them;
#   - an allowlisted source passes a ban of its prefix; the rest does not;
#   - unban restores the flow;
#   - a ban wider than an IPv4 /8 or an IPv6 /32 is refused without
#     --force, and changes nothing; with it, 0.0.0.0/0 drops every source
#     but the allowlist's;
#   - a ban inside the allowlist is kept, with a note naming the
#     allowlist prefix, and has no effect;
#   - a ban --for 2s ends on time: the flow is back within EXPIRE_TOL_MS of
#     its expiry, never before it; bans shows it expired, ban prunes it;
#   - deploy/fail2ban's action bans and unbans (its own command lines, with
#     fail2ban's tags filled in as fail2ban would; fail2ban is not run);
#   - a full list refuses a ban with the figures, and changes nothing.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
e2e_topology

BPFTOOL=${BPFTOOL:-bpftool}
PORT=9000
PPS=1000
DENY_TTL_MS=100 # SLUICE_DENY_TTL_NS: the longest a cached drop stands
BAN_MS=100         # the issue's bound: a ban drops within 100 ms of the command
FOR_S=2            # the expiring ban
# The coarse clock's lag (2 ticks of 4 ms), a packet's spacing at $PPS (1 ms),
# and scheduling. Measured on this 2-CPU VM: 4 to 9 ms over 10 runs, idle and
# with both CPUs busy (docs/bans.md).
EXPIRE_TOL_MS=50
ALLOWED=10.200.0.99
ALLOWED_NET=10.200.9.0/24
SHADOWED=10.200.9.128/25 # inside $ALLOWED_NET
MAX_BANS=65536 # SLUICE_BAN_ENTRIES

cat >"$WORK/policy.yaml" <<YAML
allow: [$ALLOWED, $ALLOWED_NET]
policies:
  - name: other
    match: { proto: udp, dst_port: 9999 }
    rate: 100/s
    burst: 100
YAML

now_ns() { "$SINK" now; }
ban() { "$SLUICE" ban --pin-root "$PIN_ROOT" --state-dir "$WORK/state" "$@"; }
unban() { "$SLUICE" unban --pin-root "$PIN_ROOT" --state-dir "$WORK/state" "$@"; }
entries() { "$SLUICE" bans --pin-root "$PIN_ROOT" --json | sed -n 's/.*"entries":\([0-9]*\).*/\1/p'; }


METRICS_PORT=9190
e2e_start_agent "$WORK/policy.yaml" --metrics "127.0.0.1:$METRICS_PORT"
# metric NAME: its value on /metrics (the agent's namespace, over loopback).
metric() {
	in_ns "$NS_RX" bash -c "exec 3<>/dev/tcp/127.0.0.1/$METRICS_PORT &&
		printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3 && cat <&3" |
		K="$1{iface=\"$VETH_RX\"}" awk '$1 == ENVIRON["K"] { print $2 }'
}

# ---- bad input ---------------------------------------------------------------
bad() { # EXPECTED-TEXT ARGS...: exit 2, the message names the argument
	local want=$1 out rc=0
	shift
	out=$("$SLUICE" "$@" --pin-root "$PIN_ROOT" --state-dir "$WORK/state" 2>&1) || rc=$?
	e2e_equal "exit status of sluice $*" "$rc" 2
	grep -qF -- "$want" <<<"$out" || e2e_fail "sluice $*: no '$want' in: $out"
}
bad "ban: <addr>|<prefix>: '10.0.0.300'" ban 10.0.0.300
bad "ban: <addr>|<prefix>: '10.0.0.1/33'" ban 10.0.0.1/33
bad "has host bits set (did you mean 10.0.0.0/8?)" ban 10.0.0.1/8
bad "ban: --for: '10x'" ban 10.0.0.1 --for 10x
bad "ban: --for: '6000h' is too long" ban 10.0.0.1 --for 6000h
bad "ban: --reason: 41 characters is too long (at most 39)" ban 10.0.0.1 --reason "$(printf 'x%.0s' {1..41})"
bad "unban: <addr>|<prefix>: 'fd00::g'" unban fd00::g
e2e_equal "bans after bad input" "$(entries)" 0

# ---- a ban drops within BAN_MS of the command --------------------------------
A=10.200.1.1
e2e_sink_start drop
e2e_flood_bg "$A" $((3 * PPS))
sleep 1
t_ret=$(ban "$A" --for 10m --reason e2e-drop >/dev/null && now_ns)
e2e_flood_wait
e2e_sink_stop
last=$(awk -v s="$A" '$2 == s && $1 > m { m = $1 } END { printf "%.0f\n", m }' "$REC")
e2e_within "packets from $A before the ban" "$(e2e_got "$A" 0 "$t_ret")" $((PPS / 2)) $((2 * PPS))
lat_ms=$(((last - t_ret) / 1000000))
echo "measured: last packet delivered $lat_ms ms after 'sluice ban' returned (signed)"
((last - t_ret <= BAN_MS * 1000000)) || e2e_fail "a packet from $A got through $lat_ms ms after the ban"
e2e_equal "packets from $A from $BAN_MS ms after the ban" "$(e2e_got "$A" $((t_ret + BAN_MS * 1000000)))" 0
status=$(e2e_status --iface "$VETH_RX")
grep -q "bans: 1 of $MAX_BANS (0 expired)" <<<"$status" || e2e_fail "status: no ban line: $status"
dropped=$(awk -v s="$A/32" '$1 == s { print $3 }' <<<"$status")
e2e_within "status: packets the ban of $A dropped" "${dropped:-0}" $((PPS / 2)) $((3 * PPS))
e2e_equal "metrics: sluice_bans" "$(metric sluice_bans)" 1
json=$(e2e_status --iface "$VETH_RX" --json)
e2e_equal "status --json: the top ban" "$(jq -r '.bans.top[0] | "\(.prefix) \(.drops_pkts)"' <<<"$json")" \
	"$A/32 $dropped"
json=$("$SLUICE" bans --pin-root "$PIN_ROOT" --json)
e2e_equal "bans --json" "$(jq -r '.bans[0] | "\(.prefix) \(.expired) \(.reason)"' <<<"$json")" \
	"$A/32 false e2e-drop"
# The total counts each drop at once; the ban's own count takes a flow's cached drops at its
# next look (docs/bans.md): it may lag by up to DENY_TTL_MS of the flood on each CPU.
e2e_within "metrics: sluice_ban_drops_total, from the ban's count" "$(metric sluice_ban_drops_total)" \
	"$dropped" $((dropped + $(nproc) * (3 * PPS * DENY_TTL_MS / 1000 + 1)))

# ---- bans survive kill -9 of the agent ---------------------------------------
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true # killed: its status is 137 by design
e2e_equal "packets from $A after kill -9" "$(e2e_delivered "$A" 200)" 0
"$SLUICE" bans --pin-root "$PIN_ROOT" | grep -q "^$A/32 .* e2e-drop$" || e2e_fail "bans lost $A"

# ---- the allowlist wins, without an agent -----------------------------------
B=10.200.2.1
ban 10.200.0.0/16 --reason e2e-wide >/dev/null
e2e_equal "allowlisted $ALLOWED under a banned /16" "$(e2e_delivered "$ALLOWED" 200)" 200
e2e_equal "$B under a banned /16" "$(e2e_delivered "$B" 200)" 0

# ---- a new agent reuses the pins, bans included ---------------------------------
e2e_start_agent "$WORK/policy.yaml"
e2e_equal "packets from $A after a new agent started" "$(e2e_delivered "$A" 100)" 0
e2e_equal "bans after a new agent started" "$(entries)" 2

# ---- unban restores ------------------------------------------------------------
unban 10.200.0.0/16 >/dev/null
e2e_equal "$B after unban" "$(e2e_delivered "$B" 200)" 200
rc=0
unban 10.200.0.0/16 2>"$WORK/unban.err" || rc=$?
e2e_equal "exit status of unbanning what is not banned" "$rc" 1
grep -q "cannot unban '10.200.0.0/16' on '$VETH_RX': it is not banned" "$WORK/unban.err" ||
	e2e_fail "unban: $(cat "$WORK/unban.err")"

# ---- a wide ban needs --force -------------------------------------------------
# wide PREFIX: `sluice ban PREFIX` is refused, exactly, and changes nothing.
wide() {
	local have rc=0 out
	have=$(entries)
	out=$(ban "$1" 2>&1) || rc=$?
	e2e_equal "exit status of sluice ban $1" "$rc" 2
	e2e_equal "sluice ban $1" "$out" "sluice: ban: '$1' covers more than an IPv4 /8 or an IPv6 /32; add --force to ban so wide a prefix; 'sluice ban --help' lists its options"
	e2e_equal "bans after the refused $1" "$(entries)" "$have"
}
wide 0.0.0.0/0
wide ::/0
wide ::/80 # holds ::ffff:0:0/96, all of IPv4
wide 8.0.0.0/7
ban 10.0.0.0/8 >/dev/null || e2e_fail "sluice ban 10.0.0.0/8 (an IPv4 /8) was refused"
unban 10.0.0.0/8 >/dev/null
ban 0.0.0.0/0 --force >"$WORK/force.out" 2>"$WORK/force.err" || e2e_fail "ban 0.0.0.0/0 --force: $(cat "$WORK/force.err")"
e2e_equal "sluice ban 0.0.0.0/0 --force" "$(cat "$WORK/force.out" "$WORK/force.err")" \
	"banned 0.0.0.0/0 on $VETH_RX until unbanned"
e2e_equal "$B under a forced 0.0.0.0/0 ban" "$(e2e_delivered "$B" 100)" 0
e2e_equal "allowlisted $ALLOWED under a forced 0.0.0.0/0 ban" "$(e2e_delivered "$ALLOWED" 100)" 100
unban 0.0.0.0/0 >/dev/null # it drops every source on the veth: lift it at once
e2e_equal "$B after 0.0.0.0/0 is unbanned" "$(e2e_delivered "$B" 100)" 100

# ---- a ban inside the allowlist: kept, with a note ---------------------------
# shadowed PREFIX ALLOW: the ban succeeds (exit 0) and notes ALLOW.
shadowed() {
	local rc=0
	ban "$1" --reason e2e-shadowed >"$WORK/shadow.out" 2>"$WORK/shadow.err" || rc=$?
	e2e_equal "exit status of sluice ban $1 (in the allowlist)" "$rc" 0
	e2e_equal "sluice ban $1: stdout" "$(cat "$WORK/shadow.out")" "banned $1 on $VETH_RX until unbanned"
	e2e_equal "sluice ban $1: the note" "$(cat "$WORK/shadow.err")" \
		"sluice: note: '$1' is inside '$2' of the allowlist on '$VETH_RX', which passes it before any ban; the ban is kept, and takes effect once '$2' leaves the allowlist"
	"$SLUICE" bans --pin-root "$PIN_ROOT" | awk -v p="$1" '$1 == p && $NF == "e2e-shadowed" { f = 1 } END { exit !f }' ||
		e2e_fail "bans does not list $1"
}
shadowed "$SHADOWED" "$ALLOWED_NET"
shadowed "$ALLOWED/32" "$ALLOWED/32"
e2e_equal "10.200.9.130 under the ban of $SHADOWED, inside the allowlist" "$(e2e_delivered 10.200.9.130 100)" 100
unban "$SHADOWED" >/dev/null
unban "$ALLOWED/32" >/dev/null
echo "ok: wide bans need --force; bans inside the allowlist are kept with a note"

# ---- a ban expires on time ---------------------------------------------------
C=10.200.3.1
e2e_sink_start expire
e2e_flood_bg "$C" $(((FOR_S + 2) * PPS))
sleep 0.5
t_cmd=$(now_ns)
t_ret=$(ban "$C" --for "${FOR_S}s" >/dev/null && now_ns)
e2e_flood_wait
e2e_sink_stop
first=$(awk -v s="$C" -v f="$t_ret" '$2 == s && $1 > f && (m == 0 || $1 < m) { m = $1 } END { printf "%.0f\n", m }' "$REC")
((first > 0)) || e2e_fail "nothing from $C got through after the ban expired"
early_ms=$(((t_cmd + FOR_S * 1000000000 - first) / 1000000))
late_ms=$(((first - t_ret - FOR_S * 1000000000) / 1000000))
echo "measured: first packet after expiry $late_ms ms after expiry (from the command's return)"
((first >= t_cmd + FOR_S * 1000000000)) || e2e_fail "$C passed $early_ms ms before its ban expired"
((late_ms <= EXPIRE_TOL_MS)) || e2e_fail "$C passed only $late_ms ms after its ban expired"
"$SLUICE" bans --pin-root "$PIN_ROOT" | grep -q "^$C/32 *expired " || e2e_fail "bans: $C not shown expired"
ban fd00:200::99 --for 1h >/dev/null
"$SLUICE" bans --pin-root "$PIN_ROOT" | grep -q "^$C/32" && e2e_fail "ban did not prune the expired $C"
echo "ok: an expired ban is shown expired, and the next ban deletes it"

# ---- the fail2ban action -------------------------------------------------------
# action LINE-NAME IP BANTIME: run the action's command, with fail2ban's tags filled in.
ACTION=$ROOT/deploy/fail2ban/action.d/sluice.conf
action() {
	local cmd
	cmd=$(awk -v key="$1" '
		/^[a-z_]+ *=/ { on = ($1 == key) ; if (on) { sub(/^[^=]*= */, ""); print }; next }
		on && /^[ \t]/ { print; next }
		{ on = 0 }' "$ACTION")
	[ -n "$cmd" ] || e2e_fail "no $1 in $ACTION"
	cmd=${cmd//<sluice>/$SLUICE}
	cmd=${cmd//<sluice_opts>/--pin-root $PIN_ROOT}
	cmd=${cmd//<ip>/$2}
	cmd=${cmd//<bantime>/$3}
	cmd=${cmd//<name>/sshd}
	bash -euc "$cmd" >/dev/null
}
D=10.200.4.1
action actionban "$D" 600
"$SLUICE" bans --pin-root "$PIN_ROOT" | grep -q "^$D/32 .* fail2ban-sshd$" || e2e_fail "fail2ban: $D not banned"
e2e_equal "$D banned by the fail2ban action" "$(e2e_delivered "$D" 100)" 0
action actionunban "$D" 600
e2e_equal "$D unbanned by the fail2ban action" "$(e2e_delivered "$D" 100)" 100
action actionban fd00:200::4 -1
"$SLUICE" bans --pin-root "$PIN_ROOT" | grep -q "^fd00:200::4/128 *never .* fail2ban-sshd$" ||
	e2e_fail "fail2ban: bantime -1 did not ban fd00:200::4 for ever"
action actionunban fd00:200::4 -1

# ---- a full list ---------------------------------------------------------------
# Filled by bpftool in one process (65536 `sluice ban` runs would take
# minutes): IPv6 /128 keys fd00:ffff::N, never expiring. The commands
# recount the gate from the trie, so they see these like their own.
have=$(entries)
awk -v n=$((MAX_BANS - have - 1)) -v map="$(e2e_set_dir "$VETH_RX")/sluice_ban_host" 'BEGIN {
	zero = "00"; for (i = 1; i < 64; i++) zero = zero " 00"
	for (i = 0; i < n; i++)
		printf "map update pinned %s key hex 88 00 00 00 00 fd 00 ff ff 00 00 00 00 00 00 00 00 00 00 %02x %02x value hex %s\n", map, int(i / 256), i % 256, zero
}' >"$WORK/fill.batch"
"$BPFTOOL" batch file "$WORK/fill.batch" >/dev/null
ban fd00:eeee::1 >/dev/null
e2e_equal "entries at the last free one" "$(entries)" "$MAX_BANS"
rc=0
ban fd00:eeee::2 2>"$WORK/full.err" || rc=$?
e2e_equal "exit status of a ban on a full list" "$rc" 1
grep -qF "cannot ban 'fd00:eeee::2/128' on '$VETH_RX': ban list full: $MAX_BANS of $MAX_BANS entries" \
	"$WORK/full.err" || e2e_fail "full: $(cat "$WORK/full.err")"
e2e_equal "entries after the refused ban" "$(entries)" "$MAX_BANS"
ban "$A" --for 10m --reason again >/dev/null || e2e_fail "a full list refused a ban of a banned $A"
echo "ok: a full list takes a new expiry for a ban it holds"
e2e_equal "$A still banned on a full list" "$(e2e_delivered "$A" 100)" 0
echo "PASS"
