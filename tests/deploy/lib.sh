# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Shared by the scripts of tests/deploy that run an agent; sourced, never
# run. tests/e2e/lib.sh owns the namespaces, processes and cleanup; this
# adds what the deploy scripts ask of a running agent.

# shellcheck shell=bash # sourced by bash scripts, so it has no #! line
# shellcheck source=../e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

# deploy_get PORT: the whole response, headers included, to GET /metrics
# from the agent listening on 127.0.0.1:PORT in $NS_RX (bash's /dev/tcp: no
# client needed).
deploy_get() {
	in_ns "$NS_RX" bash -c "exec 3<>/dev/tcp/127.0.0.1/$1 &&
		printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 && cat <&3"
}
