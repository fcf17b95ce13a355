"""gpufrac-dra from the image, run by tests/e2e/image/image_dra_test.sh: the container is started
with the command, env, mounts and security context of the rendered dra overlay's DaemonSet,
translated to `podman run` (hostPaths and the flags naming them rebased under $HOST_ROOT, but
/dev and /var/run/cdi, which podman reads; the downward API's values given; the ConfigMap's file
replaced by the test's simulated-node config), and its in-cluster configuration: the service
account's token and CA mounted where Kubernetes mounts them, KUBERNETES_SERVICE_HOST/_PORT set.
The API server is harness.py's, enforcing the rendered ClusterRole bound to the service account.
Without the ready file the plugin waits with one line; with another version it says so in one line
and keeps waiting; with its own it registers with the harness's kubelet, publishes, prepares four
quarter claims, and a podman container started with a claim's CDI device gets its share. Prints
one FAIL line per failed check; exit 1 when any failed."""
import os
import subprocess
import sys
import uuid

import yaml

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import scheduler  # noqa: E402
import scenarios as s  # noqa: E402

check, run, wait_for = s.check, s.run, s.wait_for
TMP = s.TMP
HOST = os.environ["HOST_ROOT"]                 # the node's root, as the DaemonSet's hostPaths see it
REAL = ("/dev", "/var/run/cdi")                # host paths used as they are
IMAGE = os.environ["IMAGE"]
VERSION = os.environ["IMAGE_VERSION"]
NAME = os.environ["CONTAINER_PREFIX"] + "-dra"
SA = "system:serviceaccount:gpufrac-system:gpufrac-dra"
POD_UID = str(uuid.uuid4())
QUARTER = 40536 // 4


