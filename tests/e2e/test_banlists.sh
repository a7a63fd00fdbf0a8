#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Named ban lists on a veth, with real traffic (docs/bans.md, "Lists"):
#   - a bad line in a list file is refused naming file, line and field,
#     and changes nothing;
#   - Spamhaus DROP's layout ("prefix ; SBLnnn", ';' comments) loads as is,
#     IPv4 and IPv6; the list then holds exactly the file's prefixes;
#   - a replacement by LIST_N entries applies only the difference: a
#     source in both the old and the new list sends all along and not one
#     of its packets passes; a source only in the old list passes after;
#     its time is printed;
#   - a list that would overfill the table (--max-bans) is refused with
#     the figures and changes nothing;
#   - a single ban is a list of its own, and a prefix held by two lists
#     stays banned until both let it go;
#   - the state survives a restart of the agent, and a "reboot" (kill -9,
#     the pins deleted, a new start from the state file): the lists come
#     back, a ban that expired while sluice was down does not.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
e2e_topology

PORT=9000
PPS=1000
LIST_N=100000 # the issue's bulk replace
# The table: LIST_N and the small lists, but not LIST_N + OVERFILL more.
MAX_BANS=$((LIST_N + 100))
STATE=$WORK/state
STAY=10.202.0.1 # in every version of list "drop"
OLD=10.203.0.1  # only in its first version
NEW=10.204.0.1  # only in its second
SINGLE=10.205.0.1

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: other
    match: { proto: udp, dst_port: 9999 }
    rate: 100/s
    burst: 100
YAML

opts=(--pin-root "$PIN_ROOT" --state-dir "$STATE")
ban() { "$SLUICE" ban "${opts[@]}" "$@"; }
unban() { "$SLUICE" unban "${opts[@]}" "$@"; }
# The prefixes in the maps, sorted.
prefixes() { "$SLUICE" bans --pin-root "$PIN_ROOT" --json | jq -r '.bans[].prefix' | sort; }
entries() { "$SLUICE" bans --pin-root "$PIN_ROOT" --json | jq -r .entries; }


METRICS_PORT=9192
e2e_start_agent "$WORK/policy.yaml" --max-bans "$MAX_BANS" --metrics "127.0.0.1:$METRICS_PORT"
# metric NAME LIST: its value for list LIST on /metrics ("" when absent).
metric() {
	in_ns "$NS_RX" curl -fsS "http://127.0.0.1:$METRICS_PORT/metrics" |
		K="$1{iface=\"$VETH_RX\",list=\"$2\"}" awk '$1 == ENVIRON["K"] { print $2 }'
}
# wait_event TEXT: the agent logs a line holding TEXT within EVENT_S.
EVENT_S=5 # the agent looks every 250 ms (BANWATCH_NS)
wait_event() {
	local deadline=$((SECONDS + EVENT_S))
	until grep -qF -- "$1" "$AGENT_LOG"; do
		((SECONDS < deadline)) || e2e_fail "no '$1' in the agent's log: $(grep 'event=ban' "$AGENT_LOG")"
		sleep 0.1
	done
	echo "ok: logged: $1"
}

# ---- a bad line changes nothing ----------------------------------------------
printf '10.201.0.0/24\n# a comment\n10.201.1.300 ; SBL2\n' >"$WORK/bad.txt"
rc=0
out=$(ban --list drop --file "$WORK/bad.txt" 2>&1) || rc=$?
e2e_equal "exit status of a bad list file" "$rc" 78
e2e_equal "a bad list file" "$out" \
	"sluice: ban: $WORK/bad.txt:3: prefix: '10.201.1.300' is not a prefix: it is not an IPv4 address (expected an address such as 192.0.2.1); fix that line, nothing was changed"
e2e_equal "entries after a bad list file" "$(entries)" 0
[ ! -e "$STATE/bans/$VETH_RX" ] || e2e_fail "a bad list file wrote the state"

# ---- Spamhaus DROP's layout, IPv4 and IPv6 -------------------------------------
cat >"$WORK/drop1.txt" <<EOF
; Spamhaus DROP List 2026/12/05 - (c) 2026 The Spamhaus Project
; Last-Modified: Sat, 05 Dec 2026 08:00:00 GMT
10.201.0.0/24 ; SBL1
$STAY ; SBL2
10.203.0.0/16;SBL4
fd00:201::/48 ; SBL3
	# an indented comment

