#!/usr/bin/env python3
"""Scale benchmark: the reconcile engine at 10,000 objects, peak memory and request shape.

Generates a site with bench/gen_site.py (20 namespaces x 250 ConfigMaps, 125 Deployments
each mounting a ConfigMap and 125 Services per namespace, plus the 20 Namespaces: 10,020
objects), starts the test API server binary (target/release/tend-testserver, every request
delayed by TEND_TESTSERVER_LATENCY_MS, default 2 ms), and runs the release `tend` binary:

    initial apply, no-op diff, no-op apply, apply after changing 10 ConfigMaps, render

For each run: wall time, peak RSS of the tend process (os.wait4 rusage, like
bench/render.py), and requests (tend's own count from its summary line, cross-checked with
the server's log). The no-op diff must stay O(kinds x namespaces): the script also runs the
same no-op diff on a 1,010-object site (10 namespaces x 50 ConfigMaps) and checks that both
counts fit  LISTs(kinds x namespaces) + a constant  with the same constant, i.e. the
request count grows with namespaces, not with objects.

    python3 bench/scale.py            # prints the rows for BENCHMARKS.md

Exit status 1 if peak memory exceeds 300 MB or the request shape is off.
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
TEND = os.path.join(ROOT, "target", "release", "tend")
MEMORY_TARGET_MB = 300
# Issue 12: a no-op diff of the 10,020-object site.
NOOP_TIME_TARGET_S = 1.0
NOOP_MEMORY_TARGET_MB = 120


# The test API server driver is shared with bench/engine.py.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine import Server  # noqa: E402

def gen(site, namespaces, configmaps, prefix, change=0, revision="1"):
    out = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "gen_site.py"), site, "--namespaces", str(namespaces),
         "--configmaps", str(configmaps), "--prefix", prefix, "--change", str(change), "--revision", revision],
        check=True, capture_output=True, text=True,
    )
    return int(out.stdout.strip())


def measured(cmd):
    """Run cmd; return (exit code, wall seconds, peak RSS in MiB, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        return (os.waitstatus_to_exitcode(status), elapsed, usage.ru_maxrss / 1024,
                out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def tend(args, server, site, applyset):
    cmd = [TEND, *args, "--repo", site, "--kubeconfig", server.kubeconfig, "--applyset", applyset]
    server.call("clear")
    code, elapsed, rss, _, stderr = measured(cmd)
    if code not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({code}):\n{stderr[-4000:]}")
    m = re.search(r"(\d+) API requests \((\d+) reads, (\d+) writes, (\d+) dry runs\)", stderr)
    counts = tuple(int(x) for x in m.groups()) if m else None
    stats = server.call("stats")
    summary = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    return {"code": code, "elapsed": elapsed, "rss": rss, "counts": counts, "server": stats, "summary": summary}


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet", "--workspace"], cwd=ROOT, check=True)
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "tend-testserver", "--bin", "tend-testserver"],
                   cwd=ROOT, check=True)
    tmp = tempfile.mkdtemp()
    server = Server()
    small_server = Server()
    rows = []
    failures = []
    try:
        site = os.path.join(tmp, "site")
        namespaces, per_ns = 20, 250
        objects = gen(site, namespaces, per_ns, "scale")

        def row(case, r):
            counts = r["counts"]
            total = f"{counts[0]} ({counts[1]} reads, {counts[2]} writes, {counts[3]} dry runs)" if counts else "?"
            seen = f"{r['server']['total']}, {r['server']['mutating']} mutating"
            rows.append((case, f"{r['elapsed']:.2f} s", f"{r['rss']:.1f} MiB", total, seen))
            print(f"{case}: {r['elapsed']:.2f} s, peak {r['rss']:.1f} MiB, {total}; server: {seen}\n    {r['summary']}",
                  file=sys.stderr)
            if r["rss"] > MEMORY_TARGET_MB:
                failures.append(f"{case}: peak memory {r['rss']:.1f} MiB > {MEMORY_TARGET_MB} MB")

        row(f"initial apply ({objects} objects)", tend(["apply"], server, site, "scale"))
        diff = tend(["diff"], server, site, "scale")
        row("no-op diff", diff)
        row("no-op apply", tend(["apply"], server, site, "scale"))
        gen(site, namespaces, per_ns, "scale", change=10, revision="2")
        row("apply after changing 10 ConfigMaps", tend(["apply"], server, site, "scale"))
        code, elapsed, rss, _, _ = measured([TEND, "render", "--repo", site])
        rows.append(("render (offline)", f"{elapsed:.2f} s", f"{rss:.1f} MiB", "0", "-"))
        if rss > MEMORY_TARGET_MB:
            failures.append(f"render: peak memory {rss:.1f} MiB")

        # Request shape: the same no-op diff on a tenth of the objects and half the namespaces.
        small = os.path.join(tmp, "small")
        small_ns = 10
        small_objects = gen(small, small_ns, 50, "small")
        tend(["apply"], small_server, small, "small")
        small_diff = tend(["diff"], small_server, small, "small")
        row(f"no-op diff, {small_objects} objects (for comparison)", small_diff)
        big_total, small_total = diff["counts"][0], small_diff["counts"][0]
        # Members are LISTed by label, one LIST per kind across namespaces (plus a page per 500
        # members), so the count grows with kinds and pages, not with namespaces or objects.
        shape = (f"no-op diff: {small_total} requests for {small_objects} objects in {small_ns} namespaces, "
                 f"{big_total} for {objects} objects in {namespaces} namespaces")
        print(shape, file=sys.stderr)
        if diff["counts"][2] or diff["counts"][3]:
            failures.append("a no-op diff made writes or dry runs: " + shape)
        if diff["elapsed"] > NOOP_TIME_TARGET_S:
            failures.append(f"no-op diff of {objects} objects: {diff['elapsed']:.2f} s > {NOOP_TIME_TARGET_S} s")
        if diff["rss"] > NOOP_MEMORY_TARGET_MB:
            failures.append(f"no-op diff of {objects} objects: {diff['rss']:.1f} MiB > {NOOP_MEMORY_TARGET_MB} MiB")
        if diff["server"]["mutating"]:
            failures.append(f"no-op diff made {diff['server']['mutating']} mutating requests")
    finally:
        server.close()
        small_server.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nTest API server, TEND_TESTSERVER_LATENCY_MS={server.latency}\n")
    print("| case | wall time | peak memory (tend) | requests (tend's count) | test server's count |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\n{shape}")
    if failures:
        print("\nFAILED:\n" + "\n".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
