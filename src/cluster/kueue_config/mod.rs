//! Kueue's Configuration (`config.kueue.x-k8s.io` v1beta1 or v1beta2), pruned to
//! what an admission webhook needs, with Kueue v0.19.2's defaults applied.
//!
//! How Kueue v0.19.2 reads it (cmd/kueue/main.go `main` → `apply` →
//! pkg/config/config.go `Load`):
//!
//! - with no `--config` file, `scheme.Default` on an empty v1beta2
//!   Configuration: apis/config/v1beta2/defaults.go `SetDefaults_Configuration`.
//!   That is [`KueueConfig::default`];
//! - with a file (a standard install mounts data."controller_manager_config.yaml"
//!   of ConfigMap `kueue-manager-config`, in Kueue's namespace), `fromFile`
//!   decodes it strictly (unknown or duplicate fields are errors), applies the
//!   defaults of the version the file is written in (apis/config/v1beta1 or
//!   v1beta2 `SetDefaults_Configuration`), and converts v1beta1 to v1beta2
//!   (apis/config/v1beta1/configuration_conversion.go
//!   `Convert_v1beta1_Configuration_To_v1beta2_Configuration`). The v1beta2
//!   defaults are NOT applied after a v1beta1 conversion, which is why
//!   waitForPodsReady differs between the two (see [`WaitForPodsReady`]);
//! - then `config.LoadAndValidateFeatureGates` and `config.Validate`
//!   (pkg/config/validation.go); any error and Kueue exits.
//!
//! [`KueueConfig::parse`] fails only where Kueue's decoder fails on a field this
//! module reads (wrong type, bad duration, wrong apiVersion/kind, bad YAML).
//! Everything else that would stop Kueue at startup (its strict decoding of
//! unknown fields, which this module otherwise ignores, and the `Validate`
//! checks on the fields read here) lands in [`KueueConfig::startup_errors`]. Kueue
//! reads the file once, at startup: a running Kueue may use an older version of
//! the ConfigMap than the one read here.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::selector::{LabelSelector, LabelSelectorRequirement, Operator};

mod decode;
mod validate;
use crate::vocabulary::go_duration::go_duration;
use crate::vocabulary::kueue::{KueueInstall, KueueVersion, NAMESPACE_NAME_LABEL};
use crate::vocabulary::text::{echo, listed};
pub use crate::workload::{ResourceSettings, Transformation};

/// `defaultJobFrameworkName`: the only framework enabled by default.
pub const DEFAULT_FRAMEWORK: &str = "batch/job";
/// Feature gate that turns waitForPodsReady off (alpha, default false, in 0.19).
pub const DISABLE_WAIT_FOR_PODS_READY_GATE: &str = "DisableWaitForPodsReady";
/// Feature gate under which managedJobsNamespaceSelector also applies to jobs
/// with a queue-name label.
pub const ALWAYS_RESPECT_NAMESPACE_SELECTOR_GATE: &str = "ManagedJobsNamespaceSelectorAlwaysRespected";
/// Feature gate under which Kueue's webhooks label a job with the LocalQueue `default`.
pub const LOCAL_QUEUE_DEFAULTING_GATE: &str = "LocalQueueDefaulting";
/// Feature gate under which `resources.quotaCheckStrategy` is honoured.
pub const QUOTA_CHECK_STRATEGY_GATE: &str = "QuotaCheckStrategy";

/// `DefaultWaitForPodsReadyTimeout` (v1beta2).
pub const V1BETA2_PODS_READY_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// `defaultPodsReadyTimeout` (v1beta1).
pub const V1BETA1_PODS_READY_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// `DefaultRequeuingBackoffBaseSeconds`, `DefaultRequeuingBackoffMaxSeconds`.
pub const DEFAULT_BACKOFF_BASE_SECONDS: i32 = 60;
pub const DEFAULT_BACKOFF_MAX_SECONDS: i32 = 3600;

/// The frameworks Kueue v0.19.2 registers (`jobframework.RegisterIntegration`
/// in pkg/controller/jobs/*); `integrations.frameworks` may name only these.
pub const BUILT_IN_FRAMEWORKS: [&str; 18] = [
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/jaxjob",
    "kubeflow.org/mpijob",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "leaderworkerset.x-k8s.io/leaderworkerset",
    "pod",
    "deployment",
    "statefulset",
    "ray.io/raycluster",
    "ray.io/rayjob",
    "ray.io/rayservice",
    "sparkoperator.k8s.io/sparkapplication",
    "trainer.kubeflow.org/trainjob",
    "workload.codeflare.dev/appwrapper",
];

/// The frameworks the ConfigMap shipped with `version`'s release enables
/// (config/components/manager/controller_manager_config.yaml at each tag, and
/// the Helm chart's default `managerConfig`): more than the built-in default.
/// RayService from v0.17, TrainJob from v0.14, the pod-based integrations
/// from v0.16; the Kubeflow training operator's jobs until v0.18.
pub fn release_manifest_frameworks(version: KueueVersion) -> Vec<&'static str> {
    let mut frameworks = vec!["batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster"];
    if version.since(0, 17, 0) {
        frameworks.push("ray.io/rayservice");
    }
    frameworks.push("jobset.x-k8s.io/jobset");
    if !version.since(0, 19, 0) {
        frameworks.extend([
            "kubeflow.org/paddlejob",
            "kubeflow.org/pytorchjob",
            "kubeflow.org/tfjob",
            "kubeflow.org/xgboostjob",
            "kubeflow.org/jaxjob",
        ]);
    }
    frameworks.push("workload.codeflare.dev/appwrapper");
    if version.since(0, 14, 0) {
        frameworks.push("trainer.kubeflow.org/trainjob");
    }
    if version.since(0, 16, 0) {
        frameworks.extend(["pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset"]);
    }
    frameworks
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiVersion {
    V1beta1,
    V1beta2,
}

impl ApiVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1beta1 => "config.kueue.x-k8s.io/v1beta1",
            ApiVersion::V1beta2 => "config.kueue.x-k8s.io/v1beta2",
        }
    }
}

/// Where the configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    /// No ConfigMap: what Kueue runs with when started without `--config`.
    ReleaseDefaults,
    /// The ConfigMap the v0.19.2 release manifests and Helm chart install.
    ReleaseManifest,
    /// Parsed from the ConfigMap `namespace/name`.
    ConfigMap { namespace: String, name: String, api_version: ApiVersion },
}

