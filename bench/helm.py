#!/usr/bin/env python3
"""Benchmark tend's native Helm rendering (issue 23).

1. Render: `tend render` of one HelmChart of the corpus's ingress-nginx chart (default values,
   19 objects), whole process, against `tend render` of a site holding one Namespace (the
   process floor: start, walk, print). Wall and cpu time, peak RSS (wait4's ru_maxrss). With
   `helm` on PATH, `helm template` of the same chart is timed the same way.
2. No-op diff: a site of HelmChart releases (the four corpus charts, default values, RELEASES
   releases of each, each release in its own namespace) against the same objects as plain
   YAML (what `tend render --show-secrets` prints of the chart site, HelmChart objects left
   out). Each site is applied to its own release test API server (`tend-testserver`, 2 ms
   latency), then a no-op `tend diff` of the charts (A) and of the plain YAML (B) run in turn,
   A B A B ..., the ratio A/B taken pair by pair (target: at most 1.2).

    python3 bench/helm.py              # both; RUNS=21 RELEASES=10 by default
    CHARTS=../shared/helm-corpus/charts python3 bench/helm.py
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
TEND = os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"),
                    "release", "tend")
CHARTS = os.environ.get("CHARTS", os.path.join(ROOT, "..", "shared", "helm-corpus", "charts"))
RUNS = int(os.environ.get("RUNS", "21"))
RELEASES = int(os.environ.get("RELEASES", "10"))
CHART_NAMES = ["ingress-nginx", "podinfo", "kube-state-metrics", "prometheus-node-exporter"]


def timed(cmd, env=None):
    """(wall s, cpu s, peak MiB, exit code) of one run of `cmd`, output thrown away."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode()
    code = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code, err


def summary(name, runs):
    walls = [r[0] for r in runs]
    cpus = [r[1] for r in runs]
    peak = max(r[2] for r in runs)
    print(f"| {name} | {statistics.median(walls) * 1000:.1f} ms (min {min(walls) * 1000:.1f}) "
          f"| {statistics.median(cpus) * 1000:.1f} ms | {peak:.1f} MiB |")


def release(name, namespace, chart_dir, values=""):
    return (f"apiVersion: tend.dev/v1alpha1\nkind: HelmChart\nmetadata:\n  name: {name}\n"
            f"  namespace: {namespace}\nspec:\n  chart: {chart_dir}\n{values}")


def render_bench(tmp):
    site = os.path.join(tmp, "render-site")
    os.makedirs(site)
    shutil.copytree(os.path.join(CHARTS, "ingress-nginx"), os.path.join(site, "chart"))
    with open(os.path.join(site, "release.yaml"), "w") as f:
        f.write(release("rel", "ns1", "chart"))
    floor = os.path.join(tmp, "floor-site")
    os.makedirs(floor)
    with open(os.path.join(floor, "ns.yaml"), "w") as f:
        f.write("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns1\n")
    chart = [timed([TEND, "render", "--repo", site]) for _ in range(RUNS)]
    if chart[0][3] != 0:
        sys.exit(f"tend render of the chart failed: {chart[0][4]}")
    base = [timed([TEND, "render", "--repo", floor]) for _ in range(RUNS)]
    print(f"\n{RUNS} runs each, whole process (median, min; cpu median; peak RSS):\n")
    print("| case | wall | cpu | peak |\n|---|---|---|---|")
    summary("tend render, ingress-nginx chart (19 objects)", chart)
    summary("tend render, one Namespace (process floor)", base)
    helm = shutil.which("helm")
    if helm:
        runs = [timed([helm, "template", "rel", os.path.join(CHARTS, "ingress-nginx"),
                       "--namespace", "ns1", "--kube-version", "v1.33.0"]) for _ in range(RUNS)]
        summary("helm template, same chart", runs)
    else:
        print("(no helm on PATH: helm template not timed)")


