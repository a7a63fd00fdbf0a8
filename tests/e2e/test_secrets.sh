#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The store's secrets (#12). A password file others can read, or a
# password too long to send whole, is refused by the agent, naming the
# mode or the length, before any store connection. A Redis ACL user logs
# in with AUTH user password: with the right password the agent joins the
# fleet; with a wrong one the store is a fault, and the password appears
# nowhere in the agent's output. (A URL with a user or password in it is
# refused by the parser: tests/fixtures/policy/bad/store-url-*.yaml.)
source "$(dirname "$0")/lib.sh"
e2e_require
e2e_topology
e2e_start_redis

USER_NAME=sluice-node
PASSWORD=pw-$E2E_ID-$RANDOM
PASSWORD_MAX=255 # STORE_URL_LEN - 1
FLEET=fleet-$E2E_ID
JOIN_WAIT_S=10

redis-cli -s "$REDIS_SOCK" ACL SETUSER "$USER_NAME" on ">$PASSWORD" '~*' '&*' +@all >/dev/null

write_policy() { # file password-file username
	cat >"$1" <<YAML
node: { name: n1 }
store: { redis: "unix://$REDIS_SOCK", username: $3, password_file: "$2", fleet: $FLEET }
policies:
  - name: shared
    scope: cluster
    match: { proto: udp, dst_port: 5353 }
    rate: 100/s
    burst: 100
YAML
}

# run_refused LABEL WANT POLICY: `sluice run` exits 78, a setting to fix
# (docs/errors.md), and says WANT.
run_refused() {
	local out rc=0
	out=$(in_ns "$NS_RX" timeout 20 "$SLUICE" -v run --config "$3" --iface "$VETH_RX" \
		--pin-root "$PIN_ROOT" --mode native --max-keys 65536 2>&1) || rc=$?
	e2e_equal "$1: exit status" "$rc" 78
	grep -qF -- "$2" <<<"$out" || e2e_fail "$1: expected '$2' in: $out"
	echo "ok: $1: $(grep -F -- "$2" <<<"$out")"
	# Refused before the attach: no program loaded or applied (-v logs both).
	e2e_equal "$1: attach and apply events before the refusal" \
		"$(grep -c 'event=start\|event=apply' <<<"$out")" 0
}

printf '%s\n' "$PASSWORD" >"$WORK/pw"
chmod 0644 "$WORK/pw"
write_policy "$WORK/open.yaml" "$WORK/pw" "$USER_NAME"
run_refused "a password file others can read" \
	"refusing the store password file '$WORK/pw': owned by uid 0 with mode 0644" "$WORK/open.yaml"

head -c $((PASSWORD_MAX + 1)) /dev/zero | tr '\0' x >"$WORK/long"
chmod 0600 "$WORK/long"
write_policy "$WORK/long.yaml" "$WORK/long" "$USER_NAME"
run_refused "a password too long" "longer than $PASSWORD_MAX bytes" "$WORK/long.yaml"

chmod 0600 "$WORK/pw"
write_policy "$WORK/good.yaml" "$WORK/pw" "$USER_NAME"
e2e_start_agent "$WORK/good.yaml"
deadline=$((SECONDS + JOIN_WAIT_S))
until [ "$(redis-cli -s "$REDIS_SOCK" --user "$USER_NAME" --pass "$PASSWORD" --no-auth-warning \
	ZCARD "$FLEET:nodes")" = 1 ]; do
	((SECONDS < deadline)) || e2e_fail "the agent did not join the fleet as $USER_NAME"
	sleep 0.1
done
echo "ok: AUTH $USER_NAME <password>: the agent joined $FLEET"
# A reload while the file is readable by others is rejected; the policy stays.
gen() { # status exits 1 while a policy is in a fail mode: the number still counts
	{ "$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json || true; } | jq .generation
}
gen_before=$(gen)
chmod 0644 "$WORK/pw"
if "$SLUICE" reload --pin-root "$PIN_ROOT" --iface "$VETH_RX" 2>/dev/null; then
	e2e_fail "a reload to a password file others can read was accepted"
fi
chmod 0600 "$WORK/pw"
e2e_equal "generation after the refused reload" "$(gen)" "$gen_before"
e2e_stop_agent

printf 'wrong-%s\n' "$PASSWORD" >"$WORK/wrong"
chmod 0600 "$WORK/wrong"
write_policy "$WORK/wrong.yaml" "$WORK/wrong" "$USER_NAME"
e2e_start_agent "$WORK/wrong.yaml"
deadline=$((SECONDS + JOIN_WAIT_S))
until grep -q 'event=store_state.*to=fault.*WRONGPASS' "$AGENT_LOG"; do
	((SECONDS < deadline)) || e2e_fail "a wrong password was no store fault: $(cat "$AGENT_LOG")"
	sleep 0.1
done
echo "ok: a wrong password: $(grep -o 'event=store_state.*' "$AGENT_LOG" | head -n 1)"
e2e_stop_agent
if grep -qF -- "$PASSWORD" "$WORK"/agent.*.log; then
	e2e_fail "a password reached the agent's output"
fi
echo "ok: no password in the agent's output"
echo "test_secrets: all checks passed"
