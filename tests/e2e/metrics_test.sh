#!/bin/bash
# gpufrac metrics on a simulated two-GPU node: four shares run in runc containers (gpufrac-hook),
# one of them a CUDA allocation loop stepped by the test; three more are refused (capacity,
# malformed, host PID) and gpufrac-runtime refuses one. curl scrapes /metrics: every series with
# exact values (reserved = the sum of the limits, used follows the loop, refusals and latency counts
# from the hook's counter file), the text passes `promtool check metrics`, a scrape neither waits
# for the ledger lock nor writes a file. Then --textfile on a MIG machine (instances by state), and
# the Grafana dashboard: its queries parse (promtool check rules) and name exactly the exported
# series.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
e2e_runc_test metrics
need_cmd curl
need_cmd promtool
need_cmd flock
PROBE=$GPUFRAC_BUILD_DIR/tests/shim/shim_probe
[ -x "$PROBE" ] || skip "shim_probe is not built"
DASHBOARD=$GPUFRAC_SOURCE_DIR/etc/grafana/gpufrac.json
e2e_on_exit() {
  exec 3>&- 2>/dev/null || true
  [ -z "${SERVER:-}" ] || kill "$SERVER" 2>/dev/null || true
  runc_cleanup "$P"
}
e2e_gpu_config a100-40gb-x2.yaml
STATE=$E2E_TMP/state
GPU0=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
GPU1=$(jq -r '.gpus[1].uuid' <<<"$("$GPUFRAC" info --json)")
GIB=1073741824
TOTAL=42505076736

"$GPUFRAC" metrics --listen 127.0.0.1:0 2>"$E2E_TMP/server.log" &
SERVER=$!
for _ in $(seq 100); do grep -q '^gpufrac: serving metrics at ' "$E2E_TMP/server.log" && break; sleep 0.05; done
URL=$(sed -n 's/^gpufrac: serving metrics at //p' "$E2E_TMP/server.log")
assert_contains "$URL" "http://127.0.0.1:" "the server says where it listens"

# scrape: /metrics into $E2E_TMP/scrape.prom, checked by promtool. value NAME LABELS: one sample.
scrape() {
  curl -sS --fail --max-time 10 "$URL" >"$E2E_TMP/scrape.prom" || fail "curl $URL"
  run promtool check metrics <"$E2E_TMP/scrape.prom"
  assert_eq "$RC:$OUT" "0:" "promtool check metrics"
}
value() {
  local series=$1
  [ -z "$2" ] || series="$1{$2}"
  awk -v s="$series" '{ v = $NF; $NF = ""; sub(/ $/, ""); if ($0 == s) print v }' "$E2E_TMP/scrape.prom"
}
dev() { echo "gpu_index=\"$1\",gpu_uuid=\"$2\",device_uuid=\"$2\""; }
share() { echo "$(dev "$1" "$2"),container_id=\"$P-$3\",device_key=\"\",request=\"$4\",enforcement=\"shim\""; }

# 1. Four shares: the allocation loop (0.25 of GPU 0) and three sleepers.
make_bundle "$E2E_TMP/loop" "/bin/shim_probe alloc cuMemAlloc_v2 $GIB gate /tmp/g1 alloc cuMemAlloc_v2 $GIB \
gate /tmp/g2 alloc cuMemAlloc_v2 $GIB hold" gpufrac.io/fraction=0.25 gpufrac.io/gpu=0
add_program "$E2E_TMP/loop/rootfs" "$PROBE"
add_glibc "$E2E_TMP/loop/rootfs"
jq --arg dev "$GPU0=$TOTAL" '.process.env += ["GPUFRAC_FAKE_CUDA_DEVICES=" + $dev]' "$E2E_TMP/loop/config.json" \
  >"$E2E_TMP/c.json" && mv "$E2E_TMP/c.json" "$E2E_TMP/loop/config.json"