def rendered():
    with open(os.path.join(TMP, "dra.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    ds = next(d for d in docs if d["kind"] == "DaemonSet" and d["metadata"]["name"] == "gpufrac-dra")
    sa_name = ds["spec"]["template"]["spec"]["serviceAccountName"]
    roles = {b["roleRef"]["name"] for b in docs if b["kind"] == "ClusterRoleBinding"
             and any(x["kind"] == "ServiceAccount" and x["name"] == sa_name and x["namespace"] == "gpufrac-system"
                     for x in b["subjects"])}
    rules = [r for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] in roles for r in d["rules"]]
    return ds, rules


def rebase(path):
    return path if path.startswith(REAL) else HOST + path


def share_mount(path):
    """Makes path a mount point of its own with shared propagation (a bind mount onto itself)."""
    if subprocess.run(["mountpoint", "-q", path]).returncode != 0:
        subprocess.run(["mount", "--bind", path, path], check=True)
    subprocess.run(["mount", "--make-rshared", path], check=True)


def podman_argv(ds, port):
    """`podman run` of the DaemonSet's one container."""
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    argv = ["podman", "--cgroup-manager", "cgroupfs", "--runtime", "runc", "--hooks-dir", os.path.join(TMP, "hooks.d"), "run", "-d",
            "--name", NAME, "--network", "host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
    if c.get("securityContext", {}).get("privileged"):
        argv.append("--privileged")
    mounts = []
    for m in c["volumeMounts"]:
        v = volumes[m["name"]]
        target = rebase(m["mountPath"])
        if "hostPath" in v:
            source = rebase(v["hostPath"]["path"])
            if v["hostPath"].get("type") == "DirectoryOrCreate":
                os.makedirs(source, exist_ok=True)
        else:  # the ConfigMap: the test's config, at the path the flags name
            source = os.path.join(HOST, "etc", "gpufrac-config")
            os.makedirs(source, exist_ok=True)
            with open(os.environ["PLUGIN_CONFIG"]) as src, open(os.path.join(source, "config.yaml"), "w") as dst:
                dst.write(src.read())
        mounts.append(m["mountPath"])
        options = ["ro"] if m.get("readOnly") else []
        if m.get("mountPropagation") == "Bidirectional":
            # As the kubelet needs: the host directory a shared mount, so that what the plugin mounts
            # under it (a container's own tmpfs, a GPU's arbiter) reaches the host.
            share_mount(source)
            options.append("rshared")
        argv += ["-v", "%s:%s%s" % (source, target, ":" + ",".join(options) if options else "")]
    # The service account, where the kubelet mounts it.
    sa = os.path.join(TMP, "serviceaccount")
    argv += ["-v", sa + ":/var/run/secrets/kubernetes.io/serviceaccount:ro",
             "-e", "KUBERNETES_SERVICE_HOST=127.0.0.1", "-e", "KUBERNETES_SERVICE_PORT=%d" % port]
    # What the simulated node's config names: the machine and the simulated host root.
    for extra in (os.path.join(os.environ["GPUFRAC_SOURCE_DIR"], "nvml", "machines"), os.path.join(TMP, "root")):
        argv += ["-v", "%s:%s:ro" % (extra, extra)]
    downward = {"spec.nodeName": "node-1", "metadata.uid": POD_UID}
    for e in c.get("env", []):
        value = e["value"] if "value" in e else downward[e["valueFrom"]["fieldRef"]["fieldPath"]]
        argv += ["-e", "%s=%s" % (e["name"], value)]
    # A flag's path is rebased with the mounts it names, at or above or below one of them.
    def names_mount(a):
        return a.startswith("/") and any(a == p or a.startswith(p + "/") or p.startswith(a + "/") for p in mounts)
    command = [rebase(a) if names_mount(a) else a for a in c["command"] + c.get("args", [])]
    return argv + [IMAGE] + command, c


def probe(c, which):
    """The container's probe command, its paths rebased, run in it: its exit status."""
    script = c[which]["exec"]["command"][-1]
    for p in ("/var/lib/kubelet", "/run/gpufrac"):
        script = script.replace(p, HOST + p)
    return subprocess.run(["podman", "exec", NAME, "/bin/sh", "-c", script], capture_output=True).returncode


def logs():
    return run("podman", "logs", NAME)[1]


def main():
    ds, rules = rendered()
    check(rules != [], "the rendered RBAC grants the service account rules")
    api = harness.ApiServer(rbac=rules)
    # The harness enforces those rules: what the plugin never does is refused.
    for method, path in (("PATCH", api.SLICES + "/x"), ("GET", "/api/v1/nodes/node-1"),
                         ("PUT", "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/c/status"),
                         ("GET", api.SLICES + "/x")):
        check(api.authorize(method, path) is not None, "the rendered RBAC refuses %s %s" % (method, path))
    check(api.authorize("GET", api.SLICES) is None and api.authorize("DELETE", api.SLICES + "/x") is None,
          "and allows listing and deleting slices")
    api.forbidden.clear()
    sa = os.path.join(TMP, "serviceaccount")
    os.makedirs(sa, exist_ok=True)
    with open(os.path.join(sa, "token"), "w") as f:
        f.write(api.token)
    with open(api.pki.ca) as src, open(os.path.join(sa, "ca.crt"), "w") as dst:
        dst.write(src.read())
    with open(os.path.join(sa, "namespace"), "w") as f:
        f.write("gpufrac-system")
    argv, container = podman_argv(ds, api.port)
    ready = os.path.join(HOST, "run", "gpufrac", "node-ready")
    registration = os.path.join(HOST, "var/lib/kubelet/plugins_registry/gpufrac.io-%s-reg.sock" % POD_UID)
    rc, out = run(*argv)
    check(rc == 0, "podman run of the rendered DaemonSet: " + out)
    try:
        waiting = "gpufrac-dra: waiting for %s (node setup not finished)" % ready
        check(wait_for(lambda: waiting in logs(), 30), "no ready file: one line %r; log: %s" % (waiting, logs()))
        check(not wait_for(lambda: os.path.exists(registration), 2), "no registration before the ready file")
        check(probe(container, "readinessProbe") != 0, "not ready while it waits")
        check(probe(container, "livenessProbe") == 0, "alive while it waits")
        with open(ready + ".tmp", "w") as f:
            f.write("0.0.1\nrestart: none\n")
        os.rename(ready + ".tmp", ready)
        skew = ("gpufrac-dra: %s names version \"0.0.1\", this plugin is %s: waiting for node setup of %s (the node "
                "DaemonSet's image must be this one's)" % (ready, VERSION, VERSION))
        check(wait_for(lambda: skew in logs(), 10), "another version: one line %r; log: %s" % (skew, logs()))
        check(not os.path.exists(registration), "no registration with another version")
        with open(ready + ".tmp", "w") as f:
            f.write(VERSION + "\n")
        os.rename(ready + ".tmp", ready)
        check(wait_for(lambda: os.path.exists(registration), 15),
              "registers once the ready file names its version; log: " + logs())
        lines = logs().splitlines()
        check(lines.count(waiting) == 1 and lines.count(skew) == 1, "each state said once: %s" % lines)
        kubelet = harness.Kubelet(registration)
        info, notified = kubelet.register()
        check(info.name == "gpufrac.io" and notified is None, "registered: %s" % info)
        check(info.endpoint.startswith(HOST + "/var/lib/kubelet/plugins/gpufrac.io/"), "endpoint " + info.endpoint)
        check(wait_for(lambda: len(api.slices) == 2, 15), "slices published: %d" % len(api.slices))
        check(api.identities == {"token"}, "in-cluster: the service account's token: %s" % api.identities)
        check(api.violations == [], "the slices pass the schema: %s" % api.violations[:3])
        check(probe(container, "readinessProbe") == 0, "ready once registered")
        claims = [scheduler.allocate(api, "team-a", "q%d" % i, {"fraction": "250k"}) for i in range(4)]
        check(all(claims), "four quarters placed: %s" % claims)
        for c in claims:
            entry = kubelet.prepare([c]).claims[c["uid"]]
            check(entry.error == "" and list(entry.devices[0].cdi_device_ids) == ["k8s.gpufrac.io/gpu=" + c["uid"]],
                  "prepare %s: %s" % (c["name"], entry))
        uid = claims[0]["uid"]
        rc, out = run(*s.podman_run(uid, "--rm", "--rootfs", os.path.join(TMP, "rootfs"), "/bin/sh", "-c",
                                    "cat /run/gpufrac/limits; " + os.environ["CUDA_CHECK"]))
        check(rc == 0, "podman run --device k8s.gpufrac.io/gpu=<claim>: " + out)
        check("%d" % (QUARTER * 1024 * 1024) in out, "the container's limit is the claim's quarter: " + out)
        check("the next cuMemAlloc of 512 MiB returned CUDA_ERROR_OUT_OF_MEMORY" in out, "CUDA stops at it: " + out)
        resp = kubelet.unprepare(claims)
        check(all(e.error == "" for e in resp.claims.values()), "unprepare: %s" % resp)
        check(api.forbidden == [], "every call the plugin made is one the rendered RBAC allows: %s" % api.forbidden)
        rc, out = run("podman", "stop", "-t", "20", NAME)
        check(rc == 0 and not os.path.exists(registration), "SIGTERM: it stops and removes its socket: " + out)
    finally:
        run("podman", "rm", "-f", NAME)
        api.stop()
    print("%d check(s) failed" % len(s.failures) if s.failures else "PASS")
    return 1 if s.failures else 0


if __name__ == "__main__":
    sys.exit(main())
