//! Kyverno v1.19.1's admission controller out of cluster, for the `kyverno`
//! phase of benches/apiserver/ (a module of that bench only).
//!
//! hack/build-kyverno.sh builds the binary (cached; about 20 minutes the first
//! time); the CRDs come from the same Go module (config/crds). Kyverno runs on
//! loopback with its own kubeconfig (a client certificate from the control
//! plane's CA, group system:masters, as Kueue gets) and `--serverIP
//! 127.0.0.1:PORT`: at v1.19.1 that makes its certificate manager issue its
//! serving certificate for that IP (its own CA, kept in Secrets in the
//! `kyverno` namespace) and its webhook controller register every webhook by
//! the URL `https://127.0.0.1:PORT/...` with that CA as caBundle. With
//! autoUpdateWebhooks (the default) its resource webhook configurations hold
//! rules only for the kinds its policies match, so installing and deleting
//! benches/fixtures/kyverno-policy.yaml puts its webhooks in and out of the Job
//! create path; the bench checks both ways before measuring.
//!
//! Settings that are not Kyverno's defaults, and why:
//! - `--clientRateLimitQPS/--clientRateLimitBurst` 10000: the defaults (20/50
//!   for this controller in v1.19) would throttle the policy's apiCalls (two
//!   GETs through the API server per create) at the bench's rates, and the
//!   client-side limiter is not what is measured;
//! - `--admissionReports=false`: an admission report is an extra object
//!   written per admission, a reporting feature eval-admission does not have;
//! - `--omitEvents=PolicyApplied,PolicySkipped` as the Helm chart does;
//! - metrics (the OpenTelemetry Prometheus exporter, on by default) on a
//!   loopback port, the controller-runtime metrics server off.
//!
//! Where its latency goes (2026-12-06, 1 in flight): Kyverno's own metric
//! (kyverno_admission_review_duration_seconds) put the mutating review at
//! about 8 ms and the validating one at about 80 ms through the API server,
//! while the same validating review posted by the bench took about 3 ms. The
//! cause is the policy's apiCall LIST of LocalQueues, most likely as a
//! consistent list, which kube-apiserver 1.35 serves from its watch cache only once that cache has
//! caught up with etcd's current revision (each Job create moves it), asking
//! etcd for progress notifications every 100 ms (k8s.io/apiserver
//! storage/cacher/progress). With a GET of the one LocalQueue instead
//! (`.../localqueues/{{ label }}`, `default: ""`, deny when empty), the
//! kyverno phase's p50 at 1 in flight fell from about 100 ms to 19 ms in one
//! run. The fixture keeps the list, which lets the refusal name the queues
//! that do exist, as eval-admission's does.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde::Deserialize;
use serde_json::{Value, json};

use super::control_plane::{ControlPlane, Process, free_port};

const REPO: &str = env!("CARGO_MANIFEST_DIR");
pub const POLICY_FIXTURE: &str = "benches/fixtures/kyverno-policy.yaml";
const NAMESPACE: &str = "kyverno";
const CA_SECRET: &str = "kyverno-svc.kyverno.svc.kyverno-tls-ca";
const TLS_SECRET: &str = "kyverno-svc.kyverno.svc.kyverno-tls-pair";
/// Kyverno's resource webhook configurations (pkg/config).
const RESOURCE_MUTATING: &str = "kyverno-resource-mutating-webhook-cfg";
const RESOURCE_VALIDATING: &str = "kyverno-resource-validating-webhook-cfg";
/// Client-side rate limits high enough never to be what is measured.
const CLIENT_QPS: &str = "10000";
const CLIENT_BURST: &str = "10000";

/// Whether the `kyverno` phase runs: `APISERVER_BENCH_KYVERNO=1` or `0` says
/// so; unset, it runs in full runs and not in `BENCH_SMOKE=1` runs (the smoke
/// run is part of `make test`, which never builds Kyverno).
pub fn enabled(smoke: bool) -> Result<bool> {
    match std::env::var("APISERVER_BENCH_KYVERNO") {
        Ok(v) if v == "1" => Ok(true),
        Ok(v) if v == "0" || v.is_empty() => Ok(false),
        Ok(v) => bail!("APISERVER_BENCH_KYVERNO={v}: expected 0 or 1"),
        Err(_) => Ok(!smoke),
    }
}