mkfifo "$E2E_TMP/stdin"
exec 3<>"$E2E_TMP/stdin"
runc create --bundle "$E2E_TMP/loop" "$P-loop" <"$E2E_TMP/stdin" >"$E2E_TMP/loop.log" 2>&1 || fail "runc create loop"
runc start "$P-loop"
start_sleeper() {
  make_bundle "$E2E_TMP/$1" "sleep 600" "${@:2}"
  runc run -d --bundle "$E2E_TMP/$1" "$P-$1" >/dev/null 2>"$E2E_TMP/$1.err" || fail "runc run $1: $(cat "$E2E_TMP/$1.err")"
}
start_sleeper a gpufrac.io/memory=4Gi gpufrac.io/gpu=0
start_sleeper b gpufrac.io/fraction=0.5 gpufrac.io/gpu=1
start_sleeper c gpufrac.io/fraction=0.1 gpufrac.io/gpu=1
readies() { grep -c '^ready' "$E2E_TMP/loop.log" || true; }
wait_ready() { for _ in $(seq 200); do [ "$(readies)" -ge "$1" ] && return; sleep 0.05; done; fail "no ready $1"; }
wait_ready 1

# 2. Refusals: no room on GPU 0, a malformed fraction, a private PID namespace; the wrapper's.
refuse() {
  make_bundle "$E2E_TMP/$1" "true" "${@:2}"
  if [ "$1" = hostpid ]; then
    jq '.linux.namespaces += [{"type": "pid"}]' "$E2E_TMP/$1/config.json" >"$E2E_TMP/c.json"
    mv "$E2E_TMP/c.json" "$E2E_TMP/$1/config.json"
  fi
  if runc run --bundle "$E2E_TMP/$1" "$P-$1" >"$E2E_TMP/$1.log" 2>&1; then fail "$1 was not refused"; fi
}
refuse capacity gpufrac.io/fraction=0.9 gpufrac.io/gpu=0
refuse malformed gpufrac.io/fraction=abc
refuse hostpid gpufrac.io/fraction=0.1
make_plain_bundle "$E2E_TMP/wrapped" "true" gpufrac.io/fraction=2
run "$BIN_DIR/gpufrac-runtime" create --bundle "$E2E_TMP/wrapped" "$P-wrapped"
assert_eq "$RC" 1 "gpufrac-runtime refuses fraction=2"

# 3. The scrape: exact values.
bytes() { jq -r --arg c "$P-$1" '.entries[] | select(.container_id == $c) | .bytes' "$STATE/ledger.json"; }
LOOP=$(bytes loop) A=$(bytes a) B=$(bytes b) C=$(bytes c)
assert_eq "$LOOP:$A:$B:$C" "10626269184:4294967296:21252538368:4249878528" "the ledger's limits"
ls "$STATE" >"$E2E_TMP/before"
scrape
assert_eq "$(ls "$STATE")" "$(cat "$E2E_TMP/before")" "a scrape writes no file"
assert_eq "$(value gpufrac_build_info 'version="0.1.0"')" 1 "build info"
assert_eq "$(value gpufrac_gpu_info "gpu_index=\"1\",gpu_uuid=\"$GPU1\",name=\"NVIDIA A100-SXM4-40GB\",mig_mode=\"false\"")" 1 "gpu info"
for g in "0 $GPU0 $((LOOP + A)) 2" "1 $GPU1 $((B + C)) 2"; do
  set -- $g
  assert_eq "$(value gpufrac_gpu_memory_total_bytes "$(dev "$1" "$2")")" $TOTAL "GPU $1 total"
  assert_eq "$(value gpufrac_gpu_memory_reserved_bytes "$(dev "$1" "$2")")" "$3" "GPU $1 reserved = the sum of its limits"
  assert_eq "$(value gpufrac_gpu_memory_free_bytes "$(dev "$1" "$2")")" $((TOTAL - $3)) "GPU $1 free"
  assert_eq "$(value gpufrac_gpu_shares "$(dev "$1" "$2")")" "$4" "GPU $1 shares"
done
for s in "0 $GPU0 loop fraction=0.25 gpu=0 $LOOP $GIB" "0 $GPU0 a memory=4Gi gpu=0 $A 0" \
  "1 $GPU1 b fraction=0.5 gpu=1 $B 0" "1 $GPU1 c fraction=0.1 gpu=1 $C 0"; do
  set -- $s
  assert_eq "$(value gpufrac_share_limit_bytes "$(share "$1" "$2" "$3" "$4 $5")")" "$6" "limit of $3"
  assert_eq "$(value gpufrac_share_used_bytes "$(share "$1" "$2" "$3" "$4 $5")")" "$7" "used by $3"
