//! The one test environment: etcd and kube-apiserver, and when asked the real
//! Kueue controller and eval-admission itself, as children of the test (or
//! benchmark, or `make cluster`) that needs them.
//!
//! - Binaries come from the builders in hack/ (build-tools.sh, build-kueue.sh),
//!   which build them from Go modules once and cache them by version; nothing
//!   else here is shell.
//! - PKI is minted with rcgen, ports are picked by binding port 0, and every
//!   wait polls a condition (a fresh CRD has no status yet, so `kubectl wait`
//!   would error out instead of waiting).
//! - Teardown: [`Drop`] stops what it started; and every process is started
//!   with a parent-death signal (see [`Launch::spawn`]), so a killed or finished test
//!   run leaves nothing running even when a `static` holds the environment and
//!   no destructor runs. Each environment lives in its own directory under
//!   `$TMPDIR/eval-admission-test-env/`, named after the test process; the
//!   next start removes the directories of processes that are gone and keeps
//!   the logs of the last run until then.
//!
//! Self-contained (std, anyhow, serde and the testkit crate): the benchmarks
//! and the `cluster` example include this file by `#[path]`.

#![allow(dead_code)]

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, ensure};
use serde_json::{Value, json};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// Kueue's identity in the test environment: a client certificate user, which
/// tests/kueue/eval-admission-config.yaml allows to unsuspend.
pub const KUEUE_USER: &str = "kueue-e2e-controller";

/// Where the API server listens and what it tells clients (the `kubernetes`
/// Service) about itself.
pub struct Network {
    pub bind: &'static str,
    pub advertise: &'static str,
    pub service_cidr: &'static str,
    /// The `kubernetes` Service's cluster IP: the first of `service_cidr`.
    pub service_ip: &'static str,
    /// `none` where nothing may dial the advertised address; `lease` on a node.
    pub endpoint_reconciler: &'static str,
}

impl Network {
    /// Without a node, service IPs are never dialled (no kube-proxy, no pods),
    /// but keep them in loopback so a misconfigured service-backed webhook
    /// cannot reach off the machine; and the `kubernetes` Service's Endpoints
    /// may not point at loopback.
    pub const LOOPBACK: Self = Self {
        bind: "127.0.0.1",
        advertise: "127.0.0.1",
        service_cidr: "127.100.0.0/24",
        service_ip: "127.100.0.1",
        endpoint_reconciler: "none",
    };
}

pub fn repo(path: &str) -> PathBuf {
    Path::new(REPO).join(path)
}

// ------------------------------------------------------------------ processes

// Each user of this file takes a different part of these.
#[allow(unused_imports)]
pub use testkit::process::{Launch, Process, tail};
#[allow(unused_imports)]
pub use testkit::{free_port, http_get, http_ok, poll};

/// Runs a builder from hack/ (it skips what its cache already has) and returns
/// the `key=value` lines it prints on stdout.
pub fn build(script: &str) -> Result<Vec<(String, PathBuf)>> {
    let output = Command::new(repo(script)).stderr(Stdio::inherit()).output().with_context(|| script.to_string())?;
    ensure!(output.status.success(), "{script} failed ({})", output.status);
    let stdout = String::from_utf8(output.stdout)?;
    Ok(stdout
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.to_string(), PathBuf::from(value)))
        .collect())
}

/// The venv with the real clients (EvalHub's server, the AIPerf operator),
/// installed by hack/build-clients.sh from tests/clients/.
pub fn clients_venv() -> Result<PathBuf> {
    built(&build("hack/build-clients.sh")?, "venv")
}

pub fn built(outputs: &[(String, PathBuf)], key: &str) -> Result<PathBuf> {
    outputs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .ok_or_else(|| anyhow!("the builder printed no {key}="))
}

/// A fresh directory for one environment, after removing those of test
/// processes that are gone.
fn environment_dir() -> Result<PathBuf> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let root = std::env::temp_dir().join("eval-admission-test-env");
    std::fs::create_dir_all(&root)?;
    for entry in std::fs::read_dir(&root)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let owner = name.split('-').next().unwrap_or_default();
        if !owner.is_empty() && !Path::new("/proc").join(owner).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let dir = root.join(format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("logs"))?;
    Ok(dir)
}

// ------------------------------------------------------------------ PKI

pub use testkit::pki::{Ca, Usage};

