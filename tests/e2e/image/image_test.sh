#!/bin/bash
# The gpufrac image (scripts/build-image.sh: a Debian 12 base from Debian's repository with
# mmdebstrap, the package installed by `podman build --pull=never` of
# packaging/container/Containerfile's runtime stage): its programs are the package's version, the
# OCI archive is written, and `kubectl kustomize` of the dra overlay references that image and no
# other, with no placeholder.
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/image_lib.sh"
e2e_tmp
image_ensure
mkdir -p "$E2E_TMP/hooks.d"
pod() { podman --cgroup-manager cgroupfs --runtime runc --hooks-dir "$E2E_TMP/hooks.d" run --rm --network none \
  --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "$IMAGE" "$@"; }

run pod gpufrac --version
assert_eq "$OUT" "gpufrac $IMAGE_VERSION" "gpufrac --version in the image"
run pod gpufrac-dra --version
assert_eq "$OUT" "gpufrac-dra $IMAGE_VERSION" "gpufrac-dra --version in the image"
run pod dpkg-query -W -f '${Version}' gpufrac
assert_eq "$OUT" "$IMAGE_VERSION-1" "the package installed in the image"
run pod sh -c 'test -x /usr/bin/gpufrac-hook && test -x /usr/bin/gpufrac-runtime && ls /usr/lib/*/gpufrac/libgpufrac-limits.so'
assert_eq "$RC" 0 "the hook, the runtime wrapper and the shim are in the image: $OUT"
[ -s "$IMAGE_ARCHIVE" ] && tar -tf "$IMAGE_ARCHIVE" | grep -qx 'index.json' || fail "no OCI archive $IMAGE_ARCHIVE"

# The rendered manifests reference the built image, and only it.
image_render overlays/dra "$E2E_TMP/dra.yaml"
images=$(sed -n 's/^ *image: *//p' "$E2E_TMP/dra.yaml" | sort -u)
assert_eq "$images" "$IMAGE" "the dra overlay's one image"
podman image exists "$images" || fail "the rendered image $images is not in podman"
assert_not_contains "$(cat "$E2E_TMP/dra.yaml")" "GPUFRAC_IMAGE" "a placeholder left in the rendered manifests"
echo "image $IMAGE: $(podman image inspect --format '{{.Size}}' "$IMAGE") bytes"
finish
