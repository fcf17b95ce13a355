"""gpufrac-dra end to end, run by tests/e2e/dra_test.sh (which prepares the simulated node, the
config and the CUDA rootfs). The driver under test is the real binary; the kubelet and the API
server are harness.py's. Prints one FAIL line per failed check; exit 1 when any failed."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import scheduler  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TMP = os.environ["E2E_TMP"]
BIN = os.environ["BIN_DIR"]
GPUFRAC = os.path.join(BIN, "gpufrac")
DRA = os.path.join(BIN, "gpufrac-dra")
CONFIG = os.environ["GPUFRAC_CONFIG"]
KUBELET_DIR = os.path.join(TMP, "kubelet")
CDI_DIR = os.environ.get("DRA_CDI_DIR", "/var/run/cdi")   # podman 4.3.1 reads no other directory
LEDGER = os.path.join(TMP, "state", "ledger.json")
CHECKPOINT = os.path.join(KUBELET_DIR, "plugins", "gpufrac.io", "checkpoint.json")
QUARTER = "%dMi" % (40536 // 4)
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what, flush=True)


class Missing(Exception):
    """Something a scenario needs is not there: its FAIL line is printed, the scenario stops."""


def require(ok, what):
    """check(), and the scenario stops here when it failed: what follows would use what is missing."""
    check(ok, what)
    if not ok:
        raise Missing(what)


def guarded(body, *args):
    """body(*args), or None when it stopped: on Missing (already reported) or on any other exception,
    which is reported as one FAIL line (the exception and the scenario line it came from), never a
    traceback."""
    try:
        return body(*args)
    except Missing:
        return None
    except Exception as e:  # noqa: BLE001 - every failure of a scenario is one FAIL line
        ours = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith(HERE)]
        where = " < ".join("%s:%d %s" % (os.path.basename(f.filename), f.lineno, f.name) for f in ours[::-1][:3])
        what = "gRPC %s: %s" % (e.code().name, e.details()) if isinstance(e, harness.grpc.RpcError) and \
            hasattr(e, "code") else " ".join(("%s: %s" % (type(e).__name__, e)).split())
        check(False, "%s stopped at %s: %s" % (body.__name__, where or "?", what[:300]))
        return None


def pool_missing(api, devices=(), capacities=(), pool="node-1"):
    """What a scheduler could not yet use in the driver's pool, in one line, or None: the pool at
    its newest generation complete and valid (scheduler.pool_problem), each of `devices` published
    in it, and a shareable device with every capacity in `capacities`."""
    with api.lock:
        slices = list(api.slices.values())
    newest = scheduler.pools(slices).get(("gpufrac.io", pool))
    if newest is None:
        return "pool %s: no slice published" % pool
    problem = scheduler.pool_problem(newest)
    if problem:
        return problem
    published = [d for s in newest for d in s["spec"].get("devices", [])]
    absent = [n for n in devices if n not in {d["name"] for d in published}]
    if absent:
        return "pool %s: no device %s among %s" % (pool, ", ".join(absent), sorted(d["name"] for d in published))
    if capacities and not any(d.get("allowMultipleAllocations") and all(c in d["capacity"] for c in capacities)
                              for d in published):
        return "pool %s: no shareable device with the capacities %s" % (pool, ", ".join(capacities))
    return None


def wait_pool(api, devices=(), capacities=(), seconds=30):
    """Until the pool holds what the scenario uses (pool_missing); else the scenario stops with one
    FAIL line saying what was missing."""
    wait_for(lambda: pool_missing(api, devices, capacities) is None, seconds)
    missing = pool_missing(api, devices, capacities)
    require(missing is None, "after %d s, %s" % (seconds, missing))


def ledger_entries():
    with open(LEDGER) as f:
        return json.load(f)["entries"]


def spec_path(uid):
    return os.path.join(CDI_DIR, "k8s.gpufrac.io-gpu_%s.yaml" % uid)


class Plugin:
    """gpufrac-dra on the harness's kubelet directory. kubeconfig: the file for --kubeconfig (by
    default one the API server writes: its CA inline and a token), or None for none (env then sets
    KUBECONFIG). Every one started is killed at the end (finish)."""

    started = []

    def __init__(self, api, env=None, pod_uid=None, kubeconfig="", stderr="dra.stderr"):
        if kubeconfig == "":
            kubeconfig = api.kubeconfig(os.path.join(TMP, "kubeconfig"))
        self.stderr = os.path.join(TMP, stderr)
        self.log = open(self.stderr, "a")
        base = {k: v for k, v in os.environ.items() if k not in ("POD_UID", "KUBECONFIG")}
        env = dict(base, **(env or {}))
        if pod_uid:
            env["POD_UID"] = pod_uid
        self.proc = subprocess.Popen(
            [DRA, "--node-name", "node-1", "--kubelet-dir", KUBELET_DIR, "--cdi-dir", CDI_DIR, "--config", CONFIG,
             "--resync", "0.5"] + (["--kubeconfig", kubeconfig] if kubeconfig else []),
            stdout=self.log, stderr=self.log, env=env)
        Plugin.started.append(self)
        name = "gpufrac.io-%s-reg.sock" % pod_uid if pod_uid else "gpufrac.io-reg.sock"
        self.registration = os.path.join(KUBELET_DIR, "plugins_registry", name)

    def wait_registered(self):
        """Until GetInfo answers on the socket (a killed plugin's stale socket file does not)."""
        for _ in range(100):
            if self.proc.poll() is not None:
                return False
            try:
                harness.Kubelet(self.registration).register()
                return True
            except Exception:
                time.sleep(0.1)
        return False

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=20)


