#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# What systemd sees of the agent (issue #13), checked against the real
# binary without systemd: this test plays the service manager. It listens
# on the datagram socket it names in NOTIFY_SOCKET, sets WATCHDOG_USEC, and
# points JOURNAL_STREAM at the agent's stderr, as systemd does for
# Type=notify with WatchdogSec= and StandardError=journal (sd_notify(3),
# systemd.exec(5)). It checks:
#   - READY=1 arrives once the program is attached and the policy applied
#     (the agent's event=start line is already written when it arrives);
#   - WATCHDOG=1 arrives every WATCHDOG_USEC/2, and not at all while the
#     agent is stopped (SIGSTOP: a hung agent), for more than two intervals;
#   - RELOADING=1 then READY=1 around `sluice reload`, which fails on a bad
#     file, and STOPPING=1 on SIGTERM;
#   - each log line starts with its syslog priority (<4> warn, <6> info,
#     <7> debug) when stderr is the journal's stream, and with nothing when
#     JOURNAL_STREAM is unset or names another file;
#   - the agent, `reload` and `status` work with only the capabilities that
#     deploy/sluice.service grants (read from it).
# When systemd is PID 1, the agent also runs under systemd-run as
# Type=notify with a watchdog, which must restart it once it hangs.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
e2e_topology

WATCHDOG_MS=400
PING_MS=$((WATCHDOG_MS / 2)) # sd_watchdog_enabled(3): ping at half the interval
# A ping goes with the first completed tick (AGENT_TICK_NS, 50 ms) at least
# PING_MS after the last one, so a gap is PING_MS plus up to a tick and the
# tick's own work; the listener reads it a little later. Measured on a
# 2-CPU VM at SCHED_FIFO, 4 runs of 7 gaps: 200 to 203 ms. The bounds allow
# 20 ms of delivery jitter below and two ticks above.
GAP_LO_MS=$((PING_MS - 20))
GAP_HI_MS=$((PING_MS + 100))
PINGS=8
HUNG_MS=$((3 * WATCHDOG_MS)) # more than two intervals

cat >"$WORK/policy.yaml" <<YAML
agent: { heartbeat: 100ms, timeout: 30s }
policies:
  - name: udp
    match: { proto: udp, dst_port: 9000 }
    rate: 100/s
    burst: 10
YAML
printf 'policies:\n  - name: broken\n    rate: 100/sek\n    burst: 1\n' >"$WORK/bad.yaml"

# The service manager's end: one line per datagram, "MONO_MS STARTED TEXT",
# with the newlines of TEXT as '|' and STARTED 1 when the agent's log
# already held its start line at arrival.
cat >"$WORK/listen.py" <<'PY'
import os, socket, sys, time
sock_path, out_path, agent_log = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sock_path)
with open(out_path, "w", buffering=1) as out:
    while True:
        msg = s.recv(4096).decode()
        now_ms = time.monotonic_ns() // 1000000
        started = 0
        if os.path.exists(agent_log):
            with open(agent_log) as f:
                started = int("event=start" in f.read())
        out.write("%d %d %s\n" % (now_ms, started, msg.replace("\n", "|")))
PY
NOTIFY_SOCK=$WORK/notify.sock
NOTES=$WORK/notify.log
python3 "$WORK/listen.py" "$NOTIFY_SOCK" "$NOTES" "$WORK/agent.1.log" &
_pids+=($!)
deadline=$((SECONDS + 10))
until [ -S "$NOTIFY_SOCK" ]; do
	((SECONDS < deadline)) || e2e_fail "the notify listener did not bind within 10 s"
	sleep 0.05
done

sleep_ms() { sleep "$(($1 / 1000)).$(printf '%03d' $(($1 % 1000)))"; }
now_ms() { python3 -c 'import time; print(time.monotonic_ns() // 1000000)'; }
notes() { cut -d' ' -f3- "$NOTES"; }
count() { notes | grep -cx "$1"; }
# wait_note TEXT N: poll until TEXT has arrived N times, at most 10 s.
wait_note() {
	local deadline=$((SECONDS + 10))
	until (($(count "$1") >= $2)); do
		((SECONDS < deadline)) || { cat "$NOTES" >&2; e2e_fail "'$1' did not arrive $2 times"; }
		sleep 0.02
	done
}

