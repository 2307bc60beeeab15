#!/usr/bin/env python3
"""Benchmark what `--verify-signatures` adds to a no-op `tend diff` of 1,010 objects.

The site of bench/engine.py (10 namespaces: 50 ConfigMaps, 25 Deployments, 25 Services each)
is committed to a git repository with an SSH-signed commit (`git commit -S`, gpg.format ssh,
a key made here by ssh-keygen) and applied to the release test API server (2 ms latency).
Then a no-op `tend diff --ref main` runs with `--verify-signatures head --trusted-keys
allowed_signers` (A) and without (B), in turn, A B A B ..., and the ratio A/B is taken pair
by pair (target: median at most 1.05). Both read the same commit from tend's git cache, so
the difference is the verification alone.

    python3 bench/verify.py            # 11 pairs
    RUNS=21 python3 bench/verify.py
    KUBECONFIG=~/.kube/config python3 bench/verify.py   # against a real cluster

Needs git and ssh-keygen (openssh-client).
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine import ROOT, TEND, Server, gen  # noqa: E402


def git(repo, *args):
    subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True)


def signed_repository(tmp):
    """The site, committed and signed; the allowed_signers file trusting the signer."""
    key = os.path.join(tmp, "signer")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
    with open(key + ".pub") as f:
        public = f.read().strip()
    signers = os.path.join(tmp, "allowed_signers")
    with open(signers, "w") as f:
        f.write(f"bench@example.com namespaces=\"git\" {public}\n")
    repo = os.path.join(tmp, "repo")
    gen(repo, "bench")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=Bench", "-c", "user.email=bench@example.com",
        "-c", "gpg.format=ssh", "-c", f"user.signingkey={key}",
        "commit", "-q", "-S", "-m", "site")
    return repo, signers


def diff(repo, kubeconfig, cache, extra):
    cmd = [TEND, "diff", "--repo", repo, "--ref", "main", "--kubeconfig", kubeconfig,
           "--cache-dir", cache, "--applyset", "bench", *extra]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode} (a no-op diff exits 0):\n{proc.stderr}")
    return elapsed


def main():
    subprocess.run(["cargo", "build", "--release", "--quiet", "--workspace"], cwd=ROOT, check=True)
    runs = int(os.environ.get("RUNS", "11"))
    server = None
    kubeconfig = os.environ.get("KUBECONFIG")
    if not kubeconfig:
        server = Server()
        kubeconfig = server.kubeconfig
    tmp = tempfile.mkdtemp()
    try:
        repo, signers = signed_repository(tmp)
        cache = os.path.join(tmp, "cache")
        verify = ["--verify-signatures", "head", "--trusted-keys", signers]
        subprocess.run([TEND, "apply", "--repo", repo, "--ref", "main", "--kubeconfig", kubeconfig,
                        "--cache-dir", cache, "--applyset", "bench", *verify],
                       check=True, capture_output=True)
        diff(repo, kubeconfig, cache, verify)  # warm the cache and the page cache
        ratios, with_verify, without = [], [], []
        for _ in range(runs):
            a = diff(repo, kubeconfig, cache, verify)
            b = diff(repo, kubeconfig, cache, [])
            with_verify.append(a)
            without.append(b)
            ratios.append(a / b)
        print(f"| no-op diff, 1,010 objects, --verify-signatures head (SSH) | "
              f"{statistics.median(with_verify):.3f} s | without: {statistics.median(without):.3f} s | "
              f"ratio median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}, "
              f"{runs} pairs) |")
    finally:
        if server:
            server.close()


if __name__ == "__main__":
    main()
