#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The Kubernetes manifests under deploy/, as an operator applies them:
#   1. every document validates offline against Kubernetes' OpenAPI schemas
#      and has no field they do not know (tests/deploy/validate.mjs; npm
#      installs the packages the lock file pins into $O/deploy, once per
#      lock file);
#   2. each tests/deploy/bad/*.yaml is refused, with exactly the output in
#      its .err file, so the validator is shown to fail;
#   3. the DaemonSet says what docs/kubernetes.md says it does: exactly the
#      capabilities BPF, NET_ADMIN, PERFMON, not privileged, AppArmor
#      unconfined both ways, bpffs with HostToContainer, --iface auto,
#      metrics on the node's internal address, probes on loopback apart (127.0.0.1:9191),
#      every node, one node at a time; the Service and ServiceMonitor
#      select it; the ConfigMap's policy passes `sluice check`;
#   4. the DaemonSet keeps the conventions of Cilium's agent DaemonSet
#      (docs/kubernetes.md, "Conventions"): each one is checked on the
#      DaemonSet, then taken out of a copy, where its check must fail.
# Needs node and npm (Debian's nodejs and npm) and, once, the npm registry.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-$ROOT/build}
SLUICE=${SLUICE:-$O/sluice}
DEP=$O/deploy
cd "$ROOT"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}
equal() { # LABEL GOT WANT
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
	echo "ok: $1: $3"
}
for tool in node npm jq; do
	command -v "$tool" >/dev/null || fail "no $tool (tools/deps.sh installs it)"
done
[ -x "$SLUICE" ] || fail "build first: $SLUICE"

