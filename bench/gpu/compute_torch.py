#!/usr/bin/env python3
"""The GPU work of bench/gpu/compute.sh, run inside a container (one process per container).

  compute_torch.py matmul --mode async|graph --start T --warmup W --seconds N [--size S]
      fp16 matmuls of S x S until T + W + N (T: CLOCK_MONOTONIC seconds, shared with the host);
      8 per step, each step waited for (async: 8 launches then torch.cuda.synchronize; graph: one
      replay of a CUDA graph captured from 8); counts the matmuls whose step completed inside
      [T + W, T + W + N]
  compute_torch.py infer --start T --warmup W --seconds N [--size S] [--think-ms M]
      a small inference step (three S x S layers, then synchronize), every M ms: the latency of
      each step completed inside the window
  compute_torch.py train --start T --warmup W --seconds N [--size S]
      a training-shaped loop: a four-layer MLP of width S (batch 64), forward, backward, an Adam
      step and loss.item() every iteration (many small kernels and one host sync each); counts the
      iterations completed inside the window
  compute_torch.py decode --start T --warmup W --seconds N [--size S]
      a launch-bound decode loop without CUDA graphs: one token is 24 layers of a batch-1 matrix-vector
      product, bias, layer norm and GELU (about 100 small kernels), then argmax().item(); counts the
      tokens completed inside the window
Prints one JSON object on its last line."""
import argparse
import json
import sys
import time

import torch


def now():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def wait_until(t):
    while now() < t:
        time.sleep(min(0.05, max(0.0, t - now())))


def matmul(a):
    x = torch.randn(a.size, a.size, device="cuda", dtype=torch.float16)
    y = torch.randn(a.size, a.size, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    step = lambda: [torch.matmul(x, y, out=out) for _ in range(8)]
    if a.mode == "graph":
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            step()  # warm up the kernels before the capture, as PyTorch's documentation says
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        step = graph.replay
    torch.cuda.synchronize()
    begin, end = a.start + a.warmup, a.start + a.warmup + a.seconds
    wait_until(a.start)
    done = 0
    while now() < end:
        step()
        torch.cuda.synchronize()
        if begin <= now() <= end:
            done += 8
    return {"mode": a.mode, "size": a.size, "matmuls": done, "seconds": a.seconds}


def infer(a):
    layers = [torch.randn(a.size, a.size, device="cuda", dtype=torch.float16) for _ in range(3)]
    x = torch.randn(64, a.size, device="cuda", dtype=torch.float16)
    for _ in range(10):
        h = x
        for w in layers:
            h = torch.relu(h @ w)
    torch.cuda.synchronize()
    begin, end = a.start + a.warmup, a.start + a.warmup + a.seconds
    wait_until(a.start)
    lat = []
    while now() < end:
        t0 = now()
        h = x
        for w in layers:
            h = torch.relu(h @ w)
        torch.cuda.synchronize()
        t1 = now()
        if begin <= t1 <= end:
            lat.append(t1 - t0)
        time.sleep(a.think_ms / 1000)
    lat.sort()
    pick = lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3, 3) if lat else None
    return {"steps": len(lat), "p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": pick(1.0)}


def counted(a, one):
    """Runs one() from T until T + W + N; counts the calls that completed inside the window."""
    for _ in range(3):
        one()
    torch.cuda.synchronize()
    begin, end = a.start + a.warmup, a.start + a.warmup + a.seconds
    wait_until(a.start)
    done = 0
    while now() < end:
        one()
        if begin <= now() <= end:
            done += 1
    return done


def train(a):
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(a.size, a.size), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randn(64, a.size, device="cuda")
    y = torch.randn(64, a.size, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return {"iterations": counted(a, step), "seconds": a.seconds, "size": a.size}


def decode(a):
    torch.manual_seed(0)
    ws = [torch.randn(a.size, a.size, device="cuda", dtype=torch.float16) / a.size**0.5 for _ in range(24)]
    bs = [torch.zeros(a.size, device="cuda", dtype=torch.float16) for _ in range(24)]
    h0 = torch.randn(1, a.size, device="cuda", dtype=torch.float16)

    def token():
        h = h0
        for w, b in zip(ws, bs):
            h = torch.nn.functional.gelu(torch.nn.functional.layer_norm(h @ w + b, (a.size,)))
        return int(h.argmax().item())

    return {"tokens": counted(a, token), "seconds": a.seconds, "size": a.size}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("what", choices=["matmul", "infer", "train", "decode"])
    ap.add_argument("--mode", choices=["async", "graph"], default="async")
    ap.add_argument("--start", type=float, required=True)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--think-ms", type=float, default=20)
    a = ap.parse_args()
    if a.size is None:
        a.size = {"matmul": 4096, "infer": 512, "train": 1024, "decode": 1024}[a.what]
    result = {"matmul": matmul, "infer": infer, "train": train, "decode": decode}[a.what](a)
    result["device"] = torch.cuda.get_device_name(0)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
