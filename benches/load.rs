//! The server under load: `serve --noop` (same binary, TLS and HTTP stack, answers
//! allow with the uid echoed) beside the full server, each pinned to CPU 0 with
//! this load generator on CPU 1. HTTP/1.1 keep-alive, as the API server uses.
//! Two ways of loading it, both reported:
//! - open loop at fixed rates (a sweep for the Job CREATE): each request is sent
//!   when due, whether or not earlier ones were answered, so a slow server cannot
//!   slow the load down; at low rates the server idles between requests and pays
//!   for waking up, which both servers pay alike;
//! - closed loop: [`CONNECTIONS`] connections each send the next request as soon
//!   as the last is answered, so the server is as busy as the generator can make
//!   it; CPU per review there is the least noisy figure.
//!
//! Noop and full runs alternate. Writes $BENCH_OUT/load.json.
//!
//! `BENCH_BASELINE=/path/to/eval-admission`: an A/B of a change instead; the
//! "noop" runs are that build's full server, so the ratio is this build over it.

mod fixtures;
mod harness;
mod loadgen;

use std::time::Duration;

use loadgen::{CONNECTIONS, Run, run, run_closed};
use serde_json::{Value, json};

type Body = Vec<u8>;

fn summarize(runs: &[Run]) -> Value {
    let pick = |f: fn(&Run) -> f64| harness::median(&mut runs.iter().map(f).collect::<Vec<_>>());
    json!({
        "offered_rps": runs[0].offered,
        "achieved_rps": pick(|r| r.achieved),
        "p50_ms": pick(|r| r.p50_ms),
        "p99_ms": pick(|r| r.p99_ms),
        "cpu_us_per_review": pick(|r| r.cpu_us_per_review()),
        "errors": runs.iter().map(|r| r.errors).sum::<usize>(),
        "repeats": runs.len(),
        "p99_ms_each": runs.iter().map(|r| r.p99_ms).collect::<Vec<_>>(),
        "cpu_us_per_review_each": runs.iter().map(Run::cpu_us_per_review).collect::<Vec<_>>(),
    })
}

/// How long a server gets to be ready.
const READY: Duration = Duration::from_secs(10);

