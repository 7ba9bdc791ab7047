//! Typed partial views of the workloads eval-admission reviews: batch/v1 Jobs and
//! jobset.x-k8s.io/v1alpha2 JobSets.
//!
//! Only the fields the rules read are decoded; serde skips the rest without
//! allocating, so a 40 KB JobSet costs one lexing pass and a handful of small strings.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::vocabulary::kueue::{
    DEFAULT_POD_SET_NAME, JOB_MIN_PARALLELISM_ANNOTATION, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL,
};
use crate::vocabulary::own_names::CHECKPOINTING_ANNOTATION;
use crate::vocabulary::quantity::{self, Quantity};

/// The two workload kinds this webhook shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    Job,
    JobSet,
}

impl WorkloadKind {
    /// Recognises the kinds by group and kind; versions other than the ones the
    /// webhook is registered for never reach it.
    pub fn from_group_kind(group: &str, kind: &str) -> Option<Self> {
        match (group, kind) {
            ("batch", "Job") => Some(Self::Job),
            ("jobset.x-k8s.io", "JobSet") => Some(Self::JobSet),
            _ => None,
        }
    }

    /// The name Kueue's Configuration gives this integration (integrations.frameworks).
    pub fn kueue_framework(self) -> &'static str {
        match self {
            Self::Job => "batch/job",
            Self::JobSet => "jobset.x-k8s.io/jobset",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Job => "Job",
            Self::JobSet => "JobSet",
        }
    }

    pub fn group_version(self) -> (&'static str, &'static str) {
        match self {
            Self::Job => ("batch", "v1"),
            Self::JobSet => ("jobset.x-k8s.io", "v1alpha2"),
        }
    }

    pub fn resource(self) -> &'static str {
        match self {
            Self::Job => "jobs",
            Self::JobSet => "jobsets",
        }
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string decoded from a review: up to 24 bytes are held inline, so label
/// keys and values and resource names, the bulk of the strings a review
/// decodes, cost no allocation.
pub type Text = compact_str::CompactString;

/// Label keys to values.
pub type Labels = BTreeMap<Text, Text>;

/// A Job or JobSet, pruned to what the rules read.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self")]
pub struct Workload {
    #[serde(default)]
    pub metadata: Metadata,
    /// `None` when the object has no `spec` at all (the patch must then add it whole).
    #[serde(default)]
    pub spec: Option<Spec>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(remote = "Self")]
pub struct Metadata {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub generate_name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    /// `None` when the object has no labels map (the patch must then add the map).
    #[serde(default)]
    pub labels: Option<Labels>,
    #[serde(default)]
    pub annotations: Option<SelectedAnnotations>,
    #[serde(default)]
    pub owner_references: Option<Vec<OwnerReference>>,
    #[serde(default)]
    pub deletion_timestamp: Option<IgnoredAny>,
    /// Whether the object had `metadata` at all: when not, a patch adds it whole
    /// (`false` only by `Default`, which is what an absent `metadata` decodes to).
    #[serde(skip_deserializing, default = "decoded")]
    pub present: bool,
}

fn decoded() -> bool {
    true
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(remote = "Self")]
pub struct OwnerReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub controller: Option<bool>,
}

impl OwnerReference {
    /// The API group of the owner (`batch/v1` -> `batch`, `v1` -> ``).
    pub fn api_group(&self) -> &str {
        self.api_version.rsplit_once('/').map_or("", |(group, _)| group)
    }
}

/// The annotations the rules read. Everything else, including the often large
/// `kubectl.kubernetes.io/last-applied-configuration`, is skipped unread.
#[derive(Debug, Clone, Default)]
pub struct SelectedAnnotations {
    pub checkpointing: Option<String>,
    pub job_min_parallelism: Option<String>,
}

impl<'de> Deserialize<'de> for SelectedAnnotations {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AnnotationsVisitor;
        impl<'de> Visitor<'de> for AnnotationsVisitor {
            type Value = SelectedAnnotations;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of annotations")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut selected = SelectedAnnotations::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    if key == CHECKPOINTING_ANNOTATION {
                        selected.checkpointing = map.next_value()?;
                    } else if key == JOB_MIN_PARALLELISM_ANNOTATION {
                        selected.job_min_parallelism = map.next_value()?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(selected)
            }
        }
        deserializer.deserialize_map(AnnotationsVisitor)
    }
}

