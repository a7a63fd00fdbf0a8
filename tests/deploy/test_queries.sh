#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Every query in deploy/grafana/sluice.json and deploy/prometheus/alerts.yaml
# reads what a real agent serves: each sluice_* metric a query names is a
# family on the /metrics page of an agent attached to a veth with a Redis
# store (so the store's families exist), each label a matcher names is one
# of the family's, and each value an equality matcher asks for is one a
# series carries. The dashboard's queries also parse as PromQL (promtool
# check rules, with Grafana's variables replaced). A query naming no sluice_
# metric, or a dashboard panel without a query, fails too.
source "$(dirname "$0")/lib.sh"
e2e_require
command -v jq >/dev/null || e2e_fail "no jq (tools/deps.sh installs it)"
command -v promtool >/dev/null || e2e_fail "no promtool (tools/deps.sh installs prometheus)"
DASH=$ROOT/deploy/grafana/sluice.json
ALERTS=$ROOT/deploy/prometheus/alerts.yaml
TARGET_LABELS=" instance job " # added by Prometheus to every scraped series

# The dashboard's queries: every panel has one, and they parse.
jq -e '.panels | length > 0 and all(.[]; (.targets // []) | length > 0 and all(.[]; .expr | length > 0))' \
	"$DASH" >/dev/null || e2e_fail "$DASH: a panel without a query"
jq -r '.panels[].targets[].expr, (.templating.list[] | select(.type == "query") | .query)' "$DASH" \
	>"$WORK/dash.queries"
{
	echo "groups: [{ name: dashboard, rules: ["
	n=0
	while IFS= read -r q; do
		n=$((n + 1))
		q=${q//\$__rate_interval/5m}
		q=${q//\$instance/.*}
		q=${q//\$policy/.*}
		if [[ $q =~ ^label_values\((.*),\ *[a-z_]+\)$ ]]; then q=${BASH_REMATCH[1]}; fi
		printf '  { record: "dashboard:query%d", expr: %s },\n' "$n" "$(jq -Rn --arg q "$q" '$q')"
	done <"$WORK/dash.queries"
	echo "]}]"
} >"$WORK/dash.rules.yaml"
promtool check rules "$WORK/dash.rules.yaml" >/dev/null || {
	promtool check rules "$WORK/dash.rules.yaml" >&2
	e2e_fail "a dashboard query does not parse as PromQL"
}
echo "ok: $(wc -l <"$WORK/dash.queries") dashboard queries parse as PromQL"
while IFS= read -r q; do
	grep -q 'sluice_[a-z_]' <<<"$q" || e2e_fail "dashboard query names no sluice metric: $q"
done <"$WORK/dash.queries"

# A real agent's page.
e2e_topology
e2e_start_redis
PORT=9190
cat >"$WORK/policy.yaml" <<YAML
store: { redis: "unix://$REDIS_SOCK", timeout: 20ms, sync_interval: 100ms }
policies:
  - name: cluster-udp
    scope: cluster
    match: { proto: udp, dst_port: 8201 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
YAML
# A ban list in the state the agent restores at start (docs/bans.md), so
# that the per-list families have a series.
mkdir -p "$WORK/state/bans"
printf '# sluice bans 1\nmanual 192.0.2.1/32 0 deploy-test\n' >"$WORK/state/bans/$VETH_RX"
e2e_start_agent "$WORK/policy.yaml" --metrics "127.0.0.1:$PORT"
scrape() { # the page, without the headers
	deploy_get "$PORT" | sed '1,/^\r$/d'
}
deadline=$((SECONDS + 10))
until scrape | grep -q '^sluice_store_up{' && scrape | grep -q '^sluice_ban_list_entries{'; do # the store's families, after its first probe; the lists' after the agent's first count
	((SECONDS < deadline)) || e2e_fail "no sluice_store_up within 10 s"
	sleep 0.1
done
scrape | grep -v '^#' >"$WORK/page"
e2e_stop_agent

# Each selector of each query, checked against the page.
checked=0
while IFS= read -r sel; do
	name=${sel%%\{*}
	grep -q "^${name}[{ ]" "$WORK/page" || e2e_fail "'$name' (in '$sel') is not on the agent's page"
	matchers=
	[[ $sel == *\{* ]] && matchers=${sel#*\{} && matchers=${matchers%\}}
	IFS=',' read -r -a ms <<<"$matchers"
	for m in "${ms[@]}"; do
		m=${m# }
		[[ $m =~ ^([a-z_]+)(=|!=|=~|!~)\"(.*)\"$ ]] || e2e_fail "cannot read matcher '$m' in '$sel'"
		label=${BASH_REMATCH[1]} op=${BASH_REMATCH[2]} value=${BASH_REMATCH[3]}
		[[ $TARGET_LABELS == *" $label "* ]] && continue
		grep -q "^$name{\(.*,\)\?$label=\"" "$WORK/page" ||
			e2e_fail "'$name' has no label '$label' (in '$sel')"
		if [ "$op" = = ]; then
			grep -qF "$label=\"$value\"" <(grep "^$name{" "$WORK/page") ||
				e2e_fail "no '$name' series with $label=\"$value\" (in '$sel')"
		fi
	done
	checked=$((checked + 1))
done < <(cat "$WORK/dash.queries" "$ALERTS" | grep -oE 'sluice_[a-z_]+(\{[^}]*\})?' | sort -u)
((checked > 0)) || e2e_fail "no selector found"
echo "ok: $checked distinct selectors of the dashboard and the alerts read the agent's page"
echo "test_queries: all checks passed"
