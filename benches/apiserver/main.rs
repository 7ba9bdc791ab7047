//! Through the real kube-apiserver (`cargo bench --bench apiserver`).
//!
//! A. End-to-end latency of Job creates from a kube client on loopback, at a
//!    fixed concurrency, in four phases alternated round by round:
//!    `none` (no admission for Jobs), `eval-admission` (the shipped webhook
//!    configurations, the release server), `mutating-admission-policy` (the
//!    nearest native alternative: benches/fixtures/mutating-admission-policy.yaml,
//!    CEL inside the API server, which can queue and suspend but check nothing)
//!    and `kyverno` (a peer: Kyverno v1.19.1's admission controller out of
//!    cluster, benches/kyverno.rs, with benches/fixtures/kyverno-policy.yaml,
//!    which queues, suspends and checks the LocalQueue by apiCalls).
//!    Every created Job is checked to carry (or, in `none`, not carry) the queue
//!    label and `spec.suspend: true`, and the server's review counter must move
//!    by exactly two reviews per create in `eval-admission` and not at all
//!    otherwise (likewise Kyverno's count of Job reviews in `kyverno`; Kyverno
//!    keeps running in every phase, its ClusterPolicy deleted and none of its
//!    webhooks matching Jobs outside its own). Each phase of each round has its
//!    own namespace, and its Jobs are deleted before the next phase starts, so
//!    every phase meets the same etcd and watch-cache size. With Kyverno, the
//!    bench then posts the AdmissionReviews for its Job to Kyverno's webhooks
//!    itself (closed loop) for Kyverno's CPU per review without the API server
//!    in between (`kyverno_direct`).
//!
//!    The `kyverno` phase runs in full runs and not in `BENCH_SMOKE=1` runs
//!    (part of `make test`, which must not build Kyverno);
//!    APISERVER_BENCH_KYVERNO=1 or 0 forces it on or off. When on, the bench
//!    runs hack/build-kyverno.sh (instant when built; about 20 minutes cold).
//! B. Start-up and memory at scale from the real API server: 10,000 Namespaces
//!    and 10,000 LocalQueues plus a handful of ClusterQueues, Cohorts,
//!    WorkloadPriorityClasses and PriorityClasses; then `eval-admission serve`
//!    (no --cluster: it lists and watches) is started three times, measuring
//!    spawn to `/readyz` 200 and VmRSS once ready.
//!
//! It starts its own control plane (tests/common/control_plane/, with the
//! MutatingAdmissionPolicy feature gate and API version), which goes with it
//! however it ends. Results: `$BENCH_OUT/apiserver.json` (BENCH_OUT defaults to
//! bench-out/). Full run: 8 in flight, 50 warm-up + 1,000 measured creates per
//! phase, 10 rounds, 10,000 namespaces, 3 starts (about 3 minutes on 2 cores
//! when the machine is otherwise idle). `BENCH_SMOKE=1`: 4 in flight, 20
//! creates, 1 round, 200 namespaces (about 15 s plus the control plane's start).
//! Sizes can be overridden: APISERVER_BENCH_CREATES, APISERVER_BENCH_ROUNDS,
//! APISERVER_BENCH_CONCURRENCY, APISERVER_BENCH_NAMESPACES, APISERVER_BENCH_STARTS;
//! the kyverno phase: APISERVER_BENCH_KYVERNO.
//!
//! At 8 in flight on a small machine the API server is CPU-bound, so added
//! latency there is mostly added API-server CPU per create times queueing;
//! `cpu_ms_per_create` shows where it goes. APISERVER_BENCH_CONCURRENCY=1 gives
//! the unloaded latency.

#[path = "../../tests/common/control_plane/mod.rs"]
mod control_plane;
#[path = "../kyverno.rs"]
mod kyverno;
#[path = "../machine.rs"]
mod machine;

// By phase: the objects both parts create, part A (create latency), part B
// (start-up at scale), and the statistics they report.
mod latency;
mod objects;
mod startup;
mod stats;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use control_plane::Environment;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::admissionregistration::v1beta1::{MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams};
use machine::{loadavg, machine};
use serde::Deserialize;
use serde_json::{Value, json};
use testkit::JobBuilder;

use latency::*;
use objects::*;
use startup::*;
use stats::*;

