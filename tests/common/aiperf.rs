//! The real AIPerf operator (PyPI `aiperf` 0.13.0, a kopf operator:
//! `kopf run -m aiperf.operator.main`, installed in the venv
//! hack/build-clients.sh makes) out of cluster, against the test environment's
//! API server, so the end-to-end tests submit AIPerfJobs the way an AIPerf user
//! does and read back what that user sees.
//!
//! How 0.13.0 runs here (read from the wheel and checked against it):
//! - `kopf run -m aiperf.operator.main --standalone --namespace=NS...
//!   --liveness=http://127.0.0.1:PORT/healthz`. `--standalone`: no KopfPeering
//!   CRDs. One operator per test, watching only that test's namespaces, so two
//!   operators with different settings never share an AIPerfJob (a global one
//!   runs with `--all-namespaces`; without `AIPERF_OPERATOR_ID` it writes no
//!   namespace Lease). Ready is its kopf liveness endpoint answering; kopf
//!   lists existing objects when its watches start, so a job created before
//!   they run is still handled.
//! - Its Kubernetes client: in-cluster config, else `KUBECONFIG`. Here a client
//!   certificate user `aiperf-operator` in `system:masters` (the chart's
//!   ClusterRole is about as broad).
//! - It needs the AIPerfJob and AIPerfSweep CRDs, which the wheel does not
//!   ship: tests/clients/aiperf/aiperfjob-crd.yaml (ours, the smallest that works).
//! - Environment: `AIPERF_RESULTS_DIR` (its results PVC and runs index; a
//!   folder here), `AIPERF_METRICS_PORT=0` (else Prometheus listens on
//!   0.0.0.0:9090), `AIPERF_CONFIGMAP_PROPAGATION_DELAY_SECONDS=0` (a 10 s
//!   sleep for kubelets that are not here). The heartbeat and monitor timers are
//!   shortened so the Queued phase shows within seconds instead of 30-40 s:
//!   the operator only looks at a JobSet's suspension once the controller pod's
//!   heartbeat is overdue (`AIPERF_K8S_CONTROLLER_HEARTBEAT_EXPIRY_SECONDS`,
//!   from creation; 30 s by default), on its monitor timer (10 s by default).
//! - Its preflight (aiperf/operator/preflight) needs a Ready node that fits its
//!   largest pod (3.35 CPU, 6 GiB), or it fails the job before any JobSet is
//!   made: [`install`] registers one Node object (no kubelet behind it).
//! - An AIPerfJob: `spec.image`, `spec.benchmark` (models, endpoint, datasets,
//!   phases), `spec.scheduling.queueName` / `priorityClass` (the CLI's
//!   `--queue-name` / `--priority-class`), `skipEndpointCheck` (the endpoint is
//!   never dialled here). The JobSet is `aiperf-<job>` with labels `app=aiperf`,
//!   `aiperf.nvidia.com/job-id`, the Kueue queue and priority-class labels from
//!   the spec or from `AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME` /
//!   `_DEFAULT_PRIORITY_CLASS`, `spec.suspend: true` only with a queue, and a
//!   controller ownerReference to the AIPerfJob.
//! - A denial: the preflight's server-side dry run of the JobSet fails, the
//!   handler raises kopf.PermanentError (no retry): `status.phase: Failed`,
//!   `status.error` "Pre-flight failed: Dry Run: Server dry-run rejected JobSet:
//!   admission webhook \"...\" denied the request: <message>. Fix: check
//!   OPA/Gatekeeper policies or admission webhooks.", condition PreflightPassed
//!   False, and a Warning event `PreflightFailed` on the AIPerfJob.
//! - Admission warnings: kubernetes_asyncio drops the API server's Warning
//!   headers; they reach neither the status, the events nor the operator's log.

#![allow(dead_code)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use crate::common::control_plane::{ControlPlane, Kubectl, Process, clients_venv, free_port, poll, repo};

