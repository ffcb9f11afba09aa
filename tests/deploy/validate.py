"""Validates the Kubernetes manifests in deploy/kubernetes.

- Kubernetes kinds against Kubernetes' own schemas (kubernetes-validate, strict: unknown fields
  are errors);
- KEDA kinds against KEDA's CRD schemas (@kubernetes-models/keda, through keda_validate.js), and
  against the fields written down in deploy/kubernetes/KEDA.md (the CRD schema lets unknown
  fields through; KEDA would ignore them);
- what ties them together: probes on the paths and ports the containers serve, grace periods
  longer than the drain, scale targets that exist, real Tessera queues, Secret keys that exist,
  non-root containers.
Each check also runs on broken copies, which must be refused, so the checks can fail.

Run by scripts/test-deploy.sh; prints `deploy: N passed, M failed`.
"""

import copy
import json
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy/kubernetes"
KUBERNETES_VERSION = "1.30.0"
# Every queue Tessera has (shared/core/src/messages.rs, QueueName::ALL).
QUEUES = {
    "imagerequest", "slicerequest", "sliceresponse", "imageresponse", "photorequest", "photoreview",
    "libraryrequest",
}
# Role -> (port name, port) of /healthz and /readyz, and the queues KEDA scales it on.
ROLES = {
    "web": ("http", 8080, ()),
    "controller": ("ops", 9090, ("imagerequest", "sliceresponse", "libraryrequest")),
    "processor": ("ops", 9090, ("slicerequest", "photorequest")),
}
VARIANTS = MANIFESTS / "variants"
LISTENER_DRAIN_SECS = 30

# The fields of KEDA.md.
SCALED_OBJECT_SPEC = {
    "scaleTargetRef": dict,
    "pollingInterval": int,
    "cooldownPeriod": int,
    "minReplicaCount": int,
    "maxReplicaCount": int,
    "triggers": list,
}
TRIGGER = {"type": str, "metadata": dict, "authenticationRef": dict}
AZURE_QUEUE_METADATA = {"queueName", "queueLength", "activationQueueLength", "accountName"}
SECRET_TARGET_REF = {"parameter", "name", "key"}

results = []


def check(name, problems):
    """Records a check: `problems` is a list of strings, empty when it passed."""
    results.append(not problems)
    print(f"{'ok  ' if not problems else 'FAIL'} {name}" + "".join(f"\n     {p}" for p in problems))


def refused(name, problems):
    """A broken copy must be refused."""
    results.append(bool(problems))
    print(f"{'ok  ' if problems else 'FAIL'} refuses {name}" + (f": {problems[0]}" if problems else ""))


