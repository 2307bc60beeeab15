#!/usr/bin/env python3
"""Benchmark tend's reconcile engine on a generated site of 1,010 objects.

10 namespaces, each 50 ConfigMaps, 25 Deployments (each mounting a ConfigMap), 25 Services.
Reports API requests and wall time for: initial apply (at --concurrency 16 and 1), no-op
diff, no-op apply, and apply after changing 10 ConfigMaps.

    python3 bench/engine.py                  # against the test API server (started here)
    KUBECONFIG=~/.kube/config python3 bench/engine.py   # against a real cluster

Against the test API server every request is delayed by TEND_TESTSERVER_LATENCY_MS
(default 2 ms) to stand in for a network round trip. Against a real cluster the script also
times `kubectl apply --server-side` and `kubectl diff --server-side` on the same files and
prints the ratios. It creates namespaces bench-XX and bench1-XX; delete them afterwards.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The release binaries where cargo puts them (`CARGO_TARGET_DIR`, else `target/`).
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
TEND = os.path.join(TARGET, "release", "tend")


class Server:
    """The test API server binary, driven over stdin/stdout."""

    def __init__(self):
        env = dict(os.environ)
        env.setdefault("TEND_TESTSERVER_LATENCY_MS", "2")
        self.latency = env["TEND_TESTSERVER_LATENCY_MS"]
        self.proc = subprocess.Popen(
            [os.path.join(TARGET, "release", "tend-testserver")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )
        hello = json.loads(self.proc.stdout.readline())
        self.kubeconfig = hello["kubeconfig"]

    def call(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        # A server that held 10,000 objects (bench/scale.py) takes a moment to stop.
        self.proc.wait(timeout=30)


def gen(site, prefix, change=0, revision="1"):
    subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "gen_site.py"), site, "--namespaces", "10",
         "--configmaps", "50", "--prefix", prefix, "--change", str(change), "--revision", revision],
        check=True, capture_output=True,
    )


def tend(args, kubeconfig, site, applyset):
    cmd = [TEND, *args, "--repo", site, "--kubeconfig", kubeconfig, "--applyset", applyset]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr}")
    m = re.search(r"(\d+) API requests \((\d+) reads, (\d+) writes, (\d+) dry runs\)", proc.stderr)
    counts = tuple(int(x) for x in m.groups()) if m else None
    summary = proc.stderr.strip().splitlines()[-1]
    return elapsed, counts, summary


def timed(cmd):
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return time.perf_counter() - start


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet", "--workspace"], cwd=ROOT, check=True)
    real = os.environ.get("KUBECONFIG")
    servers = []
    if real:
        kube16 = kube1 = real
        target = f"cluster from KUBECONFIG={real}"
    else:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "tend-testserver", "--bin", "tend-testserver"], cwd=ROOT, check=True)
        servers = [Server(), Server()]
        kube16, kube1 = servers[0].kubeconfig, servers[1].kubeconfig
        target = f"test API server (TEND_TESTSERVER_LATENCY_MS={servers[0].latency})"
    tmp = tempfile.mkdtemp()
    rows = []

    def row(case, result, server=None):
        elapsed, counts, summary = result
        total = f"{counts[0]} ({counts[1]} reads, {counts[2]} writes, {counts[3]} dry runs)" if counts else "?"
        seen = ""
        if server is not None:
            stats = server.call("stats")
            seen = f"{stats['total']} seen by server, {stats['mutating']} mutating"
            server.call("clear")
        rows.append((case, f"{elapsed:.2f} s", total, seen))
        print(f"{case}: {elapsed:.2f} s, {total} {seen}\n    {summary}", file=sys.stderr)

    try:
        site = os.path.join(tmp, "site")
        gen(site, "bench")
        s16 = servers[0] if servers else None
        if s16:
            s16.call("clear")
        row("initial apply, --concurrency 16", tend(["apply", "--concurrency", "16"], kube16, site, "bench"), s16)
        row("no-op diff", tend(["diff"], kube16, site, "bench"), s16)
        row("no-op apply", tend(["apply"], kube16, site, "bench"), s16)
        gen(site, "bench", change=10, revision="2")
        row("apply after changing 10 ConfigMaps", tend(["apply"], kube16, site, "bench"), s16)

        site1 = os.path.join(tmp, "site1")
        gen(site1, "bench1")
        s1 = servers[1] if servers else None
        row("initial apply, --concurrency 1", tend(["apply", "--concurrency", "1"], kube1, site1, "bench1"), s1)
        ratio = float(rows[4][1].split()[0]) / float(rows[0][1].split()[0])
        print(f"\nconcurrency 16 vs 1 on initial apply: {ratio:.1f}x faster", file=sys.stderr)

        if real and shutil.which("kubectl"):
            gen(site, "bench")
            k_apply = timed(["kubectl", "apply", "--server-side", "-R", "-f", site])
            k_diff = timed(["kubectl", "diff", "--server-side", "-R", "-f", site])
            t_diff = tend(["diff"], kube16, site, "bench")[0]
            print(f"kubectl apply --server-side (no-op): {k_apply:.2f} s", file=sys.stderr)
            print(f"kubectl diff --server-side: {k_diff:.2f} s; tend diff: {t_diff:.2f} s; ratio {k_diff / t_diff:.1f}x", file=sys.stderr)
    finally:
        for s in servers:
            s.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nTarget: {target}\n")
    print("| case | wall time | requests (tend's count) | test server's count |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
