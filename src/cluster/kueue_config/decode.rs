//! Kueue's `fromFile` for the fields read here: a strict decode with Go's null
//! semantics, the version's defaults, and the problems Kueue would stop on.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use super::*;
use crate::vocabulary::go_duration::parse_go_duration;
use crate::vocabulary::quantity::Quantity;
use crate::vocabulary::text::echo;
use crate::vocabulary::yaml::check_flow_nesting;

/// A ConfigMap holds at most 1 MiB.
pub(super) const MAX_TEXT_BYTES: usize = 1 << 20;
/// The most problems the list repeats back.
pub(super) const MAX_PROBLEMS: usize = 20;

/// Kueue's `fromFile` and `Validate` for the text of `kueue`'s ConfigMap.
pub(super) fn decode(text: &str, kueue: &KueueInstall) -> Result<KueueConfig, String> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(format!("Kueue Configuration: {} bytes, more than a ConfigMap can hold", text.len()));
    }
    check_flow_nesting(text).map_err(|error| format!("Kueue Configuration: {error}"))?;
    // Through serde_yaml's own Value first: it refuses duplicate keys, as
    // Kueue's strict decoder does (serde_json's map would keep the last).
    let root: serde_yaml::Value =
        serde_yaml::from_str(text).map_err(|error| format!("Kueue Configuration is not valid YAML: {error}"))?;
    let root: Value = serde_json::to_value(root)
        .map_err(|error| format!("Kueue Configuration is not a JSON-compatible document: {error}"))?;
    let root = match root {
        Value::Object(map) => map,
        Value::Null => return Err("Kueue Configuration is empty".to_string()),
        other => return Err(format!("Kueue Configuration must be a mapping, found {}", describe(&other))),
    };
    Parser { problems: Vec::new(), pods_ready_problems: Vec::new() }.configuration(&root, kueue)
}

const V1BETA2_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "namespace",
    "webhook",
    "leaderElection",
    "metrics",
    "health",
    "pprofBindAddress",
    "controller",
    "tls",
    "manageJobsWithoutQueueName",
    "managedJobsNamespaceSelector",
    "internalCertManagement",
    "waitForPodsReady",
    "clientConnection",
    "integrations",
    "multiKueue",
    "fairSharing",
    "admissionFairSharing",
    "resources",
    "featureGates",
    "objectRetentionPolicies",
    "visibilityServer",
];
/// v1beta1 has `queueVisibility` and no `visibilityServer`.
const V1BETA1_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "namespace",
    "webhook",
    "leaderElection",
    "metrics",
    "health",
    "pprofBindAddress",
    "controller",
    "tls",
    "manageJobsWithoutQueueName",
    "managedJobsNamespaceSelector",
    "internalCertManagement",
    "waitForPodsReady",
    "clientConnection",
    "integrations",
    "queueVisibility",
    "multiKueue",
    "fairSharing",
    "admissionFairSharing",
    "resources",
    "featureGates",
    "objectRetentionPolicies",
];
const REQUEUING_FIELDS: &[&str] = &["timestamp", "backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"];

pub(super) struct Parser {
    pub(super) problems: Vec<String>,
    /// `validateWaitForPodsReady` findings: they count only when it is enabled.
    pub(super) pods_ready_problems: Vec<String>,
}

type Object = Map<String, Value>;

impl Parser {
    fn pods_ready_problem(&mut self, problem: String) {
        self.pods_ready_problems.push(problem);
    }

