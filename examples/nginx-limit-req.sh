#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Push the sources nginx's limit_req denies down to XDP: read nginx's error
# log and, for each "limiting requests ... client: ADDR" line, ban ADDR for
# a while in the list "nginx" through sluice's local API (docs/bans.md, "The
# local API"). A source is sent once per PENALTY, not once per denial.
#
#   tail -F /var/log/nginx/error.log | examples/nginx-limit-req.sh
#
# Run it as a member of the agent's --ban-socket-group. Settings, from the
# environment: SLUICE_SOCKET (default /run/sluice/ban.sock), PENALTY
# (default 10m, also how long a source is not sent again), LIST (nginx).
set -eu
SOCKET=${SLUICE_SOCKET:-/run/sluice/ban.sock}
PENALTY=${PENALTY:-10m}
LIST=${LIST:-nginx}

# awk keeps who was sent when, so a source is posted once per PENALTY.
awk -v penalty="$PENALTY" '
	BEGIN { s = penalty + 0; u = substr(penalty, length(s "") + 1)
		secs = s * (u == "h" ? 3600 : u == "m" || u == "min" ? 60 : 1) }
	/limiting requests/ && match($0, /client: [0-9a-fA-F.:]+/) {
		ip = substr($0, RSTART + 8, RLENGTH - 8)
		now = systime()
		if (now - sent[ip] >= secs) { sent[ip] = now; print ip; fflush() }
	}' |
	while read -r ip; do
		curl -sS --fail-with-body --unix-socket "$SOCKET" -X POST \
			"http://sluice/v1/ban?prefix=$ip&list=$LIST&for=$PENALTY" >&2 ||
			echo "nginx-limit-req: could not ban $ip" >&2
	done