/// `waitForPodsReady` after defaulting. Present means configured;
/// [`KueueConfig::wait_for_pods_ready_enabled`] also honours the feature gate.
///
/// Defaults: v1beta2 (and no ConfigMap) always has it (a missing section
/// defaults to `{}`): timeout 30m (also when set to 0), blockAdmission false,
/// recoveryTimeout = timeout. v1beta1 has it only with `enable: true`:
/// timeout 5m, blockAdmission true, recoveryTimeout = timeout. Both:
/// requeuingStrategy timestamp Eviction, backoffBaseSeconds 60,
/// backoffMaxSeconds 3600, backoffLimitCount unset (requeue forever).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitForPodsReady {
    pub timeout: Duration,
    pub block_admission: bool,
    /// Zero disables the recovery check.
    pub recovery_timeout: Duration,
    pub requeuing_timestamp: RequeuingTimestamp,
    /// `None`: requeued without limit; else deactivated after that many requeues.
    pub backoff_limit_count: Option<i32>,
    pub backoff_base_seconds: i32,
    pub backoff_max_seconds: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequeuingTimestamp {
    Eviction,
    Creation,
    /// Refused by `validateWaitForPodsReady`.
    Other(String),
}

impl WaitForPodsReady {
    fn defaults(timeout: Duration, block_admission: bool) -> Self {
        WaitForPodsReady {
            timeout,
            block_admission,
            recovery_timeout: timeout,
            requeuing_timestamp: RequeuingTimestamp::Eviction,
            backoff_limit_count: None,
            backoff_base_seconds: DEFAULT_BACKOFF_BASE_SECONDS,
            backoff_max_seconds: DEFAULT_BACKOFF_MAX_SECONDS,
        }
    }
}

/// `fairSharing` when enabled (pkg/scheduler/preemption/fairsharing
/// `Enabled`: the v1beta2 section is present; in v1beta1, `enable: true`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FairSharing {
    pub preemption_strategies: Vec<String>,
}

/// The Kueue Configuration fields an admission webhook needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KueueConfig {
    /// The Kueue release that reads it (the config's `kueue.version`): its
    /// defaults, its validation, its feature gates' defaults.
    pub version: KueueVersion,
    pub source: ConfigSource,
    /// `namespace`: where Kueue runs. Defaults to the Kueue pod's own
    /// namespace (`getOperatorNamespace`), which is where its ConfigMap is.
    pub namespace: String,
    pub manage_jobs_without_queue_name: bool,
    /// Never absent after defaulting: `kubernetes.io/metadata.name notin
    /// (kube-system,<namespace>)` unless set. Applied whatever
    /// manageJobsWithoutQueueName says (see [`KueueConfig::reconciles_job`]).
    pub managed_jobs_namespace_selector: LabelSelector,
    /// `integrations.frameworks`; `[batch/job]` when empty.
    pub frameworks: Vec<String>,
    /// `integrations.externalFrameworks` (`Kind.version.group`).
    pub external_frameworks: Vec<String>,
    pub wait_for_pods_ready: Option<WaitForPodsReady>,
    pub fair_sharing: Option<FairSharing>,
    /// `resources.excludeResourcePrefixes` and `resources.transformations`.
    pub resources: ResourceSettings,
    /// `resources.quotaCheckStrategy` as written (`BlockUndeclared` when absent).
    pub quota_check_strategy: Option<String>,
    /// `featureGates` from the file. Gates may instead come from the
    /// `--feature-gates` flag, which a ConfigMap does not show.
    pub feature_gates: BTreeMap<String, bool>,
    /// The installer calls Kueue's webhooks only in managed namespaces
    /// ([`KueueInstall::webhooks_only_in_managed_namespaces`]).
    pub webhooks_only_in_managed_namespaces: bool,
    /// Why Kueue v0.19.2 would refuse to start with this Configuration (at most
    /// 20, then a count); empty when it would start.
    pub startup_errors: Vec<String>,
}

impl Default for KueueConfig {
    /// Kueue v0.19.2 in kueue-system with no Configuration file: `config.Load(scheme, "")`.
    fn default() -> Self {
        KueueConfig::defaults_for(ConfigSource::ReleaseDefaults, &KueueInstall::default())
    }
}

impl KueueConfig {
    fn defaults_for(source: ConfigSource, kueue: &KueueInstall) -> Self {
        KueueConfig {
            version: kueue.version,
            source,
            namespace: kueue.namespace.clone(),
            manage_jobs_without_queue_name: false,
            managed_jobs_namespace_selector: default_managed_jobs_selector(&kueue.namespace),
            frameworks: vec![DEFAULT_FRAMEWORK.to_string()],
            external_frameworks: Vec::new(),
            // v0.19's v1beta2 defaulting turns it on; before, it is off without a section.
            wait_for_pods_ready: kueue
                .version
                .since(0, 19, 0)
                .then(|| WaitForPodsReady::defaults(V1BETA2_PODS_READY_TIMEOUT, false)),
            fair_sharing: None,
            resources: ResourceSettings::default(),
            quota_check_strategy: None,
            feature_gates: BTreeMap::new(),
            webhooks_only_in_managed_namespaces: kueue.webhooks_only_in_managed_namespaces,
            startup_errors: Vec::new(),
        }
    }

    /// What a cluster installed from its release's manifests or Helm chart
    /// runs with, its ConfigMap unchanged: the defaults plus the
    /// [`release_manifest_frameworks`].
    pub fn release_manifest(kueue: &KueueInstall) -> Self {
        KueueConfig {
            frameworks: release_manifest_frameworks(kueue.version).into_iter().map(str::to_string).collect(),
            ..KueueConfig::defaults_for(ConfigSource::ReleaseManifest, kueue)
        }
    }

    /// Parses the text of data."controller_manager_config.yaml" of upstream
    /// v0.19.2's ConfigMap, in `kueue-system`.
    pub fn parse(text: &str) -> Result<KueueConfig, String> {
        KueueConfig::parse_for(text, &KueueInstall::default())
    }

    /// Parses the text of `kueue`'s ConfigMap: Kueue mounts its own
    /// namespace's ConfigMap, so that is the namespace it defaults to.
    pub fn parse_for(text: &str, kueue: &KueueInstall) -> Result<KueueConfig, String> {
        decode::decode(text, kueue)
    }

    /// Whether Kueue manages this integration (`integrations.frameworks` or
    /// `externalFrameworks`, by exact name, e.g. "batch/job",
    /// "jobset.x-k8s.io/jobset"). A framework that is not enabled gets a no-op
    /// webhook (pkg/controller/jobframework/setup.go `setupControllers`): Kueue
    /// neither suspends nor admits it. "pod" also gets enabled implicitly by
    /// deployment, statefulset and leaderworkerset, for their own pods only;
    /// that is not reported here.
    pub fn framework_enabled(&self, framework: &str) -> bool {
        self.frameworks.iter().chain(&self.external_frameworks).any(|f| f == framework)
    }

