#!/usr/bin/env python3
"""Reads scale with what tend manages (issue 12): request counts and bytes of no-op runs.

Cases, each a no-op `tend diff` after an apply:

  foreign   300 Secrets of ~200 KB that tend does not manage (as Helm keeps releases) beside
            the one Secret and one ConfigMap tend manages in that namespace: requests and bytes
            read (target: <= 10 requests, <= 1 MiB).
  site      the 1,010-object benchmark site (bench/gen_site.py, 10 namespaces): requests with
            the right to list across namespaces (target <= 20) and, on the test server,
            without it (target <= 40); then 10 changed ConfigMaps must write exactly 20
            objects (the ConfigMaps and the Deployments that mount them).

    python3 bench/reads.py                       # the test API server (release binary)
    KUBECONFIG=~/.kube/config python3 bench/reads.py   # any cluster (namespaces bench-reads-*)

Bytes come from tend's own count of LIST bodies ("KiB listed" in its summary line), so they
are available against any cluster; on the test server they are cross-checked with the
server's count of every response body. Exit status 1 when a target is missed.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine import Server, ROOT, TEND  # noqa: E402

SUMMARY = re.compile(r"(\d+) API requests \((\d+) reads, (\d+) writes, (\d+) dry runs\), (\d+) KiB listed")


def tend(args, kubeconfig, site, applyset):
    cmd = [TEND, *args, "--repo", site, "--kubeconfig", kubeconfig, "--applyset", applyset, "-o", "json"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    m = SUMMARY.search(proc.stderr)
    if not m:
        sys.exit(f"no request summary in:\n{proc.stderr[-2000:]}")
    requests, reads, writes, dry, kib = (int(x) for x in m.groups())
    report = json.loads(proc.stdout)
    return {"requests": requests, "writes": writes, "dry": dry, "kib": kib, "report": report,
            "code": proc.returncode}


def kubectl(kubeconfig, args, stdin=None):
    proc = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], input=stdin, text=True,
                          capture_output=True)
    if proc.returncode != 0:
        sys.exit(f"kubectl {' '.join(args)} failed:\n{proc.stderr[-2000:]}")


def foreign_site(path, ns):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "app.yaml"), "w") as f:
        f.write(f"""apiVersion: v1
kind: Namespace
metadata:
  name: {ns}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: {ns}
data:
  mode: prod
---
apiVersion: v1
kind: Secret
metadata:
  name: token
  namespace: {ns}
stringData:
  token: s3cr3t
""")


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet", "--workspace"], cwd=ROOT, check=True)
    real = os.environ.get("KUBECONFIG")
    server = None
    if real:
        kubeconfig, target = real, f"cluster from KUBECONFIG={real}"
    else:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "tend-testserver", "--bin",
                        "tend-testserver"], cwd=ROOT, check=True)
        server = Server()
        kubeconfig, target = server.kubeconfig, f"test API server (TEND_TESTSERVER_LATENCY_MS={server.latency})"
    tmp = tempfile.mkdtemp()
    rows, failures = [], []

    def check(ok, message):
        if not ok:
            failures.append(message)

    def served_bytes():
        return server.call("stats")["responseBytes"] if server else None

    try:
        # foreign: 300 x 200 KB Secrets tend does not manage.
        ns = "bench-reads-foreign"
        site = os.path.join(tmp, "foreign")
        foreign_site(site, ns)
        tend(["apply"], kubeconfig, site, "bench-reads-foreign")
        blob = "eA==" * (200 * 1024 // 4)  # ~200 KB of base64
        for start in range(0, 300, 50):
            items = [{"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                      "metadata": {"name": f"sh.helm.release.v1.other.v{i}", "namespace": ns,
                                   "labels": {"owner": "helm"}},
                      "data": {"release": blob}} for i in range(start, start + 50)]
            kubectl(kubeconfig, ["create", "--validate=false", "-f", "-"], json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        if server:
            server.call("clear")
        r = tend(["diff"], kubeconfig, site, "bench-reads-foreign")
        seen = served_bytes()
        rows.append(("no-op diff beside 300 foreign 200 KB Secrets", r["requests"], r["kib"],
                     f"{seen / 1024:.0f} KiB" if seen is not None else "-"))
        check(r["code"] == 0, "foreign: diff is not clean")
        check(r["requests"] <= 10, f"foreign: {r['requests']} requests > 10")
        check(r["kib"] <= 1024, f"foreign: {r['kib']} KiB listed > 1 MiB")
        if seen is not None:
            check(seen <= 1024 * 1024, f"foreign: the server sent {seen} bytes > 1 MiB")

        # site: 1,010 objects, with and without cluster-wide list rights.
        site = os.path.join(tmp, "site")
        gen = [sys.executable, os.path.join(ROOT, "bench", "gen_site.py"), site, "--namespaces", "10",
               "--configmaps", "50", "--prefix", "bench-reads"]
        subprocess.run(gen, check=True, capture_output=True)
        tend(["apply"], kubeconfig, site, "bench-reads")
        if server:
            server.call("clear")
        r = tend(["diff"], kubeconfig, site, "bench-reads")
        rows.append(("no-op diff, 1,010 objects, cluster-wide list rights", r["requests"], r["kib"],
                     f"{served_bytes() / 1024:.0f} KiB" if server else "-"))
        check(r["code"] == 0 and r["requests"] <= 20, f"site: {r['requests']} requests > 20 (or not clean)")
        check(r["dry"] == 0 and r["writes"] == 0, "site: a no-op diff made dry runs or writes")
        if server:
            server.call("deny-cluster-wide-lists")
            server.call("clear")
            r = tend(["diff"], kubeconfig, site, "bench-reads")
            rows.append(("no-op diff, 1,010 objects, namespaced list rights only", r["requests"], r["kib"],
                         f"{served_bytes() / 1024:.0f} KiB"))
            check(r["code"] == 0 and r["requests"] <= 40, f"site without rights: {r['requests']} requests > 40")
            server.call("allow-cluster-wide-lists")
        subprocess.run(gen + ["--change", "10", "--revision", "2"], check=True, capture_output=True)
        r = tend(["apply"], kubeconfig, site, "bench-reads")
        written = [o for o in r["report"]["objects"] if o["action"] in ("create", "update", "prune")]
        kinds = sorted({o["kind"] for o in written})
        rows.append((f"apply after changing 10 ConfigMaps: {len(written)} objects written ({', '.join(kinds)})",
                     r["requests"], r["kib"], "-"))
        check(len(written) == 20, f"changed 10 ConfigMaps: {len(written)} objects written, not 20")
    finally:
        if server:
            server.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\n{target}\n")
    print("| case | requests | KiB listed (tend) | bytes sent (server) |")
    print("|---|---|---|---|")
    for case, requests, kib, seen in rows:
        print(f"| {case} | {requests} | {kib} | {seen} |")
    if failures:
        print("\nFAILED:\n" + "\n".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
