//! eval-admission beside its nearest peer: Kueue v0.19.2's own Job webhooks
//! (`/mutate-batch-v1-job`, `/validate-batch-v1-job`), each reached directly
//! over HTTPS (HTTP/1.1 keep-alive) by this load generator, with the same
//! AdmissionReview bodies (`cargo bench --bench peers`).
//!
//! Servers, each pinned to CPU 0 (the generator, kube-apiserver and etcd on CPU 1):
//! - `eval-admission-noop`: `serve --noop`, the floor (TLS, HTTP, read the body, allow);
//! - `eval-admission`: the full server on examples/cluster.yaml, one tokio worker;
//! - `kueue`: the real Kueue controller manager (tests/common/control_plane/
//!   `Kueue::start`, on a real kube-apiserver and etcd), started with
//!   GOMAXPROCS=1 (inherited from this process's environment: `Kueue::start`
//!   passes only KUBECONFIG itself) and pinned with `taskset -a -cp 0`.
//!
//! Kueue decides from its informer caches, so the plane gets the same state
//! eval-admission's full server reads (examples/cluster.yaml) plus a LocalQueue
//! named `default` in team-a-namespace: with it Kueue's LocalQueue defaulting
//! gives the unlabelled Job a queue and suspends it, so Kueue's /mutate does
//! the same job as eval-admission's (label + suspend, a JSON patch back)
//! instead of the no-op path of a Job it does not manage. Before measuring,
//! every server's answer to each body is polled until it is `allowed: true`
//! (and, for Kueue's /mutate, carries the queue label in its patch) and
//! printed once.
//!
//! Cases: `job-create-mutate` (fixtures::job_create() to /mutate and
//! /mutate-batch-v1-job) and `job-create-validate` (fixtures::job_create_mutated()
//! to /validate and /validate-batch-v1-job). For each: a closed loop (32
//! connections, each sending the next request when answered: reviews/s and
//! CPU µs per review) and an open loop at a fixed rate Kueue sustains
//! (PEERS_RATE, default 500/s, about half of what Kueue's /mutate answers on
//! one core in the closed loop: p50/p99 and CPU per review). 3 repeats of 4 s,
//! servers alternated (rotated) repeat by repeat, medians. Server CPU is
//! utime + stime from /proc. Kueue's controllers use CPU with no load at all
//! (resyncs, leases, metrics): each server's idle CPU is measured with no
//! load before and after the runs, and the CPU figures are given raw and
//! with that idle rate times the run's length subtracted (`_idle_adjusted`).
//! VmRSS of each server after the runs. Writes $BENCH_OUT/peers.json.
//!
//! `BENCH_SMOKE=1`: 400 ms runs, 1 repeat, 1 s idle windows (plus Kueue's start).
//! PEERS_REPEATS, PEERS_SECONDS and PEERS_RATE override the sizes.

mod fixtures;
mod harness;
mod loadgen;
mod machine;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use harness::control_plane::{ControlPlane, Kueue};
use loadgen::{CONNECTIONS, Run, run, run_closed};
use machine::{loadavg, machine};
use serde_json::{Value, json};

type Body = Vec<u8>;

const SERVER_CPU: usize = 0;
const GENERATOR_CPU: usize = 1;

/// eval-admission servers' pids, for the signal handler (Kueue, etcd and
/// kube-apiserver go by their parent-death signal when this process exits).
static SERVER_PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

fn round4(value: f64) -> f64 {
    (value * 10000.0).round() / 10000.0
}

fn summarize(runs: &[Run], idle_cpu_s_per_s: f64) -> Value {
    let pick = |f: &dyn Fn(&Run) -> f64| harness::median(&mut runs.iter().map(f).collect::<Vec<_>>());
    json!({
        "offered_rps": (runs[0].offered > 0.0).then_some(runs[0].offered),
        "achieved_rps": round2(pick(&|r| r.achieved)),
        "p50_ms": round4(pick(&|r| r.p50_ms)),
        "p99_ms": round4(pick(&|r| r.p99_ms)),
        "cpu_us_per_review": round2(pick(&|r| r.cpu_us_per_review())),
        "cpu_us_per_review_idle_adjusted": round2(pick(&|r| r.cpu_us_per_review_adjusted(idle_cpu_s_per_s))),
        "errors": runs.iter().map(|r| r.errors).sum::<usize>(),
        "repeats": runs.len(),
        "achieved_rps_each": runs.iter().map(|r| round2(r.achieved)).collect::<Vec<_>>(),
        "p99_ms_each": runs.iter().map(|r| round4(r.p99_ms)).collect::<Vec<_>>(),
        "cpu_us_per_review_each": runs.iter().map(|r| round2(r.cpu_us_per_review())).collect::<Vec<_>>(),
    })
}

