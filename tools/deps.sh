#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Install every Debian package the build, the tests, the benchmark and the
# demo need, and mount bpffs when it is missing. Idempotent; silent when all
# is present. Needs root for anything it has to change.
#
# `tools/deps.sh kernels` also installs what the kernel matrix needs
# (tests/kernel/matrix.sh): QEMU, a static busybox and cpio for its
# initramfs, zstd for compressed kernel modules.
set -euo pipefail

PACKAGES=(
	make gcc clang llvm clang-format pkg-config bpftool
	libbpf-dev libelf-dev zlib1g-dev linux-libc-dev
	libyaml-dev libhiredis-dev libmicrohttpd-dev libcmocka-dev
	redis-server redis-sentinel redis-tools
	iproute2 nftables iptables ethtool socat valgrind
	clang-tidy cppcheck shellcheck
)
if [ "${1:-}" = kernels ]; then
	PACKAGES+=(qemu-system-x86 busybox-static cpio xz-utils zstd)
fi

missing=()
for p in "${PACKAGES[@]}"; do
	[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = 'install ok installed' ] ||
		missing+=("$p")
done

if ((${#missing[@]})); then
	echo "deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! mountpoint -q /sys/fs/bpf; then
	echo "deps: mounting bpffs on /sys/fs/bpf" >&2
	mount -t bpf bpf /sys/fs/bpf
fi
