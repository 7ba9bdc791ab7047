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

#[path = "../tests/common/control_plane/mod.rs"]
mod control_plane;
mod kyverno;
mod machine;

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

const REPO: &str = env!("CARGO_MANIFEST_DIR");
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

// ------------------------------------------------------------------ settings

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
        let out = std::env::var_os("BENCH_OUT").map(PathBuf::from).unwrap_or_else(|| Path::new(REPO).join("bench-out"));
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
    Environment::start(&APISERVER_FLAGS, Path::new(BIN), &Path::new(REPO).join("manifests/base/config.yaml"), false)
}

async fn kube_client(kubeconfig: &Path) -> Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default()).await?;
    config.read_timeout = Some(Duration::from_secs(60));
    Ok(kube::Client::try_from(config)?)
}

// ------------------------------------------------------------------ objects

fn kueue(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind), plural)
}

fn dynamic(value: Value) -> Result<DynamicObject> {
    Ok(serde_json::from_value(value)?)
}

async fn create_cluster_scoped(client: &kube::Client, resource: &ApiResource, value: Value) -> Result<()> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    api.create(&PostParams::default(), &dynamic(value)?).await.context("creating a Kueue object")?;
    Ok(())
}

async fn create_namespace(client: &kube::Client, name: &str, team: &str, cluster_queue: &str) -> Result<()> {
    let namespace: Namespace = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {"team": team, "kueue.openshift.io/managed": "true"},
            "annotations": {DEFAULT_QUEUE_ANNOTATION: QUEUE},
        }
    }))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    let resource = kueue("LocalQueue", "localqueues");
    let queue = dynamic(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": QUEUE, "namespace": name},
        "spec": {"clusterQueue": cluster_queue},
    }))?;
    Api::<DynamicObject>::namespaced_with(client.clone(), name, &resource)
        .create(&PostParams::default(), &queue)
        .await
        .with_context(|| format!("creating LocalQueue {name}/{QUEUE}"))?;
    Ok(())
}

fn resource_quota(cpu: u32, gpus: u32) -> Value {
    json!([{
        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
        "flavors": [{"name": "default-flavor", "resources": [
            {"name": "cpu", "nominalQuota": cpu},
            {"name": "memory", "nominalQuota": format!("{}Gi", cpu * 4)},
            {"name": "nvidia.com/gpu", "nominalQuota": gpus},
        ]}],
    }])
}

/// The shared objects: a flavor and `bench-cq` (no preemption, any namespace),
/// which every latency namespace's LocalQueue points to.
async fn create_base(client: &kube::Client) -> Result<()> {
    create_cluster_scoped(
        client,
        &kueue("ResourceFlavor", "resourceflavors"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}}),
    )
    .await?;
    create_cluster_scoped(
        client,
        &kueue("ClusterQueue", "clusterqueues"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "bench-cq"},
               "spec": {"namespaceSelector": {}, "resourceGroups": resource_quota(1024, 64)}}),
    )
    .await
}

/// What a platform team has besides its namespaces: 10 team ClusterQueues (some
/// preempting, most in a two-level cohort tree) and a shared one, 3 Cohorts, 4
/// WorkloadPriorityClasses, 3 PriorityClasses. Returns the counts.
async fn create_platform(client: &kube::Client) -> Result<BTreeMap<&'static str, usize>> {
    let cohorts = kueue("Cohort", "cohorts");
    for (name, parent) in [("gpu-root", None), ("gpu-research", Some("gpu-root")), ("gpu-prod", Some("gpu-root"))] {
        let mut cohort = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": name}});
        if let Some(parent) = parent {
            cohort["spec"] = json!({"parentName": parent});
        }
        create_cluster_scoped(client, &cohorts, cohort).await?;
    }
    let cluster_queues = kueue("ClusterQueue", "clusterqueues");
    for team in 0..10 {
        let mut spec = json!({
            "namespaceSelector": {"matchLabels": {"team": format!("team-{team}")}},
            "resourceGroups": resource_quota(64, 8),
        });
        match team % 3 {
            0 => spec["preemption"] = json!({"withinClusterQueue": "LowerPriority"}),
            1 => spec["preemption"] = json!({"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"}),
            _ => {}
        }
        if team < 4 {
            spec["cohortName"] = json!("gpu-research");
        } else if team < 8 {
            spec["cohortName"] = json!("gpu-prod");
        }
        create_cluster_scoped(
            client,
            &cluster_queues,
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                   "metadata": {"name": format!("team-{team}-cq")}, "spec": spec}),
        )
        .await?;
    }
    create_cluster_scoped(
        client,
        &cluster_queues,
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "shared-gpu-cq"},
               "spec": {"namespaceSelector": {}, "cohortName": "gpu-root",
                        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                        "resourceGroups": resource_quota(256, 32)}}),
    )
    .await?;
    let workload_priority_classes = kueue("WorkloadPriorityClass", "workloadpriorityclasses");
    for (name, value) in [("production", 1000), ("aiperf-high", 1000), ("routine", 500), ("experimental", 100)] {
        create_cluster_scoped(
            client,
            &workload_priority_classes,
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                   "metadata": {"name": name}, "value": value, "description": format!("{name} evaluations")}),
        )
        .await?;
    }
    let priority_classes = Api::<PriorityClass>::all(client.clone());
    for (name, value) in [("gpu-high", 1000), ("gpu-batch", 200), ("gpu-low", 10)] {
        let class: PriorityClass = serde_json::from_value(json!({"metadata": {"name": name}, "value": value}))?;
        priority_classes
            .create(&PostParams::default(), &class)
            .await
            .with_context(|| format!("PriorityClass {name}"))?;
    }
    // bench-cq from part A is one more ClusterQueue.
    Ok(BTreeMap::from([
        ("cluster_queues", 12),
        ("cohorts", 3),
        ("workload_priority_classes", 4),
        ("priority_classes", 3),
    ]))
}

