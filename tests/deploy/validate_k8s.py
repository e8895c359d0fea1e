#!/usr/bin/env python3
"""Validates deploy/k8s/ offline, without a cluster (ctest `deploy_k8s`).

Manifests (every document of deploy/k8s/*.yaml and deploy/k8s/*/*.yaml):
  - each kind is one this directory may ship, with its apiVersion;
  - names are DNS-1123 labels; port names at most 15 characters;
  - a workload's selector matches its pod template's labels; probes name declared ports;
    every $(VAR) in a container's args is in its env;
  - a Service selects a workload and its targetPorts name that workload's ports;
  - a ServiceMonitor selects a Service and scrapes ports it has; a PodMonitor selects a
    workload and scrapes ports its containers declare;
  - prometheus.io/port annotations name a container port;
  - every latdoc container runs a real subcommand with flags that subcommand has (its --help);
  - a Job: restartPolicy Never or OnFailure, no selector of its own; an Indexed Job runs every
    index at once (parallelism == completions), backoffLimitPerIndex with restartPolicy Never;
    a latdoc container in it takes --shard=$(JOB_COMPLETION_INDEX)/N with N its completions,
    JOB_COMPLETION_INDEX from the job-completion-index annotation;
  - a pod's volumeMounts name its volumes, and a claim is a PersistentVolumeClaim shipped here,
    ReadWriteMany when the pods of several shards mount it;
  - a `latdoc merge` Job reads exactly the files the shards write (--json with each index), from
    the same claim.
(`kubectl apply --dry-run=client` is not used: kubectl asks a server for the API's resources
even then, and the test runs offline.)
Dockerfile: multi-stage, every stage Debian 12, and the runtime stage installs the Debian package
of every shared library the built binary links (ldd + dpkg -S on this Debian 12 machine).

Usage: tests/deploy/validate_k8s.py LATDOC_BINARY   (exit 0: valid; 1: errors listed)
"""
import glob, os, re, subprocess, sys

import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
K8S = os.path.join(ROOT, "deploy", "k8s")
KINDS = {
    "Deployment": "apps/v1", "DaemonSet": "apps/v1", "Service": "v1", "ConfigMap": "v1",
    "ServiceMonitor": "monitoring.coreos.com/v1", "PodMonitor": "monitoring.coreos.com/v1",
    "Job": "batch/v1", "PersistentVolumeClaim": "v1",
}
INDEX_ANNOTATION = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
errors = []


def err(where, msg):
    errors.append(f"{where}: {msg}")


def subset(small, big):
    return bool(small) and all(big.get(k) == v for k, v in small.items())


def containers(doc):
    return doc["spec"]["template"]["spec"].get("containers", [])


def check_workload(where, doc, latdoc):
    spec = doc.get("spec", {})
    labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
    if not subset(spec.get("selector", {}).get("matchLabels", {}), labels):
        err(where, "spec.selector.matchLabels do not match the pod template's labels")
    check_pod(where, doc, latdoc)


def check_pod(where, doc, latdoc):
    pod = doc["spec"]["template"]["spec"]
    volumes = {v.get("name") for v in pod.get("volumes", [])}
    ports = set()
    for c in containers(doc):
        cw = f"{where}: container {c.get('name')}"
        if not c.get("name") or not c.get("image"):
            err(cw, "needs a name and an image")
        names = {p.get("name") for p in c.get("ports", [])}
        for p in c.get("ports", []):
            if not isinstance(p.get("containerPort"), int):
                err(cw, f"port {p} has no integer containerPort")
            if p.get("name") and len(p["name"]) > 15:
                err(cw, f"port name {p['name']} is longer than 15 characters")
            ports.add(p.get("containerPort"))
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            port = c.get(probe, {}).get("httpGet", {}).get("port")
            if isinstance(port, str) and port not in names:
                err(cw, f"{probe} names port {port}, which the container does not declare")
        for m in c.get("volumeMounts", []):
            if m.get("name") not in volumes:
                err(cw, f"volumeMount {m.get('name')} names no volume of the pod")
        env = {e.get("name") for e in c.get("env", [])}
        args = [str(a) for a in c.get("args", [])]
        for a in args:
            for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", a):
                if var not in env:
                    err(cw, f"args use $({var}), which is not in env")
        if c.get("image", "").split(":")[0].endswith("latdoc"):
            check_latdoc_args(cw, args, latdoc)
    ann = doc["spec"]["template"].get("metadata", {}).get("annotations", {})
    if "prometheus.io/port" in ann and int(ann["prometheus.io/port"]) not in ports:
        err(where, f"prometheus.io/port {ann['prometheus.io/port']} is no container port")


def latdoc_args(doc):
    """The args of the pod's latdoc containers."""
    return [[str(a) for a in c.get("args", [])] for c in containers(doc)
            if c.get("image", "").split(":")[0].endswith("latdoc")]


def flag_value(args, flag):
    for a in args:
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    for i, a in enumerate(args[:-1]):
        if a == flag:
            return args[i + 1]
    return None