$STAY/32 ; a duplicate
EOF
out=$(ban --list drop --file "$WORK/drop1.txt")
[[ $out == "list drop on $VETH_RX: 4 entries (4 added, 0 removed, 0 kept) in "*" ms" ]] ||
	e2e_fail "ban --list drop: $out"
e2e_equal "the maps after drop1" "$(prefixes | tr '\n' ' ')" \
	"10.201.0.0/24 10.202.0.1/32 10.203.0.0/16 fd00:201::/48 "
wait_event "event=ban_list iface=$VETH_RX list=drop entries=4 added=4 removed=0"
e2e_equal "$OLD in list drop" "$(e2e_delivered "$OLD" 100)" 0
e2e_equal "$STAY in list drop" "$(e2e_delivered "$STAY" 100)" 0
echo "ok: DROP's layout loads, IPv4 and IPv6"

# ---- 10^5 replace, a staying source never passes --------------------------------
# LIST_N - 2 /32s of 10.64.0.0/10, $STAY, and $NEW's /24.
awk -v n=$((LIST_N - 2)) 'BEGIN { for (i = 0; i < n; i++)
	printf "10.%d.%d.%d ; bulk\n", 64 + int(i / 65536), int(i / 256) % 256, i % 256 }' >"$WORK/big.txt"
printf '%s\n%s/24\n' "$STAY" "${NEW%.*}.0" >>"$WORK/big.txt"
e2e_sink_start replace
e2e_flood_bg "$STAY" $((4 * PPS))
sleep 1
t0=$("$SINK" now)
out=$(ban --list drop --file "$WORK/big.txt")
t1=$("$SINK" now)
e2e_flood_wait
e2e_sink_stop
echo "measured: $out; the command ran $(((t1 - t0) / 1000000)) ms"
[[ $out == "list drop on $VETH_RX: $LIST_N entries ($((LIST_N - 1)) added, 3 removed, 1 kept) in "*" ms" ]] ||
	e2e_fail "ban --list drop (big): $out"
e2e_equal "packets from $STAY (in both lists) during the replace" "$(e2e_got "$STAY")" 0
wait_event "event=ban_list iface=$VETH_RX list=drop entries=$LIST_N added=$((LIST_N - 1)) removed=3"
e2e_equal "entries after the replace" "$(entries)" "$LIST_N"
e2e_equal "bans --json: the table's size (--max-bans)" \
	"$("$SLUICE" bans --pin-root "$PIN_ROOT" --json | jq -r .max)" "$MAX_BANS"
{ sed 's/ ;.*//; /\//!s|$|/32|' "$WORK/big.txt"; } | sort >"$WORK/big.want"
prefixes >"$WORK/big.have"
cmp -s "$WORK/big.want" "$WORK/big.have" ||
	e2e_fail "the maps differ from big.txt: $(diff "$WORK/big.want" "$WORK/big.have" | head -5)"
e2e_equal "$OLD, out of the list" "$(e2e_delivered "$OLD" 100)" 100
e2e_equal "$NEW, into the list" "$(e2e_delivered "$NEW" 100)" 0
e2e_equal "10.64.1.2, in the bulk" "$(e2e_delivered 10.64.1.2 100)" 0
echo "ok: $LIST_N entries replaced, exactly, $STAY never passed"

# ---- a full table changes nothing ----------------------------------------------
awk -v n=$((MAX_BANS - LIST_N + 1)) 'BEGIN { for (i = 0; i < n; i++)
	printf "fd00:300::%x\n", i }' >"$WORK/over.txt"
rc=0
out=$(ban --list over --file "$WORK/over.txt" 2>&1) || rc=$?
e2e_equal "exit status of an overfull list" "$rc" 1
e2e_equal "an overfull list" "$out" \
	"sluice: cannot make list 'over' on '$VETH_RX' hold $((MAX_BANS - LIST_N + 1)) entries: the ban table would need $((MAX_BANS + 1)) of its $MAX_BANS; nothing was changed; unban some, or start the agent with a larger --max-bans (docs/bans.md)"
