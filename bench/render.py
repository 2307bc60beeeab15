#!/usr/bin/env python3
"""Benchmark `tend render` on a generated site of ~10,000 objects: wall time and peak memory.

Usage: bench/render.py [--objects-per-namespace 500] [--runs 5]
Builds tend in release mode first. Prints a Markdown table row for BENCHMARKS.md.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    runs = int(os.environ.get("RUNS", "5"))
    subprocess.run(["cargo", "build", "--release", "--quiet", "--workspace"], cwd=ROOT, check=True)
    tend = os.path.join(ROOT, "target", "release", "tend")
    with tempfile.TemporaryDirectory() as tmp:
        site = os.path.join(tmp, "site")
        count = subprocess.run(
            [sys.executable, os.path.join(ROOT, "bench", "gen_site.py"), site, "--namespaces", "20", "--configmaps", "250"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        times = []
        peak_kb = 0
        for _ in range(runs):
            err_path = os.path.join(tmp, "stderr")
            with open(err_path, "w") as err:
                start = time.perf_counter()
                proc = subprocess.Popen([tend, "render", "--repo", site], stdout=subprocess.DEVNULL, stderr=err)
                # wait4 gives this child's own peak RSS (KiB on Linux), not the cargo build's.
                _, status, usage = os.wait4(proc.pid, 0)
                times.append(time.perf_counter() - start)
            stderr = open(err_path).read()
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"tend render failed: {stderr}")
            peak_kb = max(peak_kb, usage.ru_maxrss)
        summary = stderr.strip().splitlines()[-1]
        print(f"objects: {count}")
        print(f"tend: {summary}")
        print(f"wall time: median {statistics.median(times):.3f} s, min {min(times):.3f} s, max {max(times):.3f} s over {runs} runs")
        print(f"peak memory: {peak_kb / 1024:.1f} MiB")
        print(f"| render 10k objects | {count} | {statistics.median(times):.3f} s | {peak_kb / 1024:.1f} MiB |")


if __name__ == "__main__":
    main()