done
# The GPU's time: each share's default compute share is its memory share (bytes x 10^6 / total,
# rounded down); per GPU the sum and what is left. The time achieved comes from each share's slot
# in its GPU's compute arbiter: these containers launch no kernel, so 0.
for s in "0 $GPU0 loop fraction=0.25 gpu=0 0.25" "0 $GPU0 a memory=4Gi gpu=0 0.101045" \
  "1 $GPU1 b fraction=0.5 gpu=1 0.5" "1 $GPU1 c fraction=0.1 gpu=1 0.099985"; do
  set -- $s
  assert_eq "$(value gpufrac_share_compute_booked_ratio "$(share "$1" "$2" "$3" "$4 $5")")" "$6" "time booked by $3"
done
for g in "0 $GPU0 0.351045 0.648955" "1 $GPU1 0.599985 0.400015"; do
  set -- $g
  assert_eq "$(value gpufrac_gpu_compute_booked_ratio "$(dev "$1" "$2")")" "$3" "GPU $1 time booked"
  assert_eq "$(value gpufrac_gpu_compute_free_ratio "$(dev "$1" "$2")")" "$4" "GPU $1 time free"
done
assert_eq "$(grep -c '^gpufrac_share_compute_achieved_ratio' "$E2E_TMP/scrape.prom")" 4 "time achieved known per share"
for s in "0 $GPU0 loop fraction=0.25 gpu=0" "1 $GPU1 c fraction=0.1 gpu=1"; do
  set -- $s
  assert_eq "$(value gpufrac_share_compute_achieved_ratio "$(share "$1" "$2" "$3" "$4 $5")")" 0 "no kernel: $3 achieved nothing"
done
for r in "hook capacity 1" "hook malformed 1" "hook host_pid 1" "hook other 0" \
  "wrapper capacity 0" "wrapper malformed 1" "wrapper host_pid 0" "wrapper other 0"; do
  set -- $r
  assert_eq "$(value gpufrac_refusals_total "frontend=\"$1\",reason=\"$2\"")" "$3" "refusals $1 $2"
done
assert_eq "$(value gpufrac_hook_duration_seconds_count 'stage="createRuntime"')" 7 "7 createRuntime runs (4 started, 3 refused)"
assert_eq "$(value gpufrac_hook_duration_seconds_bucket 'stage="createRuntime",le="+Inf"')" 7 "+Inf bucket = count"
assert_eq "$(value gpufrac_hook_duration_seconds_count 'stage="prestart"')" 0 "no prestart runs"
assert_eq "$(value gpufrac_wrapper_duration_seconds_count '')" 1 "one wrapper create"
assert_eq "$(value gpufrac_ledger_entries '')" 4 "ledger entries"
assert_eq "$(value gpufrac_ledger_size_bytes '')" "$(stat -c %s "$STATE/ledger.json")" "ledger size"
POSTSTOP=$(value gpufrac_hook_duration_seconds_count 'stage="poststop"')

# 4. Used follows the loop: one more GiB at each step; the scrape does not wait for the ledger lock.
touch "$E2E_TMP/loop/rootfs/tmp/g1"
wait_ready 2
flock "$STATE/ledger.lock" curl -sS --fail --max-time 5 "$URL" >"$E2E_TMP/scrape.prom" || fail "scrape under the ledger lock"
assert_eq "$(value gpufrac_share_used_bytes "$(share 0 "$GPU0" loop "fraction=0.25 gpu=0")")" $((2 * GIB)) "used after step 2"
touch "$E2E_TMP/loop/rootfs/tmp/g2"
for _ in $(seq 200); do grep -q '^holding' "$E2E_TMP/loop.log" && break; sleep 0.05; done
scrape
assert_eq "$(value gpufrac_share_used_bytes "$(share 0 "$GPU0" loop "fraction=0.25 gpu=0")")" $((3 * GIB)) "used after step 3"

