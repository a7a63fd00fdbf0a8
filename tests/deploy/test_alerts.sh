#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# deploy/prometheus/alerts.yaml: `promtool check rules` (syntax, PromQL,
# templates), then `promtool test rules` on tests/deploy/alerts_test.yaml,
# where each alert fires on one set of series and stays silent on another.
# Whether the metric names are the agent's is test_queries.sh's job.
# promtool comes from Debian's prometheus package (tools/deps.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
command -v promtool >/dev/null || { echo "FAIL: no promtool (tools/deps.sh installs prometheus)" >&2; exit 1; }

promtool check rules "$ROOT/deploy/prometheus/alerts.yaml"
promtool test rules "$ROOT/tests/deploy/alerts_test.yaml"

# Every alert in the file has a test case.
alerts=$(sed -n 's/^ *- alert: *//p' "$ROOT/deploy/prometheus/alerts.yaml" | sort -u)
tested=$(sed -n 's/.*alertname: *\([A-Za-z]*\).*/\1/p' "$ROOT/tests/deploy/alerts_test.yaml" | sort -u)
[ "$alerts" = "$tested" ] || {
	echo "FAIL: alerts without a test case: $(comm -23 <(echo "$alerts") <(echo "$tested") | tr '\n' ' ')" >&2
	exit 1
}
echo "ok: $(wc -l <<<"$alerts") alerts, each with cases that fire and that do not"
