#!/bin/bash
# `gpufrac runtime configure` on the fixtures of tests/fixtures/runtime-configure (see its README):
# expected output for each engine and containerd config version, a second run changes nothing,
# backups are made once, --dry-run prints a diff and writes nothing, refusals are one line, and
# containerd 1.6 loads the result (`containerd config dump` lists the gpufrac runtime next to runc
# and keeps the copied settings).
# GPUFRAC_REGENERATE_FIXTURES=1 rewrites the *.expected files from the current output instead.
source "$(dirname "$0")/lib.sh"
need_cmd jq
e2e_tmp
FIXTURES=$GPUFRAC_SOURCE_DIR/tests/fixtures/runtime-configure
RT=/usr/bin/gpufrac-runtime

main_file() {
  case $1 in
    containerd) echo config.toml ;; docker) echo daemon.json ;; crio) echo crio.conf ;; podman) echo containers.conf ;;
  esac
}
# prepare <engine>/<case>: a copy of the fixture in $E2E_TMP/<engine>/<case> with @DIR@ replaced
# by that directory (inputs only); prints the copy's path.
prepare() {
  local dir=$E2E_TMP/$1 f
  rm -rf "$dir"
  mkdir -p "$dir"
  if [ -d "$FIXTURES/$1" ]; then cp -r "$FIXTURES/$1/." "$dir/"; fi
  rm -f "$dir/.keep"
  find "$dir" \( -name '*.expected' -o -name '*.out' \) -delete
  for f in $(find "$dir" -type f); do sed -i "s|@DIR@|$dir|g" "$f"; done
  echo "$dir"
}
# The files each engine writes.
outputs() {
  case $1 in
    containerd) echo config.toml conf.d/99-gpufrac.toml ;;
    docker) echo daemon.json ;;
    crio) echo crio.conf.d/99-gpufrac.toml ;;
    podman) echo containers.conf.d/99-gpufrac.conf ;;
  esac
}
# check_expected <engine>/<case> <dir>: each output equals the fixture's <file>.expected (with
# @DIR@ for the directory).
check_expected() {
  local case=$1 dir=$2 rel exp
  for rel in $(outputs "${case%%/*}"); do
    exp=$FIXTURES/$case/$rel.expected
    if [ "${GPUFRAC_REGENERATE_FIXTURES:-0}" = 1 ]; then
      mkdir -p "$(dirname "$exp")"
      sed "s|$dir|@DIR@|g" "$dir/$rel" >"$exp"
      continue
    fi
    [ -f "$exp" ] || { fail "$case: missing fixture $rel.expected"; continue; }
    sed "s|@DIR@|$dir|g" "$exp" | cmp -s - "$dir/$rel" || fail "$case: $rel differs from $rel.expected:
$(sed "s|@DIR@|$dir|g" "$exp" | diff - "$dir/$rel")"
  done
}
snapshot() { (cd "$1" && find . -type f | sort | xargs md5sum); }