prefixes >"$WORK/after-over.have"
cmp -s "$WORK/big.want" "$WORK/after-over.have" || e2e_fail "an overfull list changed the maps"
grep -q "^over " "$STATE/bans/$VETH_RX" && e2e_fail "an overfull list is in the state"
echo "ok: an overfull list is refused and changes nothing"

# ---- back to a small list; a single ban; a prefix in two lists -------------------
printf '%s\n' "$STAY" >"$WORK/small.txt"
out=$(ban --list drop --file - <"$WORK/small.txt")
echo "measured: $out"
[[ $out == "list drop on $VETH_RX: 1 entries (0 added, $((LIST_N - 1)) removed, 1 kept) in "*" ms" ]] ||
	e2e_fail "ban --list drop (small): $out"
ban "$SINGLE" --for 10m --reason e2e-single >/dev/null
printf '%s\n' "$STAY" >"$WORK/other.txt"
ban --list other --file "$WORK/other.txt" >/dev/null
printf '' >"$WORK/empty.txt"
ban --list drop --file "$WORK/empty.txt" >/dev/null
e2e_equal "the maps: $STAY held by list other, $SINGLE" "$(prefixes | tr '\n' ' ')" \
	"$STAY/32 $SINGLE/32 "
e2e_equal "$STAY, still in list other" "$(e2e_delivered "$STAY" 100)" 0
e2e_equal "$SINGLE, a single ban" "$(e2e_delivered "$SINGLE" 100)" 0
"$SLUICE" bans --pin-root "$PIN_ROOT" | grep -q "^$SINGLE/32 .* e2e-single$" || e2e_fail "bans lost $SINGLE's reason"
wait_event "event=ban iface=$VETH_RX list=manual prefix=$SINGLE/32"
wait_event "event=ban_list iface=$VETH_RX list=drop entries=0 added=0 removed=1"

# ---- events of a single ban: expiry, unban; metrics per list ---------------------
ban 10.207.0.1 --for 1s >/dev/null
wait_event "event=ban_expired iface=$VETH_RX list=manual prefix=10.207.0.1/32"
ban 10.207.0.2 >/dev/null
wait_event "event=ban iface=$VETH_RX list=manual prefix=10.207.0.2/32"
unban 10.207.0.2 >/dev/null
wait_event "event=unban iface=$VETH_RX list=manual prefix=10.207.0.2/32"
# The agent counts per list every 10 s (METRICS_KEYS_NS): wait for a count after the unban.
stay_drops=$("$SLUICE" bans --pin-root "$PIN_ROOT" --json | jq -r --arg p "$STAY/32" '.bans[] | select(.prefix == $p) | .drops_pkts')
deadline=$((SECONDS + 15))
until [ "$(metric sluice_ban_list_drops other) $(metric sluice_ban_list_entries manual)" = "$stay_drops 1" ]; do
	((SECONDS < deadline)) || e2e_fail "list other's drops, list manual's entries: $(metric sluice_ban_list_drops other) $(metric sluice_ban_list_entries manual), not $stay_drops 1"
	sleep 0.5
done
e2e_equal "metrics: entries of list other" "$(metric sluice_ban_list_entries other)" 1
e2e_equal "metrics: entries of list manual" "$(metric sluice_ban_list_entries manual)" 1
e2e_equal "metrics: drops of list other ($STAY's)" "$(metric sluice_ban_list_drops other)" "$stay_drops"
e2e_equal "metrics: list drop, now empty" "$(metric sluice_ban_list_entries drop)" ""
echo "ok: events for each change and expiry; entries and drops per list"

# ---- restart, and reboot --------------------------------------------------------
EXPIRING_S=5
ban 10.206.0.1 --for "${EXPIRING_S}s" >/dev/null # expires while sluice is down
t_expiring=$SECONDS
e2e_stop_agent
e2e_start_agent "$WORK/policy.yaml" --max-bans "$MAX_BANS"
grep -q "event=bans_restore iface=$VETH_RX entries=3 expired=0 written=3" "$AGENT_LOG" ||
	e2e_fail "restart: no bans_restore event: $(grep bans_ "$AGENT_LOG")"
