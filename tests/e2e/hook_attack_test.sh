#!/bin/bash
# A hostile rootfs or OCI input: symlinks from mount targets to host locations, hostile container
# ids, a 1 MB annotation, a config.json that is not JSON. The hook fails with one line, nothing on
# the host is created, overwritten or mounted over, and nothing stays booked.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_runc_test attack
e2e_on_exit() { runc_cleanup "$P"; umount -R "$E2E_TMP/hostdir" 2>/dev/null || true; }
e2e_gpu_config a100-40gb-x1.yaml
HOSTDIR=$E2E_TMP/hostdir
mkdir -p "$HOSTDIR"
echo "host content" >"$HOSTDIR/file"
host_snapshot() { (cd "$HOSTDIR" && find . -printf '%p %s %y\n' | sort; cat file) | md5sum; }
SNAP=$(host_snapshot)

attack() {
  local name=$1 link=$2 target=$3 n=$4
  local b=$E2E_TMP/a$n
  make_bundle "$b" 'echo RAN' gpufrac.io/fraction=0.25
  rm -rf "${b}/rootfs${link}"
  mkdir -p "$(dirname "${b}/rootfs${link}")"
  ln -s "$target" "${b}/rootfs${link}"
  run runc run --bundle "$b" "$P-$n"
  assert_eq "$RC" 1 "$name: refused"
  assert_not_contains "$OUT" "RAN" "$name: container did not run"
  assert_contains "$OUT" "gpufrac-hook: container path" "$name: one-line refusal"
  assert_contains "$OUT" "symlink" "$name: names the symlink"
  assert_eq "$(host_snapshot)" "$SNAP" "$name: host directory unchanged"
  assert_eq "$(mount | grep -c "$HOSTDIR" || true)" 0 "$name: nothing mounted on the host"
  assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" 0 "$name: booking rolled back"
}
attack "etc absolute" /etc "$HOSTDIR" 1
attack "etc relative" /etc "../../../../../../../../$HOSTDIR" 2
attack "preload absolute" /etc/ld.so.preload "$HOSTDIR/file" 3
attack "preload relative" /etc/ld.so.preload "../../../../../../../..$HOSTDIR/file" 4
attack "preload to a new host file" /etc/ld.so.preload "$HOSTDIR/created" 5
attack "run absolute" /run "$HOSTDIR" 6
attack "shim directory" /run/gpufrac "$HOSTDIR" 7
attack "shim directory relative" /run/gpufrac "../../../../../../..$HOSTDIR" 8

# Hostile container ids and inputs, fed to the hook directly.
mkdir -p "$E2E_TMP/plain"
make_bundle "$E2E_TMP/plain" 'true' gpufrac.io/fraction=0.25
for id in '../../etc' 'a/b' '..' ''; do
  state=$(jq -cn --arg id "$id" --arg b "$E2E_TMP/plain" '{ociVersion:"1.0.2",id:$id,status:"creating",pid:1,bundle:$b}')
  run "$HOOK" createRuntime <<<"$state"
  assert_eq "$RC" 1 "container id [$id] refused"
  assert_contains "$OUT" "gpufrac-hook: container id" "container id [$id]: one line"
  assert_eq "$(printf '%s\n' "$OUT" | wc -l)" 1 "container id [$id]: exactly one line"
done
head -c 1048576 /dev/zero | tr '\0' '7' >"$E2E_TMP/big.txt"   # 1 MB: too long for an argv string
make_bundle "$E2E_TMP/big" 'true'
jq --rawfile big "$E2E_TMP/big.txt" '.annotations["gpufrac.io/fraction"] = ("0." + $big)' "$E2E_TMP/big/config.json" \
  >"$E2E_TMP/big.json" && mv "$E2E_TMP/big.json" "$E2E_TMP/big/config.json"
run runc run --bundle "$E2E_TMP/big" "$P-big"
assert_eq "$RC" 1 "1 MB annotation refused"
assert_contains "$OUT" "gpufrac-hook: gpufrac.io/fraction:" "1 MB annotation: names the annotation"
assert_contains "$OUT" "(1048578 bytes)" "1 MB annotation: quoted bounded"
echo '{"annotations":{"gpufrac.io/fraction":"0.25"' >"$E2E_TMP/plain/config.json"
state=$(jq -cn --arg b "$E2E_TMP/plain" '{id:"notjson",bundle:$b,pid:1}')
run "$HOOK" createRuntime <<<"$state"
assert_eq "$RC" 1 "config.json that is not JSON refused"
assert_contains "$OUT" "config.json: invalid JSON at byte" "not-JSON message"
# A text that cannot name gpufrac is no request: the hook leaves it to the runtime, which parsed
# config.json before any hook ran (docs/architecture.md "Security", the fast path's text test).
echo '{"not json' >"$E2E_TMP/plain/config.json"
run "$HOOK" createRuntime <<<"$state"
assert_eq "$RC" 0 "not JSON and no gpufrac name: not the hook's business"
assert_eq "$OUT" "" "not JSON and no gpufrac name: nothing said"
run "$HOOK" createRuntime <<<'garbage'
assert_eq "$RC" 1 "state that is not JSON refused"
assert_eq "$(jq '.entries | length' "$E2E_TMP/state/ledger.json" 2>/dev/null || echo 0)" 0 "nothing booked"
assert_eq "$(host_snapshot)" "$SNAP" "host directory unchanged at the end"
finish