def check_job(where, doc, latdoc):
    spec = doc.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    if "selector" in spec:
        err(where, "a Job's selector is made by the Job controller (no spec.selector)")
    restart = pod.get("restartPolicy")
    if restart not in ("Never", "OnFailure"):
        err(where, f"restartPolicy {restart}: a Job's pods take Never or OnFailure")
    check_pod(where, doc, latdoc)
    indexed = spec.get("completionMode") == "Indexed"
    if "backoffLimitPerIndex" in spec and (not indexed or restart != "Never"):
        err(where, "backoffLimitPerIndex needs completionMode Indexed and restartPolicy Never")
    for c in containers(doc):
        for e in c.get("env", []):
            if e.get("name") == "JOB_COMPLETION_INDEX":
                ref = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
                if ref != INDEX_ANNOTATION:
                    err(where, f"JOB_COMPLETION_INDEX from {ref}, expected {INDEX_ANNOTATION}")
    for args in latdoc_args(doc):
        shard = flag_value(args, "--shard")
        if shard is None:
            continue
        if not indexed:
            err(where, "latdoc bench --shard in a Job that is not Indexed: every pod would be one shard")
            continue
        completions, parallelism = spec.get("completions"), spec.get("parallelism")
        if not isinstance(completions, int) or parallelism != completions:
            err(where, f"parallelism {parallelism} and completions {completions}: the shards must "
                       "run at once (equal integers)")
        m = re.fullmatch(r"\$\(JOB_COMPLETION_INDEX\)/(\d+)", shard)
        if not m:
            err(where, f"--shard {shard}: expected $(JOB_COMPLETION_INDEX)/N")
        elif int(m.group(1)) != completions:
            err(where, f"--shard {shard}: N is not the Job's completions ({completions})")
        if flag_value(args, "--start-at") is None:
            err(where, "latdoc bench --shard without --start-at: the shards would not start together")
        out = flag_value(args, "--json")
        if out is None or "$(JOB_COMPLETION_INDEX)" not in out:
            err(where, "a shard's --json must name a file per index ($(JOB_COMPLETION_INDEX))")


def claims(doc):
    """{mount path: claim name} of the pod's containers."""
    pod = doc["spec"]["template"]["spec"]
    by_volume = {v.get("name"): v.get("persistentVolumeClaim", {}).get("claimName")
                 for v in pod.get("volumes", [])}
    return {m.get("mountPath"): by_volume.get(m.get("name"))
            for c in containers(doc) for m in c.get("volumeMounts", []) if by_volume.get(m.get("name"))}


def check_shards_and_merge(jobs, pvcs):
    """The shards' Job and the merge Job agree: files, claim, and a claim several nodes share."""
    shard_jobs = []
    for where, doc in jobs:
        for args in latdoc_args(doc):
            if flag_value(args, "--shard") is not None and flag_value(args, "--json"):
                shard_jobs.append((where, doc, flag_value(args, "--json")))
    for where, doc in jobs:
        for path, claim in claims(doc).items():
            if claim not in pvcs:
                err(where, f"claim {claim} is no PersistentVolumeClaim of deploy/k8s")
            elif doc["spec"].get("parallelism", 1) > 1 and "ReadWriteMany" not in pvcs[claim]:
                err(where, f"claim {claim} is mounted by {doc['spec']['parallelism']} pods at once "
                           "(on several nodes): it must be ReadWriteMany")
    for where, doc in jobs:
        for args in latdoc_args(doc):
            if not args or args[0] != "merge":
                continue
            files = [a for a in args[1:] if not a.startswith("-")]
            if not shard_jobs:
                err(where, "latdoc merge with no shards' Job in deploy/k8s")
                continue
            swhere, sdoc, pattern = shard_jobs[0]
            n = sdoc["spec"].get("completions", 0)
            expected = [pattern.replace("$(JOB_COMPLETION_INDEX)", str(i)) for i in range(n)]
            if files != expected:
                err(where, f"latdoc merge reads {files}, but {swhere} writes {expected}")
            mine, theirs = claims(doc), claims(sdoc)
            for f in expected:
                d = os.path.dirname(f)
                if mine.get(d) is None or mine.get(d) != theirs.get(d):
                    err(where, f"{d} is not the shards' claim ({theirs.get(d)}) mounted at the same path")
                    break


