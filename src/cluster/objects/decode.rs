//! Decoding cluster objects from their JSON: the wire shapes (serde, private:
//! the rest of the crate sees the pruned types of [`super`]) and the pruning,
//! for either Kueue API version.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::*;
use crate::cluster::kueue_config::KueueConfig;
use crate::cluster::selector::LabelSelector;
use crate::vocabulary::kueue::{
    CONFIG_MAP_KEY, DEFAULT_QUEUE_ANNOTATION, KUEUE_GROUP, KueueInstall, is_default_managed_owner,
};
use crate::vocabulary::quantity::Quantity;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
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
    namespace_selector: Option<Value>,
    #[serde(default)]
    stop_policy: Option<String>,
    #[serde(default)]
    preemption: Option<WirePreemption>,
    #[serde(default)]
    resource_groups: Option<Vec<WireResourceGroup>>,
    #[serde(default)]
    admission_checks: Option<Vec<String>>,
    #[serde(default)]
    admission_checks_strategy: Option<WireAdmissionChecksStrategy>,
    #[serde(default)]
    flavor_fungibility: Option<WireFlavorFungibility>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WirePreemption {
    #[serde(default)]
    within_cluster_queue: Option<String>,
    #[serde(default)]
    reclaim_within_cohort: Option<String>,
    #[serde(default)]
    borrow_within_cohort: Option<WireBorrowWithinCohort>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireBorrowWithinCohort {
    #[serde(default)]
    policy: Option<String>,
    #[serde(default)]
    max_priority_threshold: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireFlavorFungibility {
    #[serde(default)]
    when_can_borrow: Option<String>,
    #[serde(default)]
    when_can_preempt: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireAdmissionChecksStrategy {
    #[serde(default)]
    admission_checks: Option<Vec<WireNamed>>,
}

#[derive(Deserialize, Default)]
struct WireNamed {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireResourceGroup {
    #[serde(default)]
    covered_resources: Option<Vec<String>>,
    #[serde(default)]
    flavors: Option<Vec<WireFlavor>>,
}

#[derive(Deserialize, Default)]
struct WireFlavor {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    resources: Option<Vec<WireResource>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireResource {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    nominal_quota: Option<Value>,
    #[serde(default)]
    borrowing_limit: Option<Value>,
    #[serde(default)]
    lending_limit: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireResourceFlavorSpec {
    #[serde(default)]
    node_labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    node_taints: Option<Vec<Taint>>,
    #[serde(default)]
    tolerations: Option<Vec<Toleration>>,
}

#[derive(Deserialize, Default)]
struct WireLimitRangeSpec {
    #[serde(default)]
    limits: Option<Vec<WireLimitRangeItem>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireLimitRangeItem {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    max: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    min: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    default: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    default_request: Option<BTreeMap<String, Value>>,
}

#[derive(Deserialize)]
struct WireRuntimeClass {
    #[serde(default)]
    metadata: WireMeta,
    #[serde(default)]
    overhead: Option<WireOverhead>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireOverhead {
    #[serde(default)]
    pod_fixed: Option<BTreeMap<String, Value>>,
}

/// A ResourceList of exact quantities, none negative (the API server's
/// `ValidateResourceQuantityValue`; the request arithmetic relies on it).
fn amounts(list: Option<BTreeMap<String, Value>>) -> Result<ResourceAmounts, String> {
    list.unwrap_or_default()
        .into_iter()
        .map(|(resource, raw)| {
            let quantity = Quantity::from_json(&raw).map_err(|e| format!("{resource}: {e}"))?;
            if quantity.is_negative() {
                return Err(format!("{resource}: {raw} is negative; quantities must be >= 0"));
            }
            Ok((resource.as_str().into(), quantity))
        })
        .collect()
}

#[derive(Deserialize, Default)]
struct WireConditions {
    #[serde(default)]
    conditions: Option<Vec<WireCondition>>,
}

#[derive(Deserialize, Default)]
struct WireCondition {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

#[derive(Deserialize)]
struct WireAdmissionCheck {
    #[serde(default)]
    metadata: WireMeta,
    #[serde(default)]
    status: Option<WireConditions>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireCohortSpec {
    /// `parentName` in v1beta1/v1beta2, `parent` in the old v1alpha1.
    #[serde(default, alias = "parent")]
    parent_name: Option<String>,
    #[serde(default)]
    resource_groups: Option<Vec<WireResourceGroup>>,
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
    data: Option<BTreeMap<String, String>>,
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
                .and_then(|a| a.get(DEFAULT_QUEUE_ANNOTATION))
                .cloned()
                .filter(|value| !value.is_empty());
            let labels = wire.metadata.labels.clone().unwrap_or_default();
            ClusterObject::Namespace { name: named(&wire.metadata)?, info: NamespaceInfo { default_queue, labels } }
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
            let stop_policy = parse_stop_policy(spec.stop_policy.as_deref());
            let queue = LocalQueue { cluster_queue: spec.cluster_queue.unwrap_or_default(), stop_policy };
            ClusterObject::LocalQueue { namespace, name, queue }
        }
        (KUEUE_GROUP, "ClusterQueue") => {
            let wire: WireObject<WireClusterQueueSpec> = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            let queue = prune_cluster_queue(wire.spec.unwrap_or_default())
                .map_err(|e| DecodeError(format!("ClusterQueue {name}: {e}")))?;
            ClusterObject::ClusterQueue { name, queue }
        }
        (KUEUE_GROUP, "Cohort") => {
            let wire: WireObject<WireCohortSpec> = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            let spec = wire.spec.unwrap_or_default();
            let parent = spec.parent_name.filter(|p| !p.is_empty());
            let resource_groups =
                prune_resource_groups(spec.resource_groups).map_err(|e| DecodeError(format!("Cohort {name}: {e}")))?;
            ClusterObject::Cohort { name, cohort: Cohort { parent, resource_groups } }
        }
        (KUEUE_GROUP, "WorkloadPriorityClass") => {
            let wire: WireValueObject = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            ClusterObject::WorkloadPriorityClass { name, value: clamp_priority(wire.value.unwrap_or(0)) }
        }
        (KUEUE_GROUP, "ResourceFlavor") => {
            let wire: WireObject<WireResourceFlavorSpec> = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            let spec = wire.spec.unwrap_or_default();
            let flavor = ResourceFlavor {
                node_labels: spec.node_labels.unwrap_or_default(),
                node_taints: spec.node_taints.unwrap_or_default(),
                tolerations: spec.tolerations.unwrap_or_default(),
            };
            ClusterObject::ResourceFlavor { name, flavor }
        }
        (KUEUE_GROUP, "AdmissionCheck") => {
            // Active is the condition Kueue's cache reads (`admissionCheck.Active`).
            let wire: WireAdmissionCheck = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            let active = wire
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.kind.as_deref() == Some("Active") && c.status.as_deref() == Some("True"));
            ClusterObject::AdmissionCheck { name, active }
        }
        (KUEUE_GROUP, _) => ClusterObject::OtherKueueObject,
        (group, kind) if is_default_managed_owner(group, kind) => {
            let wire: WireObject<IgnoredAny> = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            let namespace = wire.metadata.namespace.clone().filter(|ns| !ns.is_empty());
            let namespace =
                namespace.ok_or_else(|| DecodeError(format!("{kind} {name} without metadata.namespace")))?;
            let uid = wire.metadata.uid.clone().filter(|uid| !uid.is_empty());
            let uid = uid.ok_or_else(|| DecodeError(format!("{kind} {name} without metadata.uid")))?;
            ClusterObject::Owner {
                key: OwnerKey { api_group: group.to_string(), kind: kind.to_string(), namespace, name },
                uid,
            }
        }
        ("", "LimitRange") => {
            let wire: WireObject<WireLimitRangeSpec> = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            let namespace = wire.metadata.namespace.clone().filter(|ns| !ns.is_empty());
            let namespace =
                namespace.ok_or_else(|| DecodeError(format!("LimitRange {name} without metadata.namespace")))?;
            let mut items = Vec::new();
            for item in wire.spec.unwrap_or_default().limits.unwrap_or_default() {
                let amounts = |list: Option<BTreeMap<String, Value>>, field: &str| {
                    amounts(list).map_err(|e| DecodeError(format!("LimitRange {namespace}/{name} {field}: {e}")))
                };
                let limit = LimitItem {
                    max: amounts(item.max, "max")?,
                    min: amounts(item.min, "min")?,
                    default: amounts(item.default, "default")?,
                    default_request: amounts(item.default_request, "defaultRequest")?,
                };
                items.push((item.kind.unwrap_or_default(), limit));
            }
            ClusterObject::LimitRange { namespace, name, items }
        }
        ("node.k8s.io", "RuntimeClass") => {
            let wire: WireRuntimeClass = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            let overhead = amounts(wire.overhead.and_then(|overhead| overhead.pod_fixed))
                .map_err(|e| DecodeError(format!("RuntimeClass {name} overhead.podFixed: {e}")))?;
            ClusterObject::RuntimeClass { name, overhead }
        }
        ("scheduling.k8s.io", "PriorityClass") => {
            let wire: WireValueObject = serde_json::from_value(object).map_err(bad)?;
            let name = named(&wire.metadata)?;
            let class = PriorityClass {
                value: clamp_priority(wire.value.unwrap_or(0)),
                global_default: wire.global_default.unwrap_or(false),
            };
            ClusterObject::PriorityClass { name, class }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let wire: WireObject<Value> = serde_json::from_value(object).map_err(bad)?;
            ClusterObject::Crd { name: named(&wire.metadata)? }
        }
        _ => return Ok(None),
    };
    Ok(Some(decoded))
}

/// Kueue's Configuration, from `kueue`'s ConfigMap: the only ConfigMap read.
pub fn decode_kueue_config_map(object: Value, kueue: &KueueInstall) -> Result<ClusterObject, DecodeError> {
    let wire: WireConfigMap = serde_json::from_value(object).map_err(|e| DecodeError(format!("ConfigMap: {e}")))?;
    let (name, namespace) = (wire.metadata.name.unwrap_or_default(), wire.metadata.namespace.unwrap_or_default());
    if (namespace.as_str(), name.as_str()) != (kueue.namespace.as_str(), kueue.config_map.as_str()) {
        return Err(DecodeError(format!(
            "ConfigMap {namespace}/{name}: the only ConfigMap read is Kueue's, {}/{} (the config's kueue.namespace \
             and kueue.configMap)",
            kueue.namespace, kueue.config_map
        )));
    }
    let text = wire
        .data
        .and_then(|mut data| data.remove(CONFIG_MAP_KEY))
        .ok_or_else(|| DecodeError(format!("ConfigMap {namespace}/{name} has no data.{CONFIG_MAP_KEY}")))?;
    let config =
        KueueConfig::parse_for(&text, kueue).map_err(|e| DecodeError(format!("ConfigMap {namespace}/{name}: {e}")))?;
    Ok(ClusterObject::KueueConfiguration { config: Box::new(config) })
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

fn prune_cluster_queue(spec: WireClusterQueueSpec) -> Result<ClusterQueue, String> {
    let preemption = spec.preemption.unwrap_or_default();
    let namespace_selector = match spec.namespace_selector {
        None | Some(Value::Null) => NamespaceSelector::Absent,
        Some(value) => match LabelSelector::from_value(value) {
            Ok(selector) => NamespaceSelector::Selector(selector),
            Err(error) => NamespaceSelector::Invalid(error),
        },
    };
    let mut admission_checks = spec.admission_checks.unwrap_or_default();
    let strategy = spec.admission_checks_strategy.and_then(|s| s.admission_checks).unwrap_or_default();
    admission_checks.extend(strategy.into_iter().filter_map(|check| check.name));
    let borrow = preemption.borrow_within_cohort.unwrap_or_default();
    let fungibility = spec.flavor_fungibility.unwrap_or_default();
    Ok(ClusterQueue {
        cohort: spec.cohort_name.filter(|c| !c.is_empty()),
        namespace_selector,
        stop_policy: parse_stop_policy(spec.stop_policy.as_deref()),
        resource_groups: prune_resource_groups(spec.resource_groups)?,
        admission_checks,
        within_cluster_queue: parse_within(preemption.within_cluster_queue.as_deref()),
        reclaim_within_cohort: parse_reclaim(preemption.reclaim_within_cohort.as_deref()),
        borrow_within_cohort: BorrowWithinCohort {
            lower_priority: borrow.policy.as_deref() == Some("LowerPriority"),
            max_priority_threshold: borrow.max_priority_threshold.map(clamp_priority),
        },
        flavor_fungibility: FlavorFungibility {
            try_next_when_can_borrow: fungibility.when_can_borrow.as_deref() == Some("TryNextFlavor"),
            // "Preempt" (v1beta1) and "MayStopSearch" (v1beta2) stop; absent is TryNextFlavor.
            try_next_when_can_preempt: !matches!(
                fungibility.when_can_preempt.as_deref(),
                Some("Preempt" | "MayStopSearch")
            ),
        },
    })
}

fn prune_resource_groups(groups: Option<Vec<WireResourceGroup>>) -> Result<Vec<ResourceGroup>, String> {
    let mut pruned = Vec::new();
    for group in groups.unwrap_or_default() {
        let mut flavors = Vec::new();
        for flavor in group.flavors.unwrap_or_default() {
            let name = flavor.name.unwrap_or_default();
            let mut resources = Vec::new();
            for resource in flavor.resources.unwrap_or_default() {
                let resource_name = resource.name.unwrap_or_default();
                let amount = |field: &str, value: Option<Value>| -> Result<Option<i64>, String> {
                    match value {
                        None | Some(Value::Null) => Ok(None),
                        Some(value) => Quantity::from_json(&value)
                            .map(|q| Some(q.kueue_milli(&resource_name)))
                            .map_err(|e| format!("flavor {name}, resource {resource_name}, {field}: {e}")),
                    }
                };
                resources.push(ResourceQuota {
                    nominal: amount("nominalQuota", resource.nominal_quota)?.unwrap_or(0),
                    borrowing_limit: amount("borrowingLimit", resource.borrowing_limit)?,
                    lending_limit: amount("lendingLimit", resource.lending_limit)?,
                    name: resource_name,
                });
            }
            flavors.push(FlavorQuotas { name, resources });
        }
        pruned.push(ResourceGroup { covered_resources: group.covered_resources.unwrap_or_default(), flavors });
    }
    Ok(pruned)
}

fn parse_stop_policy(value: Option<&str>) -> StopPolicy {
    match value {
        Some("Hold") => StopPolicy::Hold,
        Some("HoldAndDrain") => StopPolicy::HoldAndDrain,
        _ => StopPolicy::None,
    }
}
