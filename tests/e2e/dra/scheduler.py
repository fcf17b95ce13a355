"""The part of a 1.36 kube-scheduler that places shares (test code, never shipped): the
consumable-capacity rule of KEP-5075 applied to the devices gpufrac-dra published on the harness's
API server (structured/internal/*/consumable_capacity.go, ../../shared/reference/kubernetes-dra.md
section 2.1). Every capacity of a device is consumed by every share: the amount the request names,
else the policy's default; raised to min, rounded up to min + n * step, refused above max; a share
fits while each capacity's consumption over all allocated shares stays within its value. Devices
are tried in slice order. Counters are not simulated, so this places shares on GPUs not in MIG
mode only. Like the allocator, it uses a pool only when every slice of its newest generation is
published (pool.resourceSliceCount of them): a driver writes its slices one request at a time, so
a pool can be seen half written. Also the Quantity helpers the API server applies (parse, canonical form)."""
import random

BINARY = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50}
DECIMAL = {"k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15}


def parse(q):
    """A whole-number Kubernetes quantity ("40536Mi", "250k", "1"), as an int."""
    for suffixes in (BINARY, DECIMAL):
        for suffix, unit in suffixes.items():
            if q.endswith(suffix) and q[:-len(suffix)].isdigit():
                return int(q[:-len(suffix)]) * unit
    if not q.isdigit():
        raise ValueError("not a whole quantity: %r" % q)
    return int(q)


def canonical(n, binary):
    """The form the API server writes a quantity back in: the largest suffix that divides it
    exactly (binary suffixes for a binary quantity, decimal ones otherwise)."""
    units = sorted((BINARY if binary else DECIMAL).items(), key=lambda kv: -kv[1])
    for suffix, unit in units:
        if n and n % unit == 0:
            return "%d%s" % (n // unit, suffix)
    return str(n)


def is_canonical(q):
    return canonical(parse(q), any(q.endswith(s) for s in BINARY)) == q


def policy_problems(capacity):
    """The API server's checks of a capacity and its request policy (validation.go,
    validateRequestPolicyRange): min <= default <= max <= value, min + step <= value, default and
    max whole steps from min; and every quantity canonical."""
    policy = capacity.get("requestPolicy", {})
    rng = policy.get("validRange", {})
    quantities = [capacity["value"], policy.get("default")] + [rng.get(k) for k in ("min", "max", "step")]
    out = ["%s is not in canonical form" % q for q in quantities if q is not None and not is_canonical(q)]
    if not rng or out:
        return out
    value, low, default = parse(capacity["value"]), parse(rng["min"]), parse(policy["default"])
    high, step = parse(rng.get("max", capacity["value"])), parse(rng.get("step", "1"))
    if not (low <= default <= high <= value):
        out.append("not min <= default <= max <= value")
    if low + step > value:
        out.append("min + step is beyond the value")
    if (default - low) % step or (high - low) % step:
        out.append("default or max is not a whole number of steps from min")
    return out


def consumption(capacity, requested):
    """What one share consumes of a capacity ({value, requestPolicy}), or None when it cannot."""
    policy = capacity.get("requestPolicy")
    if policy is None:
        return parse(requested) if requested is not None else parse(capacity["value"])
    amount = parse(requested) if requested is not None else parse(policy["default"])
    rng = policy["validRange"]
    low = parse(rng["min"])
    amount = max(amount, low)
    if "step" in rng:
        step = parse(rng["step"])
        amount = low + -(-(amount - low) // step) * step
    if "max" in rng and amount > parse(rng["max"]):
        return None
    return amount


def pools(slices):
    """The pools of `slices` as a scheduler sees them ({(driver, pool name): [slice]}): the slices
    of each pool's newest generation only (the allocator's pool gathering: a newer generation
    replaces every older slice)."""
    out = {}
    for s in slices:
        key = (s["spec"]["driver"], s["spec"]["pool"]["name"])
        newest = out.get(key, [])
        if newest and s["spec"]["pool"]["generation"] < newest[0]["spec"]["pool"]["generation"]:
            continue
        if newest and s["spec"]["pool"]["generation"] > newest[0]["spec"]["pool"]["generation"]:
            newest = []
        out[key] = newest + [s]
    return out


def pool_problem(slices):
    """Why a scheduler does not use a pool (the slices of its newest generation), or None: fewer
    slices than resourceSliceCount (it is being written: the pool is incomplete), slices that
    disagree on the count, or a device name twice (the pool is invalid)."""
    spec = slices[0]["spec"]["pool"]
    where = "pool %s generation %d" % (spec["name"], spec["generation"])
    counts = {s["spec"]["pool"]["resourceSliceCount"] for s in slices}
    if len(counts) != 1:
        return "%s: its slices disagree on resourceSliceCount: %s" % (where, sorted(counts))
    if len(slices) != spec["resourceSliceCount"]:
        return "%s: %d of its %d slices published" % (where, len(slices), spec["resourceSliceCount"])
    names = [d["name"] for s in slices for d in s["spec"].get("devices", [])]
    if len(names) != len(set(names)):
        return "%s: a device name appears twice: %s" % (where, sorted(names))
    return None


def usable_slices(slices):
    """What a scheduler allocates from: the slices of complete, valid pools, in name order."""
    usable = [s for newest in pools(slices).values() if pool_problem(newest) is None for s in newest]
    return sorted(usable, key=lambda s: s["metadata"]["name"])


def _shares_devices(api):
    return [d for s in usable_slices(api.slices.values()) for d in s["spec"].get("devices", [])
            if d.get("allowMultipleAllocations")]


def _used(api, device):
    used = {}
    for claim in api.claims.values():
        for r in claim["status"].get("allocation", {}).get("devices", {}).get("results", []):
            if r["device"] == device:
                for name, q in r.get("consumedCapacity", {}).items():
                    used[name] = used.get(name, 0) + parse(q)
    return used


def place(api, requests):
    """The first device (slice order) where a share asking `requests` ({capacity: quantity})
    fits: (device name, {capacity: consumed quantity}), or None."""
    with api.lock:
        for device in _shares_devices(api):
            caps = device["capacity"]
            if any(name not in caps for name in requests):
                continue  # a request names a capacity the device lacks: not eligible
            used = _used(api, device["name"])
            consumed = {}
            for name, cap in caps.items():
                amount = consumption(cap, requests.get(name))
                if amount is None or used.get(name, 0) + amount > parse(cap["value"]):
                    break
                consumed[name] = canonical(amount, any(cap["value"].endswith(s) for s in BINARY))
            else:
                return device["name"], consumed
    return None


def allocate(api, namespace, name, requests, node="node-1", config=None):
    """A claim of one share asking `requests`, allocated as the scheduler would and stored on the
    API server: its reference for the kubelet, or None when no device has room."""
    placed = place(api, requests)
    if placed is None:
        return None
    device, consumed = placed
    share_id = "%08x-%04x-4%03x-8%03x-%012x" % (random.getrandbits(32), random.getrandbits(16),
                                                random.getrandbits(12), random.getrandbits(12), random.getrandbits(48))
    result = {"request": "gpu", "driver": "gpufrac.io", "pool": node, "device": device, "shareID": share_id,
              "consumedCapacity": consumed}
    return api.put_claim(namespace, name, [result], capacity=requests, config=config)