def load(folder=MANIFESTS):
    docs = []
    for path in sorted(folder.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((path.name, doc))
    return docs


def load_file(path):
    return [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]


def kubernetes_problems(docs):
    out = []
    for name, doc in docs:
        if doc["apiVersion"].startswith("keda.sh/"):
            continue
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except Exception as e:  # noqa: BLE001 - every validation error is a finding
            out.append(f"{name} {doc['kind']}/{doc['metadata'].get('name')}: {str(e).splitlines()[0]}")
    return out


def keda_schema_problems(docs):
    keda = [doc for _, doc in docs if doc["apiVersion"].startswith("keda.sh/")]
    if not keda:
        return ["no KEDA documents"]
    run = subprocess.run(
        ["node", str(Path(__file__).with_name("keda_validate.js"))],
        input="\n".join(json.dumps(d) for d in keda),
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
    )
    if run.returncode != 0:
        return [f"keda_validate.js: {run.stderr.strip()}"]
    out = []
    for doc, line in zip(keda, run.stdout.splitlines()):
        answer = json.loads(line)
        if not answer["ok"]:
            out.append(f"{doc['kind']}/{doc['metadata']['name']}: {answer['error']}")
    return out


def typed(where, mapping, allowed):
    out = []
    for key, value in mapping.items():
        if key not in allowed:
            out.append(f"{where}.{key}: not a field of KEDA.md")
        elif not isinstance(value, allowed[key]) or isinstance(value, bool):
            out.append(f"{where}.{key}: expected {allowed[key].__name__}")
    return out


def keda_field_problems(docs):
    out = []
    for _, doc in docs:
        name = f"{doc['kind']}/{doc['metadata']['name']}"
        if doc["kind"] == "ScaledObject":
            spec = doc["spec"]
            out += typed(f"{name} spec", spec, SCALED_OBJECT_SPEC)
            out += typed(f"{name} scaleTargetRef", spec.get("scaleTargetRef", {}), {"name": str})
            for i, trigger in enumerate(spec.get("triggers", [])):
                where = f"{name} triggers[{i}]"
                out += typed(where, trigger, TRIGGER)
                if trigger.get("type") != "azure-queue":
                    out.append(f"{where}.type: expected azure-queue")
                metadata = trigger.get("metadata", {})
                for key, value in metadata.items():
                    if key not in AZURE_QUEUE_METADATA:
                        out.append(f"{where}.metadata.{key}: not an azure-queue key of KEDA.md")
                    elif not isinstance(value, str):
                        out.append(f"{where}.metadata.{key}: must be a string")
                if "queueName" not in metadata:
                    out.append(f"{where}.metadata.queueName: required")
                for key in ("queueLength", "activationQueueLength"):
                    value = metadata.get(key)
                    if isinstance(value, str) and not value.isdigit():
                        out.append(f"{where}.metadata.{key}: a whole number, got {value!r}")
                if metadata.get("queueLength") == "0":
                    out.append(f"{where}.metadata.queueLength: must be positive")
                out += typed(f"{where}.authenticationRef", trigger.get("authenticationRef", {}), {"name": str})
            lo, hi = spec.get("minReplicaCount", 0), spec.get("maxReplicaCount", 100)
            if not 0 <= lo <= hi:
                out.append(f"{name}: replica counts {lo}..{hi}")
            # Activation only matters when KEDA may scale to zero.
            if lo > 0 and any("activationQueueLength" in t.get("metadata", {})
                              for t in spec.get("triggers", [])):
                out.append(f"{name}: activationQueueLength does nothing with minReplicaCount {lo}")
        elif doc["kind"] == "TriggerAuthentication":
            spec = doc["spec"]
            out += typed(f"{name} spec", spec, {"secretTargetRef": list, "podIdentity": dict})
            if ("secretTargetRef" in spec) == ("podIdentity" in spec):
                out.append(f"{name}: either secretTargetRef (a key) or podIdentity (Entra ID)")
            if "podIdentity" in spec and spec["podIdentity"] != {"provider": "azure-workload"}:
                out.append(f"{name} podIdentity: provider azure-workload is the one KEDA.md documents")
            for i, ref in enumerate(spec.get("secretTargetRef", [])):
                out += typed(f"{name} secretTargetRef[{i}]", ref, {k: str for k in SECRET_TARGET_REF})
                if ref.get("parameter") != "connection":
                    out.append(f"{name} secretTargetRef[{i}].parameter: azure-queue takes `connection`")
    return out


def by_kind(docs, kind):
    return {doc["metadata"]["name"]: doc for _, doc in docs if doc["kind"] == kind}


def consistency_problems(docs):
    out = []
    deployments = by_kind(docs, "Deployment")
    secrets = by_kind(docs, "Secret")
    auths = by_kind(docs, "TriggerAuthentication")
    services = by_kind(docs, "Service")
    config_maps = by_kind(docs, "ConfigMap")
    accounts = by_kind(docs, "ServiceAccount")

    def secret_key_exists(where, name, key):
        secret = secrets.get(name)
        keys = set((secret or {}).get("stringData", {})) | set((secret or {}).get("data", {}))
        if key not in keys:
            out.append(f"{where}: Secret {name} has no key {key}")

    for role, (port_name, port, _) in ROLES.items():
        deployment = deployments.get(f"tessera-{role}")
        if deployment is None:
            out.append(f"no Deployment tessera-{role}")
            continue
        pod = deployment["spec"]["template"]["spec"]
        where = f"Deployment/tessera-{role}"
        if pod.get("terminationGracePeriodSeconds", 30) <= LISTENER_DRAIN_SECS:
            out.append(f"{where}: terminationGracePeriodSeconds must exceed the {LISTENER_DRAIN_SECS} s drain")
        pod_sc = pod.get("securityContext", {})
        for container in pod["containers"]:
            cw = f"{where} container {container['name']}"
            if container.get("args", [None])[0] != role:
                out.append(f"{cw}: args must start with the role {role!r}")
            sc = container.get("securityContext", {})
            if not (sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) and
                    sc.get("runAsUser", pod_sc.get("runAsUser", 0)) != 0):
                out.append(f"{cw}: must run as a non-root user")
            ports = {p["name"]: p for p in container.get("ports", [])}
            if ports.get(port_name, {}).get("containerPort") != port:
                out.append(f"{cw}: port {port_name} must be {port}")
            for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                get = container.get(probe, {}).get("httpGet", {})
                if get.get("path") != path or get.get("port") not in (port_name, port):
                    out.append(f"{cw}: {probe} must GET {path} on {port_name}")
            if "requests" not in container.get("resources", {}):
                out.append(f"{cw}: no resource requests")
            env = {e["name"]: e for e in container.get("env", [])}
            storage = {}
            for source in container.get("envFrom", []):
                name = source.get("configMapRef", {}).get("name")
                if name not in config_maps:
                    out.append(f"{cw}: envFrom names no ConfigMap {name}")
                else:
                    storage.update(config_maps[name].get("data", {}))
            if storage.get("TESSERA_STORAGE") != "azure":
                out.append(f"{cw}: TESSERA_STORAGE must be azure (from the storage ConfigMap)")
            credential = storage.get("TESSERA_STORAGE__AZURE_CREDENTIAL", "connection-string")
            ref = env.get("TESSERA_AZURE_CONNECTION_STRING", {}).get("valueFrom", {}).get("secretKeyRef")
            if credential == "connection-string":
                if not ref:
                    out.append(f"{cw}: the connection string must come from a Secret")
                else:
                    secret_key_exists(cw, ref["name"], ref["key"])
            elif credential == "workload-identity":
                if ref and not ref.get("optional"):
                    out.append(f"{cw}: with workload identity the connection string Secret must be optional")
                if not storage.get("TESSERA_STORAGE__AZURE_ACCOUNT"):
                    out.append(f"{cw}: workload identity needs TESSERA_STORAGE__AZURE_ACCOUNT")
                labels = deployment["spec"]["template"]["metadata"].get("labels", {})
                if labels.get("azure.workload.identity/use") != "true":
                    out.append(f"{where}: pods need the label azure.workload.identity/use: \"true\"")
                account = accounts.get(pod.get("serviceAccountName"))
                if not account or not account["metadata"].get("annotations", {}).get(
                        "azure.workload.identity/client-id"):
                    out.append(f"{where}: its ServiceAccount must name the identity's client id")
            else:
                out.append(f"{cw}: TESSERA_STORAGE__AZURE_CREDENTIAL {credential!r} is not for Kubernetes")
            advertise = env.get("TESSERA_NUDGE__ADVERTISE", {}).get("valueFrom", {}).get("fieldRef", {})
            if advertise.get("fieldPath") != "status.podIP":
                out.append(f"{cw}: TESSERA_NUDGE__ADVERTISE must be the pod IP")
            nudge_port = env.get("TESSERA_NUDGE__PORT", {}).get("value")
            if not nudge_port or ports.get("nudge", {}).get("containerPort") != int(nudge_port) \
                    or ports.get("nudge", {}).get("protocol") != "UDP":
                out.append(f"{cw}: the nudge port must be fixed and exposed as UDP")
            bind = "TESSERA_WEB__BIND" if role == "web" else "TESSERA_OPS__BIND"
            if env.get(bind, {}).get("value") != "0.0.0.0":
                out.append(f"{cw}: {bind} must be 0.0.0.0 so probes reach it")

    web = services.get("tessera-web")
    if web is None or web["spec"]["selector"] != deployments.get("tessera-web", {}).get(
        "spec", {}
    ).get("selector", {}).get("matchLabels"):
        out.append("Service/tessera-web must select the web pods")

    scaled = by_kind(docs, "ScaledObject")
    for role, (_, _, queues) in ROLES.items():
        if not queues:
            continue
        matching = [s for s in scaled.values() if s["spec"]["scaleTargetRef"]["name"] == f"tessera-{role}"]
        if len(matching) != 1:
            out.append(f"tessera-{role}: expected one ScaledObject, found {len(matching)}")
            continue
        on = {t["metadata"].get("queueName") for t in matching[0]["spec"]["triggers"]}
        for queue in queues:
            if queue not in on:
                out.append(f"ScaledObject for {role}: must scale on {queue}")
        if "replicas" in deployments.get(f"tessera-{role}", {}).get("spec", {}):
            out.append(f"Deployment/tessera-{role}: sets replicas, which KEDA scales (apply resets it)")
    for so in scaled.values():
        target = so["spec"]["scaleTargetRef"]["name"]
        if target not in deployments:
            out.append(f"ScaledObject/{so['metadata']['name']}: no Deployment {target}")
        for trigger in so["spec"]["triggers"]:
            if trigger["metadata"].get("queueName") not in QUEUES:
                out.append(f"ScaledObject/{so['metadata']['name']}: not a Tessera queue")
            auth = trigger.get("authenticationRef", {}).get("name")
            if auth not in auths:
                out.append(f"ScaledObject/{so['metadata']['name']}: no TriggerAuthentication {auth}")
    for auth in auths.values():
        for ref in auth["spec"].get("secretTargetRef", []):
            secret_key_exists(f"TriggerAuthentication/{auth['metadata']['name']}", ref["name"], ref["key"])
    # With an identity KEDA needs the account's name; it is the one the roles use.
    roles_account = {m.get("data", {}).get("TESSERA_STORAGE__AZURE_ACCOUNT") for m in config_maps.values()}
    for so in scaled.values():
        for trigger in so["spec"]["triggers"]:
            auth = auths.get(trigger.get("authenticationRef", {}).get("name"), {})
            if "podIdentity" in auth.get("spec", {}):
                account = trigger["metadata"].get("accountName")
                if not account or account not in roles_account:
                    out.append(f"ScaledObject/{so['metadata']['name']}: with podIdentity, accountName "
                               "must name the roles' account")
    return out