// ------------------------------------------------------------------ kubectl

/// kubectl against one environment, as its administrator.
#[derive(Clone)]
pub struct Kubectl {
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
}

impl Kubectl {
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut child = Command::new(&self.bin)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            // A webhook that fails closed must not hang a test on a dead API server.
            .arg("--request-timeout=30s")
            .args(args)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runs kubectl");
        if let Some(input) = stdin {
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        }
        child.wait_with_output().unwrap()
    }

    /// Runs kubectl and returns stdout, or an error carrying its stderr.
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Result<String> {
        let output = self.kubectl(args, stdin);
        ensure!(output.status.success(), "kubectl {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
        Ok(String::from_utf8(output.stdout)?)
    }

    /// Runs kubectl and returns stdout; panics with stderr when it fails.
    pub fn ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        self.run(args, stdin).unwrap_or_else(|error| panic!("{error:#}"))
    }

    /// Runs kubectl expecting a refusal; returns stderr.
    pub fn refused(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.kubectl(args, stdin);
        assert!(
            !output.status.success(),
            "kubectl {args:?} should have been refused; stdout: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        String::from_utf8(output.stderr).unwrap()
    }

    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Value {
        serde_json::from_str(&self.ok(&["get", resource, name, "-n", namespace, "-o", "json"], None)).unwrap()
    }

    /// `kubectl apply` of these objects as one List.
    pub fn apply(&self, objects: &[Value], extra: &[&str]) -> Result<String> {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
        let mut args = vec!["apply", "-f", "-"];
        args.extend_from_slice(extra);
        self.run(&args, Some(&list.to_string()))
    }

    /// Polls until every CRD `which` names (`-f FOLDER`, `crd/NAME`) is
    /// Established. Not `kubectl wait`: a fresh CRD has no status yet, and
    /// kubectl then errors out instead of waiting.
    pub fn wait_established(&self, which: &[&str]) -> Result<()> {
        let mut args = vec!["get"];
        args.extend_from_slice(which);
        args.extend_from_slice(&["-o", "json"]);
        poll(
            &format!("{which:?} to be Established"),
            Duration::from_secs(120),
            Duration::from_millis(300),
            || Ok(()),
            || {
                let listed: Value = serde_json::from_str(&self.run(&args, None).ok()?).ok()?;
                let items = listed["items"].as_array().cloned().unwrap_or_else(|| vec![listed.clone()]);
                items.iter().all(|crd| condition_true(crd, "Established")).then_some(())
            },
        )
    }
}

