#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `make test-image`: the image `make image` built, run as the DaemonSet
# runs it, as far as this machine allows. A container cannot start here
# (crun: "setrlimit RLIMIT_NOFILE: Operation not permitted"), so the image
# is mounted (`podman image mount`) and its binary run by chroot, in a
# mount namespace of its own where the image's root is read-only
# (readOnlyRootFilesystem), with the host's /proc, /sys, /dev and bpffs
# bound in, as the DaemonSet's hostPath does. What is exercised:
#   1. `sluice -V` prints the version of this tree, with the image's own
#      libraries (every one the binary links is in the run base);
#   2. `sluice check` accepts the policy the image ships and the ConfigMap's;
#   3. `sluice run` from the image attaches to a veth in a namespace, with
#      only the capabilities BPF, NET_ADMIN and PERFMON (setpriv, no new
#      privileges), pins under the host's bpffs, and enforces: of a flood of
#      $COUNT packets, what passes is within the GCRA bound and what is
#      dropped is counted exactly; its /metrics answers;
#   4. the DaemonSet's mount-bpffs init container: its command, as
#      deploy/daemonset.yaml gives it, run in the image's read-only root
#      with all privileges, on a stand-in for the host's /sys/fs/bpf bound
#      in shared, as Bidirectional propagation binds it. With nothing
#      mounted there it mounts bpffs, mode 0700, and the mount reaches the
#      stand-in's side; run again, it finds bpffs and mounts nothing more.
# Not exercised: a container runtime, the kubelet, the probes (the agent
# code for /readyz and /healthz is another part of issue #14).
#   tests/deploy/test_image.sh [IMAGE]   (default localhost/sluice:<version>)
source "$(dirname "$0")/lib.sh"
e2e_require
version=$(sed -n 's/^#define SLUICE_VERSION "\(.*\)"$/\1/p' "$ROOT/user/base/version.h")
IMAGE=${1:-localhost/sluice:$version}
command -v podman >/dev/null || e2e_fail "no podman: run tools/deps.sh image"
podman image exists "$IMAGE" || e2e_fail "no image $IMAGE: run make image"

IMG_ROOT=$(podman image mount "$IMAGE")
image_cleanup() { # then lib.sh's cleanup, with the test's exit status
	local rc=$?
	set +e # else (exit "$rc") would end the trap here, before e2e_cleanup
	podman image unmount "$IMAGE" >/dev/null 2>&1
	(exit "$rc")
	e2e_cleanup
}
trap image_cleanup EXIT
echo "ok: $IMAGE mounted at $IMG_ROOT"

CAPS=+bpf,+net_admin,+perfmon
CAP_EFF=000000c000001000 # CAP_NET_ADMIN (12), CAP_PERFMON (38), CAP_BPF (39)
mkdir -p "$WORK/root" "$WORK/etc"
# The image's root $r, read-only, with the host's /proc, /sys and /dev.
# shellcheck disable=SC2016 # expanded by the sh -c scripts below
IMAGE_ROOT='mount --bind "$img" "$r" && mount -o remount,bind,ro "$r" &&
	mount --rbind /proc "$r/proc" && mount --rbind /sys "$r/sys" && mount --rbind /dev "$r/dev"'
# "${IN_IMAGE[@]}" CMD...: CMD in the image's root, with $WORK/etc on
# /etc/sluice and the DaemonSet's capabilities. Each step execs the next,
# so a spawned command's PID is the command's own.
# shellcheck disable=SC2016 # the script's $1.. are its own arguments
IN_IMAGE=(unshare --mount --propagation private sh -c '
	r=$1 img=$2 etc=$3 caps=$4; shift 4
	'"$IMAGE_ROOT"' && mount --bind "$etc" "$r/etc/sluice" &&
	exec chroot "$r" setpriv --no-new-privs --bounding-set=-all,"$caps" "$@"'
	sh "$WORK/root" "$IMG_ROOT" "$WORK/etc" "$CAPS")

# 1. The binary, with the image's libraries.
e2e_equal "sluice -V in the image" "$("${IN_IMAGE[@]}" /usr/sbin/sluice -V)" "sluice $version"

# 2. The shipped example and the ConfigMap's policy.
"${IN_IMAGE[@]}" /usr/sbin/sluice check /usr/share/sluice/examples/k8s-node.yaml >/dev/null ||
	e2e_fail "sluice check on the image's example"
echo "ok: sluice check /usr/share/sluice/examples/k8s-node.yaml"
awk '/^  policy.yaml: \|/ { f = 1; next } f && /^---/ { exit } f { sub(/^    /, ""); print }' \
	"$ROOT/deploy/daemonset.yaml" >"$WORK/etc/policy.yaml"
"${IN_IMAGE[@]}" /usr/sbin/sluice check /etc/sluice/policy.yaml >/dev/null ||
	e2e_fail "sluice check on the ConfigMap's policy"
echo "ok: sluice check on deploy/daemonset.yaml's ConfigMap policy"

# 3. The agent from the image, enforcing on a veth.
e2e_topology
BURST=10
RATE=1
COUNT=200
PORT=9190
cat >"$WORK/etc/policy.yaml" <<YAML
policies:
  - name: image-udp
    match: { proto: udp, dst_port: 7000 }
    key: { ipv4_prefix: 32, ipv6_prefix: 64 }
    rate: $RATE/s
    burst: $BURST