const BIN: &str = env!("CARGO_BIN_EXE_eval-admission");
const MAP_FIXTURE: &str = "benches/fixtures/mutating-admission-policy.yaml";
/// The MutatingAdmissionPolicy API in Kubernetes 1.35: beta, off by default.
const MAP_GROUP: &str = "admissionregistration.k8s.io";
const MAP_VERSION: &str = "v1beta1";
const APISERVER_FLAGS: [&str; 2] =
    ["--feature-gates=MutatingAdmissionPolicy=true", "--runtime-config=admissionregistration.k8s.io/v1beta1=true"];
const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";
const DEFAULT_QUEUE_ANNOTATION: &str = "kueue.x-k8s.io/default-queue-name";
const QUEUE: &str = "eval-queue";
const FIELD_MANAGER: &str = "eval-admission-bench";

/// The pid of a server started in part B, for the signal handler.
static CHILD_PID: AtomicU32 = AtomicU32::new(0);

struct Settings {
    smoke: bool,
    concurrency: usize,
    creates: usize,
    warmup: usize,
    rounds: usize,
    namespaces: usize,
    starts: usize,
    create_concurrency: usize,
    settle: Duration,
    out: PathBuf,
    /// Whether the `kyverno` phase runs (kyverno::enabled).
    kyverno: bool,
}

impl Settings {
    fn from_env() -> Result<Self> {
        let smoke = std::env::var("BENCH_SMOKE").is_ok_and(|v| !v.is_empty() && v != "0");
        let number = |name: &str, full: usize, smoke_value: usize| -> Result<usize> {
            match std::env::var(name) {
                Ok(v) => v.parse().with_context(|| format!("{name}={v} is not a number")),
                Err(_) => Ok(if smoke { smoke_value } else { full }),
            }
        };
        let out =
            std::env::var_os("BENCH_OUT").map(PathBuf::from).unwrap_or_else(|| testkit::repo("").join("bench-out"));
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        let out = std::path::absolute(&out)?;
        Ok(Self {
            smoke,
            concurrency: number("APISERVER_BENCH_CONCURRENCY", 8, 4)?.max(1),
            creates: number("APISERVER_BENCH_CREATES", 1000, 20)?.max(1),
            warmup: if smoke { 5 } else { 50 },
            rounds: number("APISERVER_BENCH_ROUNDS", 10, 1)?.max(1),
            namespaces: number("APISERVER_BENCH_NAMESPACES", 10_000, 200)?,
            starts: number("APISERVER_BENCH_STARTS", 3, 3)?.max(1),
            create_concurrency: 32,
            settle: if smoke { Duration::from_millis(200) } else { Duration::from_secs(2) },
            out,
            kyverno: kyverno::enabled(smoke)?,
        })
    }

    /// The phases measured, in their order within a round.
    fn phases(&self) -> Vec<Phase> {
        Phase::ALL.into_iter().filter(|phase| *phase != Phase::Kyverno || self.kyverno).collect()
    }
}

// ------------------------------------------------------------------ cluster

/// The control plane and the webhook server; stopped on drop, and by their
/// parent-death signal if this process is killed.
type Cluster = Environment;

fn cluster_up() -> Result<Cluster> {
    Environment::start(&APISERVER_FLAGS, Path::new(BIN), &testkit::repo("").join("manifests/base/config.yaml"), false)
}

async fn kube_client(kubeconfig: &Path) -> Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default()).await?;
    config.read_timeout = Some(Duration::from_secs(60));
    Ok(kube::Client::try_from(config)?)
}

// ------------------------------------------------------------------ main

async fn run(settings: &Settings, cluster: &Cluster, report: &Mutex<Value>) -> Result<()> {
    let client = kube_client(&cluster.plane.kubeconfig).await?;
    let version = client.apiserver_version().await?;
    let groups = client.list_api_groups().await?;
    let served = groups
        .groups
        .iter()
        .find(|g| g.name == MAP_GROUP)
        .map(|g| g.versions.iter().map(|v| v.version.clone()).collect::<Vec<_>>())
        .unwrap_or_default();
    ensure!(served.iter().any(|v| v == MAP_VERSION), "{MAP_GROUP}/{MAP_VERSION} is not served (served: {served:?})");
    report.lock().unwrap()["cluster"] = json!({
        "kube_apiserver": version.git_version,
        "extra_apiserver_flags": APISERVER_FLAGS.join(" "),
        "mutating_admission_policy_api": format!("{MAP_GROUP}/{MAP_VERSION}"),
        "admissionregistration_versions_served": served,
        "webhook_server": "release build of this tree (tests/common/control_plane/eval_admission.rs), manifests/base/config.yaml",
    });

    eprintln!(
        "A: create latency, {} creates per phase at concurrency {}, {} round(s)",
        settings.creates, settings.concurrency, settings.rounds
    );
    let latency = create_latency(settings, cluster, &client).await?;
    report.lock().unwrap()["create_latency"] = latency;
    eprintln!("B: start-up and memory at scale");
    let scale = scale(settings, cluster, &client).await?;
    report.lock().unwrap()["scale_from_apiserver"] = scale;
    Ok(())
}

