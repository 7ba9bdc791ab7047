//! Typed partial views of the workloads eval-admission reviews: batch/v1 Jobs and
//! jobset.x-k8s.io/v1alpha2 JobSets.
//!
//! Only the fields the rules read are decoded; serde skips the rest without
//! allocating, so a 40 KB JobSet costs one lexing pass and a handful of small strings.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
pub const PRIORITY_CLASS_LABEL: &str = "kueue.x-k8s.io/priority-class";
pub const DEFAULT_QUEUE_ANNOTATION: &str = "kueue.x-k8s.io/default-queue-name";
pub const CHECKPOINTING_ANNOTATION: &str = "eval-admission.io/checkpointing";
pub const EVALUATION_LABEL: &str = "eval-admission.io/evaluation";

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

/// A Job or JobSet, pruned to what the rules read.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Workload {
    #[serde(default)]
    pub metadata: Metadata,
    /// `None` when the object has no `spec` at all (the patch must then add it whole).
    #[serde(default)]
    pub spec: Option<Spec>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub generate_name: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    /// `None` when the object has no labels map (the patch must then add the map).
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub annotations: Option<SelectedAnnotations>,
    #[serde(default)]
    pub owner_references: Option<Vec<OwnerReference>>,
    #[serde(default)]
    pub deletion_timestamp: Option<IgnoredAny>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
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
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    #[serde(default)]
    pub suspend: Option<bool>,
    #[serde(default)]
    pub template: Option<PodTemplate>,
    #[serde(default)]
    pub replicated_jobs: Option<Vec<ReplicatedJob>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
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
pub struct PodSpec {
    #[serde(default)]
    pub priority_class_name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ReplicatedJob {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub template: Option<JobTemplate>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct JobTemplate {
    #[serde(default)]
    pub spec: Option<JobTemplateSpec>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct JobTemplateSpec {
    #[serde(default)]
    pub template: Option<PodTemplate>,
}

/// Where a pod template's `priorityClassName` was found, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodPriorityClass<'a> {
    /// `spec.template` for a Job, `replicatedJobs[workers]` for a JobSet.
    pub location: String,
    pub class_name: &'a str,
}

impl Workload {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.metadata.labels.as_ref()?.get(key).map(String::as_str)
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
            found.push(PodPriorityClass { location: "spec.template".into(), class_name });
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
                found.push(PodPriorityClass { location, class_name });
            }
        }
        found
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