/// `spec` of a Job (`template`) or of a JobSet (`replicatedJobs`).
///
/// The counts and resources read for [`Workload::pod_sets`] are kept as raw JSON
/// (or [`Tolerant`]) so that a wrongly typed field in a JobSet, which the API
/// server only rejects after mutating admission, does not fail the whole decode:
/// `pod_sets` reports it instead.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(remote = "Self")]
pub struct Spec {
    #[serde(default)]
    pub suspend: Option<bool>,
    #[serde(default)]
    pub template: Option<PodTemplate>,
    #[serde(default)]
    pub replicated_jobs: Option<Vec<ReplicatedJob>>,
    /// Job `spec.parallelism`.
    #[serde(default)]
    pub parallelism: Option<Value>,
    /// Job `spec.completions`.
    #[serde(default)]
    pub completions: Option<Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self")]
pub struct PodTemplate {
    #[serde(default)]
    pub spec: Option<PodSpec>,
}

impl PodTemplate {
    fn priority_class_name(&self) -> Option<&str> {
        self.spec.as_ref()?.priority_class_name.as_deref().filter(|name| !name.is_empty())
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(remote = "Self")]
pub struct PodSpec {
    #[serde(default)]
    pub priority_class_name: Option<String>,
    #[serde(default)]
    pub containers: Option<TolerantList<Container>>,
    #[serde(default)]
    pub init_containers: Option<TolerantList<Container>>,
    #[serde(default)]
    pub overhead: Option<ResourceList>,
    /// Pod-level resources (KEP-2837).
    #[serde(default)]
    pub resources: Option<Tolerant<ResourceRequirements>>,
}

/// A container or init container, pruned to what Kueue's request totals read.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(remote = "Self")]
pub struct Container {
    #[serde(default)]
    pub resources: Option<Tolerant<ResourceRequirements>>,
    /// `Always` on an init container makes it a sidecar.
    #[serde(default)]
    pub restart_policy: Option<Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self")]
pub struct ResourceRequirements {
    #[serde(default)]
    pub requests: Option<ResourceList>,
    #[serde(default)]
    pub limits: Option<ResourceList>,
}

/// A `ResourceList` (resource name to quantity), quantities still raw JSON.
pub type ResourceList = Tolerant<BTreeMap<Text, Value>>;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self")]
pub struct ReplicatedJob {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub template: Option<JobTemplate>,
    /// JobSet `replicas` (CRD default 1).
    #[serde(default)]
    pub replicas: Option<Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self")]
pub struct JobTemplate {
    #[serde(default)]
    pub spec: Option<JobTemplateSpec>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(remote = "Self")]
pub struct JobTemplateSpec {
    #[serde(default)]
    pub template: Option<PodTemplate>,
    #[serde(default)]
    pub parallelism: Option<Value>,
    #[serde(default)]
    pub completions: Option<Value>,
}

/// Gives each type a `Deserialize` that takes only a JSON object. serde's
/// derived struct decoders also take an array, read field by field in order,
/// which the API server never sends where an object belongs (`"spec": []`),
/// and a patch written against it would not apply. Each type derives its
/// decoder as an inherent `deserialize` (`#[serde(remote = "Self")]`), and
/// this impl hands it only a map; anything else fails the decode (400).
macro_rules! decoded_from_objects_only {
    ($($type:ty),* $(,)?) => {$(
        impl<'de> serde::Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct ObjectVisitor;
                impl<'de> serde::de::Visitor<'de> for ObjectVisitor {
                    type Value = $type;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a JSON object")
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<$type, A::Error> {
                        <$type>::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    }
                }
                deserializer.deserialize_map(ObjectVisitor)
            }
        }
    )*};
}
pub(crate) use decoded_from_objects_only;

decoded_from_objects_only!(
    Workload,
    Metadata,
    OwnerReference,
    Spec,
    PodTemplate,
    PodSpec,
    Container,
    ResourceRequirements,
    ReplicatedJob,
    JobTemplate,
    JobTemplateSpec,
);

/// A JSON object decoded as `T`, or what was found instead of an object.
/// Decoding never fails on the wrong JSON type (only on `T`'s own fields, which
/// are themselves tolerant here).
#[derive(Debug, Clone, PartialEq)]
pub enum Tolerant<T> {
    Value(T),
    /// What the field held instead of an object: "a string", "an array", ...
    Malformed(&'static str),
}

/// A JSON array of objects decoded as `T`, or what was found instead of an array.
#[derive(Debug, Clone, PartialEq)]
pub enum TolerantList<T> {
    Items(Vec<Tolerant<T>>),
    Malformed(&'static str),
}

/// `visit_*` for every JSON scalar, each answering `Malformed(<its kind>)`.
macro_rules! malformed_scalars {
    ($malformed:path) => {
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($malformed("a boolean"))
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($malformed("a number"))
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($malformed("a number"))
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($malformed("a number"))
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($malformed("a string"))
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($malformed("null"))
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok($malformed("null"))
        }
    };
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Tolerant<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = Tolerant<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value (an object is expected)")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Tolerant::Value)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Tolerant::Malformed("an array"))
            }
            fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
                Tolerant::deserialize(deserializer)
            }
            malformed_scalars!(Tolerant::Malformed);
        }
        deserializer.deserialize_any(ObjectVisitor(std::marker::PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for TolerantList<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
            type Value = TolerantList<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value (an array is expected)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
                while let Some(item) = seq.next_element::<Tolerant<T>>()? {
                    items.push(item);
                }
                Ok(TolerantList::Items(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(TolerantList::Malformed("an object"))
            }
            fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
                TolerantList::deserialize(deserializer)
            }
            malformed_scalars!(TolerantList::Malformed);
        }
        deserializer.deserialize_any(ListVisitor(std::marker::PhantomData))
    }
}

/// One podset of the Kueue Workload for a Job or JobSet, with what Kueue counts
/// against quota for it (Kueue v0.19.2 `pkg/workload` `totalRequestsFromPodSets`).
///
/// Values are milli-units in `i64`, saturating at `i64::MAX`. Kueue keeps `cpu` in
/// milli-units and every other resource in whole units rounded up per pod
/// (`pkg/resources` `ResourceValue`), so non-cpu values here are always multiples
/// of 1000: compare them with quotas converted the same way
/// ([`Quantity::kueue_milli`]). Resources requested as `0` are present with `0`,
/// as in Kueue's map. Not included, because they need cluster objects or Kueue's
/// configuration: RuntimeClass overhead (`handlePodOverhead`, used only when the
/// template has no `overhead`), LimitRange defaults (`handlePodLimitRange`),
/// `excludeResourcePrefixes` and resource transformations, and the `pods` resource
/// the flavor assigner adds (= `count`) when a ClusterQueue covers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSetRequests {
    /// Kueue's podset name: `main` for a Job, the (lower-cased) replicatedJob name for a JobSet.
    pub name: String,
    /// Pods in the podset (`PodSet.Count`).
    pub count: i64,
    /// A Job's `kueue.x-k8s.io/job-min-parallelism` as Kueue reads it (`minPodsCount`:
    /// `strconv.Atoi`, then `int32`): with partial admission (on by default) Kueue may
    /// admit between this and `count` pods. Kueue's Job webhook refuses values
    /// outside `1..count`. Always `None` for a JobSet.
    pub min_count: Option<i64>,
    /// Per pod, milli-units.
    pub per_pod: BTreeMap<Text, i64>,
    /// `per_pod` times `count` (in Kueue's units, saturating), milli-units.
    pub total: BTreeMap<Text, i64>,
}

