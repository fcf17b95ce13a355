"""gpufrac-dra's connection to the API server and its quarter shares, run by
tests/e2e/dra_kubeconfig_test.sh on a simulated H100-80GB not in MIG mode, with no container engine.
The API server is harness.py's over TLS with its own test CA and client-certificate verification.
Kubeconfigs as kubeadm, kind, k3s and the cloud CLIs write them work (the CA inline, client
certificates inline or as files next to the kubeconfig, $KUBECONFIG lists); a wrong CA, an expired
client certificate, one the server does not trust, a token it refuses, an exec user and a missing
file each stop the plugin before it registers, with one line on stderr and exit 2; an API server
that is not up yet is logged once and used once it is. Quarters and eighths of the GPU by the
`fraction` capacity are placed by the harness's scheduler and prepared. Prints one FAIL line per
failed check; exit 1 when any failed."""
import json
import os
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import pki  # noqa: E402
import scenarios as s  # noqa: E402
import scheduler  # noqa: E402

check = s.check
MIB = 1 << 20
GPU_MIB = 81559
NO_SERVICE_ACCOUNT = ("use a service account (in the cluster, without --kubeconfig) or a user with a token, tokenFile "
                      "or client certificate")


def dra_lines(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.startswith("gpufrac-dra:")]


def run_refused(kubeconfig):
    """gpufrac-dra with a kubeconfig that cannot work: its exit status, its stderr, and whether it
    left a registration socket."""
    socket_path = os.path.join(s.KUBELET_DIR, "plugins_registry", "gpufrac.io-reg.sock")
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    argv = [s.DRA, "--node-name", "node-1", "--kubelet-dir", s.KUBELET_DIR, "--cdi-dir", s.CDI_DIR,
            "--config", s.CONFIG, "--resync", "0.5", "--kubeconfig", kubeconfig]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"})
    try:
        _, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:  # it started and serves: stop it to report that
        p.kill()
        _, err = p.communicate()
    return p.returncode, err, os.path.exists(socket_path)


def refusals(api):
    """Each kubeconfig that cannot work: one line naming the file and the entry, exit 2, no socket."""
    k = api.pki
    good_ca = {"certificate-authority-data": k.data(k.ca)}
    path = os.path.join(s.TMP, "refused.kubeconfig")
    missing = os.path.join(s.TMP, "no-such.kubeconfig")
    cases = [
        ("wrong CA", {"certificate-authority-data": k.data(k.other_ca)}, {"token": api.token},
         'the API server\'s certificate is not signed by the CA of cluster "test" in %s' % path),
        ("expired client certificate", good_ca,
         {"client-certificate-data": k.data(k.expired[0]), "client-key-data": k.data(k.expired[1])},
         'the client certificate of user "test" in %s expired on %s; renew it and update the kubeconfig'
         % (path, k.not_after(k.expired[0]))),
        ("client certificate of another CA", good_ca,
         {"client-certificate-data": k.data(k.stranger[0]), "client-key-data": k.data(k.stranger[1])},
         '401 from the API server: the client certificate of user "test" in %s is not accepted' % path),
        ("refused token", good_ca, {"token": "not-" + api.token},
         '401 from the API server: the token of user "test" in %s is not accepted' % path),
        ("exec user", good_ca, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "aws"}},
         'user "test" in %s: authenticates with an exec plugin ("aws"), which gpufrac-dra does not run; %s'
         % (path, NO_SERVICE_ACCOUNT)),
        ("missing CA file", {"certificate-authority": "pki/ca.crt"}, {"token": api.token},
         'cluster "test" in %s: certificate-authority: cannot open %s: No such file or directory'
         % (path, os.path.join(s.TMP, "pki", "ca.crt"))),
    ]
    for what, cluster, user, line in cases:
        pki.kubeconfig(path, api.url, cluster, user)
        rc, err, registered = run_refused(path)
        check(rc == 2 and err == "gpufrac-dra: %s\n" % line and not registered,
              "%s: exit %d, registered %s, stderr:\n%s\nwanted: %s" % (what, rc, registered, err, line))
    rc, err, registered = run_refused(missing)
    line = "gpufrac-dra: kubeconfig: cannot open %s: No such file or directory\n" % missing
    check(rc == 2 and err == line and not registered, "missing file: exit %d, stderr %r" % (rc, err))


def files_next_to_the_kubeconfig(api):
    """certificate-authority, client-certificate and client-key as paths relative to the
    kubeconfig's directory (kubectl resolves them there), given through a $KUBECONFIG list whose
    first file does not exist."""
    d = os.path.join(s.TMP, "kube")
    os.makedirs(os.path.join(d, "pki"), exist_ok=True)
    for src, name in ((api.pki.ca, "ca.crt"), (api.pki.client[0], "client.crt"), (api.pki.client[1], "client.key")):
        shutil.copy(src, os.path.join(d, "pki", name))
    path = pki.kubeconfig(os.path.join(d, "config"), api.url, {"certificate-authority": "pki/ca.crt"},
                          {"client-certificate": "pki/client.crt", "client-key": "pki/client.key"})
    return s.Plugin(api, kubeconfig=None, env={"KUBECONFIG": os.path.join(s.TMP, "absent") + ":" + path})


