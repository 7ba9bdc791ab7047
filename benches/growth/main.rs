//! Cost as the cluster grows (`cargo bench --bench growth`): the same EvalHub
//! Job review (`/validate`, queued to a ClusterQueue that can borrow in the
//! deepest cohort tree, verdict `preemptible`, ways out searched) against
//! generated states from 10 to 1,000 ClusterQueues, 100 to 10,000 namespaces
//! and 5 + 5 to 500 + 500 priority classes (benches/growth/states.rs).
//!
//! A. Per state, the release server (`serve --cluster`, pinned to one core,
//!    the load generator on another) from spawn to `/readyz` 200, the first
//!    review's latency after that (on a connection a `/mutate` opened) and the
//!    next 50's, then its CPU per review (utime + stime over 3,000 reviews, one
//!    at a time on one keep-alive connection), beside the no-op server
//!    (`--noop`) on the same body. The states are measured round by round,
//!    interleaved, so a busy moment of the machine falls on all of them.
//! B. In process, per state: one review's median time, and the first on a
//!    view nobody derived ahead.
//! C. At the largest state, in process: a ClusterQueue changed, and a
//!    Namespace created, the way the watch cache applies them, then derived
//!    again (`ClusterCache::rederive`), timed; and the longest review answered
//!    on another thread meanwhile.
//!
//! Results: `$BENCH_OUT/growth.json`. `BENCH_SMOKE=1`: the two end sizes, one
//! round, 50 reviews.

#[path = "../harness.rs"]
mod harness;
#[path = "../machine.rs"]
mod machine;
mod states;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use eval_admission::admission::{self, ReviewBuilder, Webhook};
use eval_admission::cache::ClusterCache;
use eval_admission::cluster::{ClusterObject, objects, state_file};
use eval_admission::config::Config;
use eval_admission::vocabulary::reason::Reason;
use eval_admission::workload::WorkloadKind::Job;
use serde_json::json;
use states::Size;
use testkit::JobBuilder;

const SMALL: Size = Size { cluster_queues: 10, namespaces: 100, classes: 5 };
const LARGE: Size = Size { cluster_queues: 1_000, namespaces: 10_000, classes: 500 };

fn sizes(smoke: bool) -> Vec<Size> {
    if smoke {
        return vec![SMALL, LARGE];
    }
    vec![
        SMALL,
        Size { cluster_queues: 100, namespaces: 1_000, classes: 5 },
        Size { cluster_queues: 1_000, namespaces: 10_000, classes: 5 },
        Size { cluster_queues: 10, namespaces: 100, classes: 500 },
        LARGE,
    ]
}

/// The EvalHub Job in team-0 as the validating webhook sees it: queued, suspended.
fn review_body() -> Vec<u8> {
    let job = JobBuilder::evalhub_created("team-0", 40, 12).queue("eval-queue").suspend(true).build();
    ReviewBuilder::create(Job, &job)
        .uid("b6f7a0c2-5d1e-4f3a-9c8b-2e4d6f8a0b1c")
        .user("system:serviceaccount:team-0:evalhub")
        .to_bytes()
}

fn main() {
    let smoke = harness::smoke();
    let body = review_body();
    let config = Config::default();
    let dir = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    for size in sizes(smoke) {
        let path = dir.path().join(format!("state-{}-{}-{}.yaml", size.cluster_queues, size.namespaces, size.classes));
        let yaml = states::state_file(size);
        std::fs::write(&path, &yaml).unwrap();
        // The verdict the table is about, checked once in process.
        let state = state_file::parse(yaml.as_bytes()).unwrap();
        let outcome = admission::review_offline(Webhook::Validate, &body, &config, &state).unwrap();
        let reason = outcome.decision.reason;
        assert_eq!(reason, Reason::Preemptible, "{}: {:?}", size.label(), outcome.decision.message);
        rows.push((size, path));
    }
    let served = served(&rows, &body, dir.path(), smoke);
    let in_process = in_process(&rows, &body, &config, smoke);
    let rederive = rederive(LARGE, &body, &config, smoke);
    let report = json!({
        "smoke": smoke,
        "machine": machine::machine(),
        "served": served,
        "in_process": in_process,
        "rederive": rederive,
    });
    harness::write_json("growth.json", &report);
}