// ------------------------------------------------------------------ processes

fn status_field(pid: u32, field: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix(field)?.trim().trim_end_matches("kB").trim().parse().ok())
}

fn rss_mib(pid: u32) -> f64 {
    round2(status_field(pid, "VmRSS:").unwrap_or(0) as f64 / 1024.0)
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default().trim().to_string()
}

/// The `kueue` process at or under `root` (the pid `Kueue::start` spawned is
/// `unshare`, which execs `sh`, which execs `kueue`; should any of them fork
/// instead, walk the children by their ppid).
fn find_kueue(root: u32) -> Result<u32> {
    let mut frontier = vec![root];
    while let Some(pid) = frontier.pop() {
        if comm(pid) == "kueue" {
            return Ok(pid);
        }
        for entry in std::fs::read_dir("/proc")?.flatten() {
            let Some(child) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            if ppid == Some(pid) {
                frontier.push(child);
            }
        }
    }
    bail!("no process named kueue at or under pid {root}")
}

/// `taskset -a -cp CPU PID`: every thread of the process (threads started later inherit it).
fn pin_all(pid: u32, cpu: usize) -> bool {
    std::process::Command::new("taskset")
        .args(["-a", "-cp", &cpu.to_string(), &pid.to_string()])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// GOMAXPROCS as the process was started with, from /proc/PID/environ.
fn environ_var(pid: u32, name: &str) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    environ.split(|b| *b == 0).find_map(|entry| {
        let entry = String::from_utf8_lossy(entry);
        entry.strip_prefix(&format!("{name}=")).map(str::to_string)
    })
}

/// Ctrl-C or SIGTERM: kill the eval-admission servers and exit; the control
/// plane and Kueue follow by their parent-death signal.
fn on_signal_kill_children() {
    std::thread::spawn(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("signal runtime");
        runtime.block_on(async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        });
        eprintln!("interrupted: stopping the servers");
        for pid in SERVER_PIDS.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
        std::process::exit(130);
    });
}

// ------------------------------------------------------------------ reviews

/// One POST; the AdmissionReview's `response`.
async fn review(client: &reqwest::Client, url: &str, body: &Body) -> Result<Value> {
    let response = client.post(url).header("content-type", "application/json").body(body.clone()).send().await?;
    let status = response.status();
    let text = response.text().await?;
    ensure!(status == 200, "{url}: HTTP {status}: {text}");
    let review: Value = serde_json::from_str(&text).with_context(|| format!("{url}: {text}"))?;
    Ok(review["response"].clone())
}

fn describe(response: &Value) -> Value {
    let patch = response["patch"]
        .as_str()
        .and_then(|p| base64::engine::general_purpose::STANDARD.decode(p).ok())
        .and_then(|p| serde_json::from_slice::<Value>(&p).ok());
    json!({"allowed": response["allowed"], "status": response["status"], "patch": patch})
}