/// The EvalHub Job of examples/evalhub-job.yaml, with generateName in `namespace`.
fn evalhub_job(namespace: &str) -> Result<Job> {
    let job = JobBuilder::evalhub_example().generate_name("evalhub-bench-").namespace(namespace).build();
    Ok(serde_json::from_value(job)?)
}

/// Queued: the label our namespace annotation names and spec.suspend true.
fn queued(job: &Job) -> bool {
    let label = job.metadata.labels.as_ref().and_then(|labels| labels.get(QUEUE_LABEL));
    let suspend = job.spec.as_ref().and_then(|spec| spec.suspend);
    label.map(String::as_str) == Some(QUEUE) && suspend == Some(true)
}

fn untouched(job: &Job) -> bool {
    let label = job.metadata.labels.as_ref().and_then(|labels| labels.get(QUEUE_LABEL));
    let suspend = job.spec.as_ref().and_then(|spec| spec.suspend);
    label.is_none() && suspend != Some(true)
}

// ------------------------------------------------------------------ phases

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    None,
    Webhook,
    /// eval-admission again, offering HTTP/2 by ALPN (`--http2`): does the
    /// API server's webhook client cost less over it?
    WebhookH2,
    Policy,
    Kyverno,
}

impl Phase {
    const ALL: [Phase; 5] = [Phase::None, Phase::Webhook, Phase::WebhookH2, Phase::Policy, Phase::Kyverno];

    fn name(self) -> &'static str {
        match self {
            Phase::None => "none",
            Phase::Webhook => "eval-admission",
            Phase::WebhookH2 => "eval-admission-http2",
            Phase::Policy => "mutating-admission-policy",
            Phase::Kyverno => "kyverno",
        }
    }

    fn short(self) -> &'static str {
        match self {
            Phase::None => "none",
            Phase::Webhook => "webhook",
            Phase::WebhookH2 => "webhook-h2",
            Phase::Policy => "map",
            Phase::Kyverno => "kyverno",
        }
    }

    fn mutates(self) -> bool {
        self != Phase::None
    }

    /// eval-admission's webhooks are registered.
    fn ours(self) -> bool {
        matches!(self, Phase::Webhook | Phase::WebhookH2)
    }
}

struct Policy {
    policy: MutatingAdmissionPolicy,
    binding: MutatingAdmissionPolicyBinding,
}

impl Policy {
    fn load() -> Result<Self> {
        let text = std::fs::read_to_string(Path::new(REPO).join(MAP_FIXTURE))?;
        let (mut policy, mut binding) = (None, None);
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value = serde_yaml::Value::deserialize(document)?;
            let api_version = value["apiVersion"].as_str().unwrap_or_default();
            ensure!(api_version == format!("{MAP_GROUP}/{MAP_VERSION}"), "{MAP_FIXTURE}: apiVersion {api_version}");
            match value["kind"].as_str() {
                Some("MutatingAdmissionPolicy") => policy = Some(serde_yaml::from_value(value)?),
                Some("MutatingAdmissionPolicyBinding") => binding = Some(serde_yaml::from_value(value)?),
                other => bail!("{MAP_FIXTURE}: unexpected kind {other:?}"),
            }
        }
        Ok(Self {
            policy: policy.ok_or_else(|| anyhow!("{MAP_FIXTURE}: no MutatingAdmissionPolicy"))?,
            binding: binding.ok_or_else(|| anyhow!("{MAP_FIXTURE}: no MutatingAdmissionPolicyBinding"))?,
        })
    }

    async fn install(&self, client: &kube::Client) -> Result<()> {
        let pp = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..PostParams::default() };
        Api::<MutatingAdmissionPolicy>::all(client.clone()).create(&pp, &self.policy).await?;
        Api::<MutatingAdmissionPolicyBinding>::all(client.clone()).create(&pp, &self.binding).await?;
        Ok(())
    }

    async fn remove(&self, client: &kube::Client) -> Result<()> {
        let name =
            |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| meta.name.clone().unwrap_or_default();
        ignore_not_found(
            Api::<MutatingAdmissionPolicyBinding>::all(client.clone())
                .delete(&name(&self.binding.metadata), &DeleteParams::default())
                .await
                .map(drop),
        )?;
        ignore_not_found(
            Api::<MutatingAdmissionPolicy>::all(client.clone())
                .delete(&name(&self.policy.metadata), &DeleteParams::default())
                .await
                .map(drop),
        )
    }
}