/// Per state, round by round: the server from spawn to ready, its first
/// review's latency, then its CPU per review beside the no-op server's.
fn served(rows: &[(Size, std::path::PathBuf)], body: &[u8], dir: &std::path::Path, smoke: bool) -> serde_json::Value {
    let (cert, key, ca) = harness::certificates(dir);
    let (server_cpu, client_cpu) = if harness::cpus() > 1 { (Some(1), 0) } else { (None, 0) };
    harness::pin_self(client_cpu);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    // CPU time comes in 10 ms ticks: 3,000 reviews make a few percent of one.
    let (rounds, reviews) = if smoke { (1, 50) } else { (3, 3_000) };
    // One keep-alive connection, one review at a time; returns each latency.
    let post_to = |path: &str, port: u16, count: usize, expect: Option<&str>| {
        let url = format!("https://localhost:{port}{path}");
        runtime.block_on(async {
            let mut latencies = Vec::with_capacity(count);
            for _ in 0..count {
                let start = Instant::now();
                let response = client.post(&url).body(body.to_vec()).send().await.unwrap();
                assert_eq!(response.status(), 200);
                let answer: serde_json::Value = response.json().await.unwrap();
                latencies.push(start.elapsed().as_secs_f64());
                if let Some(expect) = expect {
                    assert_eq!(answer["response"]["auditAnnotations"]["reason"], expect, "{answer}");
                }
            }
            latencies
        })
    };
    let post = |port: u16, count: usize, expect: Option<&str>| post_to("/validate", port, count, expect);
    // The CPU per review over `reviews` once warm, from /proc.
    let cpu_per_review = |server: &harness::Server, expect: Option<&str>| {
        post(server.port, 20, expect);
        let before = harness::cpu_time(server.pid());
        post(server.port, reviews, expect);
        (harness::cpu_time(server.pid()) - before).as_secs_f64() / reviews as f64
    };
    // Per state: seconds to ready, first review, the next ones' median, CPU per review, the no-op's.
    type Samples = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);
    let mut samples: Vec<Samples> = vec![Default::default(); rows.len()];
    for _ in 0..rounds {
        for ((size, path), sample) in rows.iter().zip(samples.iter_mut()) {
            let args = ["--cluster", path.to_str().unwrap()];
            let spawned = Instant::now();
            let server = harness::serve(harness::BIN, server_cpu, &cert, &key, &args, &[], Duration::from_secs(120));
            let ready = spawned.elapsed().as_secs_f64();
            // The connection first (TLS), through /mutate, which reads no derived fact.
            post_to("/mutate", server.port, 1, None);
            let first = post(server.port, 1, Some("preemptible"))[0];
            let later = harness::median(&mut post(server.port, 50, Some("preemptible")));
            let full = cpu_per_review(&server, Some("preemptible"));
            drop(server);
            let noop_args = ["--cluster", path.to_str().unwrap(), "--noop"];
            let noop = harness::serve(harness::BIN, server_cpu, &cert, &key, &noop_args, &[], Duration::from_secs(120));
            let floor = cpu_per_review(&noop, None);
            drop(noop);
            println!(
                "{}: ready in {ready:.2} s; first review {:.2} ms (the next 50: {:.2} ms); {:.0} us CPU per review ({:.1}x \
                 the no-op's {:.0} us)",
                size.label(),
                first * 1e3,
                later * 1e3,
                full * 1e6,
                full / floor,
                floor * 1e6
            );
            sample.0.push(ready);
            sample.1.push(first);
            sample.2.push(later);
            sample.3.push(full);
            sample.4.push(floor);
        }
    }
    let smallest = rows
        .iter()
        .position(|(size, _)| {
            size.cluster_queues == SMALL.cluster_queues
                && size.namespaces == SMALL.namespaces
                && size.classes == SMALL.classes
        })
        .unwrap();
    let small_cpu = harness::median(&mut samples[smallest].3.clone());
    let out: Vec<serde_json::Value> = rows
        .iter()
        .zip(samples.iter_mut())
        .map(|((size, _), (ready, first, later, full, floor))| {
            let cpu = harness::median(full);
            json!({
                "size": size.label(),
                "cluster_queues": size.cluster_queues,
                "namespaces": size.namespaces,
                "classes": size.classes,
                "cohorts": states::cohorts(*size),
                "ready_seconds_median": harness::median(ready),
                "first_review_ms_median": harness::median(first) * 1e3,
                "next_reviews_ms_median": harness::median(later) * 1e3,
                "cpu_us_per_review_median": cpu * 1e6,
                "noop_cpu_us_per_review_median": harness::median(floor) * 1e6,
                // Too few reviews for one 10 ms tick (BENCH_SMOKE) give no ratio.
                "vs_smallest_done_when": (small_cpu > 0.0).then(|| cpu / small_cpu),
            })
        })
        .collect();
    json!({"rounds": rounds, "reviews_per_round": reviews, "rows": out})
}