/// Exact per-pod requests before Kueue's integer conversion.
type ExactRequests = BTreeMap<Text, Quantity>;

impl PodSetRequests {
    fn new(name: String, count: i64, min_count: Option<i64>, requests: &ExactRequests) -> Self {
        let mut per_pod = BTreeMap::new();
        let mut total = BTreeMap::new();
        for (resource, quantity) in requests {
            // ResourceValue, then FloorToZero, then Mul(count) (saturating), per resource.
            let value = quantity.kueue_value(resource).max(0);
            let scaled = value.saturating_mul(count);
            per_pod.insert(resource.clone(), quantity::units_to_milli(resource, value));
            total.insert(resource.clone(), quantity::units_to_milli(resource, scaled));
        }
        Self { name, count, min_count, per_pod, total }
    }
}

/// The field `.1` of the object at path `.0`, written out only when an error
/// message needs it: a well-formed workload costs no formatting.
struct Field<'a>(&'a dyn fmt::Display, &'a str);

impl fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// Item `.1` of the list at path `.0`.
struct Item<'a>(&'a dyn fmt::Display, usize);

impl fmt::Display for Item<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.0, self.1)
    }
}

/// A count field (`parallelism`, `completions`, `replicas`): `None` when absent or
/// null; an error unless a non-negative `int32`, as the API server requires.
fn read_count(value: Option<&Value>, path: &dyn fmt::Display) -> Result<Option<i64>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_i64() {
            Some(count) if (0..=i64::from(i32::MAX)).contains(&count) => Ok(Some(count)),
            _ => Err(format!("{path}: {value} is not a valid count (a non-negative 32-bit integer)")),
        },
    }
}

/// Pods of one Job: `parallelism` (API default 1), capped by `completions` when set
/// (Kueue v0.19.2 `job_controller.go` `podsCount`, `jobset_controller.go`
/// `PodsCountPerReplica`; batch/v1 `SetDefaults_Job` defaults `parallelism` to 1).
fn job_pods_count(
    parallelism: Option<&Value>,
    completions: Option<&Value>,
    path: &dyn fmt::Display,
) -> Result<i64, String> {
    let parallelism = read_count(parallelism, &Field(path, "parallelism"))?.unwrap_or(1);
    let completions = read_count(completions, &Field(path, "completions"))?;
    Ok(completions.map_or(parallelism, |completions| completions.min(parallelism)))
}

/// Decodes a `ResourceList`; quantities must be valid and non-negative (API validation).
fn resource_list(list: Option<&ResourceList>, path: &dyn fmt::Display) -> Result<ExactRequests, String> {
    let entries = match list {
        None => return Ok(ExactRequests::new()),
        Some(Tolerant::Malformed(found)) => return Err(format!("{path}: expected a map of quantities, found {found}")),
        Some(Tolerant::Value(entries)) => entries,
    };
    let mut parsed = ExactRequests::new();
    for (resource, raw) in entries {
        let quantity = Quantity::from_json(raw).map_err(|e| format!("{path}[{resource}]: {e}"))?;
        if quantity.is_negative() {
            return Err(format!("{path}[{resource}]: {raw} is negative; quantities must be >= 0"));
        }
        parsed.insert(resource.clone(), quantity);
    }
    Ok(parsed)
}

/// Requests, with limits standing in for missing requests (Kueue v0.19.2
/// `pkg/workload/resources.go` `UseLimitsAsMissingRequestsInPod`, via
/// `MergeResourceListKeepFirst`: a request, even `0`, wins over the limit).
fn effective_requests(
    resources: Option<&Tolerant<ResourceRequirements>>,
    path: &dyn fmt::Display,
) -> Result<ExactRequests, String> {
    let resources = match resources {
        None => return Ok(ExactRequests::new()),
        Some(Tolerant::Malformed(found)) => return Err(format!("{path}: expected an object, found {found}")),
        Some(Tolerant::Value(resources)) => resources,
    };
    let mut requests = resource_list(resources.requests.as_ref(), &Field(path, "requests"))?;
    for (resource, limit) in resource_list(resources.limits.as_ref(), &Field(path, "limits"))? {
        requests.entry(resource).or_insert(limit);
    }
    Ok(requests)
}

fn add_into(sum: &mut ExactRequests, other: &ExactRequests) {
    for (resource, quantity) in other {
        let entry = sum.entry(resource.clone()).or_default();
        *entry = entry.saturating_add(*quantity);
    }
}

fn max_into(max: &mut ExactRequests, other: &ExactRequests) {
    for (resource, quantity) in other {
        match max.get_mut(resource) {
            Some(current) if *current >= *quantity => {}
            Some(current) => *current = *quantity,
            None => {
                max.insert(resource.clone(), *quantity);
            }
        }
    }
}