    /// pkg/util/waitforpodsready `Enabled`: configured, and the
    /// DisableWaitForPodsReady gate (v0.19 on; as far as the file shows) off.
    pub fn wait_for_pods_ready_enabled(&self) -> bool {
        self.wait_for_pods_ready.is_some() && !self.gate(DISABLE_WAIT_FOR_PODS_READY_GATE)
    }

    /// The waitForPodsReady settings in effect, if it is enabled.
    pub fn effective_wait_for_pods_ready(&self) -> Option<&WaitForPodsReady> {
        self.wait_for_pods_ready.as_ref().filter(|_| self.wait_for_pods_ready_enabled())
    }

    /// pkg/scheduler/preemption/fairsharing `Enabled`.
    pub fn fair_sharing_enabled(&self) -> bool {
        self.fair_sharing.is_some()
    }

    /// `quotaCheckStrategy: IgnoreUndeclared` with its gate on (alpha, off,
    /// in v0.18; beta, on, from v0.19): a resource no group of the
    /// ClusterQueue covers is left out of the quota check (cmd/kueue
    /// `quotaCheckStrategy`, flavorassigner `IgnoreUndeclaredResources`).
    pub fn ignores_undeclared_resources(&self) -> bool {
        self.gate(QUOTA_CHECK_STRATEGY_GATE) && self.quota_check_strategy.as_deref() == Some("IgnoreUndeclared")
    }

    /// A gate as the file's `featureGates` sets it, else its default in this
    /// release. Gates may also come from the `--feature-gates` flag, which a
    /// ConfigMap does not show.
    pub fn gate(&self, name: &str) -> bool {
        self.feature_gates.get(name).copied().unwrap_or_else(|| gate_default(self.version, name))
    }

    /// Whether the namespace (by its labels, which include
    /// `kubernetes.io/metadata.name`) matches managedJobsNamespaceSelector.
    pub fn manages_namespace(&self, namespace_labels: &BTreeMap<String, String>) -> bool {
        self.managed_jobs_namespace_selector.matches(namespace_labels)
    }

    /// Whether Kueue's job reconciler takes up a job with a queue-name label in
    /// this namespace (pkg/controller/jobframework/reconciler.go
    /// `ReconcileGenericJob`): under ManagedJobsNamespaceSelectorAlwaysRespected
    /// (on from v0.15, locked on in v0.19) only where managedJobsNamespaceSelector
    /// selects; before, the selector applies to unlabelled jobs only, so a
    /// labelled job is managed in any namespace.
    pub fn manages_labelled_jobs_in(&self, namespace_labels: &BTreeMap<String, String>) -> bool {
        !self.gate(ALWAYS_RESPECT_NAMESPACE_SELECTOR_GATE) || self.manages_namespace(namespace_labels)
    }

    /// Whether Kueue's Job and JobSet webhooks give a new job with no
    /// queue-name label the namespace's LocalQueue `default`, when one exists
    /// (jobframework `ApplyDefaultLocalQueue`, gate LocalQueueDefaulting). From
    /// v0.18.5 and v0.19.1 only where managedJobsNamespaceSelector selects the
    /// namespace (`ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector`,
    /// Kueue #13374); in v0.19.0 and up to v0.18.4, in any namespace, unless
    /// the webhooks are called only in managed namespaces.
    pub fn defaults_local_queue_in(&self, namespace_labels: &BTreeMap<String, String>) -> bool {
        let v = self.version;
        let respects_selector =
            self.webhooks_only_in_managed_namespaces || v.since(0, 19, 1) || (v.since(0, 18, 5) && !v.since(0, 19, 0));
        self.gate(LOCAL_QUEUE_DEFAULTING_GATE) && (!respects_selector || self.manages_namespace(namespace_labels))
    }

    /// Whether Kueue's job reconciler takes up a top-level job of `framework`
    /// (creates its Workload, and so may ever unsuspend it):
    /// pkg/controller/jobframework/reconciler.go `ReconcileGenericJob` skips a
    /// job whose namespace does not match managedJobsNamespaceSelector (a
    /// labelled one only under the gate, see [`Self::manages_labelled_jobs_in`]),
    /// then one without the label unless manageJobsWithoutQueueName.
    pub fn reconciles_job(
        &self,
        framework: &str,
        namespace_labels: &BTreeMap<String, String>,
        has_queue_name: bool,
    ) -> bool {
        let namespace_ok = if has_queue_name {
            self.manages_labelled_jobs_in(namespace_labels)
        } else {
            self.manages_namespace(namespace_labels)
        };
        self.framework_enabled(framework) && namespace_ok && (has_queue_name || self.manage_jobs_without_queue_name)
    }

    /// Whether Kueue's mutating webhook suspends a new top-level job of
    /// `framework` (jobframework `WorkloadShouldBeSuspended`, from
    /// `ApplyDefaultForSuspend` in e.g. the Job and JobSet webhooks): always
    /// with a queue-name label, in any namespace; without one, only under
    /// manageJobsWithoutQueueName in a managed namespace. A labelled job in an
    /// unmanaged namespace is therefore suspended and never reconciled: it
    /// waits forever; unless the webhooks are called only in managed
    /// namespaces. (Pod-based integrations check the namespace first.)
    pub fn suspends_on_create(
        &self,
        framework: &str,
        namespace_labels: &BTreeMap<String, String>,
        has_queue_name: bool,
    ) -> bool {
        let called = !self.webhooks_only_in_managed_namespaces || self.manages_namespace(namespace_labels);
        called
            && self.framework_enabled(framework)
            && (has_queue_name || (self.manage_jobs_without_queue_name && self.manages_namespace(namespace_labels)))
    }

