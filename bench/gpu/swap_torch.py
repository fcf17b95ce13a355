#!/usr/bin/env python3
"""GPU memory swap through the CUDA driver's checkpoint API on a real GPU (driven by bench/gpu/swap.sh).

A child Python process fills --gib GiB of PyTorch tensors with random bytes and keeps a host copy.
This process (the controller, as gpufrac's reclaimer will be) calls cuCheckpointProcessLock,
Checkpoint, Restore and Unlock on the child's pid through ctypes, timing each, reads nvidia-smi's
memory before, while checkpointed and after, then has the child compare every tensor with its host
copy. Prints one JSON summary; exit status 1 when a check fails."""
import argparse
import ctypes
import json
import subprocess
import sys
import time

CHILD = r"""
import sys, torch
gib = float(sys.argv[1])
chunk = 256 << 20
n = max(1, int(gib * (1 << 30)) // chunk)
gpu = [torch.randint(0, 256, (chunk,), dtype=torch.uint8, device="cuda") for _ in range(n)]
host = [t.cpu() for t in gpu]
torch.cuda.synchronize()
print("ready", n * chunk, flush=True)
sys.stdin.readline()
same = all(torch.equal(g.cpu(), h) for g, h in zip(gpu, host))
print("same" if same else "differ", flush=True)
"""


def smi():
    """nvidia-smi's memory.used of GPU 0 (MiB) and the compute processes it lists."""
    used = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
                          capture_output=True, text=True).stdout.strip()
    apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True).stdout.strip()
    return {"memory_used_mib": int(used or 0), "compute_apps": [a for a in apps.splitlines() if a]}


class LockArgs(ctypes.Structure):
    _fields_ = [("timeoutMs", ctypes.c_uint), ("reserved0", ctypes.c_uint), ("reserved1", ctypes.c_uint64 * 7)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=4.0)
    ap.add_argument("--libcuda", default="libcuda.so.1")
    args = ap.parse_args()
    cuda = ctypes.CDLL(args.libcuda)
    for name in ("cuCheckpointProcessLock", "cuCheckpointProcessCheckpoint", "cuCheckpointProcessRestore",
                 "cuCheckpointProcessUnlock", "cuCheckpointProcessGetState"):
        if not hasattr(cuda, name):
            print(f"gpufrac bench/gpu/swap: {args.libcuda} lacks {name}; accepted: driver r570 / CUDA 12.8 or newer",
                  file=sys.stderr)
            return 2
    if cuda.cuInit(0) != 0:
        print("gpufrac bench/gpu/swap: cuInit failed in the controller", file=sys.stderr)
        return 2
    before = smi()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(args.gib)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    word, nbytes = child.stdout.readline().split()
    nbytes = int(nbytes)
    pid = child.pid
    loaded = smi()
    steps, errors = {}, []

    def step(name, fn, *a):
        t0 = time.monotonic()
        rc = fn(pid, *a)
        steps[name] = time.monotonic() - t0
        if rc != 0:
            errors.append(f"{name}: CUresult {rc}")

    state = ctypes.c_int(-1)
    step("lock", cuda.cuCheckpointProcessLock, ctypes.byref(LockArgs(0)))
    step("checkpoint", cuda.cuCheckpointProcessCheckpoint, None)
    cuda.cuCheckpointProcessGetState(pid, ctypes.byref(state))
    during = smi()
    step("restore", cuda.cuCheckpointProcessRestore, None)
    step("unlock", cuda.cuCheckpointProcessUnlock, None)
    after = smi()
    child.stdin.write("check\n")
    child.stdin.flush()
    verdict = child.stdout.readline().strip()
    child.wait()
    gb = nbytes / 1e9
    out = {
        "bytes": nbytes, "seconds": steps, "errors": errors, "state_while_checkpointed": state.value,
        "checkpoint_gb_per_s": round(gb / steps["checkpoint"], 2) if steps.get("checkpoint") else None,
        "restore_gb_per_s": round(gb / steps["restore"], 2) if steps.get("restore") else None,
        "contents": verdict, "nvidia_smi": {"before": before, "loaded": loaded, "checkpointed": during, "after": after},
    }
    print(json.dumps(out, indent=1))
    checkpointed_pid_listed = any(a.split(",")[0].strip() == str(pid) for a in during["compute_apps"])
    ok = not errors and verdict == "same" and state.value == 2 and not checkpointed_pid_listed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
