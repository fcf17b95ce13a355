"""gpufrac-dra with a claim of two devices, run by tests/e2e/dra_multigpu_test.sh on a simulated
two-GPU node (a100-40gb-x2): both devices are booked, each with its own limit, and a real podman
container started by the claim's CDI id sees both GPUs' limit lines; a two-device claim whose second
device does not fit is refused in one line and books neither (the first device's booking is rolled
back); unprepare releases both. Prints one FAIL line per failed check; exit 1 when any failed."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import scenarios as s  # noqa: E402

check = s.check
MI = 1 << 20
GI = 1 << 30


def gpu_uuids():
    rc, out = s.run(s.GPUFRAC, "info", "--json")
    return [g["uuid"] for g in json.loads(out)["gpus"]]


def claim_entries(uid):
    return sorted(((e["gpu_index"], e["bytes"]) for e in s.ledger_entries() if e["container_id"] == uid))


def two_devices_booked(api, kubelet, uuids):
    c = api.put_claim("mg", "two", [harness.share("gpu-0", "10Gi"), harness.share("gpu-1", "4Gi")])
    entry = kubelet.prepare([c]).claims[c["uid"]]
    check(entry.error == "", "prepare of a two-device claim: " + entry.error)
    check(sorted(d.device_name for d in entry.devices) == ["gpu-0", "gpu-1"], "both devices: %s" % entry.devices)
    check(claim_entries(c["uid"]) == [(0, 10 * GI), (1, 4 * GI)],
          "each device booked with its own size: %s" % claim_entries(c["uid"]))
    rc, out = s.run(s.GPUFRAC, "cdi", "validate", s.spec_path(c["uid"]))
    check(rc == 0, "the claim's spec validates: " + out)
    argv = s.podman_run(c["uid"], "--rm", "--rootfs", os.path.join(s.TMP, "rootfs"), "/bin/sh", "-c",
                        "cat /run/gpufrac/limits; ls /dev")
    rc, out = s.run(*argv)
    check(rc == 0, "podman run --device k8s.gpufrac.io/gpu=<two-device claim>: " + out)
    check("device %s %d" % (uuids[0], 10 * GI) in out, "GPU 0's limit is its own 10 GiB: " + out)
    check("device %s %d" % (uuids[1], 4 * GI) in out, "GPU 1's limit is its own 4 GiB: " + out)
    nodes = sorted(line for line in out.split("\n") if line.startswith("nvidia") and line[6:].isdigit())
    check(nodes == ["nvidia0", "nvidia1"], "the container has both GPUs' nodes: %s" % nodes)
    return c


def second_device_refused(api, kubelet):
    big = api.put_claim("mg", "big", [harness.share("gpu-1", "30Gi")])
    check(kubelet.prepare([big]).claims[big["uid"]].error == "", "a 30 GiB claim on gpu-1")
    before = open(s.LEDGER).read()
    c = api.put_claim("mg", "nofit", [harness.share("gpu-0", "10Gi"), harness.share("gpu-1", "10Gi")])
    err = kubelet.prepare([c]).claims[c["uid"]].error
    check("gpu-1: no GPU has 10.0 GiB free" in err and "\n" not in err,
          "the second device's refusal is one line naming it: " + err)
    check(claim_entries(c["uid"]) == [], "neither device stays booked: %s" % claim_entries(c["uid"]))
    check(json.loads(open(s.LEDGER).read())["entries"] == json.loads(before)["entries"],
          "the ledger is as before the refused claim")
    check(not os.path.exists(s.spec_path(c["uid"])), "no spec for the refused claim")
    return big


def scenario(api, kubelet):
    uuids = gpu_uuids()
    two = two_devices_booked(api, kubelet, uuids)
    big = second_device_refused(api, kubelet)
    resp = kubelet.unprepare([two, big])
    check(all(e.error == "" for e in resp.claims.values()), "unprepare: %s" % resp)
    check([e for e in s.ledger_entries() if e["source"] == "dra"] == [], "unprepare released both devices")
    check(not os.path.exists(s.spec_path(two["uid"])), "the two-device claim's spec is removed")


def main():
    return s.on_registered_plugin(scenario, devices=["gpu-0", "gpu-1"])


if __name__ == "__main__":
    sys.exit(main())
