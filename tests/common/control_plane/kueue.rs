//! The real Kueue controller manager, registered by URL.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use super::builders::{build, built};
use super::{ControlPlane, KUEUE_USER, Kubectl, Process, Usage, free_port};

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
