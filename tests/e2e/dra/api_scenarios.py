"""gpufrac-dra against API server answers that are not what they should be, run by
tests/e2e/dra_api_test.sh (no container engine): the slice LIST answered cut mid-object, with fields
of the wrong types, or announcing 1 GiB (more than the client's 64 MiB bound). The plugin keeps
running and its sockets keep answering, it logs one line per change of state, and it re-creates the
slices the kubelet wiped once the API server answers properly. The driver under test is the real
binary; the kubelet and the API server are harness.py's. Prints one FAIL line per failed check;
exit 1 when any failed."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import scenarios as s  # noqa: E402

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
        check(s.wait_for(lambda: len(api.slices) == 2), "%s: the slices are re-created once the answers are right" % fault)
        check(s.wait_for(lambda: "ResourceSlices published again: 2 created, 0 updated, 0 deleted" in log_lines(start)),
              "%s: the recovery is logged" % fault)
        lines = [entry for entry in log_lines(start) if "ResourceSlices" in entry]
        check(lines == [line, "ResourceSlices published again: 2 created, 0 updated, 0 deleted"],
              "%s: one line per change of state: %s" % (fault, lines))
    check(api.violations == [], "every slice body passes the schema and limits: %s" % api.violations[:3])


def main():
    api = harness.ApiServer()
    plugin = s.Plugin(api)
    try:
        check(plugin.wait_registered(), "the plugin registers")
        api_faults(api, plugin)
        check(plugin.stop() == 0, "SIGTERM stops the plugin")
    finally:
        if plugin.proc.poll() is None:
            plugin.stop(9)
    print("%d check(s) failed" % len(s.failures) if s.failures else "PASS")
    return 1 if s.failures else 0


if __name__ == "__main__":
    sys.exit(main())
