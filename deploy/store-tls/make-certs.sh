#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# make-certs.sh DIR HOST: a private CA and the two certificates of the TLS
# link between sluice's stunnel and Redis (docs/shared-budget.md, "TLS to
# the store"), written to DIR:
#   ca.pem ca.key          the CA (keep ca.key offline once the others exist)
#   server.pem server.key  for redis-server: subjectAltName DNS:HOST, serverAuth
#   client.pem client.key  for stunnel, when Redis asks for a client
#                          certificate (tls-auth-clients yes): clientAuth
# Keys are EC P-256, certificates valid for DAYS days (default 365). It is
# what tests/e2e/test_store_tls.sh runs; an organisation with its own CA
# signs the two requests there instead. Refuses to overwrite a file.
set -euo pipefail

[ $# = 2 ] || { echo "usage: make-certs.sh <dir> <redis-host-name>" >&2; exit 2; }
dir=$1
host=$2
days=${DAYS:-365}
for f in ca.pem ca.key server.pem server.key client.pem client.key; do
	[ ! -e "$dir/$f" ] || { echo "make-certs.sh: '$dir/$f' exists; not overwriting" >&2; exit 1; }
done
umask 077
mkdir -p "$dir"

openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -noenc \
	-keyout "$dir/ca.key" -out "$dir/ca.pem" -days "$days" -subj "/CN=sluice store CA" \
	-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
	2>/dev/null

# sign NAME CN EXTENSIONS: NAME.key and NAME.pem, signed by the CA.
sign() {
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -noenc \
		-keyout "$dir/$1.key" -out "$dir/$1.csr" -subj "/CN=$2" 2>/dev/null
	openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
		-CAcreateserial -days "$days" -out "$dir/$1.pem" \
		-extfile <(printf '%s\n' "$3") 2>/dev/null
	rm -f "$dir/$1.csr"
}
sign server "$host" "subjectAltName=DNS:$host
extendedKeyUsage=serverAuth
keyUsage=critical,digitalSignature"
sign client "sluice-node" "extendedKeyUsage=clientAuth
keyUsage=critical,digitalSignature"
rm -f "$dir/ca.srl"
