#!/usr/bin/env python3
"""Writes deploy/kubernetes/base/crds/*.yaml from api/openapi.yaml: the spec of
CloudApp, CloudJob and CloudWorkflow is the REST API's write schema
(AppFields, JobFields, WorkflowFields) made structural for Kubernetes
(refs resolved, nullable types, no const/allOf/additionalProperties:false,
no defaults: a defaulted field would show as drift in Argo CD,
free-form objects kept whole). deploy/crds_test.go checks they agree."""
import copy, sys, yaml

api = yaml.safe_load(open("api/openapi.yaml"))
schemas = api["components"]["schemas"]

def conv(s):
    s = copy.deepcopy(s)
    if "$ref" in s:
        return conv(schemas[s["$ref"].split("/")[-1]])
    if "anyOf" in s:  # a Name or "": a string
        out = {"type": "string"}
        if "description" in s: out["description"] = s["description"]
        return out
    out = {}
    t = s.get("type")
    if isinstance(t, list):
        ts = [x for x in t if x != "null"]
        if "null" in t: out["nullable"] = True
        t = ts[0]
    if t: out["type"] = t
    for k in ("description", "pattern", "minimum", "maximum", "maxLength", "minLength", "maxItems", "minItems", "enum", "format"):
        if k in s: out[k] = s[k]
    if "properties" in s:
        out["properties"] = {k: conv(v) for k, v in s["properties"].items()}
    if "required" in s: out["required"] = s["required"]
    ap = s.get("additionalProperties")
    if isinstance(ap, dict):
        out["additionalProperties"] = conv(ap)
    if "items" in s: out["items"] = conv(s["items"])
    if t == "object" and "properties" not in out and "additionalProperties" not in out:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out

status = {"type": "object", "properties": {
    "observedGeneration": {"type": "integer", "format": "int64"},
    "lastFireTime": {"type": "string", "format": "date-time"},
    "nextFireTime": {"type": "string", "format": "date-time"},
    "lastResult": {"type": "string"},
    "lastFailure": {"type": "string"},
    "runningShards": {"type": "integer"},
    "activeRuns": {"type": "integer"},
    "conditions": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"], "items": {
        "type": "object", "required": ["type", "status", "lastTransitionTime", "reason", "message"], "properties": {
            "type": {"type": "string"}, "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "observedGeneration": {"type": "integer", "format": "int64"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "reason": {"type": "string"}, "message": {"type": "string"}}}}}}

def crd(kind, plural, short, fields, name_field, columns):
    spec = conv(schemas[fields])
    spec["properties"].pop(name_field)  # the object's metadata.name
    spec.pop("required", None)
    spec["description"] = ("The REST API's fields of the %s (docs/kubernetes.md); its name is metadata.name, "
                           "its namespace the scheduler namespace of the same name." % kind[5:].lower())
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": plural + ".elasticjob.io"},
            "spec": {"group": "elasticjob.io", "scope": "Namespaced",
                     "names": {"kind": kind, "listKind": kind + "List", "plural": plural, "singular": kind.lower(),
                               "shortNames": [short], "categories": ["elasticjob"]},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "subresources": {"status": {}},
                                   "additionalPrinterColumns": columns,
                                   "schema": {"openAPIV3Schema": {"type": "object", "required": ["spec"], "properties": {
                                       "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                       "metadata": {"type": "object"}, "spec": spec, "status": status}}}}]}}

ready = {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'}
age = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
out = {
    "cloudapps": crd("CloudApp", "cloudapps", "ejapp", "AppFields", "appName", [ready, age]),
    "cloudjobs": crd("CloudJob", "cloudjobs", "ejjob", "JobFields", "jobName", [
        {"name": "Cron", "type": "string", "jsonPath": ".spec.cron"}, ready,
        {"name": "Last", "type": "string", "jsonPath": ".status.lastResult"},
        {"name": "Next", "type": "date", "jsonPath": ".status.nextFireTime"}, age]),
    "cloudworkflows": crd("CloudWorkflow", "cloudworkflows", "ejwf", "WorkflowFields", "name", [
        {"name": "Cron", "type": "string", "jsonPath": ".spec.cron"}, ready,
        {"name": "Last", "type": "string", "jsonPath": ".status.lastResult"}, age]),
}
for name, doc in out.items():
    for where in ("deploy/kubernetes/base/crds", "deploy/helm/elasticjob/crds"):
      with open("%s/%s.yaml" % (where, name), "w") as f:
        f.write("# Generated by scripts/gen-crds.py from api/openapi.yaml; do not edit.\n")
        yaml.safe_dump(doc, f, sort_keys=False, width=120)
