//! Typed partial views of the workloads eval-admission reviews: batch/v1 Jobs and
//! jobset.x-k8s.io/v1alpha2 JobSets.
//!
//! Only the fields the rules read are decoded; serde skips the rest without
//! allocating, so a 40 KB JobSet costs one lexing pass and a handful of small strings.

mod decode;
mod kind;
mod limits;
mod placement;
mod requests;
pub mod size;
mod stage;
mod transform;

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

pub(crate) use decode::decoded_from_objects_only;
pub use decode::{Tolerant, TolerantList};
pub use kind::WorkloadKind;
pub use limits::{Bare, LimitItem, LimitSummary, ProblemKind, ResourceAmounts, ResourceProblem, Surroundings};
pub use placement::Placement;
pub use requests::PodSetRequests;
pub use stage::{Stage, Stored};
pub use transform::{ResourceSettings, Transformation};

use crate::vocabulary::kueue::{KueueVersion, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL};

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
    /// The deprecated `kueue.x-k8s.io/queue-name` annotation.
    pub queue_name: Option<String>,
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
    /// Where its pods may run: read raw, and only when Kueue matches the pod
    /// set against flavors ([`Placement`]), since most workloads have none.
    #[serde(default)]
    pub node_selector: Option<Value>,
    #[serde(default)]
    pub affinity: Option<Value>,
    #[serde(default)]
    pub tolerations: Option<Value>,
    #[serde(default)]
    pub runtime_class_name: Option<String>,
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

    /// The queue label, not empty.
    pub fn queue_name(&self) -> Option<&str> {
        self.label(QUEUE_NAME_LABEL).filter(|name| !name.is_empty())
    }

    /// The LocalQueue Kueue `version` reads for it: the label, else, before
    /// v0.15, the deprecated annotation (`QueueNameForObject`).
    pub fn queue_name_read_by(&self, version: KueueVersion) -> Option<&str> {
        self.queue_name().or_else(|| self.deprecated_queue_annotation().filter(|_| version.reads_queue_annotation()))
    }

    /// The deprecated queue-name annotation, not empty.
    pub fn deprecated_queue_annotation(&self) -> Option<&str> {
        self.metadata.annotations.as_ref()?.queue_name.as_deref().filter(|name| !name.is_empty())
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn workload(value: Value) -> Workload {
        serde_json::from_value(value).expect("workload decodes")
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