/// The Kubernetes identity the operator runs as here.
pub const KUBERNETES_USER: &str = "aiperf-operator";
/// Our AIPerfJob and AIPerfSweep CRDs.
pub const CRDS: &str = "tests/clients/aiperf/aiperfjob-crd.yaml";
/// The Node the operator's preflight counts (no kubelet behind it).
pub const NODE: &str = "aiperf-e2e-node";
/// The image an AIPerfJob names (never pulled: there is no kubelet).
pub const IMAGE: &str = "nvcr.io/nvidia/ai-dynamo/aiperf:0.13.0";

/// The operator's settings that reach the JobSet (the Helm chart's `kueue.*` values).
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME` (chart: `kueue.defaultQueueName`).
    pub default_queue: Option<String>,
    /// `AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS`.
    pub default_priority_class: Option<String>,
}

/// One AIPerfJob, as an AIPerf user would submit it (`aiperf kube profile` or the CR YAML).
#[derive(Clone, Debug)]
pub struct Job {
    pub namespace: String,
    pub name: String,
    /// `spec.scheduling.queueName` (`--queue-name`).
    pub queue: Option<String>,
    /// `spec.scheduling.priorityClass` (`--priority-class`).
    pub priority_class: Option<String>,
}

impl Job {
    pub fn new(namespace: &str, name: &str) -> Self {
        Self { namespace: namespace.into(), name: name.into(), queue: None, priority_class: None }
    }

    pub fn queue(mut self, queue: &str) -> Self {
        self.queue = Some(queue.into());
        self
    }

    pub fn priority_class(mut self, class: &str) -> Self {
        self.priority_class = Some(class.into());
        self
    }

    /// The JobSet the operator makes for it.
    pub fn jobset(&self) -> String {
        format!("aiperf-{}", self.name)
    }

    /// The CR: the seed document's example (AIPerf's Kueue guide), one small phase.
    pub fn object(&self) -> Value {
        let mut spec = json!({
            "image": IMAGE,
            "skipEndpointCheck": true,
            "benchmark": {
                "models": ["Qwen/Qwen3-0.6B"],
                "endpoint": {"urls": ["http://127.0.0.1:9/v1"], "streaming": true},
                "datasets": [{"name": "main", "type": "synthetic", "entries": 10}],
                "phases": [{"name": "profiling", "type": "concurrency", "concurrency": 1, "requests": 10}],
            },
        });
        let mut scheduling = serde_json::Map::new();
        if let Some(queue) = &self.queue {
            scheduling.insert("queueName".into(), queue.as_str().into());
        }
        if let Some(class) = &self.priority_class {
            scheduling.insert("priorityClass".into(), class.as_str().into());
        }
        if !scheduling.is_empty() {
            spec["scheduling"] = Value::Object(scheduling);
        }
        json!({
            "apiVersion": "aiperf.nvidia.com/v1alpha1",
            "kind": "AIPerfJob",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": spec,
        })
    }
}

/// What the AIPerf user sees of a job (`kubectl get aiperfjob`, `kubectl describe`).
#[derive(Clone, Debug)]
pub struct JobView {
    /// `status.phase` ("" before the operator has written one).
    pub phase: String,
    /// `status.error`.
    pub error: Option<String>,
    /// The whole AIPerfJob.
    pub raw: Value,
}

impl JobView {
    /// A `status.conditions` entry by type.
    pub fn condition(&self, kind: &str) -> Option<&Value> {
        self.raw["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)
    }
}

/// Installs what the operator needs in the cluster: the CRDs, and a Ready
/// Node big enough for its preflight. Idempotent.
pub fn install(plane: &ControlPlane) -> Result<()> {
    let crds = repo(CRDS);
    let crds = crds.to_str().context("CRD path")?;
    plane.run(&["apply", "-f", crds], None)?;
    plane.wait_established(&["-f", crds])?;
    plane.apply(
        &[json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE, "labels": {
            "kubernetes.io/hostname": NODE, "kubernetes.io/os": "linux"}}})],
        &[],
    )?;
    // The API server's TaintNodesByCondition plugin taints a new Node
    // not-ready, and no node controller ever lifts it.
    plane.run(&["patch", "node", NODE, "--type=merge", "-p", r#"{"spec":{"taints":null}}"#], None)?;
    let status = json!({"status": {
        "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
        "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "no kubelet: the AIPerf preflight's node", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
    }});
    plane.run(&["patch", "node", NODE, "--subresource=status", "--type=merge", "-p", &status.to_string()], None)?;
    Ok(())
}

/// The AIPerf operator as a child of the test (parent-death signal), watching
/// only `namespaces`; stopped on drop.
pub struct Operator {
    pub namespaces: Vec<String>,
    pub health_port: u16,
    /// Its stdout and stderr (kopf's log lines).
    pub log: PathBuf,
    kubectl: Kubectl,
    process: Mutex<Process>,
}

impl Operator {
    /// [`install`]s, starts `kopf run -m aiperf.operator.main` with `settings`
    /// and waits for its liveness endpoint. `name` names its log and folder.
    pub fn start(plane: &ControlPlane, name: &str, namespaces: &[&str], settings: &Settings) -> Result<Self> {
        ensure!(!namespaces.is_empty(), "an operator here watches named namespaces only");
        let venv = clients_venv()?;
        let program = venv.join("bin/kopf");
        ensure!(program.exists(), "{} is missing: is aiperf in tests/clients/requirements.txt?", program.display());
        install(plane)?;
        let dir = plane.dir.join("aiperf").join(name);
        let results = dir.join("results");
        std::fs::create_dir_all(&results)?;
        let kubeconfig = dir.join("kubeconfig");
        plane.ca.kubeconfig(&kubeconfig, &plane.url, KUBERNETES_USER, "system:masters")?;

        let health_port = free_port()?;
        let mut args: Vec<OsString> =
            ["run", "-m", "aiperf.operator.main", "--standalone"].iter().map(OsString::from).collect();
        args.extend(namespaces.iter().map(|ns| OsString::from(format!("--namespace={ns}"))));
        args.push(format!("--liveness=http://127.0.0.1:{health_port}/healthz").into());
        let optional = |value: &Option<String>| OsString::from(value.clone().unwrap_or_default());
        let env: Vec<(&str, OsString)> = vec![
            ("KUBECONFIG", kubeconfig.into()),
            // Never the in-cluster config of a CI pod the tests may run in.
            ("KUBERNETES_SERVICE_HOST", "".into()),
            ("PYTHONUNBUFFERED", "1".into()),
            ("AIPERF_RESULTS_DIR", results.into()),
            ("AIPERF_METRICS_PORT", "0".into()),
            ("AIPERF_CONFIGMAP_PROPAGATION_DELAY_SECONDS", "0".into()),
            ("AIPERF_OPERATOR_MONITOR_INTERVAL", "2".into()),
            ("AIPERF_OPERATOR_MONITOR_INITIAL_DELAY", "1".into()),
            ("AIPERF_K8S_CONTROLLER_HEARTBEAT_INTERVAL_SECONDS", "1".into()),
            ("AIPERF_K8S_CONTROLLER_HEARTBEAT_EXPIRY_SECONDS", "3".into()),
            // Its delay before retrying a failed create (30 s by default): short,
            // so a test that waits longer would see a retry if there were one.
            ("AIPERF_OPERATOR_RECONCILE_CREATE_HARVEST_RETRY_DELAY_SECONDS", "5".into()),
            // The preflight's budget (30 s by default, 120 at most): past it,
            // unfinished checks (the dry run among them) only warn, and a busy
            // machine must not turn a denial into a create that fails and retries.
            ("AIPERF_PREFLIGHT_TIMEOUT", "120".into()),
            // A scoped operator would write namespace Leases; this one is global, restricted by --namespace.
            ("AIPERF_OPERATOR_ID", "".into()),
            // Empty: unset, as the chart leaves them without kueue.* values.
            ("AIPERF_K8S_JOBSET_KUEUE_DEFAULT_QUEUE_NAME", optional(&settings.default_queue)),
            ("AIPERF_K8S_JOBSET_KUEUE_DEFAULT_PRIORITY_CLASS", optional(&settings.default_priority_class)),
        ];
        let mut process = Process::start(&format!("aiperf-operator-{name}"), &plane.logs(), &program, &args, &env)?;
        // Importing aiperf takes seconds; more on a busy 2-core machine.
        process.wait_http_ok(health_port, "/healthz", Duration::from_secs(180), Duration::from_millis(250))?;
        let log = process.log.clone();
        Ok(Self {
            namespaces: namespaces.iter().map(|ns| ns.to_string()).collect(),
            health_port,
            log,
            kubectl: plane.kubectl.clone(),
            process: Mutex::new(process),
        })
    }

    /// Fails with its log's tail when the operator has exited.
    pub fn check_running(&self) -> Result<()> {
        self.process.lock().unwrap_or_else(|p| p.into_inner()).check_running()
    }

    /// `kubectl create` of the AIPerfJob, as its user.
    pub fn submit(&self, job: &Job) -> Result<()> {
        ensure!(self.namespaces.contains(&job.namespace), "this operator does not watch {}", job.namespace);
        self.kubectl.run(&["create", "-f", "-"], Some(&job.object().to_string())).map(drop)
    }

    /// The AIPerfJob as its user sees it, if it exists.
    pub fn view(&self, job: &Job) -> Option<JobView> {
        let text = self
            .kubectl
            .run(&["get", "aiperfjobs.aiperf.nvidia.com", &job.name, "-n", &job.namespace, "-o", "json"], None)
            .ok()?;
        let raw: Value = serde_json::from_str(&text).ok()?;
        Some(JobView {
            phase: raw["status"]["phase"].as_str().unwrap_or_default().to_string(),
            error: raw["status"]["error"].as_str().map(str::to_string),
            raw,
        })
    }

    /// Polls until the job's phase is one of `phases`.
    pub fn wait_phase(&self, job: &Job, phases: &[&str], timeout: Duration) -> Result<JobView> {
        poll(
            &format!("AIPerfJob {}/{} to reach phase {phases:?}", job.namespace, job.name),
            timeout,
            Duration::from_millis(250),
            || self.check_running(),
            || self.view(job).filter(|view| phases.contains(&view.phase.as_str())),
        )
        .map_err(|error| {
            let last = self.view(job).map(|view| view.raw.to_string()).unwrap_or_default();
            error.context(format!("last seen: {last}"))
        })
    }

    /// The events on the AIPerfJob (`kubectl describe aiperfjob`), oldest first.
    pub fn events(&self, job: &Job) -> Vec<Value> {
        let selector = format!("involvedObject.kind=AIPerfJob,involvedObject.name={}", job.name);
        let text = self
            .kubectl
            .run(&["get", "events", "-n", &job.namespace, "--field-selector", &selector, "-o", "json"], None)
            .unwrap_or_default();
        let list: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let mut events = list["items"].as_array().cloned().unwrap_or_default();
        events.sort_by_key(|event| event["metadata"]["creationTimestamp"].as_str().unwrap_or_default().to_string());
        events
    }

    /// The events with this reason.
    pub fn events_with_reason(&self, job: &Job, reason: &str) -> Vec<Value> {
        self.events(job).into_iter().filter(|event| event["reason"] == reason).collect()
    }

    /// The JobSet the operator made for `job`, if any.
    pub fn jobset(&self, job: &Job) -> Option<Value> {
        let text = self
            .kubectl
            .run(&["get", "jobsets.jobset.x-k8s.io", &job.jobset(), "-n", &job.namespace, "-o", "json"], None)
            .ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The operator's log.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn stop(&self) {
        self.process.lock().unwrap_or_else(|p| p.into_inner()).stop();
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        self.stop();
    }
}