def check_latdoc_args(where, args, latdoc):
    if not args:
        err(where, "a latdoc container without args runs --help only")
        return
    sub = args[0]
    r = subprocess.run([latdoc, sub, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        err(where, f"'latdoc {sub}' is no subcommand: {r.stderr.strip()}")
        return
    known = set(re.findall(r"(--[a-z0-9-]+)", r.stdout))
    for a in args[1:]:
        if a.startswith("--"):
            flag = a.split("=", 1)[0]
            if flag not in known:
                err(where, f"'latdoc {sub}' has no flag {flag}")
            if a.endswith("="):
                err(where, f"{a}: an empty value after '=' (give the empty value as its own arg)")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    latdoc = sys.argv[1]
    docs = []
    for path in sorted(glob.glob(os.path.join(K8S, "*.yaml")) + glob.glob(os.path.join(K8S, "*", "*.yaml"))):
        with open(path) as f:
            for i, doc in enumerate(yaml.safe_load_all(f)):
                if doc:
                    docs.append((f"{os.path.relpath(path, K8S)}#{i}", doc))
    if not docs:
        err("deploy/k8s", "no manifest")
    workloads, services, jobs, pvcs = [], [], [], {}
    for where, doc in docs:
        kind = doc.get("kind")
        where = f"{where} {kind}/{doc.get('metadata', {}).get('name')}"
        if kind not in KINDS:
            err(where, f"kind {kind} is not one deploy/k8s ships")
            continue
        if doc.get("apiVersion") != KINDS[kind]:
            err(where, f"apiVersion {doc.get('apiVersion')}, expected {KINDS[kind]}")
        if not DNS1123.match(doc.get("metadata", {}).get("name", "")):
            err(where, "metadata.name is not a DNS-1123 label")
        if kind in ("Deployment", "DaemonSet"):
            check_workload(where, doc, latdoc)
            workloads.append(doc)
        elif kind == "Service":
            services.append((where, doc))
        elif kind == "Job":
            check_job(where, doc, latdoc)
            jobs.append((where, doc))
        elif kind == "PersistentVolumeClaim":
            pvcs[doc["metadata"]["name"]] = doc.get("spec", {}).get("accessModes", [])
    for where, svc in services:
        sel = svc["spec"].get("selector", {})
        match = [w for w in workloads if subset(sel, w["spec"]["template"]["metadata"]["labels"])]
        if not match:
            err(where, "selects no workload")
            continue
        names = {p.get("name") for w in match for c in containers(w) for p in c.get("ports", [])}
        for p in svc["spec"].get("ports", []):
            if isinstance(p.get("targetPort"), str) and p["targetPort"] not in names:
                err(where, f"targetPort {p['targetPort']} is no port of the workload")
    for where, doc in docs:
        kind = doc.get("kind")
        where = f"{where} {kind}/{doc.get('metadata', {}).get('name')}"
        sel = doc.get("spec", {}).get("selector", {}).get("matchLabels", {})
        if kind == "ServiceMonitor":
            match = [s for _, s in services if subset(sel, s["metadata"].get("labels", {}))]
            if not match:
                err(where, "selects no Service")
                continue
            names = {p.get("name") for s in match for p in s["spec"].get("ports", [])}
            for e in doc["spec"].get("endpoints", []):
                if e.get("port") not in names:
                    err(where, f"endpoint port {e.get('port')} is no port of the Service")
        elif kind == "PodMonitor":
            match = [w for w in workloads if subset(sel, w["spec"]["template"]["metadata"]["labels"])]
            if not match:
                err(where, "selects no workload")
                continue
            names = {p.get("name") for w in match for c in containers(w) for p in c.get("ports", [])}
            for e in doc["spec"].get("podMetricsEndpoints", []):
                if e.get("port") not in names:
                    err(where, f"endpoint port {e.get('port')} is no container port")
    check_shards_and_merge(jobs, pvcs)
    check_dockerfile(latdoc)
    for e in errors:
        print(e)
    print(f"validate_k8s: {len(docs)} manifests, {len(errors)} errors")
    return 1 if errors else 0


def check_dockerfile(latdoc):
    where = "deploy/k8s/Dockerfile"
    with open(os.path.join(K8S, "Dockerfile")) as f:
        text = f.read().replace("\\\n", " ")
    stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, re.M | re.I)
    if len(stages) < 2:
        err(where, "not multi-stage")
    for image, _ in stages:
        if not re.match(r"^debian:12(-slim)?$", image):
            err(where, f"stage FROM {image}: not Debian 12")
    last = text[text.rfind("\nFROM "):]
    installed = set()
    for line in re.findall(r"apt-get install ([^&\n]*)", last):
        installed |= {w for w in line.split() if not w.startswith("-")}
    # In every Debian 12 image already (apt depends on them; dpkg pre-depends on zlib1g).
    base = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}
    # A sanitizer build (ctest --preset asan runs this test too) links its runtimes; the image
    # ships the release build, which does not.
    sanitizer_runtimes = {"libasan8", "libubsan1", "libtsan2", "liblsan0"}
    out = subprocess.run(["ldd", latdoc], capture_output=True, text=True).stdout
    for lib in re.findall(r"=>\s+(/\S+)", out):
        real = os.path.realpath(lib)
        pkg = None
        for path in (real, lib, "/usr" + lib, "/usr" + real):
            r = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
            if r.returncode == 0:
                pkg = r.stdout.split(":")[0]
                break
        if pkg is None:
            err(where, f"{lib}: no Debian package owns it")
        elif pkg not in base and pkg not in installed and pkg not in sanitizer_runtimes:
            err(where, f"the runtime stage lacks {pkg} (for {os.path.basename(lib)})")
    if "COPY --from=build /src/build/release/src/cli/latdoc" not in last:
        err(where, "the runtime stage does not copy the build stage's binary")


if __name__ == "__main__":
    sys.exit(main())
