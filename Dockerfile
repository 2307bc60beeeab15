# syntax=docker/dockerfile:1
#
# tend's container image: a release build of the binary on a distroless runtime, running as
# uid/gid 65532 (nonroot). Build it from the repository root:
#
#   docker build -t tend:dev --build-arg TEND_BUILD_COMMIT=$(git rev-parse --short=12 HEAD) .
#   docker build -t tend:dev-ci --target ci .     # with a busybox shell, for CI jobs
#
# The image's entrypoint is tend; pass the subcommand and flags as arguments
# (`docker run --rm tend:dev render --repo https://...`).
#
# What the binary needs at run time: git2 (features https, ssh, vendored-libgit2) compiles
# libgit2 and libssh2 from source into the binary, and links OpenSSL (libssl3, libcrypto3:
# libgit2's HTTPS transport and libssh2's crypto) and zlib dynamically (`ldd` below lists
# them). distroless/cc has glibc, libgcc_s, OpenSSL 3 and the CA certificates; zlib
# (libz.so.1) is copied in from the build stage into the multiarch library directory (not
# every distroless/cc release ships it). Build and runtime are both Debian 12, so glibc and
# OpenSSL match. No git binary is needed: all git access is libgit2, credentials included
# (TEND_GIT_TOKEN, --ssh-key). The Kubernetes client uses rustls.
#
# kustomize: tend builds kustomize directories with the `kustomize` binary (README,
# "Kustomize"). The image carries the static binary of kustomize's official release image
# (CGO_ENABLED=0, so it runs on distroless) at /usr/local/bin/kustomize. Remote bases
# (`github.com/...?ref=`) need a git binary, which this image does not have: vendor them into
# the repository, or build an image with git.

ARG RUST_VERSION=1.95
ARG DEBIAN=bookworm
# The kustomize release to ship (the one kubectl 1.32 embeds). Pin a digest in addition if
# your policy asks for it: registry.k8s.io/kustomize/kustomize:v5.5.0@sha256:...
ARG KUSTOMIZE_VERSION=v5.5.0

# ---- build ---------------------------------------------------------------------------
FROM docker.io/library/rust:${RUST_VERSION}-${DEBIAN} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends pkg-config libssl-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src

# Dependencies first, in their own layer: rebuilt only when Cargo.toml/Cargo.lock change.
COPY Cargo.toml Cargo.lock build.rs link-order.txt ./
COPY testserver/Cargo.toml testserver/Cargo.toml
RUN mkdir -p src testserver/src \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs testserver/src/lib.rs \
 && cargo build --release --locked --bin tend \
 && rm -rf src testserver/src target/release/tend target/release/deps/tend-* \
      target/release/deps/libtend-* target/release/.fingerprint/tend-*

COPY src src
COPY testserver testserver
# Outside a git checkout build.rs cannot ask git for the commit `tend version` reports.
ARG TEND_BUILD_COMMIT=unknown
ENV TEND_BUILD_COMMIT=${TEND_BUILD_COMMIT}
RUN cargo build --release --locked --bin tend \
 && multiarch="$(gcc -dumpmachine)" \
 && mkdir -p /out/bin "/out/lib/$multiarch" /out/share/man/man1 /out/share/completions \
 && cp target/release/tend /out/bin/tend \
 && strip /out/bin/tend \
 && cp -L "/usr/lib/$multiarch/libz.so.1" "/out/lib/$multiarch/libz.so.1" \
 && ldd /out/bin/tend \
 && /out/bin/tend man --out-dir /out/share/man/man1 \
 && for shell in bash zsh fish; do /out/bin/tend completions "$shell" > "/out/share/completions/tend.$shell"; done \
 && /out/bin/tend version

# ---- kustomize: the official release image; only its binary is used --------------------
FROM registry.k8s.io/kustomize/kustomize:${KUSTOMIZE_VERSION} AS kustomize
RUN ["/app/kustomize", "version"]

# ---- ci: the runtime plus busybox sh, for GitLab CI jobs (image: ...-ci, entrypoint: [""]) -
FROM gcr.io/distroless/cc-debian12:debug-nonroot AS ci
COPY --from=build /out/lib/ /lib/
COPY --from=build /out/bin/tend /usr/local/bin/tend
COPY --from=kustomize /app/kustomize /usr/local/bin/kustomize
COPY --from=build /out/share/man/man1 /usr/local/share/man/man1
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tend"]

# ---- runtime (default target) --------------------------------------------------------
FROM gcr.io/distroless/cc-debian12:nonroot AS runtime
COPY --from=build /out/lib/ /lib/
COPY --from=build /out/bin/tend /usr/local/bin/tend
COPY --from=kustomize /app/kustomize /usr/local/bin/kustomize
COPY --from=build /out/share/man/man1 /usr/local/share/man/man1
COPY --from=build /out/share/completions /usr/local/share/tend/completions
USER 65532:65532
# The git cache defaults to $HOME/.cache/tend (/home/nonroot, writable). With a read-only root
# filesystem mount a volume and point TEND_CACHE_DIR at it, as cronjob/cronjob.yaml does.
ENTRYPOINT ["/usr/local/bin/tend"]
CMD ["--help"]