    /// One line for `review` output.
    pub fn summary(&self) -> String {
        let mut out = String::from("Kueue Configuration: ");
        match &self.source {
            ConfigSource::ReleaseDefaults => {
                let _ = write!(out, "Kueue {}'s defaults (no ConfigMap)", self.version);
            }
            ConfigSource::ReleaseManifest => {
                let _ = write!(out, "the Kueue {} release manifests' ConfigMap (assumed, not read)", self.version);
            }
            ConfigSource::ConfigMap { namespace, name, api_version } => {
                let _ = write!(
                    out,
                    "from ConfigMap {namespace}/{name} ({}, read as Kueue {})",
                    api_version.as_str(),
                    self.version
                );
            }
        }
        let _ = write!(out, "; frameworks: {}", listed(&self.frameworks));
        if !self.external_frameworks.is_empty() {
            let _ = write!(out, "; external frameworks: {}", listed(&self.external_frameworks));
        }
        let _ = write!(
            out,
            "; jobs without a queue-name label: {}",
            if self.manage_jobs_without_queue_name { "managed" } else { "not managed" }
        );
        let selector = self.managed_jobs_namespace_selector.to_string();
        let _ = write!(
            out,
            "; managed namespaces: {}",
            if selector.is_empty() { "all".to_string() } else { echo(&selector) }
        );
        match (&self.wait_for_pods_ready, self.wait_for_pods_ready_enabled()) {
            (Some(w), true) => {
                let _ = write!(
                    out,
                    "; waitForPodsReady: on (timeout {}, recoveryTimeout {}, blockAdmission {}, requeue backoff \
                     {}s..{}s, {})",
                    go_duration(w.timeout),
                    go_duration(w.recovery_timeout),
                    w.block_admission,
                    w.backoff_base_seconds,
                    w.backoff_max_seconds,
                    match w.backoff_limit_count {
                        Some(limit) => format!("deactivated after {limit} requeues"),
                        None => "no requeue limit".to_string(),
                    }
                );
            }
            (Some(_), false) => out.push_str("; waitForPodsReady: off (feature gate DisableWaitForPodsReady)"),
            (None, _) => out.push_str("; waitForPodsReady: off"),
        }
        match &self.fair_sharing {
            Some(fs) => {
                let _ = write!(out, "; fairSharing: on ({})", listed(&fs.preemption_strategies));
            }
            None => out.push_str("; fairSharing: off"),
        }
        if !self.startup_errors.is_empty() {
            let _ = write!(
                out,
                "; Kueue {} would not start with this Configuration (a running Kueue may still use the one it \
                 started with): {}",
                self.version,
                self.startup_errors.join("; ")
            );
        }
        out
    }
}

/// The gates whose defaults the rules depend on, by release
/// (pkg/features/kube_features.go, `defaultVersionedFeatureGates`: the last
/// spec at or below the release). Any other gate is off unless set.
fn gate_default(version: KueueVersion, name: &str) -> bool {
    match name {
        // alpha, off, 0.13; beta, on, 0.15; GA, locked on, 0.19.
        ALWAYS_RESPECT_NAMESPACE_SELECTOR_GATE => version.since(0, 15, 0),
        // beta, on, 0.12; GA, locked on, 0.17; removed in 0.19 (always on).
        LOCAL_QUEUE_DEFAULTING_GATE => true,
        // alpha, off, 0.18; beta, on, 0.19.
        QUOTA_CHECK_STRATEGY_GATE => version.since(0, 19, 0),
        _ => false,
    }
}