fn ignore_not_found(result: kube::Result<()>) -> Result<()> {
    match result {
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        other => Ok(other?),
    }
}

/// Polls a server-side dry-run create until it shows the phase's effect, so no
/// measured create meets a half-switched API server.
async fn wait_for_effect(api: &Api<Job>, job: &Job, mutated: bool) -> Result<()> {
    let dry_run = PostParams { dry_run: true, ..PostParams::default() };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let last = api.create(&dry_run, job).await;
        match &last {
            Ok(created) if mutated && queued(created) => return Ok(()),
            Ok(created) if !mutated && untouched(created) => return Ok(()),
            _ => {}
        }
        if Instant::now() > deadline {
            bail!(
                "timed out waiting for dry-run creates to be {}: last {:?}",
                if mutated { "queued" } else { "untouched" },
                last.map(|j| j.metadata.labels)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Switches admission for Jobs to `phase`, then waits until it is in effect.
/// Kyverno, when it runs, keeps running in every phase; outside its own its
/// ClusterPolicy is deleted and none of its webhooks matches Jobs (checked).
async fn switch(
    cluster: &Cluster,
    client: &kube::Client,
    policy: &Policy,
    kyverno: Option<&kyverno::Kyverno>,
    phase: Phase,
    probe: &Api<Job>,
    job: &Job,
) -> Result<()> {
    if phase != Phase::Kyverno
        && let Some(kyverno) = kyverno
    {
        kyverno.remove(client).await?;
    }
    match phase {
        Phase::None => {
            cluster.webhook.unregister()?;
            policy.remove(client).await?;
        }
        Phase::Webhook | Phase::WebhookH2 => {
            // From the other eval-admission phase too: nothing in the path
            // until the server, restarted for its protocol, registers again.
            cluster.webhook.unregister()?;
            policy.remove(client).await?;
            // Wait for the policy to be gone before our webhook's effect can be seen.
            wait_for_effect(probe, job, false).await?;
            // A restart for the protocol registers the server itself.
            if !cluster.webhook.set_http2(phase == Phase::WebhookH2)? {
                cluster.webhook.register()?;
            }
        }
        Phase::Policy => {
            cluster.webhook.unregister()?;
            wait_for_effect(probe, job, false).await?;
            policy.install(client).await?;
        }
        Phase::Kyverno => {
            let kyverno = kyverno.context("the kyverno phase without Kyverno")?;
            cluster.webhook.unregister()?;
            policy.remove(client).await?;
            wait_for_effect(probe, job, false).await?;
            kyverno.install(client).await?;
            wait_for_effect(probe, job, true).await?;
            return refuses_missing_queue(probe, job).await;
        }
    }
    wait_for_effect(probe, job, phase.mutates()).await
}

/// The policy's validate rule at work: a dry-run create of the Job naming a
/// LocalQueue that does not exist is refused, with the queues that do.
async fn refuses_missing_queue(api: &Api<Job>, job: &Job) -> Result<()> {
    let mut job = job.clone();
    job.metadata.labels.get_or_insert_default().insert(QUEUE_LABEL.into(), "no-such-queue".into());
    let dry_run = PostParams { dry_run: true, ..PostParams::default() };
    match api.create(&dry_run, &job).await {
        Err(kube::Error::Api(status))
            if format!("{status:?}").contains("no-such-queue") && format!("{status:?}").contains(QUEUE) =>
        {
            Ok(())
        }
        other => bail!("a Job naming LocalQueue no-such-queue was not refused as expected: {other:?}"),
    }
}

/// eval-admission's counters, summed over their other labels.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Counters {
    /// Connections the server has served over HTTP/2 since it started.
    h2_connections: f64,
    mutate: f64,
    validate: f64,
    confirm_lookups: f64,
}

impl std::ops::Sub for Counters {
    type Output = Counters;
    fn sub(self, before: Counters) -> Counters {
        Counters {
            h2_connections: self.h2_connections - before.h2_connections,
            mutate: self.mutate - before.mutate,
            validate: self.validate - before.validate,
            confirm_lookups: self.confirm_lookups - before.confirm_lookups,
        }
    }
}

async fn webhook_counters(http: &reqwest::Client, admin_port: u16) -> Result<Counters> {
    let text =
        http.get(format!("http://127.0.0.1:{admin_port}/metrics")).send().await?.error_for_status()?.text().await?;
    let sum = |prefix: &str, label: &str| -> f64 {
        text.lines()
            .filter(|line| line.starts_with(prefix) && line.contains(label))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    Ok(Counters {
        h2_connections: sum("eval_admission_connections_served_total{", "protocol=\"h2\""),
        mutate: sum("eval_admission_reviews_total{", "webhook=\"mutate\""),
        validate: sum("eval_admission_reviews_total{", "webhook=\"validate\""),
        confirm_lookups: sum("eval_admission_confirm_lookups_total", ""),
    })
}

/// CPU time (user + system) of the control plane, the webhook server and
/// Kyverno when it runs, from /proc/PID/stat.
fn cpu_seconds(cluster: &Cluster, kyverno: Option<&kyverno::Kyverno>) -> BTreeMap<&'static str, f64> {
    let mut out = BTreeMap::new();
    let mut pids = cluster.plane.pids();
    pids.extend(cluster.webhook.pid().map(|pid| ("eval-admission", pid)));
    pids.extend(kyverno.map(|k| ("kyverno", k.pid)));
    for (name, pid) in pids {
        if let Some(seconds) = process_cpu_seconds(pid) {
            out.insert(name, seconds);
        }
    }
    out
}

/// CPU time (user + system) of one process, from /proc/PID/stat.
fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command: state is field 3, utime 14, stime 15.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i - 3).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // USER_HZ is 100 on every Linux this runs on.
    Some((ticks(14) + ticks(15)) / 100.0)
}

