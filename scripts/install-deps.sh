#!/bin/sh
# Installs everything gpufrac needs to build, test and demo on Debian 12 (bookworm), as root.
# Used by both README commands and by .ci/run. Idempotent: does nothing when all are present.
set -eu
PACKAGES="build-essential cmake ninja-build pkg-config git ca-certificates
  libseccomp-dev libcap-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev libcpp-httplib-dev
  libssl-dev openssl
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  clang-19 libclang-rt-19-dev clang-format
  runc crun podman containerd busybox-static jq procps iproute2 util-linux kmod
  curl prometheus tmux docker.io python3-yaml mmdebstrap
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-protobuf
  debhelper dpkg-dev fakeroot lintian man-db systemd"
# Debian 12's kubectl (kubernetes-client: 1.20, kustomize v2.0.3) renders the manifests in
# scripts/check-manifests.py: the oldest kustomize they must work with. Where another package owns
# /usr/bin/kubectl already (Google Cloud's, say), it is unpacked into /opt/gpufrac-deps instead.
KUBECTL_DIR=/opt/gpufrac-deps/kubernetes-client
kubectl_owner=$(dpkg-query -S /usr/bin/kubectl 2>/dev/null | cut -d: -f1 || true)
if [ -z "$kubectl_owner" ] || [ "$kubectl_owner" = kubernetes-client ]; then
  PACKAGES="$PACKAGES kubernetes-client"
elif [ ! -x "$KUBECTL_DIR/usr/bin/kubectl" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: kubernetes-client is missing (/usr/bin/kubectl is $kubectl_owner's; run as root)" >&2
    exit 2
  fi
  echo "install-deps: unpacking kubernetes-client into $KUBECTL_DIR (/usr/bin/kubectl is $kubectl_owner's)"
  tmp=$(mktemp -d)
  (cd "$tmp" && { apt-get download -qq kubernetes-client 2>/dev/null ||
    { apt-get update -qq && apt-get download -qq kubernetes-client; }; })
  mkdir -p "$KUBECTL_DIR"
  dpkg-deb -x "$tmp"/kubernetes-client_*.deb "$KUBECTL_DIR"
  rm -rf "$tmp"
fi
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages:$missing (run as root)" >&2
  exit 2
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
