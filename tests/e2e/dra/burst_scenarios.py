"""gpufrac-dra with a claim that bursts, run by tests/e2e/dra_burst_test.sh on a simulated one-GPU
node: the claim's opaque configuration for gpufrac.io gives its share a memoryLimit above what it
consumes (which the scheduler counts); the ledger books the request with the limit above it, and a
real podman container started by the claim's CDI id sees the limit and the request in its limit
file. A limit below the consumed memory, or an unknown parameter, refuses the claim in one line and
books nothing. Prints one FAIL line per failed check; exit 1 when any failed."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import scenarios as s  # noqa: E402

check = s.check
GI = 1 << 30


def with_config(api, ref, parameters):
    """The scheduler's copy of the claim's opaque configuration for gpufrac.io."""
    with api.lock:
        claim = api.claims[(ref["namespace"], ref["name"])]
        claim["status"]["allocation"]["devices"]["config"] = [
            {"source": "FromClaim", "requests": ["gpu"],
             "opaque": {"driver": "gpufrac.io", "parameters": parameters}}]
        problems = harness.violations(claim, {"$ref": harness.REF + "io.k8s.api.resource.v1.ResourceClaim"})
    check(not problems, "the claim with its configuration is a valid ResourceClaim: %s" % problems)
    return ref


def burst_claim(api, kubelet):
    c = with_config(api, api.put_claim("nb", "burst", [harness.share("gpu-0", "10Gi")]),
                    {"memoryLimit": "30Gi", "onLimit": "wait", "onLimitTimeout": 5})
    entry = kubelet.prepare([c]).claims[c["uid"]]
    check(entry.error == "", "prepare of a claim with memoryLimit: " + entry.error)
    mine = [e for e in s.ledger_entries() if e["container_id"] == c["uid"]]
    check([(e["bytes"], e.get("limit"), e.get("wait_ms")) for e in mine] == [(10 * GI, 30 * GI, 5000)],
          "the ledger books the request, the limit above it and the wait: %s" % mine)
    argv = s.podman_run(c["uid"], "--rm", "--rootfs", os.path.join(s.TMP, "rootfs"), "/bin/sh", "-c",
                        "cat /run/gpufrac/limits")
    rc, out = s.run(*argv)
    check(rc == 0, "podman run --device k8s.gpufrac.io/gpu=<claim>: " + out)
    uuid = mine[0]["device_uuid"] if mine else "?"
    check("device %s %d\nburst %s %d\nwait %s 5000" % (uuid, 30 * GI, uuid, 10 * GI, uuid) in out,
          "the container's limit file: the limit, the request below it, the wait: " + out)
    return c


def refused(api, kubelet, parameters, text):
    c = with_config(api, api.put_claim("nb", "bad-%d" % len(text), [harness.share("gpu-0", "4Gi")]), parameters)
    err = kubelet.prepare([c]).claims[c["uid"]].error
    check(text in err and "\n" not in err, "refused in one line naming the field: " + err)
    check([e for e in s.ledger_entries() if e["container_id"] == c["uid"]] == [], "nothing booked for it")
    check(not os.path.exists(s.spec_path(c["uid"])), "no spec for the refused claim")


def scenario(api, kubelet):
    c = burst_claim(api, kubelet)
    refused(api, kubelet, {"memoryLimit": "2Gi"},
            "status.allocation.devices.config[0].opaque.parameters.memoryLimit: 2Gi is below the 4Gi the "
            "claim consumes on gpu-0; use at least that")
    refused(api, kubelet, {"memoryLimt": "8Gi"},
            'status.allocation.devices.config[0].opaque.parameters."memoryLimt": "8Gi" is not accepted; use '
            '{"apiVersion": "gpufrac.io/v1", "kind": "ShareConfig", "computeMode": "sm", "memoryLimit": "30Gi", '
            '"onLimit": "wait", "onLimitTimeout": 5} (each optional; computeMode fair, strict or sm)')
    resp = kubelet.unprepare([c])
    check(all(e.error == "" for e in resp.claims.values()), "unprepare: %s" % resp)
    check([e for e in s.ledger_entries() if e["source"] == "dra"] == [], "unprepare released the claim")


def main():
    return s.on_registered_plugin(scenario)


if __name__ == "__main__":
    sys.exit(main())