fn summary(report: &Value) {
    println!("apiserver benchmark{}", if report["smoke"] == true { " (smoke)" } else { "" });
    let latency = &report["create_latency"];
    if latency.is_object() {
        println!(
            "  Job create latency, {} creates x {} rounds per phase at concurrency {} (median over rounds):",
            latency["creates_per_phase"], latency["rounds"], latency["concurrency"]
        );
        let order: Vec<&str> =
            latency["order"].as_array().map(|o| o.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        for name in order {
            let p = &latency["phases"][name];
            let added = if name == Phase::None.name() {
                String::new()
            } else {
                let ms = |key: &str| p[key].as_f64().unwrap_or(f64::NAN);
                format!("  (added p50 {:+.2} ms, p99 {:+.2} ms)", ms("added_p50_ms"), ms("added_p99_ms"))
            };
            let ms = |key: &str| p[key].as_f64().unwrap_or(f64::NAN);
            let cpu = match p["kyverno_cpu_ms_per_create"].as_f64() {
                Some(kyverno) => format!(
                    "  CPU ms/create: kube-apiserver {:.2}, kyverno {kyverno:.2}",
                    ms("apiserver_cpu_ms_per_create")
                ),
                None => format!("  CPU ms/create: kube-apiserver {:.2}", ms("apiserver_cpu_ms_per_create")),
            };
            println!("    {:<26} p50 {:7.2} ms  p99 {:7.2} ms{added}{cpu}", name, ms("p50_ms"), ms("p99_ms"));
        }
    }
    let direct = &latency["kyverno_direct"];
    if direct.is_object() {
        println!(
            "  Kyverno alone, reviews posted by the bench: /mutate {} µs, /validate {} µs of Kyverno CPU per review",
            direct["mutate"]["cpu_us_per_review"], direct["validate"]["cpu_us_per_review"]
        );
    }
    let scale = &report["scale_from_apiserver"];
    if scale.is_object() {
        println!(
            "  start-up with {} namespaces + {} LocalQueues: ready in {} s, VmRSS {} MiB (median of {})",
            scale["namespaces"],
            scale["local_queues"],
            scale["ready_seconds_median"],
            scale["rss_mib_median"],
            scale["runs"].as_array().map_or(0, Vec::len)
        );
    }
}

fn main() -> ExitCode {
    // cargo passes --bench (and filters); nothing here takes arguments.
    let settings = match Settings::from_env() {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("apiserver bench: {error:#}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let report = Mutex::new(json!({
        "benchmark": "apiserver",
        "smoke": settings.smoke,
        "machine": machine(),
    }));
    let started = Instant::now();
    let result = (|| -> Result<()> {
        let cluster = cluster_up()?;
        // Ctrl-C or SIGTERM: stop part B's server, then exit; the control
        // plane's processes follow by their parent-death signal.
        runtime.spawn(async move {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            eprintln!("interrupted: stopping the control plane");
            let pid = CHILD_PID.load(Ordering::SeqCst);
            if pid != 0 {
                let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
            std::process::exit(130);
        });
        let outcome = runtime.block_on(run(&settings, &cluster, &report));
        drop(cluster);
        outcome
    })();
    let mut report = report.into_inner().unwrap();
    report["duration_seconds"] = json!(round3(started.elapsed().as_secs_f64()));
    report["machine"]["loadavg_at_end"] = json!(loadavg());
    if let Err(error) = &result {
        report["error"] = json!(format!("{error:#}"));
    }
    let path = settings.out.join("apiserver.json");
    let written = serde_json::to_string_pretty(&report)
        .map_err(anyhow::Error::from)
        .and_then(|text| std::fs::write(&path, text + "\n").map_err(anyhow::Error::from));
    match (&result, written) {
        (Ok(()), Ok(())) => {
            summary(&report);
            println!("  wrote {} in {:.0} s", path.display(), started.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        (Err(error), _) => {
            eprintln!("apiserver bench failed: {error:#}");
            ExitCode::FAILURE
        }
        (Ok(()), Err(error)) => {
            eprintln!("apiserver bench: writing {}: {error:#}", path.display());
            ExitCode::FAILURE
        }
    }
}