# Agent 1: under the test's "service manager", its stderr the "journal".
# The log file exists before the agent does, so its inode is known.
: >"$WORK/agent.1.log"
stream=$(stat -c '%d:%i' "$WORK/agent.1.log")
NOTIFY_SOCKET=$NOTIFY_SOCK WATCHDOG_USEC=$((WATCHDOG_MS * 1000)) JOURNAL_STREAM=$stream \
	E2E_AGENT_VERBOSITY=-vv e2e_start_agent "$WORK/policy.yaml"
wait_note "READY=1|STATUS=enforcing '$WORK/policy.yaml' generation 1" 1
e2e_equal "first notification" "$(head -n 1 "$NOTES" | cut -d' ' -f2-)" \
	"1 READY=1|STATUS=enforcing '$WORK/policy.yaml' generation 1"

# The watchdog: PINGS pings, each gap within the bounds.
wait_note WATCHDOG=1 "$PINGS"
awk '$3 == "WATCHDOG=1" { if (n++) print $1 - last; last = $1 }' "$NOTES" >"$WORK/gaps"
e2e_within "shortest of $(wc -l <"$WORK/gaps") watchdog gaps (ms)" "$(sort -n "$WORK/gaps" | head -n 1)" \
	"$GAP_LO_MS" "$GAP_HI_MS"
e2e_within "longest watchdog gap (ms)" "$(sort -n "$WORK/gaps" | tail -n 1)" "$GAP_LO_MS" "$GAP_HI_MS"

# A hung agent stops pinging. Counted once the agent is stopped (state T)
# and anything it sent before has been read (a gap's worth later).
kill -STOP "$AGENT_PID"
until [ "$(awk '{ print $3 }' "/proc/$AGENT_PID/stat")" = T ]; do sleep 0.01; done
sleep_ms "$GAP_HI_MS"
before=$(count WATCHDOG=1)
stopped_ms=$(now_ms)
sleep_ms "$HUNG_MS"
e2e_equal "watchdog pings while stopped for $(($(now_ms) - stopped_ms)) ms" \
	$(($(count WATCHDOG=1) - before)) 0
kill -CONT "$AGENT_PID"
wait_note WATCHDOG=1 $((before + 1))
echo "ok: pings resume after SIGCONT"

# Reloads: RELOADING=1, then READY=1 with what is enforced, also when rejected.
"$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" >/dev/null
wait_note "READY=1|STATUS=enforcing '$WORK/policy.yaml' generation 2" 1
cp "$WORK/policy.yaml" "$WORK/good.yaml"
cp "$WORK/bad.yaml" "$WORK/policy.yaml"
if "$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" 2>"$WORK/err"; then
	e2e_fail "sluice reload succeeded on a bad file"
fi
echo "ok: sluice reload of a bad file exits non-zero: $(cat "$WORK/err")"
rejected="READY=1|STATUS=reload rejected; still enforcing '$WORK/policy.yaml' generation 2"
wait_note "$rejected" 1
notes | grep -v '^WATCHDOG=1$' | tail -n 4 >"$WORK/reloads"
printf '%s\n' "RELOADING=1|STATUS=reloading" \
	"READY=1|STATUS=enforcing '$WORK/policy.yaml' generation 2" \
	"RELOADING=1|STATUS=reloading" "$rejected" >"$WORK/reloads.want"
diff -u "$WORK/reloads.want" "$WORK/reloads" || e2e_fail "reload notifications differ (above)"
echo "ok: RELOADING=1 then READY=1 around a good and a rejected reload"
cp "$WORK/good.yaml" "$WORK/policy.yaml"

e2e_stop_agent
e2e_equal "last notification" "$(notes | tail -n 1)" "STOPPING=1|STATUS=stopping"

# The journal's priorities, on agent 1's stderr.
log=$WORK/agent.1.log
check_prefix() { # LABEL PATTERN: some line matches, and each line like it has the prefix
	grep -Eq "$2" "$log" || e2e_fail "$1: no line matches '$2'"
	echo "ok: $1: $(grep -E "$2" "$log" | head -n 1)"
}
check_prefix "info event, <6>" '^<6>ts=[^ ]* level=info event=start '
check_prefix "warning, <4>" "^<4>ts=[^ ]* level=warn event=reload_rejected file=$WORK/policy.yaml generation=2 "
check_prefix "libbpf debug, <7>" '^<7>libbpf: '
e2e_equal "level=info lines without <6>" "$(grep 'level=info' "$log" | grep -vc '^<6>')" 0
e2e_equal "level=warn lines without <4>" "$(grep 'level=warn' "$log" | grep -vc '^<4>')" 0

