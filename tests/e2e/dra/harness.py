"""Test harness for gpufrac-dra (test code, never shipped): a Kubernetes 1.36 kubelet's side of the
plugin protocol and an in-process API server, as ../../shared/reference/kubernetes-dra.md section 8
describes them.

- Kubelet: gRPC over the plugin's real Unix sockets with message classes compiled at run time from
  the Kubernetes protos themselves (tests/fixtures/kubernetes-protos, not gpufrac's own), so a
  wire difference between gpufrac's .proto files and the kubelet's shows up here. Registration
  (GetInfo within 1 s, NotifyRegistrationStatus), NodePrepareResources / NodeUnprepareResources
  with the kubelet's 45 s deadline, v1 and v1beta1.
- API server: HTTPS on 127.0.0.1 with a test CA (pki.py), authenticating by client certificate
  or bearer token as kube-apiserver does (HTTP when the test asks); serves ResourceClaims the test
  puts in and stores ResourceSlices (list with field selectors, create with generateName, update
  with a resourceVersion check, delete with preconditions). Every body the driver sends is checked
  against the resource.k8s.io/v1 OpenAPI excerpt (tests/fixtures/kubernetes-openapi), the slice
  limits and the request-policy rules (schema.py); violations are kept for the test to assert on.
  Faults can be switched on per claim, and for the slice LIST (an answer cut short, one of the
  wrong types, one announcing 1 GiB); slice writes can be held back (hold_slice_writes), so that a
  test sees the driver's pool half written, as a scheduler does while a driver publishes.
"""
import atexit
import http.server
import json
import os
import random
import shutil
import ssl
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import grpc

sys.path.insert(0, os.path.dirname(__file__))
import pki  # noqa: E402
from schema import REF, slice_limits, violations  # noqa: E402

SOURCE = os.environ["GPUFRAC_SOURCE_DIR"]
FIXTURES = os.path.join(SOURCE, "tests", "fixtures")
KUBELET_TIMEOUT_S = 45


def load_protos():
    out = tempfile.mkdtemp(prefix="gpufrac-dra-protos.")
    atexit.register(shutil.rmtree, out, True)
    root = os.path.join(FIXTURES, "kubernetes-protos")
    files = ["kubelet/pkg/apis/pluginregistration/v1/api.proto", "kubelet/pkg/apis/dra/v1/api.proto",
             "kubelet/pkg/apis/dra/v1beta1/api.proto"]
    subprocess.run(["protoc", "-I", root, "--python_out", out] + files, check=True)
    sys.path.insert(0, out)
    import importlib
    return (importlib.import_module("kubelet.pkg.apis.pluginregistration.v1.api_pb2"),
            importlib.import_module("kubelet.pkg.apis.dra.v1.api_pb2"),
            importlib.import_module("kubelet.pkg.apis.dra.v1beta1.api_pb2"))


REG, DRA_V1, DRA_V1BETA1 = load_protos()


class Kubelet:
    """The kubelet's calls, on the sockets the plugin registered."""

    def __init__(self, registration_socket):
        self.registration_socket = registration_socket
        self.endpoint = None

    def register(self, accepted=True, error=""):
        ch = grpc.insecure_channel("unix://" + self.registration_socket)
        get_info = ch.unary_unary("/pluginregistration.Registration/GetInfo",
                                  request_serializer=REG.InfoRequest.SerializeToString,
                                  response_deserializer=REG.PluginInfo.FromString)
        info = get_info(REG.InfoRequest(), timeout=1)
        notify = ch.unary_unary("/pluginregistration.Registration/NotifyRegistrationStatus",
                                request_serializer=REG.RegistrationStatus.SerializeToString,
                                response_deserializer=REG.RegistrationStatusResponse.FromString)
        try:
            notify(REG.RegistrationStatus(plugin_registered=accepted, error=error), timeout=1)
            notified = None
        except grpc.RpcError as e:
            notified = e.code()
        ch.close()
        self.endpoint = info.endpoint
        return info, notified

    def _call(self, version, method, claims):
        module = DRA_V1 if version == "v1" else DRA_V1BETA1
        request_type = getattr(module, method + "Request")
        response_type = getattr(module, method + "Response")
        ch = grpc.insecure_channel("unix://" + self.endpoint)
        call = ch.unary_unary("/k8s.io.kubelet.pkg.apis.dra.%s.DRAPlugin/%s" % (version, method),
                              request_serializer=request_type.SerializeToString,
                              response_deserializer=response_type.FromString)
        req = request_type(claims=[module.Claim(namespace=c["namespace"], uid=c["uid"], name=c["name"])
                                   for c in claims])
        try:
            return call(req, timeout=KUBELET_TIMEOUT_S)
        finally:
            ch.close()

    def prepare(self, claims, version="v1"):
        return self._call(version, "NodePrepareResources", claims)

    def unprepare(self, claims, version="v1"):
        return self._call(version, "NodeUnprepareResources", claims)


