//! The cluster objects the rules read, pruned to the fields they use, and decoded
//! from either Kueue API version (v1beta1 and v1beta2 differ in a few names).

use serde::Deserialize;
use serde_json::Value;

pub const KUEUE_GROUP: &str = "kueue.x-k8s.io";
/// The CRD whose presence means "Kueue is installed".
pub const LOCAL_QUEUE_CRD: &str = "localqueues.kueue.x-k8s.io";

/// A namespace as the rules see it: only its default-queue annotation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceInfo {
    pub default_queue: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalQueue {
    pub cluster_queue: String,
    pub stop_policy: StopPolicy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StopPolicy {
    #[default]
    None,
    Hold,
    HoldAndDrain,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterQueue {
    /// `spec.cohortName` (v1beta2) or `spec.cohort` (v1beta1).
    pub cohort: Option<String>,
    pub within_cluster_queue: WithinClusterQueue,
    pub reclaim_within_cohort: ReclaimWithinCohort,
    /// Some resource of some flavor has no `borrowingLimit`, or one above zero.
    pub can_borrow: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WithinClusterQueue {
    #[default]
    Never,
    LowerPriority,
    LowerOrNewerEqualPriority,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReclaimWithinCohort {
    #[default]
    Never,
    LowerPriority,
    Any,
}

impl WithinClusterQueue {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Never => "Never",
            Self::LowerPriority => "LowerPriority",
            Self::LowerOrNewerEqualPriority => "LowerOrNewerEqualPriority",
        }
    }
}

impl ReclaimWithinCohort {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Never => "Never",
            Self::LowerPriority => "LowerPriority",
            Self::Any => "Any",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cohort {
    pub parent: Option<String>,
}

/// A scheduling.k8s.io/v1 PriorityClass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriorityClass {
    pub value: i32,
    pub global_default: bool,
}

/// One decoded cluster object, ready to be put in a [`super::ClusterState`].
#[derive(Debug, Clone, PartialEq)]
pub enum ClusterObject {
    Namespace {
        name: String,
        info: NamespaceInfo,
    },
    LocalQueue {
        namespace: String,
        name: String,
        queue: LocalQueue,
    },
    ClusterQueue {
        name: String,
        queue: ClusterQueue,
    },
    Cohort {
        name: String,
        cohort: Cohort,
    },
    WorkloadPriorityClass {
        name: String,
        value: i32,
    },
    PriorityClass {
        name: String,
        class: PriorityClass,
    },
    /// Any other kueue.x-k8s.io object (ResourceFlavor, Workload, ...): proves Kueue is installed.
    OtherKueueObject,
    /// A CustomResourceDefinition; only `localqueues.kueue.x-k8s.io` matters.
    Crd {
        name: String,
    },
    /// Kueue's Configuration, as its ConfigMap holds it (the YAML text, unparsed).
    KueueConfiguration {
        text: String,
    },
}

/// Where Kueue keeps its Configuration in a standard install.
pub const KUEUE_CONFIG_NAMESPACE: &str = "kueue-system";
pub const KUEUE_CONFIG_MAP: &str = "kueue-manager-config";
pub const KUEUE_CONFIG_KEY: &str = "controller_manager_config.yaml";

// --- wire shapes (serde), private: the rest of the crate sees the pruned types above ---

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireLocalQueueSpec {
    #[serde(default)]
    cluster_queue: Option<String>,
    #[serde(default)]
    stop_policy: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireClusterQueueSpec {
    #[serde(default, alias = "cohort")]
    cohort_name: Option<String>,
    #[serde(default)]
    preemption: Option<WirePreemption>,
    #[serde(default)]
    resource_groups: Option<Vec<WireResourceGroup>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WirePreemption {
    #[serde(default)]
    within_cluster_queue: Option<String>,
    #[serde(default)]
    reclaim_within_cohort: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireResourceGroup {
    #[serde(default)]
    flavors: Option<Vec<WireFlavor>>,
}

#[derive(Deserialize, Default)]
struct WireFlavor {
    #[serde(default)]
    resources: Option<Vec<WireResource>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireResource {
    #[serde(default)]
    borrowing_limit: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireCohortSpec {
    /// `parentName` in v1beta1/v1beta2, `parent` in the old v1alpha1.
    #[serde(default, alias = "parent")]
    parent_name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireObject<S> {
    #[serde(default)]
    metadata: WireMeta,
    #[serde(default)]
    spec: Option<S>,
}

#[derive(Deserialize)]
struct WireConfigMap {
    #[serde(default)]
    metadata: WireMeta,
    #[serde(default)]
    data: Option<std::collections::BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireValueObject {
    #[serde(default)]
    metadata: WireMeta,
    #[serde(default)]
    value: Option<i64>,
    #[serde(default)]
    global_default: Option<bool>,
}

/// Why an object could not be decoded; the caller adds where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The API group of an `apiVersion` (`kueue.x-k8s.io/v1beta2` -> `kueue.x-k8s.io`).
pub fn api_group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Decodes one object by `apiVersion` and `kind`. `Ok(None)` means the kind is not
/// one eval-admission reads.
pub fn decode(api_version: &str, kind: &str, object: Value) -> Result<Option<ClusterObject>, DecodeError> {
    let group = api_group(api_version);
    let bad = |e: serde_json::Error| DecodeError(format!("{kind}: {e}"));
    let named = |meta: &WireMeta| -> Result<String, DecodeError> {
        meta.name
            .clone()
            .filter(|name| !name.is_empty())
            .ok_or_else(|| DecodeError(format!("{kind} without metadata.name")))
    };
    let decoded = match (group, kind) {
        ("", "Namespace") => {
            let wire: WireObject<Value> = serde_json::from_value(object).map_err(bad)?;
            let default_queue = wire
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(crate::workload::DEFAULT_QUEUE_ANNOTATION))
                .cloned()
                .filter(|value| !value.is_empty());
            ClusterObject::Namespace { name: named(&wire.metadata)?, info: NamespaceInfo { default_queue } }
        }
        (KUEUE_GROUP, "LocalQueue") => {
            let wire: WireObject<WireLocalQueueSpec> = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            let namespace = wire
                .metadata
                .namespace
                .clone()
                .filter(|ns| !ns.is_empty())
                .ok_or_else(|| DecodeError(format!("LocalQueue {name} without metadata.namespace")))?;
            let spec = wire.spec.unwrap_or_default();
            let stop_policy = match spec.stop_policy.as_deref() {
                Some("Hold") => StopPolicy::Hold,
                Some("HoldAndDrain") => StopPolicy::HoldAndDrain,
                _ => StopPolicy::None,
            };
            let queue = LocalQueue { cluster_queue: spec.cluster_queue.unwrap_or_default(), stop_policy };
            ClusterObject::LocalQueue { namespace, name, queue }
        }
        (KUEUE_GROUP, "ClusterQueue") => {
            let wire: WireObject<WireClusterQueueSpec> = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            ClusterObject::ClusterQueue { name, queue: prune_cluster_queue(wire.spec.unwrap_or_default()) }
        }
        (KUEUE_GROUP, "Cohort") => {
            let wire: WireObject<WireCohortSpec> = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            let parent = wire.spec.unwrap_or_default().parent_name.filter(|p| !p.is_empty());
            ClusterObject::Cohort { name, cohort: Cohort { parent } }
        }
        (KUEUE_GROUP, "WorkloadPriorityClass") => {
            let wire: WireValueObject = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            ClusterObject::WorkloadPriorityClass { name, value: clamp_priority(wire.value.unwrap_or(0)) }
        }
        (KUEUE_GROUP, _) => ClusterObject::OtherKueueObject,
        ("scheduling.k8s.io", "PriorityClass") => {
            let wire: WireValueObject = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            let class = PriorityClass {
                value: clamp_priority(wire.value.unwrap_or(0)),
                global_default: wire.global_default.unwrap_or(false),
            };
            ClusterObject::PriorityClass { name, class }
        }
        ("", "ConfigMap") => {
            let wire: WireConfigMap = serde_json::from_value(object).map_err(bad)?;
            let (name, namespace) =
                (wire.metadata.name.unwrap_or_default(), wire.metadata.namespace.unwrap_or_default());
            if (namespace.as_str(), name.as_str()) != (KUEUE_CONFIG_NAMESPACE, KUEUE_CONFIG_MAP) {
                return Err(DecodeError(format!(
                    "ConfigMap {namespace}/{name}: the only ConfigMap read is Kueue's, \
                     {KUEUE_CONFIG_NAMESPACE}/{KUEUE_CONFIG_MAP}"
                )));
            }
            let text = wire
                .data
                .and_then(|mut data| data.remove(KUEUE_CONFIG_KEY))
                .ok_or_else(|| DecodeError(format!("ConfigMap {namespace}/{name} has no data.{KUEUE_CONFIG_KEY}")))?;
            ClusterObject::KueueConfiguration { text }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let wire: WireObject<Value> = serde_json::from_value(object).map_err(bad)?;
            ClusterObject::Crd { name: named(&wire.metadata)? }
        }
        _ => return Ok(None),
    };
    Ok(Some(decoded))
}

fn clamp_priority(value: i64) -> i32 {
    value.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

fn parse_within(value: Option<&str>) -> WithinClusterQueue {
    match value {
        Some("LowerPriority") => WithinClusterQueue::LowerPriority,
        Some("LowerOrNewerEqualPriority") => WithinClusterQueue::LowerOrNewerEqualPriority,
        _ => WithinClusterQueue::Never,
    }
}

fn parse_reclaim(value: Option<&str>) -> ReclaimWithinCohort {
    match value {
        Some("LowerPriority") => ReclaimWithinCohort::LowerPriority,
        Some("Any") => ReclaimWithinCohort::Any,
        _ => ReclaimWithinCohort::Never,
    }
}

fn prune_cluster_queue(spec: WireClusterQueueSpec) -> ClusterQueue {
    let preemption = spec.preemption.unwrap_or_default();
    let can_borrow = spec
        .resource_groups
        .iter()
        .flatten()
        .flat_map(|group| group.flavors.iter().flatten())
        .flat_map(|flavor| flavor.resources.iter().flatten())
        .any(|resource| match &resource.borrowing_limit {
            None | Some(Value::Null) => true,
            Some(limit) => !quantity_is_zero(limit),
        });
    ClusterQueue {
        cohort: spec.cohort_name.filter(|c| !c.is_empty()),
        within_cluster_queue: parse_within(preemption.within_cluster_queue.as_deref()),
        reclaim_within_cohort: parse_reclaim(preemption.reclaim_within_cohort.as_deref()),
        can_borrow,
    }
}

/// Whether a Kubernetes quantity (`0`, `"0"`, `"0Gi"`, `"0.0"`, `"0m"`) is zero.
/// Only zero matters: any positive limit lets the queue borrow.
pub fn quantity_is_zero(quantity: &Value) -> bool {
    match quantity {
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => {
            let numeric: String =
                s.trim().chars().take_while(|c| c.is_ascii_digit() || matches!(c, '.' | '+' | '-')).collect();
            numeric.parse::<f64>().is_ok_and(|n| n == 0.0)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zero_quantities() {
        for zero in [json!(0), json!("0"), json!("0Gi"), json!("0.0"), json!("0m"), json!("+0")] {
            assert!(quantity_is_zero(&zero), "{zero} is zero");
        }
        for nonzero in [json!(1), json!("1"), json!("500m"), json!("0.5"), json!("2Gi"), json!("1e3")] {
            assert!(!quantity_is_zero(&nonzero), "{nonzero} is not zero");
        }
    }

    #[test]
    fn cluster_queue_v1beta1_and_v1beta2_names() {
        let v1beta1 = json!({"metadata": {"name": "cq"}, "spec": {"cohort": "research",
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            "resourceGroups": [{"flavors": [{"resources": [{"name": "cpu", "nominalQuota": 8, "borrowingLimit": "0"}]}]}]}});
        let v1beta2 = json!({"metadata": {"name": "cq"}, "spec": {"cohortName": "research",
            "resourceGroups": [{"flavors": [{"resources": [{"name": "cpu", "nominalQuota": 8}]}]}]}});
        let Some(ClusterObject::ClusterQueue { queue: old, .. }) =
            decode("kueue.x-k8s.io/v1beta1", "ClusterQueue", v1beta1).unwrap()
        else {
            panic!("not a ClusterQueue")
        };
        let Some(ClusterObject::ClusterQueue { queue: new, .. }) =
            decode("kueue.x-k8s.io/v1beta2", "ClusterQueue", v1beta2).unwrap()
        else {
            panic!("not a ClusterQueue")
        };
        assert_eq!(old.cohort.as_deref(), Some("research"));
        assert_eq!(old.within_cluster_queue, WithinClusterQueue::LowerPriority);
        assert_eq!(old.reclaim_within_cohort, ReclaimWithinCohort::Any);
        assert!(!old.can_borrow, "borrowingLimit 0 everywhere");
        assert_eq!(new.cohort.as_deref(), Some("research"));
        assert_eq!(new.within_cluster_queue, WithinClusterQueue::Never);
        assert!(new.can_borrow, "no borrowingLimit means unlimited borrowing");
    }

    #[test]
    fn cohort_parent_in_both_spellings() {
        for spec in [json!({"parentName": "root"}), json!({"parent": "root"})] {
            let decoded = decode("kueue.x-k8s.io/v1beta2", "Cohort", json!({"metadata": {"name": "c"}, "spec": spec}));
            assert_eq!(
                decoded.unwrap(),
                Some(ClusterObject::Cohort { name: "c".into(), cohort: Cohort { parent: Some("root".into()) } })
            );
        }
    }

    #[test]
    fn unnamed_objects_are_errors_and_unknown_kinds_are_skipped() {
        assert!(decode("kueue.x-k8s.io/v1beta2", "LocalQueue", json!({"metadata": {"namespace": "a"}})).is_err());
        assert!(decode("kueue.x-k8s.io/v1beta2", "LocalQueue", json!({"metadata": {"name": "q"}})).is_err());
        assert_eq!(decode("apps/v1", "Deployment", json!({})).unwrap(), None);
        assert_eq!(
            decode("kueue.x-k8s.io/v1beta2", "ResourceFlavor", json!({})).unwrap(),
            Some(ClusterObject::OtherKueueObject)
        );
    }
}
