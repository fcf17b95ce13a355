#!/bin/sh
# Builds the gpufrac Debian package: packaging/build-deb.sh [OUTDIR] (default build-deb/).
# Stages a copy of the source tree (the files git tracks plus untracked ones it does not ignore, or
# the whole tree without build directories when this is not a git checkout) with packaging/debian
# as debian/, runs `dpkg-buildpackage -b -uc -us` there, and moves gpufrac_<version>_<arch>.deb,
# .buildinfo and .changes to OUTDIR. The staged copy is removed afterwards (KEEP_STAGE=1 keeps it).
# Needs the build dependencies of packaging/debian/control (scripts/install-deps.sh installs them).
# GPUFRAC_PREBUILT=DIR packages a tree already built by `GPUFRAC_DEB_LAYOUT=1 scripts/build.sh`
# (the package's paths and flags) instead of compiling again; any other tree is refused.
set -eu
cd "$(dirname "$0")/.."
SRC=$(pwd)
OUTDIR=${1:-build-deb}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)

# The package version is the project's CMake version plus the changelog's Debian revision.
cmake_version=$(sed -n 's/^project(gpufrac VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
deb_version=$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)
if [ "${deb_version%-*}" != "$cmake_version" ]; then
  echo "build-deb: packaging/debian/changelog says $deb_version but CMakeLists.txt says $cmake_version;" \
    "add a changelog entry (dch -v $cmake_version-1)" >&2
  exit 1
fi

if [ -n "${GPUFRAC_PREBUILT:-}" ]; then
  GPUFRAC_PREBUILT=$(cd "$GPUFRAC_PREBUILT" && pwd)
  cache=$GPUFRAC_PREBUILT/CMakeCache.txt
  if ! grep -qx 'CMAKE_INSTALL_PREFIX:PATH=/usr' "$cache" 2>/dev/null ||
    ! grep -qx 'CMAKE_BUILD_TYPE:STRING=None' "$cache"; then
    echo "build-deb: $GPUFRAC_PREBUILT was not configured with the package's layout;" \
      "build it with GPUFRAC_DEB_LAYOUT=1 BUILD_DIR=$GPUFRAC_PREBUILT scripts/build.sh" >&2
    exit 1
  fi
  export GPUFRAC_PREBUILT
  echo "build-deb: packaging the prebuilt tree $GPUFRAC_PREBUILT"
fi

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/gpufrac-deb.XXXXXX")
cleanup() { if [ "${KEEP_STAGE:-0}" != 1 ]; then rm -rf "$STAGE"; fi; }
trap cleanup EXIT
TREE=$STAGE/gpufrac-$cmake_version

echo "build-deb: staging the source tree in $TREE"
mkdir -p "$TREE"
if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Existing files only: a file deleted in the work tree but still in the index is left out.
  # shellcheck disable=SC2016
  git -C "$SRC" ls-files -z --cached --others --exclude-standard |
    (cd "$SRC" && xargs -0 sh -c 'for f; do [ -f "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done' sh) |
    tar -C "$SRC" --null -T - -cf - | tar -C "$TREE" -xf -
else
  tar -C "$SRC" --exclude='./.git' --exclude='./build*' --exclude='./obj-*' -cf - . | tar -C "$TREE" -xf -
fi
rm -rf "$TREE/debian"
cp -r "$SRC/packaging/debian" "$TREE/debian"
rm -rf "$TREE/debian/.debhelper" "$TREE/debian/gpufrac" "$TREE/debian/files" "$TREE/debian/debhelper-build-stamp"

jobs=${JOBS:-$(nproc)}
echo "build-deb: dpkg-buildpackage -b -uc -us (gpufrac $deb_version, $jobs jobs)"
(cd "$TREE" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" dpkg-buildpackage -b -uc -us)

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
for f in "gpufrac_${deb_version}_${arch}.deb" "gpufrac_${deb_version}_${arch}.buildinfo" \
  "gpufrac_${deb_version}_${arch}.changes"; do
  mv -f "$STAGE/$f" "$OUTDIR/"
done
echo "build-deb: $OUTDIR/gpufrac_${deb_version}_${arch}.deb"
