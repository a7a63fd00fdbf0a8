# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# The Debian package, built as CI's clone would build it: tests/pkg/test_deb.sh
# and tests/install/test_install.sh source this.

# deb_build DIR [DEB_BUILD_OPTIONS]: dpkg-buildpackage -us -uc -b in DIR/src,
# a copy of the committed tree (git archive HEAD); it writes the .deb and the
# .changes into DIR. The build gets no O from the caller's environment (make
# exports it): the package's own `make clean` would remove that build
# directory. Sets DEB and CHANGES to their paths; returns non-zero,
# with the end of DIR/build.log on stderr, when the build fails.
deb_build() {
	local dir=$1 version arch
	mkdir "$dir/src"
	git -C "$ROOT" archive HEAD | tar -x -C "$dir/src"
	version=$(cd "$dir/src" && dpkg-parsechangelog -S Version)
	arch=$(dpkg --print-architecture)
	(cd "$dir/src" && env -u O DEB_BUILD_OPTIONS="${2:-}" dpkg-buildpackage -us -uc -b) >"$dir/build.log" 2>&1 ||
		{ tail -n 40 "$dir/build.log" >&2; echo "dpkg-buildpackage failed (above)" >&2; return 1; }
	DEB=$dir/sluice_${version}_$arch.deb
	# shellcheck disable=SC2034 # test_deb.sh reads it
	CHANGES=$dir/sluice_${version}_$arch.changes
	[ -f "$DEB" ] || { echo "no $DEB after the build" >&2; return 1; }
}