struct Sample {
    latencies_ms: Vec<f64>,
    wall: Duration,
}

/// `count` real creates, `concurrency` in flight (closed loop: each worker sends
/// its next create when the last one returns); every created Job is checked.
async fn creates(api: &Api<Job>, job: &Job, count: usize, concurrency: usize, mutated: bool) -> Result<Sample> {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency.min(count) {
        let (api, job, next) = (api.clone(), job.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let pp = PostParams::default();
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < count {
                let start = Instant::now();
                let created = api.create(&pp, &job).await.context("creating a Job")?;
                latencies.push(start.elapsed().as_secs_f64() * 1000.0);
                let ok = if mutated { queued(&created) } else { untouched(&created) };
                ensure!(
                    ok,
                    "Job {} was {} (labels {:?}, suspend {:?})",
                    created.metadata.name.unwrap_or_default(),
                    if mutated { "not queued and suspended" } else { "mutated" },
                    created.metadata.labels,
                    created.spec.and_then(|s| s.suspend)
                );
            }
            Ok::<_, anyhow::Error>(latencies)
        }));
    }
    let mut latencies_ms = Vec::with_capacity(count);
    for worker in workers {
        latencies_ms.extend(worker.await??);
    }
    Ok(Sample { latencies_ms, wall: started.elapsed() })
}

