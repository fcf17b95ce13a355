#!/bin/bash
# Does scraping `gpufrac metrics` slow container starts? (run as root)
# 100 real containers (`runc run` with gpufrac-hook and a 0.25 share on a simulated GPU) start and
# stop, timed one by one, alternately without scrapes and while batches of 1,000 scrapes run 50
# at a time against `gpufrac metrics --listen`. Prints the median start+stop of each, their ratio, the
# scrapes that did not answer 200 with every series, and the server's RSS before, between and
# after the scrape rounds (flat memory: no growth from the second round on).
# Usage: bench/metrics_scrape_bench.sh [build-dir] [containers per round] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
N=${2:-100}
ROUNDS=${3:-2}
SCRAPES=1000
PARALLEL=50
export GPUFRAC_SOURCE_DIR=$PWD GPUFRAC_BUILD_DIR=$BUILD GPUFRAC_BUILD_BIN_DIR=$BUILD/bin GPUFRAC_FAKES_DIR=$BUILD/fakes
source tests/e2e/lib.sh
source tests/e2e/containers.sh
need_cmd curl
e2e_tmp
e2e_on_exit() {
  [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null
  runc_cleanup gpufrac-scrape-
  umount "$E2E_TMP/state" 2>/dev/null || true
}
e2e_gpu_config a100-40gb-x1.yaml "log: {target: file, file: $E2E_TMP/gpufrac.log, level: warn}"
mount -t tmpfs -o size=64m gpufrac-bench "$E2E_TMP/state"  # /run/gpufrac is a tmpfs in production
make_bundle "$E2E_TMP/share" 'true' gpufrac.io/fraction=0.25

PORT=$((20000 + $$ % 20000))
"$GPUFRAC" metrics --listen "127.0.0.1:$PORT" 2>"$E2E_TMP/metrics.err" &
SERVER=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics" && break; sleep 0.1; done
rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$SERVER/status"; }

# One container start+stop per line of output, in microseconds.
start_stop_us() {
  local i t0
  for ((i = 0; i < N; i++)); do
    t0=$(date +%s%N)
    runc run --bundle "$E2E_TMP/share" "gpufrac-scrape-$i" >/dev/null 2>&1 || echo "bench: container $i failed" >&2
    echo $((($(date +%s%N) - t0) / 1000))
  done
}
# Batches of 1,000 scrapes from one curl (50 connections at a time, so the client's own cost
# stays small beside the containers) until $E2E_TMP/stop appears; one line per scrape: code size.
URLS=()
for ((i = 0; i < SCRAPES; i++)); do URLS+=("http://127.0.0.1:$PORT/metrics" -o /dev/null); done
scrape_until_stopped() {
  while [ ! -e "$E2E_TMP/stop" ]; do
    curl -s --no-progress-meter --parallel --parallel-max "$PARALLEL" --max-time 10 -w '%{http_code} %{size_download}\n' "${URLS[@]}" || true
  done
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

RSS=("$(rss_kib)")
QUIET=() LOADED=() FAILED=0 DONE=0
for ((r = 0; r < ROUNDS; r++)); do
  QUIET+=("$(start_stop_us | median)")
  rm -f "$E2E_TMP/stop"
  scrape_until_stopped >"$E2E_TMP/scrapes-$r" &
  SCRAPER=$!
  LOADED+=("$(start_stop_us | median)")
  touch "$E2E_TMP/stop"
  wait "$SCRAPER"
  DONE=$((DONE + $(wc -l <"$E2E_TMP/scrapes-$r")))
  FAILED=$((FAILED + $(awk '$1 != 200 || $2 < 1000' "$E2E_TMP/scrapes-$r" | wc -l)))
  RSS+=("$(rss_kib)")
done
[ "$(jq '.entries | length' "$E2E_TMP/state/ledger.json")" = 0 ] || echo "bench: containers left bookings" >&2

q=$(printf '%s\n' "${QUIET[@]}" | median)
l=$(printf '%s\n' "${LOADED[@]}" | median)
echo "container start+stop (runc run, hook, 0.25 share), median of $N per round:"
echo "  without scrapes: ${QUIET[*]} us   while scrapes run: ${LOADED[*]} us"
echo "  ratio (median of rounds): $(awk -v a="$l" -v b="$q" 'BEGIN { printf "%.3f", a / b }')"
echo "scrapes: $DONE (batches of $SCRAPES, $PARALLEL at a time, for as long as the containers ran), failed or short: $FAILED"
echo "metrics server RSS (KiB): start ${RSS[0]}, after each round: ${RSS[*]:1}"
echo "machine: $(nproc) cores, $(uname -r)"
