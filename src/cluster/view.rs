//! [`ClusterView`], the lookups the rules are written against; what a denial
//! found missing ([`Absent`]), which the server confirms live; and the what-if
//! overlays the rules check a way out through.

use std::borrow::Cow;
use std::sync::Arc;

use super::cohort_tree::CohortTree;
use super::kueue_config::KueueConfig;
use super::priorities::PriorityClassRef;
use super::reclaim::Reclaimer;
use super::{ClusterQueue, Cohort, LocalQueue, NamespaceInfo, OwnerKey, PriorityClass, ResourceFlavor};
use crate::workload::{LimitSummary, ResourceAmounts, ResourceSettings, Surroundings};

/// Read-only lookups the rules need. Implementations answer from memory: no
/// method may block on the network.
pub trait ClusterView {
    fn kueue_installed(&self) -> bool;
    fn namespace(&self, name: &str) -> Option<&NamespaceInfo>;
    fn local_queue(&self, namespace: &str, name: &str) -> Option<&LocalQueue>;
    /// The LocalQueues of a namespace, by name.
    fn local_queues(&self, namespace: &str) -> Box<dyn Iterator<Item = (&str, &LocalQueue)> + '_>;
    fn cluster_queue(&self, name: &str) -> Option<&ClusterQueue>;
    fn cluster_queues(&self) -> Box<dyn Iterator<Item = (&str, &ClusterQueue)> + '_>;
    fn cohort(&self, name: &str) -> Option<&Cohort>;
    fn cohorts(&self) -> Box<dyn Iterator<Item = (&str, &Cohort)> + '_>;
    fn resource_flavor(&self, name: &str) -> Option<&ResourceFlavor>;
    /// `Some(active)` when the AdmissionCheck exists.
    fn admission_check(&self, name: &str) -> Option<bool>;
    fn workload_priority_class(&self, name: &str) -> Option<i32>;
    fn workload_priority_classes(&self) -> Box<dyn Iterator<Item = (&str, i32)> + '_>;
    fn priority_class(&self, name: &str) -> Option<&PriorityClass>;
    fn priority_classes(&self) -> Box<dyn Iterator<Item = (&str, &PriorityClass)> + '_>;
    fn kueue_config(&self) -> &KueueConfig;
    /// The summary of a namespace's LimitRanges; `None` when it has none.
    fn limit_summary(&self, namespace: &str) -> Option<&LimitSummary>;
    /// A RuntimeClass's `overhead.podFixed`; `None` when absent or empty.
    fn runtime_overhead(&self, class: &str) -> Option<&ResourceAmounts>;
    /// The uid of an owner of a Kueue-managed kind, when the view holds it.
    fn owner_uid(&self, owner: &OwnerKey) -> Option<&str>;
    /// Whether the ClusterQueue's namespaceSelector selects some namespace
    /// where Kueue manages a labelled job (`KueueConfig::manages_labelled_jobs_in`:
    /// before v0.15, any namespace): where a user could put a LocalQueue
    /// pointing at it and queue a workload.
    fn selects_a_managed_namespace(&self, cluster_queue: &str) -> bool;
    /// The least every workload the ClusterQueue could admit asks per pod, by
    /// resource: what the LimitRanges of every such namespace it selects
    /// force (`LimitSummary::request_floor`, the lesser where they differ), as
    /// Kueue counts it. `None` when it selects no managed namespace.
    fn request_floor(&self, cluster_queue: &str) -> Option<&ResourceAmounts>;
    /// The most of `resource` in `flavor` the ClusterQueue could ever hold, in
    /// milli-units (`quota::potential_available`, derived once per change).
    fn potential_available(&self, cluster_queue: &str, flavor: &str, resource: &str) -> i64;
    /// The top of the ClusterQueue's cohort tree; `None` outside any cohort
    /// (`quota::tree_root`, derived once per change).
    fn cohort_root(&self, cluster_queue: &str) -> Option<&str>;
    /// Whether anyone could get a workload into the ClusterQueue at all
    /// (`active::accepts_workloads`, derived once per change).
    fn accepts_workloads(&self, cluster_queue: &str) -> bool;
    /// The cohort trees as an index (derived once per change).
    fn cohort_tree(&self) -> &CohortTree;
    /// A cohort's subtree quota of `resource` in `flavor` (`quota::Tree::subtree`),
    /// derived once per change; `None` where not derived (a flavor-resource no
    /// queue or cohort lists, a cohort on a cycle).
    fn subtree_quota(&self, cohort: &str, flavor: &str, resource: &str) -> Option<i64>;
    /// Who could reclaim `resource` in `flavor` from the ClusterQueue
    /// (`reclaim::reclaimers`), derived once per change.
    fn reclaimers(&self, cluster_queue: &str, flavor: &str, resource: &str) -> Arc<[Reclaimer]>;
    /// Every priority a user can name, highest first (`priorities::sorted`).
    fn nameable_priorities(&self) -> Cow<'_, [PriorityClassRef]>;
}

