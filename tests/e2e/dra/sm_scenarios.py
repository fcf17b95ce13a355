"""gpufrac-dra with SM shares (docs/architecture.md "SM sharing"), run by tests/e2e/sm/sm_dra_test.sh on a
simulated one-GPU node reached through the fake NVML: a claim asking compute: "30" with the opaque
parameter computeMode: sm is prepared as an SM share (the GPU switched to MPS, its daemon started in
the plugin's process), its CDI spec carries the MPS client environment, and a real podman container
started by its CDI id is an MPS client with 30 % of the SMs; the parameter without a compute request,
or with an unknown key, refuses the claim in one line and books nothing; unprepare releases it, and a
time-share claim right after switches the idle GPU back to time sharing at once.
Prints one FAIL line per failed check; exit 1 when any failed."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import scenarios as s  # noqa: E402
import scheduler  # noqa: E402

check = s.check
SM = {"driver": "gpufrac.io", "parameters": {"apiVersion": "gpufrac.io/v1", "kind": "ShareConfig", "computeMode": "sm"}}


def ledger():
    with open(s.LEDGER) as f:
        return json.load(f)


def sm_claim_prepared(api, kubelet):
    c = scheduler.allocate(api, "inference", "decode", {"memory": "8Gi", "compute": "30"}, config=[SM])
    s.require(c is not None, "the scheduler places the claim")
    entry = kubelet.prepare([c]).claims[c["uid"]]
    check(entry.error == "", "prepare of an SM claim: " + entry.error)
    mine = [e for e in ledger()["entries"] if e["container_id"] == c["uid"]]
    check([(e["compute"], e["compute_mode"]) for e in mine] == [(300000, "sm")],
          "booked as an SM share of 30 %%: %s" % mine)
    check(ledger()["version"] == 7 and len(ledger()["mps"]) == 1, "the GPU is recorded in MPS mode")
    spec = open(s.spec_path(c["uid"])).read()
    check('CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30' in spec and 'CUDA_MPS_PIPE_DIRECTORY=/run/gpufrac/mps/pipe' in spec,
          "the claim's CDI spec carries the MPS client environment")
    argv = s.podman_run(c["uid"], "--rm", "--rootfs", os.path.join(s.TMP, "rootfs"), "/bin/sh", "-c",
                        "mps_probe launch 2 sleep_1ms; ls /dev/shm")
    rc, out = s.run(*argv)
    check(rc == 0, "podman run --device k8s.gpufrac.io/gpu=<SM claim>: " + out)
    check("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30\n" in out and "cuInit: CUDA_SUCCESS" in out and
          "launch: 2 ok, then done" in out, "an MPS client with 30 % of the SMs: " + out)
    check("cuda.shm." in out, "the server's shm directory at /dev/shm: " + out)
    return c


def refused(api, kubelet, requests, config, want):
    before = ledger()["entries"]
    c = scheduler.allocate(api, "inference", "bad-%d" % len(want), requests, config=config)
    s.require(c is not None, "the scheduler places the claim asking %s" % requests)
    err = kubelet.prepare([c]).claims[c["uid"]].error
    check(want in err and "\n" not in err, "refused in one line (%s): %s" % (want, err))
    check(ledger()["entries"] == before, "nothing booked for a refused claim")
    check(not os.path.exists(s.spec_path(c["uid"])), "no spec for a refused claim")


def scenario(api, kubelet):
    c = sm_claim_prepared(api, kubelet)
    refused(api, kubelet, {"memory": "4Gi"}, [SM],
            ".opaque.parameters.computeMode: sm on gpu-0 needs a compute request, the percent of the GPU's SMs")
    odd = {"driver": "gpufrac.io", "parameters": {"computeMode": "sm", "smPercent": 30}}
    refused(api, kubelet, {"memory": "4Gi", "compute": "20"}, [odd],
            'status.allocation.devices.config[0].opaque.parameters."smPercent": "30" is not accepted')
    resp = kubelet.unprepare([c])
    check(all(e.error == "" for e in resp.claims.values()), "unprepare: %s" % resp)
    check([e for e in ledger()["entries"] if e["source"] == "dra"] == [], "unprepare released the SM share")
    check(len(ledger()["mps"]) == 1, "the GPU stays in MPS mode, idle")
    t = scheduler.allocate(api, "inference", "timeshare", {"memory": "4Gi"})
    check(t is not None, "the scheduler places a time-share claim")
    err = kubelet.prepare([t]).claims[t["uid"]].error
    check(err == "", "a time-share claim right after the last SM share ended is prepared: " + err)
    check(ledger().get("mps", []) == [], "its GPU went back to time sharing at once")
    resp = kubelet.unprepare([t])
    check(all(e.error == "" for e in resp.claims.values()), "unprepare of the time share: %s" % resp)


def main():
    return s.on_registered_plugin(scenario, capacities=["memory", "compute"])


if __name__ == "__main__":
    sys.exit(main())