YAML
AGENT_LOG=$WORK/agent.log
ns_spawn "$NS_RX" "${IN_IMAGE[@]}" /usr/sbin/sluice -v run --config /etc/sluice/policy.yaml --iface "$VETH_RX" \
	--pin-root "$PIN_ROOT" --mode native --max-keys 65536 --metrics "127.0.0.1:$PORT" \
	>"$AGENT_LOG" 2>&1
AGENT_PID=$SPAWNED_PID
e2e_wait_start "$AGENT_LOG"
e2e_equal "the agent's effective capabilities" \
	"$(awk '/^CapEff:/ { print $2 }' "/proc/$AGENT_PID/status")" "$CAP_EFF"
e2e_equal "the agent's root" "$(readlink "/proc/$AGENT_PID/root")" "$WORK/root"
[ -e "$(e2e_set_dir "$VETH_RX")/link" ] || e2e_fail "no pinned link under $PIN_ROOT/$VETH_RX"
echo "ok: link pinned at $(e2e_set_dir "$VETH_RX")/link (the host's bpffs)"

e2e_count_setup got 'udp dport 7000'
read -r sent ms < <(e2e_flood --proto udp --dport 7000 --src 10.200.1.1 --dst "$RX4" \
	--count "$COUNT" --pps 2000)
e2e_equal "sent" "$sent" "$COUNT"
got=$(e2e_count got)
e2e_within "passed (burst $BURST, $RATE/s over $ms ms)" "$got" "$BURST" "$(e2e_bound "$BURST" "$RATE" "$ms")"
"$SLUICE" status --pin-root "$PIN_ROOT" --iface "$VETH_RX" --json >"$WORK/status.json" || [ $? = 1 ]
e2e_equal "dropped, as the image's agent counted" \
	"$(jq '.policies[] | select(.name == "image-udp") | .dropped_pkts' "$WORK/status.json")" $((COUNT - got))

page=$(deploy_get "$PORT")
e2e_equal "GET /metrics" "${page%%$'\r'*}" "HTTP/1.1 200 OK"
grep -q "^sluice_build_info{version=\"$version\"" <<<"$page" || e2e_fail "no sluice_build_info $version"
echo "ok: /metrics serves sluice_build_info for $version"
e2e_stop_agent

# 4. The init container. MOUNT_BPFFS is its args[0] (test_manifests.sh
# checks that it is the one argument of `sh -ec`). In a mount namespace of
# its own (the host's stand-in), $WORK/host is a shared tmpfs; a child
# namespace (the container's) binds its directory sys-fs-bpf on the image's
# /sys/fs/bpf, in place of the host's bpffs, and runs the command there.
MOUNT_BPFFS=$(sed -n "s/^ *args: \['\(mount .*\)'\]\$/\1/p" "$ROOT/deploy/daemonset.yaml")
[ -n "$MOUNT_BPFFS" ] || e2e_fail "no mount-bpffs args in deploy/daemonset.yaml"
# shellcheck disable=SC2016 # the scripts' $1.. are their own arguments
INIT='r=$1 img=$2 bpf=$3 cmd=$4
	'"$IMAGE_ROOT"' && umount -R "$r/sys/fs/bpf" && mount --bind "$bpf" "$r/sys/fs/bpf" &&
	exec chroot "$r" sh -ec "$cmd"'
mkdir "$WORK/host"
# shellcheck disable=SC2016
mapfile -t got < <(unshare --mount --propagation private bash -c '
	host=$1 init=$2 r=$3 img=$4 cmd=$5
	mount -t tmpfs tmpfs "$host" && mount --make-shared "$host" && mkdir "$host/sys-fs-bpf" || exit
	run() {
		out=$(unshare --mount --propagation unchanged sh -c "$init" sh \
			"$r" "$img" "$host/sys-fs-bpf" "$cmd" 2>&1) && rc=0 || rc=$?
	}
	run; echo "first: $rc [$out]"
	echo "on the host side: $(stat -f -c %T "$host/sys-fs-bpf") $(stat -c %a "$host/sys-fs-bpf")"
	run; echo "again: $rc [${out%% (*}]"
	echo "bpffs mounts there: $(grep -c " $host/sys-fs-bpf " /proc/self/mountinfo)"' \
	bash "$WORK/host" "$INIT" "$WORK/root" "$IMG_ROOT" "$MOUNT_BPFFS")
e2e_equal "mount-bpffs where nothing is mounted (status, output)" "${got[0]:-}" "first: 0 []"
# 1700: the 0700 asked, and the sticky bit bpffs always sets on its root (as on systemd's)
e2e_equal "the host side then" "${got[1]:-}" "on the host side: bpf_fs 1700"
e2e_equal "mount-bpffs where bpffs is mounted" "${got[2]:-}" "again: 0 [bpf on /sys/fs/bpf type bpf]"
e2e_equal "bpffs mounts on the host side" "${got[3]:-}" "bpffs mounts there: 1"
echo "test_image: all checks passed"