/// Kyverno's CPU per review without the API server in between: the bench
/// sends Kyverno's Job webhooks the AdmissionReviews the API server would
/// send for the bench's Job (its policy installed), closed loop, and reads
/// Kyverno's CPU from /proc. Each review still makes Kyverno's apiCall
/// through the API server (a Namespace GET for /mutate, a LocalQueue list for
/// /validate): that is part of what Kyverno costs.
async fn kyverno_reviews_direct(
    settings: &Settings,
    client: &kube::Client,
    kyverno: &kyverno::Kyverno,
    namespace: &str,
) -> Result<Value> {
    let (mutate_url, validate_url) = kyverno.job_webhook_urls(client).await?;
    let dry_run = PostParams { dry_run: true, ..PostParams::default() };
    // The object the API server sends the mutating webhooks: defaulted, with
    // managedFields, before the name, uid and creation time are set. Made by a
    // dry-run create in Kyverno's own namespace, which the policy excludes.
    let plain = Api::<Job>::namespaced(client.clone(), "kyverno").create(&dry_run, &evalhub_job("kyverno")?).await?;
    ensure!(untouched(&plain), "the dry-run Job in namespace kyverno was mutated");
    let mut object = serde_json::to_value(&plain)?;
    let metadata = object["metadata"].as_object_mut().context("metadata")?;
    for key in ["name", "uid", "creationTimestamp", "resourceVersion"] {
        metadata.remove(key);
    }
    metadata.insert("namespace".into(), json!(namespace));
    // The object the validating webhooks get: mutated, named.
    let mutated = Api::<Job>::namespaced(client.clone(), namespace).create(&dry_run, &evalhub_job(namespace)?).await?;
    ensure!(queued(&mutated), "the dry-run Job in {namespace} was not queued by Kyverno");
    let review = |object: Value| -> String {
        let gvk = json!({"group": "batch", "version": "v1", "kind": "Job"});
        let gvr = json!({"group": "batch", "version": "v1", "resource": "jobs"});
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "__UID__", "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
                "name": name, "namespace": namespace, "operation": "CREATE",
                "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
                "object": object, "oldObject": null, "dryRun": false,
                "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
            },
        })
        .to_string()
    };
    fn mutated_ok(answer: &Value) -> Result<()> {
        use base64::Engine;
        ensure!(answer["response"]["allowed"] == true, "Kyverno refused the Job: {answer}");
        let patch = answer["response"]["patch"].as_str().context("Kyverno sent no patch")?;
        let patch = String::from_utf8(base64::engine::general_purpose::STANDARD.decode(patch)?)?;
        ensure!(patch.contains("queue-name") && patch.contains("suspend"), "Kyverno's patch: {patch}");
        Ok(())
    }
    fn allowed(answer: &Value) -> Result<()> {
        ensure!(answer["response"]["allowed"] == true, "Kyverno refused the Job: {answer}");
        Ok(())
    }
    let count = (2 * settings.creates).max(100);
    let mutate = kyverno.review_cpu(&mutate_url, &review(object), count, settings.concurrency, mutated_ok).await?;
    let validate = kyverno
        .review_cpu(&validate_url, &review(serde_json::to_value(&mutated)?), count, settings.concurrency, allowed)
        .await?;
    eprintln!(
        "kyverno direct: /mutate {} µs CPU per review, /validate {} µs ({count} reviews each, {} in flight)",
        mutate["cpu_us_per_review"], validate["cpu_us_per_review"], settings.concurrency
    );
    Ok(json!({
        "description": "AdmissionReviews for the bench's Job posted by the bench to Kyverno's Job webhooks over HTTPS \
            (HTTP/1.1 keep-alive, closed loop), its policy installed; cpu_us_per_review = Kyverno's user+system CPU \
            (from /proc) per review, each review including the policy's apiCall through kube-apiserver",
        "mutate": mutate,
        "validate": validate,
    }))
}

// ------------------------------------------------------------------ statistics

/// Nearest-rank percentile of a sorted slice.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

// ------------------------------------------------------------------ part A