    pub(super) fn problem(&mut self, problem: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(problem);
        } else if self.problems.len() == MAX_PROBLEMS {
            self.problems.push("and more".to_string());
        }
    }

    /// Kueue decodes strictly (`serializer.EnableStrict` in `fromFile`).
    fn unknown_fields(&mut self, object: &Object, known: &[&str], path: &str) {
        for key in object.keys().filter(|key| !known.contains(&key.as_str())) {
            let at = if path.is_empty() { String::new() } else { format!("{path}.") };
            self.problem(format!("{at}{}: unknown field (Kueue decodes its Configuration strictly)", echo(key)));
        }
    }

    fn configuration(mut self, root: &Object, kueue: &KueueInstall) -> Result<KueueConfig, String> {
        let operator_namespace = kueue.namespace.as_str();
        let api_version = match string(root, "apiVersion", "apiVersion")? {
            Some(v) if v == ApiVersion::V1beta1.as_str() => ApiVersion::V1beta1,
            Some(v) if v == ApiVersion::V1beta2.as_str() => ApiVersion::V1beta2,
            Some(v) => {
                return Err(format!(
                    "apiVersion: {} is not {} or {}",
                    echo(&v),
                    ApiVersion::V1beta1.as_str(),
                    ApiVersion::V1beta2.as_str()
                ));
            }
            None => return Err("apiVersion: missing (config.kueue.x-k8s.io/v1beta2 or v1beta1)".to_string()),
        };
        match string(root, "kind", "kind")? {
            Some(kind) if kind == "Configuration" => {}
            Some(kind) => return Err(format!("kind: {} is not Configuration", echo(&kind))),
            None => return Err("kind: missing (Configuration)".to_string()),
        }
        let v1beta1 = api_version == ApiVersion::V1beta1;
        // apis/config/v1beta2 arrives in v0.15.0; before, the scheme knows v1beta1 only.
        if !v1beta1 && !kueue.version.since(0, 15, 0) {
            self.problem(format!(
                "apiVersion: Kueue {} reads only {} (v1beta2 arrives in v0.15.0)",
                kueue.version,
                ApiVersion::V1beta1.as_str()
            ));
        }
        self.unknown_fields(root, if v1beta1 { V1BETA1_FIELDS } else { V1BETA2_FIELDS }, "");

        // cfg.Namespace = cmp.Or(cfg.Namespace, getOperatorNamespace()): only an
        // absent (nil) namespace is defaulted; an explicit "" stays.
        let namespace = string(root, "namespace", "namespace")?.unwrap_or_else(|| operator_namespace.to_string());
        let manage_jobs_without_queue_name =
            boolean(root, "manageJobsWithoutQueueName", "manageJobsWithoutQueueName")?.unwrap_or(false);

        let managed_jobs_namespace_selector = match present(root, "managedJobsNamespaceSelector") {
            None => default_managed_jobs_selector(&namespace),
            Some(value) => self.selector(value, "managedJobsNamespaceSelector")?,
        };

        let (frameworks, external_frameworks) = self.integrations(root, v1beta1)?;
        let wait_for_pods_ready = if v1beta1 {
            self.wait_for_pods_ready_v1beta1(root)?
        } else {
            self.wait_for_pods_ready_v1beta2(root, kueue.version)?
        };
        let fair_sharing = self.fair_sharing(root, v1beta1)?;
        let (resources, quota_check_strategy) = self.resources(root, v1beta1, kueue.version)?;
        let feature_gates = match present(root, "featureGates") {
            None => BTreeMap::new(),
            Some(value) => {
                let gates = object(value, "featureGates")?;
                let mut out = BTreeMap::new();
                for (name, value) in gates {
                    let on = match value {
                        Value::Null => false,
                        Value::Bool(on) => *on,
                        other => return Err(expected(&format!("featureGates.{}", echo(name)), "a boolean", other)),
                    };
                    out.insert(name.clone(), on);
                }
                out
            }
        };

        let mut config = KueueConfig {
            version: kueue.version,
            source: ConfigSource::ConfigMap {
                namespace: operator_namespace.to_string(),
                name: kueue.config_map.clone(),
                api_version,
            },
            namespace,
            manage_jobs_without_queue_name,
            managed_jobs_namespace_selector,
            frameworks,
            external_frameworks,
            wait_for_pods_ready,
            fair_sharing,
            resources,
            quota_check_strategy,
            feature_gates,
            webhooks_only_in_managed_namespaces: kueue.webhooks_only_in_managed_namespaces,
            startup_errors: Vec::new(),
        };
        self.validate(&config);
        config.startup_errors = self.problems;
        Ok(config)
    }

    fn selector(&mut self, value: &Value, path: &str) -> Result<LabelSelector, String> {
        let fields = object(value, path)?;
        self.unknown_fields(fields, &["matchLabels", "matchExpressions"], path);
        if let Some(Value::Array(expressions)) = fields.get("matchExpressions") {
            for (index, expression) in expressions.iter().enumerate() {
                if let Value::Object(expression) = expression {
                    self.unknown_fields(
                        expression,
                        &["key", "operator", "values"],
                        &format!("{path}.matchExpressions[{index}]"),
                    );
                }
            }
        }
        serde_json::from_value(value.clone()).map_err(|error| format!("{path}: {error}"))
    }

    /// Both versions: `integrations.frameworks` defaults to [batch/job] when
    /// empty (`len(cfg.Integrations.Frameworks) == 0`).
    fn integrations(&mut self, root: &Object, v1beta1: bool) -> Result<(Vec<String>, Vec<String>), String> {
        let Some(value) = present(root, "integrations") else {
            return Ok((vec![DEFAULT_FRAMEWORK.to_string()], Vec::new()));
        };
        let fields = object(value, "integrations")?;
        let known: &[&str] = if v1beta1 {
            &["frameworks", "externalFrameworks", "podOptions", "labelKeysToCopy"]
        } else {
            &["frameworks", "externalFrameworks", "labelKeysToCopy"]
        };
        self.unknown_fields(fields, known, "integrations");
        let mut frameworks = strings(fields, "frameworks", "integrations.frameworks")?;
        if frameworks.is_empty() {
            frameworks.push(DEFAULT_FRAMEWORK.to_string());
        }
        let external = strings(fields, "externalFrameworks", "integrations.externalFrameworks")?;
        strings(fields, "labelKeysToCopy", "integrations.labelKeysToCopy")?;
        Ok((frameworks, external))
    }

    /// apis/config/v1beta2/defaults.go: always present, timeout 30m when 0,
    /// blockAdmission false, recoveryTimeout = timeout.
    /// v0.19's apis/config/v1beta2/defaults.go makes an absent section `{}` and
    /// a zero timeout 30m; v0.15 to v0.18 leave an absent section off and a
    /// zero timeout zero, which `validateWaitForPodsReady` refuses.
    fn wait_for_pods_ready_v1beta2(
        &mut self,
        root: &Object,
        version: KueueVersion,
    ) -> Result<Option<WaitForPodsReady>, String> {
        const PATH: &str = "waitForPodsReady";
        let defaults_on = version.since(0, 19, 0);
        let empty = Object::new();
        let fields = match present(root, PATH) {
            Some(value) => object(value, PATH)?,
            None if defaults_on => &empty,
            None => return Ok(None),
        };
        self.unknown_fields(fields, &["timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout"], PATH);
        // `Timeout metav1.Duration` is not a pointer: a null reaches
        // Duration.UnmarshalJSON, which fails on the empty string.
        let timeout = match fields.get("timeout") {
            None => 0,
            Some(value) => self.duration_value(value, "waitForPodsReady.timeout")?,
        };
        let timeout = if timeout == 0 && defaults_on {
            V1BETA2_PODS_READY_TIMEOUT
        } else if timeout == 0 {
            self.pods_ready_problem("waitForPodsReady.timeout: must be specified (it is 0s)".to_string());
            Duration::ZERO
        } else {
            self.non_negative(timeout, "waitForPodsReady.timeout")
        };
        let block_admission = boolean(fields, "blockAdmission", "waitForPodsReady.blockAdmission")?.unwrap_or(false);
        let mut settings = WaitForPodsReady::defaults(timeout, block_admission);
        self.wait_for_pods_ready_common(fields, &mut settings)?;
        Ok(Some(settings))
    }

    /// apis/config/v1beta1/defaults.go: only with `enable: true`, then timeout
    /// 5m, blockAdmission true (`&Enable`), recoveryTimeout = timeout; without
    /// it the conversion drops the section
    /// (`Convert_v1beta1_Configuration_To_v1beta2_Configuration`).
    fn wait_for_pods_ready_v1beta1(&mut self, root: &Object) -> Result<Option<WaitForPodsReady>, String> {
        const PATH: &str = "waitForPodsReady";
        let Some(value) = present(root, PATH) else { return Ok(None) };
        let fields = object(value, PATH)?;
        self.unknown_fields(
            fields,
            &["enable", "timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout"],
            PATH,
        );
        let enable = boolean(fields, "enable", "waitForPodsReady.enable")?.unwrap_or(false);
        let timeout = match present(fields, "timeout") {
            None => None,
            Some(value) => Some(self.duration_value(value, "waitForPodsReady.timeout")?),
        };
        let block_admission = boolean(fields, "blockAdmission", "waitForPodsReady.blockAdmission")?;
        // An explicit timeout (even 0s) is kept: a pointer, `cmp.Or` keeps it.
        let timeout = match timeout {
            None => V1BETA1_PODS_READY_TIMEOUT,
            Some(0) => {
                self.pods_ready_problem("waitForPodsReady.timeout: must be specified (it is 0s)".to_string());
                Duration::ZERO
            }
            Some(nanos) => self.non_negative(nanos, "waitForPodsReady.timeout"),
        };
        let mut settings = WaitForPodsReady::defaults(timeout, block_admission.unwrap_or(true));
        // Decoded even when disabled: a type error stops Kueue all the same.
        self.wait_for_pods_ready_common(fields, &mut settings)?;
        Ok(enable.then_some(settings))
    }

    /// recoveryTimeout (defaulted by the caller to timeout) and
    /// requeuingStrategy, the same in both versions.
    fn wait_for_pods_ready_common(&mut self, fields: &Object, settings: &mut WaitForPodsReady) -> Result<(), String> {
        if let Some(value) = present(fields, "recoveryTimeout") {
            let nanos = self.duration_value(value, "waitForPodsReady.recoveryTimeout")?;
            settings.recovery_timeout = self.non_negative(nanos, "waitForPodsReady.recoveryTimeout");
        } else {
            settings.recovery_timeout = settings.timeout;
        }
        let Some(value) = present(fields, "requeuingStrategy") else { return Ok(()) };
        const PATH: &str = "waitForPodsReady.requeuingStrategy";
        let strategy = object(value, PATH)?;
        self.unknown_fields(strategy, REQUEUING_FIELDS, PATH);
        if let Some(timestamp) = string(strategy, "timestamp", "waitForPodsReady.requeuingStrategy.timestamp")? {
            settings.requeuing_timestamp = match timestamp.as_str() {
                "Eviction" => RequeuingTimestamp::Eviction,
                "Creation" => RequeuingTimestamp::Creation,
                _ => {
                    self.pods_ready_problem(format!(
                        "waitForPodsReady.requeuingStrategy.timestamp: {} is not Eviction or Creation",
                        echo(&timestamp)
                    ));
                    RequeuingTimestamp::Other(timestamp)
                }
            };
        }
        let limit = int32(strategy, "backoffLimitCount", "waitForPodsReady.requeuingStrategy.backoffLimitCount")?;
        let base = int32(strategy, "backoffBaseSeconds", "waitForPodsReady.requeuingStrategy.backoffBaseSeconds")?;
        let max = int32(strategy, "backoffMaxSeconds", "waitForPodsReady.requeuingStrategy.backoffMaxSeconds")?;
        for (name, value) in [("backoffLimitCount", limit), ("backoffBaseSeconds", base), ("backoffMaxSeconds", max)] {
            if value.is_some_and(|v| v < 0) {
                self.pods_ready_problem(format!("waitForPodsReady.requeuingStrategy.{name}: must not be negative"));
            }
        }
        settings.backoff_limit_count = limit;
        settings.backoff_base_seconds = base.unwrap_or(DEFAULT_BACKOFF_BASE_SECONDS);
        settings.backoff_max_seconds = max.unwrap_or(DEFAULT_BACKOFF_MAX_SECONDS);
        Ok(())
    }

    /// v1beta2: present means on (no defaulting of the strategies). v1beta1:
    /// `enable: true`, strategies defaulting to [LessThanOrEqualToFinalShare,
    /// LessThanInitialShare].
    fn fair_sharing(&mut self, root: &Object, v1beta1: bool) -> Result<Option<FairSharing>, String> {
        let Some(value) = present(root, "fairSharing") else { return Ok(None) };
        let fields = object(value, "fairSharing")?;
        let known: &[&str] = if v1beta1 { &["enable", "preemptionStrategies"] } else { &["preemptionStrategies"] };
        self.unknown_fields(fields, known, "fairSharing");
        let mut strategies = strings(fields, "preemptionStrategies", "fairSharing.preemptionStrategies")?;
        if v1beta1 {
            if !boolean(fields, "enable", "fairSharing.enable")?.unwrap_or(false) {
                return Ok(None);
            }
            if strategies.is_empty() {
                strategies = vec!["LessThanOrEqualToFinalShare".to_string(), "LessThanInitialShare".to_string()];
            }
        }
        Ok(Some(FairSharing { preemption_strategies: strategies }))
    }

    /// `resources`: exclusions, transformations (strategy defaulted to
    /// Retain, `SetDefaults_Configuration`) and the quota check strategy;
    /// `deviceClassMappings` (DRA) is read past. The fields arrive by release
    /// (apis/config/*/configuration_types.go `Resources`): deviceClassMappings
    /// in v0.14, multiplyBy in v0.16, quotaCheckStrategy in v0.18 and in
    /// v1beta2 only; before, Kueue's strict decoding refuses them.
    fn resources(
        &mut self,
        root: &Object,
        v1beta1: bool,
        version: KueueVersion,
    ) -> Result<(ResourceSettings, Option<String>), String> {
        let Some(value) = present(root, "resources") else { return Ok((ResourceSettings::default(), None)) };
        let fields = object(value, "resources")?;
        let mut known = vec!["excludeResourcePrefixes", "transformations"];
        if version.since(0, 14, 0) {
            known.push("deviceClassMappings");
        }
        if version.since(0, 18, 0) && !v1beta1 {
            known.push("quotaCheckStrategy");
        }
        self.unknown_fields(fields, &known, "resources");
        let quota_check_strategy = string(fields, "quotaCheckStrategy", "resources.quotaCheckStrategy")?;
        let exclude_prefixes = strings(fields, "excludeResourcePrefixes", "resources.excludeResourcePrefixes")?;
        let mut transformations = Vec::new();
        let items = match present(fields, "transformations") {
            None => &Vec::new(),
            Some(Value::Array(items)) => items,
            Some(other) => return Err(expected("resources.transformations", "a list", other)),
        };
        for (index, item) in items.iter().enumerate() {
            let path = format!("resources.transformations[{index}]");
            let item = object(item, &path)?;
            let item_fields: &[&str] = if version.since(0, 16, 0) {
                &["input", "strategy", "multiplyBy", "outputs"]
            } else {
                &["input", "strategy", "outputs"]
            };
            self.unknown_fields(item, item_fields, &path);
            let input = string(item, "input", &format!("{path}.input"))?.unwrap_or_default();
            // validateResourceTransformations: Retain or Replace.
            let replace = match string(item, "strategy", &format!("{path}.strategy"))?.as_deref() {
                None | Some("Retain") => false,
                Some("Replace") => true,
                Some(other) => {
                    self.problem(format!("{path}.strategy: unsupported {} (Retain or Replace)", echo(other)));
                    false
                }
            };
            let multiply_by = string(item, "multiplyBy", &format!("{path}.multiplyBy"))?.filter(|by| !by.is_empty());
            let mut outputs = crate::workload::ResourceAmounts::new();
            if let Some(value) = present(item, "outputs") {
                for (resource, raw) in object(value, &format!("{path}.outputs"))? {
                    let quantity =
                        Quantity::from_json(raw).map_err(|e| format!("{path}.outputs[{}]: {e}", echo(resource)))?;
                    outputs.insert(resource.as_str().into(), quantity);
                }
            }
            transformations.push(Transformation {
                input: input.as_str().into(),
                replace,
                multiply_by: multiply_by.map(|by| by.as_str().into()),
                outputs,
            });
        }
        Ok((ResourceSettings { exclude_prefixes, transformations }, quota_check_strategy))
    }

    fn duration_value(&mut self, value: &Value, path: &str) -> Result<i64, String> {
        match value {
            Value::String(text) => parse_go_duration(text).map_err(|error| format!("{path}: {error}")),
            Value::Null => Err(format!("{path}: null is not a duration (time: invalid duration \"\")")),
            other => Err(expected(path, "a duration string such as \"5m\"", other)),
        }
    }

    /// validateWaitForPodsReady refuses negative durations; keep zero in their place.
    fn non_negative(&mut self, nanos: i64, path: &str) -> Duration {
        if nanos < 0 {
            self.pods_ready_problem(format!("{path}: must not be negative"));
            Duration::ZERO
        } else {
            Duration::from_nanos(nanos.unsigned_abs())
        }
    }
}

