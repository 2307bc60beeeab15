#!/usr/bin/env python3
"""Benchmark what SOPS decryption adds to a no-op `tend diff`, and what the private kustomize
copy costs.

1. Decryption: 1,000 Secrets (10 namespaces x 100, one file each, 3 `data` entries each),
   written twice: in plaintext, and encrypted as `sops --encrypt --age ... --encrypted-regex
   '^(data|stringData)$'` writes them (each file its own data key sealed for one age
   recipient, every value AES-256-GCM sealed, the MAC). The plaintext site is applied to the
   release test API server (`tend-testserver`, 2 ms latency as in bench/engine.py); then a
   no-op `tend diff` of the encrypted site (A) and of the plaintext site (B) run in turn,
   A B A B ..., and the ratio A/B is taken pair by pair (target: at most 1.05).
2. The private copy: `tend render` of the same 1,000 plaintext Secrets plus one kustomize unit
   whose secretGenerator reads a dotenv file, encrypted (built from a private copy of the
   tree) or in plaintext (built in place). Offline; needs `kubectl` (`kubectl kustomize`).

    python3 bench/sops.py              # both, 11 pairs each; prints table rows
    RUNS=21 python3 bench/sops.py
    python3 bench/sops.py --hold DIR   # set up in DIR, print the commands, keep the server
                                       # up until SIGINT/SIGTERM (to time them with other tools)

The encryptor is written here from sops's format, in Python with the `cryptography` package
(age's X25519 stanza and STREAM payload, AES-256-GCM values, the SHA-512 MAC): it shares no
code with tend's decryptor, so tend reading what it writes is a check of both. `diff` of the
encrypted site must exit 0 (in sync), which checks that decryption gives the applied objects.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEND = os.path.join(ROOT, "target", "release", "tend")
NAMESPACES, PER_NAMESPACE, VALUES = 10, 100, 3
LASTMODIFIED = "2026-01-02T03:04:05Z"
REGEX = "^(data|stringData)$"

# --- bech32 (BIP 173), for age's key encodings ---------------------------------------------
CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _polymod(values):
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if (top >> i) & 1 else 0
    return chk


def bech32(hrp, data):
    bits, acc, out = 0, 0, []
    for byte in data:
        acc = (acc << 8) | byte
        bits += 8
        while bits >= 5:
            bits -= 5
            out.append((acc >> bits) & 31)
    if bits:
        out.append((acc << (5 - bits)) & 31)
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    poly = _polymod(expanded + out + [0] * 6) ^ 1
    checksum = [(poly >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(CHARSET[d] for d in out + checksum)


# --- age v1, one X25519 recipient, armored --------------------------------------------------
def hkdf(ikm, salt, info):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(ikm)


def b64raw(data):
    return base64.b64encode(data).decode().rstrip("=")


def wrap(text, width=64):
    return [text[i:i + width] for i in range(0, len(text), width)] or [""]


def age_encrypt(plain, recipient_pub):
    """An armored age file of `plain` for one X25519 recipient (age-encryption.org/v1)."""
    file_key = os.urandom(16)
    eph = X25519PrivateKey.generate()
    share = eph.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    shared = eph.exchange(X25519PublicKey.from_public_bytes(recipient_pub))
    wrap_key = hkdf(shared, share + recipient_pub, b"age-encryption.org/v1/X25519")
    body = ChaCha20Poly1305(wrap_key).encrypt(b"\x00" * 12, file_key, None)
    header = "age-encryption.org/v1\n-> X25519 " + b64raw(share) + "\n" + "\n".join(wrap(b64raw(body))) + "\n---"
    mac = hmac.new(hkdf(file_key, b"", b"header"), header.encode(), hashlib.sha256).digest()
    nonce = os.urandom(16)
    payload = ChaCha20Poly1305(hkdf(file_key, nonce, b"payload")).encrypt(b"\x00" * 11 + b"\x01", plain, None)
    binary = (header + " " + b64raw(mac) + "\n").encode() + nonce + payload
    armored = "\n".join(wrap(base64.b64encode(binary).decode()))
    return f"-----BEGIN AGE ENCRYPTED FILE-----\n{armored}\n-----END AGE ENCRYPTED FILE-----\n"


# --- sops -----------------------------------------------------------------------------------
def seal(key, plain, aad, kind="str"):
    iv = os.urandom(32)
    out = AESGCM(key).encrypt(iv, plain.encode(), aad.encode())
    data, tag = out[:-16], out[-16:]
    b = lambda x: base64.b64encode(x).decode()
    return f"ENC[AES256_GCM,data:{b(data)},iv:{b(iv)},tag:{b(tag)},type:{kind}]"


def encrypt_secret(secret, recipient, recipient_pub):
    """The YAML text sops writes for `secret` (nested dicts of strings) under REGEX."""
    key = os.urandom(32)
    mac = hashlib.sha512()
    rule = re.compile(REGEX)

    def walk(node, path):
        out = {}
        for k, v in node.items():
            if isinstance(v, dict):
                out[k] = walk(v, path + [k])
                continue
            mac.update(v.encode())
            selected = any(rule.search(p) for p in path + [k])
            out[k] = seal(key, v, ":".join(path + [k]) + ":") if selected else v
        return out

    sealed = walk(secret, [])
    lines = []

    def emit(node, indent):
        for k, v in node.items():
            if isinstance(v, dict):
                lines.append(f"{' ' * indent}{k}:")
                emit(v, indent + 4)
            else:
                lines.append(f"{' ' * indent}{k}: {v}")

    emit(sealed, 0)
    enc = age_encrypt(key, recipient_pub)
    lines += ["sops:", "    age:", f"        - recipient: {recipient}", "          enc: |"]
    lines += ["            " + line for line in enc.splitlines()]
    lines += [
        f'    lastmodified: "{LASTMODIFIED}"',
        f"    mac: {seal(key, mac.hexdigest().upper(), LASTMODIFIED)}",
        f"    encrypted_regex: {REGEX}",
        "    version: 3.9.0",
    ]
    return "\n".join(lines) + "\n"


def secret(ns, i):
    value = lambda n: base64.b64encode(f"{ns}/secret-{i:03d}/value-{n}-{os.urandom(8).hex()}".encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"secret-{i:03d}", "namespace": ns},
        "type": "Opaque",
        "data": {f"key-{n}": value(n) for n in range(VALUES)},
    }


def plain_yaml(node, indent=0):
    out = []
    for k, v in node.items():
        if isinstance(v, dict):
            out.append(f"{' ' * indent}{k}:")
            out.append(plain_yaml(v, indent + 4))
        else:
            out.append(f"{' ' * indent}{k}: {v}")
    return "\n".join(out)


def generate(tmp):
    """The identity file, and the plaintext and encrypted sites (same objects)."""
    identity = X25519PrivateKey.generate()
    secret_bytes = identity.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                          serialization.NoEncryption())
    pub = identity.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    recipient = bech32("age", pub)
    keys = os.path.join(tmp, "keys.txt")
    with open(keys, "w") as f:
        f.write(f"# public key: {recipient}\n{bech32('age-secret-key-', secret_bytes).upper()}\n")
    os.chmod(keys, 0o600)
    plain, enc = os.path.join(tmp, "plain"), os.path.join(tmp, "encrypted")
    for n in range(NAMESPACES):
        ns = f"sops-{n:02d}"
        for site in (plain, enc):
            os.makedirs(os.path.join(site, ns))
            with open(os.path.join(site, ns, "namespace.yaml"), "w") as f:
                f.write(f"apiVersion: v1\nkind: Namespace\nmetadata:\n    name: {ns}\n")
        for i in range(PER_NAMESPACE):
            s = secret(ns, i)
            with open(os.path.join(plain, ns, f"secret-{i:03d}.yaml"), "w") as f:
                f.write(plain_yaml(s) + "\n")
            with open(os.path.join(enc, ns, f"secret-{i:03d}.yaml"), "w") as f:
                f.write(encrypt_secret(s, recipient, pub))
    return keys, plain, enc, recipient, pub


def with_unit(site, out, encrypted, recipient, pub):
    """`site` plus one kustomize unit whose secretGenerator reads a dotenv file."""
    shutil.copytree(site, out)
    unit = os.path.join(out, "app")
    os.makedirs(unit)
    with open(os.path.join(unit, "kustomization.yaml"), "w") as f:
        f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: sops-00\n"
                "resources: [deployment.yaml]\nsecretGenerator:\n  - name: app\n    envs: [app.env]\n")
    with open(os.path.join(unit, "deployment.yaml"), "w") as f:
        f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  mode: bench\n")
    pairs = {"DB_PASSWORD": "hunter2-bench", "API_TOKEN": "t0ken-bench"}
    with open(os.path.join(unit, "app.env"), "w") as f:
        if not encrypted:
            f.write("".join(f"{k}={v}\n" for k, v in pairs.items()))
            return
        key = os.urandom(32)
        mac = hashlib.sha512()
        lines = []
        for k, v in pairs.items():
            mac.update(v.encode())
            lines.append(f"{k}={seal(key, v, k + ':')}")
        meta = {
            "age__list_0__map_enc": age_encrypt(key, pub).replace("\n", "\\n"),
            "age__list_0__map_recipient": recipient,
            "lastmodified": LASTMODIFIED,
            "mac": seal(key, mac.hexdigest().upper(), LASTMODIFIED),
            "version": "3.9.0",
        }
        lines += [f"sops_{k}={v}" for k, v in sorted(meta.items())]
        f.write("\n".join(lines) + "\n")


class Server:
    """The release test API server, driven over stdin/stdout (as bench/engine.py does)."""

    def __init__(self):
        env = dict(os.environ)
        env.setdefault("TEND_TESTSERVER_LATENCY_MS", "2")
        self.proc = subprocess.Popen([os.path.join(ROOT, "target", "release", "tend-testserver")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.kubeconfig = json.loads(self.proc.stdout.readline())["kubeconfig"]

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=30)


def run(cmd, ok=(0,)):
    """Wall seconds of one run; exits when its code is not in `ok`."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=clean_env())
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return elapsed