async fn create_latency(settings: &Settings, cluster: &Cluster, client: &kube::Client) -> Result<Value> {
    let policy = Policy::load()?;
    let admin_port = cluster.webhook.admin_port;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
    create_base(client).await?;
    let measured = settings.phases();
    // Kyverno, when its phase runs: started here, stopped (dropped) when this
    // part ends however it ends, and by its parent-death signal if the bench
    // is killed.
    let kyverno = if settings.kyverno { Some(kyverno::Kyverno::start(&cluster.plane, client).await?) } else { None };
    // One namespace per phase and round, all made before the first measurement
    // so the webhook's watch cache holds them all along.
    let mut namespaces = BTreeMap::new();
    for round in 1..=settings.rounds {
        for &phase in &measured {
            let name = format!("lat-r{round:02}-{}", phase.short());
            create_namespace(client, &name, "bench", "bench-cq").await?;
            namespaces.insert((round, phase.name()), name);
        }
    }

    let mut runs = Vec::new();
    let mut per_phase: BTreeMap<&str, Vec<[f64; 7]>> = BTreeMap::new();
    let mut pooled: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for round in 1..=settings.rounds {
        for &phase in &measured {
            let namespace = &namespaces[&(round, phase.name())];
            let api: Api<Job> = Api::namespaced(client.clone(), namespace);
            let job = evalhub_job(namespace)?;
            switch(cluster, client, &policy, kyverno.as_ref(), phase, &api, &job).await?;
            creates(&api, &job, settings.warmup, settings.concurrency, phase.mutates()).await.context("warm-up")?;
            let counters_before = webhook_counters(&http, admin_port).await?;
            let kyverno_before = match &kyverno {
                Some(k) => k.job_reviews(&http, namespace).await?,
                None => 0.0,
            };
            let cpu_before = cpu_seconds(cluster, kyverno.as_ref());
            let loadavg_1m = loadavg().split_whitespace().next().and_then(|v| v.parse::<f64>().ok());
            let sample = creates(&api, &job, settings.creates, settings.concurrency, phase.mutates()).await?;
            let cpu_after = cpu_seconds(cluster, kyverno.as_ref());
            let counters_after = webhook_counters(&http, admin_port).await?;
            let reviews = counters_after - counters_before;
            // The API server took HTTP/2 when offered, and only then.
            if phase.ours() {
                let h2 = counters_after.h2_connections;
                ensure!(
                    (phase == Phase::WebhookH2) == (h2 > 0.0),
                    "phase {}: {h2} HTTP/2 connections served since the server started",
                    phase.name()
                );
            }
            let kyverno_reviews = match &kyverno {
                Some(k) => Some(k.job_reviews(&http, namespace).await? - kyverno_before),
                None => None,
            };
            let cpu_ms_per_create: BTreeMap<&str, f64> = cpu_after
                .iter()
                .map(|(name, after)| {
                    let used = after - cpu_before.get(name).copied().unwrap_or(*after);
                    (*name, round3(used * 1000.0 / settings.creates as f64))
                })
                .collect();
            // One mutating review per create. Validating ones can be more: when
            // two concurrent creates draw the same generateName suffix, the API
            // server retries the loser with a new name, re-running validating
            // (not mutating) admission.
            let creates = settings.creates as f64;
            let expected = if phase.ours() { creates } else { 0.0 };
            let validate_ok = if phase.ours() {
                reviews.validate >= creates && reviews.validate <= creates * 1.05
            } else {
                reviews.validate == 0.0
            };
            ensure!(
                reviews.mutate == expected && validate_ok && reviews.confirm_lookups == 0.0,
                "phase {}: eval-admission answered {reviews:?} for {} creates, expected {expected} of each and no confirm lookups",
                phase.name(),
                settings.creates
            );
            // Kyverno: a mutating and a validating review per create in its
            // phase (validating ones again on a generateName retry), none otherwise.
            if let Some(kyverno_reviews) = kyverno_reviews {
                let ok = if phase == Phase::Kyverno {
                    kyverno_reviews >= 2.0 * creates && kyverno_reviews <= 2.1 * creates
                } else {
                    kyverno_reviews == 0.0
                };
                ensure!(
                    ok,
                    "phase {}: Kyverno answered {kyverno_reviews} reviews of Jobs for {} creates, expected {}",
                    phase.name(),
                    settings.creates,
                    if phase == Phase::Kyverno { "two per create" } else { "none" }
                );
            }

            let mut sorted = sample.latencies_ms.clone();
            sorted.sort_by(f64::total_cmp);
            let (p50, p90, p99) = (percentile(&sorted, 0.50), percentile(&sorted, 0.90), percentile(&sorted, 0.99));
            let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
            let throughput = sorted.len() as f64 / sample.wall.as_secs_f64();
            eprintln!(
                "round {round}/{} {:<26} p50 {p50:7.2} ms  p90 {p90:7.2} ms  p99 {p99:7.2} ms  {throughput:6.0} creates/s",
                settings.rounds,
                phase.name()
            );
            let apiserver_cpu = cpu_ms_per_create.get("kube-apiserver").copied().unwrap_or(f64::NAN);
            let kyverno_cpu = cpu_ms_per_create.get("kyverno").copied().unwrap_or(f64::NAN);
            per_phase.entry(phase.name()).or_default().push([
                p50,
                p90,
                p99,
                mean,
                throughput,
                apiserver_cpu,
                kyverno_cpu,
            ]);
            pooled.entry(phase.name()).or_default().extend(&sorted);
            runs.push(json!({
                "round": round, "phase": phase.name(), "namespace": namespace, "creates": sorted.len(),
                "p50_ms": round3(p50), "p90_ms": round3(p90), "p99_ms": round3(p99), "mean_ms": round3(mean),
                "max_ms": round3(*sorted.last().unwrap()), "creates_per_second": round3(throughput),
                "loadavg_1m_before": loadavg_1m,
                "webhook_reviews": {"mutate": reviews.mutate, "validate": reviews.validate},
                "kyverno_reviews": kyverno_reviews,
                "cpu_ms_per_create": cpu_ms_per_create,
                "verified": if phase.mutates() { "every created Job had the queue label and spec.suspend true" }
                            else { "no created Job had the queue label or spec.suspend true" },
            }));
            // Delete this phase's Jobs (Background: no orphan finalizer, which
            // nothing would remove here) so the next phase meets the same store.
            api.delete_collection(&DeleteParams::background(), &ListParams::default()).await?;
            let left = api.list(&ListParams::default().limit(1)).await?;
            ensure!(left.items.is_empty(), "Jobs in {namespace} were not deleted");
        }
    }
    // Kyverno's policy is still installed: its last phase of the last round
    // was the kyverno phase.
    let kyverno_direct = match &kyverno {
        Some(kyverno) => {
            let namespace = &namespaces[&(settings.rounds, Phase::Kyverno.name())];
            Some(kyverno_reviews_direct(settings, client, kyverno, namespace).await?)
        }
        None => None,
    };
    switch(
        cluster,
        client,
        &policy,
        kyverno.as_ref(),
        Phase::None,
        &Api::namespaced(client.clone(), &namespaces[&(1, "none")]),
        &evalhub_job(&namespaces[&(1, "none")])?,
    )
    .await?;

    let mut phases = serde_json::Map::new();
    let column = |phase: &str, i: usize| -> Vec<f64> { per_phase[phase].iter().map(|t| t[i]).collect() };
    let (base_p50, base_p99) = (median(&column("none", 0)), median(&column("none", 2)));
    for &phase in &measured {
        let name = phase.name();
        let (p50, p99) = (median(&column(name, 0)), median(&column(name, 2)));
        let all = pooled.get_mut(name).expect("measured");
        all.sort_by(f64::total_cmp);
        let mut entry = json!({
            "pooled_p50_ms": round3(percentile(all, 0.50)), "pooled_p99_ms": round3(percentile(all, 0.99)),
            "p50_ms": round3(p50), "p90_ms": round3(median(&column(name, 1))), "p99_ms": round3(p99),
            "mean_ms": round3(median(&column(name, 3))), "creates_per_second": round3(median(&column(name, 4))),
            "apiserver_cpu_ms_per_create": round3(median(&column(name, 5))),
        });
        if kyverno.is_some() {
            entry["kyverno_cpu_ms_per_create"] = json!(round3(median(&column(name, 6))));
        }
        if phase != Phase::None {
            let paired = |i: usize| -> f64 {
                median(&column(name, i).iter().zip(column("none", i)).map(|(a, b)| a - b).collect::<Vec<_>>())
            };
            entry["added_p50_ms"] = json!(round3(p50 - base_p50));
            entry["added_p99_ms"] = json!(round3(p99 - base_p99));
            entry["added_p50_ms_paired"] = json!(round3(paired(0)));
            entry["added_p99_ms_paired"] = json!(round3(paired(2)));
        }
        phases.insert(name.into(), entry);
    }
    let kyverno_setup = kyverno.as_ref().map(|k| {
        json!({
            "version": k.version(),
            "webhook_server": format!("https://127.0.0.1:{}", k.port),
            "policy": kyverno::POLICY_FIXTURE,
            "flags": "--serverIP 127.0.0.1:PORT, --clientRateLimitQPS/Burst 10000, --admissionReports=false, --omitEvents=PolicyApplied,PolicySkipped, logging verbosity 2 (the Helm chart's)",
        })
    });
    Ok(json!({
        "kyverno": kyverno_setup,
        "kyverno_direct": kyverno_direct,
        "description": "End-to-end Job create latency through kube-apiserver from a kube-rs client on loopback; \
            per phase the median over rounds of each round's percentile; added_* = phase median minus the none median, \
            added_*_paired = median over rounds of (phase - none) in the same round; \
            pooled_* = percentile of all rounds' creates together; \
            cpu_ms_per_create = CPU time (user+system) each process used during the measured creates, per create",
        "job": "examples/evalhub-job.yaml with generateName, in a namespace annotated kueue.x-k8s.io/default-queue-name: eval-queue with LocalQueue eval-queue",
        "concurrency": settings.concurrency,
        "creates_per_phase": settings.creates,
        "warmup_creates_per_phase": settings.warmup,
        "rounds": settings.rounds,
        "order": measured.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "phase_setup": {
            "none": "no webhook configuration or admission policy for Jobs",
            "eval-admission": "manifests/base/webhooks (mutating + validating, failurePolicy Fail) at https://127.0.0.1, release server watching the cluster",
            "mutating-admission-policy": format!("{MAP_FIXTURE} ({MAP_GROUP}/{MAP_VERSION}): queue label from the namespace annotation and spec.suspend true, no validation"),
            "kyverno": if let Some(kyverno) = &kyverno {
                json!(format!("Kyverno {} admission controller out of cluster (benches/kyverno.rs), {}: queue label from the namespace annotation by an apiCall, spec.suspend true, LocalQueue existence by an apiCall; it runs in every phase, its webhooks match Jobs only in its own", kyverno.version(), kyverno::POLICY_FIXTURE))
            } else {
                json!("not run (APISERVER_BENCH_KYVERNO=0, or a BENCH_SMOKE run without APISERVER_BENCH_KYVERNO=1)")
            },
        },
        "isolation": "one namespace per phase and round, its Jobs deleted (propagationPolicy Background) before the next phase",
        "phases": phases,
        "runs": runs,
    }))
}