/// An object a denial found missing; LocalQueues live in the workload's namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Absent {
    LocalQueue(String),
    ClusterQueue(String),
    WorkloadPriorityClass(String),
    PriorityClass(String),
    ResourceFlavor(String),
    AdmissionCheck(String),
    /// An owner a workload's controller reference names, with the uid it names.
    Owner(Box<ClaimedOwner>),
}

/// Who a controller ownerReference says owns a workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedOwner {
    pub owner: OwnerKey,
    pub uid: String,
}

/// The view with one more PriorityClass: a way out the platform team takes.
/// It holds the view as a trait object: checking through it may build another
/// one, which a generic would nest without end at compile time.
pub struct WithPriorityClass<'v> {
    pub view: &'v dyn ClusterView,
    pub name: &'v str,
    pub class: PriorityClass,
}

impl ClusterView for WithPriorityClass<'_> {
    fn kueue_installed(&self) -> bool {
        self.view.kueue_installed()
    }
    fn owner_uid(&self, owner: &OwnerKey) -> Option<&str> {
        self.view.owner_uid(owner)
    }
    fn namespace(&self, name: &str) -> Option<&NamespaceInfo> {
        self.view.namespace(name)
    }
    fn local_queue(&self, namespace: &str, name: &str) -> Option<&LocalQueue> {
        self.view.local_queue(namespace, name)
    }
    fn local_queues(&self, namespace: &str) -> Box<dyn Iterator<Item = (&str, &LocalQueue)> + '_> {
        self.view.local_queues(namespace)
    }
    fn cluster_queue(&self, name: &str) -> Option<&ClusterQueue> {
        self.view.cluster_queue(name)
    }
    fn cluster_queues(&self) -> Box<dyn Iterator<Item = (&str, &ClusterQueue)> + '_> {
        self.view.cluster_queues()
    }
    fn cohort(&self, name: &str) -> Option<&Cohort> {
        self.view.cohort(name)
    }
    fn cohorts(&self) -> Box<dyn Iterator<Item = (&str, &Cohort)> + '_> {
        self.view.cohorts()
    }
    fn resource_flavor(&self, name: &str) -> Option<&ResourceFlavor> {
        self.view.resource_flavor(name)
    }
    fn admission_check(&self, name: &str) -> Option<bool> {
        self.view.admission_check(name)
    }
    fn workload_priority_class(&self, name: &str) -> Option<i32> {
        self.view.workload_priority_class(name)
    }
    fn workload_priority_classes(&self) -> Box<dyn Iterator<Item = (&str, i32)> + '_> {
        self.view.workload_priority_classes()
    }
    fn priority_class(&self, name: &str) -> Option<&PriorityClass> {
        if name == self.name { Some(&self.class) } else { self.view.priority_class(name) }
    }
    fn priority_classes(&self) -> Box<dyn Iterator<Item = (&str, &PriorityClass)> + '_> {
        Box::new(self.view.priority_classes().chain(std::iter::once((self.name, &self.class))))
    }
    fn kueue_config(&self) -> &KueueConfig {
        self.view.kueue_config()
    }
    fn limit_summary(&self, namespace: &str) -> Option<&LimitSummary> {
        self.view.limit_summary(namespace)
    }
    fn runtime_overhead(&self, class: &str) -> Option<&ResourceAmounts> {
        self.view.runtime_overhead(class)
    }
    fn selects_a_managed_namespace(&self, cluster_queue: &str) -> bool {
        self.view.selects_a_managed_namespace(cluster_queue)
    }
    fn request_floor(&self, cluster_queue: &str) -> Option<&ResourceAmounts> {
        self.view.request_floor(cluster_queue)
    }
    fn potential_available(&self, cluster_queue: &str, flavor: &str, resource: &str) -> i64 {
        self.view.potential_available(cluster_queue, flavor, resource)
    }
    fn cohort_root(&self, cluster_queue: &str) -> Option<&str> {
        self.view.cohort_root(cluster_queue)
    }
    fn accepts_workloads(&self, cluster_queue: &str) -> bool {
        self.view.accepts_workloads(cluster_queue)
    }
    fn cohort_tree(&self) -> &CohortTree {
        self.view.cohort_tree()
    }
    fn subtree_quota(&self, cohort: &str, flavor: &str, resource: &str) -> Option<i64> {
        self.view.subtree_quota(cohort, flavor, resource)
    }
    fn reclaimers(&self, cluster_queue: &str, flavor: &str, resource: &str) -> Arc<[Reclaimer]> {
        // Who reclaims from whom does not depend on priorities.
        self.view.reclaimers(cluster_queue, flavor, resource)
    }
    fn nameable_priorities(&self) -> Cow<'_, [PriorityClassRef]> {
        Cow::Owned(super::priorities::sorted(self))
    }
}