/// Per state, the median time of one review in process (decode, decide, encode).
fn in_process(rows: &[(Size, std::path::PathBuf)], body: &[u8], config: &Config, smoke: bool) -> serde_json::Value {
    let mut out = Vec::new();
    for (size, path) in rows {
        let state = state_file::parse(&std::fs::read(path).unwrap()).unwrap();
        let first = Instant::now();
        admission::review_offline(Webhook::Validate, body, config, &state).unwrap();
        let first = first.elapsed();
        let mut times: Vec<f64> = (0..if smoke { 20 } else { 200 })
            .map(|_| {
                let start = Instant::now();
                std::hint::black_box(admission::review_offline(Webhook::Validate, body, config, &state).unwrap());
                start.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        let median = harness::median(&mut times);
        println!(
            "{}: in process {median:.0} us per review; the first {:.0} us",
            size.label(),
            first.as_secs_f64() * 1e6
        );
        out.push(json!({"size": size.label(), "cohorts": states::cohorts(*size),
                        "median_us": median, "first_us": first.as_secs_f64() * 1e6}));
    }
    json!(out)
}

/// A ClusterQueue changed at `size` as the watch changes it, re-derived, while
/// another thread reviews: the re-derivation's time and the slowest review.
fn rederive(size: Size, body: &[u8], config: &Config, smoke: bool) -> serde_json::Value {
    let state = state_file::parse(states::state_file(size).as_bytes()).unwrap();
    let cache = Arc::new(ClusterCache::from_state(state));
    cache.rederive();
    let done = Arc::new(AtomicBool::new(false));
    let reviewer = {
        let (cache, done, body, config) = (cache.clone(), done.clone(), body.to_vec(), config.clone());
        std::thread::spawn(move || {
            let mut slowest = Duration::ZERO;
            let mut reviews = 0u64;
            while !done.load(Ordering::Relaxed) {
                let start = Instant::now();
                let view = cache.read();
                std::hint::black_box(admission::review_offline(Webhook::Validate, &body, &config, &*view).unwrap());
                drop(view);
                slowest = slowest.max(start.elapsed());
                reviews += 1;
            }
            (slowest, reviews)
        })
    };
    let mut times = Vec::new();
    for round in 0..if smoke { 3 } else { 20 } {
        let changed = states::changed_queue(size, 8 + round % 2);
        let object = parse_one(&changed);
        let start = Instant::now();
        cache.update(|state| state.apply(object));
        cache.rederive();
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    // A Namespace created, as the watch applies it: the served facts change
    // in place, and what rests on them stays unless a floor changed.
    let mut namespace_times = Vec::new();
    for round in 0..if smoke { 3 } else { 20 } {
        let namespace = format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: new-{round}\n  labels: {{tier: tier-{}}}",
            round % 4
        );
        let object = parse_one(&namespace);
        let start = Instant::now();
        cache.update(|state| state.apply(object));
        cache.rederive();
        namespace_times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    done.store(true, Ordering::Relaxed);
    let (slowest, reviews) = reviewer.join().unwrap();
    let median = harness::median(&mut times);
    let most = times.iter().copied().fold(0.0, f64::max);
    let namespace_median = harness::median(&mut namespace_times);
    let namespace_most = namespace_times.iter().copied().fold(0.0, f64::max);
    println!(
        "{}: a ClusterQueue changed and re-derived in {median:.1} ms (median; most {most:.1} ms); a Namespace created \
         and re-derived in {namespace_median:.2} ms (most {namespace_most:.2} ms); the slowest of {reviews} reviews \
         meanwhile {:.1} ms",
        size.label(),
        slowest.as_secs_f64() * 1e3
    );
    json!({"size": size.label(), "rederive_ms_median": median, "rederive_ms_max": most,
           "namespace_ms_median": namespace_median, "namespace_ms_max": namespace_most,
           "reviews_meanwhile": reviews, "slowest_review_ms": slowest.as_secs_f64() * 1e3})
}

fn parse_one(yaml: &str) -> ClusterObject {
    let value: serde_json::Value = serde_yaml::from_str(yaml).unwrap();
    let api_version = value["apiVersion"].as_str().unwrap().to_string();
    let kind = value["kind"].as_str().unwrap().to_string();
    objects::decode(&api_version, &kind, value).unwrap().unwrap()
}
