#!/usr/bin/env python3
"""Benchmark what reading a Flux repository costs a no-op `tend diff` (issue 34).

../shared/gitops-repos/flux2-hub-spoke-example (a hub whose Flux Kustomizations target two
spoke clusters through kubeconfig Secrets in the hub, three HelmReleases) is read as Flux would
(A: `tend diff --path hub` against the hub, the spokes reached through the Secrets), and the same
objects, as `tend render` prints them for each cluster, are read as plain YAML (B: one run of a
Fleet whose hub gets `plain/hub` and whose spokes, reached through the same Secrets, get
`plain/staging` and `plain/production`). Three test API servers (2 ms latency each, as in
bench/engine.py); the chart repository (../shared/gitops-repos/chart-repo) is served over local
HTTP, as the CLI test does, and the charts are cached (one cache directory, filled by the
apply). B is a git work tree too, as A is. Both run against the same servers, under the same
ApplySet, so both diffs are no-ops of the same objects; then A and B run in turn, A B A B ...,
and the ratio A/B is taken pair by pair (target: at most 1.3). The apply waits for nothing
here; the readiness `dependsOn` asks for is played by this script (Deployments and Jobs given
a ready status), as the CLI test plays Flux's controllers.

    python3 bench/flux.py                 # 11 pairs, release build
    RUNS=21 python3 bench/flux.py
    TARGET=profiling python3 bench/flux.py   # another cargo profile's binaries
    CALLGRIND=1 TARGET=profiling python3 bench/flux.py   # also A's and B's instruction counts
    KEEP=/tmp/keep TARGET=profiling python3 bench/flux.py  # servers kept up while /tmp/keep exists
"""
import base64
import functools
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE = os.environ.get("TARGET", "release")
TARGET_DIR = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
TEND = os.path.join(TARGET_DIR, PROFILE, "tend")
SERVER = os.path.join(TARGET_DIR, PROFILE, "tend-testserver")
REPOS = os.path.join(ROOT, "..", "shared", "gitops-repos")
ORIGIN = "https://github.com/fluxcd/flux2-hub-spoke-example.git"
SPOKES = ("staging", "production")


class Server:
    """The test API server binary, driven over stdin/stdout."""

    def __init__(self):
        env = dict(os.environ)
        env.setdefault("TEND_TESTSERVER_LATENCY_MS", "2")
        self.proc = subprocess.Popen([SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)
        hello = json.loads(self.proc.stdout.readline())
        self.url, self.kubeconfig = hello["url"], hello["kubeconfig"]

    def request(self, method, path, body=None, content_type="application/json"):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": "Bearer tend-testserver-token", "Content-Type": content_type})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null")

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=30)


