"""Certificates for the harness's API server over TLS (test code, never shipped), made with the
openssl command at run time in a temporary directory removed at exit (no key is ever committed):
a test CA, the API server's certificate for 127.0.0.1 and localhost, a client certificate the
server accepts, one that expired yesterday, and a second CA that signed nothing the server shows.
EC P-256 keys keep it fast. kubeconfig() writes a kubeconfig in the forms kubeadm, kind and k3s
write (the CA inline as certificate-authority-data, client certificates inline) or any other."""
import atexit
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time


def _openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


class Pki:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="gpufrac-dra-pki.")
        atexit.register(shutil.rmtree, self.dir, True)
        self.ca = self._ca("ca", "gpufrac-test-ca")
        self.other_ca = self._ca("other-ca", "another-ca")
        self.server = self._leaf("server", "127.0.0.1", "subjectAltName=IP:127.0.0.1,DNS:localhost")
        self.client = self._leaf("client", "gpufrac-dra", "extendedKeyUsage=clientAuth")
        self.expired = self._leaf("expired", "gpufrac-dra", "extendedKeyUsage=clientAuth", days="-1")
        self.stranger = self._leaf("stranger", "gpufrac-dra", "extendedKeyUsage=clientAuth", ca="other-ca")

    def path(self, name):
        return os.path.join(self.dir, name)

    def _ca(self, name, cn):
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                 name + ".key", "-out", name + ".crt", "-subj", "/CN=" + cn, "-days", "2", cwd=self.dir)
        return self.path(name + ".crt")

    def _leaf(self, name, cn, ext, days="2", ca="ca"):
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", name + ".key",
                 "-out", name + ".csr", "-subj", "/CN=" + cn, cwd=self.dir)
        with open(self.path(name + ".ext"), "w") as f:
            f.write(ext + "\n")
        _openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key", "-set_serial",
                 str(int(time.time() * 1000)), "-days", days, "-extfile", name + ".ext", "-out", name + ".crt",
                 cwd=self.dir)
        return self.path(name + ".crt"), self.path(name + ".key")

    def data(self, path):
        with open(path, "rb") as f:
            return base64.b64encode(f.read()).decode()

    def not_after(self, cert):
        """The certificate's notAfter as gpufrac-dra prints it: 2026-11-25 19:25:22 UTC."""
        out = subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-enddate"], capture_output=True,
                             text=True, check=True).stdout.strip().split("=", 1)[1]
        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.strptime(out, "%b %d %H:%M:%S %Y %Z"))


def kubeconfig(path, server, cluster, user, name="test", current=True):
    """A kubeconfig with one cluster, one user and one context, all called `name`; cluster and user
    are the entries' fields (values are written as JSON, which YAML reads as is)."""
    lines = ["apiVersion: v1", "kind: Config"]
    if current:
        lines.append("current-context: " + name)
    lines += ["clusters:", "- name: " + name, "  cluster:", "    server: " + server]
    lines += ["    %s: %s" % (k, json.dumps(v)) for k, v in cluster.items()]
    lines += ["users:", "- name: " + name, "  user:" + ("" if user else " {}")]
    lines += ["    %s: %s" % (k, json.dumps(v)) for k, v in user.items()]
    lines += ["contexts:", "- name: " + name, "  context:", "    cluster: " + name, "    user: " + name]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
