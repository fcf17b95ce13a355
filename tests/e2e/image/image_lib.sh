# Shared by the image tests (tests/e2e/image/*_test.sh, sourced after lib.sh): the image built once
# per package and kept between the tests of a run, and the manifests rendered as a user renders them.

IMAGE_VERSION=$(sed -n 's/^project(gpufrac VERSION \([0-9.]*\).*/\1/p' "$GPUFRAC_SOURCE_DIR/CMakeLists.txt")
IMAGE=localhost/gpufrac:$IMAGE_VERSION
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# image_ensure: $IMAGE built by scripts/build-image.sh from the package ($GPUFRAC_DEB, else the
# package stage's build-deb/gpufrac_<version>-1_<arch>.deb, else one packaged from the build tree),
# unless an image of that package is there already. The base and the archive are kept in
# $GPUFRAC_BUILD_DIR/image; a lock serializes tests running side by side. Skips only when Debian's
# repository cannot be reached and no image is built yet.
image_ensure() {
  need_root
  need_cmd podman
  need_cmd mmdebstrap
  local dir=$GPUFRAC_BUILD_DIR/image deb=${GPUFRAC_DEB:-} arch
  arch=$(dpkg --print-architecture)
  if [ -z "$deb" ] && [ -f "$GPUFRAC_SOURCE_DIR/build-deb/gpufrac_${IMAGE_VERSION}-1_${arch}.deb" ]; then
    deb=$GPUFRAC_SOURCE_DIR/build-deb/gpufrac_${IMAGE_VERSION}-1_${arch}.deb
  fi
  if ! curl -sf --max-time 20 -o /dev/null "$DEBIAN_MIRROR/dists/bookworm/Release" &&
    ! podman image exists "$IMAGE"; then
    skip "Debian's repository ($DEBIAN_MIRROR) cannot be reached: the image is built from it"
  fi
  mkdir -p "$dir"
  if ! (flock 9 && IMAGE_DIR=$dir BUILD_DIR=$GPUFRAC_BUILD_DIR DEBIAN_MIRROR=$DEBIAN_MIRROR \
    "$GPUFRAC_SOURCE_DIR/scripts/build-image.sh" ${deb:+"$deb"}) 9>"$dir/.lock" >"$E2E_TMP/build-image.log" 2>&1; then
    tail -n 20 "$E2E_TMP/build-image.log" >&2
    fail "scripts/build-image.sh failed"
    finish
  fi
  IMAGE_ARCHIVE=$dir/gpufrac-$IMAGE_VERSION.oci.tar
}

# image_render <overlay> <file>: `kubectl kustomize deploy/kustomize/<overlay>` with the kubectl
# scripts/check-manifests.py uses (Debian's, where install-deps put it).
image_render() {
  local kubectl=${KUBECTL:-}
  if [ -z "$kubectl" ]; then
    if [ -x /opt/gpufrac-deps/kubernetes-client/usr/bin/kubectl ]; then
      kubectl=/opt/gpufrac-deps/kubernetes-client/usr/bin/kubectl
    else
      need_cmd kubectl
      kubectl=kubectl
    fi
  fi
  "$kubectl" kustomize "$GPUFRAC_SOURCE_DIR/deploy/kustomize/$1" >"$2" 2>"$E2E_TMP/kustomize.err" ||
    { fail "kubectl kustomize $1: $(cat "$E2E_TMP/kustomize.err")"; finish; }
}