# 5. The containers stop: four poststop runs, no shares left.
exec 3>&-
for id in loop a b c; do runc kill "$P-$id" KILL 2>/dev/null || true; done
for id in loop a b c; do
  for _ in $(seq 100); do [ "$(runc state "$P-$id" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.05; done
  runc delete "$P-$id"
done
scrape
assert_eq "$(value gpufrac_hook_duration_seconds_count 'stage="poststop"')" $((POSTSTOP + 4)) "four poststop runs"
assert_eq "$(value gpufrac_gpu_memory_reserved_bytes "$(dev 0 "$GPU0")")" 0 "GPU 0 released"
assert_eq "$(value gpufrac_gpu_compute_free_ratio "$(dev 0 "$GPU0")")" 1 "GPU 0's time free again"
assert_eq "$(grep -c '^gpufrac_share_limit_bytes' "$E2E_TMP/scrape.prom")" 0 "no share series"
assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "${URL%/metrics}/nope")" 404 "unknown path"
cp "$E2E_TMP/scrape.prom" "$E2E_TMP/node.prom"

# 6. --textfile on a MIG machine: instances by state.
sed -e "s#state-dir: .*#state-dir: $E2E_TMP/mig-state#" -e "s#a100-40gb-x2#a100-80gb-mig#" "$GPUFRAC_CONFIG" >"$E2E_TMP/mig.yaml"
export GPUFRAC_CONFIG=$E2E_TMP/mig.yaml
"$GPUFRAC" ledger reserve --container web --annotation gpufrac.io/mig-profile=1g.10gb --pid $$ >/dev/null
mkdir "$E2E_TMP/textfile"
run "$GPUFRAC" metrics --textfile "$E2E_TMP/textfile"
assert_eq "$RC:$OUT:$(ls -A "$E2E_TMP/textfile")" "0::gpufrac.prom" "--textfile writes gpufrac.prom only"
cp "$E2E_TMP/textfile/gpufrac.prom" "$E2E_TMP/scrape.prom"
MIGGPU=$(jq -r '.gpus[0].uuid' <<<"$("$GPUFRAC" info --json)")
for s in "in_use 1" "idle 0" "free 3"; do
  set -- $s
  assert_eq "$(value gpufrac_mig_instances "gpu_index=\"0\",gpu_uuid=\"$MIGGPU\",state=\"$1\"")" "$2" "MIG instances $1"
done
run promtool check metrics <"$E2E_TMP/scrape.prom"
assert_eq "$RC:$OUT" "0:" "promtool check metrics (textfile)"
run "$GPUFRAC" metrics --textfile "$E2E_TMP/none"
assert_eq "$RC:$OUT" "1:gpufrac: --textfile: \"$E2E_TMP/none\" does not exist; give node_exporter's --collector.textfile.directory" \
  "a missing textfile directory"
run "$GPUFRAC" metrics --listen 127.0.0.1:99999
assert_eq "$RC:$OUT" '1:gpufrac: --listen: "127.0.0.1:99999": the port must be 0 (any free port) to 65535' "bad port"

# 7. The Grafana dashboard: every query parses and names exported series; every series is used.
cat "$E2E_TMP/node.prom" "$E2E_TMP/scrape.prom" >"$E2E_TMP/all.prom"
mapfile -t EXPRS < <(jq -r '.panels[].targets[].expr, (.templating.list[] | select(.type == "query") | .query)' "$DASHBOARD")
[ "${#EXPRS[@]}" -ge 20 ] || fail "only ${#EXPRS[@]} queries in the dashboard"
{
  echo "groups: [{name: dashboard, rules: ["
  for e in "${EXPRS[@]}"; do
    case $e in label_values*) continue ;; esac
    printf '{record: "dashboard:query", expr: %s},\n' "$(jq -Rn --arg e "$e" '$e')"
  done
  echo "]}]"
} >"$E2E_TMP/rules.yaml"
run promtool check rules "$E2E_TMP/rules.yaml"
assert_eq "$RC" 0 "the dashboard's queries parse: $OUT"
USED=""
for e in "${EXPRS[@]}"; do
  names=$(grep -oE 'gpufrac_[a-z_]+' <<<"$e" || true)
  [ -n "$names" ] || fail "query names no gpufrac series: $e"
  for n in $names; do
    grep -qE "^($n[{ ]|# TYPE $n )" "$E2E_TMP/all.prom" || fail "the dashboard queries $n, which gpufrac metrics does not export"
    USED="$USED $n"
  done
done
for family in $(awk '/^# TYPE/ { print $3 }' "$E2E_TMP/all.prom" | sort -u); do
  grep -qE " ${family}(_bucket|_sum|_count)?( |$)" <<<"$USED " || fail "the dashboard does not show $family"
done
finish
