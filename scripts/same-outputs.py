#!/usr/bin/env python3
"""Do two tend binaries print the same? Runs a fixed set of `tend render`, `diff` and `apply`
commands (the bundled examples, the test fixtures, Helm charts of the shared corpus, each
against a fresh test API server) with each binary and compares stdout, stderr (request counts
included) and exit codes byte for byte, after masking what differs from run to run (ports,
temporary paths, durations, timestamps, uids).

    python3 scripts/same-outputs.py record OUT_DIR [TEND_BINARY]   # record one binary's outputs
    python3 scripts/same-outputs.py compare DIR_A DIR_B            # exit 1 on any difference

Made for refactors that must not change behaviour (issue 31: the run drawn as a plan). Needs
`target/debug/tend-testserver` (`cargo build -p tend-testserver --bin tend-testserver`).
"""
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
SERVER = os.path.join(ROOT, "target", "debug", "tend-testserver")


class Server:
    """The test API server binary, driven over stdin/stdout."""

    def __init__(self):
        env = dict(os.environ)
        env["TEND_TESTSERVER_LATENCY_MS"] = "0"
        self.proc = subprocess.Popen([SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)
        self.kubeconfig = json.loads(self.proc.stdout.readline())["kubeconfig"]

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=30)


MASKS = [
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:PORT"),
    (re.compile(r"\b[0-9a-f]{40}\b"), "COMMIT"),
    (re.compile(r"/tmp/[A-Za-z0-9_.\-]+"), "/tmp/TMP"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?"), "TIME"),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "UID"),
    (re.compile(r"\b\d+(\.\d+)? ?(ms|s|µs)\b"), "DURATION"),
    (re.compile(r"\"(duration_ms|durationMs|elapsed_ms|duration)\": ?[0-9.]+"), r'"\1": N'),
    (re.compile(r"holder[^\n\"]*"), "holder"),
]


def mask(text):
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


def helm_repo(tmp):
    """A repository of HelmCharts over charts of the shared corpus."""
    repo = os.path.join(tmp, "helm-repo")
    os.makedirs(os.path.join(repo, "apps"))
    shutil.copytree(os.path.join(SHARED, "helm-corpus", "charts", "podinfo"),
                    os.path.join(repo, "charts", "podinfo"))
    shutil.copytree(os.path.join(SHARED, "helm-corpus", "charts", "kube-state-metrics"),
                    os.path.join(repo, "charts", "kube-state-metrics"))
    with open(os.path.join(repo, "apps", "charts.yaml"), "w") as f:
        f.write("""apiVersion: v1
kind: Namespace
metadata:
  name: apps
---
apiVersion: tend.dev/v1alpha1
kind: HelmChart
metadata:
  name: podinfo
  namespace: apps
spec:
  chart: ../charts/podinfo
  values:
    replicaCount: 2
---
apiVersion: tend.dev/v1alpha1
kind: HelmChart
metadata:
  name: ksm
  namespace: apps
spec:
  chart: ../charts/kube-state-metrics
""")
    return repo


def cases(tmp):
    """(name, args, needs a cluster) in order; cluster cases share one server per group."""
    ex = os.path.join(ROOT, "examples")
    fx = os.path.join(ROOT, "tests", "fixtures")
    out = []
    for o in ("yaml", "json"):
        out.append(("render-site-dc1-" + o, ["render", "--repo", f"{ex}/site", "--cluster", "dc1", "-o", o], None))
    out.append(("render-site", ["render", "--repo", f"{ex}/site"], None))
    out.append(("render-migrations", ["render", "--repo", f"{ex}/migrations"], None))
    out.append(("render-sops", ["render", "--repo", f"{ex}/sops", "--decryption-key-file", f"{ex}/sops/age-test-key.txt"], None))
    out.append(("render-sops-nokey", ["render", "--repo", f"{ex}/sops"], None))
    for d in ("kustomize", "kustomize-mixed", "lists"):
        out.append((f"render-{d}", ["render", "--repo", f"{fx}/{d}"], None))
    for d in sorted(os.listdir(f"{fx}/bad")):
        out.append((f"render-bad-{d}", ["render", "--repo", f"{fx}/bad/{d}"], None))
    helm = helm_repo(tmp)
    out.append(("render-helm", ["render", "--repo", helm], None))
    gitops = os.path.join(SHARED, "gitops-repos")
    if os.path.isdir(gitops):
        for d in sorted(os.listdir(gitops)):
            if os.path.isdir(os.path.join(gitops, d)):
                out.append((f"render-gitops-{d}", ["render", "--repo", f"{gitops}/{d}"], None))
        for path in ("clusters/staging", "infrastructure/controllers/staging", "apps/staging"):
            name = path.replace("/", "-")
            out.append((f"render-hub-spoke-{name}", ["render", "--repo", f"{gitops}/flux2-hub-spoke-example", "--path", path], None))
    crds = os.path.join(tmp, "crds")
    os.makedirs(crds)
    with open(os.path.join(crds, "crds.yaml"), "w") as f:
        f.write(subprocess.run([TEND[0], "crds"], capture_output=True, text=True, check=True).stdout)
    site = ["--repo", f"{ex}/site", "--cluster", "dc1"]
    for step, args in [
        ("apply-crds", ["apply", "--repo", crds, "--applyset", "crds"]),
        ("diff-empty", ["diff", *site]),
        ("diff-empty-json", ["diff", *site, "-o", "json"]),
        ("diff-empty-md", ["diff", *site, "-o", "markdown"]),
        ("apply", ["apply", *site]),
        ("diff-noop", ["diff", *site]),
        ("apply-noop", ["apply", *site]),
        ("apply-noop-json", ["apply", *site, "-o", "json"]),
        ("diff-dc2", ["diff", "--repo", f"{ex}/site", "--cluster", "dc2"]),
        ("apply-dc2-dry", ["apply", "--repo", f"{ex}/site", "--cluster", "dc2", "--dry-run"]),
        ("apply-dc2", ["apply", "--repo", f"{ex}/site", "--cluster", "dc2", "-o", "markdown"]),
        ("apply-sops", ["apply", "--repo", f"{ex}/sops", "--applyset", "sops", "--decryption-key-file", f"{ex}/sops/age-test-key.txt"]),
        ("diff-sops", ["diff", "--repo", f"{ex}/sops", "--applyset", "sops", "--decryption-key-file", f"{ex}/sops/age-test-key.txt", "-o", "json"]),
        ("diff-helm", ["diff", "--repo", helm, "--applyset", "helm"]),
        ("apply-helm", ["apply", "--repo", helm, "--applyset", "helm"]),
        ("diff-helm-noop", ["diff", "--repo", helm, "--applyset", "helm"]),
        ("diff-kustomize-mixed", ["diff", "--repo", f"{fx}/kustomize-mixed", "--applyset", "km"]),
        ("apply-lists", ["apply", "--repo", f"{fx}/lists", "--applyset", "lists"]),
        ("diff-lists", ["diff", "--repo", f"{fx}/lists", "--applyset", "lists", "-o", "json"]),
        ("apply-empty-refused", ["apply", "--repo", f"{fx}/bad/scalar-document", "--applyset", "lists"]),
    ]:
        out.append((f"cluster-{step}", args, "main"))
    for d in sorted(os.listdir(f"{fx}/bad-cluster")):
        out.append((f"cluster-bad-{d}", ["diff", "--repo", f"{fx}/bad-cluster/{d}"], "bad"))
    out.append(("unreachable", ["diff", "--repo", f"{ex}/site", "--kubeconfig", "UNREACHABLE"], None))
    return out


TEND = [None]


def record(out_dir, tend):
    TEND[0] = tend
    os.makedirs(out_dir, exist_ok=True)
    tmp = tempfile.mkdtemp()
    servers = {}
    try:
        unreachable = os.path.join(tmp, "unreachable.yaml")
        with open(unreachable, "w") as f:
            f.write("""apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
""")
        for name, args, group in cases(tmp):
            env = {k: v for k, v in os.environ.items() if not k.startswith(("TEND_", "SOPS_", "KUBECONFIG"))}
            env["NO_COLOR"] = "1"
            env["HOME"] = os.path.join(tmp, "home")
            env["TEND_CACHE_DIR"] = os.path.join(tmp, "cache", group or name)
            env["TEND_RETRY_TIMEOUT"] = "1s"
            if group is not None:
                if group not in servers:
                    servers[group] = Server()
                env["KUBECONFIG"] = servers[group].kubeconfig
            args = [unreachable if a == "UNREACHABLE" else a for a in args]
            proc = subprocess.run([tend, *args], capture_output=True, text=True, env=env,
                                  cwd=tmp, timeout=300)
            with open(os.path.join(out_dir, name), "w") as f:
                f.write(f"exit {proc.returncode}\n--- stdout\n{mask(proc.stdout)}--- stderr\n{mask(proc.stderr)}")
    finally:
        for server in servers.values():
            server.close()
        shutil.rmtree(tmp, ignore_errors=True)


def compare(a, b):
    names = sorted(set(os.listdir(a)) | set(os.listdir(b)))
    differing = 0
    for name in names:
        pa, pb = os.path.join(a, name), os.path.join(b, name)
        ta = open(pa).read() if os.path.exists(pa) else "(missing)\n"
        tb = open(pb).read() if os.path.exists(pb) else "(missing)\n"
        if ta != tb:
            differing += 1
            sys.stdout.writelines(difflib.unified_diff(ta.splitlines(True), tb.splitlines(True), f"a/{name}", f"b/{name}"))
    print(f"{len(names) - differing} same, {differing} different")
    return 1 if differing else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "record":
        tend = sys.argv[3] if len(sys.argv) > 3 else os.path.join(ROOT, "target", "debug", "tend")
        record(sys.argv[2], os.path.abspath(tend))
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        return compare(sys.argv[2], sys.argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
