"""gpufrac-dra on a dynamic-MIG node, run by tests/e2e/dra_mig_test.sh: the simulated H100 with MIG
mode on and no instance, reached through gpufrac's real NVML backend over the fake libnvidia-ml
(its state in a file, so the test sees what NVML was asked to do). The slices offer every profile
at every placement; preparing a claim makes (or reuses) the instance at exactly the allocated
placement, a real podman container started by the CDI id gets its nodes and its memory as the
limit, unpreparing leaves it idle for the next claim, and a placement the scheduler should not have
handed out is refused with one line; then compute instances (mig_ci_scenarios.py). Prints one FAIL line
per failed check; exit 1 when any failed."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import mig_ci_scenarios  # noqa: E402
import scenarios as s  # noqa: E402

FAKE_STATE = os.environ["GPUFRAC_FAKE_NVML_STATE"]
check = s.check


def whole(device):
    """An allocation result of a device allocated whole (no share id, no consumed capacity)."""
    return {"request": "gpu", "driver": "gpufrac.io", "pool": "node-1", "device": device}


def gpu_instances():
    with open(FAKE_STATE) as f:
        return [(gi["start"], len(gi["compute_instances"])) for gi in json.load(f)["gpus"][0]["gpu_instances"]]


def idle_records():
    with open(s.LEDGER) as f:
        return json.load(f).get("mig_idle", [])


def profile_devices(api, kubelet):
    s.wait_pool(api, ["gpu-0-mig-1g10gb-19-3", "gpu-0-mig-1c3g40gb-9-4-0"])
    check(len(api.slices) == 2, "two slices published: %d" % len(api.slices))
    check(api.violations == [], "every slice body passes the schema and limits: %s" % api.violations[:3])
    devices = {d["name"]: d for sl in api.slices.values() for d in sl["spec"].get("devices", [])}
    wholes = [d for d in devices.values() if "c." not in d["attributes"]["profile"]["string"]]
    check(len(wholes) == 25, "25 profile devices (every profile at every placement): %d" % len(wholes))
    one = devices.get("gpu-0-mig-1g10gb-19-3", {})
    check(one.get("attributes", {}).get("placementStart") == {"int": 3}, "1g.10gb at slice 3: %s" % one)
    check(one.get("consumesCounters", [{}])[0].get("counters", {}).get("memory-slice-3") == {"value": "1"},
          "it consumes memory slice 3")


def prepare_makes_the_instance(api, kubelet):
    c = api.put_claim("mig", "one", [whole("gpu-0-mig-1g10gb-19-3")])
    entry = kubelet.prepare([c]).claims[c["uid"]]
    check(entry.error == "", "prepare of a profile device: " + entry.error)
    check(gpu_instances() == [(3, 1)], "the instance was made at slice 3 with its compute instance: %s" % gpu_instances())
    rc, out = s.run(s.GPUFRAC, "cdi", "validate", s.spec_path(c["uid"]))
    check(rc == 0, "the claim's spec validates: " + out)
    argv = s.podman_run(c["uid"], "--rm", "--rootfs", os.path.join(s.TMP, "rootfs"), "/bin/sh", "-c",
                        "cat /run/gpufrac/limits; ls /dev/nvidia-caps | wc -l")
    rc, out = s.run(*argv)
    check(rc == 0, "podman run --device k8s.gpufrac.io/gpu=<claim> on a MIG instance: " + out)
    check("device MIG-" in out and " %d" % (9984 << 20) in out, "the limit is the instance's 9984 MiB: " + out)
    check(out.strip().endswith("2"), "the container gets the instance's two capability nodes: " + out)
    # The same device again while it is held: refused, nothing made.
    again = api.put_claim("mig", "two", [whole("gpu-0-mig-1g10gb-19-3")])
    err = kubelet.prepare([again]).claims[again["uid"]].error
    check("at memory slice 3" in err and "\n" not in err and gpu_instances() == [(3, 1)],
          "a second claim on the held placement is refused: " + err)
    overlap = api.put_claim("mig", "overlap", [whole("gpu-0-mig-2g20gb-14-2")])
    err = kubelet.prepare([overlap]).claims[overlap["uid"]].error
    check("2g.20gb at memory slice 2" in err and not os.path.exists(s.spec_path(overlap["uid"])),
          "an overlapping placement is refused and writes nothing: " + err)
    return c


def unprepare_keeps_it_idle(api, kubelet, c):
    check(kubelet.unprepare([c]).claims[c["uid"]].error == "", "unprepare")
    check(not [e for e in s.ledger_entries() if e["source"] == "dra"], "no booking left")
    check(len(idle_records()) == 1, "the instance is kept idle for reuse: %s" % idle_records())
    again = api.put_claim("mig", "three", [whole("gpu-0-mig-1g10gb-19-3")])
    check(kubelet.prepare([again]).claims[again["uid"]].error == "", "the next claim on it prepares")
    check(gpu_instances() == [(3, 1)] and idle_records() == [], "and reuses the idle instance")
    kubelet.unprepare([again])
    # A larger profile over it destroys the idle instance and makes its own.
    big = api.put_claim("mig", "big", [whole("gpu-0-mig-3g40gb-9-0")])
    check(kubelet.prepare([big]).claims[big["uid"]].error == "", "3g.40gb at slice 0 over the idle 1g.10gb@3")
    check(gpu_instances() == [(0, 1)], "the idle instance made way: %s" % gpu_instances())
    kubelet.unprepare([big])


def everything():
    api = harness.ApiServer()
    plugin = s.Plugin(api)
    s.require(plugin.wait_registered(), "the plugin registers")
    kubelet = harness.Kubelet(plugin.registration)
    kubelet.register()
    profile_devices(api, kubelet)
    c = prepare_makes_the_instance(api, kubelet)
    unprepare_keeps_it_idle(api, kubelet, c)
    mig_ci_scenarios.run(api, kubelet)
    check(plugin.stop() == 0, "SIGTERM stops the plugin")


def main():
    return s.finish(everything)


if __name__ == "__main__":
    sys.exit(main())
