#!/usr/bin/env python3
"""Benchmark a run over several clusters (README "A fleet of clusters", issue 36).

Three test API servers (every request delayed by TEND_TESTSERVER_LATENCY_MS, default 2 ms)
hold the same 1,010-object site (bench/gen_site.py). Times, as the median of --runs:
- a no-op `tend diff` of one cluster (`--kubeconfig` of one server), and of the three in one
  run (`--context a --context b --context c`, run in parallel); the ratio should stay <= 1.3;
- `tend status` of the three (should take <= 0.1 s);
and the size of `--report-html` for a diff of the 10,020-object site (10,020 creates, then
10,020 unchanged after an apply).

    python3 bench/fleet.py [--runs 5]

Uses target/release (or $CARGO_TARGET_DIR/release), built here.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
TEND = os.path.join(TARGET, "release", "tend")
SERVER = os.path.join(TARGET, "release", "tend-testserver")


class Server:
    def __init__(self):
        env = dict(os.environ)
        env.setdefault("TEND_TESTSERVER_LATENCY_MS", "2")
        self.proc = subprocess.Popen([SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        hello = json.loads(self.proc.stdout.readline())
        self.url, self.kubeconfig = hello["url"], hello["kubeconfig"]

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=60)


def kubeconfig(path, servers):
    names = ["a", "b", "c"][: len(servers)]
    text = "apiVersion: v1\nkind: Config\nclusters:\n"
    text += "".join(f"- name: {n}\n  cluster:\n    server: {s.url}\n" for n, s in zip(names, servers))
    text += "users:\n- name: u\n  user:\n    token: t\ncontexts:\n"
    text += "".join(f"- name: {n}\n  context:\n    cluster: {n}\n    user: u\n" for n in names)
    text += "current-context: a\n"
    with open(path, "w") as f:
        f.write(text)


def timed(args, ok=(0, 1)):
    start = time.perf_counter()
    proc = subprocess.run([TEND, *args], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        sys.exit(f"tend {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return elapsed


def median(args, runs):
    return statistics.median(timed(args) for _ in range(runs))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    a = p.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--workspace"], cwd=ROOT, check=True)
    tmp = tempfile.mkdtemp()
    site = os.path.join(tmp, "site")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_site.py"), site,
                    "--namespaces", "10", "--configmaps", "50"], check=True, capture_output=True)
    servers = [Server() for _ in range(3)]
    try:
        config = os.path.join(tmp, "kubeconfig")
        kubeconfig(config, servers)
        three = ["--kubeconfig", config, "--context", "a", "--context", "b", "--context", "c"]
        timed(["apply", "--repo", site, *three], ok=(0,))
        one = median(["diff", "--repo", site, "--kubeconfig", servers[0].kubeconfig], a.runs)
        fleet = median(["diff", "--repo", site, *three], a.runs)
        status = median(["status", *three], a.runs)
        print(f"no-op diff, 1,010 objects, 1 cluster:  {one:.3f} s")
        print(f"no-op diff, 1,010 objects, 3 clusters: {fleet:.3f} s ({fleet / one:.2f}x)")
        print(f"tend status, 3 clusters:               {status:.3f} s")
    finally:
        for s in servers:
            s.close()
    big = os.path.join(tmp, "big")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_site.py"), big,
                    "--namespaces", "20", "--configmaps", "250"], check=True, capture_output=True)
    server = Server()
    try:
        html = os.path.join(tmp, "report.html")
        args = ["--repo", big, "--kubeconfig", server.kubeconfig, "--report-html", html]
        timed(["diff", *args])
        created = os.path.getsize(html)
        timed(["apply", *args], ok=(0,))
        timed(["diff", *args])
        unchanged = os.path.getsize(html)
        print(f"--report-html, 10,020 objects: {created / 1e6:.1f} MB (all to create), {unchanged / 1e6:.1f} MB (all unchanged)")
    finally:
        server.close()


if __name__ == "__main__":
    main()
