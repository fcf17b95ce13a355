#!/usr/bin/env python3
"""PyTorch under the gpufrac memory-limit shim on a real GPU (driven by bench/gpu/run.sh).

Every scenario runs in a child Python process (the allocator configuration must be set before
CUDA starts) with LD_PRELOAD of the shim, GPUFRAC_LIMITS_FILE and a fresh all-zero usage region.
Children print one JSON object on their last stdout line. Prints a summary; exit status 1 when a
check fails."""
import argparse
import json
import os
import subprocess
import sys
import time

MIB = 1 << 20

# Child programs. Each prints json.dumps(result) last.
CHILD_MEMINFO = r"""
import json, torch
free, total = torch.cuda.mem_get_info()
print(json.dumps({"free": free, "total": total}))
"""

CHILD_FILL = r"""
import json, sys, torch
oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
chunk = int(sys.argv[1])
held, raised, other = [], False, ""
try:
    while len(held) * chunk < 4 * torch.cuda.get_device_properties(0).total_memory:
        held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
except oom:
    raised = True
except Exception as e:  # a different error is a failure, reported as such
    other = repr(e)
torch.cuda.synchronize()
print(json.dumps({"allocated": len(held) * chunk, "oom": raised, "other": other,
                  "reserved": torch.cuda.memory_reserved()}))
"""

CHILD_HOLD = r"""
import json, sys, torch
x = torch.empty(int(sys.argv[1]), dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("ready", flush=True)
sys.stdin.read()
print(json.dumps({"held": x.numel()}))
"""

CHILD_TRY = r"""
import json, sys, torch
oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
out = {}
for n in map(int, sys.argv[1:]):
    try:
        t = torch.empty(n, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        out[str(n)] = "ok"
        del t
        torch.cuda.empty_cache()
    except oom:
        out[str(n)] = "oom"
print(json.dumps(out))
"""

CHILD_ALLOC_LOOP = r"""
import json, sys, time, torch
n = int(sys.argv[1])
torch.empty(1, device="cuda"); torch.cuda.synchronize()
t0 = time.perf_counter()
for i in range(n):
    x = torch.empty((i % 16 + 1) * (1 << 20), dtype=torch.uint8, device="cuda")
    del x
torch.cuda.synchronize()
print(json.dumps({"seconds": time.perf_counter() - t0, "iterations": n}))
"""

CHILD_MATMUL = r"""
import json, sys, time, torch
n = int(sys.argv[1])
a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
for _ in range(10): c = a @ b
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(n): c = a @ b
torch.cuda.synchronize()
print(json.dumps({"seconds": time.perf_counter() - t0, "iterations": n}))
"""


