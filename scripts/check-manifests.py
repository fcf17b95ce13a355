#!/usr/bin/python3
"""Renders every kustomization under deploy/kustomize (the overlays and variants; the base is not
applied alone) with `kubectl kustomize` and checks each object, and each document of
deploy/examples, without a cluster:

- against the Kubernetes OpenAPI schemas pinned in tests/fixtures/kubernetes-openapi (core/v1,
  apps/v1, rbac/v1, node.k8s.io/v1, admissionregistration/v1, resource.k8s.io/v1, ObjectMeta):
  types, required fields, unknown fields refused, an unknown apiVersion/kind refused;
- lints a schema cannot express: every volumeMount names a volume of its pod; the kubelet
  directory agrees across the hostPath, the mountPath and the --kubelet-dir flag; one image
  reference throughout, tagged with the package version; no placeholder left; the
  app.kubernetes.io/version labels say the package version; a DaemonSet's selector matches its
  template's labels.

Usage: scripts/check-manifests.py [--deploy DIR] [--version V] [--kubectl PATH]
Prints one line per problem on stderr and exits 1; on success one summary line on stdout.
kubectl: --kubectl, else $KUBECTL, else Debian's kubectl unpacked where scripts/install-deps.sh
puts it when another package owns /usr/bin/kubectl, else kubectl from PATH."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import yaml

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_DIR = os.path.join(SRC, "tests", "fixtures", "kubernetes-openapi")
REF = "#/components/schemas/"
DEBIAN_KUBECTL = "/opt/gpufrac-deps/kubernetes-client/usr/bin/kubectl"
GROUPS = {"v1": "core.v1", "apps/v1": "apps.v1", "rbac.authorization.k8s.io/v1": "rbac.v1",
          "node.k8s.io/v1": "node.v1", "admissionregistration.k8s.io/v1": "admissionregistration.v1",
          "resource.k8s.io/v1": "resource.v1"}
PLACEHOLDER = re.compile(r"GPUFRAC_IMAGE|CHANGE_?ME|REPLACE_?ME|\bTODO\b|\bFIXME\b|<[a-z][a-z0-9-]*>")
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def load_schemas():
    schemas = {}
    for name in sorted(os.listdir(SCHEMA_DIR)):
        if name.endswith("-schemas.json"):
            with open(os.path.join(SCHEMA_DIR, name)) as f:
                schemas.update(json.load(f)["components"]["schemas"])
    return schemas


def type_ok(value, t):
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[t])


def violations(schemas, value, schema, at):
    """The schema problems of `value`, one string each, as the API server's strict field
    validation would refuse them."""
    if "$ref" in schema:
        name = schema["$ref"][len(REF):]
        if name not in schemas:
            return ["%s: the pinned schemas lack %s" % (at, name)]
        return violations(schemas, value, schemas[name], at)
    out = []
    for s in schema.get("allOf", []):
        out += violations(schemas, value, s, at)
    if "oneOf" in schema and sum(1 for s in schema["oneOf"] if not violations(schemas, value, s, at)) != 1:
        out.append(at + ": not exactly one of oneOf")
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or type_ok(value, "integer")):
            out.append(at + ": not an integer or a string")
        return out
    if "type" in schema and not type_ok(value, schema["type"]):
        return out + ["%s: not of type %s" % (at, schema["type"])]
    if "enum" in schema and value not in schema["enum"]:
        out.append("%s: %r is not one of %s" % (at, value, schema["enum"]))
    if isinstance(value, dict):
        out += ["%s: missing required field %s" % (at, r) for r in schema.get("required", []) if r not in value]
        props = schema.get("properties")
        for k, v in value.items():
            if props is not None and k in props:
                out += violations(schemas, v, props[k], at + "." + k)
            elif isinstance(schema.get("additionalProperties"), dict):
                out += violations(schemas, v, schema["additionalProperties"], at + "." + k)
            elif props is not None:
                out.append("%s.%s: unknown field" % (at, k))
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            out += violations(schemas, v, schema["items"], "%s[%d]" % (at, i))
    return out


def schema_problems(schemas, obj):
    if not isinstance(obj, dict):
        return ["$: not an object"]
    api, kind = obj.get("apiVersion"), obj.get("kind")
    name = "io.k8s.api.%s.%s" % (GROUPS.get(api, "?"), kind)
    if api not in GROUPS or name not in schemas:
        return ["%s %s: not a kind the pinned schemas know (%s); pin its schema in %s"
                % (api, kind, ", ".join(sorted(GROUPS)), os.path.relpath(SCHEMA_DIR, SRC))]
    return violations(schemas, obj, {"$ref": REF + name}, "$")


def pod_specs(obj):
    """(where, pod spec) of a workload or a pod."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Pod":
        return [("$.spec", spec)]
    template = (spec.get("template") or {}).get("spec")
    return [("$.spec.template.spec", template)] if isinstance(template, dict) else []


