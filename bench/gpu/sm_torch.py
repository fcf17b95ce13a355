#!/usr/bin/env python3
"""The GPU work of bench/gpu/sm_share_check.sh, run inside a container (one process per container).

  sm_torch.py infer --start T --warmup W --seconds N [--batch B] [--width D] [--layers L]
      an inference-shaped loop: a forward pass of L fp16 D x D layers over a batch of B (kernels too
      small to fill a large GPU), then synchronize, again and again until T + W + N (T:
      CLOCK_MONOTONIC seconds, shared with the host); counts the steps completed inside [T + W, T + W + N]
Prints one JSON object on its last line: {"steps", "per_s", "sm_percent" (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
as the process saw it, or null), "multiprocessors" (what the device reports: MPS lowers it to the cap)}."""
import argparse
import json
import os
import sys
import time

import torch


def now():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def wait_until(t):
    while now() < t:
        time.sleep(min(0.05, max(0.0, t - now())))


def infer(a):
    layers = [torch.randn(a.width, a.width, device="cuda", dtype=torch.float16) for _ in range(a.layers)]
    x = torch.randn(a.batch, a.width, device="cuda", dtype=torch.float16)

    def step():
        h = x
        for w in layers:
            h = torch.relu(h @ w)
        torch.cuda.synchronize()

    step()
    begin, end = a.start + a.warmup, a.start + a.warmup + a.seconds
    wait_until(a.start)
    steps = 0
    while now() < end:
        step()
        if now() >= begin:
            steps += 1
    percent = os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
    return {"steps": steps, "per_s": round(steps / a.seconds, 1), "sm_percent": int(percent) if percent else None,
            "multiprocessors": torch.cuda.get_device_properties(0).multi_processor_count}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["infer"])
    p.add_argument("--start", type=float, required=True)
    p.add_argument("--warmup", type=float, default=3)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--layers", type=int, default=8)
    a = p.parse_args()
    print(json.dumps(infer(a)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