# ---------------------------------------------------------------- the API server

def status(code, reason, message):
    return code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                  "message": message, "code": code}


class ApiServer:
    """resource.k8s.io/v1 ResourceSlices and ResourceClaims, in memory."""

    SLICES = "/apis/resource.k8s.io/v1/resourceslices"

    def __init__(self, tls=True, port=0, pki_of=None, rbac=None):
        """pki_of: another ApiServer whose certificates and token this one takes (the same API
        server, started again). rbac: the PolicyRules the token's user is granted (a rendered
        ClusterRole's), enforced as kube-apiserver's RBAC authorizer does: a request no rule allows
        is a 403, kept in `forbidden`; None lets everything through."""
        self.token = pki_of.token if pki_of else "".join(random.choice(string.ascii_letters) for _ in range(32))
        self.pki = pki_of.pki if pki_of else pki.Pki() if tls else None
        self.identities = set()   # who the server let in: "token", or "cert:<CN>"
        self.slices = {}
        self.claims = {}          # (namespace, name) -> ResourceClaim
        self.faults = {}          # (namespace, name) -> 401 | 403 | 500 | "hang" | "malformed"
        self.list_fault = None    # the slice LIST's answer: None | "truncated" | "wrong-types" | "huge"
        self.slice_writes_left = None  # how many more slice creates and updates are stored now (None: all)
        self.slice_gate = threading.Condition()
        self.violations = []      # every schema or limit problem in a body the driver sent
        self.requests = []        # (method, path)
        self.rbac = rbac
        self.forbidden = []       # (verb, group, resource) RBAC refused
        self.rv = 100
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY, as kube-apiserver's Go net/http sets on every connection: without it the
            # body, written after the headers, waits for the client's delayed ACK (40 ms) on a kept
            # connection.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def setup(self):
                if isinstance(self.request, ssl.SSLSocket):
                    self.request.do_handshake()  # in this connection's thread, not the accepting one
                super().setup()

            def _identity(self):
                cert = self.request.getpeercert() if isinstance(self.request, ssl.SSLSocket) else None
                if cert:
                    if dict(x[0] for x in cert["issuer"])["commonName"] != "gpufrac-test-ca":
                        return None  # another CA's: the handshake took it, the authenticator does not
                    return "cert:" + dict(x[0] for x in cert["subject"])["commonName"]
                return "token" if self.headers.get("Authorization") == "Bearer " + server.token else None

            def _send(self, code, body, raw=None):
                data = raw if raw is not None else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                identity = self._identity()
                if identity is None:
                    return self._send(*status(401, "Unauthorized", "Unauthorized"))
                server.identities.add(identity)
                denied = server.authorize(method, self.path)
                if denied:
                    return self._send(*status(403, "Forbidden", denied))
                slice_write = method in ("POST", "PUT") and self.path.startswith(server.SLICES)
                if slice_write and not server.slice_write_passes():
                    return self._send(*status(503, "ServiceUnavailable", "slice writes are held back"))
                result = server.handle(method, self.path, body)
                if result == "hang":
                    time.sleep(30)
                    return self._send(*status(504, "Timeout", "hung"))
                if result == "malformed":
                    return self._send(200, None, raw=b"{not json")
                if result == "huge":  # announces 1 GiB, sends a few bytes, hangs up
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(1 << 30))
                    self.end_headers()
                    self.wfile.write(b'{"kind":"ResourceSliceList","items":[')
                    self.close_connection = True
                    return
                if isinstance(result, bytes):
                    return self._send(200, None, raw=result)
                self._send(*result)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PUT(self):
                self._handle("PUT")

            def do_DELETE(self):
                self._handle("DELETE")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        plain_handle_error = self.httpd.handle_error

        def handle_error(request, address):  # a refused handshake ends its connection quietly
            if not isinstance(sys.exc_info()[1], (ssl.SSLError, OSError)):
                plain_handle_error(request, address)
        self.httpd.handle_error = handle_error
        if self.pki:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self.pki.server)
            # As kube-apiserver: the handshake takes a client certificate of any CA it knows, and the
            # authenticator (_identity) accepts only the cluster CA's; the other is then a 401.
            ctx.load_verify_locations(self.pki.ca)
            ctx.load_verify_locations(self.pki.other_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.port = self.httpd.server_address[1]
        self.url = "%s://127.0.0.1:%d" % ("https" if self.pki else "http", self.port)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def kubeconfig(self, path, user="token"):
        """A kubeconfig for this server as kubeadm, kind and k3s write it: the CA inline
        (certificate-authority-data), and the user's token, or ("client-cert") its client
        certificate and key inline."""
        cluster = {"certificate-authority-data": self.pki.data(self.pki.ca)} if self.pki else {}
        creds = {"token": self.token}
        if user == "client-cert":
            creds = {"client-certificate-data": self.pki.data(self.pki.client[0]),
                     "client-key-data": self.pki.data(self.pki.client[1])}
        return pki.kubeconfig(path, self.url, cluster, creds)

    VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}

    def authorize(self, method, path):
        """None when the rules allow the request, else the 403's message (as kube-apiserver words it)."""
        if self.rbac is None:
            return None
        parts = urllib.parse.urlparse(path).path.strip("/").split("/")
        group = "" if parts[0] == "api" else parts[1]
        rest = parts[2:] if parts[0] == "api" else parts[3:]
        namespaced = len(rest) >= 2 and rest[0] == "namespaces"
        rest = rest[2:] if namespaced else rest
        resource = "/".join(rest[0:3:2]) if rest else ""  # a subresource is "<resource>/<sub>"
        verb = self.VERBS[method]
        if len(rest) == 1:  # the collection
            verb = {"get": "list", "delete": "deletecollection"}.get(verb, verb)
        for rule in self.rbac:
            if all(want in rule.get(field, []) or "*" in rule.get(field, [])
                   for field, want in (("apiGroups", group), ("resources", resource), ("verbs", verb))):
                return None
        with self.lock:
            self.forbidden.append((verb, group, resource))
        return '%s "%s" is forbidden: cannot %s resource "%s" in API group "%s"' % (
            resource, rest[1] if len(rest) > 1 else "", verb, resource, group)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def hold_slice_writes(self, after=0):
        """Slice creates and updates beyond the next `after` wait (their requests unanswered) until
        release_slice_writes; one held 8 s (the driver's client waits 10 s for an answer) is refused
        with a 503, so the slices stay as they are however long the test takes."""
        with self.slice_gate:
            self.slice_writes_left = after

    def release_slice_writes(self):
        with self.slice_gate:
            self.slice_writes_left = None
            self.slice_gate.notify_all()

    def slice_write_passes(self):
        """In a request's thread, before a slice write is handled: waits while writes are held;
        False when it is to be refused."""
        with self.slice_gate:
            if not self.slice_gate.wait_for(lambda: self.slice_writes_left != 0, timeout=8):
                return False
            if self.slice_writes_left:
                self.slice_writes_left -= 1
            return True

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def check_slice(self, obj):
        found = violations(obj, {"$ref": REF + "io.k8s.api.resource.v1.ResourceSlice"}) + slice_limits(obj)
        self.violations += found

    def handle(self, method, path, body):
        with self.lock:
            self.requests.append((method, path))
            url = urllib.parse.urlparse(path)
            if url.path.startswith("/apis/resource.k8s.io/v1/namespaces/"):
                return self.claim(method, url.path)
            if url.path == self.SLICES:
                return self.slice_collection(method, urllib.parse.parse_qs(url.query), body)
            if url.path.startswith(self.SLICES + "/"):
                return self.slice_item(method, url.path[len(self.SLICES) + 1:], body)
            return status(404, "NotFound", "no route " + url.path)

    def claim(self, method, path):
        parts = path.split("/")  # ['', apis, resource.k8s.io, v1, namespaces, ns, resourceclaims, name]
        if method != "GET" or len(parts) != 8 or parts[6] != "resourceclaims":
            return status(405, "MethodNotAllowed", method + " " + path)
        key = (parts[5], parts[7])
        fault = self.faults.get(key)
        if fault in ("hang", "malformed"):
            return fault
        if isinstance(fault, int):
            return status(fault, "Fault", "injected %d" % fault)
        if key not in self.claims:
            return status(404, "NotFound", 'resourceclaims.resource.k8s.io "%s" not found' % key[1])
        return 200, self.claims[key]

    # The slice LIST's faulty answers: cut mid-object (HTTP-complete, JSON not), and well-formed
    # JSON whose fields have the wrong types.
    LIST_FAULTS = {
        "truncated": b'{"kind":"ResourceSliceList","apiVersion":"resource.k8s.io/v1",'
                     b'"metadata":{"resourceVersion":"1"},"items":[{"metad',
        "wrong-types": b'{"kind":"ResourceSliceList","apiVersion":"resource.k8s.io/v1","metadata":{},'
                       b'"items":[{"metadata":{"name":7,"uid":"u","resourceVersion":"1"},"spec":"node-1"}]}',
    }

    def slice_collection(self, method, query, body):
        if method == "GET" and self.list_fault:
            return self.LIST_FAULTS.get(self.list_fault, self.list_fault)
        if method == "GET":
            selectors = dict(s.split("=", 1) for q in query.get("fieldSelector", []) for s in q.split(","))
            items = [s for s in self.slices.values()
                     if all({"spec.driver": s["spec"]["driver"], "spec.nodeName": s["spec"].get("nodeName")}[k] == v
                            for k, v in selectors.items())]
            return 200, {"kind": "ResourceSliceList", "apiVersion": "resource.k8s.io/v1",
                         "metadata": {"resourceVersion": str(self.rv)}, "items": items}
        if method == "POST":
            self.check_slice(body)
            meta = body.setdefault("metadata", {})
            if "name" not in meta:
                meta["name"] = meta.get("generateName", "") + "".join(
                    random.choice(string.ascii_lowercase + string.digits) for _ in range(5))
            if meta["name"] in self.slices:
                return status(409, "AlreadyExists", meta["name"])
            meta["uid"] = "%08x-0000-4000-8000-%012x" % (random.getrandbits(32), random.getrandbits(48))
            meta["resourceVersion"] = self.next_rv()
            self.slices[meta["name"]] = body
            return 201, body
        if method == "DELETE":  # the kubelet's wipe at its start
            self.slices.clear()
            return 200, {"kind": "Status", "status": "Success"}
        return status(405, "MethodNotAllowed", method)

    def slice_item(self, method, name, body):
        current = self.slices.get(name)
        if current is None:
            return status(404, "NotFound", name)
        if method == "GET":
            return 200, current
        if method == "PUT":
            self.check_slice(body)
            if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                return status(409, "Conflict", "the object has been modified")
            body["metadata"]["resourceVersion"] = self.next_rv()
            self.slices[name] = body
            return 200, body
        if method == "DELETE":
            pre = (body or {}).get("preconditions", {})
            if pre.get("uid") not in (None, current["metadata"]["uid"]) or \
                    pre.get("resourceVersion") not in (None, current["metadata"]["resourceVersion"]):
                return status(409, "Conflict", "precondition failed")
            del self.slices[name]
            return 200, {"kind": "Status", "status": "Success"}
        return status(405, "MethodNotAllowed", method)

    def put_claim(self, namespace, name, results, uid=None, allocated=True, capacity=None, config=None):
        uid = uid or "%08x-%04x-4%03x-8%03x-%012x" % (random.getrandbits(32), random.getrandbits(16),
                                                     random.getrandbits(12), random.getrandbits(12),
                                                     random.getrandbits(48))
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": name, "namespace": namespace, "uid": uid},
                 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                     "deviceClassName": "gpufrac.io", "allocationMode": "ExactCount", "count": 1}}]}},
                 "status": {"reservedFor": [{"resource": "pods", "name": name + "-pod", "uid": uid[::-1]}]}}
        if capacity:
            claim["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {"requests": capacity}
        if config:  # opaque configurations {driver, parameters} for request "gpu"
            claim["spec"]["devices"]["config"] = [{"requests": ["gpu"], "opaque": c} for c in config]
        if allocated:
            claim["status"]["allocation"] = {"devices": {"results": results}}
            if config:  # as the scheduler copies them, after the class's (none here)
                claim["status"]["allocation"]["devices"]["config"] = [
                    {"source": "FromClaim", "requests": ["gpu"], "opaque": c} for c in config]
        problems = violations(claim, {"$ref": REF + "io.k8s.api.resource.v1.ResourceClaim"})
        assert not problems, problems  # the harness itself hands out only valid claims
        with self.lock:
            self.claims[(namespace, name)] = claim
        return {"namespace": namespace, "name": name, "uid": uid}


def share(device, memory, node="node-1", request="gpu"):
    """An allocation result of one share, as the scheduler writes it."""
    return {"request": request, "driver": "gpufrac.io", "pool": node, "device": device,
            "shareID": "%08x-%04x-4%03x-8%03x-%012x" % (random.getrandbits(32), random.getrandbits(16),
                                                        random.getrandbits(12), random.getrandbits(12),
                                                        random.getrandbits(48)),
            "consumedCapacity": {"memory": memory}}