// --- typed field access with Go's null semantics: null leaves a pointer, slice, map, bool or string unset ---

fn present<'a>(fields: &'a Object, name: &str) -> Option<&'a Value> {
    fields.get(name).filter(|value| !value.is_null())
}

fn object<'a>(value: &'a Value, path: &str) -> Result<&'a Object, String> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(expected(path, "a mapping", other)),
    }
}

fn string(fields: &Object, name: &str, path: &str) -> Result<Option<String>, String> {
    match present(fields, name) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(expected(path, "a string", other)),
    }
}

/// A bool; also the YAML 1.1 plain words Kubernetes' YAML reader takes as one.
fn boolean(fields: &Object, name: &str, path: &str) -> Result<Option<bool>, String> {
    match present(fields, name) {
        None => Ok(None),
        Some(Value::Bool(on)) => Ok(Some(*on)),
        Some(Value::String(word)) => match word.as_str() {
            "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => Ok(Some(true)),
            "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => Ok(Some(false)),
            _ => Err(expected(path, "a boolean", &Value::String(word.clone()))),
        },
        Some(other) => Err(expected(path, "a boolean", other)),
    }
}

fn int32(fields: &Object, name: &str, path: &str) -> Result<Option<i32>, String> {
    match present(fields, name) {
        None => Ok(None),
        Some(Value::Number(number)) => match number.as_i64().and_then(|n| i32::try_from(n).ok()) {
            Some(n) => Ok(Some(n)),
            None => Err(format!("{path}: expected a 32-bit integer, found the number {number}")),
        },
        Some(other) => Err(expected(path, "an integer", other)),
    }
}

/// A list of strings; a null entry reads as "".
fn strings(fields: &Object, name: &str, path: &str) -> Result<Vec<String>, String> {
    match present(fields, name) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::String(text) => Ok(text.clone()),
                Value::Null => Ok(String::new()),
                other => Err(expected(&format!("{path}[{index}]"), "a string", other)),
            })
            .collect(),
        Some(other) => Err(expected(path, "a list", other)),
    }
}

fn expected(path: &str, what: &str, found: &Value) -> String {
    format!("{path}: expected {what}, found {}", describe(found))
}

fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(on) => format!("the boolean {on}"),
        Value::Number(number) => format!("the number {number}"),
        Value::String(text) => format!("the string {}", echo(text)),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "a mapping".to_string(),
    }
}