fn kyverno_policies() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("kyverno.io", "v1", "ClusterPolicy"), "clusterpolicies")
}

/// The binary, from hack/build-kyverno.sh (instant when cached).
fn binary() -> Result<PathBuf> {
    let output = Command::new(Path::new(REPO).join("hack/build-kyverno.sh"))
        .stderr(Stdio::inherit())
        .output()
        .context("hack/build-kyverno.sh")?;
    ensure!(output.status.success(), "hack/build-kyverno.sh failed ({})", output.status);
    String::from_utf8(output.stdout)?
        .lines()
        .find_map(|line| line.strip_prefix("bin="))
        .map(PathBuf::from)
        .ok_or_else(|| anyhow!("hack/build-kyverno.sh printed no bin="))
}

/// The Kyverno Go module's directory (for its CRDs), as tests/kyverno/go.mod pins it.
fn module_dir() -> Result<PathBuf> {
    let path = format!("/usr/local/go/bin:{}", std::env::var("PATH").unwrap_or_default());
    let output = Command::new("go")
        .args(["list", "-m", "-f", "{{.Dir}}", "github.com/kyverno/kyverno"])
        .current_dir(Path::new(REPO).join("tests/kyverno"))
        .env("PATH", path)
        .env("GOFLAGS", "-mod=readonly")
        .stderr(Stdio::inherit())
        .output()
        .context("go list -m github.com/kyverno/kyverno")?;
    ensure!(output.status.success(), "go list -m github.com/kyverno/kyverno failed ({})", output.status);
    let dir = PathBuf::from(String::from_utf8(output.stdout)?.trim());
    ensure!(dir.join("config/crds").is_dir(), "no config/crds in {}", dir.display());
    Ok(dir)
}

/// Kyverno's admission controller serving the control plane, no policy installed.
pub struct Kyverno {
    process: Mutex<Process>,
    pub pid: u32,
    pub port: u16,
    metrics_port: u16,
    /// Kyverno's own CA (from its Secret), which signs its serving certificate.
    ca_pem: String,
    policy: DynamicObject,
    pub bin: PathBuf,
}

