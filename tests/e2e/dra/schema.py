"""What the harness's API server checks in every body gpufrac-dra sends (test code, never shipped):
a structural check against the resource.k8s.io/v1 OpenAPI excerpt (tests/fixtures/kubernetes-openapi)
and the limits and rules the API server enforces beyond the schema."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import scheduler  # noqa: E402

FIXTURES = os.path.join(os.environ["GPUFRAC_SOURCE_DIR"], "tests", "fixtures")
SCHEMAS = json.load(open(os.path.join(FIXTURES, "kubernetes-openapi",
                                      "resource.k8s.io-v1-schemas.json")))["components"]["schemas"]
REF = "#/components/schemas/"
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def _type_ok(value, t):
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, TYPES[t])


def violations(value, schema, at="$"):
    out = []
    if "$ref" in schema:
        name = schema["$ref"][len(REF):]
        if name not in SCHEMAS:
            return [] if isinstance(value, dict) else [at + ": not an object"]
        return violations(value, SCHEMAS[name], at)
    for s in schema.get("allOf", []):
        out += violations(value, s, at)
    if "oneOf" in schema:
        if sum(1 for s in schema["oneOf"] if not violations(value, s, at)) != 1:
            out.append(at + ": not exactly one of oneOf")
    if "type" in schema and not _type_ok(value, schema["type"]):
        return out + [at + ": not of type " + schema["type"]]
    if isinstance(value, dict):
        for r in schema.get("required", []):
            if r not in value:
                out.append(at + ": missing required " + r)
        props = schema.get("properties")
        for k, v in value.items():
            if props is not None and k in props:
                out += violations(v, props[k], at + "." + k)
            elif isinstance(schema.get("additionalProperties"), dict):
                out += violations(v, schema["additionalProperties"], at + "." + k)
            elif props is not None:
                out.append(at + "." + k + ": unknown field")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            out += violations(v, schema["items"], "%s[%d]" % (at, i))
    return out


def slice_limits(obj):
    """The limits the API server enforces beyond the schema (resource/v1 types.go, 1.36), its
    request-policy rules, and quantities in the form it writes back (else the publisher would find
    its slices changed at every resync)."""
    out = []
    spec = obj.get("spec", {})
    if ("devices" in spec) == ("sharedCounters" in spec):
        out.append("spec: exactly one of devices and sharedCounters")
    devices = spec.get("devices", [])
    consumes = any(d.get("consumesCounters") for d in devices)
    if len(devices) > (64 if consumes else 128):
        out.append("spec.devices: %d devices" % len(devices))
    if len(spec.get("sharedCounters", [])) > 8:
        out.append("spec.sharedCounters: more than 8 sets")
    for d in devices:
        for name, cap in d.get("capacity", {}).items():
            out += ["%s: capacity %s: %s" % (d["name"], name, p) for p in scheduler.policy_problems(cap)]
        if len(d.get("attributes", {})) + len(d.get("capacity", {})) > 32:
            out.append(d["name"] + ": more than 32 attributes and capacities")
        if len(d.get("consumesCounters", [])) > 2:
            out.append(d["name"] + ": more than 2 counter consumptions")
    return out
