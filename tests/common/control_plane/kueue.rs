//! The real Kueue controller manager, registered by URL.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use super::builders::{build, build_with, built};
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

/// How a test installs Kueue: which release, as whom, in which namespace,
/// with what Configuration, and what the platform's installer adds to its
/// webhooks. [`KueueSetup::upstream`] is what the tests have always run.
pub struct KueueSetup {
    /// A release with a pinned module set in tests/kueue/releases, or `None`
    /// for the one tests/kueue/go.mod pins (whose CRDs the plane installed).
    pub release: Option<String>,
    /// Who Kueue authenticates as (a client certificate user).
    pub user: String,
    /// Kueue's namespace (its Configuration's `namespace`).
    pub namespace: String,
    /// Kueue's Configuration without the fields of how it runs here
    /// (webhook, metrics and health addresses, certificates, leader election),
    /// which [`Kueue::start_with`] sets.
    pub configuration: Value,
    /// A label every namespaced webhook of Kueue's also requires of the
    /// namespace, as the Red Hat build's operator adds `kueue.openshift.io/managed: "true"`
    /// (openshift/kueue-operator pkg/webhook `mergeNamespaceSelectors`).
    pub webhook_namespace_label: Option<(String, String)>,
}

impl KueueSetup {
    /// Kueue as the tests run it by default: the pinned release in
    /// `kueue-system`, as `user`, with only the batch/job and
    /// jobset.x-k8s.io/jobset integrations and manageJobsWithoutQueueName false.
    pub fn upstream(user: &str) -> Self {
        Self {
            release: None,
            user: user.to_string(),
            namespace: "kueue-system".to_string(),
            configuration: json!({
                "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                "kind": "Configuration",
                "manageJobsWithoutQueueName": false,
                "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
            }),
            webhook_namespace_label: None,
        }
    }
}

/// The real Kueue controller manager (hack/build-kueue.sh builds it from its
/// Go module), with its own webhook configurations registered by URL.
///
/// How it differs from a release install (no Deployment, Service or cert-manager):
/// - leader election and internalCertManagement off; certificates from [`Ca`];
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
    webhook_namespace_label: Option<(String, String)>,
    configuration: Value,
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
        Self::start_with(plane, &KueueSetup::upstream(user))
    }

    /// Kueue installed as `setup` says: another release's CRDs replace the
    /// plane's first (server-side, by the same field manager).
    pub fn start_with(plane: &ControlPlane, setup: &KueueSetup) -> Result<Self> {
        let outputs = match &setup.release {
            Some(release) => build_with("hack/build-kueue.sh", &[release])?,
            None => build("hack/build-kueue.sh")?,
        };
        if setup.release.is_some() {
            let crds = built(&outputs, "crds")?;
            let path = crds.to_str().context("CRD path")?;
            plane
                .run(&["apply", "--server-side", "--force-conflicts", "--field-manager=test-env", "-f", path], None)?;
            plane.wait_established(&["-f", path])?;
        }
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
        plane.ca.kubeconfig(&kubeconfig, &plane.url, &setup.user, "system:masters")?;
        let (webhook_port, metrics_port, health_port) = (free_port()?, free_port()?, free_port()?);
        let config = dir.join("config.yaml");
        let mut configuration = setup.configuration.clone();
        let fields = configuration.as_object_mut().context("a Configuration is an object")?;
        for (field, value) in [
            ("namespace", json!(setup.namespace)),
            ("leaderElection", json!({"leaderElect": false})),
            ("internalCertManagement", json!({"enable": false})),
            ("webhook", json!({"host": "127.0.0.1", "port": webhook_port, "certDir": certs})),
            ("metrics", json!({"bindAddress": format!("127.0.0.1:{metrics_port}")})),
            ("health", json!({"healthProbeBindAddress": format!("127.0.0.1:{health_port}")})),
        ] {
            fields.insert(field.to_string(), value);
        }
        fields
            .entry("featureGates")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .context("featureGates")?
            .insert("VisibilityOnDemand".to_string(), false.into());
        std::fs::write(&config, serde_json::to_string_pretty(&configuration)?)?;
        // Kueue's own namespace (excluded from its managedJobsNamespaceSelector).
        plane.apply(&[json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": setup.namespace}})], &[])?;

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
            webhook_namespace_label: setup.webhook_namespace_label.clone(),
            configuration,
            webhook_port,
            process: Mutex::new(Some(process)),
        };
        kueue.register()?;
        Ok(kueue)
    }

    /// Kueue's webhook configurations as its release installs them
    /// (config/components/webhook, names prefixed `kueue-` as config/default
    /// does, no Service), pointed at loopback, each namespaced webhook also
    /// requiring the setup's namespace label; and its conversion webhook.
    pub fn register(&self) -> Result<()> {
        let mut configurations =
            webhooks_by_url(&self.kubectl, &self.webhooks, "kueue-", &self.url(""), &self.ca_bundle)?;
        ensure!(configurations.len() == 2, "expected Kueue's two webhook configurations, got {}", configurations.len());
        if let Some((key, value)) = &self.webhook_namespace_label {
            let requirement = json!({"key": key, "operator": "In", "values": [value]});
            for webhook in configurations.iter_mut().flat_map(|c| c["webhooks"].as_array_mut().into_iter().flatten()) {
                if namespaced(webhook) {
                    match webhook["namespaceSelector"]["matchExpressions"].as_array_mut() {
                        Some(requirements) => requirements.push(requirement.clone()),
                        None => webhook["namespaceSelector"]["matchExpressions"] = json!([requirement]),
                    }
                }
            }
        }
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

    /// The Configuration it runs with, as its ConfigMap would hold it.
    pub fn configuration(&self) -> &Value {
        &self.configuration
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

/// Whether a webhook's rules are on namespaced objects: not Kueue's
/// cluster-scoped ClusterQueues, ResourceFlavors and Cohorts, which a
/// namespaceSelector does not filter.
fn namespaced(webhook: &Value) -> bool {
    const CLUSTER_SCOPED: [&str; 3] = ["clusterqueues", "resourceflavors", "cohorts"];
    let resources = webhook["rules"].as_array().into_iter().flatten();
    !resources
        .flat_map(|rule| rule["resources"].as_array().into_iter().flatten())
        .any(|resource| resource.as_str().is_some_and(|r| CLUSTER_SCOPED.contains(&r)))
}

impl Drop for Kueue {
    fn drop(&mut self) {
        self.unregister();
        if let Some(mut process) = self.process.lock().unwrap_or_else(|p| p.into_inner()).take() {
            process.stop();
        }
    }
}
