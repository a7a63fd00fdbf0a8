#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The metrics page behind --web-config (#26): TLS from a test CA made here
# with openssl, basic authentication against a bcrypt hash made with
# htpasswd (apache2-utils), checked with curl against the running agent.
# TLS verified against the CA answers; without the CA curl refuses the
# certificate; no credentials, a wrong password and an unknown user get 401
# with WWW-Authenticate; the right ones get 200 and a page promtool passes,
# with the process_* families. The probes stay open (kubelet sends no
# credentials). Bad web configs: the agent refuses to start, with one line
# naming file, line, column and field, and attaches nothing.
source "$(dirname "$0")/lib.sh"
e2e_require
for tool in curl htpasswd openssl promtool; do
	command -v "$tool" >/dev/null || e2e_fail "no $tool (tools/deps.sh installs it)"
done
e2e_topology

PORT=9190
URL=https://127.0.0.1:$PORT
USER_NAME=prometheus
PASSWORD=s3cret-scrape
BCRYPT_COST=10 # as Prometheus' own documentation's examples
CURL_TIMEOUT_S=10
CURL_FAIL_TLS=60 # curl: "Peer certificate cannot be authenticated with known CA certificates"

# A CA, and a server certificate it signs for 127.0.0.1 (the agent's address).
T=$WORK/tls
mkdir "$T"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
	-subj /CN=sluice-test-ca -keyout "$T/ca.key" -out "$T/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-subj /CN=127.0.0.1 -keyout "$T/server.key" -out "$T/server.csr" 2>/dev/null
openssl x509 -req -in "$T/server.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial \
	-days 1 -extfile <(printf 'subjectAltName=IP:127.0.0.1\n') -out "$T/server.crt" 2>/dev/null
HASH=$(htpasswd -nbB -C "$BCRYPT_COST" "$USER_NAME" "$PASSWORD" | cut -d: -f2)

cat >"$WORK/policy.yaml" <<YAML
policies:
  - name: p
    match: { proto: udp, dst_port: 5353 }
    key: { ipv4_prefix: 32, ipv6_prefix: 128 }
    rate: 10/s
    burst: 5
YAML

# The web config; cert_file relative to it, as the exporter-toolkit reads it.
cat >"$T/web.yml" <<YAML
tls_server_config:
  cert_file: server.crt
  key_file: $T/server.key
basic_auth_users:
  $USER_NAME: '$HASH'
YAML

# A bad web config: the agent exits 1 with exactly WANT (after "sluice: ")
# on stderr, and attaches nothing.
refused() { # NAME WANT (the file is $T/NAME.yml)
	local out rc=0
	out=$(in_ns "$NS_RX" "$SLUICE" run --config "$WORK/policy.yaml" --iface "$VETH_RX" \
		--pin-root "$PIN_ROOT" --metrics "127.0.0.1:$PORT" --web-config "$T/$1.yml" 2>&1) ||
		rc=$?
	e2e_equal "$1: exit status" "$rc" 78 # a file to fix (docs/errors.md)
	e2e_equal "$1: message" "$out" "sluice: $2"
	[ ! -e "$PIN_ROOT/$VETH_RX" ] || e2e_fail "$1: the refused agent left pins"
}
printf 'tls_server_config:\n  cert_file: server.crt\n' >"$T/no_key.yml"
refused no_key "$T/no_key.yml:2:3: tls_server_config: needs both cert_file and key_file"
printf 'basic_auth_users:\n  %s: plain-text\n' "$USER_NAME" >"$T/plain.yml"
refused plain "$T/plain.yml:2:15: basic_auth_users.$USER_NAME: expected a bcrypt hash (\$2y\$...); make one with: htpasswd -nbB USER PASSWORD"
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: ca.crt\n' >"$T/client_ca.yml"
refused client_ca "$T/client_ca.yml:4:3: tls_server_config: 'client_ca_file' is given twice or not served (cert_file, key_file; no client certificates); remove it"
printf 'tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n' >"$T/missing.yml"
refused missing "$T/missing.yml:2:14: tls_server_config.cert_file: cannot read '$T/missing.crt': No such file or directory"
printf 'http_server_config:\n  http2: false\n' >"$T/other.yml"
refused other "$T/other.yml:1:1: http_server_config: given twice or not served (tls_server_config, basic_auth_users); remove it"
printf 'basic_auth_users: [%s]\n' "$USER_NAME" >"$T/list.yml"
refused list "$T/list.yml:1:19: basic_auth_users: expected a mapping of user name to bcrypt hash"
# The CA's key beside the server's certificate: GnuTLS refuses the pair.
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: ca.key\n' >"$T/mismatch.yml"
refused mismatch "cannot serve metrics on '127.0.0.1:$PORT': TLS does not start with the cert_file and key_file of '$T/mismatch.yml'; are they a certificate and its private key, in PEM?"