/// A pod template's surroundings as the view holds them: its namespace's
/// LimitRanges and the cluster's RuntimeClasses.
pub struct InNamespace<'v, V: ?Sized> {
    pub view: &'v V,
    pub namespace: &'v str,
}

impl<V: ClusterView + ?Sized> Surroundings for InNamespace<'_, V> {
    fn limits(&self) -> Option<&LimitSummary> {
        self.view.limit_summary(self.namespace)
    }
    fn runtime_overhead(&self, class: &str) -> Option<&ResourceAmounts> {
        self.view.runtime_overhead(class)
    }
    fn resource_settings(&self) -> Option<&ResourceSettings> {
        Some(&self.view.kueue_config().resources).filter(|settings| !settings.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::priorities::ClassKind;
    use crate::cluster::state_file;

    #[test]
    fn the_priority_class_overlay_answers_the_rest_from_the_view_beneath() {
        let base = state_file::parse(
            b"apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {kubernetes.io/metadata.name: a}}\n---\n\
              apiVersion: v1\nkind: LimitRange\nmetadata: {name: l, namespace: a}\n\
              spec: {limits: [{type: Container, min: {memory: 1Gi}, default: {memory: 1Gi}}]}\n---\n\
              apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec: {namespaceSelector: {}}\n",
        )
        .unwrap();
        let class = PriorityClass { value: 7, global_default: false };
        let overlay = WithPriorityClass { view: &base, name: "added", class };
        assert_eq!(overlay.priority_class("added"), Some(&class));
        assert_eq!(base.priority_class("added"), None);
        assert!(base.request_floor("q").is_some_and(|floor| floor.contains_key("memory")));
        assert_eq!(overlay.request_floor("q"), base.request_floor("q"));
        assert!(overlay.selects_a_managed_namespace("q"));
    }

    /// The names an iterator of (name, value) lookups yields, in its order.
    fn names<'a, T>(entries: Box<dyn Iterator<Item = (&'a str, T)> + 'a>) -> Vec<&'a str> {
        entries.map(|(name, _)| name).collect()
    }

    /// Both found, and the very object the view beneath holds.
    fn same<T>(overlay: Option<&T>, base: Option<&T>) -> bool {
        matches!((overlay, base), (Some(overlay), Some(base)) if std::ptr::eq(overlay, base))
    }

    #[test]
    fn the_priority_class_overlay_passes_every_other_lookup_through() {
        // q lends 4 cpu to borrower in cohort co and reclaims Any; held admits nothing.
        let queue = |name: &str, cpu: u32, spec: &str| {
            format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n{spec}  \
                 resourceGroups: [{{coveredResources: [cpu, memory], flavors: [{{name: f, resources: [{{name: cpu, nominalQuota: \
                 {cpu}}}, {{name: memory, nominalQuota: 8Gi}}]}}]}}]\n"
            )
        };
        let documents = [
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {kubernetes.io/metadata.name: a}}\n".to_string(),
            "apiVersion: v1\nkind: LimitRange\nmetadata: {name: l, namespace: a}\n\
             spec: {limits: [{type: Container, min: {memory: 1Gi}, default: {memory: 1Gi}}]}\n"
                .to_string(),
            "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\nhandler: kata\noverhead: {podFixed: {cpu: 1}}\n"
                .to_string(),
            "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js, namespace: a, uid: uid-1}\n".to_string(),
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n".to_string(),
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata: {name: ac}\nspec: {controllerName: example.com/c}\n\
             status: {conditions: [{type: Active, status: \"True\", reason: Ok, message: \"\", lastTransitionTime: \"2026-01-01T00:00:00Z\"}]}\n"
                .to_string(),
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: wpc}\nvalue: 5\n".to_string(),
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: pc}\nvalue: 3\n".to_string(),
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: co}\n".to_string(),
            queue("q", 4, "  cohortName: co\n  namespaceSelector: {}\n  preemption: {reclaimWithinCohort: Any}\n"),
            queue("borrower", 0, "  cohortName: co\n  namespaceSelector: {}\n"),
            queue("held", 4, "  namespaceSelector: {matchLabels: {team: nobody}}\n  stopPolicy: Hold\n"),
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: lq, namespace: a}\nspec: {clusterQueue: q}\n"
                .to_string(),
        ];
        let base = state_file::parse(documents.join("---\n").as_bytes()).unwrap();
        let class = PriorityClass { value: 7, global_default: false };
        let overlay = WithPriorityClass { view: &base, name: "added", class };

        assert!(overlay.kueue_installed());
        let bare = state_file::parse(b"apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n").unwrap();
        assert!(!WithPriorityClass { view: &bare, name: "added", class }.kueue_installed());
        let owner = OwnerKey {
            api_group: "jobset.x-k8s.io".into(),
            kind: "JobSet".into(),
            namespace: "a".into(),
            name: "js".into(),
        };
        assert_eq!(overlay.owner_uid(&owner), Some("uid-1"));

        assert!(same(overlay.namespace("a"), base.namespace("a")));
        assert!(same(overlay.local_queue("a", "lq"), base.local_queue("a", "lq")));
        assert_eq!(names(overlay.local_queues("a")), ["lq"]);
        assert!(same(overlay.cluster_queue("q"), base.cluster_queue("q")));
        assert_eq!(names(overlay.cluster_queues()), ["borrower", "held", "q"]);
        assert!(same(overlay.cohort("co"), base.cohort("co")));
        assert_eq!(names(overlay.cohorts()), ["co"]);
        assert!(same(overlay.resource_flavor("f"), base.resource_flavor("f")));
        assert_eq!((overlay.admission_check("ac"), overlay.admission_check("none")), (Some(true), None));

        assert_eq!((overlay.workload_priority_class("wpc"), overlay.workload_priority_class("added")), (Some(5), None));
        assert_eq!(overlay.workload_priority_classes().collect::<Vec<_>>(), [("wpc", 5)]);
        let mut classes: Vec<(&str, i32)> = overlay.priority_classes().map(|(name, c)| (name, c.value)).collect();
        let mut expected: Vec<(&str, i32)> = base.priority_classes().map(|(name, c)| (name, c.value)).collect();
        assert!(expected.contains(&("pc", 3)), "{expected:?}");
        expected.push(("added", 7));
        classes.sort();
        expected.sort();
        assert_eq!(classes, expected, "the view's classes and the one added");
        let nameable = overlay.nameable_priorities();
        assert_eq!(nameable.len(), base.nameable_priorities().len() + 1);
        assert_eq!(nameable[0], PriorityClassRef { kind: ClassKind::PriorityClass, name: "added".into(), value: 7 });
        assert!(base.nameable_priorities().iter().all(|class| nameable.contains(class)), "{nameable:?}");

        assert!(std::ptr::eq(overlay.kueue_config(), base.kueue_config()));
        assert!(same(overlay.limit_summary("a"), base.limit_summary("a")));
        assert!(same(overlay.runtime_overhead("kata"), base.runtime_overhead("kata")));
        assert!(same(overlay.request_floor("q"), base.request_floor("q")));
        assert_eq!(
            (overlay.selects_a_managed_namespace("q"), overlay.selects_a_managed_namespace("held")),
            (true, false)
        );
        assert_eq!((overlay.accepts_workloads("q"), overlay.accepts_workloads("held")), (true, false));

        assert_eq!(overlay.potential_available("borrower", "f", "cpu"), 4000, "all of it borrowed from q");
        assert_eq!(overlay.cohort_root("borrower"), Some("co"));
        assert!(std::ptr::eq(overlay.cohort_tree(), base.cohort_tree()));
        assert_eq!(overlay.subtree_quota("co", "f", "cpu"), Some(4000));
        let reclaimers = overlay.reclaimers("borrower", "f", "cpu");
        assert_eq!(reclaimers.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["q"]);
        assert_eq!(reclaimers, base.reclaimers("borrower", "f", "cpu"));
    }
}
