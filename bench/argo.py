#!/usr/bin/env python3
"""Benchmark what reading an Argo CD repository costs a no-op `tend diff`.

The app-of-apps fixture (tests/fixtures/argo-app-of-apps: a root Application, four child
Applications with plain, kustomize, Helm and Jsonnet sources; its two hook Jobs left out, so
the apply needs no controller to complete them) is read as Argo CD would (A), and the same
objects, as `tend render` prints them, are read as plain YAML (B). Each is applied to its own
test API server (2 ms latency, as in bench/engine.py); then no-op diffs of A and B run in turn,
A B A B ..., and the ratio A/B is taken pair by pair (target: at most 1.3).

B is a git work tree too, as A is (its origin is what the Applications name): reading a work
tree's commit and origin with libgit2 costs ~25 ms whatever the tree holds (PLAIN_GIT=0 keeps
B a plain directory, to see that cost).

    python3 bench/argo.py            # 11 pairs
    RUNS=21 python3 bench/argo.py
    TARGET=debug python3 bench/argo.py   # the debug build (a rough figure, no release build)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE = os.environ.get("TARGET", "release")
TARGET_DIR = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
TEND = os.path.join(TARGET_DIR, PROFILE, "tend")
SERVER = os.path.join(TARGET_DIR, PROFILE, "tend-testserver")
URL = "https://git.example.com/platform/deploy.git"


class Server:
    """The test API server binary, driven over stdin/stdout."""

    def __init__(self):
        env = dict(os.environ)
        env.setdefault("TEND_TESTSERVER_LATENCY_MS", "2")
        self.proc = subprocess.Popen([SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)
        self.kubeconfig = json.loads(self.proc.stdout.readline())["kubeconfig"]

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
    start = time.perf_counter()
    run(args)
    return time.perf_counter() - start


def main():
    if PROFILE == "release":
        run(["cargo", "build", "--release", "--quiet", "--workspace"])
        run(["cargo", "build", "--release", "--quiet", "-p", "tend-testserver", "--bin",
             "tend-testserver"])
    tmp = tempfile.mkdtemp()
    argo = os.path.join(tmp, "argo")
    shutil.copytree(os.path.join(ROOT, "tests", "fixtures", "argo-app-of-apps"), argo)
    for hook in ("migrate.yaml", "smoke-test.yaml"):
        os.remove(os.path.join(argo, "workloads", "plain", hook))
    run(["git", "-C", argo, "init", "-q"])
    run(["git", "-C", argo, "remote", "add", "origin", URL])
    plain = os.path.join(tmp, "plain")
    os.makedirs(plain)
    rendered = run([TEND, "render", "--repo", argo, "--path", "bootstrap"]).stdout
    with open(os.path.join(plain, "objects.yaml"), "w") as f:
        f.write(rendered)
    if os.environ.get("PLAIN_GIT", "1") == "1":
        # Both read a git work tree: what tend reads of one (its commit, its origin) costs
        # tens of milliseconds with libgit2, whatever the tree holds.
        run(["git", "-C", plain, "init", "-q"])
        run(["git", "-C", plain, "remote", "add", "origin", URL])
    servers = [Server(), Server()]
    try:
        a = [TEND, "diff", "--repo", argo, "--path", "bootstrap", "--kubeconfig",
             servers[0].kubeconfig]
        b = [TEND, "diff", "--repo", plain, "--kubeconfig", servers[1].kubeconfig]
        run([TEND, "apply", *a[2:]])
        run([TEND, "apply", *b[2:]])
        ratios, times_a, times_b = [], [], []
        for _ in range(int(os.environ.get("RUNS", "11"))):
            ta, tb = timed(a), timed(b)
            times_a.append(ta)
            times_b.append(tb)
            ratios.append(ta / tb)
        print(f"| no-op diff, Argo CD app of apps ({PROFILE} build) | "
              f"{statistics.median(times_a) * 1000:.0f} ms |")
        print(f"| no-op diff, the same objects as plain YAML | "
              f"{statistics.median(times_b) * 1000:.0f} ms |")
        print(f"| ratio (median of pairs; target <= 1.3) | {statistics.median(ratios):.2f} |")
    finally:
        for server in servers:
            server.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
