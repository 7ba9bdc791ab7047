//! The load generator of the server benchmarks (benches/load.rs,
//! benches/peers.rs): HTTPS POSTs of one body to one URL over a pool of
//! keep-alive connections, in an open loop at a fixed rate or a closed loop,
//! with the server's CPU (utime + stime from /proc) over the run.

#![allow(dead_code)]

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::harness;

type Body = Vec<u8>;

/// Connections the generator keeps open, like the API server's pool of keep-alive
/// connections to a webhook: requests beyond them wait for one, and that wait counts.
pub const CONNECTIONS: usize = 32;

/// One run against one server: what the generator saw and the server's CPU.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub offered: f64,
    pub achieved: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: usize,
    pub completed: usize,
    pub elapsed_s: f64,
    pub cpu_s: f64,
}

impl Run {
    pub fn cpu_us_per_review(&self) -> f64 {
        self.cpu_s * 1e6 / self.completed.max(1) as f64
    }

    /// CPU per review less the server's idle CPU over the run's length.
    pub fn cpu_us_per_review_adjusted(&self, idle_cpu_s_per_s: f64) -> f64 {
        (self.cpu_s - idle_cpu_s_per_s * self.elapsed_s).max(0.0) * 1e6 / self.completed.max(1) as f64
    }
}

fn finish(offered: f64, mut latencies: Vec<f64>, errors: usize, elapsed: Duration, cpu: Duration) -> Run {
    latencies.sort_by(|a, b| a.total_cmp(b));
    Run {
        offered,
        achieved: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50_ms: harness::quantile(&latencies, 0.50),
        p99_ms: harness::quantile(&latencies, 0.99),
        errors,
        completed: latencies.len(),
        elapsed_s: elapsed.as_secs_f64(),
        cpu_s: cpu.as_secs_f64(),
    }
}

async fn post_ok(client: &reqwest::Client, url: &str, body: axum::body::Bytes) -> bool {
    match client.post(url).header("content-type", "application/json").body(body).send().await {
        Ok(response) => response.status() == 200 && response.bytes().await.is_ok(),
        Err(_) => false,
    }
}

/// Open loop at `rate`: each request is sent when due, answered or not.
pub async fn run(client: &reqwest::Client, url: &str, body: &Body, rate: f64, duration: Duration, pid: u32) -> Run {
    let connections = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS));
    let total = (rate * duration.as_secs_f64()).round() as usize;
    let body = axum::body::Bytes::from(body.clone());
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(total)));
    let errors = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let cpu_before = harness::cpu_time(pid);
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let mut sent = 0;
    while sent < total {
        let due = ((start.elapsed().as_secs_f64() * rate) as usize + 1).min(total);
        while sent < due {
            let (client, url, body) = (client.clone(), url.to_string(), body.clone());
            let (latencies, errors, connections) = (latencies.clone(), errors.clone(), connections.clone());
            tasks.spawn(async move {
                let sent_at = Instant::now();
                let _connection = connections.acquire().await;
                if post_ok(&client, &url, body).await {
                    latencies.lock().unwrap().push(sent_at.elapsed().as_secs_f64() * 1000.0);
                } else {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            });
            sent += 1;
        }
        tokio::time::sleep(Duration::from_micros(250)).await;
    }
    while tasks.join_next().await.is_some() {}
    let elapsed = start.elapsed();
    let cpu = harness::cpu_time(pid).saturating_sub(cpu_before);
    let latencies = std::mem::take(&mut *latencies.lock().unwrap());
    finish(rate, latencies, errors.load(Ordering::Relaxed), elapsed, cpu)
}

/// Closed loop: every connection sends its next request when the last is answered.
pub async fn run_closed(client: &reqwest::Client, url: &str, body: &Body, duration: Duration, pid: u32) -> Run {
    let body = axum::body::Bytes::from(body.clone());
    let cpu_before = harness::cpu_time(pid);
    let start = Instant::now();
    let deadline = start + duration;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..CONNECTIONS {
        let (client, url, body) = (client.clone(), url.to_string(), body.clone());
        tasks.spawn(async move {
            let (mut latencies, mut errors) = (Vec::new(), 0usize);
            while Instant::now() < deadline {
                let sent_at = Instant::now();
                if post_ok(&client, &url, body.clone()).await {
                    latencies.push(sent_at.elapsed().as_secs_f64() * 1000.0);
                } else {
                    errors += 1;
                }
            }
            (latencies, errors)
        });
    }
    let (mut latencies, mut errors) = (Vec::new(), 0);
    while let Some(Ok((mut some, failed))) = tasks.join_next().await {
        latencies.append(&mut some);
        errors += failed;
    }
    let elapsed = start.elapsed();
    let cpu = harness::cpu_time(pid).saturating_sub(cpu_before);
    finish(0.0, latencies, errors, elapsed, cpu)
}
