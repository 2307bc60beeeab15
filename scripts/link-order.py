#!/usr/bin/env python3
"""Write link-order.txt: the functions of tend that common runs execute, most executed first.

build.rs hands the file to the linker (`--symbol-ordering-file`), which lays those functions
out together at the start of `.text`. The kernel maps a binary's code 64 KiB around every page
a process touches, so code a run uses spread over the 25 MB `.text` made ~7 MiB of a `tend
render` of one Namespace resident and ~21 MiB of a big chart's; laid out together, far less.

The names carry rustc's symbol hashes, so the file matches the build it was made from (rustc
version, Cargo.lock): rewrite it when either changes. Names that no longer match are skipped
by the linker, which costs only the gain.

    cargo build --release --bin tend     # keeps its symbol table (Cargo.toml), its own names
    python3 scripts/link-order.py target/release/tend SITE [SITE ...]

Each SITE is a repository `tend render --repo SITE` renders (e.g. one Namespace, a site with a
HelmChart); needs valgrind.
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def executed(profile, binary):
    """Instructions per function of `binary` in one callgrind profile (self cost)."""
    cost = collections.Counter()
    names, obs = {}, {}
    in_binary, current, after_call = False, None, False
    name_re = re.compile(r"(c?(?:fn|ob))=(\(\d+\))?\s*(.*)")
    with open(profile, errors="replace") as f:
        for line in f:
            match = name_re.match(line.rstrip("\n"))
            if match:
                kind, ident, name = match.groups()
                table = obs if kind.endswith("ob") else names
                if name:
                    table[ident] = name
                name = name or table.get(ident, "")
                if kind == "ob":
                    in_binary = os.path.realpath(name) == binary
                elif kind == "fn":
                    # callgrind marks a recursive function's deeper calls `'2`, `'3`: one symbol.
                    current = re.sub(r"'\d+$", "", name) if in_binary else None
                continue
            if line.startswith("calls="):
                after_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if after_call:
                    after_call = False  # the call's inclusive cost, not this function's
                elif current:
                    parts = line.split()
                    if len(parts) > 1 and parts[1].isdigit():
                        cost[current] += int(parts[1])
    return cost


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary = os.path.realpath(sys.argv[1])
    cost = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i, site in enumerate(sys.argv[2:]):
            out = os.path.join(tmp, f"callgrind.{i}")
            subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
                            binary, "render", "--repo", site, "--cache-dir", os.path.join(tmp, f"cache{i}")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            cost.update(executed(out, binary))
    order = [name for name, _ in cost.most_common() if not name.startswith("0x")]
    with open(os.path.join(ROOT, "link-order.txt"), "w") as f:
        f.write("\n".join(order) + "\n")
    print(f"link-order.txt: {len(order)} functions")


if __name__ == "__main__":
    main()