def run(args, expect=(0,)):
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode not in expect:
        sys.exit(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def timed(args):
    """Wall time and the child's CPU time (user + system) of one run."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(args)} exited {code} (a no-op diff exits 0):\n{proc.stderr.read().decode()}")
    return elapsed, usage.ru_utime + usage.ru_stime


def serve_charts():
    """chart-repo/ over local HTTP; returns its URL."""
    handler = functools.partial(QuietHandler, directory=os.path.join(REPOS, "chart-repo"))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def repository(path, charts):
    """The example, its chart repositories pointed at `charts` (as tests/cli/flux.rs does)."""
    shutil.copytree(os.path.join(REPOS, "flux2-hub-spoke-example"), path)
    for file in ("deploy/infra-controllers/cert-manager.yaml",
                 "deploy/infra-controllers/ingress-nginx.yaml", "deploy/apps/podinfo.yaml"):
        full = os.path.join(path, file)
        with open(full) as f:
            text = f.read()
        for old in ("oci://ghcr.io/stefanprodan/charts", "https://charts.jetstack.io",
                    "https://kubernetes.github.io/ingress-nginx"):
            text = text.replace(old, charts)
        with open(full, "w") as f:
            f.write(text.replace("  type: oci\n", ""))
    git_tree(path, ORIGIN)


def git_tree(path, origin):
    run(["git", "-C", path, "init", "-q"])
    run(["git", "-C", path, "remote", "add", "origin", origin])
    run(["git", "-C", path, "add", "-A"])
    run(["git", "-C", path, "-c", "user.name=bench", "-c", "user.email=bench@example.com",
         "commit", "-q", "-m", "bench"])


def seed_kubeconfig(hub, env, spoke):
    """`spoke`'s kubeconfig in Secret `env/cluster-kubeconfig` of the hub (Flux's `value`)."""
    hub.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": env}})
    with open(spoke.kubeconfig, "rb") as f:
        value = base64.b64encode(f.read()).decode()
    hub.request("POST", f"/api/v1/namespaces/{env}/secrets", {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "cluster-kubeconfig", "namespace": env}, "data": {"value": value}})


def play_controllers(servers, stop):
    """Give Deployments and Jobs a ready status, as their controllers would."""
    ready = {
        ("apis/apps/v1", "deployments"): lambda o: None if "availableReplicas" in o.get("status", {}) else {
            "observedGeneration": o["metadata"].get("generation"),
            "replicas": o["spec"].get("replicas", 1), "updatedReplicas": o["spec"].get("replicas", 1),
            "readyReplicas": o["spec"].get("replicas", 1), "availableReplicas": o["spec"].get("replicas", 1),
            "conditions": [{"type": "Available", "status": "True"},
                           {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]},
        ("apis/batch/v1", "jobs"): lambda o: None if "succeeded" in o.get("status", {}) else {
            "succeeded": 1, "startTime": "2026-11-25T10:00:00Z", "completionTime": "2026-11-25T10:00:05Z",
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                           {"type": "Complete", "status": "True"}]},
    }
    while not stop.is_set():
        for server in servers:
            for (api, plural), status_of in ready.items():
                for obj in server.request("GET", f"/{api}/{plural}")["items"]:
                    status = status_of(obj)
                    if status is not None:
                        meta = obj["metadata"]
                        server.request("PATCH", f"/{api}/namespaces/{meta['namespace']}/{plural}/{meta['name']}/status",
                                       {"status": status}, "application/merge-patch+json")
        time.sleep(0.05)


def main():
    if PROFILE == "release":
        run(["cargo", "build", "--release", "--quiet", "-p", "tend", "-p", "tend-testserver"])
    runs = int(os.environ.get("RUNS", "11"))
    tmp = tempfile.mkdtemp()
    cache = os.path.join(tmp, "cache")
    flux = os.path.join(tmp, "flux")
    repository(flux, serve_charts())
    hub, *spokes = servers = [Server() for _ in range(3)]
    try:
        for env, spoke in zip(SPOKES, spokes):
            seed_kubeconfig(hub, env, spoke)
        common = ["--kubeconfig", hub.kubeconfig, "--cache-dir", cache]
        stop = threading.Event()
        player = threading.Thread(target=play_controllers, args=(servers, stop), daemon=True)
        player.start()
        run([TEND, "apply", "--repo", flux, "--path", "hub", *common])
        stop.set()
        player.join()
        # B: what each cluster gets, as plain YAML, in a Fleet of the same three clusters.
        plain = os.path.join(tmp, "plain")
        fleet = ["clusters:", "- name: hub", "  context: test", "  path: hub"]
        for env in ("hub", *SPOKES):
            os.makedirs(os.path.join(plain, env))
            only = [] if env == "hub" else ["--units-for-kubeconfig-secret", f"{env}/cluster-kubeconfig"]
            objects = run([TEND, "render", "--repo", flux, "--path", "hub", "--cache-dir", cache,
                           *only]).stdout
            with open(os.path.join(plain, env, "objects.yaml"), "w") as f:
                f.write(objects)
            if env != "hub":
                fleet += [f"- name: {env}", "  kubeconfigSecretRef:", f"    namespace: {env}",
                          "    name: cluster-kubeconfig", "    key: value", f"  path: {env}"]
        git_tree(plain, "https://git.example.com/plain.git")
        fleet_file = os.path.join(tmp, "fleet.yaml")
        with open(fleet_file, "w") as f:
            f.write("apiVersion: tend.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: bench\nspec:\n")
            f.write("".join(f"  {line}\n" for line in fleet))
        a = [TEND, "diff", "--repo", flux, "--path", "hub", *common]
        b = [TEND, "diff", "--repo", plain, "--fleet", fleet_file, *common]
        timed(a), timed(b)  # warm: both must already be no-ops
        if os.environ.get("KEEP"):
            # Leave the servers up for profiling by hand: A's and B's commands, then wait.
            print("A:", " ".join(a), "\nB:", " ".join(b), "\nremove", os.environ["KEEP"], "to stop", flush=True)
            while os.path.exists(os.environ["KEEP"]):
                time.sleep(1)
        if os.environ.get("SHOW"):
            for args in (a, b):
                print(run([*args, "-v", *os.environ.get("SHOW_ARGS", "").split()]).stderr[-int(os.environ["SHOW"]):])
        if os.environ.get("CALLGRIND"):
            for name, args in (("A", a), ("B", b)):
                out = run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *args]).stderr
                refs = [line.split()[-1] for line in out.splitlines() if "I   refs:" in line]
                print(f"| {name} instructions (callgrind, one no-op diff) | {refs[-1] if refs else '?'} |")
        pairs = [(timed(a), timed(b)) for _ in range(runs)]
    finally:
        for server in servers:
            server.close()
    wall_a = statistics.median(p[0][0] for p in pairs)
    wall_b = statistics.median(p[1][0] for p in pairs)
    cpu_a = statistics.median(p[0][1] for p in pairs)
    cpu_b = statistics.median(p[1][1] for p in pairs)
    ratios = [p[0][0] / p[1][0] for p in pairs]
    print(f"| A (Flux, --path hub) | {wall_a * 1000:.0f} ms | tend CPU {cpu_a * 1000:.0f} ms |")
    print(f"| B (plain YAML, Fleet) | {wall_b * 1000:.0f} ms | tend CPU {cpu_b * 1000:.0f} ms |")
    print(f"| A/B per pair | median {statistics.median(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}), {runs} pairs | load {os.getloadavg()[0]:.1f} |")


if __name__ == "__main__":
    main()
