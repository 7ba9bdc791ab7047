//! The cluster objects the rules read, pruned to the fields they use, and decoded
//! from either Kueue API version (v1beta1 and v1beta2 differ in a few names).

mod decode;

use std::collections::BTreeMap;

use super::kueue_config::KueueConfig;
use super::selector::LabelSelector;
pub use crate::vocabulary::scheduling::{Taint, Toleration};
pub use crate::workload::{LimitItem, ResourceAmounts};

/// A namespace as the rules see it: its default-queue annotation and its labels
/// (ClusterQueue namespaceSelectors and Kueue's managedJobsNamespaceSelector match them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceInfo {
    pub default_queue: Option<String>,
    pub labels: BTreeMap<String, String>,
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
    pub namespace_selector: NamespaceSelector,
    pub stop_policy: StopPolicy,
    pub resource_groups: Vec<ResourceGroup>,
    /// `spec.admissionChecks` (v1beta1) and `spec.admissionChecksStrategy.admissionChecks[].name`.
    pub admission_checks: Vec<String>,
    pub within_cluster_queue: WithinClusterQueue,
    pub reclaim_within_cohort: ReclaimWithinCohort,
    pub borrow_within_cohort: BorrowWithinCohort,
    pub flavor_fungibility: FlavorFungibility,
}

/// Which namespaces a ClusterQueue admits from. Kueue reads an absent selector
/// as "nothing" (`metav1.LabelSelectorAsSelector(nil)` is `labels.Nothing()`,
/// then `workload.ValidateAdmissibility` answers ErrNamespaceMismatch), and a
/// selector it cannot parse keeps the ClusterQueue out of its cache altogether
/// (`clusterQueue.updateClusterQueue` returns the error).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NamespaceSelector {
    #[default]
    Absent,
    Selector(LabelSelector),
    Invalid(String),
}

/// A resource group: the resources it covers and its flavors, in the order
/// Kueue tries them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceGroup {
    pub covered_resources: Vec<String>,
    pub flavors: Vec<FlavorQuotas>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FlavorQuotas {
    pub name: String,
    pub resources: Vec<ResourceQuota>,
}

/// One resource's quota in milli-units (see [`crate::vocabulary::quantity`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceQuota {
    pub name: String,
    pub nominal: i64,
    pub borrowing_limit: Option<i64>,
    pub lending_limit: Option<i64>,
}

/// `preemption.borrowWithinCohort`: may the queue preempt while it borrows, and
/// below which priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BorrowWithinCohort {
    pub lower_priority: bool,
    pub max_priority_threshold: Option<i32>,
}

/// `flavorFungibility`, with Kueue's defaults (MayStopSearch / TryNextFlavor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlavorFungibility {
    /// whenCanBorrow is TryNextFlavor: a flavor that needs borrowing is not taken
    /// while a later one fits without.
    pub try_next_when_can_borrow: bool,
    /// whenCanPreempt is TryNextFlavor (the default).
    pub try_next_when_can_preempt: bool,
}

impl Default for FlavorFungibility {
    fn default() -> Self {
        Self { try_next_when_can_borrow: false, try_next_when_can_preempt: true }
    }
}

impl ResourceGroup {
    pub fn covers(&self, resource: &str) -> bool {
        self.covered_resources.iter().any(|r| r == resource)
    }
}

impl FlavorQuotas {
    pub fn quota(&self, resource: &str) -> Option<&ResourceQuota> {
        self.resources.iter().find(|q| q.name == resource)
    }
}

impl ClusterQueue {
    /// The resource group covering `resource` (Kueue: `RGByResource`).
    pub fn group_for(&self, resource: &str) -> Option<&ResourceGroup> {
        self.resource_groups.iter().find(|group| group.covers(resource))
    }

