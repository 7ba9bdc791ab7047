//! The real EvalHub server (PyPI `eval-hub-server` 1.0.2: a static Go binary,
//! `bin/eval-hub-server` in the venv hack/build-clients.sh installs) in cluster
//! mode against the test environment's API server, so the end-to-end tests
//! submit evaluations the way an EvalHub user does and read back what that user
//! sees.
//!
//! How 1.0.2 runs here (read from its source at github.com/eval-hub/eval-hub and
//! checked against the binary):
//! - `eval-hub-server -configdir tests/clients/evalhub/config`: `config.yaml`
//!   (service host/port, in-memory SQLite, Prometheus off) and `providers/*.yaml`
//!   (the providers and benchmarks it accepts). Without `-local` it is in cluster
//!   mode: every `/api/v1/evaluations/...` request needs `X-Tenant` and `X-User`
//!   (kube-rbac-proxy sets them in a real install), and the tenant is the
//!   namespace the benchmark Jobs go to.
//! - Its Kubernetes client: in-cluster config, else `KUBECONFIG`. Here a client
//!   certificate user `evalhub-server` bound to the ClusterRole in
//!   tests/clients/evalhub/rbac.yaml.
//! - `POST /api/v1/evaluations/jobs` answers 202 with the job (`resource.id`,
//!   `status.state: pending`) and creates, in a goroutine, one ConfigMap and one
//!   batch/v1 Job per benchmark. A failed create (an admission denial included)
//!   lands in `GET /api/v1/evaluations/jobs/<id>`: `status.state: failed`,
//!   `status.message.message` "Evaluation job is failed. \nBenchmark <id> failed
//!   with message: <error>", and `status.benchmarks[i].error_message.message`
//!   "job <id> benchmark <id>: admission webhook \"...\" denied the request: ...".
//! - A queue: `queue: {kind: kueue, name}` in the request (deprecated in favour of
//!   `hardware_config.queue`, still honoured; a name that is not a DNS label is
//!   refused with HTTP 400 before any Job), or a HardwareProfile. The Job then
//!   carries label `kueue.x-k8s.io/queue-name` (on its pod template too); EvalHub
//!   never sets `spec.suspend`.
//! - A priority: only through a HardwareProfile (`hardware_config.hardware_profile_name`,
//!   read from `$EVALHUB_HARDWARE_PROFILES_NAMESPACE`) with `spec.scheduling.type: Queue`
//!   and `kueue.priorityClass`: that one name becomes the pod template's
//!   `priorityClassName` and, when a queue is set, label `kueue.x-k8s.io/priority-class`.
//!   The request has no priority field of its own.
//! - Admission warnings: client-go logs them on the server's stderr
//!   (`warnings.go:107] "Warning: ..."`); the API shows them nowhere.

#![allow(dead_code)]

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, ensure};
use serde_json::{Value, json};

use crate::common::control_plane::{ControlPlane, Process, clients_venv, free_port, poll, repo};

/// The Kubernetes identity EvalHub runs as here (tests/clients/evalhub/rbac.yaml).
pub const KUBERNETES_USER: &str = "evalhub-server";
/// Where EvalHub reads HardwareProfiles from (`EVALHUB_HARDWARE_PROFILES_NAMESPACE`).
pub const PROFILES_NAMESPACE: &str = "evalhub-profiles";
/// The one provider and benchmark in tests/clients/evalhub/config/providers.
pub const PROVIDER: &str = "lm_evaluation_harness";
pub const BENCHMARK: &str = "mmlu";

/// eval-hub-server as a child of the test (parent-death signal), on a loopback port.
pub struct EvalHub {
    pub port: u16,
    /// Its stdout and stderr (JSON log lines, and client-go's klog lines).
    pub log: PathBuf,
    process: Mutex<Process>,
}

/// One evaluation request, as an EvalHub user would POST it.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// `X-Tenant`: the namespace its Jobs go to.
    pub tenant: String,
    /// `X-User`.
    pub user: String,
    pub name: String,
    /// `queue: {kind: kueue, name}`.
    pub queue: Option<String>,
    /// `hardware_config.hardware_profile_name` on the benchmark.
    pub hardware_profile: Option<String>,
}

impl Evaluation {
    pub fn new(tenant: &str, name: &str) -> Self {
        Self { tenant: tenant.into(), user: "alice".into(), name: name.into(), queue: None, hardware_profile: None }
    }