// ------------------------------------------------------------------ part B

fn proc_status_kib(pid: u32, field: &str) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| anyhow!("no {field} in /proc/{pid}/status"))
}

/// Clears [`CHILD_PID`] when part B's server goes.
struct Forget;

impl Drop for Forget {
    fn drop(&mut self) {
        CHILD_PID.store(0, Ordering::SeqCst);
    }
}

async fn start_once(settings: &Settings, cluster: &Cluster, run: usize) -> Result<Value> {
    let log_path = settings.out.join(format!("apiserver-scale-start-{run}.log"));
    let _ = std::fs::remove_file(&log_path);
    let http = reqwest::Client::builder().timeout(Duration::from_secs(2)).build()?;
    let launch = testkit::Serve::new(BIN, &cluster.webhook.cert, &cluster.webhook.key)
        .arg("--config")
        .arg(Path::new(REPO).join("manifests/base/config.yaml"))
        .args(["--shutdown-delay", "0s"])
        .env("KUBECONFIG", &cluster.plane.kubeconfig)
        .env("RUST_LOG", "info")
        .log(&log_path)
        .ready(testkit::Ready::Readyz, Duration::from_secs(300), Duration::from_millis(5));
    let mut server = tokio::task::block_in_place(|| launch.start())?;
    let (pid, admin_port) = (server.pid(), server.admin_port);
    CHILD_PID.store(pid, Ordering::SeqCst);
    let _forget = Forget;
    let ready = server.ready_after;
    let rss_kib = proc_status_kib(pid, "VmRSS")?;
    let metrics = http.get(format!("http://127.0.0.1:{admin_port}/metrics")).send().await?.text().await?;
    let mut cache_objects = BTreeMap::new();
    for line in metrics.lines().filter(|line| line.starts_with("eval_admission_cache_objects{")) {
        let kind = line.split('"').nth(1).unwrap_or_default().to_string();
        let count: f64 = line.rsplit(' ').next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
        cache_objects.insert(kind, count);
    }
    for kind in ["Namespace", "LocalQueue"] {
        let held = cache_objects.get(kind).copied().unwrap_or(0.0);
        ensure!(
            held >= settings.namespaces as f64,
            "ready with {held} {kind}s in its view, expected at least {}",
            settings.namespaces
        );
    }
    tokio::time::sleep(settings.settle).await;
    let rss_settled_kib = proc_status_kib(pid, "VmRSS")?;
    let peak_kib = proc_status_kib(pid, "VmHWM")?;
    // SIGTERM, as a rollout would; it exits at once with --shutdown-delay 0s.
    tokio::task::block_in_place(|| server.stop());
    drop(server);
    let mib = |kib: f64| round3(kib / 1024.0);
    eprintln!(
        "start {run}: ready in {:.3} s, VmRSS {:.1} MiB at ready, {:.1} MiB after {:?}, peak {:.1} MiB",
        ready.as_secs_f64(),
        rss_kib / 1024.0,
        rss_settled_kib / 1024.0,
        settings.settle,
        peak_kib / 1024.0
    );
    Ok(json!({
        "run": run, "ready_seconds": round3(ready.as_secs_f64()), "rss_mib": mib(rss_kib),
        "rss_mib_after_settle": mib(rss_settled_kib), "settle_seconds": settings.settle.as_secs_f64(),
        "peak_rss_mib": mib(peak_kib), "cache_objects": cache_objects,
    }))
}