fn containers<'a>(
    list: Option<&'a TolerantList<Container>>,
    path: &dyn fmt::Display,
) -> Result<Vec<&'a Container>, String> {
    match list {
        None => Ok(Vec::new()),
        Some(TolerantList::Malformed(found)) => Err(format!("{path}: expected an array, found {found}")),
        Some(TolerantList::Items(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Tolerant::Value(container) => Ok(container),
                Tolerant::Malformed(found) => Err(format!("{path}[{index}]: expected an object, found {found}")),
            })
            .collect(),
    }
}

/// The requests of one pod, exact (before Kueue's integer conversion), following
/// `k8s.io/component-helpers/resource` v0.36.2 `PodRequests` with the default
/// options Kueue v0.19.2 passes (`pkg/workload` `totalRequestsFromPodSets`), after
/// Kueue's `UseLimitsAsMissingRequestsInPod`:
/// - containers are summed;
/// - each init container needs itself plus the sidecars (init containers with
///   `restartPolicy: Always`) started before it; sidecars also run alongside the
///   containers, so they are added to the sum (`AggregateContainerRequests`);
/// - the pod needs the larger of that sum and the largest init container need;
/// - pod-level `resources.requests` for cpu, memory and hugepages-* replace the
///   aggregate when any of them is set (`IsPodLevelRequestsSet`);
/// - `overhead` is added.
fn pod_requests(spec: Option<&PodSpec>, path: &dyn fmt::Display) -> Result<ExactRequests, String> {
    let mut requests = ExactRequests::new();
    let Some(spec) = spec else {
        return Ok(requests);
    };
    let containers_path = Field(path, "containers");
    for (index, container) in containers(spec.containers.as_ref(), &containers_path)?.into_iter().enumerate() {
        let own =
            effective_requests(container.resources.as_ref(), &Field(&Item(&containers_path, index), "resources"))?;
        add_into(&mut requests, &own);
    }

    let init_path = Field(path, "initContainers");
    let mut sidecars = ExactRequests::new();
    let mut init_max = ExactRequests::new();
    for (index, container) in containers(spec.init_containers.as_ref(), &init_path)?.into_iter().enumerate() {
        let own = effective_requests(container.resources.as_ref(), &Field(&Item(&init_path, index), "resources"))?;
        let is_sidecar = match &container.restart_policy {
            None | Some(Value::Null) => false,
            Some(Value::String(policy)) => policy == "Always",
            Some(other) => {
                return Err(format!(
                    "{}: expected a string, found {other}",
                    Field(&Item(&init_path, index), "restartPolicy")
                ));
            }
        };
        if is_sidecar {
            add_into(&mut requests, &own);
            add_into(&mut sidecars, &own);
            max_into(&mut init_max, &sidecars);
        } else {
            let mut need = own;
            add_into(&mut need, &sidecars);
            max_into(&mut init_max, &need);
        }
    }
    max_into(&mut requests, &init_max);

    let pod_level = effective_requests(spec.resources.as_ref(), &Field(path, "resources"))?;
    let supported = |resource: &str| matches!(resource, "cpu" | "memory") || resource.starts_with("hugepages-");
    if pod_level.keys().any(|resource| supported(resource)) {
        for (resource, quantity) in pod_level {
            if supported(&resource) {
                requests.insert(resource, quantity);
            }
        }
    }

    add_into(&mut requests, &resource_list(spec.overhead.as_ref(), &Field(path, "overhead"))?);
    Ok(requests)
}

/// Where a pod template's `priorityClassName` was found, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodPriorityClass<'a> {
    /// `spec.template` for a Job, `replicatedJobs[workers]` for a JobSet.
    pub location: String,
    pub at: PodTemplateAt,
    pub class_name: &'a str,
}

/// A pod template's place in the object, for a patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodTemplateAt {
    /// A Job's `spec.template`.
    Job,
    /// `spec.replicatedJobs[i].template.spec.template` of a JobSet.
    ReplicatedJob(usize),
}

impl PodTemplateAt {
    /// The JSON pointer tokens of the template's `priorityClassName`.
    pub fn priority_class_name_pointer(self) -> Vec<String> {
        let tail = ["spec", "priorityClassName"].map(String::from);
        match self {
            Self::Job => ["spec", "template"].map(String::from).into_iter().chain(tail).collect(),
            Self::ReplicatedJob(index) => ["spec".into(), "replicatedJobs".into(), index.to_string()]
                .into_iter()
                .chain(["template", "spec", "template"].map(String::from))
                .chain(tail)
                .collect(),
        }
    }
}

