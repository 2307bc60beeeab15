#!/usr/bin/env python3
"""Measure how much a first apply prints (issue 11: output sized for CI logs).

Generates the 1,010-object site of bench/gen_site.py (10 namespaces of 50 ConfigMaps,
25 Deployments, 25 Services) and, on an empty cluster, prints the size of:

- `tend diff --show-creates` (every created object's body, as tend printed before issue 11),
- `tend diff -o markdown --show-creates` and `tend diff -o json`,
- `tend apply` text output of the first apply: the figure issue 11 bounds at 150 KB.

    python3 bench/output.py                       # against the test API server (started here)
    KUBECONFIG=~/.kube/config python3 bench/output.py   # against a real cluster
    TEND_BENCH_PROFILE=debug python3 bench/output.py    # use target/debug (sizes are the same)

Against a real cluster it creates namespaces out-XX; delete them afterwards. Exits 1 when the
apply output is over the bound.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROFILE = os.environ.get("TEND_BENCH_PROFILE", "release")
BIN = os.path.join(ROOT, "target", PROFILE)
BOUND = 150 * 1024


def build(*args):
    flags = ["--release"] if PROFILE == "release" else []
    subprocess.run(["cargo", "build", "--quiet", *flags, *args], cwd=ROOT, check=True)


def tend(args, kubeconfig, site):
    cmd = [os.path.join(BIN, "tend"), *args, "--repo", site, "--kubeconfig", kubeconfig,
           "--applyset", "output", "--color", "never"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc.stdout, proc.stderr


def main():
    build("--bin", "tend", "-p", "tend")
    real = os.environ.get("KUBECONFIG")
    server = None
    if real:
        kubeconfig = real
    else:
        build("-p", "tend-testserver", "--bin", "tend-testserver")
        server = subprocess.Popen([os.path.join(BIN, "tend-testserver")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        kubeconfig = json.loads(server.stdout.readline())["kubeconfig"]
    tmp = tempfile.mkdtemp()
    try:
        site = os.path.join(tmp, "site")
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_site.py"), site,
                        "--namespaces", "10", "--configmaps", "50", "--prefix", "out"],
                       check=True, capture_output=True)
        rows = []
        bodies, _ = tend(["diff", "--show-creates"], kubeconfig, site)
        rows.append(("diff --show-creates (bodies)", bodies))
        markdown, _ = tend(["diff", "-o", "markdown", "--show-creates"], kubeconfig, site)
        rows.append(("diff -o markdown --show-creates", markdown))
        report, _ = tend(["diff", "-o", "json"], kubeconfig, site)
        rows.append(("diff -o json", report))
        applied, log = tend(["apply"], kubeconfig, site)
        rows.append(("apply (first apply, text)", applied))
        rows.append(("apply stderr (log lines)", log))
        created = json.loads(report)["summary"]["create"]
        print(f"first apply of {created} objects:")
        for name, text in rows:
            print(f"  {name:34} {len(text.encode()):>10,} bytes {len(text):>10,} characters {text.count(chr(10)):>8,} lines")
        size = len(applied.encode())
        verdict = "under" if size < BOUND else "OVER"
        print(f"apply text output: {size / 1024:.1f} KB, {verdict} the {BOUND // 1024} KB bound")
        if size >= BOUND:
            sys.exit(1)
    finally:
        if server:
            server.stdin.write("quit\n")
            server.stdin.flush()
            server.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