# Containers a lifecycle rule may delete from (intermediates and results), and the
# days the service itself keeps results (retention.result_days).
EXPIRABLE = {"sliceinput", "sliceoutput", "messagebodies", "imageinput", "imageoutput",
             "imagepreview", "imagetiles", "cellmaps", "seekindex"}
RESULT_DAYS = 30
RESULT_CONTAINERS = {"imageinput", "imageoutput", "imagepreview", "imagetiles", "cellmaps", "seekindex"}
POLICY = ROOT / "deploy/azure/lifecycle-policy.json"


def policy_problems(policy):
    """The lifecycle policy's form (Azure's management-policy schema, as documented) and what
    it may touch: only Tessera's intermediates and results, and results only after the
    service's own retention."""
    out = []
    rules = policy.get("rules")
    if not isinstance(rules, list) or not rules:
        return ["rules: a non-empty list is required"]
    for rule in rules:
        name = rule.get("name", "?")
        if set(rule) - {"enabled", "name", "type", "definition"}:
            out.append(f"rule {name}: unknown keys {sorted(set(rule) - {'enabled', 'name', 'type', 'definition'})}")
        if rule.get("type") != "Lifecycle" or not isinstance(rule.get("enabled"), bool):
            out.append(f"rule {name}: type must be Lifecycle and enabled a boolean")
        filters = rule.get("definition", {}).get("filters", {})
        if filters.get("blobTypes") != ["blockBlob"]:
            out.append(f"rule {name}: blobTypes must be [blockBlob]")
        prefixes = filters.get("prefixMatch", [])
        if not prefixes:
            out.append(f"rule {name}: no prefixMatch (it would cover every container)")
        containers = {p.split("/")[0] for p in prefixes}
        for c in containers - EXPIRABLE:
            out.append(f"rule {name}: {c} is Tessera's state, never to expire")
        actions = rule.get("definition", {}).get("actions", {}).get("baseBlob", {})
        for action, when in actions.items():
            if action not in {"tierToCool", "tierToCold", "tierToArchive", "delete"}:
                out.append(f"rule {name}: unknown action {action}")
            days = when.get("daysAfterModificationGreaterThan")
            if not isinstance(days, int) or days < 1:
                out.append(f"rule {name}: {action} needs a positive daysAfterModificationGreaterThan")
            elif action == "delete" and containers & RESULT_CONTAINERS and days <= RESULT_DAYS:
                out.append(f"rule {name}: deletes results after {days} days, within the {RESULT_DAYS} kept")
            if action == "tierToArchive" and containers & RESULT_CONTAINERS:
                out.append(f"rule {name}: archived results cannot be served")
    return out


