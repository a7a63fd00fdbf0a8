#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `make image`: the sluice OCI image, built from this tree with podman and
# no registry (issue #14). Two Debian 12 bases come straight from Debian's
# archive through mmdebstrap and `podman import`:
#   - the build base: the Build-Depends of debian/control (one list, read
#     from there), plus make and gcc;
#   - the run base: Essential packages, the libraries the binary links and
#     mount(8) (for the DaemonSet's bpffs init container),
#     with documentation and locales left out (copyright files kept).
# Each is tagged by a hash of its suite and package list and made only when
# that tag is missing (SLUICE_IMAGE_REFRESH=1 remakes both, for security
# updates). deploy/Containerfile then compiles build/sluice from the tree
# (.containerignore keeps a local build/ and .git out) and copies the binary
# into the run base. The build runs with --isolation chroot: it needs no
# network and no container runtime, so it works inside a VM or a CI job;
# --layers=false leaves no intermediate image of the build stage behind.
# Prints the image's name, size and the seconds each step took.
#   deploy/image.sh [IMAGE]    (default localhost/sluice:<version>)
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE=bookworm
MIRROR=${SLUICE_IMAGE_MIRROR:-http://deb.debian.org/debian}
version=$(sed -n 's/^#define SLUICE_VERSION "\(.*\)"$/\1/p' user/base/version.h)
IMAGE=${1:-localhost/sluice:$version}
LOGS=${O:-build}/image # mmdebstrap's output, kept for when it fails
mkdir -p "$LOGS"
# The shared libraries build/sluice links (`ldd build/sluice`); tests/deploy/test_image.sh
# fails if one is missing, since the binary then cannot start.
RUN_PKGS=(libbpf1 libxdp1 libelf1 zlib1g libyaml-0-2 libhiredis0.14 libmicrohttpd12 libsystemd0)
# mount(8), not Essential, for the DaemonSet's init container that mounts bpffs.
RUN_PKGS+=(mount)
mapfile -t BUILD_PKGS < <(
	awk '/^Build-Depends:/ { f = 1; sub(/^Build-Depends:/, "") } f && /^[A-Z]/ && !/^Build-Depends:/ { f = 0 } f' \
		debian/control | tr ',' '\n' | grep -v '<!nocheck>' | sed 's/[(<].*//; s/[[:space:]]//g' |
		grep -v -e '^$' -e '^debhelper-compat$'
)
BUILD_PKGS+=(make gcc libc6-dev)
# merged-usr: the /usr merge without the usrmerge package, which would pull in
# perl (49 MB of the first run base's 112 MB).
MMDEBSTRAP_OPTS=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*')

for tool in mmdebstrap podman; do
	command -v "$tool" >/dev/null || { echo "image: no $tool: run tools/deps.sh image" >&2; exit 1; }
done

# base NAME VARIANT PACKAGE...: make localhost/sluice-NAME-base:<hash> unless it exists;
# sets BASE to its name.
base() {
	local name=$1 variant=$2 key start
	shift 2
	key=$(printf '%s\n' "$SUITE" "$variant" "${MMDEBSTRAP_OPTS[@]}" "$@" | sha256sum | cut -c1-12)
	BASE=localhost/sluice-$name-base:$key
	if [ -z "${SLUICE_IMAGE_REFRESH:-}" ] && podman image exists "$BASE"; then
		echo "image: $BASE exists (SLUICE_IMAGE_REFRESH=1 remakes it)"
		return
	fi
	start=$SECONDS
	log=$LOGS/mmdebstrap-$name.log
	mmdebstrap --quiet --variant="$variant" "${MMDEBSTRAP_OPTS[@]}" --include="$(IFS=,; echo "$*")" \
		"$SUITE" - "$MIRROR" 2>"$log" | podman import --quiet - "$BASE" >/dev/null ||
		{ tail -n 20 "$log" >&2; echo "image: making $BASE failed; $log has the rest" >&2; exit 1; }
	echo "image: $BASE made in $((SECONDS - start)) s ($SUITE, $variant: $*)"
}

start=$SECONDS
base build apt "${BUILD_PKGS[@]}"
build_base=$BASE
base run essential "${RUN_PKGS[@]}"
run_base=$BASE

revision=$(git describe --always --dirty 2>/dev/null || echo unknown)
previous=
if podman image exists "$IMAGE"; then previous=$(podman image inspect --format '{{.Id}}' "$IMAGE"); fi
step=$SECONDS
podman build --quiet --isolation chroot --layers=false --file deploy/Containerfile \
	--build-arg BUILD_BASE="$build_base" --build-arg RUN_BASE="$run_base" \
	--label org.opencontainers.image.version="$version" \
	--label org.opencontainers.image.revision="$revision" \
	--tag "$IMAGE" . >/dev/null
# The image this one replaces under the same name, unless a container uses it.
if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' "$IMAGE")" ]; then
	podman rmi "$previous" >/dev/null 2>&1 || echo "image: kept the previous $IMAGE ($previous): in use"
fi
echo "image: $IMAGE built in $((SECONDS - step)) s (podman build), $((SECONDS - start)) s in all"
echo "image: $IMAGE is $(podman image inspect --format '{{.Size}}' "$IMAGE") bytes, from $revision"