    pub fn queue(mut self, queue: &str) -> Self {
        self.queue = Some(queue.into());
        self
    }

    pub fn hardware_profile(mut self, profile: &str) -> Self {
        self.hardware_profile = Some(profile.into());
        self
    }

    /// The request body: the EvalHub Kueue guide's example, with these options.
    pub fn body(&self) -> Value {
        let mut benchmark = json!({"id": BENCHMARK, "provider_id": PROVIDER, "parameters": {"num_fewshot": 5}});
        if let Some(profile) = &self.hardware_profile {
            benchmark["hardware_config"] = json!({"hardware_profile_name": profile});
        }
        let mut body = json!({
            "name": self.name,
            "model": {"url": format!("http://llm-service.{}.svc.cluster.local:8080/v1", self.tenant), "name": "granite-3.1-8b"},
            "benchmarks": [benchmark],
        });
        if let Some(queue) = &self.queue {
            body["queue"] = json!({"kind": "kueue", "name": queue});
        }
        body
    }
}

/// What the EvalHub user sees of a job: `status.state` and `status.message`, and
/// the first benchmark's status and error message.
#[derive(Clone, Debug)]
pub struct JobView {
    pub state: String,
    pub message: String,
    pub message_code: String,
    pub benchmark_status: String,
    pub benchmark_error: String,
    /// The whole `GET /api/v1/evaluations/jobs/<id>` answer.
    pub raw: Value,
}

impl EvalHub {
    /// Installs what EvalHub needs in the cluster (its ClusterRole, the
    /// HardwareProfile CRD, the profiles namespace), starts it and waits until
    /// `/api/v1/health` answers.
    pub fn start(plane: &ControlPlane) -> Result<Self> {
        let venv = clients_venv()?;
        let program = venv.join("bin/eval-hub-server");
        ensure!(
            program.exists(),
            "{} is missing: is eval-hub-server in tests/clients/requirements.txt?",
            program.display()
        );
        let dir = plane.dir.join("evalhub");
        std::fs::create_dir_all(&dir)?;

        let files = repo("tests/clients/evalhub");
        let file = |name: &str| files.join(name).to_string_lossy().into_owned();
        plane.run(&["apply", "-f", &file("rbac.yaml")], None)?;
        plane.run(&["apply", "-f", &file("hardwareprofile-crd.yaml")], None)?;
        plane.wait_established(&["-f", &file("hardwareprofile-crd.yaml")])?;
        plane.apply(
            &[json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROFILES_NAMESPACE}})],
            &[],
        )?;
        let kubeconfig = dir.join("kubeconfig");
        plane.ca.kubeconfig(&kubeconfig, &plane.url, KUBERNETES_USER, "evalhub")?;

        let port = free_port()?;
        let args: Vec<OsString> = vec!["-configdir".into(), files.join("config").into()];
        let env: Vec<(&str, OsString)> = vec![
            ("KUBECONFIG", kubeconfig.into()),
            ("PORT", port.to_string().into()),
            ("EVALHUB_HARDWARE_PROFILES_NAMESPACE", PROFILES_NAMESPACE.into()),
            ("EVALHUB_TERMINATION_FILE", dir.join("termination-log").into()),
            // Never the in-cluster config of a CI pod the tests may run in, nor
            // settings of a developer's shell that change where jobs go.
            ("KUBERNETES_SERVICE_HOST", "".into()),
            ("EVALHUB_INSTANCE_NAME", "".into()),
            ("MLFLOW_TRACKING_URI", "".into()),
            ("CONFIG_PATH", "".into()),
        ];
        let mut process = Process::start("eval-hub-server", &plane.logs(), &program, &args, &env)?;
        process.wait_http_ok(port, "/api/v1/health", Duration::from_secs(60), Duration::from_millis(200))?;
        let log = process.log.clone();
        Ok(Self { port, log, process: Mutex::new(process) })
    }

    /// Fails with the log's tail when the server has exited.
    pub fn check_running(&self) -> Result<()> {
        self.process.lock().unwrap_or_else(|p| p.into_inner()).check_running()
    }

    /// `POST /api/v1/evaluations/jobs`; the new job's id.
    pub fn submit(&self, evaluation: &Evaluation) -> Result<String> {
        let (status, answer) = self.request(
            "POST",
            "/api/v1/evaluations/jobs",
            &evaluation.tenant,
            &evaluation.user,
            Some(&evaluation.body()),
        )?;
        ensure!((200..300).contains(&status), "EvalHub refused {evaluation:?}: HTTP {status}: {answer}");
        answer["resource"]["id"].as_str().map(String::from).ok_or_else(|| anyhow!("no resource.id in {answer}"))
    }

    /// `GET /api/v1/evaluations/jobs/<id>` as the tenant's user sees it.
    pub fn job(&self, tenant: &str, id: &str) -> Result<JobView> {
        let (status, raw) = self.request("GET", &format!("/api/v1/evaluations/jobs/{id}"), tenant, "alice", None)?;
        ensure!(status == 200, "GET job {id}: HTTP {status}: {raw}");
        let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
        let benchmark = &raw["status"]["benchmarks"][0];
        Ok(JobView {
            state: text(&raw["status"]["state"]),
            message: text(&raw["status"]["message"]["message"]),
            message_code: text(&raw["status"]["message"]["message_code"]),
            benchmark_status: text(&benchmark["status"]),
            benchmark_error: text(&benchmark["error_message"]["message"]),
            raw,
        })
    }

    /// Polls the job until `done` holds, or fails after `timeout` (or if the server died).
    pub fn wait_job(
        &self,
        tenant: &str,
        id: &str,
        what: &str,
        timeout: Duration,
        done: impl Fn(&JobView) -> bool,
    ) -> Result<JobView> {
        let mut last = None;
        poll(
            &format!("EvalHub job {id} to be {what}"),
            timeout,
            Duration::from_millis(250),
            || self.check_running(),
            || {
                let view = self.job(tenant, id).ok()?;
                let ok = done(&view);
                last = Some(view.raw.clone());
                ok.then_some(view)
            },
        )
        .with_context(|| format!("last answer: {}", last.unwrap_or_default()))
    }

    /// Everything the server logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// One HTTP/1.0 request to the server (EvalHub closes the connection after
    /// the answer, with no chunking); the status code and the JSON body.
    fn request(
        &self,
        method: &str,
        path: &str,
        tenant: &str,
        user: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value)> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(
            stream,
            "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{}\r\nX-Tenant: {tenant}\r\nX-User: {user}\r\n\
             Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            body.len()
        )?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        let answer = String::from_utf8(answer)?;
        let (head, body) = answer.split_once("\r\n\r\n").context("no end of headers")?;
        let status: u16 = head.split(' ').nth(1).context("no status code")?.parse()?;
        let json =
            if body.trim().is_empty() { Value::Null } else { serde_json::from_str(body).context(body.to_string())? };
        Ok((status, json))
    }
}