impl Kyverno {
    pub async fn start(plane: &ControlPlane, client: &kube::Client) -> Result<Self> {
        let bin = binary()?;
        let module = module_dir()?;
        let policy = load_policy()?;
        let crds: Vec<String> = ["kyverno", "policies.kyverno.io", "policyreport", "reports"]
            .iter()
            .map(|folder| module.join("config/crds").join(folder).to_string_lossy().into_owned())
            .collect();
        let mut args = vec!["apply", "--server-side", "--field-manager=eval-admission-bench"];
        let mut get = Vec::new();
        for folder in &crds {
            args.extend(["-f", folder.as_str()]);
            get.extend(["-f", folder.as_str()]);
        }
        plane.run(&args, None).context("installing Kyverno's CRDs")?;
        plane.wait_established(&get)?;
        plane.apply(&[json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})], &[])?;

        let dir = plane.dir.join("kyverno");
        std::fs::create_dir_all(&dir)?;
        let kubeconfig = dir.join("kubeconfig");
        plane.ca.kubeconfig(&kubeconfig, &plane.url, "kyverno-admission-controller", "system:masters")?;
        let (port, metrics_port) = (free_port()?, free_port()?);
        let args: Vec<OsString> = [
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--serverIP=127.0.0.1:{port}"),
            "--webhookServerHost=127.0.0.1".into(),
            format!("--webhookServerPort={port}"),
            format!("--caSecretName={CA_SECRET}"),
            format!("--tlsSecretName={TLS_SECRET}"),
            format!("--clientRateLimitQPS={CLIENT_QPS}"),
            format!("--clientRateLimitBurst={CLIENT_BURST}"),
            "--admissionReports=false".into(),
            "--omitEvents=PolicyApplied,PolicySkipped".into(),
            "--metricsHost=127.0.0.1".into(),
            format!("--metricsPort={metrics_port}"),
            "--controllerRuntimeMetricsAddress=0".into(),
            "--disableLogColor".into(),
            "--v=2".into(),
        ]
        .map(OsString::from)
        .into();
        // The environment the Helm chart gives it (it exits without these).
        let env = [
            ("KYVERNO_NAMESPACE", NAMESPACE),
            ("KYVERNO_SERVICEACCOUNT_NAME", "kyverno-admission-controller"),
            ("KYVERNO_ROLE_NAME", "kyverno:admission-controller"),
            ("KYVERNO_DEPLOYMENT", "kyverno-admission-controller"),
            ("KYVERNO_POD_NAME", "kyverno-admission-controller-bench"),
            ("KYVERNO_SVC", "kyverno-svc"),
            ("INIT_CONFIG", "kyverno"),
            ("METRICS_CONFIG", "kyverno-metrics"),
        ]
        .map(|(key, value)| (key, OsString::from(value)));
        let mut process = Process::start("kyverno", &plane.logs(), &bin, &args, &env)?;
        let pid = process.pid();

        // Ready: its CA Secret exists, /health/readiness answers 200 over TLS
        // verified with that CA, and its (empty) resource webhook
        // configurations are registered.
        let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), NAMESPACE);
        let started = Instant::now();
        let ca_pem = loop {
            process.check_running()?;
            ensure!(
                started.elapsed() < Duration::from_secs(180),
                "Kyverno not ready after 180 s; see {}",
                process.log.display()
            );
            if let Ok(Some(secret)) = secrets.get_opt(CA_SECRET).await
                && let Some(data) = secret.data
                && let Some(pem) = data.get("tls.crt").or_else(|| data.get("rootCA.crt"))
            {
                break String::from_utf8(pem.0.clone())?;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let http = https_client(&ca_pem)?;
        let readiness = format!("https://127.0.0.1:{port}/health/readiness");
        loop {
            process.check_running()?;
            ensure!(
                started.elapsed() < Duration::from_secs(180),
                "Kyverno not ready after 180 s; see {}",
                process.log.display()
            );
            let ready = matches!(http.get(&readiness).send().await, Ok(r) if r.status().is_success());
            let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone()).get_opt(RESOURCE_MUTATING).await;
            let validating =
                Api::<ValidatingWebhookConfiguration>::all(client.clone()).get_opt(RESOURCE_VALIDATING).await;
            if ready && matches!(mutating, Ok(Some(_))) && matches!(validating, Ok(Some(_))) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        eprintln!("kyverno ready in {:.1} s (pid {pid}, https://127.0.0.1:{port})", started.elapsed().as_secs_f64());
        Ok(Self { process: Mutex::new(process), pid, port, metrics_port, ca_pem, policy, bin })
    }

    pub fn check_running(&self) -> Result<()> {
        self.process.lock().unwrap_or_else(|p| p.into_inner()).check_running()
    }

    /// The version, from the build's directory (kyverno-VERSION/bin/kyverno).
    pub fn version(&self) -> String {
        let dir = self.bin.parent().and_then(Path::parent).and_then(Path::file_name);
        dir.and_then(|d| d.to_str()?.strip_prefix("kyverno-")).unwrap_or("unknown").to_string()
    }

    pub fn policy_name(&self) -> String {
        self.policy.metadata.name.clone().unwrap_or_default()
    }

    /// Installs the ClusterPolicy, then waits until it is Ready and Kyverno's
    /// resource webhooks match Jobs.
    pub async fn install(&self, client: &kube::Client) -> Result<()> {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &kyverno_policies());
        let pp = PostParams { field_manager: Some(super::FIELD_MANAGER.into()), ..PostParams::default() };
        api.create(&pp, &self.policy).await.context("creating the Kyverno ClusterPolicy")?;
        let name = self.policy_name();
        let started = Instant::now();
        loop {
            self.check_running()?;
            let policy = api.get(&name).await?;
            let ready = policy.data["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"));
            let (mutating, validating) = self.webhooks_for_jobs(client).await?;
            if ready && mutating > 0 && validating > 0 {
                return Ok(());
            }
            ensure!(
                started.elapsed() < Duration::from_secs(60),
                "ClusterPolicy {name} not in effect after 60 s (ready {ready}, webhooks for Jobs: {mutating} mutating, {validating} validating); status {}",
                policy.data["status"]
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Deletes the ClusterPolicy, then waits until no Kyverno webhook matches Jobs.
    pub async fn remove(&self, client: &kube::Client) -> Result<()> {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &kyverno_policies());
        match api.delete(&self.policy_name(), &DeleteParams::default()).await {
            Err(kube::Error::Api(status)) if status.is_not_found() => {}
            other => drop(other?),
        }
        self.wait_no_webhooks(client).await
    }

    /// Waits until no Kyverno webhook configuration has a rule for Jobs.
    pub async fn wait_no_webhooks(&self, client: &kube::Client) -> Result<()> {
        let started = Instant::now();
        loop {
            self.check_running()?;
            let (mutating, validating) = self.webhooks_for_jobs(client).await?;
            if mutating == 0 && validating == 0 {
                return Ok(());
            }
            ensure!(
                started.elapsed() < Duration::from_secs(60),
                "Kyverno still has {mutating} mutating and {validating} validating webhooks for Jobs 60 s after its policy went"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// How many of Kyverno's mutating and validating webhooks (any of its
    /// configurations, told by their `kyverno` names) have a rule covering
    /// batch/v1 jobs.
    pub async fn webhooks_for_jobs(&self, client: &kube::Client) -> Result<(usize, usize)> {
        let covers = covers_jobs;
        let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone()).list(&Default::default()).await?;
        let validating = Api::<ValidatingWebhookConfiguration>::all(client.clone()).list(&Default::default()).await?;
        let is_kyverno = |name: &Option<String>| name.as_deref().is_some_and(|n| n.starts_with("kyverno-"));
        let m = mutating
            .items
            .iter()
            .filter(|c| is_kyverno(&c.metadata.name))
            .flat_map(|c| c.webhooks.iter().flatten())
            .filter(|w| covers(w.rules.as_ref()))
            .count();
        let v = validating
            .items
            .iter()
            .filter(|c| is_kyverno(&c.metadata.name))
            .flat_map(|c| c.webhooks.iter().flatten())
            .filter(|w| covers(w.rules.as_ref()))
            .count();
        Ok((m, v))
    }

    /// The URLs of Kyverno's mutating and validating webhooks for Jobs (as it
    /// registered them while its policy is installed).
    pub async fn job_webhook_urls(&self, client: &kube::Client) -> Result<(String, String)> {
        let mutating = Api::<MutatingWebhookConfiguration>::all(client.clone()).get(RESOURCE_MUTATING).await?;
        let validating = Api::<ValidatingWebhookConfiguration>::all(client.clone()).get(RESOURCE_VALIDATING).await?;
        let m = mutating
            .webhooks
            .iter()
            .flatten()
            .filter(|w| covers_jobs(w.rules.as_ref()))
            .find_map(|w| w.client_config.url.clone())
            .context("no mutating Kyverno webhook for Jobs")?;
        let v = validating
            .webhooks
            .iter()
            .flatten()
            .filter(|w| covers_jobs(w.rules.as_ref()))
            .find_map(|w| w.client_config.url.clone())
            .context("no validating Kyverno webhook for Jobs")?;
        Ok((m, v))
    }

    /// Sends `count` AdmissionReviews (`body` with each `__UID__` replaced by
    /// a fresh uid) to `url`, `concurrency` in flight, closed loop over
    /// HTTP/1.1 keep-alive connections from this process; `check` judges
    /// each response. Returns Kyverno's CPU per review (from /proc) and the
    /// client-side latency.
    pub async fn review_cpu(
        &self,
        url: &str,
        body: &str,
        count: usize,
        concurrency: usize,
        check: fn(&Value) -> Result<()>,
    ) -> Result<Value> {
        let http = self.https()?;
        // Warm-up: connections, caches.
        let warmup = (count / 10).max(10);
        let run = |n: usize| {
            let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let workers: Vec<_> = (0..concurrency.min(n))
                .map(|_| {
                    let (http, next, url, body) = (http.clone(), next.clone(), url.to_string(), body.to_string());
                    tokio::spawn(async move {
                        let mut latencies = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            if i >= n {
                                break;
                            }
                            let uid = format!("00000000-0000-4000-8000-{:012x}", i + 1);
                            let request = body.replace("__UID__", &uid);
                            let start = Instant::now();
                            let response = http
                                .post(&url)
                                .header("content-type", "application/json")
                                .body(request)
                                .send()
                                .await?
                                .error_for_status()?;
                            let answer: Value = response.json().await?;
                            latencies.push(start.elapsed().as_secs_f64() * 1000.0);
                            ensure!(answer["response"]["uid"] == uid.as_str(), "answer for another uid: {answer}");
                            check(&answer)?;
                        }
                        Ok::<_, anyhow::Error>(latencies)
                    })
                })
                .collect();
            async move {
                let mut all = Vec::new();
                for worker in workers {
                    all.extend(worker.await??);
                }
                Ok::<_, anyhow::Error>(all)
            }
        };
        run(warmup).await?;
        let cpu_before = super::process_cpu_seconds(self.pid).context("Kyverno's /proc stat")?;
        let started = Instant::now();
        let mut latencies = run(count).await?;
        let wall = started.elapsed().as_secs_f64();
        let cpu = super::process_cpu_seconds(self.pid).context("Kyverno's /proc stat")? - cpu_before;
        latencies.sort_by(f64::total_cmp);
        Ok(json!({
            "url": url, "reviews": count, "concurrency": concurrency, "body_bytes": body.len(),
            "cpu_us_per_review": super::round3(cpu * 1e6 / count as f64),
            "reviews_per_second": super::round3(count as f64 / wall),
            "p50_ms": super::round3(super::percentile(&latencies, 0.50)),
            "p99_ms": super::round3(super::percentile(&latencies, 0.99)),
        }))
    }

    /// Kyverno's count of admission requests for Jobs in `namespace`
    /// (kyverno_admission_requests_total, every webhook path).
    pub async fn job_reviews(&self, http: &reqwest::Client, namespace: &str) -> Result<f64> {
        let text = http
            .get(format!("http://127.0.0.1:{}/metrics", self.metrics_port))
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?;
        let namespace = format!("resource_namespace=\"{namespace}\"");
        Ok(text
            .lines()
            .filter(|line| line.starts_with("kyverno_admission_requests_total{"))
            .filter(|line| line.contains("resource_kind=\"Job\"") && line.contains(&namespace))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    }

    /// An HTTPS client that trusts Kyverno's CA.
    pub fn https(&self) -> Result<reqwest::Client> {
        https_client(&self.ca_pem)
    }
}

/// Whether any of these webhook rules covers batch/v1 jobs.
fn covers_jobs(rules: Option<&Vec<k8s_openapi::api::admissionregistration::v1::RuleWithOperations>>) -> bool {
    rules.into_iter().flatten().any(|rule| {
        let any = |values: &Option<Vec<String>>, wanted: &[&str]| {
            values.as_ref().is_some_and(|v| v.iter().any(|x| wanted.contains(&x.as_str())))
        };
        any(&rule.api_groups, &["batch", "*"])
            && any(&rule.api_versions, &["v1", "*"])
            && any(&rule.resources, &["jobs", "*", "*/*"])
    })
}

fn https_client(ca_pem: &str) -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem.as_bytes())?)
        // As eval-admission is measured (benches/load.rs, benches/peers.rs).
        .http1_only()
        .timeout(Duration::from_secs(10))
        .build()?)
}

fn load_policy() -> Result<DynamicObject> {
    let text = std::fs::read_to_string(Path::new(REPO).join(POLICY_FIXTURE))?;
    let value = serde_yaml::Value::deserialize(serde_yaml::Deserializer::from_str(&text))?;
    let value: Value = serde_json::to_value(value)?;
    ensure!(value["kind"] == "ClusterPolicy", "{POLICY_FIXTURE}: expected one ClusterPolicy");
    Ok(serde_json::from_value(value)?)
}