/// True when the object's `status.conditions` has `kind` with status True.
pub fn condition_true(object: &Value, kind: &str) -> bool {
    object["status"]["conditions"]
        .as_array()
        .is_some_and(|conditions| conditions.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}

// ------------------------------------------------------------------ the control plane

/// etcd and kube-apiserver on loopback (no kubelet, no controller-manager),
/// with the Kueue and JobSet CRDs installed. What differs from a real cluster:
/// webhooks are registered by URL (nothing routes to a Service); Jobs are
/// stored but never run; deleted namespaces stay Terminating; a Pod needs its
/// namespace's `default` ServiceAccount created first.
pub struct ControlPlane {
    pub dir: PathBuf,
    pub url: String,
    pub kubeconfig: PathBuf,
    pub kubectl: Kubectl,
    pub ca: Ca,
    // Field order is drop order: the API server stops before etcd.
    apiserver: Mutex<Process>,
    etcd: Mutex<Process>,
}

impl std::ops::Deref for ControlPlane {
    type Target = Kubectl;
    fn deref(&self) -> &Kubectl {
        &self.kubectl
    }
}

impl ControlPlane {
    /// Builds (or finds cached) the binaries, starts etcd and the API server
    /// with `extra_apiserver_flags`, installs the CRDs and waits for them.
    pub fn start(extra_apiserver_flags: &[&str]) -> Result<Self> {
        Self::start_on(&Network::LOOPBACK, extra_apiserver_flags)
    }

    /// [`ControlPlane::start`] with the API server on `network`.
    pub fn start_on(network: &Network, extra_apiserver_flags: &[&str]) -> Result<Self> {
        let tools = build("hack/build-tools.sh")?;
        let bin = built(&tools, "bin")?;
        let dir = environment_dir()?;
        let logs = dir.join("logs");
        let pki = dir.join("pki");
        let ca = Ca::new()?;
        let mut names = vec![
            "127.0.0.1",
            "::1",
            network.advertise,
            network.service_ip,
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ];
        names.sort_unstable();
        names.dedup();
        let (apiserver_cert, apiserver_key) = ca.issue_files(&pki, "apiserver", Usage::Server(&names))?;
        std::fs::write(pki.join("ca.crt"), &ca.pem)?;
        // The service-account token signing key pair (ES256).
        let service_accounts = rcgen::KeyPair::generate()?;
        std::fs::write(pki.join("sa.key"), service_accounts.serialize_pem())?;
        std::fs::write(pki.join("sa.pub"), service_accounts.public_key_pem())?;

        let (apiserver_port, etcd_port, etcd_peer_port) = (free_port()?, free_port()?, free_port()?);
        let url = format!("https://127.0.0.1:{apiserver_port}");
        let kubeconfig = dir.join("kubeconfig");
        // O=system:masters is bound to cluster-admin by the bootstrap RBAC policy.
        ca.kubeconfig(&kubeconfig, &url, "kubernetes-admin", "system:masters")?;
        let kubectl = Kubectl { bin: bin.join("kubectl"), kubeconfig: kubeconfig.clone() };

        let etcd_url = |port: u16| format!("http://127.0.0.1:{port}");
        let etcd_args: Vec<OsString> = [
            "--name=eval-admission".to_string(),
            format!("--data-dir={}", dir.join("etcd").display()),
            // Plain HTTP on loopback only: nothing else can reach it.
            format!("--listen-client-urls={}", etcd_url(etcd_port)),
            format!("--advertise-client-urls={}", etcd_url(etcd_port)),
            format!("--listen-peer-urls={}", etcd_url(etcd_peer_port)),
            format!("--initial-advertise-peer-urls={}", etcd_url(etcd_peer_port)),
            format!("--initial-cluster=eval-admission={}", etcd_url(etcd_peer_port)),
            // Throwaway data: skip fsync, the slowest part on a busy disk.
            "--unsafe-no-fsync".to_string(),
            "--log-level=warn".to_string(),
        ]
        .map(OsString::from)
        .into();
        let mut etcd = Process::start("etcd", &logs, &bin.join("etcd"), &etcd_args, &[])?;
        etcd.wait_until("etcd to listen", Duration::from_secs(60), Duration::from_millis(100), || {
            testkit::poll::listening(etcd_port).then_some(())
        })?;

        let pki_file = |name: &str| pki.join(name).display().to_string();
        let mut apiserver_args: Vec<OsString> = [
            format!("--bind-address={}", network.bind),
            format!("--advertise-address={}", network.advertise),
            format!("--secure-port={apiserver_port}"),
            format!("--etcd-servers={}", etcd_url(etcd_port)),
            format!("--tls-cert-file={}", apiserver_cert.display()),
            format!("--tls-private-key-file={}", apiserver_key.display()),
            format!("--client-ca-file={}", pki_file("ca.crt")),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_string(),
            format!("--service-account-key-file={}", pki_file("sa.pub")),
            format!("--service-account-signing-key-file={}", pki_file("sa.key")),
            format!("--service-cluster-ip-range={}", network.service_cidr),
            "--authorization-mode=Node,RBAC".to_string(),
            // On by default already; listed because the tests depend on them.
            "--enable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook".to_string(),
            "--allow-privileged=true".to_string(),
            format!("--endpoint-reconciler-type={}", network.endpoint_reconciler),
            "--profiling=false".to_string(),
        ]
        .map(OsString::from)
        .into();
        apiserver_args.extend(extra_apiserver_flags.iter().map(OsString::from));
        let mut apiserver = Process::start("kube-apiserver", &logs, &bin.join("kube-apiserver"), &apiserver_args, &[])?;
        poll(
            &format!("kube-apiserver /readyz at {url}"),
            Duration::from_secs(180),
            Duration::from_millis(500),
            || {
                etcd.check_running()?;
                apiserver.check_running()
            },
            || kubectl.run(&["get", "--raw=/readyz"], None).ok(),
        )?;

        let plane =
            Self { dir, url, kubeconfig, kubectl, ca, apiserver: Mutex::new(apiserver), etcd: Mutex::new(etcd) };
        for crds in [built(&tools, "kueue_crds")?, built(&tools, "jobset_crds")?] {
            // Server-side: the Workload CRD is far over the 256 KiB limit of the
            // last-applied annotation client-side apply writes.
            let path = crds.to_str().context("CRD path")?;
            plane
                .run(&["apply", "--server-side", "--force-conflicts", "--field-manager=test-env", "-f", path], None)?;
            plane.wait_established(&["-f", path])?;
        }
        Ok(plane)
    }

    /// The pids of etcd and kube-apiserver (for CPU accounting).
    pub fn pids(&self) -> Vec<(&'static str, u32)> {
        let pid = |process: &Mutex<Process>| process.lock().unwrap_or_else(|p| p.into_inner()).pid();
        vec![("kube-apiserver", pid(&self.apiserver)), ("etcd", pid(&self.etcd))]
    }

    pub fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// Everything eval-admission reads, as `review --cluster` takes it (and
    /// the judge too), in kubectl's `output` format.
    pub fn state(&self, output: &str) -> Result<String> {
        self.run(
            &[
                "get",
                "namespaces,localqueues.kueue.x-k8s.io,clusterqueues.kueue.x-k8s.io,cohorts.kueue.x-k8s.io,\
                 resourceflavors.kueue.x-k8s.io,admissionchecks.kueue.x-k8s.io,\
                 workloadpriorityclasses.kueue.x-k8s.io,priorityclasses.scheduling.k8s.io",
                "-A",
                "-o",
                output,
            ],
            None,
        )
    }
}

// ------------------------------------------------------------------ the whole environment

/// The control plane with eval-admission, and Kueue when asked, in front of
/// it: what the end-to-end tests, the API-server benchmark and `make cluster`
/// run. Field order is drop order.
pub struct Environment {
    pub kueue: Option<Kueue>,
    pub webhook: EvalAdmission,
    pub plane: ControlPlane,
}

impl std::ops::Deref for Environment {
    type Target = ControlPlane;
    fn deref(&self) -> &ControlPlane {
        &self.plane
    }
}

impl Environment {
    /// `server` (an eval-admission binary) with the policy `config`.
    pub fn start(apiserver_flags: &[&str], server: &Path, config: &Path, with_kueue: bool) -> Result<Self> {
        let plane = ControlPlane::start(apiserver_flags)?;
        eprintln!("test environment in {} (logs in logs/)", plane.dir.display());
        let webhook = EvalAdmission::start(&plane, server, config)?;
        let kueue = if with_kueue { Some(Kueue::start(&plane)?) } else { None };
        Ok(Self { kueue, webhook, plane })
    }

    /// The one environment of a test binary, started by whichever test asks
    /// first; a failed start fails every test with its cause. A `static`
    /// holds it, so no destructor runs: its processes go with the test
    /// binary by their parent-death signal.
    pub fn shared(start: impl FnOnce() -> Result<Self>) -> &'static Self {
        static SHARED: OnceLock<Result<Environment, String>> = OnceLock::new();
        SHARED
            .get_or_init(|| start().map_err(|error| format!("{error:#}")))
            .as_ref()
            .unwrap_or_else(|error| panic!("the test environment did not start: {error}"))
    }
}