/// A HardwareProfile in [`PROFILES_NAMESPACE`] as the platform team writes one for
/// Kueue (Open Data Hub's `scheduling.type: Queue`): small cpu and memory
/// defaults, and the LocalQueue and priority class EvalHub then puts on the Job.
pub fn hardware_profile(name: &str, local_queue: Option<&str>, priority_class: Option<&str>) -> Value {
    let mut kueue = json!({});
    if let Some(queue) = local_queue {
        kueue["localQueueName"] = queue.into();
    }
    if let Some(class) = priority_class {
        kueue["priorityClass"] = class.into();
    }
    json!({
        "apiVersion": "infrastructure.opendatahub.io/v1", "kind": "HardwareProfile",
        "metadata": {"name": name, "namespace": PROFILES_NAMESPACE},
        "spec": {
            "identifiers": [
                {"identifier": "cpu", "displayName": "CPU", "resourceType": "CPU",
                 "defaultCount": "100m", "minCount": "100m", "maxCount": "500m"},
                {"identifier": "memory", "displayName": "Memory", "resourceType": "Memory",
                 "defaultCount": "128Mi", "minCount": "128Mi", "maxCount": "1Gi"},
            ],
            "scheduling": {"type": "Queue", "kueue": kueue},
        },
    })
}

/// The batch/v1 Jobs EvalHub created for job `id` in `tenant` (label `job_id`).
pub fn kubernetes_jobs(plane: &ControlPlane, tenant: &str, id: &str) -> Result<Vec<Value>> {
    let listed: Value = serde_json::from_str(
        &plane.run(&["get", "jobs", "-n", tenant, "-l", &format!("job_id={id}"), "-o", "json"], None)?,
    )?;
    Ok(listed["items"].as_array().cloned().unwrap_or_default())
}