e2e_equal "$STAY after a restart" "$(e2e_delivered "$STAY" 100)" 0
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true # killed: its status is 137 by design
e2e_detach "$VETH_RX"                  # the program and every pin: what a reboot leaves
[ ! -e "$(e2e_set_dir "$VETH_RX")" ] || e2e_fail "the pins outlived sluice detach"
while ((SECONDS - t_expiring <= EXPIRING_S)); do sleep 0.2; done # SECONDS counts whole seconds
# This start also serves the local API (below), to a group no user has but ours.
chmod 711 "$WORK"
mkdir -m 755 "$WORK/pub"
SOCK=$WORK/pub/ban.sock
API_GID=45678
getent group "$API_GID" >/dev/null && e2e_skip "group $API_GID exists here; the test needs it unused"
e2e_start_agent "$WORK/policy.yaml" --max-bans "$MAX_BANS" --ban-socket "$SOCK" \
	--ban-socket-group "$API_GID"
grep -q "event=bans_restore iface=$VETH_RX entries=2 expired=1 written=2" "$AGENT_LOG" ||
	e2e_fail "reboot: no bans_restore event: $(grep bans_ "$AGENT_LOG")"
e2e_equal "the maps after a reboot" "$(prefixes | tr '\n' ' ')" "$STAY/32 $SINGLE/32 "
e2e_equal "$STAY after a reboot" "$(e2e_delivered "$STAY" 100)" 0
e2e_equal "$SINGLE after a reboot" "$(e2e_delivered "$SINGLE" 100)" 0
grep -q "10.206.0.1" "$STATE/bans/$VETH_RX" && e2e_fail "the expired ban is still in the state"
"$SLUICE" bans --pin-root "$PIN_ROOT" | grep -q "^$SINGLE/32 .* e2e-single$" ||
	e2e_fail "a reboot lost $SINGLE's reason"
unban --list other >/dev/null
e2e_equal "$STAY once list other is empty" "$(e2e_delivered "$STAY" 100)" 100
echo "ok: bans survive a restart and a reboot; what expired meanwhile is dropped"

# ---- the local API ---------------------------------------------------------------
e2e_equal "the socket's owner, group and mode" "$(stat -c '%U %g %a' "$SOCK")" "root $API_GID 660"
# api [METHOD] PATH?QUERY: the answer's body and status, on one line.
api() {
	local method=POST
	[ $# = 2 ] && method=$1 && shift
	curl -sS --unix-socket "$SOCK" -X "$method" -w ' %{http_code}' "http://sluice$1" | tr '\n' ' '
}
e2e_equal "API: ban" "$(api '/v1/ban?prefix=10.210.0.1&list=nginx&for=10m')" "banned 10.210.0.1/32 in nginx  200"
e2e_equal "10.210.0.1, banned through the API" "$(e2e_delivered 10.210.0.1 100)" 0
e2e_equal "API: a bad prefix" "$(api '/v1/ban?prefix=10.210.0.300')" \
	"prefix: '10.210.0.300' is not a prefix: it is not an IPv4 address (expected an address such as 192.0.2.1)  400"
e2e_equal "API: no prefix" "$(api '/v1/ban?list=nginx')" "prefix: missing (e.g. prefix=192.0.2.1)  400"
e2e_equal "API: a bad list" "$(api '/v1/ban?prefix=10.210.0.2&list=a%20b')" \
	"list: 'a b' is not a list name (expected 1 to 31 letters, digits, '_', '.' or '-')  400"
e2e_equal "API: a bad duration" "$(api '/v1/ban?prefix=10.210.0.2&for=10x')" \
	"for: '10x' is not a duration: unknown unit 'x' (expected ms, s, m, min or h)  400"
e2e_equal "API: unban with a duration" "$(api '/v1/unban?prefix=10.210.0.2&for=1m')" "for: unban takes no duration  400"
e2e_equal "API: GET" "$(api GET '/v1/ban?prefix=10.210.0.2')" "only POST  405"
e2e_equal "API: no such path" "$(api '/v1/bam?prefix=10.210.0.2')" "no such path '/v1/bam'; use /v1/ban or /v1/unban  404"
e2e_equal "API: unban" "$(api '/v1/unban?prefix=10.210.0.1')" "unbanned 10.210.0.1/32  200"
e2e_equal "10.210.0.1, unbanned through the API" "$(e2e_delivered 10.210.0.1 100)" 100
# A user in the group may connect; one outside it may not.
rc=0
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups curl -sS --unix-socket "$SOCK" -X POST \
	'http://sluice/v1/ban?prefix=10.210.0.3' 2>&1) || rc=$?
