#!/bin/bash
# scripts/check-manifests.py refuses a broken manifest with one line naming the overlays, the
# object, the field and the problem, and exits 1: each case breaks a copy of deploy/ one way.
set -u
SRC=${GPUFRAC_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
CHECK=$SRC/scripts/check-manifests.py
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILURES=0
fail() { echo "FAIL: $*"; FAILURES=$((FAILURES + 1)); }
V=$(sed -n 's/^project(gpufrac VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
DS='DaemonSet gpufrac-system/gpufrac-dra: $.spec.template.spec.containers[0]'
DRA3='kustomize/overlays/dra, kustomize/variants/crio, kustomize/variants/k3s'
ALL4="kustomize/overlays/dra, kustomize/overlays/runtimeclass, kustomize/variants/crio, kustomize/variants/k3s"

# refused <name> <expected line> <edit command...>: the edit runs in a fresh copy of deploy/.
refused() {
  local name=$1 want=$2 out rc
  shift 2
  rm -rf "$TMP/deploy" && cp -r "$SRC/deploy" "$TMP/deploy"
  (cd "$TMP/deploy" && "$@") || { fail "$name: the edit failed"; return; }
  out=$("$CHECK" --deploy "$TMP/deploy" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" = 1 ] || fail "$name: exit $rc, expected 1"
  [ "$out" = "check-manifests: $want" ] || fail "$name: expected one line
  check-manifests: $want
got:
$out"
}

# The tree as it is passes.
out=$("$CHECK" 2>&1) || fail "the repository's manifests are refused: $out"

refused "unknown field" \
  "kustomize/overlays/runtimeclass: RuntimeClass gpufrac: \$.scheduling.nodeSelectors: unknown field" \
  sed -i 's/^  nodeSelector:/  nodeSelectors:/' kustomize/overlays/runtimeclass/runtimeclass.yaml
refused "wrong type" \
  "$ALL4: DaemonSet gpufrac-system/gpufrac-node: \$.spec.template.spec.hostPID: not of type boolean" \
  sed -i 's/hostPID: true/hostPID: "yes"/' kustomize/base/node-daemonset.yaml
refused "volumeMount without a volume" \
  "$DRA3: $DS.volumeMounts[5]: names volume 'devices', which the pod does not have (volumes: cdi, config, dev, plugins, plugins-registry, state)" \
  sed -i 's/^            - name: dev$/            - name: devices/' kustomize/overlays/dra/dra-daemonset.yaml
refused "kubelet directory" \
  "$DRA3: $DS: the kubelet directory disagrees: --kubelet-dir /var/lib/k0s/kubelet; hostPath /var/lib/kubelet/plugins_registry at /var/lib/kubelet/plugins_registry, hostPath /var/lib/kubelet/plugins at /var/lib/kubelet/plugins (the same directory in the flag, the hostPaths and the mountPaths, with plugins_registry and plugins mounted)" \
  sed -i 's|            - /var/lib/kubelet$|            - /var/lib/k0s/kubelet|' kustomize/overlays/dra/dra-daemonset.yaml
refused "two image tags" \
  "kustomize/variants/k3s: 2 image references (localhost/gpufrac:0.0.9, localhost/gpufrac:$V); one image for every component, set once by \`images:\`" \
  sed -i 's|        - name: setup|        - name: setup\n          image: localhost/gpufrac:0.0.9|' kustomize/variants/k3s/node-setup.yaml
refused "a tag that is not the version" \
  "kustomize/overlays/runtimeclass: DaemonSet gpufrac-system/gpufrac-node: \$.spec.template.spec.containers[0]: image localhost/gpufrac:latest is not tagged with the package version $V" \
  sed -i 's/newTag: .*/newTag: latest/' kustomize/overlays/runtimeclass/kustomization.yaml
refused "placeholder" \
  "$ALL4: ConfigMap gpufrac-system/gpufrac-config: \$.data.config.yaml: placeholder '<install-dir>' left" \
  sed -i 's|/usr/local/gpufrac/current/lib/|<install-dir>/lib/|' kustomize/base/configmap.yaml
refused "image never set" \
  "kustomize/overlays/runtimeclass: DaemonSet gpufrac-system/gpufrac-node: \$.spec.template.spec.containers[0]: image 'gpufrac' has no tag: the overlay's \`images:\` did not set it" \
  sed -i '/^images:/,$d' kustomize/overlays/runtimeclass/kustomization.yaml
refused "unknown kind" \
  "$DRA3: PriorityClass gpufrac-critical: scheduling.k8s.io/v1 PriorityClass: not a kind the pinned schemas know (admissionregistration.k8s.io/v1, apps/v1, node.k8s.io/v1, rbac.authorization.k8s.io/v1, resource.k8s.io/v1, v1); pin its schema in tests/fixtures/kubernetes-openapi" \
  sh -c 'printf "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: gpufrac-critical\nvalue: 1000\n" > kustomize/overlays/dra/pc.yaml && sed -i "s/  - rbac.yaml/  - rbac.yaml\n  - pc.yaml/" kustomize/overlays/dra/kustomization.yaml'
refused "an example's unknown field" \
  "examples/example-pod.yaml: Pod gpufrac-example: \$.spec.containers[0].imagePullPolicyy: unknown field" \
  sed -i 's/      image: busybox:1.36/      image: busybox:1.36\n      imagePullPolicyy: Always/' examples/example-pod.yaml
refused "a version label" \
  "$DRA3: DaemonSet gpufrac-system/gpufrac-dra: \$.metadata.labels: app.kubernetes.io/version is '0.0.9', the package is $V" \
  sed -i 's/app.kubernetes.io\/version: .*/app.kubernetes.io\/version: "0.0.9"/' kustomize/overlays/dra/dra-daemonset.yaml

if [ "$FAILURES" -ne 0 ]; then echo "$FAILURES check(s) failed"; exit 1; fi
echo "all refusals as expected"
