# syntax=docker/dockerfile:1
# Multi-stage: build the release binary, ship it alone on distroless (glibc,
# no shell, non-root). `make image` builds it (docs/release.md);
# tests/image.rs runs the build stage with the real cargo, without Docker.
FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
# What cargo reads to load the workspace, though only the binary is built:
# the manifests, testkit/ (a member) and benches/ (Cargo.toml's [[bench]]s
# have no `path`: cargo looks for each file as it loads the manifest; an
# explicit `path`, as the `cluster` example's, is read only when that target
# is built). .dockerignore lets exactly these into the context.
COPY Cargo.toml Cargo.lock ./
COPY testkit ./testkit
COPY benches ./benches
COPY src ./src
RUN cargo build --release --locked --bin eval-admission \
 && install -D -m 0755 target/release/eval-admission /out/eval-admission

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/eval-admission /usr/local/bin/eval-admission
USER 65532:65532
EXPOSE 8443 8080
ENTRYPOINT ["/usr/local/bin/eval-admission"]
CMD ["serve"]
