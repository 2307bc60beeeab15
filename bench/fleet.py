#!/usr/bin/env python3
"""Benchmark a run over several clusters (README "A fleet of clusters", issue 36).

Three test API servers (every request delayed by TEND_TESTSERVER_LATENCY_MS, default 2 ms)
hold the same 1,010-object site (bench/gen_site.py). Times, as the median of --runs:
- a no-op `tend diff` of one cluster (`--kubeconfig` of one server), and of the three in one
  run (`--context a --context b --context c`, run in parallel); the ratio should stay <= 1.3;
  first with nothing kept from the run before (`<cache dir>/settled` removed before each run:
  every LIST item read in full), then as usual (what the run before settled is kept, so
  unchanged LIST items are read no further than their identity);
- `tend status` of the three (should take <= 0.1 s);
and the size of `--report-html` for a diff of the 10,020-object site (10,020 creates, then
10,020 unchanged after an apply). Each time comes with tend's CPU time (user + system, from
wait4) and the three test servers' (from /proc, over the same run): on a machine of few cores
the servers' work competes with tend's, which real clusters' does not.

    python3 bench/fleet.py [--runs 5] [--no-html]
    TARGET=profiling python3 bench/fleet.py   # another cargo profile's binaries, not rebuilt

Uses target/release (or $CARGO_TARGET_DIR/release), built here.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
PROFILE = os.environ.get("TARGET", "release")
TEND = os.path.join(TARGET, PROFILE, "tend")
SERVER = os.path.join(TARGET, PROFILE, "tend-testserver")
TICK = os.sysconf("SC_CLK_TCK")
# tend's cache directory for the bench's runs (kept renders, what the last run settled).
CACHE = tempfile.mkdtemp(prefix="tend-fleet-cache-")
os.environ["TEND_CACHE_DIR"] = CACHE


class Server:
    def __init__(self):
        env = dict(os.environ)
        env.setdefault("TEND_TESTSERVER_LATENCY_MS", "2")
        self.proc = subprocess.Popen([SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        hello = json.loads(self.proc.stdout.readline())
        self.url, self.kubeconfig = hello["url"], hello["kubeconfig"]

    def cpu(self):
        """CPU seconds (user + system) the server has used so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK

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


def timed(args, ok=(0, 1), servers=()):
    """Wall time, tend's CPU time and the servers' CPU time of one run."""
    before = sum(s.cpu() for s in servers)
    start = time.perf_counter()
    proc = subprocess.Popen([TEND, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        sys.exit(f"tend {' '.join(args)} failed ({code}):\n{proc.stderr.read().decode()}")
    return elapsed, usage.ru_utime + usage.ru_stime, sum(s.cpu() for s in servers) - before


def median(args, runs, servers, before_each=lambda: None):
    """Medians of wall time, tend's CPU and the servers' CPU over `runs`."""
    samples = []
    for _ in range(runs):
        before_each()
        samples.append(timed(args, servers=servers))
    return tuple(statistics.median(sample[i] for sample in samples) for i in range(3))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--no-html", action="store_true", help="skip the 10,020-object HTML report")
    a = p.parse_args()
    if PROFILE == "release":
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "tend", "-p", "tend-testserver"],
                       cwd=ROOT, check=True)
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
        single = ["diff", "--repo", site, "--kubeconfig", servers[0].kubeconfig]
        settled = os.path.join(CACHE, "settled")
        forget = lambda: shutil.rmtree(settled, ignore_errors=True)  # noqa: E731
        # Nothing settled: every LIST item read in full (a first run, or a fresh cache).
        one_cold = median(single, a.runs, servers, forget)
        fleet_cold = median(["diff", "--repo", site, *three], a.runs, servers, forget)
        # What the run before settled is kept (README "Reconcile"): the usual case.
        one = median(single, a.runs, servers)
        fleet = median(["diff", "--repo", site, *three], a.runs, servers)
        status = median(["status", *three], a.runs, servers)
        row = "{:<52} {:.3f} s  tend CPU {:.3f} s  servers' CPU {:.3f} s"
        print(row.format("no-op diff, 1,010 objects, 1 cluster, nothing kept:", *one_cold))
        print(row.format("no-op diff, 1,010 objects, 3 clusters, nothing kept:", *fleet_cold)
              + f"  ({fleet_cold[0] / one_cold[0]:.2f}x)")
        print(row.format("no-op diff, 1,010 objects, 1 cluster:", *one))
        print(row.format("no-op diff, 1,010 objects, 3 clusters:", *fleet) + f"  ({fleet[0] / one[0]:.2f}x)")
        print(row.format("tend status, 3 clusters:", *status))
        print(f"load average before the last run: {os.getloadavg()[0]:.1f}")
    finally:
        for s in servers:
            s.close()
    if a.no_html:
        return
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