# 1. The packages, as pinned; validate.mjs beside them, so node finds them.
mkdir -p "$DEP"
if ! cmp -s tests/deploy/package-lock.json "$DEP/package-lock.json" || [ ! -d "$DEP/node_modules" ]; then
	cp tests/deploy/package.json tests/deploy/package-lock.json "$DEP/"
	(cd "$DEP" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci in $DEP"
fi
cp tests/deploy/validate.mjs "$DEP/"
# Every manifest; deploy/policy.yaml is the package's policy file, not one
# (test_cli.sh checks it with sluice check).
manifests=()
for f in deploy/*.yaml; do
	[ "$f" = deploy/policy.yaml ] || manifests+=("$f")
done
node "$DEP/validate.mjs" "${manifests[@]}"

# 2. The negative cases.
for bad in tests/deploy/bad/*.yaml; do
	rc=0
	out=$(node "$DEP/validate.mjs" "$bad") || rc=$?
	equal "$bad refused" "$rc" 1
	[ "$out" = "$(cat "${bad%.yaml}.err")" ] ||
		fail "$bad: output differs from ${bad%.yaml}.err: $(diff <(echo "$out") "${bad%.yaml}.err")"
done

# 3. What the DaemonSet promises.
node "$DEP/validate.mjs" --json deploy/daemonset.yaml >"$DEP/daemonset.json"
node "$DEP/validate.mjs" --json deploy/servicemonitor.yaml >"$DEP/servicemonitor.json"
ds() { jq -c "$1" "$DEP/daemonset.json"; }
sm() { jq -c "$1" "$DEP/servicemonitor.json"; }
D='.[] | select(.kind == "DaemonSet")'
P="$D | .spec.template"
C="$P | .spec.containers[0]"
equal "capabilities added" "$(ds "$C.securityContext.capabilities.add")" '["BPF","NET_ADMIN","PERFMON"]'
equal "capabilities dropped" "$(ds "$C.securityContext.capabilities.drop")" '["ALL"]'
equal "privileged" "$(ds "$C.securityContext.privileged")" false
equal "privilege escalation" "$(ds "$C.securityContext.allowPrivilegeEscalation")" false
equal "read-only root" "$(ds "$C.securityContext.readOnlyRootFilesystem")" true
equal "user" "$(ds "$C.securityContext.runAsUser")" 0
equal "seccomp profile" "$(ds "$C.securityContext.seccompProfile.type")" '"RuntimeDefault"'
equal "priority class" "$(ds "$P.spec.priorityClassName")" '"system-node-critical"'
equal "AppArmor profile" "$(ds "$C.securityContext.appArmorProfile.type")" '"Unconfined"'
equal "AppArmor annotation" \
	"$(ds "$P.metadata.annotations[\"container.apparmor.security.beta.kubernetes.io/sluice\"]")" '"unconfined"'
equal "bpffs hostPath" "$(ds "$P.spec.volumes[] | select(.name == \"bpffs\") | .hostPath.path")" '"/sys/fs/bpf"'
equal "bpffs propagation" \
	"$(ds "$C.volumeMounts[] | select(.name == \"bpffs\") | [.mountPath, .mountPropagation]")" \
	'["/sys/fs/bpf","HostToContainer"]'
equal "interfaces" "$(ds "$C.args | map(select(startswith(\"--iface\")))")" '["--iface=auto"]'
equal "config watched" "$(ds "$C.args | map(select(startswith(\"--watch-config\")))")" '["--watch-config"]'
# shellcheck disable=SC2016 # $(HOST_IP) is Kubernetes' expansion, not the shell's
equal "metrics address" "$(ds "$C.args | map(select(startswith(\"--metrics\")))")" '["--metrics=$(HOST_IP):9190"]'
equal "probes address" "$(ds "$C.args | map(select(startswith(\"--probes\")))")" '["--probes=127.0.0.1:9191"]'
equal "HOST_IP" "$(ds "$C.env[] | select(.name == \"HOST_IP\") | .valueFrom.fieldRef.fieldPath")" '"status.hostIP"'
equal "metrics port" "$(ds "$C.ports[] | select(.name == \"metrics\") | .containerPort")" 9190
equal "prometheus.io/port" "$(ds "$P.metadata.annotations[\"prometheus.io/port\"]")" '"9190"'
equal "readiness probe" "$(ds "$C.readinessProbe.httpGet | [.host, .path, .port]")" '["127.0.0.1","/readyz",9191]'
equal "liveness probe" "$(ds "$C.livenessProbe.httpGet | [.host, .path, .port]")" '["127.0.0.1","/healthz",9191]'
equal "startup probe" "$(ds "$C.startupProbe.httpGet | [.host, .path, .port]")" '["127.0.0.1","/readyz",9191]'
equal "host network" "$(ds "$P.spec.hostNetwork")" true
equal "tolerations" "$(ds "$P.spec.tolerations")" '[{"operator":"Exists"}]'
equal "update strategy" "$(ds "$D | .spec.updateStrategy")" '{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1}}'
equal "Service selects the pods" "$(sm '.[] | select(.kind == "Service") | .spec.selector')" \
	"$(ds "$P.metadata.labels")"
equal "ServiceMonitor's port" "$(sm '.[] | select(.kind == "ServiceMonitor") | .spec.endpoints[0].port')" '"metrics"'
equal "ServiceMonitor's job (the Service's name)" "$(sm '.[] | select(.kind == "Service") | .metadata.name')" '"sluice"'

jq -r '.[] | select(.kind == "ConfigMap") | .data["policy.yaml"]' "$DEP/daemonset.json" >"$DEP/policy.yaml"
"$SLUICE" check "$DEP/policy.yaml" >/dev/null || fail "sluice check on the ConfigMap's policy.yaml"
echo "ok: sluice check on the ConfigMap's policy.yaml"

# 4. Cilium's conventions: CONVENTIONS prints one line per convention the
# DaemonSet breaks. tests/deploy/test_image.sh runs the init container's
# command in the image.
MOUNT_BPFFS='mount | grep "/sys/fs/bpf type bpf" || mount -t bpf -o mode=0700 bpf /sys/fs/bpf'
# shellcheck disable=SC2016 # jq's variables and string interpolation
CONVENTIONS='.[] | select(.kind == "DaemonSet") | .spec.template.spec as $s
	| ($s.containers[] | select(.name == "sluice")) as $agent
	| ($s.initContainers // []) as $init
	| ($init + $s.containers) as $all
	| (select($agent.securityContext.seLinuxOptions != {type: "spc_t", level: "s0"})
		| "SELinux: the agent is not spc_t at level s0"),
	(select([$init[] | select(.image == $agent.image and .securityContext.privileged == true
			and .command == ["sh", "-ec"] and .args == [$mount]
			and any(.volumeMounts[]?; . == {name: "bpffs", mountPath: "/sys/fs/bpf",
				mountPropagation: "Bidirectional"}))] | length != 1)
		| "bpffs: no privileged init container of the agent image mounts it, Bidirectional"),
	(select(any($s.volumes[]; . == {name: "bpffs",
			hostPath: {path: "/sys/fs/bpf", type: "DirectoryOrCreate"}}) | not)
		| "bpffs: the volume is not hostPath /sys/fs/bpf, DirectoryOrCreate"),
	("startupProbe", "readinessProbe", "livenessProbe" | select($agent[.] == null)
		| "probes: the agent has no \(.)"),
	($all[] | .name as $n | to_entries[] | select((.key | endswith("Probe"))
			and .value.timeoutSeconds == null)
		| "probes: \(.key) of \($n) has no timeoutSeconds"),
	(select($s.automountServiceAccountToken != false) | "automountServiceAccountToken is not false"),
	(select($s.nodeSelector != {"kubernetes.io/os": "linux"}) | "nodeSelector is not kubernetes.io/os: linux"),
	($all[] | select(.terminationMessagePolicy != "FallbackToLogsOnError")
		| "terminationMessagePolicy of \(.name) is not FallbackToLogsOnError")'
conventions() { jq -r --arg mount "$MOUNT_BPFFS" "$CONVENTIONS"; }
equal "Cilium's conventions broken" "$(conventions <"$DEP/daemonset.json")" ""
# Each convention taken out: what is taken, the jq edit of the DaemonSet
# that takes it, and the line CONVENTIONS must print then.
S='(.[] | select(.kind == "DaemonSet") | .spec.template.spec)'
BREAKS=(
	"SELinux level" "del($S.containers[0].securityContext.seLinuxOptions.level)"
	"SELinux: the agent is not spc_t at level s0"
	"init container" "del($S.initContainers)"
	"bpffs: no privileged init container of the agent image mounts it, Bidirectional"
	"Bidirectional propagation" "$S.initContainers[0].volumeMounts[0].mountPropagation = \"HostToContainer\""
	"bpffs: no privileged init container of the agent image mounts it, Bidirectional"
	"bpffs mode 0700" "$S.initContainers[0].args[0] |= sub(\" -o mode=0700\"; \"\")"
	"bpffs: no privileged init container of the agent image mounts it, Bidirectional"
	"DirectoryOrCreate" "($S.volumes[] | select(.name == \"bpffs\") | .hostPath.type) = \"Directory\""
	"bpffs: the volume is not hostPath /sys/fs/bpf, DirectoryOrCreate"
	"startup probe" "del($S.containers[0].startupProbe)"
	"probes: the agent has no startupProbe"
	"liveness probe's timeout" "del($S.containers[0].livenessProbe.timeoutSeconds)"
	"probes: livenessProbe of sluice has no timeoutSeconds"
	"automountServiceAccountToken: false" "$S.automountServiceAccountToken = true"
	"automountServiceAccountToken is not false"
	"Linux nodeSelector" "del($S.nodeSelector)"
	"nodeSelector is not kubernetes.io/os: linux"
	"init container's FallbackToLogsOnError" "del($S.initContainers[0].terminationMessagePolicy)"
	"terminationMessagePolicy of mount-bpffs is not FallbackToLogsOnError"
)
for ((i = 0; i < ${#BREAKS[@]}; i += 3)); do
	equal "without the ${BREAKS[i]}" "$(jq "${BREAKS[i + 1]}" "$DEP/daemonset.json" | conventions)" \
		"${BREAKS[i + 2]}"
done
echo "test_manifests: all checks passed"