def containers(pod):
    for field in ("initContainers", "containers"):
        for i, c in enumerate(pod.get(field) or []):
            if isinstance(c, dict):
                yield "%s[%d]" % (field, i), c


def flag_value(argv, flag):
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a[len(flag) + 1:]
    return None


def kubelet_lint(where, c, mounts, volumes):
    """The kubelet's directory, the same in the --kubelet-dir flag, the hostPaths and the
    mountPaths (the kubelet dials the socket paths the plugin reports): one line when not."""
    kubelet_dir = flag_value((c.get("command") or []) + (c.get("args") or []), "--kubelet-dir")
    pairs = []
    for m in mounts:
        host = ((volumes.get(m.get("name")) or {}).get("hostPath") or {}).get("path", "")
        if "kubelet" in host or "kubelet" in str(m.get("mountPath", "")):
            pairs.append((host, m.get("mountPath")))
    if not kubelet_dir and not pairs:
        return []
    ok = all(h == mp for h, mp in pairs)
    if kubelet_dir:
        root = kubelet_dir.rstrip("/") + "/"
        ok = ok and all(h.startswith(root) for h, _ in pairs)
        ok = ok and {root + "plugins_registry", root + "plugins"} <= {mp for _, mp in pairs}
    if ok:
        return []
    return ["%s: the kubelet directory disagrees: --kubelet-dir %s; %s (the same directory in the flag, the "
            "hostPaths and the mountPaths, with plugins_registry and plugins mounted)"
            % (where, kubelet_dir or "(none)",
               ", ".join("hostPath %s at %s" % (h or "(none)", mp) for h, mp in pairs) or "nothing mounted")]


def pod_lints(where, pod):
    out = []
    volumes = {v.get("name"): v for v in pod.get("volumes") or [] if isinstance(v, dict)}
    for cw, c in containers(pod):
        mounts = [m for m in c.get("volumeMounts") or [] if isinstance(m, dict)]
        for i, m in enumerate(mounts):
            if m.get("name") not in volumes:
                out.append("%s.%s.volumeMounts[%d]: names volume %r, which the pod does not have (volumes: %s)"
                           % (where, cw, i, m.get("name"), ", ".join(sorted(map(str, volumes))) or "none"))
        out += kubelet_lint("%s.%s" % (where, cw), c, mounts, volumes)
    return out