e2e_start_agent "$WORK/policy.yaml" --metrics "127.0.0.1:$PORT" --web-config "$T/web.yml"

# curl in the agent's namespace: prints the HTTP status; the headers into
# $WORK/headers, the body into $WORK/body. Returns curl's status.
get() { # PATH CURL-ARGS...
	local path=$1
	shift
	in_ns "$NS_RX" curl -sS --max-time "$CURL_TIMEOUT_S" -o "$WORK/body" -D "$WORK/headers" \
		-w '%{http_code}' "$@" "$URL$path"
}
header() { # NAME: its value in $WORK/headers, without the CR
	sed -n "s/^$1: \(.*\)\r$/\1/Ip" "$WORK/headers"
}

# TLS: verified against the test CA; without it, curl refuses the certificate.
code=$(get /readyz --cacert "$T/ca.crt")
e2e_equal "GET /readyz, TLS verified against the test CA, no credentials" "$code" 200
rc=0
get /readyz >/dev/null 2>&1 || rc=$?
e2e_equal "curl without the test CA: exit status" "$rc" "$CURL_FAIL_TLS"
rc=0
in_ns "$NS_RX" curl -sS --max-time "$CURL_TIMEOUT_S" -o /dev/null "http://127.0.0.1:$PORT/metrics" \
	2>/dev/null || rc=$?
((rc != 0)) || e2e_fail "plain http:// to the TLS port answered"
echo "ok: plain http:// to the TLS port fails (curl status $rc)"

# Authentication.
code=$(get /metrics --cacert "$T/ca.crt")
e2e_equal "GET /metrics without credentials" "$code" 401
e2e_equal "WWW-Authenticate" "$(header WWW-Authenticate)" 'Basic realm="sluice"'
code=$(get /metrics --cacert "$T/ca.crt" -u "$USER_NAME:wrong")
e2e_equal "GET /metrics with a wrong password" "$code" 401
code=$(get /metrics --cacert "$T/ca.crt" -u "nobody:$PASSWORD")
e2e_equal "GET /metrics as an unknown user" "$code" 401
code=$(get /nowhere --cacert "$T/ca.crt")
e2e_equal "GET /nowhere without credentials" "$code" 401
code=$(get /metrics --cacert "$T/ca.crt" -u "$USER_NAME:$PASSWORD")
e2e_equal "GET /metrics with the right credentials" "$code" 200
e2e_equal "Content-Type" "$(header Content-Type)" "text/plain; version=0.0.4; charset=utf-8"
grep -q '^sluice_policy_packets_total{iface="'"$VETH_RX"'",policy="p",outcome="passed"} 0$' \
	"$WORK/body" || e2e_fail "the page has no sluice_policy_packets_total for policy p"
echo "ok: the page has the policy's counters"

# process_*: every family of the Go client's process collector, with a value.
for family in process_cpu_seconds_total process_resident_memory_bytes \
	process_virtual_memory_bytes process_start_time_seconds process_open_fds process_max_fds; do
	value=$(awk -v k="$family" '$1 == k { print $2 }' "$WORK/body")
	[[ "$value" =~ ^[0-9]+(\.[0-9]+)?$ ]] || e2e_fail "$family: '$value' is not a value"
	echo "ok: $family $value"
done
# The start time is the agent's: within a minute of now, not the boot's.
start=$(awk '$1 == "process_start_time_seconds" { printf "%d", $2 }' "$WORK/body")
e2e_within "process_start_time_seconds - now" $((start - $(date +%s))) -60 0
e2e_equal "process_max_fds (the agent's RLIMIT_NOFILE)" \
	"$(awk '$1 == "process_max_fds" { print $2 }' "$WORK/body")" \
	"$(prlimit --pid "$AGENT_PID" --nofile -o SOFT --noheadings | tr -d ' ')"

out=$(promtool check metrics <"$WORK/body" 2>&1) || e2e_fail "promtool check metrics: $out"
[ -z "$out" ] || e2e_fail "promtool check metrics: $out"
echo "ok: promtool check metrics: status 0, no output"

# The probes stay open: kubelet's httpGet probes carry no credentials.
code=$(get /healthz --cacert "$T/ca.crt")
e2e_equal "GET /healthz without credentials" "$code" 200

# What a scrape costs with bcrypt at cost $BCRYPT_COST (docs/metrics.md).
in_ns "$NS_RX" curl -sS --max-time "$CURL_TIMEOUT_S" -o /dev/null --cacert "$T/ca.crt" \
	-u "$USER_NAME:$PASSWORD" -w 'scrape over TLS with basic auth: %{time_total} s\n' \
	"$URL/metrics"

e2e_stop_agent
echo "test_metrics_tls: all checks passed"