/// Polls until `url` answers `allowed: true` (and `accept` likes the answer).
async fn wait_allowed(
    client: &reqwest::Client,
    url: &str,
    body: &Body,
    timeout: Duration,
    accept: impl Fn(&Value) -> bool,
) -> Result<Value> {
    let deadline = Instant::now() + timeout;
    let mut last: String;
    loop {
        match review(client, url, body).await {
            Ok(response) if response["allowed"] == true && accept(&response) => return Ok(response),
            Ok(response) => last = describe(&response).to_string(),
            Err(error) => last = format!("{error:#}"),
        }
        if Instant::now() >= deadline {
            bail!("{url} did not answer allowed within {timeout:?}; last answer: {last}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Each server's CPU seconds per second over `window` with no load.
async fn idle_cpu(targets: &[Target], window: Duration) -> Vec<f64> {
    let before: Vec<_> = targets.iter().map(|t| harness::cpu_time(t.pid)).collect();
    let start = Instant::now();
    tokio::time::sleep(window).await;
    let elapsed = start.elapsed().as_secs_f64();
    targets
        .iter()
        .zip(before)
        .map(|(t, b)| harness::cpu_time(t.pid).saturating_sub(b).as_secs_f64() / elapsed)
        .collect()
}

// ------------------------------------------------------------------ main

struct Target {
    name: &'static str,
    base: String,
    pid: u32,
    mutate: &'static str,
    validate: &'static str,
}

#[derive(Clone, Copy, PartialEq)]
enum Load {
    Closed,
    Open(f64),
}

fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn main() -> Result<()> {
    on_signal_kill_children();
    let smoke = harness::smoke();
    let duration = env_number::<f64>("PEERS_SECONDS").map(Duration::from_secs_f64).unwrap_or(if smoke {
        Duration::from_millis(400)
    } else {
        Duration::from_secs(4)
    });
    let repeats: usize = env_number("PEERS_REPEATS").unwrap_or(if smoke { 1 } else { 3 });
    let rate: f64 = env_number("PEERS_RATE").unwrap_or(if smoke { 200.0 } else { 500.0 });
    let idle_window = if smoke { Duration::from_secs(1) } else { Duration::from_secs(5) };
    let pinned = harness::cpus() >= 2;
    let machine = machine();

    // The control plane (its processes pinned away from the servers' core) and Kueue.
    let plane = ControlPlane::start(&[])?;
    eprintln!("control plane in {} (logs in logs/)", plane.dir.display());
    if pinned {
        for (_, pid) in plane.pids() {
            pin_all(pid, GENERATOR_CPU);
        }
    }
    // Kueue::start passes only KUBECONFIG; the rest of its environment is
    // this process's, so GOMAXPROCS goes through it. Set only around the
    // start, while no other thread of this process reads the environment
    // (the control plane's spawner thread forks only when asked, from here).
    // SAFETY: see above; nothing else runs concurrently with these calls.
    unsafe { std::env::set_var("GOMAXPROCS", "1") };
    let kueue = Kueue::start(&plane);
    unsafe { std::env::remove_var("GOMAXPROCS") };
    let kueue = kueue?;
    let kueue_pid = find_kueue(kueue.pid().context("Kueue is not running")?)?;
    let kueue_gomaxprocs = environ_var(kueue_pid, "GOMAXPROCS");
    let kueue_pinned = pinned && pin_all(kueue_pid, SERVER_CPU);
    eprintln!("kueue pid {kueue_pid}, GOMAXPROCS={kueue_gomaxprocs:?}, pinned to CPU {SERVER_CPU}: {kueue_pinned}");

    // What eval-admission's full server reads, and Kueue's default LocalQueue for team-a-namespace.
    plane.run(&["apply", "-f", harness::repo("examples/cluster.yaml").to_str().context("path")?], None)?;
    plane.apply(
        &[json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": "default", "namespace": "team-a-namespace"}, "spec": {"clusterQueue": "team-a-cq"}})],
        &[],
    )?;

    // eval-admission, as benches/load.rs starts it.
    let dir = tempfile::tempdir()?;
    let (cert, key, ca) = harness::certificates(dir.path());
    let server_cpu = pinned.then_some(SERVER_CPU);
    let cluster = harness::repo("examples/cluster.yaml");
    let cluster = cluster.to_str().context("path")?;
    let env = [("TOKIO_WORKER_THREADS", "1")];
    let ready = Duration::from_secs(10);
    let noop = harness::serve(harness::BIN, server_cpu, &cert, &key, &["--cluster", cluster, "--noop"], &env, ready);
    SERVER_PIDS.lock().unwrap().push(noop.pid());
    let full = harness::serve(
        harness::BIN,
        server_cpu,
        &cert,
        &key,
        &["--cluster", cluster],
        &[env[0], ("RUST_LOG", "info")],
        ready,
    );
    SERVER_PIDS.lock().unwrap().push(full.pid());
    if pinned {
        harness::pin_self(GENERATOR_CPU);
    }

    let targets = [
        Target {
            name: "eval-admission-noop",
            base: format!("https://localhost:{}", noop.port),
            pid: noop.pid(),
            mutate: "/mutate",
            validate: "/validate",
        },
        Target {
            name: "eval-admission",
            base: format!("https://localhost:{}", full.port),
            pid: full.pid(),
            mutate: "/mutate",
            validate: "/validate",
        },
        Target {
            name: "kueue",
            base: format!("https://127.0.0.1:{}", kueue.webhook_port()),
            pid: kueue_pid,
            mutate: "/mutate-batch-v1-job",
            validate: "/validate-batch-v1-job",
        },
    ];
    let cases: [(&str, bool, Body); 2] = [
        ("job-create-mutate", true, fixtures::job_create()),
        ("job-create-validate", false, fixtures::job_create_mutated()),
    ];

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes())?)
        .add_root_certificate(reqwest::Certificate::from_pem(plane.ca.pem.as_bytes())?)
        .http1_only()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(CONNECTIONS)
        .timeout(Duration::from_secs(10))
        .build()?;

    let report = runtime.block_on(async {
        // A real review from every server, not an error path: polled (Kueue's
        // caches fill after the objects are created), printed once.
        let mut answers = serde_json::Map::new();
        for (case, mutate, body) in &cases {
            for target in &targets {
                let url = format!("{}{}", target.base, if *mutate { target.mutate } else { target.validate });
                let needs_queue = *mutate && target.name == "kueue";
                let response = wait_allowed(&client, &url, body, Duration::from_secs(60), |response| {
                    !needs_queue || describe(response)["patch"].to_string().contains("kueue.x-k8s.io~1queue-name")
                })
                .await?;
                let described = describe(&response);
                println!("{case} {:<20} {url}: {described}", target.name);
                answers.insert(format!("{case}/{}", target.name), described);
            }
        }
        // Warm up: connections, TLS sessions, allocators, Go's heap.
        for target in &targets {
            for (_, mutate, body) in &cases {
                let url = format!("{}{}", target.base, if *mutate { target.mutate } else { target.validate });
                run(&client, &url, body, 300.0, Duration::from_millis(if smoke { 200 } else { 1000 }), target.pid).await;
            }
        }

        let idle_before = idle_cpu(&targets, idle_window).await;

        // runs[case][load][server]
        let loads = [Load::Closed, Load::Open(rate)];
        let mut runs: Vec<Vec<Vec<Vec<Run>>>> = vec![vec![vec![Vec::new(); targets.len()]; loads.len()]; cases.len()];
        for repeat in 0..repeats {
            for (c, (case, mutate, body)) in cases.iter().enumerate() {
                for (l, load) in loads.iter().enumerate() {
                    // Rotate which goes first, so drift hits every server alike.
                    for i in 0..targets.len() {
                        let s = (i + repeat) % targets.len();
                        let target = &targets[s];
                        let url = format!("{}{}", target.base, if *mutate { target.mutate } else { target.validate });
                        let result = match load {
                            Load::Closed => run_closed(&client, &url, body, duration, target.pid).await,
                            Load::Open(rate) => run(&client, &url, body, *rate, duration, target.pid).await,
                        };
                        eprintln!(
                            "repeat {repeat} {case} {:<6} {:<20} {:7.0}/s p50 {:6.2} ms p99 {:6.2} ms {:7.1} us/review, {} errors",
                            if *load == Load::Closed { "closed" } else { "open" },
                            target.name,
                            result.achieved,
                            result.p50_ms,
                            result.p99_ms,
                            result.cpu_us_per_review(),
                            result.errors
                        );
                        runs[c][l][s].push(result);
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            }
        }
        let rss: Vec<f64> = targets.iter().map(|t| rss_mib(t.pid)).collect();
        let idle_after = idle_cpu(&targets, idle_window).await;
        let idle_rate: Vec<f64> = idle_before.iter().zip(&idle_after).map(|(a, b)| (a + b) / 2.0).collect();

        let mut case_results = serde_json::Map::new();
        for (c, (case, mutate, body)) in cases.iter().enumerate() {
            let mut servers = serde_json::Map::new();
            for (s, target) in targets.iter().enumerate() {
                servers.insert(
                    target.name.to_string(),
                    json!({
                        "path": if *mutate { target.mutate } else { target.validate },
                        "closed": summarize(&runs[c][0][s], idle_rate[s]),
                        "open": summarize(&runs[c][1][s], idle_rate[s]),
                        "answer": answers[&format!("{case}/{}", target.name)],
                    }),
                );
            }
            case_results.insert(case.to_string(), json!({"body_bytes": body.len(), "servers": servers}));
        }
        let per_server = |values: &[f64], scale: f64| -> Value {
            targets.iter().zip(values).map(|(t, v)| (t.name.to_string(), json!(round2(v * scale)))).collect()
        };
        anyhow::Ok(json!({
            "benchmark": "peers",
            "smoke": smoke,
            "duration_s": duration.as_secs_f64(),
            "repeats": repeats,
            "connections": CONNECTIONS,
            "open_loop_rps": rate,
            "server_cpu_pinned": pinned,
            "cases": case_results,
            "rss_mib_after_runs": per_server(&rss, 1.0),
            "idle_cpu_ms_per_s": per_server(&idle_rate, 1000.0),
            "idle_cpu_ms_per_s_before": per_server(&idle_before, 1000.0),
            "idle_cpu_ms_per_s_after": per_server(&idle_after, 1000.0),
            "kueue_idle_cpu_ms_per_s": round2(idle_rate[2] * 1000.0),
            "kueue": {"version": "v0.19.2", "pid": kueue_pid, "gomaxprocs": kueue_gomaxprocs, "pinned_cpu": kueue_pinned.then_some(SERVER_CPU)},
            "eval_admission": {"tokio_worker_threads": 1, "cluster": "examples/cluster.yaml", "rust_log": "info"},
            "machine": machine,
        }))
    })?;
    let mut report = report;
    report["machine"]["loadavg_at_end"] = json!(loadavg());
    print_table(&report, &targets);
    harness::write_json("peers.json", &report);
    // Drop order: the servers, then Kueue (unregisters its webhooks, stops), then the plane.
    drop((noop, full));
    drop(kueue);
    drop(plane);
    Ok(())
}

fn print_table(report: &Value, targets: &[Target]) {
    println!(
        "\npeers: {} s x {} repeat(s), medians; server on CPU {SERVER_CPU}, generator on CPU {GENERATOR_CPU}; open loop at {} rps",
        report["duration_s"], report["repeats"], report["open_loop_rps"]
    );
    println!(
        "{:<28} {:<20} {:>9} {:>10} {:>10} {:>8} {:>8} {:>10} {:>10} {:>6}",
        "case", "server", "closed/s", "closed µs", "(adj.)", "p50 ms", "p99 ms", "open µs", "(adj.)", "errors"
    );
    let cases = report["cases"].as_object().unwrap();
    for (case, result) in cases {
        for target in targets {
            let s = &result["servers"][target.name];
            let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
            println!(
                "{:<28} {:<20} {:>9.0} {:>10.1} {:>10.1} {:>8.2} {:>8.2} {:>10.1} {:>10.1} {:>6}",
                format!("{case} ({} B)", result["body_bytes"]),
                target.name,
                f(&s["closed"]["achieved_rps"]),
                f(&s["closed"]["cpu_us_per_review"]),
                f(&s["closed"]["cpu_us_per_review_idle_adjusted"]),
                f(&s["open"]["p50_ms"]),
                f(&s["open"]["p99_ms"]),
                f(&s["open"]["cpu_us_per_review"]),
                f(&s["open"]["cpu_us_per_review_idle_adjusted"]),
                s["closed"]["errors"].as_u64().unwrap_or(0) + s["open"]["errors"].as_u64().unwrap_or(0),
            );
        }
    }
    for target in targets {
        println!(
            "{:<20} VmRSS after the runs {:>8.1} MiB, idle CPU {:>6.2} ms/s",
            target.name, report["rss_mib_after_runs"][target.name], report["idle_cpu_ms_per_s"][target.name]
        );
    }
}