def strings(value, at="$"):
    if isinstance(value, str):
        yield at, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings(v, at + "." + str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from strings(v, "%s[%d]" % (at, i))


def object_lints(obj, version):
    out = []
    for at, s in strings(obj):
        m = PLACEHOLDER.search(s)
        if m:
            out.append("%s: placeholder %r left" % (at, m.group(0)))
    for at, labels in (("$.metadata.labels", (obj.get("metadata") or {}).get("labels") or {}),):
        v = labels.get("app.kubernetes.io/version")
        if v is not None and v != version:
            out.append("%s: app.kubernetes.io/version is %r, the package is %s" % (at, v, version))
    if obj.get("kind") == "DaemonSet":
        spec = obj.get("spec") or {}
        want = ((spec.get("selector") or {}).get("matchLabels") or {})
        have = (((spec.get("template") or {}).get("metadata") or {}).get("labels") or {})
        for k, v in want.items():
            if have.get(k) != v:
                out.append("$.spec.selector.matchLabels.%s: %r, but the template's label is %r" % (k, v, have.get(k)))
    for where, pod in pod_specs(obj):
        out += pod_lints(where, pod)
    return out


def images_of(obj):
    return [(where + "." + cw, c.get("image")) for where, pod in pod_specs(obj) for cw, c in containers(pod)]


def label(obj):
    meta = obj.get("metadata") or {} if isinstance(obj, dict) else {}
    ns = meta.get("namespace")
    return "%s %s%s" % (obj.get("kind") if isinstance(obj, dict) else "?", ns + "/" if ns else "", meta.get("name"))


def find_kubectl(given):
    for k in (given, os.environ.get("KUBECTL")):
        if k:
            return k
    return DEBIAN_KUBECTL if os.access(DEBIAN_KUBECTL, os.X_OK) else shutil.which("kubectl")


def render(kubectl, path):
    p = subprocess.run([kubectl, "kustomize", path], capture_output=True, text=True)
    if p.returncode != 0:
        lines = [l for l in p.stderr.splitlines() if l.strip() and not l.startswith("# Warning")]
        return None, (lines[-1] if lines else "exit %d" % p.returncode)
    return [d for d in yaml.safe_load_all(p.stdout) if d is not None], None


def main():
    ap = argparse.ArgumentParser(description="Check gpufrac's Kubernetes manifests without a cluster")
    ap.add_argument("--deploy", default=os.path.join(SRC, "deploy"))
    ap.add_argument("--version", default=None)
    ap.add_argument("--kubectl", default=None)
    a = ap.parse_args()
    version = a.version
    if version is None:
        m = re.search(r"^project\(gpufrac VERSION ([0-9.]+)", open(os.path.join(SRC, "CMakeLists.txt")).read(), re.M)
        version = m.group(1)
    kubectl = find_kubectl(a.kubectl)
    if not kubectl:
        print("check-manifests: no kubectl; install Debian's kubernetes-client (scripts/install-deps.sh)",
              file=sys.stderr)
        return 2
    kver = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True).stdout
    m = re.search(r'GitVersion:"([^"]+)"', kver) or re.search(r'Client Version: (\S+)()', kver)
    kver = (m.group(1) or m.group(2)) if m else "?"
    schemas = load_schemas()
    problems, count, units = [], 0, []
    root = os.path.join(a.deploy, "kustomize")
    for dirpath, _, files in sorted(os.walk(root)):
        rel = os.path.relpath(dirpath, a.deploy)
        if "kustomization.yaml" not in files or rel == os.path.join("kustomize", "base"):
            continue
        docs, err = render(kubectl, dirpath)
        if err:
            problems.append((rel, "kubectl kustomize failed: %s" % err))
            continue
        units.append(rel)
        images = []
        for obj in docs:
            count += 1
            where = label(obj)
            problems += [(rel, "%s: %s" % (where, p)) for p in schema_problems(schemas, obj)]
            if isinstance(obj, dict):
                problems += [(rel, "%s: %s" % (where, p)) for p in object_lints(obj, version)]
                images += [(where + ": " + at, img) for at, img in images_of(obj)]
        distinct = sorted({img for _, img in images})
        if len(distinct) > 1:
            problems.append((rel, "%d image references (%s); one image for every component, set once by `images:`"
                                   % (len(distinct), ", ".join(map(str, distinct)))))
        for where, img in images if len(distinct) <= 1 else []:
            if not isinstance(img, str) or ":" not in img.rsplit("/", 1)[-1]:
                problems.append((rel, "%s: image %r has no tag: the overlay's `images:` did not set it" % (where, img)))
            elif img.rsplit(":", 1)[1] != version:
                problems.append((rel, "%s: image %s is not tagged with the package version %s" % (where, img, version)))
    examples = os.path.join(a.deploy, "examples")
    for name in sorted(os.listdir(examples)) if os.path.isdir(examples) else []:
        if not name.endswith(".yaml"):
            continue
        rel = os.path.join("examples", name)
        try:
            docs = [d for d in yaml.safe_load_all(open(os.path.join(examples, name))) if d is not None]
        except yaml.YAMLError as e:
            problems.append((rel, "not YAML: %s" % str(e).splitlines()[0]))
            continue
        units.append(rel)
        for obj in docs:
            count += 1
            problems += [(rel, "%s: %s" % (label(obj), p)) for p in schema_problems(schemas, obj)]
    # A problem of a file several overlays render is one line naming them all.
    where = {}
    for unit, text in problems:
        where.setdefault(text, []).append(unit)
    for text, in_units in where.items():
        print("check-manifests: %s: %s" % (", ".join(sorted(set(in_units))), text), file=sys.stderr)
    if problems:
        return 1
    print("check-manifests: %d objects of %s pass the pinned schemas and the lints (kubectl %s)"
          % (count, ", ".join(units), kver))
    return 0


if __name__ == "__main__":
    sys.exit(main())
