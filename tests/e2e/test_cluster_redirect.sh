#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# A hostile redirect on a Redis Cluster store (#27): the agent follows
# MOVED and ASK only to primaries of the slot map read from its seeds, and
# never sends AUTH anywhere else. A real redis-server in cluster mode, with
# a password, serves every slot; it announces the address of
# tests/store/fake_redis.py, which passes everything through to it, so the
# fake is the map's one primary. Switched to "moved", the fake answers
# every script call with MOVED to a trap, a listener on the agent's
# loopback that records every byte it gets. Checks: the trap gets no
# connection (so no AUTH); the agent logs the address once
# (event=cluster_redirect_refused), however many redirects; back in
# "pass", the store is ok again and the scripts reach Redis. First, the
# agent refuses the password on cluster:// (no TLS) without
# cleartext_auth: true, in one line, exit status 78.
source "$(dirname "$0")/lib.sh"
e2e_require
for bin in redis-server redis-cli python3; do
	command -v "$bin" >/dev/null || e2e_fail "$bin is not installed (tools/deps.sh)"
done
e2e_topology

FAKE=$ROOT/tests/store/fake_redis.py
LO=127.0.0.1
REDIS_PORT=7300 # in $NS_RX's own loopback: no port of the host is used
FAKE_PORT=7301
TRAP_PORT=7309
PASSWORD=pw-$E2E_ID-$RANDOM
MOVED_S=3      # the redirects last this long: about 30 sync rounds
WAIT_S=15      # for a state, at most
export SLUICE_STORE_PASSWORD=$PASSWORD

rcli() { in_ns "$NS_RX" redis-cli -h $LO -p $REDIS_PORT --no-auth-warning -a "$PASSWORD" "$@"; }

# wait_for LABEL COMMAND...: until COMMAND succeeds, at most WAIT_S.
wait_for() {
	local label=$1 deadline=$((SECONDS + WAIT_S))
	shift
	until "$@"; do
		((SECONDS < deadline)) || e2e_fail "$label: not within $WAIT_S s"
		sleep 0.1
	done
}

ns_spawn "$NS_RX" redis-server --bind $LO --port $REDIS_PORT --save '' --appendonly no \
	--daemonize no --logfile "$WORK/redis.log" --dir "$WORK" --requirepass "$PASSWORD" \
	--cluster-enabled yes --cluster-config-file "$WORK/nodes.conf" \
	--cluster-announce-ip $LO --cluster-announce-port $FAKE_PORT
redis_answers() { [ "$(rcli ping 2>/dev/null)" = PONG ]; }
wait_for "redis-server answers" redis_answers
rcli cluster addslotsrange 0 16383 >/dev/null
cluster_ok() { rcli cluster info | grep -q "^cluster_state:ok"; }
wait_for "the cluster is ok" cluster_ok

# The trap: every connection and byte it gets, appended to $WORK/trap.
cat >"$WORK/trap.py" <<'PY'
import socket, sys
s = socket.create_server((sys.argv[1], int(sys.argv[2])))
print("listening", flush=True)
while True:
    c, _ = s.accept()
    with open(sys.argv[3], "ab") as f:
        f.write(b"connection\n")
        while data := c.recv(4096):
            f.write(data)
    c.close()
PY
ns_spawn "$NS_RX" python3 "$WORK/trap.py" $LO $TRAP_PORT "$WORK/trap" >"$WORK/trap.log" 2>&1
echo pass >"$WORK/mode"
ns_spawn "$NS_RX" python3 "$FAKE" --listen "tcp:$LO:$FAKE_PORT" \
	--upstream "tcp:$LO:$REDIS_PORT" --mode-file "$WORK/mode" \
	--moved-to "$LO:$TRAP_PORT" >"$WORK/fake.log" 2>&1
FAKE_PID=$SPAWNED_PID
listening() { grep -q "listening on" "$WORK/fake.log" && grep -q listening "$WORK/trap.log"; }
wait_for "the fake and the trap listen" listening
slots=$(in_ns "$NS_RX" redis-cli -h $LO -p $FAKE_PORT --no-auth-warning -a "$PASSWORD" \
	cluster slots | sed -n 3,4p | paste -sd:)
e2e_equal "the slot map's primary, asked through the fake" "$slots" "$LO:$FAKE_PORT"

write_policy() { # FILE [EXTRA STORE FIELDS]
	cat >"$1" <<YAML
node: { name: n1 }
store: { redis: "cluster://$LO:$FAKE_PORT", fleet: fleet-$E2E_ID, timeout: 250ms, sync_interval: 100ms, hold_down: 1s${2:+, $2} }
policies:
  - name: shared
    scope: cluster
    match: { proto: udp, dst_port: 5353 }
    rate: 100/s
    burst: 100
YAML
}

# A password on cluster:// (no TLS) only with cleartext_auth: true.
write_policy "$WORK/refused.yaml"
rc=0
out=$(in_ns "$NS_RX" timeout 20 "$SLUICE" run --config "$WORK/refused.yaml" --iface "$VETH_RX" \
	--pin-root "$PIN_ROOT" --mode native --max-keys 65536 2>&1) || rc=$?
e2e_equal "a password on cluster:// without cleartext_auth: exit status" "$rc" 78
want="refusing the store password for 'cluster://$LO:$FAKE_PORT': cluster:// has no TLS"
grep -qF -- "$want" <<<"$out" || e2e_fail "expected '$want' in: $out"
echo "ok: $(grep -F -- "$want" <<<"$out")"
[ ! -e "$WORK/trap" ] || e2e_fail "the trap got a connection before the test"

write_policy "$WORK/policy.yaml" "cleartext_auth: true"
e2e_start_agent "$WORK/policy.yaml"
evalsha() { rcli info commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p'; }
scripts_since() { [ "$(evalsha)" -gt "$1" ]; }
store_ok() { [ "$(grep -o 'event=store_state.*' "$AGENT_LOG" | tail -n 1 | grep -c 'to=fault')" = 0 ]; }
wait_for "the agent's scripts reach Redis" scripts_since 0
echo "ok: the agent's scripts reach Redis through the fake: $(evalsha) calls"

echo moved >"$WORK/mode"
kill -USR1 "$FAKE_PID"
sleep $MOVED_S
moved_calls=$(grep -c "^mode=" "$WORK/fake.log")
echo pass >"$WORK/mode"
kill -USR1 "$FAKE_PID"
e2e_equal "mode switches the fake logged" "$moved_calls" 1

[ ! -e "$WORK/trap" ] || e2e_fail "the trap got a connection: $(head -c 200 "$WORK/trap" | tr -c '[:print:]\n' .)"
echo "ok: no connection, so no AUTH, reached the trap at $LO:$TRAP_PORT in $MOVED_S s of redirects"
n=$(grep -c "event=cluster_redirect_refused to=$LO:$TRAP_PORT " "$AGENT_LOG" || true)
e2e_equal "the redirect's log lines (once per address)" "$n" 1
grep -qF -- "$PASSWORD" "$AGENT_LOG" && e2e_fail "the password reached the agent's output"

before=$(evalsha)
wait_for "the scripts reach Redis again" scripts_since "$before"
wait_for "the store ok again" store_ok
echo "ok: back in pass: $(($(evalsha) - before)) more script calls reached Redis, the store ok:" \
	"$(grep -o 'event=store_state.*' "$AGENT_LOG" | tail -n 1)"
e2e_stop_agent
echo "test_cluster_redirect: all checks passed"