// ------------------------------------------------------------------ eval-admission

/// eval-admission serving this environment's API server, registered with the
/// shipped webhook configurations (manifests/base/webhooks) changed only in
/// how the API server reaches it: a loopback URL and the environment's CA.
pub struct EvalAdmission {
    bin: PathBuf,
    config: Mutex<PathBuf>,
    kubectl: Kubectl,
    ca_bundle: String,
    pub port: u16,
    pub admin_port: u16,
    pub cert: PathBuf,
    pub key: PathBuf,
    logs: PathBuf,
    process: Mutex<Option<testkit::Served>>,
    /// Whether the server offers HTTP/2 (`--http2`, by its environment variable).
    http2: std::sync::atomic::AtomicBool,
}

impl EvalAdmission {
    /// Starts `bin serve` with the policy `config` and registers it.
    pub fn start(plane: &ControlPlane, bin: &Path, config: &Path) -> Result<Self> {
        let dir = plane.dir.join("eval-admission");
        let (cert, key) = plane.ca.issue_files(&dir, "tls", Usage::Server(&["127.0.0.1", "localhost"]))?;
        let server = Self {
            bin: bin.to_path_buf(),
            config: Mutex::new(config.to_path_buf()),
            kubectl: plane.kubectl.clone(),
            ca_bundle: plane.ca.bundle(),
            port: free_port()?,
            admin_port: free_port()?,
            cert,
            key,
            logs: plane.logs(),
            process: Mutex::new(None),
            http2: false.into(),
        };
        server.up(None)?;
        Ok(server)
    }