def clean_env():
    """No key source from the developer's environment: only --decryption-key-file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOPS_", "TEND_"))}
    env["XDG_CONFIG_HOME"] = os.path.join(tempfile.gettempdir(), "tend-bench-no-config")
    env["TEND_KUSTOMIZE_COMMAND"] = "kubectl kustomize"
    return env


def paired(a, b, runs):
    """A and B in turn after one warm-up each; medians and the median of A/B pair by pair."""
    run(a), run(b)
    ta, tb, ratios = [], [], []
    for _ in range(runs):
        x, y = run(a), run(b)
        ta.append(x), tb.append(y), ratios.append(x / y)
    return statistics.median(ta), statistics.median(tb), statistics.median(ratios), min(ratios), max(ratios)


def main():
    hold = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--hold" else None
    runs = int(os.environ.get("RUNS", "11"))
    subprocess.run(["cargo", "build", "--release", "--locked", "--quiet", "--workspace"], cwd=ROOT, check=True)
    tmp = hold or tempfile.mkdtemp()
    os.makedirs(tmp, exist_ok=True)
    server = Server()
    try:
        keys, plain, enc, recipient, pub = generate(tmp)
        common = ["--kubeconfig", server.kubeconfig, "--applyset", "sops-bench", "--decryption-key-file", keys]
        run([TEND, "apply", "--repo", plain, *common])
        diff_enc = [TEND, "diff", "--repo", enc, *common]
        diff_plain = [TEND, "diff", "--repo", plain, *common]
        run(diff_enc)  # exit 0: the decrypted objects are the applied ones
        with_unit(plain, os.path.join(tmp, "unit-encrypted"), True, recipient, pub)
        with_unit(plain, os.path.join(tmp, "unit-plain"), False, recipient, pub)
        render_enc = [TEND, "render", "--repo", os.path.join(tmp, "unit-encrypted"), "--decryption-key-file", keys]
        render_plain = [TEND, "render", "--repo", os.path.join(tmp, "unit-plain"), "--decryption-key-file", keys]
        if hold:
            for name, cmd in [("diff, encrypted", diff_enc), ("diff, plaintext", diff_plain),
                              ("render, encrypted unit", render_enc), ("render, plaintext unit", render_plain)]:
                print(f"{name}: XDG_CONFIG_HOME={clean_env()['XDG_CONFIG_HOME']} "
                      f"TEND_KUSTOMIZE_COMMAND='kubectl kustomize' {' '.join(cmd)}", flush=True)
            print("holding; SIGINT or SIGTERM ends", flush=True)
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
            signal.pause()
            return
        d = paired(diff_enc, diff_plain, runs)
        r = paired(render_enc, render_plain, runs)
    finally:
        server.close()
        if not hold:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"| no-op diff, 1,000 Secrets | {d[0]:.3f} s | {d[1]:.3f} s | {d[2]:.3f} (min {d[3]:.3f}, max {d[4]:.3f}) |")
    print(f"| render, 1,000 Secrets + 1 kustomize unit | {r[0]:.3f} s | {r[1]:.3f} s | {r[2]:.3f} (min {r[3]:.3f}, max {r[4]:.3f}) |")


if __name__ == "__main__":
    main()
