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
  curl prometheus tmux docker.io
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-protobuf
  debhelper dpkg-dev fakeroot lintian man-db systemd"
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
