# syntax=docker/dockerfile:1
# Multi-stage: build the release binary, ship it alone on distroless (glibc,
# no shell, non-root). The same binary the tests run: `cargo build --release --locked`.
FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
# testkit/ is a workspace member and a dev-dependency: cargo loads its manifest.
COPY testkit ./testkit
COPY src ./src
RUN cargo build --release --locked \
 && install -D -m 0755 target/release/eval-admission /out/eval-admission

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/eval-admission /usr/local/bin/eval-admission
USER 65532:65532
EXPOSE 8443 8080
ENTRYPOINT ["/usr/local/bin/eval-admission"]
CMD ["serve"]
