//! Per-review CPU without the network: decode + decide + encode, each beside the
//! no-op baseline that reads the same bytes (decodes the uid, answers allowed).
//! Before criterion runs, each case is reviewed under a counting allocator and
//! the allocations and bytes allocated per review go to
//! $BENCH_OUT/allocations.json. Run with `cargo bench --bench review`;
//! `make bench` records the ratios.

mod fixtures;
mod harness;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use eval_admission::admission::request::{GroupVersionKind, Operation, UserInfo};
use eval_admission::admission::{self, Webhook};
use eval_admission::cluster::{ClusterState, state_file};
use eval_admission::config::Config;
use eval_admission::workload::Metadata;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::json;

/// The system allocator, counting calls and bytes while `COUNTING` is set (one
/// relaxed load per call otherwise, the same for both sides of a comparison).
struct CountingAllocator;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

fn count(bytes: usize) {
    if COUNTING.load(Relaxed) {
        ALLOCATIONS.fetch_add(1, Relaxed);
        BYTES.fetch_add(bytes as u64, Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Allocations and bytes allocated (a realloc counts as one, for its new size) per call of `review`.
fn allocations_per_call(mut review: impl FnMut()) -> (f64, f64) {
    const CALLS: u64 = 1000;
    review(); // lazily built state (thread-locals, caches) is not the review's
    ALLOCATIONS.store(0, Relaxed);
    BYTES.store(0, Relaxed);
    COUNTING.store(true, Relaxed);
    for _ in 0..CALLS {
        review();
    }
    COUNTING.store(false, Relaxed);
    (ALLOCATIONS.load(Relaxed) as f64 / CALLS as f64, BYTES.load(Relaxed) as f64 / CALLS as f64)
}

fn cases() -> Vec<(&'static str, Webhook, Vec<u8>)> {
    vec![
        ("job-create-4k/mutate", Webhook::Mutate, fixtures::job_create_4k()),
        ("job-create/mutate", Webhook::Mutate, fixtures::job_create()),
        ("job-create-10k/mutate", Webhook::Mutate, fixtures::job_create_10k()),
        ("job-create/validate", Webhook::Validate, fixtures::job_create_mutated()),
        ("job-update/validate", Webhook::Validate, fixtures::job_update()),
        ("jobset-create/mutate", Webhook::Mutate, fixtures::jobset_create()),
    ]
}

fn record_allocations(config: &Config, state: &ClusterState) {
    let mut report = serde_json::Map::new();
    for (name, webhook, body) in &cases() {
        let noop = allocations_per_call(|| {
            std::hint::black_box(admission::review_noop(std::hint::black_box(body)).unwrap());
        });
        let full = allocations_per_call(|| {
            std::hint::black_box(
                admission::review_offline(*webhook, std::hint::black_box(body), config, state).unwrap(),
            );
        });
        println!(
            "{name}: {} bytes; allocations per review: noop {:.0} ({:.0} bytes), full {:.0} ({:.0} bytes)",
            body.len(),
            noop.0,
            noop.1,
            full.0,
            full.1
        );
        report.insert(
            name.to_string(),
            json!({"body_bytes": body.len(),
                "noop": {"allocations": noop.0, "bytes": noop.1},
                "full": {"allocations": full.0, "bytes": full.1}}),
        );
    }
    harness::write_json("allocations.json", &serde_json::Value::Object(report));
}

/// The decode steps of [`reviews`]: the fields of `request` that
/// `admission::request::Request` reads, with its objects skimmed (`IgnoredAny`)
/// or decoded down to their metadata. Never read: only decoded.
#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review<R> {
    api_version: Option<String>,
    kind: Option<String>,
    request: Option<R>,
}

#[allow(dead_code)]
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head<O> {
    uid: String,
    kind: GroupVersionKind,
    sub_resource: Option<String>,
    name: Option<String>,
    namespace: Option<String>,
    operation: Operation,
    user_info: Option<UserInfo>,
    object: Option<O>,
    old_object: Option<O>,
    dry_run: Option<bool>,
}

#[allow(dead_code)]
#[derive(Deserialize)]
struct MetadataOnly {
    metadata: Option<Metadata>,
}

fn reviews(c: &mut Criterion) {
    let config = Config::default();
    let state = state_file::parse(include_bytes!("../examples/cluster.yaml")).unwrap();
    record_allocations(&config, &state);
    let mut group = c.benchmark_group("review");
    for (name, webhook, body) in &cases() {
        // The body must really be reviewed, not short-circuited.
        let outcome = admission::review_offline(*webhook, body, &config, &state).unwrap();
        assert!(outcome.decision.allowed, "{name}: {:?}", outcome.decision.message);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(BenchmarkId::new("noop", name), body, |b, body| {
            b.iter(|| admission::review_noop(std::hint::black_box(body)).unwrap())
        });
        // The typed decode in steps, to show where a review's time beyond the
        // no-op's skim goes: the request's own fields, then the object's
        // metadata, then the whole decode (with the spec). Full minus decode
        // is the rules, the patch and the encoded response.
        group.bench_with_input(BenchmarkId::new("head", name), body, |b, body| {
            b.iter(|| serde_json::from_slice::<Review<Head<IgnoredAny>>>(std::hint::black_box(body)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("metadata", name), body, |b, body| {
            b.iter(|| serde_json::from_slice::<Review<Head<MetadataOnly>>>(std::hint::black_box(body)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("decode", name), body, |b, body| {
            b.iter(|| admission::request::decode(std::hint::black_box(body)).unwrap())
        });
        group.bench_with_input(BenchmarkId::new("full", name), body, |b, body| {
            b.iter(|| admission::review_offline(*webhook, std::hint::black_box(body), &config, &state).unwrap())
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