def broken(docs, kind, name, change):
    """A copy of the manifests with one document changed."""
    copied = copy.deepcopy(docs)
    for _, doc in copied:
        if doc["kind"] == kind and doc["metadata"]["name"] == name:
            change(doc)
    return copied


def with_variant(docs, variant):
    """The manifests with each document of `variant` in place of the one of its kind and name."""
    names = {(d["kind"], d["metadata"]["name"]) for _, d in variant}
    kept = [(f, d) for f, d in docs if (d["kind"], d["metadata"]["name"]) not in names]
    return kept + variant


def main():
    docs = load()
    check(f"Kubernetes kinds against Kubernetes {KUBERNETES_VERSION} schemas (strict)", kubernetes_problems(docs))
    check("KEDA kinds against KEDA's CRD schemas", keda_schema_problems(docs))
    check("KEDA fields are the ones KEDA.md documents", keda_field_problems(docs))
    check("probes, grace periods, scale targets, queues, Secret keys, non-root", consistency_problems(docs))
    for path in sorted(VARIANTS.glob("*.yaml")):
        variant = with_variant(docs, load_file(path))
        check(f"variant {path.name}: KEDA schemas, fields and consistency",
              keda_schema_problems(variant) + keda_field_problems(variant) + consistency_problems(variant))

    policy = json.loads(POLICY.read_text())
    check("the lifecycle policy's form and reach", policy_problems(policy))

    def changed(change):
        p = copy.deepcopy(policy)
        change(p)
        return p
    refused("a lifecycle rule on job records", policy_problems(changed(
        lambda p: p["rules"][0]["definition"]["filters"]["prefixMatch"].append("jobs/"))))
    refused("a lifecycle rule deleting results within the retention", policy_problems(changed(
        lambda p: p["rules"][1]["definition"]["actions"]["baseBlob"]["delete"].update(
            daysAfterModificationGreaterThan=10))))

    processor = ("Deployment", "tessera-processor")
    scaled = ("ScaledObject", "tessera-processor")
    refused("an unknown Deployment field", kubernetes_problems(broken(
        docs, *processor, lambda d: d["spec"].update(replicaz=3))))
    refused("a probe port of the wrong type", kubernetes_problems(broken(
        docs, *processor,
        lambda d: d["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"].update(port=[9090]))))
    refused("a ScaledObject without scaleTargetRef", keda_schema_problems(broken(
        docs, *scaled, lambda d: d["spec"].pop("scaleTargetRef"))))
    refused("a numeric queueLength", keda_schema_problems(broken(
        docs, *scaled, lambda d: d["spec"]["triggers"][0]["metadata"].update(queueLength=4))))
    refused("minReplicaCount as a string", keda_schema_problems(broken(
        docs, *scaled, lambda d: d["spec"].update(minReplicaCount="1"))))
    refused("an undocumented ScaledObject field", keda_field_problems(broken(
        docs, *scaled, lambda d: d["spec"].update(pollingIntervall=5))))
    refused("an undocumented azure-queue key", keda_field_problems(broken(
        docs, *scaled, lambda d: d["spec"]["triggers"][0]["metadata"].update(queuename="slicerequest"))))
    refused("a grace period shorter than the drain", consistency_problems(broken(
        docs, *processor, lambda d: d["spec"]["template"]["spec"].update(terminationGracePeriodSeconds=20))))
    refused("a ScaledObject on a queue Tessera does not have", consistency_problems(broken(
        docs, *scaled, lambda d: d["spec"]["triggers"][0]["metadata"].update(queueName="slicerequests"))))
    refused("replicas on a Deployment KEDA scales", consistency_problems(broken(
        docs, *processor, lambda d: d["spec"].update(replicas=1))))
    refused("activation with a floor of one replica", keda_field_problems(broken(
        docs, *scaled, lambda d: d["spec"]["triggers"][0]["metadata"].update(activationQueueLength="0"))))
    refused("controllers that do not scale on sliceresponse", consistency_problems(broken(
        docs, "ScaledObject", "tessera-controller", lambda d: d["spec"]["triggers"].pop())))
    refused("a readiness probe on the wrong path", consistency_problems(broken(
        docs, *processor,
        lambda d: d["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"].update(path="/ready"))))
    identity = with_variant(docs, load_file(VARIANTS / "workload-identity.yaml"))
    refused("workload identity without the pod label", consistency_problems(broken(
        identity, *processor,
        lambda d: d["spec"]["template"]["metadata"]["labels"].pop("azure.workload.identity/use"))))
    refused("workload identity with KEDA on another account", consistency_problems(broken(
        identity, *scaled, lambda d: d["spec"]["triggers"][0]["metadata"].update(accountName="other"))))
    refused("a TriggerAuthentication with both a key and an identity", keda_field_problems(broken(
        identity, "TriggerAuthentication", "tessera-storage", lambda d: d["spec"].update(
            secretTargetRef=[{"parameter": "connection", "name": "tessera-storage", "key": "connection-string"}]))))

    passed = sum(results)
    failed = len(results) - passed
    print(f"deploy: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
