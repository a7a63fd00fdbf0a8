#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Every refusal in docs/errors.md, triggered for real (#26, item 2): this
# test reads the table, runs case_<id> for each row, and checks the whole
# output against the row's message (<x> and … match anything, the rest
# exactly) and the exit status against its code. A row without a case, or a
# case without a row, fails. Non-root rows run as nobody (setpriv); the
# foreign XDP program is the test's own (build/bench/pass.bpf.o) on a veth
# in the test's namespace; the pin root off bpffs is a directory in $WORK.
source "$(dirname "$0")/lib.sh"
e2e_require
command -v setpriv >/dev/null || e2e_skip "no setpriv (util-linux)"
PASS_OBJ=$ROOT/build/bench/pass.bpf.o
[ -r "$PASS_OBJ" ] || e2e_fail "build first: $PASS_OBJ (make test-e2e builds it)"
TABLE=$ROOT/docs/errors.md
METRICS_PORT=9191
e2e_topology

# nobody reads the policy: $WORK stays private, but can be passed through.
chmod 711 "$WORK"
mkdir -m 755 "$WORK/pub"
cat >"$WORK/pub/policy.yaml" <<YAML
policies:
  - name: slow
    match: { proto: udp, dst_port: 5353 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/min
    burst: 10
YAML
chmod 644 "$WORK/pub/policy.yaml"
POLICY=$WORK/pub/policy.yaml
sed 's/burst: 10/burst: ten/' "$POLICY" >"$WORK/bad.yaml"
install -m 600 "$POLICY" "$WORK/pub/private.yaml"

# try CMD...: its output (stdout and stderr) in OUT, its status in RC.
try() {
	RC=0
	OUT=$("$@" 2>&1) || RC=$?
}
# The checkout may sit where nobody cannot reach it (/root): a copy of the binary can.
install -m 755 "$SLUICE" "$WORK/pub/sluice"
as_nobody() { try setpriv --reuid=nobody --regid=nogroup --clear-groups "$WORK/pub/sluice" "$@"; }
rx() { try in_ns "$NS_RX" timeout "$E2E_START_S" "$@"; }
run_rx() { rx "$SLUICE" run --config "$POLICY" --iface "$VETH_RX" --pin-root "$PIN_ROOT" "$@"; }

case_no_command() { try "$SLUICE"; }
case_unknown_command() { try "$SLUICE" frobnicate; }
case_unknown_global_option() { try "$SLUICE" --bogus status; }
case_unknown_option() { try "$SLUICE" status --bogus; }
case_missing_value() { try "$SLUICE" run --config; }
case_extra_argument() { try "$SLUICE" status extra; }
case_missing_argument() { try "$SLUICE" check; }
case_no_config() { try "$SLUICE" run --iface lo; }
case_no_iface() { try "$SLUICE" detach; }
case_no_such_iface() { try "$SLUICE" run --config "$POLICY" --iface nosuch0; }
case_bad_mode() { try "$SLUICE" run --config "$POLICY" --mode turbo; }
case_generic_mode() { try "$SLUICE" run --config "$POLICY" --mode generic; }
case_bad_count() { try "$SLUICE" run --config "$POLICY" --max-keys 0; }
case_priority_without_share() { try "$SLUICE" run --config "$POLICY" --xdp-priority 5; }
case_bad_metrics() { try "$SLUICE" run --config "$POLICY" --metrics localhost:http; }
case_bad_reason() { try "$SLUICE" events --reason rate; }
case_bad_events_for() { try "$SLUICE" dump --pcap - --for 0s; }
case_no_pcap() { try "$SLUICE" dump --count 1; }
# The stopped agent's pins made to say ABI 9, before the event maps: last, it spoils them.
case_no_event_maps() {
	local ctl val
	ctl=$(e2e_set_dir "$VETH_RX")/sluice_ctl
	val=$(bpftool -j map lookup pinned "$ctl" key 0 0 0 0 |
		python3 -c 'import json, sys; v = json.load(sys.stdin)["value"]; v[0] = "0x09"; print(*v)')
	# shellcheck disable=SC2086 # the value's bytes are words
	bpftool map update pinned "$ctl" key 0 0 0 0 value $val
	try "$SLUICE" events --iface "$VETH_RX" --pin-root "$PIN_ROOT" --for 1s
}
case_bad_prefix() { try "$SLUICE" ban 192.0.2.300; }
case_bad_duration() { try "$SLUICE" ban --for 1q 192.0.2.1; }
case_wide_ban() { try "$SLUICE" ban 0.0.0.0/0; }
case_ban_list_name() { try "$SLUICE" ban --list 'a b' --file /dev/null; }
case_ban_list_file() { try "$SLUICE" ban --list drop; }
case_ban_list_line() {
	printf '192.0.2.0/24 ; SBL1\n192.0.2.300\n' >"$WORK/list.txt"
	try "$SLUICE" ban --list drop --file "$WORK/list.txt"
}
case_crowdsec_no_key() { try "$SLUICE" crowdsec; }
case_crowdsec_key_file() { try "$SLUICE" crowdsec --key-file "$WORK/absent.key"; }
case_crowdsec_key_empty() {
	printf '\n' >"$WORK/empty.key"
	try "$SLUICE" crowdsec --key-file "$WORK/empty.key"
}
case_crowdsec_bad_poll() { try "$SLUICE" crowdsec --key-file "$WORK/absent.key" --poll 0s; }
case_policy_missing() { try "$SLUICE" check "$WORK/absent.yaml"; }
case_policy_unreadable() { as_nobody check "$WORK/pub/private.yaml"; }
case_policy_invalid() { try "$SLUICE" check "$WORK/bad.yaml"; }
case_policy_symlink_out() {
	mkdir -p "$WORK/conf"
	ln -sf ../pub/policy.yaml "$WORK/conf/policy.yaml"
	try "$SLUICE" check "$WORK/conf/policy.yaml"
}
# A store on a port nobody listens on: the refusals come before any connection.
store_policy() { # URL MODE: a cluster-scope policy of that store, its password file of MODE
	install -m "$2" /dev/null "$WORK/pw"
	echo secret >"$WORK/pw"
	cat >"$WORK/store.yaml" <<YAML
store: { redis: "$1", password_file: "$WORK/pw" }
policies:
  - name: shared
    scope: cluster
    match: { proto: udp, dst_port: 5353 }
    rate: 100/s
    burst: 100
YAML
	rx "$SLUICE" run --config "$WORK/store.yaml" --iface "$VETH_RX" --pin-root "$PIN_ROOT/store"
}
case_password_file_mode() { store_policy redis://127.0.0.1:1 644; }
case_cluster_cleartext() { store_policy cluster://127.0.0.1:1 600; }
case_web_config_invalid() {
	printf 'basic_auth_users:\n  prometheus: not-a-hash\n' >"$WORK/web.yml"
	run_rx --pin-root "$PIN_ROOT/web" --metrics "127.0.0.1:$METRICS_PORT" --web-config "$WORK/web.yml"
}
case_no_iface_to_attach() { try "$SLUICE" run --config "$POLICY" --pin-root "$PIN_ROOT"; }
case_auto_not_alone() { try "$SLUICE" run --config "$POLICY" --iface auto --iface lo; }
case_iface_auto_no_route() { rx "$SLUICE" run --config "$POLICY" --iface auto --pin-root "$PIN_ROOT"; }
case_detach_nothing_pinned() { try "$SLUICE" detach --iface lo --pin-root "$PIN_ROOT"; }
case_not_root() { as_nobody run --config "$POLICY" --iface lo --pin-root "$PIN_ROOT"; }
case_not_root_pins() { as_nobody status --pin-root "$PIN_ROOT"; }
case_not_bpffs() { run_rx --pin-root "$WORK/not-bpffs"; }
case_pin_root_absent() { try "$SLUICE" status --pin-root "$PIN_ROOT/absent"; }
case_nothing_attached() {
	mkdir -p "$PIN_ROOT/empty"
	try "$SLUICE" top --pin-root "$PIN_ROOT/empty"
}
case_not_attached() { try "$SLUICE" top --iface lo --pin-root "$PIN_ROOT"; }
case_pin_dir_not_owned() {
	mkdir -p "$PIN_ROOT/squat"
	chmod 777 "$PIN_ROOT/squat"
	run_rx --pin-root "$PIN_ROOT/squat"
}
case_metrics_port_busy() {
	local holder
	ns_spawn "$NS_RX" socat -u "TCP-LISTEN:$METRICS_PORT,bind=127.0.0.1" /dev/null
	holder=$SPAWNED_PID
	until [ -n "$(in_ns "$NS_RX" ss -Hltn "sport = :$METRICS_PORT")" ]; do sleep 0.05; done
	run_rx --pin-root "$PIN_ROOT/port" --metrics "127.0.0.1:$METRICS_PORT"
	kill -TERM "$holder"
	wait "$holder" 2>/dev/null || :
}

# A foreign program on the hook: the test's own, attached without libxdp.
case_xdp_busy() { run_rx --pin-root "$PIN_ROOT/busy" --mode native; }
case_xdp_share_lone() { run_rx --pin-root "$PIN_ROOT/busy" --mode native --xdp-share; }
foreign_attach() {
	bpftool prog load "$PASS_OBJ" "$PIN_ROOT/pass"
	in_ns "$NS_RX" bpftool net attach xdpdrv pinned "$PIN_ROOT/pass" dev "$VETH_RX"
	rm "$PIN_ROOT/pass" # the attachment holds it
}
foreign_detach() { in_ns "$NS_RX" bpftool net detach xdpdrv dev "$VETH_RX"; }

# With an agent running on $VETH_RX.
case_second_agent() { run_rx --mode native; }
case_reload_rejected() {
	try "$SLUICE" reload --iface "$VETH_RX" --pin-root "$PIN_ROOT" --config "$WORK/bad.yaml"
	LINES=2 # the file's error, then this line
}
# With its pins left by a stopped agent (native mode, 65536 keys).
case_mode_mismatch() { run_rx --mode tc; }
case_resize_refused() { run_rx --mode native --max-keys 1024; }
case_ban_resize_refused() { run_rx --mode native --max-bans 1024; }
case_ban_socket_alone() { try "$SLUICE" run --config "$POLICY" --ban-socket "$WORK/ban.sock"; }
case_ban_socket_no_group() { try "$SLUICE" run --config "$POLICY" --ban-socket-group no-such-group-sluice; }
case_no_agent() { try "$SLUICE" reload --iface "$VETH_RX" --pin-root "$PIN_ROOT"; }
case_not_banned() { try in_ns "$NS_RX" "$SLUICE" unban 192.0.2.1 --iface "$VETH_RX" --pin-root "$PIN_ROOT"; }
case_ban_state_invalid() {
	mkdir -p "$WORK/badstate/bans"
	printf '# sluice bans 1\ndrop 192.0.2.0/24 0\ndrop 192.0.2.1/8 0\n' >"$WORK/badstate/bans/$VETH_RX"
	try in_ns "$NS_RX" "$SLUICE" ban 192.0.2.9 --iface "$VETH_RX" --pin-root "$PIN_ROOT" \
		--state-dir "$WORK/badstate"
}

# The table's rows: "id<TAB>exit<TAB>glob of the message".
rows() {
	# shellcheck disable=SC2016 # the backquotes are the table's
	sed -n 's/^| `\([a-z0-9-]*\)` | `\(.*\)` | .* | \([0-9]*\) | .* |$/\1\t\3\t\2/p' "$TABLE" |
		sed 's/\\|/|/g' |
		awk -F'\t' -v OFS='\t' '{
			gsub(/[][?*\\]/, "\\\\&", $3)
			gsub(/<[^>]*>/, "*", $3)
			gsub(/…/, "*", $3)
			print
		}'
}

declare -A WANT_RC WANT_MSG
while IFS=$'\t' read -r id code glob; do
	WANT_RC[$id]=$code
	WANT_MSG[$id]=$glob
done < <(rows)
((${#WANT_RC[@]} > 30)) || e2e_fail "read only ${#WANT_RC[@]} rows from $TABLE"
for id in "${!WANT_RC[@]}"; do
	declare -F "case_${id//-/_}" >/dev/null || e2e_fail "row '$id' of $TABLE has no case here"
done
while read -r _ _ fn; do
	id=${fn#case_}
	[ -n "${WANT_RC[${id//_/-}]:-}" ] || e2e_fail "$fn has no row in $TABLE"
done < <(declare -F | grep ' case_')

# check ID: run its case, compare with its row.
checked=()
check() {
	local id=$1 last
	LINES=1
	"case_${id//-/_}"
	last=$(tail -n 1 <<<"$OUT")
	e2e_equal "$id: lines of output" "$(wc -l <<<"$OUT")" "$LINES"
	# shellcheck disable=SC2053 # the row's message is a glob
	[[ $last == ${WANT_MSG[$id]} ]] || e2e_fail "$id: expected '${WANT_MSG[$id]}', got: $OUT"
	e2e_equal "$id: exit status" "$RC" "${WANT_RC[$id]}"
	echo "ok: $id ($RC): $last"
	checked+=("$id")
}

for id in no-command unknown-command unknown-global-option unknown-option missing-value \
	extra-argument missing-argument no-config no-iface no-such-iface bad-mode \
	generic-mode bad-count priority-without-share bad-metrics bad-reason bad-events-for \
	no-pcap bad-prefix \
	bad-duration wide-ban ban-list-name ban-list-file ban-list-line ban-socket-alone \
	ban-socket-no-group crowdsec-no-key crowdsec-key-file crowdsec-key-empty crowdsec-bad-poll \
	policy-missing policy-unreadable policy-invalid policy-symlink-out \
	password-file-mode cluster-cleartext web-config-invalid no-iface-to-attach \
	auto-not-alone iface-auto-no-route detach-nothing-pinned not-root not-root-pins \
	not-bpffs pin-root-absent nothing-attached not-attached pin-dir-not-owned \
	metrics-port-busy; do
	check "$id"
done
[ ! -e "$WORK/not-bpffs/$VETH_RX" ] || e2e_fail "not-bpffs: the refused start made '$WORK/not-bpffs/$VETH_RX'"

foreign_attach
check xdp-busy
check xdp-share-lone
foreign_detach

# --metrics takes a host name: localhost starts and serves.
e2e_start_agent "$POLICY" --metrics "localhost:$METRICS_PORT"
in_ns "$NS_RX" curl -fsS "http://localhost:$METRICS_PORT/healthz" >/dev/null ||
	e2e_fail "--metrics localhost:$METRICS_PORT: /healthz does not answer"
echo "ok: --metrics localhost:$METRICS_PORT serves"
check second-agent
check reload-rejected
e2e_stop_agent
check no-agent
check mode-mismatch
check resize-refused
check ban-resize-refused
check not-banned
check ban-state-invalid
check no-event-maps

e2e_equal "rows checked" "${#checked[@]}" "${#WANT_RC[@]}"
echo "test_refusals: all ${#checked[@]} refusals of docs/errors.md checked"
