#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# What systemd sees of the agent (issue #13), checked against the real
# binary without systemd: this test plays the service manager. It points
# JOURNAL_STREAM at the agent's stderr, as systemd does for
# StandardError=journal (systemd.exec(5)), and checks that each log line
# starts with its syslog priority (<4> warn, <6> info, <7> debug) when
# stderr is the journal's stream, and with nothing when JOURNAL_STREAM is
# unset or names another file.
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_realtime
e2e_topology

cat >"$WORK/policy.yaml" <<YAML
agent: { heartbeat: 100ms, timeout: 30s }
policies:
  - name: udp
    match: { proto: udp, dst_port: 9000 }
    rate: 100/s
    burst: 10
YAML
printf 'policies:\n  - name: broken\n    rate: 100/sek\n    burst: 1\n' >"$WORK/bad.yaml"

# Agent 1: its stderr the "journal". The log file exists before the agent
# does, so its inode is known.
: >"$WORK/agent.1.log"
stream=$(stat -c '%d:%i' "$WORK/agent.1.log")
JOURNAL_STREAM=$stream E2E_AGENT_VERBOSITY=-vv e2e_start_agent "$WORK/policy.yaml"
cp "$WORK/policy.yaml" "$WORK/good.yaml"
cp "$WORK/bad.yaml" "$WORK/policy.yaml"
if "$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" 2>"$WORK/err"; then
	e2e_fail "sluice reload succeeded on a bad file"
fi
cp "$WORK/good.yaml" "$WORK/policy.yaml"
e2e_stop_agent

log=$WORK/agent.1.log
check_prefix() { # LABEL PATTERN: some line matches
	grep -Eq "$2" "$log" || e2e_fail "$1: no line matches '$2'"
	echo "ok: $1: $(grep -E "$2" "$log" | head -n 1)"
}
check_prefix "info event, <6>" '^<6>ts=[^ ]* level=info event=start '
check_prefix "warning, <4>" "^<4>sluice: reload rejected; still enforcing '$WORK/policy.yaml'"
check_prefix "libbpf debug, <7>" '^<7>libbpf: '
e2e_equal "level=info lines without <6>" "$(grep 'level=info' "$log" | grep -vc '^<6>')" 0
e2e_equal "level=warn lines without <4>" "$(grep 'level=warn' "$log" | grep -vc '^<4>')" 0

# Agents 2 and 3: JOURNAL_STREAM unset, and naming another file (the
# policy): no prefix on any line.
E2E_AGENT_VERBOSITY=-vv e2e_start_agent "$WORK/policy.yaml"
e2e_stop_agent
e2e_equal "lines with a prefix, JOURNAL_STREAM unset" "$(grep -c '^<[0-9]>' "$AGENT_LOG")" 0
JOURNAL_STREAM=$(stat -c '%d:%i' "$WORK/policy.yaml") E2E_AGENT_VERBOSITY=-vv \
	e2e_start_agent "$WORK/policy.yaml"
e2e_stop_agent
e2e_equal "lines with a prefix, JOURNAL_STREAM of another file" \
	"$(grep -c '^<[0-9]>' "$AGENT_LOG")" 0

echo "test_systemd: all checks passed"