e2e_equal "API: curl's status for a user outside the group" "$rc" 7 # could not connect
"$SLUICE" bans --pin-root "$PIN_ROOT" | grep -q '^10.210.0.3/' && e2e_fail "a user outside the group banned"
out=$(setpriv --reuid=65534 --regid=65534 --groups="$API_GID" curl -sS --unix-socket "$SOCK" -X POST \
	'http://sluice/v1/ban?prefix=10.210.0.3&list=nginx')
e2e_equal "API: a user in the group" "$out" "banned 10.210.0.3/32 in nginx"
# Operations per second (bench/banapi.sh measures them): API_N bans of
# distinct addresses by sluice-banapi-load, with 1, 4 and 16 clients at
# once, each on its own kept-alive connection, one request at a time; every
# one answered 200. API_MIN_OPS is a floor far under what the bench
# measures with both CPUs busy, so that it fails only on a regression of
# the kind this check exists for (a map write, a state read or an
# O(entries) move per request), never on a slow machine.
API_N=20000
API_MIN_OPS=2000
BANAPI_LOAD=${BANAPI_LOAD:-$ROOT/build/sluice-banapi-load}
api_first=0
for conns in 1 4 16; do
	n=$((conns == 1 ? API_N / 5 : API_N * 2 / 5))
	out=$("$BANAPI_LOAD" "$SOCK" "$n" "10.212.$((api_first / 256)).$((api_first % 256))" bench 1h "$conns") ||
		e2e_fail "API load, $conns connections: $out"
	api_first=$((api_first + n))
	echo "measured: $n API bans on $conns connections: $out"
	[[ $out == "ok=$n n=$n conns=$conns ops_per_s="* ]] || e2e_fail "API load: $out"
	((${out##*ops_per_s=} >= API_MIN_OPS)) ||
		e2e_fail "API load, $conns connections: ${out##*ops_per_s=} ops/s, under the floor of $API_MIN_OPS"
done
e2e_equal "10.212.1.2, banned by the bench" "$(e2e_delivered 10.212.1.2 100)" 0
# The agent writes the API's changes to the state file at its next tick.
deadline=$((SECONDS + 5))
until [ "$(grep -c '^bench ' "$STATE/bans/$VETH_RX")" = "$API_N" ]; do
	((SECONDS < deadline)) || e2e_fail "the state has $(grep -c '^bench ' "$STATE/bans/$VETH_RX") of list bench, not $API_N"
	sleep 0.1
done
echo "ok: the state holds the API's $API_N bans"
# examples/nginx-limit-req.sh: two denials of one client are one ban in list nginx.
NGINX_LOG='2026/12/05 08:00:00 [error] 7#7: *9 limiting requests, excess: 10.500 by zone "api", client: 10.210.0.9, server: _, request: "GET / HTTP/1.1"'
printf '%s\n%s\n' "$NGINX_LOG" "$NGINX_LOG" |
	SLUICE_SOCKET=$SOCK PENALTY=10m "$ROOT/examples/nginx-limit-req.sh" 2>"$WORK/nginx.out"
e2e_equal "examples/nginx-limit-req.sh's answers" "$(cat "$WORK/nginx.out")" "banned 10.210.0.9/32 in nginx"
e2e_equal "10.210.0.9, banned by the nginx example" "$(e2e_delivered 10.210.0.9 100)" 0
out=$(unban --list bench)
[[ $out == "list bench on $VETH_RX: 0 entries (0 added, $API_N removed, 0 kept) in "*" ms" ]] ||
	e2e_fail "unban --list bench: $out"
e2e_equal "10.212.1.2 once list bench is empty" "$(e2e_delivered 10.212.1.2 100)" 100
echo "ok: the local API bans and unbans, refuses bad requests, and only its group connects"
echo "PASS"