/// `SetDefaults_Configuration`'s managedJobsNamespaceSelector: NotIn
/// [kube-system, <namespace>] on `kubernetes.io/metadata.name`.
fn default_managed_jobs_selector(namespace: &str) -> LabelSelector {
    LabelSelector {
        match_labels: BTreeMap::new(),
        match_expressions: vec![LabelSelectorRequirement {
            key: NAMESPACE_NAME_LABEL.to_string(),
            operator: Operator::NotIn,
            values: vec!["kube-system".to_string(), namespace.to_string()],
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::decode::{MAX_PROBLEMS, MAX_TEXT_BYTES};
    use super::*;
    use crate::vocabulary::go_duration::parse_go_duration;

    fn ns(name: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(NAMESPACE_NAME_LABEL.to_string(), name.to_string())])
    }

    fn ns_with(name: &str, key: &str, value: &str) -> BTreeMap<String, String> {
        let mut labels = ns(name);
        labels.insert(key.to_string(), value.to_string());
        labels
    }

    const V1BETA2: &str = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n";
    const V1BETA1: &str = "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n";

    fn parse(body: &str, header: &str) -> KueueConfig {
        KueueConfig::parse(&format!("{header}{body}")).unwrap_or_else(|error| panic!("{error}"))
    }

    /// Kueue `release` in kueue-system.
    fn kueue(release: &str) -> KueueInstall {
        KueueInstall { version: KueueVersion::parse(release).unwrap(), ..KueueInstall::default() }
    }

    fn parse_as(release: &str, body: &str, header: &str) -> KueueConfig {
        KueueConfig::parse_for(&format!("{header}{body}"), &kueue(release)).unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn a_labelled_job_outside_the_selector_is_managed_before_v0_15() {
        // ReconcileGenericJob: the selector applies to labelled jobs only under
        // ManagedJobsNamespaceSelectorAlwaysRespected (alpha off in v0.13/v0.14, beta on from v0.15).
        let outside = ns_with("team-a", "team", "a");
        let selector = "managedJobsNamespaceSelector: {matchLabels: {kueue-managed: \"true\"}}\n";
        for (release, managed) in [("v0.12.10", true), ("v0.14.8", true), ("v0.16.6", false), ("v0.19.2", false)] {
            let config = parse_as(release, selector, V1BETA1);
            assert_eq!(config.manages_labelled_jobs_in(&outside), managed, "{release}");
            assert_eq!(config.reconciles_job("batch/job", &outside, true), managed, "{release}");
            assert!(!config.reconciles_job("batch/job", &outside, false), "{release}: unlabelled, never");
        }
        let gated = format!("{selector}featureGates: {{ManagedJobsNamespaceSelectorAlwaysRespected: true}}\n");
        assert!(!parse_as("v0.14.8", &gated, V1BETA1).manages_labelled_jobs_in(&outside), "turned on in v0.14");
        let off = format!("{selector}featureGates: {{ManagedJobsNamespaceSelectorAlwaysRespected: false}}\n");
        let config = parse_as("v0.18.5", &off, V1BETA1);
        assert!(config.manages_labelled_jobs_in(&outside) && config.startup_errors.is_empty(), "turned off in v0.18");
        let config = parse_as("v0.19.2", &off, V1BETA1);
        assert_eq!(
            config.startup_errors,
            ["featureGates.\"ManagedJobsNamespaceSelectorAlwaysRespected\": locked to true in Kueue v0.19.2"]
        );
    }

    #[test]
    fn the_default_local_queue_respects_the_selector_from_v0_18_5_and_v0_19_1() {
        // Kueue #13374: ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector.
        let selector = "managedJobsNamespaceSelector: {matchLabels: {kueue-managed: \"true\"}}\n";
        let (inside, outside) = (ns_with("team-a", "kueue-managed", "true"), ns("team-b"));
        for (release, outside_too) in
            [("v0.12.10", true), ("v0.18.2", true), ("v0.18.5", false), ("v0.19.0", true), ("v0.19.1", false)]
        {
            let config = parse_as(release, selector, V1BETA1);
            assert!(config.defaults_local_queue_in(&inside), "{release}");
            assert_eq!(config.defaults_local_queue_in(&outside), outside_too, "{release}");
        }
        let off = parse_as("v0.16.6", "featureGates: {LocalQueueDefaulting: false}\n", V1BETA1);
        assert!(!off.defaults_local_queue_in(&inside) && off.startup_errors.is_empty());
        // The Red Hat build calls the webhook in managed namespaces only, whatever the release.
        let red_hat = KueueInstall { webhooks_only_in_managed_namespaces: true, ..kueue("v0.12.10") };
        for release in ["v0.12.10", "v0.16.6", "v0.18.2"] {
            let install = KueueInstall { version: KueueVersion::parse(release).unwrap(), ..red_hat.clone() };
            let config = KueueConfig::parse_for(&format!("{V1BETA1}{selector}"), &install).unwrap();
            assert!(config.defaults_local_queue_in(&inside) && !config.defaults_local_queue_in(&outside), "{release}");
        }
        let locked = parse_as("v0.17.0", "featureGates: {LocalQueueDefaulting: false}\n", V1BETA1);
        assert!(locked.startup_errors[0].contains("locked to true in Kueue v0.17.0"), "{:?}", locked.startup_errors);
    }

    #[test]
    fn each_release_manifest_enables_its_own_frameworks() {
        let count = |release: &str| release_manifest_frameworks(KueueVersion::parse(release).unwrap()).len();
        assert_eq!(
            [count("v0.12.10"), count("v0.14.8"), count("v0.16.6"), count("v0.18.2"), count("v0.19.2")],
            [11, 12, 16, 17, 12]
        );
        for release in ["v0.12.10", "v0.19.2"] {
            let config = KueueConfig::release_manifest(&kueue(release));
            assert!(config.framework_enabled("batch/job") && config.framework_enabled("jobset.x-k8s.io/jobset"));
        }
        assert!(KueueConfig::release_manifest(&kueue("v0.18.2")).framework_enabled("kubeflow.org/pytorchjob"));
        assert!(!KueueConfig::release_manifest(&kueue("v0.19.2")).framework_enabled("kubeflow.org/pytorchjob"));
        assert!(!KueueConfig::release_manifest(&kueue("v0.14.8")).framework_enabled("pod"));
    }

    #[test]
    fn wait_for_pods_ready_is_on_by_default_only_from_v0_19() {
        for release in ["v0.16.6", "v0.18.5"] {
            assert!(KueueConfig::release_manifest(&kueue(release)).wait_for_pods_ready.is_none(), "{release}");
            assert!(parse_as(release, "", V1BETA2).wait_for_pods_ready.is_none(), "{release}: no section, off");
            // A section turns it on, and v0.15..v0.18 give its timeout no default.
            let empty = parse_as(release, "waitForPodsReady: {}\n", V1BETA2);
            assert!(empty.wait_for_pods_ready_enabled());
            assert_eq!(empty.startup_errors, ["waitForPodsReady.timeout: must be specified (it is 0s)"], "{release}");
        }
        let v0_19 = parse_as("v0.19.2", "waitForPodsReady: {}\n", V1BETA2);
        assert_eq!(v0_19.wait_for_pods_ready.unwrap().timeout, V1BETA2_PODS_READY_TIMEOUT);
        assert!(KueueConfig::release_manifest(&kueue("v0.19.2")).wait_for_pods_ready.is_some());
    }

    #[test]
    fn fields_and_api_versions_arrive_by_release() {
        let v0_14 = parse_as("v0.14.8", "", V1BETA2);
        assert!(v0_14.startup_errors[0].contains("Kueue v0.14.8 reads only config.kueue.x-k8s.io/v1beta1"));
        assert!(parse_as("v0.15.0", "", V1BETA2).startup_errors.is_empty());
        let strategy = "resources: {quotaCheckStrategy: IgnoreUndeclared}\n";
        let v0_16 = parse_as("v0.16.6", strategy, V1BETA2);
        assert!(v0_16.startup_errors[0].contains("quotaCheckStrategy\": unknown field"), "{:?}", v0_16.startup_errors);
        // v0.18: the field exists but its gate is alpha, off.
        let v0_18 = parse_as("v0.18.5", strategy, V1BETA2);
        assert!(v0_18.startup_errors.is_empty() && !v0_18.ignores_undeclared_resources());
        let gated = parse_as("v0.18.5", &format!("{strategy}featureGates: {{QuotaCheckStrategy: true}}\n"), V1BETA2);
        assert!(gated.ignores_undeclared_resources());
        assert!(parse_as("v0.19.2", strategy, V1BETA2).ignores_undeclared_resources());
        assert!(!parse_as("v0.19.2", strategy, V1BETA1).startup_errors.is_empty(), "v1beta2 only");
        let multiply = "resources: {transformations: [{input: nvidia.com/mig-1g.5gb, multiplyBy: \"2\"}]}\n";
        assert!(!parse_as("v0.14.8", multiply, V1BETA1).startup_errors.is_empty());
        assert!(parse_as("v0.16.6", multiply, V1BETA1).startup_errors.is_empty());
        let disable = parse_as("v0.18.5", "featureGates: {DisableWaitForPodsReady: true}\n", V1BETA1);
        assert_eq!(
            disable.startup_errors,
            ["featureGates.\"DisableWaitForPodsReady\": Kueue v0.18.5 has no such feature gate"]
        );
    }

    #[test]
    fn release_defaults() {
        let config = KueueConfig::default();
        assert_eq!(config.source, ConfigSource::ReleaseDefaults);
        assert_eq!(config.namespace, "kueue-system");
        assert!(!config.manage_jobs_without_queue_name);
        assert_eq!(
            config.managed_jobs_namespace_selector.to_string(),
            "kubernetes.io/metadata.name notin (kube-system,kueue-system)"
        );
        assert!(config.framework_enabled("batch/job"));
        assert!(!config.framework_enabled("jobset.x-k8s.io/jobset"));
        assert!(config.wait_for_pods_ready_enabled());
        assert_eq!(
            config.wait_for_pods_ready,
            Some(WaitForPodsReady {
                timeout: Duration::from_secs(1800),
                block_admission: false,
                recovery_timeout: Duration::from_secs(1800),
                requeuing_timestamp: RequeuingTimestamp::Eviction,
                backoff_limit_count: None,
                backoff_base_seconds: 60,
                backoff_max_seconds: 3600,
            })
        );
        assert!(!config.fair_sharing_enabled());
        assert!(config.startup_errors.is_empty());
        assert!(config.manages_namespace(&ns("team-a")));
        assert!(!config.manages_namespace(&ns("kube-system")));
        assert!(!config.manages_namespace(&ns("kueue-system")));
        let summary = config.summary();
        assert!(summary.starts_with("Kueue Configuration: Kueue v0.19.2's defaults (no ConfigMap)"), "{summary}");
        assert!(summary.contains("waitForPodsReady: on (timeout 30m0s, recoveryTimeout 30m0s"), "{summary}");
        assert!(summary.contains("fairSharing: off"), "{summary}");
    }

    #[test]
    fn minimal_v1beta2_equals_the_defaults_but_for_the_source() {
        let config = parse("", V1BETA2);
        assert_eq!(
            config.source,
            ConfigSource::ConfigMap {
                namespace: "kueue-system".into(),
                name: "kueue-manager-config".into(),
                api_version: ApiVersion::V1beta2
            }
        );
        assert_eq!(KueueConfig { source: ConfigSource::ReleaseDefaults, ..config }, KueueConfig::default());
    }

    #[test]
    fn release_manifest_text_parses_to_release_manifest() {
        // The non-comment content of config/components/manager/controller_manager_config.yaml
        // that this module reads (the rest is known and ignored).
        let text = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nhealth:\n  \
                    healthProbeBindAddress: :8081\nmetrics:\n  bindAddress: :8443\nwebhook:\n  port: 9443\n\
                    leaderElection:\n  leaderElect: true\n  resourceName: c1f6bfd2.kueue.x-k8s.io\ncontroller:\n  \
                    groupKindConcurrency:\n    Job.batch: 5\nclientConnection:\n  qps: 300\n  burst: 500\n\
                    integrations:\n  frameworks:\n  - \"batch/job\"\n  - \"kubeflow.org/mpijob\"\n  - \"ray.io/rayjob\"\n  \
                    - \"ray.io/raycluster\"\n  - \"ray.io/rayservice\"\n  - \"jobset.x-k8s.io/jobset\"\n  \
                    - \"workload.codeflare.dev/appwrapper\"\n  - \"trainer.kubeflow.org/trainjob\"\n  - \"pod\"\n  \
                    - \"deployment\"\n  - \"statefulset\"\n  - \"leaderworkerset.x-k8s.io/leaderworkerset\"\n";
        let config = KueueConfig::parse(text).unwrap();
        assert!(config.startup_errors.is_empty(), "{:?}", config.startup_errors);
        let upstream = KueueInstall::default();
        assert_eq!(
            KueueConfig { source: ConfigSource::ReleaseManifest, ..config },
            KueueConfig::release_manifest(&upstream)
        );
        assert!(KueueConfig::release_manifest(&upstream).framework_enabled("jobset.x-k8s.io/jobset"));
    }

    #[test]
    fn v1beta2_settings() {
        let config = parse(
            "namespace: kueue\nmanageJobsWithoutQueueName: true\nmanagedJobsNamespaceSelector:\n  matchLabels:\n    \
             kueue-managed: \"true\"\nintegrations:\n  frameworks: [batch/job, jobset.x-k8s.io/jobset]\n  \
             externalFrameworks: [Foo.v1.example.com]\nwaitForPodsReady:\n  timeout: 5m\n  blockAdmission: true\n  \
             requeuingStrategy:\n    timestamp: Creation\n    backoffLimitCount: 3\n    backoffBaseSeconds: 10\n\
             fairSharing:\n  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]\n\
             featureGates:\n  TopologyAwareScheduling: true\nunknownThing: 1\n",
            V1BETA2,
        );
        assert_eq!(config.namespace, "kueue");
        assert!(config.manage_jobs_without_queue_name);
        assert_eq!(config.managed_jobs_namespace_selector.to_string(), "kueue-managed=true");
        assert!(config.framework_enabled("jobset.x-k8s.io/jobset"));
        assert!(config.framework_enabled("Foo.v1.example.com"));
        assert!(!config.framework_enabled("pod"));
        let w = config.effective_wait_for_pods_ready().unwrap();
        assert_eq!(w.timeout, Duration::from_secs(300));
        assert_eq!(w.recovery_timeout, Duration::from_secs(300), "recoveryTimeout defaults to timeout");
        assert!(w.block_admission);
        assert_eq!(w.requeuing_timestamp, RequeuingTimestamp::Creation);
        assert_eq!((w.backoff_limit_count, w.backoff_base_seconds, w.backoff_max_seconds), (Some(3), 10, 3600));
        assert_eq!(
            config.fair_sharing.as_ref().unwrap().preemption_strategies,
            ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
        );
        assert!(config.gate("TopologyAwareScheduling"));
        assert_eq!(config.startup_errors.len(), 1, "{:?}", config.startup_errors);
        assert!(config.startup_errors[0].contains("\"unknownThing\": unknown field"));
        let summary = config.summary();
        assert!(summary.contains("from ConfigMap kueue-system/kueue-manager-config (config.kueue.x-k8s.io/v1beta2, read as Kueue v0.19.2)"), "{summary}");
        assert!(summary.contains("would not start"), "{summary}");
    }

    #[test]
    fn v1beta2_wait_for_pods_ready_cannot_be_switched_off_but_by_the_gate() {
        for body in ["waitForPodsReady: null\n", "waitForPodsReady: {}\n", "waitForPodsReady:\n  timeout: 0s\n"] {
            let config = parse(body, V1BETA2);
            assert_eq!(config.effective_wait_for_pods_ready().unwrap().timeout, Duration::from_secs(1800), "{body}");
        }
        let gated = parse("featureGates:\n  DisableWaitForPodsReady: true\n", V1BETA2);
        assert!(gated.wait_for_pods_ready.is_some());
        assert!(!gated.wait_for_pods_ready_enabled());
        assert!(gated.summary().contains("waitForPodsReady: off (feature gate"));
        // v1beta2 has no `enable`: writing one is an unknown field
        let with_enable = parse("waitForPodsReady:\n  enable: false\n", V1BETA2);
        assert!(with_enable.wait_for_pods_ready_enabled());
        assert!(with_enable.startup_errors[0].contains("waitForPodsReady.\"enable\": unknown field"));
        // an explicit recoveryTimeout of 0s disables recovery checking
        let no_recovery = parse("waitForPodsReady:\n  timeout: 10m\n  recoveryTimeout: 0s\n", V1BETA2);
        assert_eq!(no_recovery.wait_for_pods_ready.unwrap().recovery_timeout, Duration::ZERO);
        // a null timeout fails Duration.UnmarshalJSON
        let error = KueueConfig::parse(&format!("{V1BETA2}waitForPodsReady:\n  timeout: null\n")).unwrap_err();
        assert!(error.contains("waitForPodsReady.timeout"), "{error}");
    }

    #[test]
    fn v1beta1_wait_for_pods_ready_is_opt_in() {
        let off = parse("", V1BETA1);
        assert_eq!(off.wait_for_pods_ready, None);
        assert!(!off.wait_for_pods_ready_enabled());
        assert!(off.summary().contains("waitForPodsReady: off"));
        assert_eq!(parse("waitForPodsReady:\n  timeout: 10m\n", V1BETA1).wait_for_pods_ready, None);
        let on = parse("waitForPodsReady:\n  enable: true\n", V1BETA1);
        assert_eq!(on.wait_for_pods_ready, Some(WaitForPodsReady::defaults(Duration::from_secs(300), true)));
        let custom = parse(
            "waitForPodsReady:\n  enable: true\n  timeout: 1h30m\n  blockAdmission: false\n  recoveryTimeout: 2m\n",
            V1BETA1,
        );
        let w = custom.wait_for_pods_ready.unwrap();
        assert_eq!(
            (w.timeout, w.recovery_timeout, w.block_admission),
            (Duration::from_secs(5400), Duration::from_secs(120), false)
        );
        let zero = parse("waitForPodsReady:\n  enable: true\n  timeout: 0s\n", V1BETA1);
        assert!(
            zero.startup_errors.iter().any(|p| p.contains("timeout: must be specified")),
            "{:?}",
            zero.startup_errors
        );
        // problems of a disabled section are not Kueue's concern
        let disabled = parse("waitForPodsReady:\n  timeout: -1m\n", V1BETA1);
        assert!(disabled.startup_errors.is_empty(), "{:?}", disabled.startup_errors);
    }

    #[test]
    fn fair_sharing_by_version() {
        assert!(!parse("fairSharing:\n  enable: false\n", V1BETA1).fair_sharing_enabled());
        let v1 = parse("fairSharing:\n  enable: true\n", V1BETA1);
        assert_eq!(
            v1.fair_sharing.unwrap().preemption_strategies,
            ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
        );
        let v2 = parse("fairSharing:\n  preemptionStrategies: [LessThanInitialShare]\n", V1BETA2);
        assert!(v2.fair_sharing_enabled());
        assert!(v2.startup_errors.is_empty());
        let empty = parse("fairSharing: {}\n", V1BETA2);
        assert!(empty.fair_sharing_enabled());
        assert!(empty.startup_errors[0].contains("preemptionStrategies: must be specified"));
        let wrong = parse(
            "fairSharing:\n  preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare]\n",
            V1BETA2,
        );
        assert!(wrong.startup_errors[0].contains("is not one of"));
        assert!(!parse("fairSharing: null\n", V1BETA2).fair_sharing_enabled());
    }

    #[test]
    fn namespace_selector_defaults_follow_the_namespace() {
        let elsewhere =
            KueueInstall { namespace: "kueue".into(), config_map: "config".into(), ..KueueInstall::default() };
        let config = KueueConfig::parse_for(V1BETA2, &elsewhere).unwrap();
        assert_eq!(config.namespace, "kueue");
        assert_eq!(
            config.managed_jobs_namespace_selector.to_string(),
            "kubernetes.io/metadata.name notin (kube-system,kueue)"
        );
        assert!(config.manages_namespace(&ns("kueue-system")));
        assert!(config.summary().contains("from ConfigMap kueue/config"), "{}", config.summary());
        // an explicit namespace wins over where the ConfigMap is
        let explicit = KueueConfig::parse_for(&format!("{V1BETA2}namespace: other\n"), &elsewhere).unwrap();
        assert!(!explicit.manages_namespace(&ns("other")));
        // the default applies even when manageJobsWithoutQueueName is false (it is)
        assert!(!parse("manageJobsWithoutQueueName: false\n", V1BETA1).manages_namespace(&ns("kube-system")));
    }

    #[test]
    fn namespace_selector_problems() {
        let everything = parse("managedJobsNamespaceSelector: {}\n", V1BETA2);
        assert!(everything.manages_namespace(&ns("kube-system")));
        assert_eq!(everything.startup_errors.len(), 2, "{:?}", everything.startup_errors);
        assert!(everything.startup_errors[0].contains("should not match the \"kube-system\" namespace"));
        assert!(everything.startup_errors[1].contains("\"kueue-system\""));
        let label_only = parse("managedJobsNamespaceSelector:\n  matchLabels: {team: a}\n", V1BETA2);
        assert!(label_only.startup_errors.is_empty(), "selecting by another label exempts both");
        let invalid = parse(
            "managedJobsNamespaceSelector:\n  matchExpressions:\n  - key: team\n    operator: Equals\n    values: [a]\n",
            V1BETA2,
        );
        assert!(
            invalid.startup_errors[0].contains("not a valid label selector operator"),
            "{:?}",
            invalid.startup_errors
        );
        assert!(!invalid.managed_jobs_namespace_selector.is_valid());
        let typo = parse("managedJobsNamespaceSelector:\n  matchLabel: {team: a}\n", V1BETA2);
        assert!(typo.startup_errors.iter().any(|p| p.contains("matchLabel\": unknown field")));
        let error = KueueConfig::parse(&format!("{V1BETA2}managedJobsNamespaceSelector: [a]\n")).unwrap_err();
        assert!(error.starts_with("managedJobsNamespaceSelector: expected a mapping"), "{error}");
    }

    #[test]
    fn which_jobs_kueue_takes_up() {
        let config = parse("managedJobsNamespaceSelector:\n  matchLabels: {kueue-managed: \"true\"}\n", V1BETA2);
        let managed = ns_with("team-a", "kueue-managed", "true");
        let unmanaged = ns("team-b");
        assert!(config.reconciles_job("batch/job", &managed, true));
        assert!(!config.reconciles_job("batch/job", &managed, false), "manageJobsWithoutQueueName is off");
        assert!(!config.reconciles_job("batch/job", &unmanaged, true), "a queue label does not override the selector");
        assert!(config.suspends_on_create("batch/job", &unmanaged, true), "...but the webhook still suspends it");
        let install = KueueInstall { webhooks_only_in_managed_namespaces: true, ..KueueInstall::default() };
        let red_hat = KueueConfig::parse_for(
            &format!("{V1BETA2}managedJobsNamespaceSelector:\n  matchLabels: {{kueue-managed: \"true\"}}\n"),
            &install,
        )
        .unwrap();
        assert!(!red_hat.suspends_on_create("batch/job", &unmanaged, true), "...unless it is not called there");
        assert!(red_hat.suspends_on_create("batch/job", &managed, true));
        assert!(!config.suspends_on_create("batch/job", &managed, false));
        assert!(!config.reconciles_job("jobset.x-k8s.io/jobset", &managed, true), "framework not enabled");
        assert!(!config.suspends_on_create("jobset.x-k8s.io/jobset", &managed, true));
        let all = parse("manageJobsWithoutQueueName: true\n", V1BETA2);
        assert!(all.reconciles_job("batch/job", &ns("team-b"), false));
        assert!(all.suspends_on_create("batch/job", &ns("team-b"), false));
        assert!(!all.suspends_on_create("batch/job", &ns("kube-system"), false));
    }

    #[test]
    fn frameworks() {
        assert_eq!(parse("integrations:\n  frameworks: []\n", V1BETA2).frameworks, ["batch/job"]);
        assert_eq!(parse("integrations: null\n", V1BETA1).frameworks, ["batch/job"]);
        let jobset_only = parse("integrations:\n  frameworks: [jobset.x-k8s.io/jobset]\n", V1BETA2);
        assert!(!jobset_only.framework_enabled("batch/job"), "the list replaces the default");
        let bad = parse(
            "integrations:\n  frameworks: [batch/job, batch/job, kubeflow.org/mxjob]\n  externalFrameworks: [Foo, A.v1.x, A.v1.x]\n",
            V1BETA2,
        );
        let problems = bad.startup_errors.join("\n");
        assert!(problems.contains("frameworks[1]: duplicate"), "{problems}");
        assert!(problems.contains("frameworks[2]: unsupported framework \"kubeflow.org/mxjob\""), "{problems}");
        assert!(problems.contains("externalFrameworks[0]: \"Foo\" is not in Kind.version.group form"), "{problems}");
        assert!(problems.contains("externalFrameworks[2]: duplicate"), "{problems}");
        let v1 = parse("integrations:\n  frameworks: [pod]\n  podOptions:\n    namespaceSelector: {}\n", V1BETA1);
        assert!(v1.startup_errors.is_empty(), "podOptions is a known (ignored) v1beta1 field: {:?}", v1.startup_errors);
    }

    #[test]
    fn decode_errors_name_the_field() {
        let cases = [
            ("", "empty"),
            ("- a\n", "must be a mapping"),
            ("kind: Configuration\n", "apiVersion: missing"),
            (
                "apiVersion: config.kueue.x-k8s.io/v1alpha1\nkind: Configuration\n",
                "apiVersion: \"config.kueue.x-k8s.io/v1alpha1\"",
            ),
            ("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Config\n", "kind: \"Config\""),
            ("apiVersion: config.kueue.x-k8s.io/v1beta2\n", "kind: missing"),
            ("apiVersion: [1]\nkind: Configuration\n", "apiVersion: expected a string"),
            ("a: [\n", "not valid YAML"),
            ("a: 1\na: 2\n", "not valid YAML"),
        ];
        for (text, expected) in cases {
            let error = KueueConfig::parse(text).unwrap_err();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let field_cases = [
            (
                "manageJobsWithoutQueueName: maybe\n",
                "manageJobsWithoutQueueName: expected a boolean, found the string \"maybe\"",
            ),
            ("namespace: 3\n", "namespace: expected a string"),
            ("waitForPodsReady:\n  timeout: 300\n", "waitForPodsReady.timeout: expected a duration string"),
            ("waitForPodsReady:\n  timeout: 5 minutes\n", "waitForPodsReady.timeout: time: unknown unit"),
            (
                "waitForPodsReady:\n  requeuingStrategy:\n    backoffBaseSeconds: 1.5\n",
                "backoffBaseSeconds: expected a 32-bit integer, found the number 1.5",
            ),
            (
                "waitForPodsReady:\n  requeuingStrategy:\n    backoffMaxSeconds: 3000000000\n",
                "backoffMaxSeconds: expected a 32-bit integer",
            ),
            ("integrations:\n  frameworks: batch/job\n", "integrations.frameworks: expected a list"),
            ("integrations:\n  frameworks: [1]\n", "integrations.frameworks[0]: expected a string"),
            ("featureGates:\n  A: \"x\"\n", "featureGates.\"A\": expected a boolean"),
            ("fairSharing: true\n", "fairSharing: expected a mapping"),
            ("managedJobsNamespaceSelector:\n  matchLabels: {a: 1}\n", "managedJobsNamespaceSelector: invalid type"),
        ];
        for (body, expected) in field_cases {
            let error = KueueConfig::parse(&format!("{V1BETA2}{body}")).unwrap_err();
            assert!(error.contains(expected), "{body:?}: {error}");
        }
        assert!(KueueConfig::parse(&"#".repeat(MAX_TEXT_BYTES + 1)).unwrap_err().contains("more than a ConfigMap"));
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let nested = format!("{V1BETA2}integrations: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
        assert!(KueueConfig::parse(&nested).is_err());
        let laughs = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
                      c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
                      e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n\
                      g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n";
        let _ = KueueConfig::parse(laughs);
        let many_unknown: String = (0..5000).map(|i| format!("k{i}: 1\n")).collect();
        let config = parse(&many_unknown, V1BETA2);
        assert_eq!(config.startup_errors.len(), MAX_PROBLEMS + 1);
        assert!(config.summary().len() < 10_000);
        let long_name = format!("{V1BETA2}integrations:\n  frameworks: [\"{}\"]\n", "é".repeat(5000));
        let config = KueueConfig::parse(&long_name).unwrap();
        assert!(config.summary().len() < 2_000);
        for text in ["\u{0}", "apiVersion: \u{feff}", "?", "!!binary x", "*x"] {
            let _ = KueueConfig::parse(text);
        }
        for duration in
            ["-", "+", ".", "1", "1.", ".s", "9223372036854775808ns", "99999999999999999999h", "1e3s", "µ", "1µ"]
        {
            let _ = parse_go_duration(duration);
        }
    }
}