fn main() {
    let smoke = harness::smoke();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key, ca) = harness::certificates(dir.path());
    let pinned = harness::cpus() >= 2;
    let server_cpu = pinned.then_some(0);
    let cluster = harness::repo("examples/cluster.yaml");
    let cluster = cluster.to_str().unwrap();
    // One worker thread: the server has one core; tokio would otherwise size its pool to the machine.
    let env = [("TOKIO_WORKER_THREADS", "1")];
    let noop = match std::env::var("BENCH_BASELINE") {
        Ok(baseline) => harness::serve(&baseline, server_cpu, &cert, &key, &["--cluster", cluster], &env, READY),
        Err(_) => harness::serve(harness::BIN, server_cpu, &cert, &key, &["--cluster", cluster, "--noop"], &env, READY),
    };
    // BENCH_FULL_RUST_LOG=warn: the full server without its per-review log line, to see what that line costs.
    let full_log = std::env::var("BENCH_FULL_RUST_LOG").unwrap_or_else(|_| "info".into());
    let full_env = [env[0], ("RUST_LOG", full_log.as_str())];
    let full = harness::serve(harness::BIN, server_cpu, &cert, &key, &["--cluster", cluster], &full_env, READY);
    if pinned {
        harness::pin_self(1);
    }

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes()).unwrap())
        .http1_only()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(CONNECTIONS)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let servers = [("noop", &noop), ("full", &full)];
    let url = |server: &harness::Server, path: &str| format!("https://localhost:{}{path}", server.port);

    let (rates, duration, repeats): (Vec<f64>, Duration, usize) = if smoke {
        (vec![300.0], Duration::from_millis(500), 1)
    } else {
        (vec![1000.0, 2000.0, 4000.0, 6000.0, 8000.0, 10000.0, 12000.0, 14000.0], Duration::from_secs(4), 3)
    };
    // BENCH_RATES=2000,8000 BENCH_REPEATS=1: a quicker look while working on the server.
    let rates = std::env::var("BENCH_RATES")
        .ok()
        .map(|list| list.split(',').filter_map(|r| r.trim().parse().ok()).collect())
        .unwrap_or(rates);
    let repeats = std::env::var("BENCH_REPEATS").ok().and_then(|r| r.parse().ok()).unwrap_or(repeats);
    // The other shapes are compared at one moderate rate, and in the closed loop.
    let fixed_rate = if smoke { 300.0 } else { 4000.0 };
    let job_create = fixtures::job_create();
    let cases: Vec<(&str, &str, Body, Vec<f64>)> = vec![
        ("job-create-4k", "/mutate", fixtures::job_create_4k(), vec![fixed_rate]),
        ("job-create", "/mutate", job_create.clone(), rates.clone()),
        ("job-create-10k", "/mutate", fixtures::job_create_10k(), vec![fixed_rate]),
        // The API server's second call on the same create: where the model of Kueue runs.
        ("job-create-validate", "/validate", fixtures::job_create_mutated(), vec![fixed_rate]),
        ("job-update", "/validate", fixtures::job_update(), vec![fixed_rate]),
        ("jobset-create", "/mutate", fixtures::jobset_create(), vec![fixed_rate]),
    ];

    // BENCH_CASES=job-create-4k,job-update: only those.
    let cases: Vec<_> = match std::env::var("BENCH_CASES") {
        Ok(only) => cases.into_iter().filter(|(case, ..)| only.split(',').any(|name| name.trim() == *case)).collect(),
        Err(_) => cases,
    };

    let results = runtime.block_on(async {
        // Warm up both servers: connections, TLS sessions, allocator.
        for (_, server) in servers {
            run(&client, &url(server, "/mutate"), &job_create, 500.0, Duration::from_millis(500), server.pid()).await;
        }
        let mut results = serde_json::Map::new();
        for (case, path, body, rates) in &cases {
            let mut per_rate = Vec::new();
            let mut closed = Value::Null;
            // None: the closed loop.
            for load in std::iter::once(None).chain(rates.iter().copied().map(Some)) {
                let mut runs: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
                for repeat in 0..repeats {
                    // Alternate which goes first, so drift hits both alike.
                    let order = if repeat % 2 == 0 { [0, 1] } else { [1, 0] };
                    for index in order {
                        let (server, pid) = (servers[index].1, servers[index].1.pid());
                        let result = match load {
                            Some(rate) => run(&client, &url(server, path), body, rate, duration, pid).await,
                            None => run_closed(&client, &url(server, path), body, duration, pid).await,
                        };
                        runs[index].push(result);
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
                let (noop_summary, full_summary) = (summarize(&runs[0]), summarize(&runs[1]));
                // CPU time comes in 10 ms ticks: a short run may see none, and then there is no ratio.
                let noop_cpu = noop_summary["cpu_us_per_review"].as_f64().unwrap();
                let ratio = (noop_cpu > 0.0).then(|| full_summary["cpu_us_per_review"].as_f64().unwrap() / noop_cpu);
                let load_name = load.map_or("closed".to_string(), |rate| format!("{rate} rps"));
                println!(
                    "{case} {load_name:>9}: noop {:.0}/s p50 {:.2} ms p99 {:.2} ms {:.1} us/review | full {:.0}/s p50 {:.2} ms p99 {:.2} ms {:.1} us/review | cpu ratio {}",
                    noop_summary["achieved_rps"].as_f64().unwrap(), noop_summary["p50_ms"].as_f64().unwrap(), noop_summary["p99_ms"].as_f64().unwrap(), noop_summary["cpu_us_per_review"].as_f64().unwrap(),
                    full_summary["achieved_rps"].as_f64().unwrap(), full_summary["p50_ms"].as_f64().unwrap(), full_summary["p99_ms"].as_f64().unwrap(), full_summary["cpu_us_per_review"].as_f64().unwrap(),
                    ratio.map_or("n/a".to_string(), |r| format!("{r:.2}")),
                );
                let summary = json!({"noop": noop_summary, "full": full_summary, "cpu_ratio_full_over_noop": ratio});
                match load {
                    Some(rate) => per_rate.push(json!({"rate": rate, "noop": summary["noop"], "full": summary["full"], "cpu_ratio_full_over_noop": ratio})),
                    None => closed = summary,
                }
            }
            results.insert(case.to_string(), json!({"path": path, "body_bytes": body.len(), "runs": per_rate, "closed": closed}));
        }
        results
    });

    let highest = |mode: &str| -> Option<f64> {
        results.get("job-create")?["runs"]
            .as_array()?
            .iter()
            .filter(|run| run[mode]["p99_ms"].as_f64().is_some_and(|p99| p99 <= 5.0) && run[mode]["errors"] == 0)
            .filter_map(|run| run["rate"].as_f64())
            .fold(None, |best: Option<f64>, rate| Some(best.map_or(rate, |b| b.max(rate))))
    };
    let report = json!({
        "server_cpu_pinned": pinned,
        "duration_s": duration.as_secs_f64(),
        "repeats": repeats,
        "smoke": smoke,
        "cases": results,
        "highest_rate_p99_under_5ms": {"noop": highest("noop"), "full": highest("full")},
        "fixed_rate": fixed_rate,
    });
    harness::write_json("load.json", &report);
}
