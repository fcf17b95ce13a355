"""Compute instances and compute on MIG through gpufrac-dra (run by mig_scenarios.py on the same
plugin and node: the simulated H100 in MIG mode, dynamic MIG over the fake libnvidia-ml). The
slices publish compute instance devices with their share of the GPU instance's memory slices; a
selection by SMs and memory over the published attributes (what a claim's CEL selector asks)
finds the 3g.40gb; three claims on 1c.3g.40gb devices at one placement are prepared as three
compute instances of one GPU instance, each limited to its equal split; the whole GPU instance
there is refused while they hold it (the counters say so too), as is a claim with two compute
instances of one GPU instance; unpreparing leaves them idle."""
import json
import os

import scenarios as s

check = s.check
FAKE_STATE = os.environ["GPUFRAC_FAKE_NVML_STATE"]
EQUAL_SPLIT = 13482 << 20  # a third of 40448 MiB


def whole(device):
    return {"request": "gpu", "driver": "gpufrac.io", "pool": "node-1", "device": device}


def milli(q):
    """A counter quantity in thousandths: "1" is 1000, "333m" is 333."""
    return int(q[:-1]) if q.endswith("m") else int(q) * 1000


def published(api):
    return {d["name"]: d for sl in api.slices.values() for d in sl["spec"].get("devices", [])}


def fits_counters(devices, names, counter="memory-slice-4"):
    """The scheduler's counter rule on one memory slice (its counter is 1): the sum stays within it."""
    total = 0
    for n in names:
        total += milli(devices[n]["consumesCounters"][0]["counters"].get(counter, {"value": "0"})["value"])
    return total <= 1000


def by_compute(devices, sms, memory):
    """What a claim selecting `multiprocessors >= sms && memory >= memory` among whole GPU instances
    gets, smallest first (the order a scheduler's scoring would give it)."""
    fits = [d for d in devices.values() if d["attributes"].get("type") == {"string": "mig"}
            and "multiprocessors" in d["attributes"] and d["attributes"]["multiprocessors"]["int"] >= sms
            and s.scheduler.parse(d["capacity"]["memory"]["value"]) >= memory
            and "c." not in d["attributes"]["profile"]["string"]]
    return min(fits, key=lambda d: (d["attributes"]["multiprocessors"]["int"],
                                    s.scheduler.parse(d["capacity"]["memory"]["value"]), d["name"]))


def compute_instances():
    with open(FAKE_STATE) as f:
        return [(gi["start"], len(gi["compute_instances"])) for gi in json.load(f)["gpus"][0]["gpu_instances"]]


def devices_and_selection(api, kubelet):
    devices = published(api)
    check(len(devices) == 58, "25 profile devices and 33 compute instance devices: %d" % len(devices))
    one = devices.get("gpu-0-mig-1c3g40gb-9-4-0", {})
    check(one.get("capacity", {}).get("memory") == {"value": "13482Mi"}, "a 1c.3g.40gb device books a third: %s" % one)
    names = ["gpu-0-mig-1c3g40gb-9-4-%d" % n for n in range(3)]
    check(fits_counters(devices, names), "three 1c.3g.40gb of one placement fit the counters together")
    check(not fits_counters(devices, names + ["gpu-0-mig-3g40gb-9-4"]), "the whole 3g.40gb there does not fit beside")
    # 40 % of 132 SMs is 53: the 3g.40gb (60), not the 1g.10gb that 4Gi alone selects.
    chosen = by_compute(devices, 53, 4 << 30)
    check(chosen["attributes"]["profile"] == {"string": "3g.40gb"}, "selection by SMs and memory: %s" % chosen["name"])
    c = api.put_claim("mig", "by-compute", [whole(chosen["name"])])
    check(kubelet.prepare([c]).claims[c["uid"]].error == "", "the selected 3g.40gb prepares")
    check(kubelet.unprepare([c]).claims[c["uid"]].error == "", "and unprepares (idle)")


def three_share_one_gpu_instance(api, kubelet):
    claims = [api.put_claim("mig", "ci%d" % n, [whole("gpu-0-mig-1c3g40gb-9-4-%d" % n)]) for n in range(3)]
    for c in claims:
        check(kubelet.prepare([c]).claims[c["uid"]].error == "", "prepare of a 1c.3g.40gb device")
    check((4, 3) in compute_instances(), "three compute instances in the GPU instance at slice 4: %s"
          % compute_instances())
    mine = [e for e in s.ledger_entries() if e["source"] == "dra" and e["request"].startswith("mig-profile=1c.3g.40gb")]
    check(len(mine) == 3 and all(e["bytes"] == EQUAL_SPLIT for e in mine), "each booked its equal split: %s" % mine)
    check(len({e["device_uuid"] for e in mine}) == 3 and len({e["mig"]["gi"] for e in mine}) == 1,
          "three compute instances of one GPU instance")
    argv = s.podman_run(claims[1]["uid"], "--rm", "--rootfs", os.path.join(s.TMP, "rootfs"), "/bin/sh", "-c",
                        "cat /run/gpufrac/limits")
    rc, out = s.run(*argv)
    check(rc == 0 and " %d" % EQUAL_SPLIT in out, "the container's limit is its compute instance's split: " + out)
    fourth = api.put_claim("mig", "whole", [whole("gpu-0-mig-3g40gb-9-4")])
    err = kubelet.prepare([fourth]).claims[fourth["uid"]].error
    check("3g.40gb at memory slice 4" in err and "\n" not in err, "the whole GPU instance there is refused: " + err)
    two = api.put_claim("mig", "two", [whole("gpu-0-mig-2c3g40gb-9-0-0"), whole("gpu-0-mig-1c3g40gb-9-0-0")])
    err = kubelet.prepare([two]).claims[two["uid"]].error
    check("one compute instance per GPU instance" in err and "\n" not in err,
          "two compute instances of one GPU instance for one claim are refused: " + err)
    for c in claims:
        check(kubelet.unprepare([c]).claims[c["uid"]].error == "", "unprepare")
    with open(s.LEDGER) as f:
        idle = json.load(f).get("mig_idle", [])
    check(len([i for i in idle if i["uuid"] in {e["device_uuid"] for e in mine}]) == 3,
          "their compute instances are idle for reuse: %s" % idle)


def run(api, kubelet):
    devices_and_selection(api, kubelet)
    three_share_one_gpu_instance(api, kubelet)