async fn scale(settings: &Settings, cluster: &Cluster, client: &kube::Client) -> Result<Value> {
    // Only the measured server runs now: the environment's server would spend CPU
    // on every watch event of the creates below.
    cluster.webhook.unregister()?;
    cluster.webhook.down();
    let mut counts = create_platform(client).await?;
    eprintln!("creating {n} namespaces and {n} LocalQueues", n = settings.namespaces);
    let started = Instant::now();
    futures::stream::iter(0..settings.namespaces)
        .map(|i| async move {
            let team = format!("team-{}", i % 10);
            create_namespace(client, &format!("tenant-{i:05}"), &team, &format!("{team}-cq")).await
        })
        .buffer_unordered(settings.create_concurrency)
        .try_collect::<Vec<()>>()
        .await?;
    let create_seconds = started.elapsed().as_secs_f64();
    eprintln!("created in {create_seconds:.1} s ({:.0} objects/s)", 2.0 * settings.namespaces as f64 / create_seconds);
    let mut runs = Vec::new();
    for run in 1..=settings.starts {
        runs.push(start_once(settings, cluster, run).await?);
    }
    let column = |key: &str| -> Vec<f64> { runs.iter().filter_map(|r| r[key].as_f64()).collect() };
    counts.insert("namespaces", settings.namespaces);
    counts.insert("local_queues", settings.namespaces);
    let mut result = json!({
        "description": "eval-admission serve (no --cluster, KUBECONFIG) against kube-apiserver holding the objects below; \
            ready = spawn to first /readyz 200 (polled every 5 ms), rss = VmRSS from /proc/PID/status right then; \
            cache_objects as the server counts them (including the latency part's namespaces and the built-in ones)",
        "ready_seconds_median": round3(median(&column("ready_seconds"))),
        "rss_mib_median": round3(median(&column("rss_mib"))),
        "rss_mib_after_settle_median": round3(median(&column("rss_mib_after_settle"))),
        "peak_rss_mib_median": round3(median(&column("peak_rss_mib"))),
        "create_seconds": round3(create_seconds),
        "create_concurrency": settings.create_concurrency,
        "runs": runs,
    });
    for (key, count) in counts {
        result[key] = json!(count);
    }
    Ok(result)
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