impl Workload {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.metadata.labels.as_ref()?.get(key).map(Text::as_str)
    }

    pub fn has_labels_map(&self) -> bool {
        self.metadata.labels.is_some()
    }

    pub fn queue_name(&self) -> Option<&str> {
        self.label(QUEUE_NAME_LABEL).filter(|name| !name.is_empty())
    }

    pub fn priority_class_label(&self) -> Option<&str> {
        self.label(PRIORITY_CLASS_LABEL).filter(|name| !name.is_empty())
    }

    /// `spec.suspend` is exactly `true`.
    pub fn is_suspended(&self) -> bool {
        self.spec.as_ref().and_then(|spec| spec.suspend) == Some(true)
    }

    pub fn has_spec(&self) -> bool {
        self.spec.is_some()
    }

    pub fn is_checkpointing(&self) -> bool {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.checkpointing.as_deref())
            .is_some_and(|value| value.eq_ignore_ascii_case("true"))
    }

    pub fn is_being_deleted(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// The ownerReference with `controller: true`, if any.
    pub fn controller_owner(&self) -> Option<&OwnerReference> {
        self.metadata.owner_references.as_deref()?.iter().find(|owner| owner.controller == Some(true))
    }

    /// Pod template `priorityClassName`s in the order Kueue reads them
    /// (a JobSet's replicatedJobs in order).
    pub fn pod_priority_classes(&self) -> Vec<PodPriorityClass<'_>> {
        let Some(spec) = &self.spec else {
            return Vec::new();
        };
        let mut found = Vec::new();
        if let Some(class_name) = spec.template.as_ref().and_then(PodTemplate::priority_class_name) {
            found.push(PodPriorityClass { location: "spec.template".into(), at: PodTemplateAt::Job, class_name });
        }
        for (index, replicated) in spec.replicated_jobs.iter().flatten().enumerate() {
            let pod_template = replicated
                .template
                .as_ref()
                .and_then(|job| job.spec.as_ref())
                .and_then(|job_spec| job_spec.template.as_ref());
            if let Some(class_name) = pod_template.and_then(PodTemplate::priority_class_name) {
                let location = match &replicated.name {
                    Some(name) => format!("replicatedJobs[{name}]"),
                    None => format!("replicatedJobs[{index}]"),
                };
                found.push(PodPriorityClass { location, at: PodTemplateAt::ReplicatedJob(index), class_name });
            }
        }
        found
    }

    /// Whether the pod template at `at` names a PriorityClass.
    pub fn has_pod_priority_class_at(&self, at: PodTemplateAt) -> bool {
        self.pod_priority_classes().iter().any(|pod| pod.at == at)
    }

    /// The podsets of the Workload Kueue v0.19.2 creates for this Job or JobSet, with
    /// their counts and the requests Kueue counts against quota (see
    /// [`PodSetRequests`]). Follows `pkg/controller/jobs/job/job_controller.go`
    /// `(*Job).PodSets` (one podset `main`, `podsCount`, `minPodsCount`) and
    /// `pkg/controller/jobs/jobset/jobset_controller.go` `(*JobSet).PodSets` (one
    /// podset per replicatedJob, `replicas` (CRD default 1) times
    /// `PodsCountPerReplica`), and `pkg/workload` `totalRequestsFromPodSets`.
    ///
    /// Absent fields take their API defaults; a wrongly typed or invalid field (a
    /// malformed or negative quantity, a negative count, a replicatedJob without a
    /// name), which the API server would refuse, is an error naming the field.
    pub fn pod_sets(&self, kind: WorkloadKind) -> Result<Vec<PodSetRequests>, String> {
        let spec = self.spec.as_ref();
        match kind {
            WorkloadKind::Job => {
                let count = job_pods_count(
                    spec.and_then(|spec| spec.parallelism.as_ref()),
                    spec.and_then(|spec| spec.completions.as_ref()),
                    &"spec",
                )?;
                let pod_spec = spec.and_then(|spec| spec.template.as_ref()).and_then(|template| template.spec.as_ref());
                let requests = pod_requests(pod_spec, &"spec.template.spec")?;
                // minPodsCount: strconv.Atoi, then int32(..).
                let min_count = self
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|annotations| annotations.job_min_parallelism.as_deref())
                    .and_then(|value| value.parse::<i64>().ok())
                    .map(|value| i64::from(value as i32));
                Ok(vec![PodSetRequests::new(DEFAULT_POD_SET_NAME.to_owned(), count, min_count, &requests)])
            }
            WorkloadKind::JobSet => {
                let mut pod_sets = Vec::new();
                for (index, replicated) in
                    spec.and_then(|spec| spec.replicated_jobs.as_deref()).unwrap_or_default().iter().enumerate()
                {
                    let path = Item(&"spec.replicatedJobs", index);
                    let name = replicated
                        .name
                        .as_deref()
                        .filter(|name| !name.is_empty())
                        .ok_or_else(|| format!("{}: required", Field(&path, "name")))?;
                    let replicas = read_count(replicated.replicas.as_ref(), &Field(&path, "replicas"))?.unwrap_or(1);
                    let job_spec = replicated.template.as_ref().and_then(|job| job.spec.as_ref());
                    let per_job = job_pods_count(
                        job_spec.and_then(|job_spec| job_spec.parallelism.as_ref()),
                        job_spec.and_then(|job_spec| job_spec.completions.as_ref()),
                        &Field(&path, "template.spec"),
                    )?;
                    let pod_spec = job_spec
                        .and_then(|job_spec| job_spec.template.as_ref())
                        .and_then(|template| template.spec.as_ref());
                    let requests = pod_requests(pod_spec, &Field(&path, "template.spec.template.spec"))?;
                    // kueue.NewPodSetReference lower-cases the name.
                    pod_sets.push(PodSetRequests::new(name.to_lowercase(), replicas * per_job, None, &requests));
                }
                Ok(pod_sets)
            }
        }
    }

    /// The workload with label `key` set to `value`, or removed with `None`: a
    /// way out is checked on the workload as it would be after the change.
    pub fn with_label(&self, key: &str, value: Option<&str>) -> Self {
        let mut changed = self.clone();
        let labels = changed.metadata.labels.get_or_insert_with(BTreeMap::new);
        match value {
            Some(value) => labels.insert(key.into(), value.into()),
            None => labels.remove(key),
        };
        changed
    }

    /// The workload with the pod template `priorityClassName` at `location` (as
    /// [`Self::pod_priority_classes`] names it) set to `class`, or cleared with `None`.
    pub fn with_pod_priority_class(&self, location: &str, class: Option<&str>) -> Self {
        let mut changed = self.clone();
        let Some(spec) = changed.spec.as_mut() else { return changed };
        let mut templates: Vec<(String, &mut PodTemplate)> = Vec::new();
        if let Some(template) = spec.template.as_mut() {
            templates.push(("spec.template".into(), template));
        }
        for (index, replicated) in spec.replicated_jobs.iter_mut().flatten().enumerate() {
            let at = match &replicated.name {
                Some(name) => format!("replicatedJobs[{name}]"),
                None => format!("replicatedJobs[{index}]"),
            };
            let template =
                replicated.template.as_mut().and_then(|job| job.spec.as_mut()).and_then(|s| s.template.as_mut());
            if let Some(template) = template {
                templates.push((at, template));
            }
        }
        for (at, template) in templates {
            if at == location {
                template.spec.get_or_insert_with(PodSpec::default).priority_class_name = class.map(str::to_string);
            }
        }
        changed
    }

    /// `namespace/name` for messages; a generated name shows its prefix.
    pub fn display_name(&self, namespace: &str) -> String {
        match (&self.metadata.name, &self.metadata.generate_name) {
            (Some(name), _) if !name.is_empty() => format!("{namespace}/{name}"),
            (_, Some(prefix)) if !prefix.is_empty() => format!("{namespace}/{prefix}<generated>"),
            _ => format!("{namespace}/<unnamed>"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GI: i64 = 1 << 30;
    const MI: i64 = 1 << 20;

    fn workload(value: Value) -> Workload {
        serde_json::from_value(value).expect("workload decodes")
    }

    fn job(spec: Value) -> Workload {
        workload(json!({"metadata": {"name": "j", "labels": {QUEUE_NAME_LABEL: "q"}}, "spec": spec}))
    }

    fn job_with_pod(pod_spec: Value) -> Workload {
        job(json!({"template": {"spec": pod_spec}}))
    }

    fn only_pod_set(workload: &Workload) -> PodSetRequests {
        let mut pod_sets = workload.pod_sets(WorkloadKind::Job).expect("pod sets");
        assert_eq!(pod_sets.len(), 1);
        pod_sets.remove(0)
    }

    fn milli(pairs: &[(&str, i64)]) -> BTreeMap<Text, i64> {
        pairs.iter().map(|(resource, value)| (Text::from(*resource), *value)).collect()
    }

    #[test]
    fn job_with_parallelism_and_a_limits_only_container() {
        let job = job(json!({
            "parallelism": 2,
            "template": {"spec": {"containers": [
                {"name": "eval", "resources": {"limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}}},
                {"name": "log", "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m", "memory": "64Mi"}}}
            ]}}
        }));
        let pod_set = only_pod_set(&job);
        assert_eq!(pod_set.name, "main");
        assert_eq!(pod_set.count, 2);
        assert_eq!(pod_set.min_count, None);
        assert_eq!(
            pod_set.per_pod,
            milli(&[("cpu", 2100), ("memory", (4 * GI + 64 * MI) * 1000), ("nvidia.com/gpu", 1000)])
        );
        assert_eq!(
            pod_set.total,
            milli(&[("cpu", 4200), ("memory", (8 * GI + 128 * MI) * 1000), ("nvidia.com/gpu", 2000)])
        );
        // The existing API still reads the same object.
        assert_eq!(job.queue_name(), Some("q"));
    }

    #[test]
    fn job_counts_follow_defaults_and_completions() {
        let count = |spec: Value| only_pod_set(&job(spec)).count;
        assert_eq!(count(json!({})), 1);
        assert_eq!(count(json!({"parallelism": 4})), 4);
        assert_eq!(count(json!({"parallelism": 4, "completions": 3})), 3);
        assert_eq!(count(json!({"parallelism": 4, "completions": 10})), 4);
        assert_eq!(count(json!({"completions": 5})), 1);
        assert_eq!(count(json!({"parallelism": 0})), 0);
        assert_eq!(count(json!({"parallelism": null})), 1);
        // No spec at all: the API defaults give one pod with no requests.
        let bare = workload(json!({"metadata": {"name": "j"}}));
        let pod_set = only_pod_set(&bare);
        assert_eq!((pod_set.count, pod_set.per_pod.len()), (1, 0));
        assert_eq!(workload(json!({})).pod_sets(WorkloadKind::JobSet), Ok(vec![]));
    }

    #[test]
    fn job_min_parallelism_annotation() {
        let job = workload(json!({
            "metadata": {"annotations": {JOB_MIN_PARALLELISM_ANNOTATION: "2"}},
            "spec": {"parallelism": 5}
        }));
        assert_eq!(only_pod_set(&job).min_count, Some(2));
        let unparsable = workload(json!({"metadata": {"annotations": {JOB_MIN_PARALLELISM_ANNOTATION: "two"}}}));
        assert_eq!(only_pod_set(&unparsable).min_count, None);
    }

    #[test]
    fn jobset_with_replicas_and_parallelism() {
        let jobset = workload(json!({
            "metadata": {"name": "aiperf-x"},
            "spec": {"replicatedJobs": [
                {"name": "controller", "template": {"spec": {"template": {"spec": {"containers": [
                    {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
                ]}}}}},
                {"name": "Workers", "replicas": 2, "template": {"spec": {
                    "parallelism": 3, "completions": 5,
                    "template": {"spec": {"containers": [
                        {"resources": {"requests": {"cpu": "4"}, "limits": {"nvidia.com/gpu": "1"}}}
                    ]}}
                }}}
            ]}
        }));
        let pod_sets = jobset.pod_sets(WorkloadKind::JobSet).unwrap();
        assert_eq!(pod_sets.len(), 2);
        assert_eq!((pod_sets[0].name.as_str(), pod_sets[0].count), ("controller", 1));
        assert_eq!(pod_sets[0].total, milli(&[("cpu", 500), ("memory", GI * 1000)]));
        assert_eq!((pod_sets[1].name.as_str(), pod_sets[1].count), ("workers", 6));
        assert_eq!(pod_sets[1].per_pod, milli(&[("cpu", 4000), ("nvidia.com/gpu", 1000)]));
        assert_eq!(pod_sets[1].total, milli(&[("cpu", 24_000), ("nvidia.com/gpu", 6000)]));
        // Completions below parallelism cap the pods per Job; replicas 0 means none.
        let capped = workload(json!({"spec": {"replicatedJobs": [
            {"name": "a", "replicas": 3, "template": {"spec": {"parallelism": 4, "completions": 2}}},
            {"name": "b", "replicas": 0, "template": {"spec": {"parallelism": 4}}}
        ]}}));
        let counts: Vec<i64> = capped.pod_sets(WorkloadKind::JobSet).unwrap().iter().map(|p| p.count).collect();
        assert_eq!(counts, [6, 0]);
    }

    #[test]
    fn init_containers_larger_than_containers() {
        let pod_set = only_pod_set(&job_with_pod(json!({
            "initContainers": [
                {"resources": {"requests": {"cpu": "4", "memory": "1Gi"}}},
                {"resources": {"limits": {"cpu": "3", "example.com/dongle": "2"}}}
            ],
            "containers": [
                {"resources": {"requests": {"cpu": "1", "memory": "2Gi"}}},
                {"resources": {"requests": {"cpu": "500m"}}}
            ]
        })));
        // cpu: max(1.5, 4, 3); memory: max(2Gi, 1Gi); the init-only resource still counts.
        assert_eq!(pod_set.per_pod, milli(&[("cpu", 4000), ("example.com/dongle", 2000), ("memory", 2 * GI * 1000)]));
    }

    #[test]
    fn sidecars_run_alongside_and_before_later_init_containers() {
        let pod_set = only_pod_set(&job_with_pod(json!({
            "initContainers": [
                {"name": "setup", "resources": {"requests": {"cpu": "1200m"}}},
                {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}},
                {"name": "warmup", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}
            ],
            "containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]
        })));
        // containers + sidecar = 1.5 cpu, 1.25Gi; warmup needs 2 + 0.5 cpu, 1Gi + 256Mi; setup 1.2.
        assert_eq!(pod_set.per_pod, milli(&[("cpu", 2500), ("memory", (GI + 256 * MI) * 1000)]));

        // A sidecar larger than the init containers after it sets the sum.
        let pod_set = only_pod_set(&job_with_pod(json!({
            "initContainers": [
                {"restartPolicy": "Always", "resources": {"limits": {"cpu": "3"}}},
                {"resources": {"requests": {"cpu": "1"}}},
                {"restartPolicy": "OnFailure", "resources": {"requests": {"cpu": "1"}}}
            ],
            "containers": [{"resources": {"requests": {"cpu": "2"}}}]
        })));
        assert_eq!(pod_set.per_pod, milli(&[("cpu", 5000)]));
    }

    #[test]
    fn pod_level_resources_and_overhead() {
        let pod_set = only_pod_set(&job_with_pod(json!({
            "resources": {"requests": {"cpu": "3"}, "limits": {"memory": "8Gi"}},
            "overhead": {"cpu": "250m", "memory": "128Mi"},
            "containers": [
                {"resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}}}
            ]
        })));
        // Pod-level cpu and memory (limit standing in for the request) replace the
        // containers' sum; the gpu stays per container; overhead is added on top.
        assert_eq!(
            pod_set.per_pod,
            milli(&[("cpu", 3250), ("memory", (8 * GI + 128 * MI) * 1000), ("nvidia.com/gpu", 2000)])
        );
        // Pod-level resources naming only unsupported resources are ignored.
        let pod_set = only_pod_set(&job_with_pod(json!({
            "resources": {"requests": {"nvidia.com/gpu": "8"}},
            "containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}]
        })));
        assert_eq!(pod_set.per_pod, milli(&[("nvidia.com/gpu", 1000)]));
    }

    #[test]
    fn rounding_happens_once_per_pod_as_in_kueue() {
        let pod_set = only_pod_set(&job(json!({"parallelism": 3, "template": {"spec": {"containers": [
            {"resources": {"requests": {"cpu": "0.1m", "memory": "0.5", "nvidia.com/gpu": "1.5", "example.com/zero": "0"}}},
            {"resources": {"requests": {"cpu": "0.1m", "memory": "0.5"}}}
        ]}}})));
        // cpu 0.2m -> 1m; memory 1 byte (exact sum, then rounded); gpu 1.5 -> 2 per pod.
        assert_eq!(
            pod_set.per_pod,
            milli(&[("cpu", 1), ("example.com/zero", 0), ("memory", 1000), ("nvidia.com/gpu", 2000)])
        );
        assert_eq!(
            pod_set.total,
            milli(&[("cpu", 3), ("example.com/zero", 0), ("memory", 3000), ("nvidia.com/gpu", 6000)])
        );
        // Requests win over limits even when zero.
        let pod_set = only_pod_set(&job_with_pod(json!({"containers": [
            {"resources": {"requests": {"cpu": 0}, "limits": {"cpu": 2}}}
        ]})));
        assert_eq!(pod_set.per_pod, milli(&[("cpu", 0)]));
    }

    #[test]
    fn streaming_decode_matches() {
        // The webhook decodes bytes, not a serde_json::Value: same result, wrong types included.
        let text = r#"{"spec": {"parallelism": 2, "template": {"spec": {"containers": [
            {"name": "a", "image": "x", "env": [{"name": "K", "value": "V"}],
             "resources": {"limits": {"cpu": 1.5, "memory": "1Gi"}, "claims": [{"name": "c"}]}},
            {"name": "b", "resources": "none"}
        ]}}}}"#;
        let decoded: Workload = serde_json::from_str(text).expect("decodes");
        assert!(
            decoded.pod_sets(WorkloadKind::Job).unwrap_err().starts_with("spec.template.spec.containers[1].resources:")
        );
        let fine = text.replace(r#"{"name": "b", "resources": "none"}"#, r#"{"name": "b"}"#);
        let decoded: Workload = serde_json::from_str(&fine).expect("decodes");
        assert_eq!(only_pod_set(&decoded).total, milli(&[("cpu", 3000), ("memory", 2 * GI * 1000)]));
    }

    #[test]
    fn malformed_fields_are_reported_not_fatal() {
        let error = |workload: Workload, kind| workload.pod_sets(kind).unwrap_err();
        let bad_quantity = job_with_pod(json!({"containers": [
            {"resources": {"requests": {"cpu": "1"}}},
            {"resources": {"requests": {"cpu": "2 cores"}}}
        ]}));
        let message = error(bad_quantity, WorkloadKind::Job);
        assert!(
            message.starts_with("spec.template.spec.containers[1].resources.requests[cpu]: \"2 cores\""),
            "{message}"
        );

        let negative = job_with_pod(json!({"containers": [{"resources": {"limits": {"memory": "-1Gi"}}}]}));
        assert!(error(negative, WorkloadKind::Job).contains("containers[0].resources.limits[memory]"));

        // Wrong JSON types decode (the rest of the object is still usable) and are reported.
        let wrong_types = job(json!({"parallelism": "2", "template": {"spec": {"containers": "none"}}}));
        assert_eq!(wrong_types.queue_name(), Some("q"));
        assert!(error(wrong_types, WorkloadKind::Job).starts_with("spec.parallelism: \"2\""));
        let wrong_list = job_with_pod(json!({"containers": "none", "priorityClassName": "high"}));
        assert_eq!(wrong_list.pod_priority_classes()[0].class_name, "high");
        assert_eq!(
            error(wrong_list, WorkloadKind::Job),
            "spec.template.spec.containers: expected an array, found a string"
        );
        let wrong_item = job_with_pod(json!({"initContainers": [7]}));
        assert_eq!(
            error(wrong_item, WorkloadKind::Job),
            "spec.template.spec.initContainers[0]: expected an object, found a number"
        );
        let wrong_map = job_with_pod(json!({"containers": [{"resources": {"requests": ["cpu"]}}]}));
        assert!(
            error(wrong_map, WorkloadKind::Job).ends_with("requests: expected a map of quantities, found an array")
        );
        let wrong_policy = job_with_pod(json!({"initContainers": [{"restartPolicy": true}]}));
        assert!(error(wrong_policy, WorkloadKind::Job).contains("initContainers[0].restartPolicy"));
        let bad_object = job_with_pod(json!({"containers": [{"resources": {"requests": {"cpu": {"value": 1}}}}]}));
        assert!(error(bad_object, WorkloadKind::Job).contains("not an object"));

        let jobset = |replicated: Value| workload(json!({"spec": {"replicatedJobs": [replicated]}}));
        assert_eq!(
            error(jobset(json!({"name": "w", "replicas": -1})), WorkloadKind::JobSet),
            "spec.replicatedJobs[0].replicas: -1 is not a valid count (a non-negative 32-bit integer)"
        );
        assert_eq!(
            error(jobset(json!({"replicas": 1})), WorkloadKind::JobSet),
            "spec.replicatedJobs[0].name: required"
        );
        assert!(
            error(jobset(json!({"name": "w", "template": {"spec": {"completions": 1.5}}})), WorkloadKind::JobSet)
                .starts_with("spec.replicatedJobs[0].template.spec.completions: 1.5")
        );
    }

    #[test]
    fn a_pod_priority_class_is_changed_where_it_was_found() {
        let jobset = workload(json!({"spec": {"replicatedJobs": [
            {"name": "controller", "template": {"spec": {"template": {"spec": {}}}}},
            {"name": "workers", "template": {"spec": {"template": {"spec": {"priorityClassName": "gone"}}}}}
        ]}}));
        let classes = |w: &Workload| -> Vec<(String, String)> {
            w.pod_priority_classes().into_iter().map(|p| (p.location, p.class_name.to_string())).collect()
        };
        let changed = jobset.with_pod_priority_class("replicatedJobs[workers]", Some("gpu-batch"));
        assert_eq!(classes(&changed), [("replicatedJobs[workers]".to_string(), "gpu-batch".to_string())]);
        assert!(jobset.with_pod_priority_class("replicatedJobs[workers]", None).pod_priority_classes().is_empty());
        let job = workload(json!({"spec": {"template": {"spec": {"priorityClassName": "gone"}}}}));
        assert_eq!(
            classes(&job.with_pod_priority_class("spec.template", Some("x"))),
            [("spec.template".into(), "x".into())]
        );
        let relabelled = job.with_label("a", Some("b")).with_label("c", Some("d")).with_label("a", None);
        assert_eq!((relabelled.label("a"), relabelled.label("c")), (None, Some("d")));
    }
}
