#!/bin/sh
# Builds the gpufrac image, localhost/gpufrac:<package version>, on a machine that reaches only
# Debian's repository: scripts/build-image.sh [DEB]
#   1. the base: Debian 12 (bookworm) as debian:12-slim has it (apt, no documentation or locales),
#      made from Debian's repository with mmdebstrap and imported with `podman import` as
#      localhost/gpufrac-base:bookworm-slim; kept in build-image/base-bookworm-slim.tar and reused
#      (REBUILD_BASE=1 makes it again);
#   2. the package: DEB, else build-deb/gpufrac_<version>-1_<arch>.deb (the test's package stage),
#      else packaging/build-deb.sh of $BUILD_DIR (default build) when it has the package's layout,
#      else a build of its own;
#   3. `podman build --pull=never` of packaging/container/Containerfile's runtime stage, whose
#      build stage takes the package as it is (a context of build-image/context/prebuilt/);
#   4. the OCI archive build-image/gpufrac-<version>.oci.tar (`podman load -i`, or
#      `ctr -n k8s.io images import` on a node).
# An image already built from the same package (label gpufrac.deb-sha256) is kept (REBUILD=1
# builds it again). Prints the image's name and size. Run as root; needs podman and mmdebstrap.
set -eu
cd "$(dirname "$0")/.."
SRC=$(pwd)
OUT=${IMAGE_DIR:-build-image}
BUILD_DIR=${BUILD_DIR:-build}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE=localhost/gpufrac-base:bookworm-slim

say() { echo "build-image: $*"; }
die() { echo "build-image: $*" >&2; exit "${2:-1}"; }

version=$(sed -n 's/^project(gpufrac VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
arch=$(dpkg --print-architecture)
IMAGE=localhost/gpufrac:$version
for tool in podman mmdebstrap; do
  command -v "$tool" >/dev/null || die "needs $tool (scripts/install-deps.sh installs it)" 2
done
mkdir -p "$OUT"

# 1. The base, made once.
base_tar=$OUT/base-bookworm-slim.tar
if [ "${REBUILD_BASE:-0}" = 1 ] || [ ! -s "$base_tar" ]; then
  say "mmdebstrap bookworm from $MIRROR into $base_tar"
  rm -f "$base_tar.part"
  mmdebstrap --mode=root --variant=apt --format=tar --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --aptopt='APT::Install-Recommends "false"' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/log/apt "$1"/var/log/dpkg.log' \
    bookworm "$base_tar.part" "$MIRROR" || die "mmdebstrap failed (is $MIRROR reachable?)"
  mv "$base_tar.part" "$base_tar"
  podman rmi -f "$BASE" >/dev/null 2>&1 || true
fi
if [ "$(podman image inspect --format '{{index .Labels "gpufrac.base-sha256"}}' "$BASE" 2>/dev/null)" != \
  "$(sha256sum "$base_tar" | cut -d' ' -f1)" ]; then
  say "podman import $base_tar as $BASE"
  podman import --change 'CMD ["/bin/bash"]' \
    --change "LABEL gpufrac.base-sha256=$(sha256sum "$base_tar" | cut -d' ' -f1)" "$base_tar" "$BASE" >/dev/null
fi

# 2. The package.
deb=${1:-}
if [ -z "$deb" ] && [ -f "build-deb/gpufrac_${version}-1_${arch}.deb" ]; then deb=build-deb/gpufrac_${version}-1_${arch}.deb; fi
if [ -z "$deb" ]; then
  if grep -qx 'CMAKE_INSTALL_PREFIX:PATH=/usr' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
    GPUFRAC_PREBUILT=$BUILD_DIR ./packaging/build-deb.sh "$OUT/deb" >&2
  else
    ./packaging/build-deb.sh "$OUT/deb" >&2
  fi
  deb=$OUT/deb/gpufrac_${version}-1_${arch}.deb
fi
[ -f "$deb" ] || die "no package $deb"
deb_sum=$(sha256sum "$deb" | cut -d' ' -f1)

# 3. The image, unless this package's is there already.
if [ "${REBUILD:-0}" != 1 ] &&
  [ "$(podman image inspect --format '{{index .Labels "gpufrac.deb-sha256"}}' "$IMAGE" 2>/dev/null)" = "$deb_sum" ]; then
  say "$IMAGE is already built from $deb"
else
  ctx=$OUT/context
  rm -rf "$ctx"
  mkdir -p "$ctx/prebuilt"
  cp "$deb" "$ctx/prebuilt/"
  say "podman build --pull=never of the runtime stage with $deb"
  podman build --pull=never --isolation=chroot --network=host --target runtime -f "$SRC/packaging/container/Containerfile" \
    --build-arg BUILDER="$BASE" --build-arg BASE="$BASE" --build-arg VERSION="$version" \
    --label gpufrac.deb-sha256="$deb_sum" -t "$IMAGE" "$ctx" >&2 || die "podman build failed"
  rm -f "$OUT/gpufrac-$version.oci.tar"
fi

# 4. The archive.
if [ ! -s "$OUT/gpufrac-$version.oci.tar" ]; then
  podman save --format oci-archive -o "$OUT/gpufrac-$version.oci.tar" "$IMAGE" >/dev/null
fi
say "$IMAGE, $(podman image inspect --format '{{.Size}}' "$IMAGE") bytes; archive $OUT/gpufrac-$version.oci.tar"