class Bench:
    def __init__(self, args):
        self.args = args
        self.rows = []
        self.failed = 0

    def fresh_region(self):
        with open(self.args.region, "wb") as f:
            f.truncate(self.args.region_size)

    def env(self, shim=True, alloc_conf=None, extra=None):
        env = dict(os.environ)
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        env["GPUFRAC_LIMITS_FILE"] = self.args.limits
        if shim:
            env["LD_PRELOAD"] = self.args.shim
        else:
            env.pop("LD_PRELOAD", None)
        if alloc_conf:
            env["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf
        env.update(extra or {})
        return env

    def child(self, code, argv=(), **env_args):
        p = subprocess.run([sys.executable, "-c", code, *map(str, argv)], env=self.env(**env_args),
                           capture_output=True, text=True, timeout=600)
        lines = [l for l in p.stdout.splitlines() if l.strip()]
        try:
            result = json.loads(lines[-1])
        except (IndexError, ValueError):
            result = {"error": f"exit {p.returncode}: {p.stderr.strip()[-400:]}"}
        result["stderr"] = p.stderr
        return result

    def check(self, name, ok, detail):
        self.rows.append((name, "PASS" if ok else "FAIL", detail))
        self.failed += 0 if ok else 1
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)

    def meminfo(self):
        self.fresh_region()
        r = self.child(CHILD_MEMINFO)
        limit = self.args.limit
        self.check("mem_get_info shows the limit", r.get("total") == limit and 0 < r.get("free", 0) <= limit,
                   f"total={r.get('total')} free={r.get('free')} limit={limit} {r.get('error', '')}")

    def fill(self, label, alloc_conf):
        self.fresh_region()
        chunk = 256 * MIB
        r = self.child(CHILD_FILL, [chunk], alloc_conf=alloc_conf)
        limit = self.args.limit
        logged = "gpufrac: " in r.get("stderr", "") and "refused: limit" in r.get("stderr", "")
        ok = r.get("oom") is True and limit - 2 * chunk <= r.get("allocated", 0) <= limit and logged
        self.check(f"OOM past the limit ({label})", ok,
                   f"allocated {r.get('allocated', 0) // MIB} MiB of {limit // MIB} MiB, OutOfMemoryError="
                   f"{r.get('oom')}, refusal logged={logged} {r.get('other', '')}{r.get('error', '')}")

    def shared(self):
        self.fresh_region()
        limit = self.args.limit
        hold = limit * 3 // 4
        holder = subprocess.Popen([sys.executable, "-c", CHILD_HOLD, str(hold)], env=self.env(),
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            ready = holder.stdout.readline().strip() == "ready"
            r = self.child(CHILD_TRY, [limit // 2, limit // 8])
        finally:
            holder.stdin.close()
            holder.wait(timeout=120)
        half, eighth = r.get(str(limit // 2)), r.get(str(limit // 8))
        self.check("two processes share one limit", ready and half == "oom" and eighth == "ok",
                   f"holder has {hold // MIB} MiB; second process: {limit // 2 // MIB} MiB -> {half}, "
                   f"{limit // 8 // MIB} MiB -> {eighth} {r.get('error', '')}")

    def overhead(self, label, code, n, extra=None):
        times = {}
        for shim in (False, True, False, True):
            self.fresh_region()
            r = self.child(code, [n], shim=shim, extra=extra)
            if "seconds" in r:
                times.setdefault(shim, []).append(r["seconds"])
        if len(times.get(False, [])) < 2 or len(times.get(True, [])) < 2:
            self.check(f"overhead: {label}", False, "a run failed")
            return
        base, with_shim = min(times[False]), min(times[True])
        self.check(f"overhead: {label}", True, f"{base * 1e6 / n:.2f} us/iter without, {with_shim * 1e6 / n:.2f} "
                   f"with the shim: x{with_shim / base:.3f}")

    def nvidia_smi(self):
        try:
            p = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits", "-i", "0"],
                               env=self.env(), capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            self.rows.append(("nvidia-smi under the shim", "INFO", repr(e)))
            return
        self.rows.append(("nvidia-smi under the shim (info)", "INFO",
                          f"memory.total={p.stdout.strip()} MiB (limit {self.args.limit // MIB} MiB)"))

    def run(self):
        self.meminfo()
        self.fill("native caching allocator", None)
        self.fill("expandable_segments:True, cuMemCreate", "expandable_segments:True")
        self.fill("backend:cudaMallocAsync", "backend:cudaMallocAsync")
        self.shared()
        self.overhead("allocation loop, no caching (cudaMalloc/cudaFree each)", CHILD_ALLOC_LOOP, 5000,
                      {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
        self.overhead("matmul 4096x4096 fp16", CHILD_MATMUL, 300)
        self.nvidia_smi()
        lines = [f"gpufrac shim on {self.device_name()}, limit {self.args.limit // MIB} MiB, "
                 f"{time.strftime('%Y-%m-%d %H:%M:%S')}"]
        lines += [f"{status:5} {name}: {detail}" for name, status, detail in self.rows]
        lines.append(f"{self.failed} check(s) failed" if self.failed else "all checks passed")
        print("\n".join(["", "Summary"] + lines))
        if self.args.summary:
            with open(self.args.summary, "w") as f:
                f.write("\n".join(lines) + "\n")
        return 1 if self.failed else 0

    def device_name(self):
        r = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.get_device_name(0), torch.__version__, "
                            "torch.version.cuda)"], env=self.env(shim=False), capture_output=True, text=True)
        return r.stdout.strip() or "an unknown GPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--limits", required=True)
    ap.add_argument("--region", required=True)
    ap.add_argument("--region-size", type=int, required=True)
    ap.add_argument("--limit", type=int, required=True)
    ap.add_argument("--summary")
    return Bench(ap.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
