"""gpufrac-dra against API server answers that are not what they should be, run by
tests/e2e/dra_api_test.sh (no container engine): the slice LIST answered cut mid-object, with fields
of the wrong types, or announcing 1 GiB (more than the client's 64 MiB bound). The plugin keeps
running and its sockets keep answering, it logs one line per change of state, and it re-creates the
slices the kubelet wiped once the API server answers properly. Before those, the pool seen half
written (the API server holding a slice write back) is used by no scheduler. The driver under test is the real
binary; the kubelet and the API server are harness.py's. Prints one FAIL line per failed check;
exit 1 when any failed."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import scenarios as s  # noqa: E402
import scheduler  # noqa: E402

check = s.check
LOG = os.path.join(s.TMP, "gpufrac.log")
LIST_PATH = "/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.driver%3Dgpufrac.io%2Cspec.nodeName%3Dnode-1"
LIST_FAULTS = [
    ("truncated", "publishing ResourceSlices: GET " + LIST_PATH + ": HTTP 200 answer is not a JSON object (invalid "
     "JSON at byte 114: parse error at line 1, column 114: syntax error while parsing object key - invalid string: "
     "missing closing quote; last read: '\"metad'; expected string literal); the API server answers with one JSON "
     "object (trying again every resync)"),
    ("wrong-types", "publishing ResourceSlices: GET " + LIST_PATH + ": items[0]: metadata.name: not a non-empty "
     "string; a ResourceSliceList holds ResourceSlices (trying again every resync)"),
    ("huge", "publishing ResourceSlices: GET " + LIST_PATH + ": the answer announces 1073741824 bytes; at most "
     "67108864 are accepted (trying again every resync)"),
]


def log_lines(start=0):
    """The plugin's log messages from line `start` of gpufrac's log on."""
    with open(LOG) as f:
        return [line.split(": ", 1)[1].rstrip("\n") for line in f.readlines()[start:] if "gpufrac-dra[" in line]


def log_length():
    with open(LOG) as f:
        return len(f.readlines())


def answer(call):
    """call()'s value, or None when the socket does not answer."""
    try:
        return call()
    except harness.grpc.RpcError:
        return None


def api_faults(api, plugin):
    """The slice LIST answered cut mid-object, with fields of the wrong types, or announcing 1 GiB
    (more than the client's 64 MiB): the plugin keeps running and its sockets keep answering, it
    logs the failure once however many resyncs fail and once when the API server answers properly
    again, and the slices the kubelet wiped meanwhile are re-created."""
    check(s.wait_for(lambda: "ResourceSlices: 2 created, 0 updated, 0 deleted" in log_lines()), "two slices published")
    kubelet = harness.Kubelet(plugin.registration)
    kubelet.register()
    for fault, line in LIST_FAULTS:
        start = log_length()
        with api.lock:
            api.list_fault = fault
            api.slices.clear()  # the kubelet's wipe: only a good LIST answer brings them back
            seen = sum(1 for m, p in api.requests if m == "GET" and p == LIST_PATH)
        check(s.wait_for(lambda: sum(1 for m, p in api.requests if m == "GET" and p == LIST_PATH) >= seen + 3),
              "%s: the plugin lists again at every resync" % fault)
        check(plugin.proc.poll() is None, "%s: the plugin keeps running (exit %s)" % (fault, plugin.proc.poll()))
        if plugin.proc.poll() is not None:
            return
        check(answer(lambda: kubelet.register()[0].name) == "gpufrac.io", "%s: the registration socket answers" % fault)
        check(answer(lambda: len(kubelet.prepare([]).claims)) == 0, "%s: the DRA socket answers" % fault)
        api.list_fault = None
        check(s.wait_for(lambda: s.pool_missing(api, ["gpu-0"]) is None, 30),
              "%s: the slices are re-created once the answers are right: %s" % (fault, s.pool_missing(api, ["gpu-0"])))
        check(s.wait_for(lambda: "ResourceSlices published again: 2 created, 0 updated, 0 deleted" in log_lines(start)),
              "%s: the recovery is logged" % fault)
        lines = [entry for entry in log_lines(start) if "ResourceSlices" in entry]
        check(lines == [line, "ResourceSlices published again: 2 created, 0 updated, 0 deleted"],
              "%s: one line per change of state: %s" % (fault, lines))
    check(api.violations == [], "every slice body passes the schema and limits: %s" % api.violations[:3])


def half_written_pool(api):
    """The pool is written one slice at a time, and a scheduler uses it only once every slice of
    its newest generation is stored. The API server holds the second slice's write: first the
    devices slice of the first publication, then (a stored device changed, so the plugin rewrites
    the pool at generation 2) the update of the devices slice, its stale generation-1 copy still
    stored. Either way the harness's scheduler places nothing and pool_missing says why; once the
    write is stored the pool is whole at one generation and the claim is placed."""
    claim = {"memory": "1Gi", "compute": "10"}
    check(s.wait_for(lambda: len(api.slices) == 1, 30), "the first slice is stored: %d" % len(api.slices))
    half = s.pool_missing(api, ["gpu-0"])
    check(half == "pool node-1 generation 1: 1 of its 2 slices published", "the pool is incomplete: %s" % half)
    check(scheduler.place(api, claim) is None, "nothing is placed in the half-published pool")
    api.release_slice_writes()
    s.wait_pool(api, ["gpu-0"], ["memory", "compute"])
    api.hold_slice_writes(after=1)
    with api.lock:
        devices = next(sl for sl in api.slices.values() if sl["spec"].get("devices"))
        devices["spec"]["devices"][0]["attributes"]["productName"] = {"string": "changed behind the plugin"}
    check(s.wait_for(lambda: {sl["spec"]["pool"]["generation"] for sl in list(api.slices.values())} == {1, 2}, 30),
          "the counters slice is rewritten at generation 2")
    half = s.pool_missing(api, ["gpu-0"])
    check(half == "pool node-1 generation 2: 1 of its 2 slices published", "the pool is incomplete: %s" % half)
    check(scheduler.place(api, claim) is None, "nothing is placed on the stale generation-1 device")
    api.release_slice_writes()
    s.wait_pool(api, ["gpu-0"], ["memory", "compute"])
    check({sl["spec"]["pool"]["generation"] for sl in list(api.slices.values())} == {2}, "one generation, 2")
    check(scheduler.place(api, claim) is not None, "the claim is placed in the rewritten pool")
    updated = re.compile(r"ResourceSlices( published again)?: \d+ created, [1-9]\d* updated")
    check(s.wait_for(lambda: any(updated.match(line) for line in log_lines())), "the update is logged")


def everything():
    api = harness.ApiServer()
    api.hold_slice_writes(after=1)
    plugin = s.Plugin(api)
    s.require(plugin.wait_registered(), "the plugin registers")
    s.guarded(half_written_pool, api)
    api.release_slice_writes()
    api_faults(api, plugin)
    check(plugin.stop() == 0, "SIGTERM stops the plugin")


def main():
    return s.finish(everything)


if __name__ == "__main__":
    sys.exit(main())
