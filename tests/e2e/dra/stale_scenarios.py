"""gpufrac-dra on a node whose inventory cache no longer matches it while a claim holds a share, run
by tests/e2e/dra_stale_test.sh (no container engine; the node's machine file is a copy the test
changes). What an operator sees: the resync logs the stale cache once, naming gpufrac info
--refresh, and keeps the slices it published; a new claim is refused in that one line and books
nothing, while the prepared claim keeps its answer; after gpufrac info --refresh the slices are
published again and claims prepare. The driver under test is the real binary; the kubelet and the
API server are harness.py's. Prints one FAIL line per failed check; exit 1 when any failed."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import api_scenarios as a  # noqa: E402
import harness  # noqa: E402
import scenarios as s  # noqa: E402

check = s.check
MACHINE = os.path.join(s.TMP, "machine.yaml")
CACHE = os.path.join(s.TMP, "state", "inventory.json")
STALE = ("the inventory cache %s no longer matches this node (the machine file %s changed); 1 booking holds "
         "devices from it, so it was not refreshed: run gpufrac info --refresh (once they are released, or now to "
         "take the node as it is)" % (CACHE, MACHINE))


def stale(api, plugin):
    s.wait_pool(api, ["gpu-0"], ["memory"])
    kubelet = harness.Kubelet(plugin.registration)
    kubelet.register()
    held = api.put_claim("st", "held", [harness.share("gpu-0", "4Gi")])
    check(kubelet.prepare([held]).claims[held["uid"]].error == "", "a claim holds a share")
    before = s.ledger_entries()
    start = a.log_length()
    with open(MACHINE, "a") as f:
        f.write("# the node changed\n")
    line = "publishing ResourceSlices: " + STALE + " (trying again every resync)"
    check(s.wait_for(lambda: line in a.log_lines(start)), "the resync logs the stale cache: %s" % a.log_lines(start))
    # The next resyncs (one every 0.5 s) must not log it again: wait for three of them to pass.
    s.wait_for(lambda: False, 1.5)
    check([m for m in a.log_lines(start) if "ResourceSlices" in m] == [line], "once: %s" % a.log_lines(start))
    check(len(api.slices) == 2, "the slices it published stay")
    new = api.put_claim("st", "new", [harness.share("gpu-0", "4Gi")])
    err = kubelet.prepare([new]).claims[new["uid"]].error
    check(err.endswith(STALE) and "\n" not in err, "a new claim is refused in one line: " + err)
    check(s.ledger_entries() == before, "it booked nothing")
    check(not os.path.exists(s.spec_path(new["uid"])), "and wrote no spec")
    check(kubelet.prepare([held]).claims[held["uid"]].error == "", "the prepared claim keeps its answer")
    rc, out = s.run(s.GPUFRAC, "info", "--refresh")
    check(rc == 0, "gpufrac info --refresh: " + out)
    check(s.wait_for(lambda: "ResourceSlices published again: up to date" in a.log_lines(start)),
          "the next resync publishes again: %s" % a.log_lines(start))
    check(kubelet.prepare([new]).claims[new["uid"]].error == "", "the new claim prepares")
    resp = kubelet.unprepare([held, new])
    check(all(e.error == "" for e in resp.claims.values()), "unprepare: %s" % resp)
    check([e for e in s.ledger_entries() if e["source"] == "dra"] == [], "both released")


def everything():
    api = harness.ApiServer()
    plugin = s.Plugin(api)
    s.require(plugin.wait_registered(), "the plugin registers")
    stale(api, plugin)
    check(plugin.stop() == 0, "SIGTERM stops the plugin")


def main():
    return s.finish(everything)


if __name__ == "__main__":
    sys.exit(main())
