//! Per-review CPU without the network: decode + decide + encode, each beside the
//! no-op baseline that reads the same bytes (decodes the uid, answers allowed).
//! Run with `cargo bench --bench review`; `make bench` records the ratios.

mod fixtures;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use eval_admission::admission::{self, Webhook};
use eval_admission::cluster::state_file;
use eval_admission::config::Config;

fn reviews(c: &mut Criterion) {
    let config = Config::default();
    let state = state_file::parse(include_bytes!("../examples/cluster.yaml")).unwrap();
    let cases = [
        ("job-create/mutate", Webhook::Mutate, fixtures::job_create()),
        ("job-create/validate", Webhook::Validate, fixtures::job_create_mutated()),
        ("job-update/validate", Webhook::Validate, fixtures::job_update()),
        ("jobset-create/mutate", Webhook::Mutate, fixtures::jobset_create()),
    ];
    let mut group = c.benchmark_group("review");
    for (name, webhook, body) in &cases {
        // The body must really be reviewed, not short-circuited.
        let outcome = admission::review(*webhook, body, &config, &state).unwrap();
        assert!(outcome.decision.allowed, "{name}: {:?}", outcome.decision.message);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(BenchmarkId::new("noop", name), body, |b, body| {
            b.iter(|| admission::review_noop(std::hint::black_box(body)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("full", name), body, |b, body| {
            b.iter(|| admission::review(*webhook, std::hint::black_box(body), &config, &state).unwrap())
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().configure_from_args();
    targets = reviews
}
criterion_main!(benches);