    /// (Re)starts the server, with `config` from now on when given, waits for
    /// /readyz (its caches synced) and registers it.
    pub fn up(&self, config: Option<&Path>) -> Result<()> {
        self.down();
        let config = {
            let mut current = self.config.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(config) = config {
                *current = config.to_path_buf();
            }
            current.clone()
        };
        let server = testkit::Serve::new(&self.bin, &self.cert, &self.key)
            .ports(self.port, self.admin_port)
            .arg("--config")
            .arg(config)
            .args(["--shutdown-delay", "0s"])
            .env("KUBECONFIG", &self.kubectl.kubeconfig)
            .env("RUST_LOG", std::env::var_os("RUST_LOG").unwrap_or_else(|| "info".into()))
            .env("EVAL_ADMISSION_HTTP2", self.http2.load(std::sync::atomic::Ordering::Relaxed).to_string())
            .log(self.log())
            .ready(testkit::Ready::Readyz, Duration::from_secs(60), Duration::from_millis(100))
            .start()?;
        *self.process.lock().unwrap_or_else(|p| p.into_inner()) = Some(server);
        self.register()
    }

    /// Restarts the server offering HTTP/2 beside HTTP/1.1, or not, when that
    /// changes. Returns whether it restarted (and so registered again).
    pub fn set_http2(&self, on: bool) -> Result<bool> {
        if self.http2.swap(on, std::sync::atomic::Ordering::Relaxed) == on {
            return Ok(false);
        }
        self.up(None).map(|()| true)
    }

    /// Stops the server (its registration stays: evaluations then fail closed).
    pub fn down(&self) {
        if let Some(mut server) = self.process.lock().unwrap_or_else(|p| p.into_inner()).take() {
            server.stop();
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.process.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(testkit::Served::pid)
    }

    /// The server's log (JSON lines), across restarts.
    pub fn log(&self) -> PathBuf {
        self.logs.join("eval-admission.log")
    }

    /// The server's log line for each review of an object named `name`, oldest first.
    pub fn reviews(&self, name: &str) -> Vec<Value> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|entry| entry["message"] == "review" && entry["name"] == name)
            .collect()
    }

    /// The shipped configurations, each webhook pointed at this server.
    pub fn registration(&self) -> Result<Vec<Value>> {
        ["mutating.yaml", "validating.yaml"]
            .iter()
            .map(|file| {
                let path = repo("manifests/base/webhooks").join(file);
                let mut configuration: Value = serde_yaml::from_str(&std::fs::read_to_string(&path)?)?;
                for webhook in configuration["webhooks"].as_array_mut().context("webhooks")? {
                    let path = webhook["clientConfig"]["service"]["path"].as_str().context("service path")?.to_string();
                    webhook["clientConfig"] =
                        json!({"url": format!("https://127.0.0.1:{}{path}", self.port), "caBundle": self.ca_bundle});
                }
                Ok(configuration)
            })
            .collect()
    }

    pub fn register(&self) -> Result<()> {
        self.kubectl.apply(&self.registration()?, &[]).map(drop)
    }

    pub fn unregister(&self) -> Result<()> {
        for configuration in self.registration()? {
            let kind = configuration["kind"].as_str().context("kind")?.to_lowercase();
            let name = configuration["metadata"]["name"].as_str().context("name")?;
            self.kubectl.run(&["delete", &kind, name, "--ignore-not-found"], None)?;
        }
        Ok(())
    }
}

impl Drop for EvalAdmission {
    fn drop(&mut self) {
        self.down();
    }
}

// ------------------------------------------------------------------ Kueue

