#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The --json output of status, top, bans and check, from a real agent on a
# veth with real traffic, validated against docs/schema/<command>.json
# (python3-jsonschema, draft 2020-12, strictly: a member the schema does
# not describe fails; docs/json.md):
#   - a source sends 20 datagrams to a policy of burst 5 and 1/min: status
#     counts exactly 5 passed and 15 dropped, top lists its key at the limit,
#     on the interface;
#   - a banned source sends 10: status's banned total counts 10, the ban's
#     own count (bans, status) 1 to 10 (its cached drops lag);
#   - check --json gives the validated policy (exit 0) and, for a bad file,
#     its errors with file, line, col, field and message (exit 78);
#   - every object opens with its "schema" version;
#   - the validator fails an object with a member no schema describes.
source "$(dirname "$0")/lib.sh"
e2e_require
command -v jq >/dev/null || e2e_fail "no jq (tools/deps.sh installs it)"
VALIDATE=$ROOT/tests/e2e/json_schema.py
SCHEMAS=$ROOT/docs/schema
/usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
	e2e_fail "no python3-jsonschema for /usr/bin/python3 (tools/deps.sh installs it)"
e2e_topology

BURST=5
SENT=20
BANNED_SENT=10
SRC=10.200.0.10
BANNED=10.200.0.50
REASON="e2e json"
cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: per-source
    match: { proto: udp, dst_port: 7000 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 1/min
    burst: $BURST
YAML
BATCH=2
printf 'policies:\n  - { name: fast, rate: 2000/s, burst: 1000 }\n' >"$WORK/batch.yaml"
printf 'policies:\n  - name: broken\n    rate: 100/sek\n    burst: 1\n' >"$WORK/bad.yaml"

# json CMD ARGS...: `sluice CMD --json ARGS...` into $WORK/CMD.json, valid
# against its schema; fails on a non-zero exit unless JSON_RC says otherwise.
json() {
	local cmd=$1 rc=0
	shift
	"$SLUICE" "$cmd" --json "$@" >"$WORK/$cmd.json" 2>"$WORK/$cmd.err" || rc=$?
	e2e_equal "exit status of sluice $cmd --json" "$rc" "${JSON_RC:-0}"
	"$VALIDATE" "$SCHEMAS/$cmd.json" <"$WORK/$cmd.json" ||
		e2e_fail "sluice $cmd --json is not valid against $SCHEMAS/$cmd.json: $(cat "$WORK/$cmd.json")"
}
# field CMD JQ-FILTER: one value of $WORK/CMD.json.
field() { jq -r "$2" "$WORK/$1.json"; }

e2e_start_agent "$WORK/policy.yaml"
"$SLUICE" ban "$BANNED" --reason "$REASON" --pin-root "$PIN_ROOT" --state-dir "$WORK/state" >/dev/null
e2e_flood --proto udp --dport 7000 --src "$SRC" --dst "$RX4" --count "$SENT" --pps 1000 >/dev/null
e2e_flood --proto udp --dport 7000 --src "$BANNED" --dst "$RX4" --count "$BANNED_SENT" \
	--pps 1000 >/dev/null

# ---- status ------------------------------------------------------------------
json status --pin-root "$PIN_ROOT"
e2e_equal "status: objects" "$(wc -l <"$WORK/status.json")" 1
e2e_equal "status: schema" "$(field status .schema)" sluice.status/1
e2e_equal "status: iface" "$(field status .iface)" "$VETH_RX"
e2e_equal "status: generation" "$(field status .generation)" 1
e2e_equal "status: policy name" "$(field status '.policies[0].name')" per-source
e2e_equal "status: passed" "$(field status '.policies[0].passed_pkts')" "$BURST"
e2e_equal "status: dropped" "$(field status '.policies[0].dropped_pkts')" $((SENT - BURST))
e2e_equal "status: keys" "$(field status '.policies[0].keys')" 1
e2e_equal "status: bans" "$(field status '.bans.entries')" 1
# The banned total counts every drop at once; a ban's own count takes its
# cached drops only at the flow's next full look (docs/bans.md): the first,
# at least, and never more than the total.
e2e_equal "status: banned total" "$(field status '.totals.banned_pkts')" "$BANNED_SENT"
e2e_within "status: ban drops" "$(field status '.bans.drops_pkts')" 1 "$BANNED_SENT"

# ---- top ---------------------------------------------------------------------
json top --pin-root "$PIN_ROOT"
e2e_equal "top: schema" "$(field top .schema)" sluice.top/1
e2e_equal "top: iface" "$(field top .iface)" "$VETH_RX"
e2e_equal "top: keys in debt" "$(field top .keys_in_debt)" 1
e2e_equal "top: the key's iface" "$(field top '.top[0].iface')" "$VETH_RX"
e2e_equal "top: the key" "$(field top '.top[0].key')" "$SRC/32"
e2e_equal "top: its policy" "$(field top '.top[0].policy')" per-source
# At the limit when the flood ended; at 1/min it drains 1/300 of its burst a second: 30 s to 0.9.
e2e_equal "top: fill at least 0.9 (read $(field top '.top[0].fill'))" \
	"$(field top '.top[0].fill >= 0.9')" true

# ---- bans --------------------------------------------------------------------
json bans --pin-root "$PIN_ROOT"
e2e_equal "bans: schema" "$(field bans .schema)" sluice.bans/1
e2e_equal "bans: iface" "$(field bans .iface)" "$VETH_RX"
e2e_equal "bans: entries" "$(field bans .entries)" 1
e2e_equal "bans: its reason" "$(field bans '.bans[0].reason')" "$REASON"
e2e_within "bans: its drops" "$(field bans '.bans[0].drops_pkts')" 1 "$BANNED_SENT"
e2e_stop_agent

# ---- check ---------------------------------------------------------------------
json check "$WORK/policy.yaml"
e2e_equal "check: schema" "$(field check .schema)" sluice.check/1
e2e_equal "check: ok" "$(field check .ok)" true
e2e_equal "check: rate as written" "$(field check '.policies[0].limit.rate')" 1/min
e2e_equal "check: burst" "$(field check '.policies[0].limit.burst')" "$BURST"
e2e_equal "check: refill" "$(field check '.policies[0].burst_math.refill_ms')" $((BURST * 60000))
e2e_equal "check: key" "$(field check '.policies[0].key.ipv4_prefix')" 32
e2e_equal "check: 1/min has no per-CPU batch" "$(field check '.policies[0].burst_math.cpu_batch')" null
e2e_equal "check: nor its bound" "$(field check '.policies[0].burst_math.cpu_batch_extra')" null
# 2000/s: batches of 2 packets (2000 per s over 1 ms), CPUs × 2 more at most (docs/policy.md).
json check "$WORK/batch.yaml"
e2e_equal "check: per-CPU batch" "$(field check '.policies[0].burst_math.cpu_batch')" "$BATCH"
e2e_equal "check: its bound" "$(field check '.policies[0].burst_math.cpu_batch_extra')" \
	$((BATCH * $(getconf _NPROCESSORS_CONF)))
JSON_RC=78 json check "$WORK/bad.yaml"
e2e_equal "check of a bad file: ok" "$(field check .ok)" false
e2e_equal "check of a bad file: the error" \
	"$(field check '.errors[0] | [.file, .line, .col, .field] | join(":")')" \
	"$WORK/bad.yaml:3:11:policies[0].rate"
e2e_equal "check of a bad file: its message" "$(field check '.errors[0].message')" \
	"'100/sek' is not a rate: unknown unit 'sek' (expected s, min, h or day, optionally with a count such as 15m)"
e2e_equal "check of a bad file: stderr" "$(cat "$WORK/check.err")" ""

# ---- the validator can fail ---------------------------------------------------
jq -c '.extra = 1' "$WORK/status.json" >"$WORK/extra.json"
if "$VALIDATE" "$SCHEMAS/status.json" <"$WORK/extra.json" 2>"$WORK/extra.err"; then
	e2e_fail "an undocumented member passed validation"
fi
grep -q "'extra' was unexpected" "$WORK/extra.err" || e2e_fail "unexpected: $(cat "$WORK/extra.err")"
jq -c 'del(.schema)' "$WORK/status.json" >"$WORK/noschema.json"
if "$VALIDATE" "$SCHEMAS/status.json" <"$WORK/noschema.json" 2>/dev/null; then
	e2e_fail "an object without its schema version passed validation"
fi
echo "ok: the validator refuses an undocumented member and a missing schema"
echo "test_json: all checks passed"
