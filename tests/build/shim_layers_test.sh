#!/bin/bash
# The shim's files layer one way (limits/README.md "Source map"): an object of libgpufrac-limits.so
# uses (has undefined symbols that are defined by) only objects of a lower layer, or of its own layer
# listed before it. The memory accounting (3a) and the compute gate (3b) do not know each other. The
# one pair allowed to refer to each other: the wrapper table names cuGetProcAddress's wrapper, which
# looks wrappers up in it (procaddr -> intercept_table). Every object must be placed here.
# Usage (ctest passes them): shim_layers_test.sh <object>:<object>:...
set -euo pipefail
LAYERS=(
  "1 config_parse procstat slot_lock ptr_table array_size region account slots arbiter arbiter_slots lease_view lease_pick lease lease_hold lease_call"
  "2 real log state device mps_env"
  "3a burst charge"
  "3b capture streams compute_dev gate"
  "4 fork"
  "5 intercept_alloc intercept_array intercept_async intercept_vmm intercept_report intercept_launch intercept_sync procaddr intercept_table dlsym"
)
ALLOWED="procaddr->intercept_table"
declare -A layer=() pos=()
n=0
for line in "${LAYERS[@]}"; do
  read -r l files <<<"$line"
  for f in $files; do layer[$f]=$l pos[$f]=$((n++)); done
done
# rank L: the height of layer L (3a and 3b side by side).
rank() { case $1 in 1) echo 1 ;; 2) echo 2 ;; 3a | 3b) echo 3 ;; 4) echo 4 ;; 5) echo 5 ;; esac; }
IFS=: read -r -a OBJECTS <<<"${1:?usage: shim_layers_test.sh <object>:<object>:...}"
FAILURES=0
fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}
name_of() { basename "${1%.o}" .c; }
declare -A owner=()
for o in "${OBJECTS[@]}"; do
  f=$(name_of "$o")
  [ -n "${layer[$f]:-}" ] || fail "$f.c is not placed in a layer (limits/README.md \"Source map\", and this test)"
  while read -r sym; do owner[$sym]=$f; done < <(nm --defined-only "$o" | awk '$2 ~ /^[TDBRVW]$/ { print $3 }')
done
for f in "${!layer[@]}"; do
  found=0
  for o in "${OBJECTS[@]}"; do [ "$(name_of "$o")" = "$f" ] && found=1; done
  [ "$found" = 1 ] || fail "$f.c is placed in a layer but is not in the shim"
done
edges=0
for o in "${OBJECTS[@]}"; do
  f=$(name_of "$o")
  [ -n "${layer[$f]:-}" ] || continue
  for d in $(nm -u "$o" | awk '{ print $2 }' | while read -r s; do [ -n "${owner[$s]:-}" ] && echo "${owner[$s]}"; done | sort -u); do
    [ "$d" = "$f" ] && continue
    edges=$((edges + 1))
    lf=${layer[$f]} ld=${layer[$d]}
    if [ "$lf" = "$ld" ]; then
      [ "${pos[$d]}" -lt "${pos[$f]}" ] || [ "$f->$d" = "$ALLOWED" ] ||
        fail "$f.c uses $d.c, listed after it in layer $lf"
    elif [ "$(rank "$ld")" -ge "$(rank "$lf")" ]; then
      fail "$f.c (layer $lf) uses $d.c (layer $ld)"
    fi
  done
done
# The shim's files do use each other: a check that found no use at all read no symbols.
[ "$edges" -ge 40 ] || fail "only $edges uses between the shim's files found: nm read nothing?"
echo "$edges uses between ${#OBJECTS[@]} files of the shim, all downwards"
[ "$FAILURES" = 0 ] || { echo "$FAILURES failure(s)" >&2; exit 1; }