    /// Every flavor the queue names, in order, each once.
    pub fn flavor_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for flavor in self.resource_groups.iter().flat_map(|g| &g.flavors) {
            if !names.contains(&flavor.name.as_str()) {
                names.push(&flavor.name);
            }
        }
        names
    }

    pub fn quota(&self, flavor: &str, resource: &str) -> Option<&ResourceQuota> {
        self.resource_groups
            .iter()
            .flat_map(|g| &g.flavors)
            .filter(|f| f.name == flavor)
            .find_map(|f| f.quota(resource))
    }
}

/// A ResourceFlavor: the node labels and taints Kueue matches pod sets
/// against, and the tolerations it adds to every pod set it admits.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceFlavor {
    pub node_labels: BTreeMap<String, String>,
    pub node_taints: Vec<Taint>,
    pub tolerations: Vec<Toleration>,
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

impl StopPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "None",
            Self::Hold => "Hold",
            Self::HoldAndDrain => "HoldAndDrain",
        }
    }
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
    /// A Cohort's own quota, lent to its subtree (v1beta1 and later).
    pub resource_groups: Vec<ResourceGroup>,
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
    ResourceFlavor {
        name: String,
        flavor: ResourceFlavor,
    },
    /// An AdmissionCheck; Kueue counts it only when its Active condition is True.
    AdmissionCheck {
        name: String,
        active: bool,
    },
    /// Any other kueue.x-k8s.io object (ResourceFlavor, Workload, ...): proves Kueue is installed.
    OtherKueueObject,
    /// A CustomResourceDefinition; only `localqueues.kueue.x-k8s.io` matters.
    Crd {
        name: String,
    },
    /// Kueue's Configuration, read from its ConfigMap.
    KueueConfiguration {
        config: Box<KueueConfig>,
    },
    /// A namespace's LimitRange: its `Container` and `Pod` items (the types
    /// Kueue reads), in order.
    LimitRange {
        namespace: String,
        name: String,
        items: Vec<(String, LimitItem)>,
    },
    /// A RuntimeClass: its `overhead.podFixed` (empty when it has none).
    RuntimeClass {
        name: String,
        overhead: ResourceAmounts,
    },
    /// An object of a kind Kueue admits as a unit (a JobSet, ...): only who it is.
    Owner {
        key: OwnerKey,
        uid: String,
    },
}

/// Who an owner of a Kueue-managed kind is: what a Job's ownerReference must
/// match, with its uid, before the Job is left to that owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OwnerKey {
    pub api_group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

pub use decode::{DecodeError, api_group, decode, decode_kueue_config_map};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert_eq!(old.quota("", "cpu").map(|q| (q.nominal, q.borrowing_limit)), Some((8000, Some(0))));
        assert_eq!(new.cohort.as_deref(), Some("research"));
        assert_eq!(new.within_cluster_queue, WithinClusterQueue::Never);
        assert_eq!(new.quota("", "cpu").map(|q| q.borrowing_limit), Some(None), "no borrowingLimit: unlimited");
    }

    #[test]
    fn cohort_parent_in_both_spellings() {
        for spec in [json!({"parentName": "root"}), json!({"parent": "root"})] {
            let decoded = decode("kueue.x-k8s.io/v1beta2", "Cohort", json!({"metadata": {"name": "c"}, "spec": spec}));
            assert_eq!(
                decoded.unwrap(),
                Some(ClusterObject::Cohort {
                    name: "c".into(),
                    cohort: Cohort { parent: Some("root".into()), resource_groups: Vec::new() }
                })
            );
        }
    }

    #[test]
    fn unnamed_objects_are_errors_and_unknown_kinds_are_skipped() {
        assert!(decode("kueue.x-k8s.io/v1beta2", "LocalQueue", json!({"metadata": {"namespace": "a"}})).is_err());
        assert!(decode("kueue.x-k8s.io/v1beta2", "LocalQueue", json!({"metadata": {"name": "q"}})).is_err());
        assert_eq!(decode("apps/v1", "Deployment", json!({})).unwrap(), None);
        assert_eq!(
            decode("kueue.x-k8s.io/v1beta2", "Workload", json!({})).unwrap(),
            Some(ClusterObject::OtherKueueObject)
        );
    }
}
