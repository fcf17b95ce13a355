#!/usr/bin/python3
"""gpufrac-dra: prepare latency per claim and memory over many cycles (run as root).

Starts the real gpufrac-dra on a simulated one-GPU node against the test harness's kubelet and API
server (tests/e2e/dra/harness.py), then:
  1. 200 claims of 128Mi, each prepared by its own NodePrepareResources and later unprepared: p50
     and p99 per claim, against two baselines measured in the same run: the empty
     NodePrepareResources (the gRPC round trip) and `gpufrac ledger reserve` + `release` of the
     same share (the ledger booking alone, with its process start);
  2. CYCLES prepare/unprepare cycles of one claim: the daemon's RSS before, in the middle, after.
Usage: bench/dra_bench.py [build-dir] [cycles]   (default build, 10000)
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
CYCLES = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
os.environ["GPUFRAC_SOURCE_DIR"] = ROOT
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e", "dra"))
import harness  # noqa: E402

TMP = tempfile.mkdtemp(prefix="gpufrac-dra-bench.")
CDI = os.path.join(TMP, "state", "cdi")  # on the tmpfs below, as /var/run/cdi is on a node
BIN = os.path.join(BUILD, "bin")


def setup():
    os.makedirs(os.path.join(TMP, "state"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "dra-bench", os.path.join(TMP, "state")], check=True)
    os.makedirs(CDI)
    config = os.path.join(TMP, "config.yaml")
    with open(config, "w") as f:
        f.write("state-dir: %s/state\nhost-root: %s/root\n" % (TMP, TMP))
        f.write("nvml: {backend: simulated, machine: %s/nvml/machines/a100-40gb-x1.yaml}\n" % ROOT)
        f.write("log: {target: file, file: %s/gpufrac.log, level: warn}\n" % TMP)
        f.write("shim: {path: %s/libgpufrac-limits.so}\nhook: {path: %s/gpufrac-hook}\n" % (BIN, BIN))
    subprocess.run([os.path.join(BIN, "gpufrac"), "--config", config, "simulate", "init-root", "--machine",
                    ROOT + "/nvml/machines/a100-40gb-x1.yaml", "--root", TMP + "/root", "--driver-kit",
                    BUILD + "/fakes/driver-kit"], check=True, capture_output=True)
    return config


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    return 0


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def ms(seconds):
    return "%.2f ms" % (seconds * 1000)


def main():
    config = setup()
    api = harness.ApiServer(tls=False)  # plain HTTP, as the recorded numbers (bench/README.md) were measured
    api.kubeconfig(os.path.join(TMP, "kubeconfig"))
    kubelet_dir = os.path.join(TMP, "kubelet")
    proc = subprocess.Popen([os.path.join(BIN, "gpufrac-dra"), "--node-name", "node-1", "--kubelet-dir", kubelet_dir,
                             "--cdi-dir", CDI, "--kubeconfig", os.path.join(TMP, "kubeconfig"), "--config", config,
                             "--resync", "60"], stderr=subprocess.DEVNULL)
    try:
        kubelet = harness.Kubelet(os.path.join(kubelet_dir, "plugins_registry", "gpufrac.io-reg.sock"))
        for _ in range(100):
            try:
                kubelet.register()
                break
            except Exception:
                time.sleep(0.1)
        floor = []
        for _ in range(200):
            t = time.perf_counter()
            kubelet.prepare([])
            floor.append(time.perf_counter() - t)
        claims = [api.put_claim("bench", "c%d" % i, [harness.share("gpu-0", "128Mi")]) for i in range(200)]
        prepare, unprepare = [], []
        for c in claims:
            t = time.perf_counter()
            e = kubelet.prepare([c]).claims[c["uid"]]
            prepare.append(time.perf_counter() - t)
            assert e.error == "", e.error
        for c in claims:
            t = time.perf_counter()
            kubelet.unprepare([c])
            unprepare.append(time.perf_counter() - t)
        gpufrac = [os.path.join(BIN, "gpufrac"), "--config", config, "ledger"]
        ledger = []
        for i in range(50):
            t = time.perf_counter()
            subprocess.run(gpufrac + ["reserve", "--container", "b%d" % i, "--annotation", "gpufrac.io/memory=128Mi"],
                           check=True, capture_output=True)
            subprocess.run(gpufrac + ["release", "--container", "b%d" % i], check=True, capture_output=True)
            ledger.append(time.perf_counter() - t)
        print("prepare per claim (200 claims, 128Mi each): p50 %s, p99 %s; unprepare p50 %s, p99 %s" % (
            ms(percentile(prepare, 50)), ms(percentile(prepare, 99)), ms(percentile(unprepare, 50)),
            ms(percentile(unprepare, 99))))
        print("baselines: empty NodePrepareResources p50 %s; gpufrac ledger reserve+release (two process starts) "
              "p50 %s" % (ms(percentile(floor, 50)), ms(percentile(ledger, 50))))
        print("ratio prepare p50 / ledger reserve+release p50: %.2f" % (percentile(prepare, 50) / percentile(ledger, 50)))
        one = api.put_claim("bench", "cycle", [harness.share("gpu-0", "1Gi")])
        rss = [rss_kib(proc.pid)]
        start = time.time()
        for i in range(CYCLES):
            assert kubelet.prepare([one]).claims[one["uid"]].error == ""
            kubelet.unprepare([one])
            if i == CYCLES // 2:
                rss.append(rss_kib(proc.pid))
        rss.append(rss_kib(proc.pid))
        print("%d prepare/unprepare cycles in %.1f s; gpufrac-dra RSS (KiB): start %d, middle %d, end %d" % (
            CYCLES, time.time() - start, rss[0], rss[1], rss[2]))
        print("machine: %d cores, %s" % (os.cpu_count(), os.uname().release))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        subprocess.run(["umount", os.path.join(TMP, "state")])
        subprocess.run(["rm", "-rf", TMP])


if __name__ == "__main__":
    main()