# Agent 2: JOURNAL_STREAM unset, and only the capabilities the unit grants
# (deploy/sluice.service's CapabilityBoundingSet=): it attaches, answers a
# reload and reports its status. No line has a prefix.
unit_caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$ROOT/deploy/sluice.service")
caps=$(tr 'A-Z ' 'a-z\n' <<<"$unit_caps" | sed 's/^cap_/+/' | paste -sd, -)
cat >"$WORK/capped" <<SH
#!/bin/sh
exec setpriv --bounding-set=-all,$caps --inh-caps=-all,$caps --ambient-caps=-all,$caps $SLUICE "\$@"
SH
chmod +x "$WORK/capped"
SLUICE=$WORK/capped E2E_AGENT_VERBOSITY=-vv e2e_start_agent "$WORK/policy.yaml"
held=$(capsh --decode="$(awk '/^CapEff:/ { print $2 }' "/proc/$AGENT_PID/status")" | cut -d= -f2)
e2e_equal "agent 2's capabilities are the unit's" "$(tr , '\n' <<<"$held" | sort | paste -sd' ' -)" \
	"$(tr 'A-Z ' 'a-z\n' <<<"$unit_caps" | sort | paste -sd' ' -)"
"$WORK/capped" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" >/dev/null ||
	e2e_fail "sluice reload with the unit's capabilities failed"
"$WORK/capped" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" >/dev/null ||
	e2e_fail "sluice status with the unit's capabilities failed"
echo "ok: with $unit_caps only: run, reload and status work"
e2e_stop_agent
e2e_equal "lines with a prefix, JOURNAL_STREAM unset" "$(grep -c '^<[0-9]>' "$AGENT_LOG")" 0

# Agent 3: JOURNAL_STREAM naming another file (the policy): no prefix.
JOURNAL_STREAM=$(stat -c '%d:%i' "$WORK/policy.yaml") E2E_AGENT_VERBOSITY=-vv \
	e2e_start_agent "$WORK/policy.yaml"
e2e_stop_agent
e2e_equal "lines with a prefix, JOURNAL_STREAM of another file" \
	"$(grep -c '^<[0-9]>' "$AGENT_LOG")" 0

# Under systemd itself, when it is PID 1 (not on this project's VMs, whose
# PID 1 is another init): Type=notify through systemd-run, which returns once
# READY=1 arrived, and a watchdog that restarts the agent once it hangs.
if [ "$(ps -p 1 -o comm=)" = systemd ]; then
	unit=sluice-e2e-$E2E_ID.service
	systemd_cleanup() {
		local rc=$?
		set +e
		systemctl stop "$unit" 2>/dev/null
		systemctl reset-failed "$unit" 2>/dev/null
		(exit "$rc")
		e2e_cleanup
	}
	trap systemd_cleanup EXIT
	show() { systemctl show --value -p "$1" "$unit"; }
	systemd-run --quiet --unit "$unit" -p Type=notify -p WatchdogSec=1s -p Restart=on-watchdog \
		-p NetworkNamespacePath="/run/netns/$NS_RX" "$SLUICE" -v run --config "$WORK/policy.yaml" \
		--iface "$VETH_RX" --pin-root "$PIN_ROOT" --mode native --max-keys 65536
	e2e_equal "systemd-run: state once started" "$(show ActiveState)" active
	e2e_equal "systemd-run: status" "$(show StatusText)" \
		"enforcing '$WORK/policy.yaml' generation 1"
	hung=$(show MainPID)
	kill -STOP "$hung"
	deadline=$((SECONDS + 10))
	until [ "$(show NRestarts)" = 1 ] && [ "$(show ActiveState)" = active ]; do
		((SECONDS < deadline)) || e2e_fail "systemd did not restart the hung agent within 10 s"
		sleep 0.1
	done
	e2e_equal "systemd-run: a new agent after the watchdog" $(($(show MainPID) != hung)) 1
	systemctl stop "$unit"
fi

echo "test_systemd: all checks passed"
