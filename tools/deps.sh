#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Install every Debian package the build, the tests, the benchmark and the
# demo need, and mount bpffs when it is missing. Idempotent; silent when all
# is present. Needs root for anything it has to change.
#
# `tools/deps.sh kernels` also installs what the kernel matrix needs
# (tests/kernel/matrix.sh): QEMU, a static busybox and cpio for its
# initramfs, zstd for compressed kernel modules. `tools/deps.sh pkg` adds
# what building and checking the Debian package needs (tests/pkg/test_deb.sh);
# `tools/deps.sh fuzz` clang's libFuzzer runtime, for `make fuzz`;
# `tools/deps.sh image` podman and mmdebstrap, for `make image` and
# `make test-image` (deploy/image.sh, tests/deploy/test_image.sh);
# `tools/deps.sh install` QEMU, mmdebstrap and the package's build tools, for
# `make test-install` (tests/install/test_install.sh).
set -euo pipefail

PACKAGES=(
	make gcc clang llvm clang-format pkg-config bpftool
	libbpf-dev libxdp-dev libelf-dev zlib1g-dev linux-libc-dev
	libyaml-dev libhiredis-dev libmicrohttpd-dev libsystemd-dev libcmocka-dev
	redis-server redis-sentinel redis-tools
	stunnel4 tcpdump openssl
	iproute2 nftables iptables ethtool socat valgrind libcap2-bin strace xdp-tools
	clang-tidy cppcheck shellcheck
	jq prometheus mandoc git
	libcrypt-dev apache2-utils curl # bcrypt (libxcrypt), htpasswd and curl for metrics TLS
	libcurl4-openssl-dev libjson-c-dev crowdsec # sluice crowdsec, and its test's local API
	python3-jsonschema
	stress-ng # make bench-banapi: both CPUs busy
)
# The deploy tier validates the manifests with npm packages (tests/deploy/);
# a node that already brings npm (as NodeSource's does) is kept, since
# Debian's npm would replace it.
if ! command -v npm >/dev/null; then
	PACKAGES+=(nodejs npm)
fi
if [ "${1:-}" = kernels ]; then
	PACKAGES+=(qemu-system-x86 busybox-static cpio xz-utils zstd)
fi
if [ "${1:-}" = pkg ]; then
	PACKAGES+=(dpkg-dev debhelper lintian man-db systemd)
fi
if [ "${1:-}" = image ]; then
	PACKAGES+=(podman mmdebstrap)
fi
if [ "${1:-}" = install ]; then # all of kernels' and pkg's, and mmdebstrap
	PACKAGES+=(qemu-system-x86 cpio xz-utils zstd dpkg-dev debhelper mmdebstrap python3-yaml)
fi
if [ "${1:-}" = fuzz ]; then
	PACKAGES+=(libclang-rt-14-dev) # libFuzzer, for `make fuzz`
fi

missing=()
for p in "${PACKAGES[@]}"; do
	[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = 'install ok installed' ] ||
		missing+=("$p")
done

# crowdsec's postinst registers with CrowdSec's Central API unless its
# credentials file already holds something, and fails offline; and it
# starts its service. The test runs a local API of its own: no Central API,
# no service (policy-rc.d 101, only while installing, if none is there).
crowdsec_offline() {
	mkdir -p /etc/crowdsec
	[ -s /etc/crowdsec/online_api_credentials.yaml ] ||
		echo '# no Central API: installed by sluice tools/deps.sh' \
			>/etc/crowdsec/online_api_credentials.yaml
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		policy_rc_d_ours=1
	fi
}

if ((${#missing[@]})); then
	echo "deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	policy_rc_d_ours=
	[[ " ${missing[*]} " != *" crowdsec "* ]] || crowdsec_offline
	apt-get update -qq
	rc=0
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
	[ -z "$policy_rc_d_ours" ] || rm -f /usr/sbin/policy-rc.d
	[ "$rc" = 0 ] || exit "$rc"
fi

# mode=0700, as systemd mounts it: a world-writable bpffs lets any user
# create a pin directory before the agent does (#12).
if ! mountpoint -q /sys/fs/bpf; then
	echo "deps: mounting bpffs on /sys/fs/bpf" >&2
	mount -t bpf -o mode=0700 bpf /sys/fs/bpf
fi