def shares(api, kubelet, requests, count, name):
    claims = [scheduler.allocate(api, "q", "%s%d" % (name, i), requests) for i in range(count)]
    placed = [c for c in claims if c]
    for c in placed:
        entry = kubelet.prepare([c]).claims[c["uid"]]
        check(entry.error == "", "prepare %s: %s" % (c["name"], entry.error))
    return placed


def release(api, kubelet, claims):
    resp = kubelet.unprepare(claims)
    check(all(e.error == "" for e in resp.claims.values()), "unprepare: %s" % resp)
    with api.lock:
        for c in claims:
            api.claims.pop((c["namespace"], c["name"]))


def quarters_and_eighths(api, kubelet):
    """By memory, a quarter of the H100's 81559 MiB rounds up to 20Gi and only three fit; by the
    fraction capacity, four quarters and eight eighths do, each booking its exact share."""
    by_memory = [scheduler.allocate(api, "m", "m%d" % i, {"memory": "%dMi" % (GPU_MIB // 4)}) for i in range(4)]
    check([bool(c) for c in by_memory] == [True, True, True, False],
          "by memory only three quarters fit: %s" % [bool(c) for c in by_memory])
    with api.lock:
        for c in filter(None, by_memory):
            api.claims.pop((c["namespace"], c["name"]))
    for count, ppm in ((4, 250000), (8, 125000)):
        claims = shares(api, kubelet, {"fraction": "%dk" % (ppm // 1000)}, count + 1, "f%d-" % count)
        check(len(claims) == count, "%d shares of %d ppm placed, the next one not: %d" % (count, ppm, len(claims)))
        with open(s.LEDGER) as f:
            booked = [e for e in json.load(f)["entries"] if e["source"] == "dra"]
        want = GPU_MIB * ppm // 1000000 * MIB
        check(len(booked) == count and all(e["bytes"] == want for e in booked),
              "%d bookings of %d MiB: %s" % (count, want // MIB, [(e["bytes"] // MIB, e["request"]) for e in booked]))
        release(api, kubelet, claims)


def unreachable_at_start(api):
    """An API server that is not up when the plugin starts: the plugin registers anyway, says so
    once on stderr and in the log, and publishes once the server answers."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = pki.kubeconfig(os.path.join(s.TMP, "later.kubeconfig"), "https://127.0.0.1:%d" % port,
                          {"certificate-authority-data": api.pki.data(api.pki.ca)}, {"token": api.token})
    plugin = s.Plugin(api, kubeconfig=path, stderr="later.stderr")
    line = ("publishing ResourceSlices: cannot reach https://127.0.0.1:%d: connection refused (trying again every "
            "resync)" % port)
    try:
        check(plugin.wait_registered(), "the plugin registers while the API server is down")
        check(dra_lines(plugin.stderr)[:1] == ["gpufrac-dra: warning: " + line],
              "stderr says why: %s" % dra_lines(plugin.stderr))
        later = harness.ApiServer(port=port, pki_of=api)
        check(s.wait_for(lambda: s.pool_missing(later, ["gpu-0"]) is None, 30),
              "the slices are published once it is up: %s" % s.pool_missing(later, ["gpu-0"]))
        logged = [m for m in log_messages() if "ResourceSlices" in m and str(port) in m]
        check(logged == [line], "logged once, not every resync: %s" % logged)
        later.stop()
    finally:
        plugin.stop()


def log_messages():
    with open(os.path.join(s.TMP, "gpufrac.log")) as f:
        return [line.split(": ", 1)[1].rstrip("\n") for line in f if "gpufrac-dra[" in line]


def insecure(api):
    """insecure-skip-tls-verify works, with a warning on every start."""
    path = pki.kubeconfig(os.path.join(s.TMP, "insecure.kubeconfig"), api.url, {"insecure-skip-tls-verify": True},
                          {"token": api.token})
    plugin = s.Plugin(api, kubeconfig=path, stderr="insecure.stderr")
    try:
        check(plugin.wait_registered(), "the plugin starts with insecure-skip-tls-verify")
        want = ('gpufrac-dra: warning: cluster "test" in %s sets insecure-skip-tls-verify: the API server\'s '
                "certificate is not checked, so whoever answers at %s gets the credentials; give its "
                "certificate-authority" % (path, api.url))
        check(dra_lines(plugin.stderr)[:1] == [want], "the warning: %s" % dra_lines(plugin.stderr))
    finally:
        plugin.stop()


def certificate_files(api):
    plugin = files_next_to_the_kubeconfig(api)
    s.require(plugin.wait_registered(), "the plugin registers with client-certificate files from $KUBECONFIG")
    s.wait_pool(api, ["gpu-0"], ["memory", "fraction"])
    check(len(api.slices) == 2, "two slices published: %d" % len(api.slices))
    check(api.identities == {"cert:gpufrac-dra"}, "known by its client certificate: %s" % api.identities)
    check(api.violations == [], "every slice body passes the schema and limits: %s" % api.violations[:3])
    kubelet = harness.Kubelet(plugin.registration)
    kubelet.register()
    quarters_and_eighths(api, kubelet)
    check(plugin.stop() == 0, "SIGTERM stops the plugin")


def everything():
    api = harness.ApiServer()
    refusals(api)
    s.guarded(certificate_files, api)
    insecure(api)
    unreachable_at_start(api)


def main():
    return s.finish(everything)


if __name__ == "__main__":
    sys.exit(main())