# 1. Expected output, then a second run that changes nothing.
for case in containerd/v2-default containerd/v2-minimal containerd/v3 containerd/missing containerd/glob-import \
            docker/existing docker/missing crio/default podman/hooks-dir; do
  engine=${case%%/*}
  dir=$(prepare "$case")
  run "$GPUFRAC" runtime configure "$engine" --engine-config "$dir/$(main_file "$engine")" --runtime-path "$RT"
  assert_eq "$RC" 0 "$case: configure: $OUT"
  check_expected "$case" "$dir"
  before=$(snapshot "$dir")
  run "$GPUFRAC" runtime configure "$engine" --engine-config "$dir/$(main_file "$engine")" --runtime-path "$RT"
  assert_eq "$RC" 0 "$case: second run"
  assert_contains "$OUT" "$engine: already configured (" "$case: second run says nothing changed"
  assert_eq "$(snapshot "$dir")" "$before" "$case: second run leaves every file as it was"
done

# 2. Messages and backups of the first run (containerd v2-default: one new file, one updated).
dir=$(prepare containerd/backup)
cp "$FIXTURES/containerd/v2-minimal/config.toml" "$dir/config.toml"
run "$GPUFRAC" runtime configure containerd --engine-config "$dir/config.toml" --runtime-path "$RT"
note=""  # the note appears only while $RT is missing (it exists with the package installed)
[ -e "$RT" ] || note="
note: $RT does not exist yet; install gpufrac-runtime there"
assert_eq "$OUT" "wrote $dir/conf.d/99-gpufrac.toml (new file)
updated $dir/config.toml (backup: $dir/config.toml.gpufrac.bak)
restart containerd to load it: systemctl restart containerd$note" "first-run report"
cmp -s "$FIXTURES/containerd/v2-minimal/config.toml" "$dir/config.toml.gpufrac.bak" || fail "the backup is the original"
assert_eq "$(stat -c %a "$dir/config.toml")" "644" "mode kept"
# A later change (another runtime path) keeps the first backup: it stays the operator's original.
run "$GPUFRAC" runtime configure containerd --engine-config "$dir/config.toml" --runtime-path /opt/gpufrac/bin/gpufrac-runtime
assert_eq "$OUT" "updated $dir/conf.d/99-gpufrac.toml (backup: $dir/conf.d/99-gpufrac.toml.gpufrac.bak)
restart containerd to load it: systemctl restart containerd
note: /opt/gpufrac/bin/gpufrac-runtime does not exist yet; install gpufrac-runtime there" "second change backs up the drop-in only"
cmp -s "$FIXTURES/containerd/v2-minimal/config.toml" "$dir/config.toml.gpufrac.bak" || fail "the first backup is kept"
assert_contains "$(cat "$dir/conf.d/99-gpufrac.toml")" 'BinaryName = "/opt/gpufrac/bin/gpufrac-runtime"' "new path"
# daemon.json keeps its mode.
dir=$(prepare docker/existing)
chmod 600 "$dir/daemon.json"
"$GPUFRAC" runtime configure docker --engine-config "$dir/daemon.json" --runtime-path "$RT" >/dev/null
assert_eq "$(stat -c %a "$dir/daemon.json") $(stat -c %a "$dir/daemon.json.gpufrac.bak")" "600 600" "daemon.json and its backup keep mode 600"

# 3. --dry-run prints the diff and writes nothing.
dir=$(prepare containerd/v2-minimal)
before=$(snapshot "$dir")
run "$GPUFRAC" runtime configure containerd --dry-run --engine-config "$dir/config.toml" --runtime-path "$RT"
assert_eq "$RC" 0 "dry run"
assert_eq "$(snapshot "$dir")" "$before" "dry run writes nothing"
if [ "${GPUFRAC_REGENERATE_FIXTURES:-0}" = 1 ]; then
  sed "s|$dir|@DIR@|g" <<<"$OUT" >"$FIXTURES/containerd/v2-minimal/dry-run.out"
fi
assert_eq "$OUT" "$(sed "s|@DIR@|$dir|g" "$FIXTURES/containerd/v2-minimal/dry-run.out")" "dry-run output"
run "$GPUFRAC" runtime configure containerd --dry-run --json --engine-config "$dir/config.toml" --runtime-path "$RT"
assert_eq "$(jq -c '[.engine, .dry_run, .changed, [.files[] | [.path, .action, (.diff | length > 0)]]]' <<<"$OUT")" \
  "[\"containerd\",true,true,[[\"$dir/conf.d/99-gpufrac.toml\",\"create\",true],[\"$dir/config.toml\",\"update\",true]]]" \
  "dry run as JSON"
"$GPUFRAC" runtime configure containerd --engine-config "$dir/config.toml" --runtime-path "$RT" >/dev/null
run "$GPUFRAC" runtime configure containerd --json --engine-config "$dir/config.toml" --runtime-path "$RT"
assert_eq "$(jq -c '[.changed, [.files[].action], .reload]' <<<"$OUT")" '[false,["unchanged","unchanged"],""]' \
  "a second run as JSON: nothing changed"
run "$GPUFRAC" runtime configure containerd --dry-run --engine-config "$dir/config.toml" --runtime-path "$RT"
assert_eq "$OUT" "containerd: already configured ($dir/conf.d/99-gpufrac.toml, $dir/config.toml); nothing to change" \
  "dry run after configuring"

# 4. Refusals: one line, nothing written.
dir=$(prepare containerd/refusals)
printf 'root = "/var/lib/containerd"\n' >"$dir/config.toml"
run "$GPUFRAC" runtime configure containerd --engine-config "$dir/config.toml" --runtime-path "$RT"
assert_eq "$RC" 1 "version 1 refused"
assert_eq "$OUT" "gpufrac: runtime configure containerd: $dir/config.toml: config version 1 is not supported; gpufrac writes version 2 (containerd 1.x: \`version = 2\` and [plugins.\"io.containerd.grpc.v1.cri\"]) and version 3 (containerd 2.x)" \
  "version 1 message"
printf 'version = 2\nimports = ["%s/conf.d/*.toml"]\n' "$dir" >"$dir/config.toml"
mkdir -p "$dir/conf.d"
printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n' >"$dir/conf.d/zz-late.toml"
run "$GPUFRAC" runtime configure containerd --engine-config "$dir/config.toml" --runtime-path "$RT"
assert_eq "$RC" 1 "a CRI file loaded after the drop-in is refused"
assert_eq "$OUT" "gpufrac: runtime configure containerd: $dir/conf.d/zz-late.toml sets [plugins.\"io.containerd.grpc.v1.cri\"] and containerd loads it after $dir/conf.d/99-gpufrac.toml, which would drop the gpufrac runtime; move its settings into $dir/config.toml or import it before the drop-in" \
  "late CRI file message"
rm "$dir/conf.d/zz-late.toml"
printf 'version = 2\n[plugins]\n  "io.containerd.grpc.v1.cri".sandbox_image = "x"\n' >"$dir/config.toml"
run "$GPUFRAC" runtime configure containerd --engine-config "$dir/config.toml" --runtime-path "$RT"
assert_eq "$OUT" "gpufrac: runtime configure containerd: $dir/config.toml:3: sets the CRI plugin with dotted keys or an inline table; gpufrac needs [plugins.\"io.containerd.grpc.v1.cri\"] tables" \
  "dotted keys refused"
printf 'version = 2\n[plugins\n' >"$dir/config.toml"
run "$GPUFRAC" runtime configure containerd --engine-config "$dir/config.toml" --runtime-path "$RT"
assert_eq "$OUT" "gpufrac: runtime configure containerd: $dir/config.toml:2: expected '.' or ']' after a key" "TOML syntax error names file:line"
printf '{"runtimes": []}' >"$dir/daemon.json"
run "$GPUFRAC" runtime configure docker --engine-config "$dir/daemon.json" --runtime-path "$RT"
assert_eq "$OUT" "gpufrac: runtime configure docker: $dir/daemon.json: runtimes must be an object of {\"path\": ..., \"runtimeArgs\": [...]}" \
  "docker runtimes type"
run "$GPUFRAC" runtime configure lxc
assert_eq "$OUT" 'gpufrac: "lxc" is not an engine; use containerd, docker, crio or podman' "unknown engine"
run "$GPUFRAC" runtime configure docker --runtime-path bin/gpufrac-runtime --engine-config "$dir/daemon.json"
assert_eq "$OUT" 'gpufrac: --runtime-path "bin/gpufrac-runtime": must be an absolute path' "relative runtime path"
assert_eq "$(ls "$dir" | sort | tr '\n' ' ')" "conf.d config.toml daemon.json " "refusals wrote nothing"

# 5. containerd 1.6 loads what was written: gpufrac and runc, and the copied settings.
if command -v containerd >/dev/null 2>&1; then
  for case in containerd/v2-default containerd/v2-minimal containerd/missing containerd/glob-import; do
    dir=$E2E_TMP/$case
    run containerd --config "$dir/config.toml" config dump
    assert_eq "$RC" 0 "$case: containerd config dump: $OUT"
    assert_contains "$OUT" '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.gpufrac]' "$case: dump lists gpufrac"
    assert_contains "$OUT" "BinaryName = \"$RT\"" "$case: gpufrac's binary"
    assert_contains "$OUT" 'pod_annotations = ["gpufrac.io/*", "gpu-fraction", "gpu-memory", "clearml-injector/fraction", "gpu-fraction.limit", "gpu-memory.limit"]' \
      "$case: pod annotations"
    assert_contains "$OUT" '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]' "$case: runc is kept"
  done
  run containerd --config "$E2E_TMP/containerd/v2-default/config.toml" config dump
  assert_contains "$OUT" 'sandbox_image = "registry.example.com/pause:3.9"' "v2-default: copied CRI settings survive"
  assert_eq "$(grep -c 'SystemdCgroup = true' <<<"$OUT")" 2 "v2-default: runc's SystemdCgroup kept and copied to gpufrac"
  run containerd --config "$E2E_TMP/containerd/glob-import/config.toml" config dump
  assert_contains "$OUT" 'config_path = "/etc/containerd/certs.d"' "glob-import: the imported file's settings survive"
else
  echo "containerd not installed: config dump checks skipped"
fi
finish