/// A controller's webhook configurations as its release installs them (the
/// kustomization in `dir`, names prefixed as its config/default does), each
/// webhook pointed at `base_url` and its path instead of a Service: what
/// Kueue and the JobSet controller register when they run out of the cluster.
pub fn webhooks_by_url(
    kubectl: &Kubectl,
    dir: &Path,
    prefix: &str,
    base_url: &str,
    ca_bundle: &str,
) -> Result<Vec<Value>> {
    let rendered = kubectl.run(&["kustomize", dir.to_str().context("path")?], None)?;
    let mut configurations = Vec::new();
    for document in serde_yaml::Deserializer::from_str(&rendered) {
        let mut object: Value = serde::Deserialize::deserialize(document)?;
        if object["kind"] == "Service" {
            continue;
        }
        let name = object["metadata"]["name"].as_str().context("name")?;
        object["metadata"]["name"] = format!("{prefix}{name}").into();
        for webhook in object["webhooks"].as_array_mut().context("webhooks")? {
            let path = webhook["clientConfig"]["service"]["path"].as_str().context("service path")?;
            webhook["clientConfig"] = json!({"url": format!("{base_url}{path}"), "caBundle": ca_bundle});
        }
        configurations.push(object);
    }
    Ok(configurations)
}

/// The real Kueue v0.19.2 controller manager (hack/build-kueue.sh builds it
/// from its Go module), with its own webhook configurations registered by URL.
///
/// How it differs from a release install (no Deployment, Service or cert-manager):
/// - leader election and internalCertManagement off; certificates from [`Ca`];
/// - only the batch/job and jobset.x-k8s.io/jobset integrations,
///   manageJobsWithoutQueueName false;
/// - VisibilityOnDemand off: an aggregated API server with no APIService
///   wiring here, which plays no part in admission or preemption;
/// - the CRDs are installed without upstream's conversion-webhook patches, so
///   while Kueue runs, the CRDs upstream converts get its /convert webhook, and
///   on drop strategy None comes back (a v1beta1 object would otherwise be
///   stored as v1beta2 with renamed fields silently pruned).
pub struct Kueue {
    kubectl: Kubectl,
    ca_bundle: String,
    webhooks: PathBuf,
    webhook_port: u16,
    process: Mutex<Option<Process>>,
}

/// The CRDs Kueue's config/components/crd/kustomization.yaml gives a conversion webhook.
const KUEUE_CONVERTED: [&str; 5] = ["localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters"];

impl Kueue {
    pub fn start(plane: &ControlPlane) -> Result<Self> {
        Self::start_as(plane, KUEUE_USER)
    }