class Server:
    """The release test API server, driven over stdin/stdout (as bench/engine.py does)."""

    def __init__(self):
        env = dict(os.environ)
        env.setdefault("TEND_TESTSERVER_LATENCY_MS", "2")
        self.proc = subprocess.Popen([os.path.join(os.path.dirname(TEND), "tend-testserver")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.kubeconfig = json.loads(self.proc.stdout.readline())["kubeconfig"]

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=30)


def run(cmd, ok=(0,)):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode not in ok:
        sys.exit(f"{' '.join(cmd)} exited {out.returncode}:\n{out.stderr[-3000:]}")
    return out.stdout


def diff_bench(tmp):
    charts = os.path.join(tmp, "charts-site")
    os.makedirs(os.path.join(charts, "charts"))
    for name in CHART_NAMES:
        shutil.copytree(os.path.join(CHARTS, name), os.path.join(charts, "charts", name))
    with open(os.path.join(charts, "releases.yaml"), "w") as f:
        docs = []
        for i in range(RELEASES):
            for name in CHART_NAMES:
                docs.append(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}-{i}\n")
                # Without the kinds the release test API server does not serve (IngressClass,
                # admission webhooks); the IngressClass is cluster-scoped anyway.
                values = ("  values:\n    controller:\n      ingressClassResource:\n        enabled: false\n"
                          "      admissionWebhooks:\n        enabled: false\n"
                          if name == "ingress-nginx" else "")
                docs.append(release(f"r{i}", f"{name}-{i}", f"charts/{name}", values))
        f.write("---\n".join(docs))
    rendered = run([TEND, "render", "--repo", charts, "--show-secrets", "-o", "json"])
    items = [o for o in json.loads(rendered)["items"] if o["kind"] != "HelmChart"]
    plain = os.path.join(tmp, "plain-site")
    os.makedirs(plain)
    # YAML (tend reads .yaml and .yml files), one document per object.
    plain_yaml = run([TEND, "render", "--repo", charts, "--show-secrets", "-o", "yaml"])
    docs = [d for d in plain_yaml.split("\n---\n") if "kind: HelmChart\n" not in d]
    with open(os.path.join(plain, "objects.yaml"), "w") as f:
        f.write("\n---\n".join(docs))
    crds = run([TEND, "crds"])
    with open(os.path.join(charts, "tend-crds.yaml"), "w") as f:
        f.write(crds)
    a_server, b_server = Server(), Server()
    try:
        a = [TEND, "diff", "--repo", charts, "--kubeconfig", a_server.kubeconfig, "--applyset", "helm-bench"]
        b = [TEND, "diff", "--repo", plain, "--kubeconfig", b_server.kubeconfig, "--applyset", "helm-bench"]
        # The HelmChart CRD first, then everything.
        crd_only = os.path.join(tmp, "crds-site")
        os.makedirs(crd_only)
        shutil.copy(os.path.join(charts, "tend-crds.yaml"), crd_only)
        run([TEND, "apply", "--repo", crd_only, "--kubeconfig", a_server.kubeconfig, "--applyset", "helm-crds"])
        run([TEND, "apply", "--repo", charts, "--kubeconfig", a_server.kubeconfig, "--applyset", "helm-bench"])
        run([TEND, "apply", "--repo", plain, "--kubeconfig", b_server.kubeconfig, "--applyset", "helm-bench"])
        for cmd in (a, b):
            run(cmd)  # in sync: exit 0
        ratios, a_runs, b_runs = [], [], []
        for _ in range(RUNS):
            ra, rb = timed(a), timed(b)
            if ra[3] != 0 or rb[3] != 0:
                sys.exit(f"a no-op diff was not clean: {ra[4]}{rb[4]}")
            a_runs.append(ra)
            b_runs.append(rb)
            ratios.append(ra[0] / rb[0])
        print(f"\nno-op diff, {len(items)} objects from {RELEASES * len(CHART_NAMES)} releases, {RUNS} pairs:\n")
        print("| case | wall | cpu | peak |\n|---|---|---|---|")
        summary("A: HelmChart releases", a_runs)
        summary("B: the same objects as plain YAML", b_runs)
        print(f"\nA/B wall: median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
    finally:
        a_server.close()
        b_server.close()


def main():
    if not os.path.isdir(CHARTS):
        sys.exit(f"no charts at {CHARTS}: set CHARTS to the helm corpus's charts directory")
    subprocess.run(["cargo", "build", "--release", "--locked", "--quiet", "--workspace"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        render_bench(tmp)
        diff_bench(tmp)


if __name__ == "__main__":
    main()