def run(*argv):
    p = subprocess.run(argv, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def wait_for(predicate, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def finish(body, *args):
    """Runs body(*args) (guarded: an exception is one FAIL line), kills every plugin still running,
    prints PASS or how many checks failed and returns the exit status."""
    try:
        guarded(body, *args)
    finally:
        for plugin in Plugin.started:
            if plugin.proc.poll() is None:
                plugin.stop(signal.SIGKILL)
    print("%d check(s) failed" % len(failures) if failures else "PASS")
    return 1 if failures else 0


def on_registered_plugin(body, devices=("gpu-0",), capacities=()):
    """Starts gpufrac-dra against a fake API server, registers a kubelet with it, waits until its
    pool offers what body uses (`devices`, `capacities`: wait_pool), runs body(api, kubelet), then
    kills the plugin; prints PASS or how many checks failed and returns the exit status."""
    def on_plugin():
        api = harness.ApiServer()
        plugin = Plugin(api)
        require(plugin.wait_registered(), "the plugin registers")
        kubelet = harness.Kubelet(plugin.registration)
        kubelet.register()
        wait_pool(api, devices, capacities)
        body(api, kubelet)
    on_plugin.__name__ = body.__name__
    return finish(on_plugin)


def registration_and_slices(api, plugin):
    require(plugin.wait_registered(), "the plugin creates its registration socket")
    kubelet = harness.Kubelet(plugin.registration)
    info, notified = kubelet.register()
    check(info.type == "DRAPlugin" and info.name == "gpufrac.io", "GetInfo: DRAPlugin gpufrac.io, got %s" % info)
    check(list(info.supported_versions) == ["v1.DRAPlugin", "v1beta1.DRAPlugin"], "versions, v1 first")
    check(info.endpoint == os.path.join(KUBELET_DIR, "plugins", "gpufrac.io", "dra.sock"), "endpoint " + info.endpoint)
    check(notified is None, "NotifyRegistrationStatus(true) answered")
    _, refused = harness.Kubelet(plugin.registration).register(accepted=False, error="some error")
    check(refused is not None, "NotifyRegistrationStatus(false) answered with an error")
    wait_pool(api, ["gpu-0"], ["memory", "fraction", "compute"])
    check(len(api.slices) == 2, "two slices published: %d" % len(api.slices))
    check(api.violations == [], "every slice body passes the schema and limits: %s" % api.violations[:3])
    devices = [d["name"] for s in api.slices.values() for d in s["spec"].get("devices", [])]
    check(devices == ["gpu-0"], "one shareable device gpu-0: %s" % devices)
    # The kubelet wipes the node's slices at its start: they come back.
    api.handle("DELETE", api.SLICES + "?fieldSelector=spec.nodeName%3Dnode-1", None)
    wait_pool(api, ["gpu-0"], ["memory", "fraction", "compute"])
    check(len(api.slices) == 2, "two slices re-created after the kubelet's wipe: %d" % len(api.slices))
    gens = {s["spec"]["pool"]["generation"] for s in api.slices.values()}
    check(len(gens) == 1, "one pool generation: %s" % gens)
    check(len(kubelet.prepare([]).claims) == 0, "empty prepare: empty map")
    return kubelet


def four_quarters(api, kubelet):
    """Four claims of a quarter of the GPU (capacity fraction 250k, placed by the harness's
    scheduler from the published request policies): all four fit the A100-40GB, each books a
    quarter of its 40536 MiB (by memory, 10134Mi rounds up to the 1Gi step: three would fit)."""
    claims = [scheduler.allocate(api, "team-a", "q%d" % i, {"fraction": "250k"}) for i in range(4)]
    require(all(claims), "the scheduler places four quarters on gpu-0: %s" % claims)
    check(scheduler.place(api, {"fraction": "250k"}) is None and scheduler.place(api, {"memory": "1Gi"}) is None,
          "and nothing more: the quarters consumed the whole fraction")
    for c in claims:
        resp = kubelet.prepare([c])
        entry = resp.claims[c["uid"]]
        check(entry.error == "", "prepare %s: %s" % (c["name"], entry.error))
        want_share = api.claims[("team-a", c["name"])]["status"]["allocation"]["devices"]["results"][0]["shareID"]
        check(len(entry.devices) == 1 and entry.devices[0].device_name == "gpu-0" and
              entry.devices[0].pool_name == "node-1" and list(entry.devices[0].request_names) == ["gpu"] and
              entry.devices[0].share_id == want_share, "device of %s: %s" % (c["name"], entry.devices))
        check(list(entry.devices[0].cdi_device_ids) == ["k8s.gpufrac.io/gpu=" + c["uid"]], "CDI id of " + c["name"])
        rc, out = run(GPUFRAC, "cdi", "validate", spec_path(c["uid"]))
        check(rc == 0, "the claim's CDI spec validates: " + out)
    check(len([e for e in ledger_entries() if e["source"] == "dra"]) == 4, "four claim bookings")
    rc, out = run(GPUFRAC, "status")
    check(rc == 0 and out.count("team-a/q") == 4 and "prepared" in out, "status lists the four claims:\n" + out)
    # Again, as after a kubelet restart: the same answer, nothing new.
    before = open(LEDGER).read()
    again = kubelet.prepare([claims[0]]).claims[claims[0]["uid"]]
    check(again.error == "" and again.devices[0].share_id != "", "prepare twice answers again")
    check(open(LEDGER).read() == before, "prepare twice books nothing new")
    # The v1beta1 service answers the same claim without share ids.
    old = kubelet.prepare([claims[0]], version="v1beta1").claims[claims[0]["uid"]]
    check(old.error == "" and old.devices[0].device_name == "gpu-0", "v1beta1 prepare")
    # A fifth quarter that the API server hands out on the full GPU: refused, nothing booked.
    fifth = api.put_claim("team-a", "q4", [harness.share("gpu-0", QUARTER)])
    entry = kubelet.prepare([fifth]).claims[fifth["uid"]]
    check("gpu-0: no GPU has 9.9 GiB free" in entry.error and "\n" not in entry.error, "fifth quarter refused: " + entry.error)
    check(len(ledger_entries()) == 4 and not os.path.exists(spec_path(fifth["uid"])), "the refusal left nothing")
    return claims


def podman_run(uid, *args):
    return ["podman", "--hooks-dir", os.path.join(TMP, "hooks.d"), "--cgroup-manager", "cgroupfs", "--runtime",
            "runc", "run", "--pid=host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
            "--device", "k8s.gpufrac.io/gpu=" + uid] + list(args)


def container_enforces(claims):
    uid = claims[0]["uid"]
    argv = podman_run(uid, "--rm", "--rootfs", os.path.join(TMP, "rootfs"), "/bin/sh", "-c",
                      "cat /run/gpufrac/limits; " + os.environ["CUDA_CHECK"])
    rc, out = run(*argv)
    check(rc == 0, "podman run --device k8s.gpufrac.io/gpu=<claim>: " + out)
    check("%d" % (40536 // 4 * 1024 * 1024) in out, "the limit file holds the claim's share")
    check("the next cuMemAlloc of 512 MiB returned CUDA_ERROR_OUT_OF_MEMORY" in out, "CUDA stops at the limit: " + out)
    check(len(ledger_entries()) == 4, "the container's end releases nothing: the claim holds its share")


def private_pid_refused(claims):
    """The claim's spec carries gpufrac-hook --claim: a container in its own PID namespace (a pod
    without hostPID: true) is refused with the hook's one line; the claim keeps its booking."""
    argv = [a for a in podman_run(claims[0]["uid"], "--rm", "--rootfs", os.path.join(TMP, "rootfs"), "/bin/true")
            if a != "--pid=host"]
    rc, out = run(*argv)
    check(rc != 0 and "claim %s: the container has its own PID namespace" % claims[0]["uid"] in out
          and "hostPID: true" in out, "a claim's container without the host PID namespace is refused: " + out)
    check(len(ledger_entries()) == 4, "the refusal leaves the claim's booking")


def containers_share_a_claim(claims):
    """Two containers of one pod using the same claim count against its one limit."""
    uid = claims[1]["uid"]
    name = "gpufrac-e2e-dra-%d-holder" % os.getpid()
    rc, out = run(*podman_run(uid, "-d", "--name", name, "--rootfs", os.path.join(TMP, "rootfs"), "/bin/sh", "-c",
                              "sleep 3600 | alloc_until_limit 1024"))
    check(rc == 0, "the first container starts: " + out)
    check(wait_for(lambda: "allocated" in run("podman", "logs", name)[1], 20), "it allocates")
    rc, out = run(*podman_run(uid, "--rm", "--rootfs", os.path.join(TMP, "rootfs"), "/bin/sh", "-c",
                              "alloc_until_limit 1024 </dev/null"))
    check("allocated 0 x 1024 MiB" in out, "the second container finds the claim's limit used: " + out)
    run("podman", "rm", "-f", name)


def health_not_served(kubelet):
    """The 1.36 kubelet opens the health stream on every DRA plugin; gpufrac-dra answers UNIMPLEMENTED."""
    ch = harness.grpc.insecure_channel("unix://" + kubelet.endpoint)
    watch = ch.unary_stream("/v1alpha1.DRAResourceHealth/NodeWatchResources",
                            request_serializer=lambda m: m, response_deserializer=lambda b: b)
    try:
        list(watch(b"", timeout=5))
        code = None
    except harness.grpc.RpcError as e:
        code = e.code()
    ch.close()
    check(code == harness.grpc.StatusCode.UNIMPLEMENTED, "the health stream is UNIMPLEMENTED: %s" % code)


def unprepare(api, kubelet, claims):
    resp = kubelet.unprepare(claims[:2] + [{"namespace": "x", "name": "y", "uid": "00000000-0000-4000-8000-000000000000"}])
    check(len(resp.claims) == 3 and all(e.error == "" for e in resp.claims.values()),
          "unprepare answers every claim, the unknown one too: %s" % resp)
    check(len(ledger_entries()) == 2, "two shares released")
    check(not os.path.exists(spec_path(claims[0]["uid"])), "the spec is removed")
    check(kubelet.unprepare(claims[:1]).claims[claims[0]["uid"]].error == "", "unprepare twice")


def faults(api, kubelet):
    gpu = [harness.share("gpu-0", "1Gi")]
    cases = []
    cases.append((api.put_claim("f", "unallocated", gpu, allocated=False), "not allocated (no status.allocation)"))
    replaced = api.put_claim("f", "replaced", gpu)
    cases.append((dict(replaced, uid="11111111-1111-4111-8111-111111111111"), "the claim was replaced"))
    cases.append((api.put_claim("f", "unknown", [harness.share("gpu-9", "1Gi")]), '"gpu-9" is not a device of node-1'))
    cases.append((api.put_claim("f", "pool", [harness.share("gpu-0", "1Gi", node="node-2")]), "is not this node's pool"))
    cases.append((api.put_claim("f", "beyond", [harness.share("gpu-0", "41Gi")]), "41Gi is beyond gpu-0"))
    cases.append(({"namespace": "f", "name": "missing", "uid": "22222222-2222-4222-8222-222222222222"}, "HTTP 404"))
    expected = {401: '401 from the API server: the token of user "test" in %s is not accepted' %
                os.path.join(TMP, "kubeconfig"), 403: "HTTP 403", 500: "HTTP 500"}
    for code in (401, 403, 500):
        c = api.put_claim("f", "fault%d" % code, gpu)
        api.faults[("f", c["name"])] = code
        cases.append((c, expected[code]))
    bad = api.put_claim("f", "malformed", gpu)
    api.faults[("f", "malformed")] = "malformed"
    cases.append((bad, "not a JSON object"))
    before = ledger_entries()
    for claim, expected in cases:
        entry = kubelet.prepare([claim]).claims[claim["uid"]]
        check(expected in entry.error and "\n" not in entry.error, "%s: [%s] in [%s]" % (claim["name"], expected, entry.error))
        check(not os.path.exists(spec_path(claim["uid"])), claim["name"] + ": no spec written")
    check(ledger_entries() == before, "no fault booked anything")
    hung = api.put_claim("f", "hung", gpu)
    api.faults[("f", "hung")] = "hang"
    start = time.time()
    entry = kubelet.prepare([hung]).claims[hung["uid"]]
    took = time.time() - start
    check(entry.error != "" and took < 20, "a hung API server fails the claim in %.1f s: %s" % (took, entry.error))
    # Many claims in one request (the kubelet sends a pod's claims together): an entry for each. The
    # plugin GETs them one after the other over one kept connection (when each GET made its own TLS
    # connection, 56 ms each at load 15 on 2 cores, and 1,000 outlasted the kubelet's 45 s
    # deadline); 100 stay well inside it.
    many = [{"namespace": "f", "name": "n%d" % i, "uid": "%08d-0000-4000-8000-000000000000" % i} for i in range(100)]
    resp = kubelet.prepare(many)
    check(len(resp.claims) == 100 and all("HTTP 404" in e.error for e in resp.claims.values()),
          "a request with 100 claims: every one answered")


def crash_between_phases(api):
    plugin = Plugin(api, env={"GPUFRAC_FAULT": "dra-after-book"})
    require(plugin.wait_registered(), "the plugin starts with the fault armed")
    kubelet = harness.Kubelet(plugin.registration)
    kubelet.register()
    claim = api.put_claim("crash", "c1", [harness.share("gpu-0", "1Gi")])
    try:
        kubelet.prepare([claim])
        check(False, "the plugin should have died in prepare")
    except Exception:
        pass
    check(plugin.proc.wait(timeout=10) == -signal.SIGKILL, "killed between the phases")
    check(any(e["container_id"] == claim["uid"] for e in ledger_entries()), "the booking was made before the kill")
    # Restarted with a kubeconfig as kubeadm's admin.conf is: a client certificate and key inline.
    plugin = Plugin(api, kubeconfig=api.kubeconfig(os.path.join(TMP, "kubeconfig-cert"), user="client-cert"))
    require(plugin.wait_registered(), "restarted")
    check(wait_for(lambda: "cert:gpufrac-dra" in api.identities), "the API server knows it by its client certificate")
    check(not any(e["container_id"] == claim["uid"] for e in ledger_entries()), "the restart rolled the claim back")
    check(not os.path.exists(spec_path(claim["uid"])), "no orphaned spec")
    return plugin


def claims_deleted_while_down(api, plugin, kubelet_claims):
    # The remaining prepared claims are deleted from the API server: the sync releases them.
    for c in kubelet_claims:
        api.claims.pop((c["namespace"], c["name"]), None)
    check(wait_for(lambda: not any(e["source"] == "dra" for e in ledger_entries()), 10),
          "claims deleted from the API server are released by the sync")


def concurrent(api, plugin):
    kubelet = harness.Kubelet(plugin.registration)
    kubelet.register()
    claims = [api.put_claim("load", "c%d" % i, [harness.share("gpu-0", "512Mi")]) for i in range(50)]
    errors = []

    def one(c):
        e = kubelet.prepare([c]).claims[c["uid"]]
        if e.error:
            errors.append(e.error)
    threads = [threading.Thread(target=one, args=(c,)) for c in claims]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(errors == [], "50 concurrent prepares: %s" % errors[:3])
    mine = [e for e in ledger_entries() if e["source"] == "dra"]
    check(len(mine) == 50 and sum(e["bytes"] for e in mine) == 50 * 512 * 1024 * 1024, "the ledger is exact")
    rc, out = run(GPUFRAC, "cdi", "validate", *[spec_path(c["uid"]) for c in claims])
    check(rc == 0, "all 50 specs validate: " + out[-300:])
    resp = kubelet.unprepare(claims)
    check(all(e.error == "" for e in resp.claims.values()) and not ledger_entries(), "all 50 unprepared")


def rolling_update(api):
    """Two instances at once, as a DaemonSet's rolling update runs them: each on its own sockets,
    prepare and unprepare serialized across them by serialize.lock, either unpreparing what the
    other prepared, the shared checkpoint losing nothing under concurrent prepares on both."""
    old_uid, new_uid = "0b1a5e2c-1111-4111-8111-000000000001", "0b1a5e2c-2222-4222-8222-000000000002"
    old, new = Plugin(api, pod_uid=old_uid), Plugin(api, pod_uid=new_uid)
    try:
        require(old.wait_registered() and new.wait_registered(), "both instances register on their own sockets")
        k_old, k_new = harness.Kubelet(old.registration), harness.Kubelet(new.registration)
        k_old.register()
        k_new.register()
        check(k_new.endpoint == os.path.join(KUBELET_DIR, "plugins", "gpufrac.io", "dra-%s.sock" % new_uid),
              "the new pod's DRA socket: " + k_new.endpoint)
        claims = [api.put_claim("rolling", "r%d" % i, [harness.share("gpu-0", "512Mi")]) for i in range(20)]
        errors = []

        def one(kubelet, c):
            e = kubelet.prepare([c]).claims[c["uid"]]
            if e.error:
                errors.append(e.error)
        threads = [threading.Thread(target=one, args=(k_old if i % 2 else k_new, c)) for i, c in enumerate(claims)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check(errors == [], "20 prepares spread over both instances: %s" % errors[:3])
        with open(CHECKPOINT) as f:
            recorded = set(json.load(f)["claims"])
        check(recorded == {c["uid"] for c in claims}, "the shared checkpoint holds all 20 (%d)" % len(recorded))
        check(len([e for e in ledger_entries() if e["source"] == "dra"]) == 20, "20 bookings")
        # Each instance unprepares the claims the other prepared.
        errors = [e.error for k, half in ((k_old, claims[0::2]), (k_new, claims[1::2]))
                  for e in k.unprepare(half).claims.values() if e.error]
        check(errors == [], "unprepare across instances: %s" % errors[:3])
        check(not ledger_entries() and not any(os.path.exists(spec_path(c["uid"])) for c in claims),
              "every booking and spec released")
        with open(CHECKPOINT) as f:
            check(json.load(f)["claims"] == {}, "the checkpoint is empty again")
        check(old.stop() == 0 and not os.path.exists(old.registration), "the old pod stops and removes its sockets")
        check(os.path.exists(new.registration) and new.proc.poll() is None, "the new pod keeps serving")
        check(harness.Kubelet(new.registration).register()[1] is None, "and still registers")
    finally:
        for p in (old, new):
            if p.proc.poll() is None:
                p.stop()


def damaged_checkpoint(api):
    with open(CHECKPOINT, "r+") as f:
        text = f.read()
        f.seek(0)
        f.truncate()
        f.write(text[: len(text) // 2])
    plugin = Plugin(api)
    rc = plugin.proc.wait(timeout=10)
    err = open(os.path.join(TMP, "dra.stderr")).read()
    check(rc != 0 and CHECKPOINT + ": damaged checkpoint" in err, "a truncated checkpoint is refused (rc %d)" % rc)


def everything():
    api = harness.ApiServer()
    plugin = Plugin(api)
    kubelet = registration_and_slices(api, plugin)
    claims = four_quarters(api, kubelet)
    container_enforces(claims)
    private_pid_refused(claims)
    containers_share_a_claim(claims)
    health_not_served(kubelet)
    unprepare(api, kubelet, claims)
    faults(api, kubelet)
    check(plugin.stop() == 0, "SIGTERM stops the plugin")
    check(not os.path.exists(plugin.registration), "and removes its sockets")
    plugin = crash_between_phases(api)
    claims_deleted_while_down(api, plugin, claims[2:])
    concurrent(api, plugin)
    plugin.stop()
    rolling_update(api)
    damaged_checkpoint(api)


def main():
    return finish(everything)


if __name__ == "__main__":
    sys.exit(main())