    /// Kueue authenticated as `user` (by a client certificate): on a node,
    /// its release service account's name, which the shipped policy config
    /// lets unsuspend.
    pub fn start_as(plane: &ControlPlane, user: &str) -> Result<Self> {
        let outputs = build("hack/build-kueue.sh")?;
        let bin = built(&outputs, "bin")?;
        let dir = plane.dir.join("kueue");
        let certs = dir.join("certs");
        let (cert, key) = plane.ca.issue("kueue-webhook", Usage::Server(&["127.0.0.1", "localhost"]))?;
        // cmd/kueue (main.go) reads the metrics serving certificate from the
        // fixed path /etc/kueue/metrics/certs whenever internalCertManagement
        // is off, and exits when it is missing; turning internal cert
        // management on instead needs a Service and a Secret this environment
        // has no use for. So Kueue gets its own mount namespace, where a
        // read-only overlay adds DIR/etc/kueue/metrics/certs to /etc and
        // nothing else changes (bind mounts on files in /etc, as in a
        // container's /etc/hosts, are not seen through it; Kueue dials only
        // 127.0.0.1).
        let etc = dir.join("etc");
        for folder in [certs.clone(), etc.join("kueue/metrics/certs")] {
            std::fs::create_dir_all(&folder)?;
            std::fs::write(folder.join("tls.crt"), &cert)?;
            std::fs::write(folder.join("tls.key"), &key)?;
        }
        ensure!(!etc.to_string_lossy().contains([',', ':']), "{} cannot be an overlay lowerdir", etc.display());
        let kubeconfig = dir.join("kubeconfig");
        // O=system:masters: cluster-admin, as Kueue's ClusterRole is close to;
        // what matters to eval-admission is the username.
        plane.ca.kubeconfig(&kubeconfig, &plane.url, user, "system:masters")?;
        let (webhook_port, metrics_port, health_port) = (free_port()?, free_port()?, free_port()?);
        let config = dir.join("config.yaml");
        std::fs::write(
            &config,
            serde_json::to_string_pretty(&json!({
                "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                "kind": "Configuration",
                "namespace": "kueue-system",
                "manageJobsWithoutQueueName": false,
                "leaderElection": {"leaderElect": false},
                "internalCertManagement": {"enable": false},
                "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": certs},
                "metrics": {"bindAddress": format!("127.0.0.1:{metrics_port}")},
                "health": {"healthProbeBindAddress": format!("127.0.0.1:{health_port}")},
                "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
                "featureGates": {"VisibilityOnDemand": false},
            }))?,
        )?;
        // Kueue's own namespace (excluded from its managedJobsNamespaceSelector).
        plane.apply(&[json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}})], &[])?;

        let level = std::env::var("KUEUE_LOG_LEVEL").unwrap_or_else(|_| "2".into());
        // Not root: a user namespace too, mapping us to root inside it, where mounting is allowed.
        let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self")?) == 0;
        let mut args: Vec<OsString> = if root { vec![] } else { vec!["--user".into(), "--map-root-user".into()] };
        args.extend(["--mount", "--propagation", "private", "sh", "-c"].map(OsString::from));
        args.push(r#"mount -t overlay kueue-etc -o "lowerdir=$0:/etc" /etc && exec "$@""#.into());
        args.extend([etc.into_os_string(), bin.into_os_string(), "--config".into(), config.into_os_string()]);
        args.push(format!("--zap-log-level={level}").into());
        let unshare = PathBuf::from("unshare");
        let mut process =
            Process::start("kueue", &plane.logs(), &unshare, &args, &[("KUBECONFIG", kubeconfig.into_os_string())])?;
        process.wait_http_ok(health_port, "/readyz", Duration::from_secs(180), Duration::from_millis(500))?;
        let kueue = Self {
            kubectl: plane.kubectl.clone(),
            ca_bundle: plane.ca.bundle(),
            webhooks: built(&outputs, "webhooks")?,
            webhook_port,
            process: Mutex::new(Some(process)),
        };
        kueue.register()?;
        Ok(kueue)
    }

    /// Kueue's webhook configurations as its release installs them
    /// (config/components/webhook, names prefixed `kueue-` as config/default
    /// does, no Service), pointed at loopback; and its conversion webhook.
    pub fn register(&self) -> Result<()> {
        let configurations = webhooks_by_url(&self.kubectl, &self.webhooks, "kueue-", &self.url(""), &self.ca_bundle)?;
        ensure!(configurations.len() == 2, "expected Kueue's two webhook configurations, got {}", configurations.len());
        self.kubectl.apply(&configurations, &["--server-side", "--force-conflicts", "--field-manager=test-env"])?;
        let conversion = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": {"url": self.url("/convert"), "caBundle": self.ca_bundle},
        }}}});
        for name in KUEUE_CONVERTED {
            let crd = format!("crd/{name}.kueue.x-k8s.io");
            self.kubectl.run(&["patch", &crd, "--type=merge", "-p", &conversion.to_string()], None)?;
        }
        Ok(())
    }

    /// Its webhooks fail closed: taken away before Kueue stops, or every Job
    /// create would fail meanwhile.
    pub fn unregister(&self) {
        for (kind, name) in [
            ("mutatingwebhookconfiguration", "kueue-mutating-webhook-configuration"),
            ("validatingwebhookconfiguration", "kueue-validating-webhook-configuration"),
        ] {
            let _ = self.kubectl.run(&["delete", kind, name, "--ignore-not-found"], None);
        }
        let none = r#"{"spec":{"conversion":{"strategy":"None","webhook":null}}}"#;
        for name in KUEUE_CONVERTED {
            let _ =
                self.kubectl.run(&["patch", &format!("crd/{name}.kueue.x-k8s.io"), "--type=merge", "-p", none], None);
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.webhook_port)
    }

    /// The port its webhook server listens on (127.0.0.1, HTTPS, a certificate from the plane's CA).
    pub fn webhook_port(&self) -> u16 {
        self.webhook_port
    }

    /// The pid of the process started for it (the `unshare` wrapper, which
    /// execs `sh`, which execs `kueue`), while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(Process::pid)
    }
}

impl Drop for Kueue {
    fn drop(&mut self) {
        self.unregister();
        if let Some(mut process) = self.process.lock().unwrap_or_else(|p| p.into_inner()).take() {
            process.stop();
        }
    }
}
