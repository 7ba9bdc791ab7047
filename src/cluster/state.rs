//! [`ClusterState`]: the cluster objects the rules read, pruned, in plain maps,
//! with what is derived from them (per ClusterQueue, not per review).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use super::cohort_tree::CohortTree;
use super::kueue_config::KueueConfig;
use super::objects::{LimitItem, ResourceAmounts};
use super::priorities::{self, PriorityClassRef};
use super::quota::Pool;
use super::reclaim::{self, Reclaimer};
use super::served::{self, Served};
use super::{
    ClusterObject, ClusterQueue, ClusterView, Cohort, LocalQueue, NamespaceInfo, OwnerKey, PriorityClass,
    ResourceFlavor, quota,
};
use crate::vocabulary::kueue::KueueInstall;
use crate::workload::LimitSummary;

/// Counts of cached objects, for readiness and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObjectCounts {
    pub namespaces: usize,
    pub local_queues: usize,
    pub cluster_queues: usize,
    pub cohorts: usize,
    pub resource_flavors: usize,
    pub admission_checks: usize,
    pub workload_priority_classes: usize,
    pub priority_classes: usize,
    pub limit_ranges: usize,
    pub runtime_classes: usize,
}

/// How many ClusterQueues' reclaimers one step of [`ClusterState::derive`] derives.
pub const QUEUES_PER_STEP: usize = 32;

/// The cluster objects the rules read, pruned, indexed for the lookups above.
#[derive(Debug, Clone)]
pub struct ClusterState {
    /// Set when the LocalQueue CRD is present (or any Kueue object was seen).
    pub kueue_installed: bool,
    namespaces: HashMap<String, NamespaceInfo>,
    /// namespace -> name -> LocalQueue; sorted by name so listings are stable.
    local_queues: HashMap<String, BTreeMap<String, LocalQueue>>,
    cluster_queues: BTreeMap<String, ClusterQueue>,
    cohorts: BTreeMap<String, Cohort>,
    resource_flavors: HashMap<String, ResourceFlavor>,
    admission_checks: HashMap<String, bool>,
    workload_priority_classes: BTreeMap<String, i32>,
    priority_classes: BTreeMap<String, PriorityClass>,
    /// Which Kueue this is and where it keeps its ConfigMap (the policy config's `kueue`).
    kueue: KueueInstall,
    /// Kueue's Configuration: from its ConfigMap, else what the release's
    /// manifests install (the ConfigMap a standard install mounts).
    kueue_config: KueueConfig,
    /// namespace -> name -> the LimitRange's items; and each namespace's summary.
    limit_ranges: HashMap<String, BTreeMap<String, Vec<(String, LimitItem)>>>,
    limit_summaries: HashMap<String, LimitSummary>,
    /// RuntimeClass name -> `overhead.podFixed`.
    runtime_classes: HashMap<String, ResourceAmounts>,
    /// Owners of Kueue-managed kinds (JobSets, ...): who they are, nothing else.
    /// Changes here derive nothing, so they keep what is derived.
    owners: HashMap<OwnerKey, String>,
    /// Derived on first use, then kept current one Namespace, LimitRange or
    /// ClusterQueue at a time: the managed namespaces each ClusterQueue
    /// selects, and the least every workload it could admit asks per pod
    /// (`ClusterView::request_floor`).
    served: OnceLock<Served>,
    /// Derived on first use after a change (per ClusterQueue, not per review):
    /// per ClusterQueue, flavor and resource it lists, the
    /// most it could ever hold (`quota::potential_available`, a walk of its
    /// whole cohort tree).
    potentials: OnceLock<Potentials>,
    /// Derived likewise: the ClusterQueues anyone could get a workload into.
    accepting: OnceLock<HashSet<String>>,
    /// Derived likewise: the cohort trees as an index.
    cohort_tree: OnceLock<CohortTree>,
    /// Derived likewise: per flavor-resource listed anywhere, each cohort's
    /// subtree quota (`quota::Tree::subtree`).
    subtrees: OnceLock<Subtrees>,
    /// Derived likewise: the priorities a user can name, highest first.
    priorities: OnceLock<Vec<PriorityClassRef>>,
    /// Who could reclaim what from whom (`reclaim::reclaimers`), per
    /// (ClusterQueue, flavor, resource): filled by [`ClusterState::derive`], or
    /// on first use for one it has not reached yet.
    reclaimers: ReclaimMemo,
}

/// ClusterQueue -> flavor -> resource -> milli-units.
type Potentials = HashMap<String, HashMap<String, HashMap<String, i64>>>;
/// flavor -> resource -> cohort -> milli-units.
type Subtrees = HashMap<String, HashMap<String, HashMap<String, i64>>>;

/// (ClusterQueue, flavor, resource) -> who could reclaim it; and (root,
/// flavor, resource) -> the tree's pool, shared by its borrowers. A clone starts empty.
#[derive(Debug, Default)]
struct ReclaimMemo {
    reclaimers: Mutex<HashMap<Key, Arc<[Reclaimer]>>>,
    pools: Mutex<HashMap<Key, Option<Pool>>>,
}
type Key = (String, String, String);

impl Clone for ReclaimMemo {
    fn clone(&self) -> Self {
        Self::default()
    }
}

/// Upstream Kueue v0.19.2 in kueue-system.
impl Default for ClusterState {
    fn default() -> Self {
        Self::for_kueue(KueueInstall::default())
    }
}

impl ClusterState {
    /// An empty view of a cluster that `kueue` runs.
    pub fn for_kueue(kueue: KueueInstall) -> Self {
        Self {
            kueue_installed: false,
            namespaces: HashMap::new(),
            local_queues: HashMap::new(),
            cluster_queues: BTreeMap::new(),
            cohorts: BTreeMap::new(),
            resource_flavors: HashMap::new(),
            admission_checks: HashMap::new(),
            workload_priority_classes: BTreeMap::new(),
            priority_classes: BTreeMap::new(),
            kueue_config: KueueConfig::release_manifest(&kueue),
            kueue,
            limit_ranges: HashMap::new(),
            limit_summaries: HashMap::new(),
            runtime_classes: HashMap::new(),
            owners: HashMap::new(),
            served: OnceLock::new(),
            potentials: OnceLock::new(),
            accepting: OnceLock::new(),
            cohort_tree: OnceLock::new(),
            subtrees: OnceLock::new(),
            priorities: OnceLock::new(),
            reclaimers: ReclaimMemo::default(),
        }
    }

    /// Which Kueue this view is of.
    pub fn kueue(&self) -> &KueueInstall {
        &self.kueue
    }

    /// Derives now what the rules would otherwise derive on first use: every
    /// fact above, and who could reclaim from each ClusterQueue in each
    /// flavor-resource it lists.
    pub fn derive(&self) {
        let mut step = Some(0);
        while let Some(next) = step {
            step = self.derive_step(next);
        }
    }

    /// One step of [`Self::derive`], short enough to hold a reader's lock for:
    /// step 0 the facts of the whole view, then each the reclaimers of up to
    /// [`QUEUES_PER_STEP`] ClusterQueues (in name order). Returns the next step,
    /// or `None` once all is derived.
    pub fn derive_step(&self, step: usize) -> Option<usize> {
        if step == 0 {
            let _ = (self.nameable_priorities(), self.subtrees(), self.potentials());
            if let Some(name) = self.cluster_queues.keys().next() {
                let _ = (self.request_floor(name), self.accepts_workloads(name));
            }
            return Some(1);
        }
        let queues = self.cluster_queues.iter().skip((step - 1) * QUEUES_PER_STEP).take(QUEUES_PER_STEP);
        let mut any = false;
        for (name, queue) in queues {
            any = true;
            if queue.cohort.is_none() {
                continue;
            }
            for group in &queue.resource_groups {
                for flavor in &group.flavors {
                    for resource in &group.covered_resources {
                        let _ = self.reclaimers(name, &flavor.name, resource);
                    }
                }
            }
        }
        any.then_some(step + 1)
    }

    /// What the served facts are worked out from: the ClusterQueues, the
    /// namespaces, Kueue's Configuration and the namespaces' LimitRanges.
    fn served_sources(&self) -> served::Sources<'_> {
        served::Sources {
            queues: &self.cluster_queues,
            namespaces: &self.namespaces,
            config: &self.kueue_config,
            limits: &self.limit_summaries,
        }
    }

    fn namespace_floor(&self, namespace: &str) -> Option<ResourceAmounts> {
        self.served_sources().floor_of(namespace)
    }

    /// Keeps the served facts current through a change (when they are held):
    /// `change` is given them and the sources as they are after the change.
    /// What rests on them (who accepts workloads, who reclaims) goes when it says they changed.
    fn keep_served(&mut self, change: impl FnOnce(&mut Served, &served::Sources<'_>) -> bool) {
        let Some(mut served) = self.served.take() else { return };
        let changed = change(&mut served, &self.served_sources());
        self.served = OnceLock::from(served);
        if changed {
            self.accepting = OnceLock::new();
            self.reclaimers = ReclaimMemo::default();
        }
    }

    /// Every change drops what was derived from the state before it.
    fn forget_derived(&mut self) {
        self.served = OnceLock::new();
        self.forget_topology();
    }

    /// A change to the Kueue objects drops what was derived from them; the
    /// served facts, kept current, stay.
    fn forget_topology(&mut self) {
        self.potentials = OnceLock::new();
        self.accepting = OnceLock::new();
        self.cohort_tree = OnceLock::new();
        self.subtrees = OnceLock::new();
        self.priorities = OnceLock::new();
        self.reclaimers = ReclaimMemo::default();
    }

    /// Adds or replaces one object.
    pub fn apply(&mut self, object: ClusterObject) {
        // Nothing is derived from owners, LocalQueues or RuntimeClasses; from
        // Namespaces and LimitRanges only the served facts, kept current (and
        // what rests on them when they change); from Kueue's Configuration
        // everything; from the other Kueue objects all but the served facts.
        match &object {
            ClusterObject::Owner { .. }
            | ClusterObject::LocalQueue { .. }
            | ClusterObject::RuntimeClass { .. }
            | ClusterObject::LimitRange { .. }
            | ClusterObject::Namespace { .. } => {}
            ClusterObject::KueueConfiguration { .. } => self.forget_derived(),
            _ => self.forget_topology(),
        }
        match object {
            ClusterObject::LimitRange { namespace, name, items } => {
                let before = self.namespace_floor(&namespace);
                self.limit_ranges.entry(namespace.clone()).or_default().insert(name, items);
                self.summarize_limits(&namespace);
                self.keep_served(|served, sources| served.floor_changed(sources, &namespace, before.as_ref()));
            }
            ClusterObject::RuntimeClass { name, overhead } => {
                self.runtime_classes.insert(name, overhead);
            }
            ClusterObject::Owner { key, uid } => {
                self.owners.insert(key, uid);
            }
            ClusterObject::Namespace { name, info } => {
                let old = self.namespaces.insert(name.clone(), info);
                self.keep_served(|served, sources| served.namespace_changed(sources, &name, old.as_ref()));
            }
            ClusterObject::LocalQueue { namespace, name, queue } => {
                self.kueue_installed = true;
                self.local_queues.entry(namespace).or_default().insert(name, queue);
            }
            ClusterObject::ClusterQueue { name, queue } => {
                self.kueue_installed = true;
                self.cluster_queues.insert(name.clone(), queue);
                self.keep_served(|served, sources| {
                    served.queue_changed(sources, &name);
                    true
                });
            }
            ClusterObject::Cohort { name, cohort } => {
                self.kueue_installed = true;
                self.cohorts.insert(name, cohort);
            }
            ClusterObject::WorkloadPriorityClass { name, value } => {
                self.kueue_installed = true;
                self.workload_priority_classes.insert(name, value);
            }
            ClusterObject::PriorityClass { name, class } => {
                self.priority_classes.insert(name, class);
            }
            ClusterObject::ResourceFlavor { name, flavor } => {
                self.kueue_installed = true;
                self.resource_flavors.insert(name, flavor);
            }
            ClusterObject::AdmissionCheck { name, active } => {
                self.kueue_installed = true;
                self.admission_checks.insert(name, active);
            }
            ClusterObject::OtherKueueObject => self.kueue_installed = true,
            ClusterObject::Crd { name } => {
                if name == crate::vocabulary::kueue::LOCAL_QUEUE_CRD {
                    self.kueue_installed = true;
                }
            }
            ClusterObject::KueueConfiguration { config } => self.kueue_config = *config,
        }
    }

    /// `limitrange.Summarize` of a namespace's LimitRanges (in name order, as
    /// Kueue lists them), kept per namespace so a review only looks it up.
    fn summarize_limits(&mut self, namespace: &str) {
        let ranges = self.limit_ranges.get(namespace).filter(|ranges| !ranges.is_empty());
        let Some(ranges) = ranges else {
            self.limit_ranges.remove(namespace);
            self.limit_summaries.remove(namespace);
            return;
        };
        let mut summary = LimitSummary::default();
        for (kind, item) in ranges.values().flatten() {
            let slot = match kind.as_str() {
                "Container" => &mut summary.container,
                "Pod" => &mut summary.pod,
                _ => continue,
            };
            slot.get_or_insert_with(LimitItem::default).merge(item);
        }
        self.limit_summaries.insert(namespace.to_string(), summary);
    }

    /// Removes one object by kind, namespace (empty when cluster-scoped) and name.
    pub fn remove(&mut self, kind: &str, namespace: &str, name: &str) {
        match kind {
            "LimitRange" => {
                let before = self.namespace_floor(namespace);
                if let Some(ranges) = self.limit_ranges.get_mut(namespace) {
                    ranges.remove(name);
                }
                self.summarize_limits(namespace);
                self.keep_served(|served, sources| served.floor_changed(sources, namespace, before.as_ref()));
                return;
            }
            "RuntimeClass" => {
                self.runtime_classes.remove(name);
                return;
            }
            "LocalQueue" | "Namespace" => {}
            "ConfigMap" => self.forget_derived(),
            _ => self.forget_topology(),
        }
        match kind {
            "Namespace" => {
                let old = self.namespaces.remove(name);
                self.keep_served(|served, sources| served.namespace_changed(sources, name, old.as_ref()));
            }
            "LocalQueue" => {
                if let Some(queues) = self.local_queues.get_mut(namespace) {
                    queues.remove(name);
                    if queues.is_empty() {
                        self.local_queues.remove(namespace);
                    }
                }
            }
            "ClusterQueue" => {
                self.cluster_queues.remove(name);
                self.keep_served(|served, sources| {
                    served.queue_changed(sources, name);
                    true
                });
            }
            "Cohort" => {
                self.cohorts.remove(name);
            }
            "ResourceFlavor" => {
                self.resource_flavors.remove(name);
            }
            "AdmissionCheck" => {
                self.admission_checks.remove(name);
            }
            "WorkloadPriorityClass" => {
                self.workload_priority_classes.remove(name);
            }
            "PriorityClass" => {
                self.priority_classes.remove(name);
            }
            "ConfigMap" => self.kueue_config = KueueConfig::release_manifest(&self.kueue),
            _ => {}
        }
    }

    /// Drops every object of one kind: a watch relist replaces them all.
    pub fn clear_kind(&mut self, kind: &str) {
        self.forget_derived();
        match kind {
            "LimitRange" => {
                self.limit_ranges.clear();
                self.limit_summaries.clear();
            }
            "RuntimeClass" => self.runtime_classes.clear(),
            "Namespace" => self.namespaces.clear(),
            "LocalQueue" => self.local_queues.clear(),
            "ClusterQueue" => self.cluster_queues.clear(),
            "Cohort" => self.cohorts.clear(),
            "ConfigMap" => self.kueue_config = KueueConfig::release_manifest(&self.kueue),
            "ResourceFlavor" => self.resource_flavors.clear(),
            "AdmissionCheck" => self.admission_checks.clear(),
            "WorkloadPriorityClass" => self.workload_priority_classes.clear(),
            "PriorityClass" => self.priority_classes.clear(),
            _ => {}
        }
    }

    pub fn remove_owner(&mut self, key: &OwnerKey) {
        self.owners.remove(key);
    }

    /// Drops the owners of one kind: its watch relisted, or its API is gone.
    pub fn clear_owners(&mut self, api_group: &str, kind: &str) {
        self.owners.retain(|key, _| key.api_group != api_group || key.kind != kind);
    }

    pub fn owner_count(&self) -> usize {
        self.owners.len()
    }

    /// Drops every Kueue object: used when the Kueue CRDs disappear.
    pub fn clear_kueue(&mut self) {
        self.forget_derived();
        self.kueue_installed = false;
        self.local_queues.clear();
        self.cluster_queues.clear();
        self.cohorts.clear();
        self.resource_flavors.clear();
        self.admission_checks.clear();
        self.workload_priority_classes.clear();
    }

    pub fn counts(&self) -> ObjectCounts {
        ObjectCounts {
            namespaces: self.namespaces.len(),
            local_queues: self.local_queues.values().map(BTreeMap::len).sum(),
            cluster_queues: self.cluster_queues.len(),
            cohorts: self.cohorts.len(),
            resource_flavors: self.resource_flavors.len(),
            admission_checks: self.admission_checks.len(),
            workload_priority_classes: self.workload_priority_classes.len(),
            priority_classes: self.priority_classes.len(),
            limit_ranges: self.limit_ranges.values().map(BTreeMap::len).sum(),
            runtime_classes: self.runtime_classes.len(),
        }
    }
}

impl ClusterView for ClusterState {
    fn kueue_installed(&self) -> bool {
        self.kueue_installed
    }

    fn owner_uid(&self, owner: &OwnerKey) -> Option<&str> {
        self.owners.get(owner).map(String::as_str)
    }

    fn namespace(&self, name: &str) -> Option<&NamespaceInfo> {
        self.namespaces.get(name)
    }

    fn local_queue(&self, namespace: &str, name: &str) -> Option<&LocalQueue> {
        self.local_queues.get(namespace)?.get(name)
    }

    fn local_queues(&self, namespace: &str) -> Box<dyn Iterator<Item = (&str, &LocalQueue)> + '_> {
        match self.local_queues.get(namespace) {
            Some(queues) => Box::new(queues.iter().map(|(name, queue)| (name.as_str(), queue))),
            None => Box::new(std::iter::empty()),
        }
    }

    fn cluster_queue(&self, name: &str) -> Option<&ClusterQueue> {
        self.cluster_queues.get(name)
    }

    fn cluster_queues(&self) -> Box<dyn Iterator<Item = (&str, &ClusterQueue)> + '_> {
        Box::new(self.cluster_queues.iter().map(|(name, queue)| (name.as_str(), queue)))
    }

    fn cohort(&self, name: &str) -> Option<&Cohort> {
        self.cohorts.get(name)
    }

    fn cohorts(&self) -> Box<dyn Iterator<Item = (&str, &Cohort)> + '_> {
        Box::new(self.cohorts.iter().map(|(name, cohort)| (name.as_str(), cohort)))
    }

    fn resource_flavor(&self, name: &str) -> Option<&ResourceFlavor> {
        self.resource_flavors.get(name)
    }

    fn admission_check(&self, name: &str) -> Option<bool> {
        self.admission_checks.get(name).copied()
    }

    fn workload_priority_class(&self, name: &str) -> Option<i32> {
        self.workload_priority_classes.get(name).copied()
    }

    fn workload_priority_classes(&self) -> Box<dyn Iterator<Item = (&str, i32)> + '_> {
        Box::new(self.workload_priority_classes.iter().map(|(name, value)| (name.as_str(), *value)))
    }

    fn priority_class(&self, name: &str) -> Option<&PriorityClass> {
        self.priority_classes.get(name)
    }

    fn priority_classes(&self) -> Box<dyn Iterator<Item = (&str, &PriorityClass)> + '_> {
        Box::new(self.priority_classes.iter().map(|(name, class)| (name.as_str(), class)))
    }

    fn kueue_config(&self) -> &KueueConfig {
        &self.kueue_config
    }
    fn limit_summary(&self, namespace: &str) -> Option<&LimitSummary> {
        self.limit_summaries.get(namespace)
    }
    fn runtime_overhead(&self, class: &str) -> Option<&ResourceAmounts> {
        self.runtime_classes.get(class).filter(|overhead| !overhead.is_empty())
    }

    fn selects_a_managed_namespace(&self, cluster_queue: &str) -> bool {
        self.request_floor(cluster_queue).is_some()
    }

    fn request_floor(&self, cluster_queue: &str) -> Option<&ResourceAmounts> {
        self.served.get_or_init(|| Served::build(&self.served_sources())).floor(cluster_queue)
    }

    fn cohort_root(&self, cluster_queue: &str) -> Option<&str> {
        self.cohort_tree().root(self.cluster_queues.get(cluster_queue)?.cohort.as_deref()?)
    }

    fn accepts_workloads(&self, cluster_queue: &str) -> bool {
        let accepting = self.accepting.get_or_init(|| {
            let names = self.cluster_queues.keys();
            names.filter(|name| super::active::accepts_workloads(self, name)).cloned().collect()
        });
        accepting.contains(cluster_queue)
    }

    fn cohort_tree(&self) -> &CohortTree {
        self.cohort_tree.get_or_init(|| CohortTree::build(&self.cluster_queues, &self.cohorts))
    }

    fn subtree_quota(&self, cohort: &str, flavor: &str, resource: &str) -> Option<i64> {
        self.subtrees().get(flavor)?.get(resource)?.get(cohort).copied()
    }

    fn reclaimers(&self, cluster_queue: &str, flavor: &str, resource: &str) -> Arc<[Reclaimer]> {
        let key = (cluster_queue.to_string(), flavor.to_string(), resource.to_string());
        let memo = &self.reclaimers;
        if let Some(known) = memo.reclaimers.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return known.clone();
        }
        // Worked out without the locks: two threads may both do it, to the same end.
        let pool = |root: &str| {
            let key = (root.to_string(), flavor.to_string(), resource.to_string());
            if let Some(known) = memo.pools.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
                return known.clone();
            }
            let pool = quota::tree_pool(self, root, flavor, resource, |queue| self.accepts_workloads(queue));
            memo.pools.lock().unwrap_or_else(|p| p.into_inner()).insert(key, pool.clone());
            pool
        };
        let found: Arc<[Reclaimer]> = reclaim::reclaimers(self, cluster_queue, flavor, resource, pool).into();
        memo.reclaimers.lock().unwrap_or_else(|p| p.into_inner()).insert(key, found.clone());
        found
    }

    fn nameable_priorities(&self) -> Cow<'_, [PriorityClassRef]> {
        Cow::Borrowed(self.priorities.get_or_init(|| priorities::sorted(self)))
    }

    fn potential_available(&self, cluster_queue: &str, flavor: &str, resource: &str) -> i64 {
        let known = self.potentials().get(cluster_queue).and_then(|f| f.get(flavor)).and_then(|r| r.get(resource));
        known.copied().unwrap_or_else(|| quota::potential_available(self, cluster_queue, flavor, resource))
    }
}

impl ClusterState {
    fn potentials(&self) -> &Potentials {
        self.potentials.get_or_init(|| {
            let mut all = Potentials::new();
            for (name, queue) in &self.cluster_queues {
                let by_flavor = all.entry(name.clone()).or_default();
                for group in &queue.resource_groups {
                    for flavor in &group.flavors {
                        let by_resource = by_flavor.entry(flavor.name.clone()).or_default();
                        for resource in &group.covered_resources {
                            let most = quota::potential_available(self, name, &flavor.name, resource);
                            by_resource.insert(resource.clone(), most);
                        }
                    }
                }
            }
            all
        })
    }

    fn subtrees(&self) -> &Subtrees {
        self.subtrees.get_or_init(|| {
            let tree = self.cohort_tree();
            let mut all = Subtrees::new();
            for (flavor, resource) in quota::flavor_resources(self) {
                let by_cohort = all.entry(flavor.to_string()).or_default().entry(resource.to_string()).or_default();
                for cohort in tree.cohorts().filter(|cohort| !tree.on_cycle(cohort)) {
                    by_cohort.insert(cohort.to_string(), quota::underived_subtree(self, cohort, flavor, resource));
                }
            }
            all
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{objects, state_file};

    #[test]
    fn request_floors_follow_the_limit_ranges_of_the_namespaces_a_queue_selects() {
        let mut view = state_file::parse(
            b"apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {team: a, kubernetes.io/metadata.name: a}}\n---\n\
              apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-system, labels: {team: a, kubernetes.io/metadata.name: kube-system}}\n---\n\
              apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec: {namespaceSelector: {matchLabels: {team: a}}}\n---\n\
              apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: none}\nspec: {namespaceSelector: {matchLabels: {team: z}}}\n",
        )
        .unwrap();
        assert_eq!(view.request_floor("q"), Some(&ResourceAmounts::new()));
        assert_eq!(view.request_floor("none"), None);
        assert!(!view.selects_a_managed_namespace("none"));
        let limit_range = serde_json::json!({
            "metadata": {"name": "l", "namespace": "a"},
            "spec": {"limits": [{"type": "Container", "min": {"memory": "1Gi"}, "default": {"memory": "2Gi"}}]},
        });
        view.apply(objects::decode("v1", "LimitRange", limit_range).unwrap().unwrap());
        let memory = |view: &ClusterState| view.request_floor("q").and_then(|floor| floor.get("memory")).copied();
        // kube-system is not managed: only a's floor counts.
        assert_eq!(memory(&view), Some(crate::vocabulary::quantity::Quantity::parse("1Gi").unwrap()));
        view.remove("LimitRange", "a", "l");
        assert_eq!(memory(&view), None);
    }

    #[test]
    fn before_v0_15_a_queue_for_an_unmanaged_namespace_still_takes_workloads() {
        // Kueue v0.14's ReconcileGenericJob applies managedJobsNamespaceSelector
        // to unlabelled jobs only (ManagedJobsNamespaceSelectorAlwaysRespected
        // off): a labelled job from team-a is managed, so a queue selecting
        // only team-a can admit, and reclaim.
        let documents = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config, namespace: kueue-system}\n\
            data:\n  controller_manager_config.yaml: |\n    apiVersion: config.kueue.x-k8s.io/v1beta1\n    kind: Configuration\n    \
            managedJobsNamespaceSelector: {matchLabels: {kueue-managed: \"true\"}}\n---\n\
            apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {kubernetes.io/metadata.name: team-a}}\n---\n\
            apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\n\
            spec: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: team-a}}}\n";
        let in_release = |release: &str| {
            let version = crate::vocabulary::kueue::KueueVersion::parse(release).unwrap();
            let kueue = KueueInstall { version, ..KueueInstall::default() };
            state_file::parse_for(documents, &kueue).unwrap().selects_a_managed_namespace("q")
        };
        assert!(in_release("v0.14.8"));
        assert!(!in_release("v0.16.6"));
    }

    #[test]
    fn the_served_facts_kept_current_equal_those_worked_out_again() {
        // Namespaces, LimitRanges and ClusterQueues changed one at a time, in
        // a drawn order, each change checked against a fresh derivation.
        let mut next: u64 = 7;
        let mut draw = |n: u64| {
            next = next.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (next >> 33) % n
        };
        let decode = |api_version: &str, kind: &str, value: serde_json::Value| {
            objects::decode(api_version, kind, value).unwrap().unwrap()
        };
        let mut view = ClusterState::default();
        let _ = view.request_floor("none"); // served derived, so kept from here on
        let (mut changed, mut kept_dependents) = (0, 0);
        for _ in 0..600 {
            let namespace = format!("ns-{}", draw(6));
            let team = ["a", "b", "c"][draw(3) as usize];
            match draw(6) {
                0 | 1 => view.apply(decode(
                    "v1",
                    "Namespace",
                    serde_json::json!({"metadata": {"name": namespace, "labels": {"team": team}}}),
                )),
                2 => view.remove("Namespace", "", &namespace),
                3 => {
                    let memory = ["1Gi", "2Gi", "3Gi"][draw(3) as usize];
                    let limits = serde_json::json!({
                        "metadata": {"name": format!("l{}", draw(2)), "namespace": namespace},
                        "spec": {"limits": [{"type": "Container", "min": {"memory": memory}, "defaultRequest": {"memory": memory}}]},
                    });
                    view.apply(decode("v1", "LimitRange", limits));
                }
                4 => view.remove("LimitRange", &namespace, &format!("l{}", draw(2))),
                _ => {
                    let name = format!("q{}", draw(4));
                    if draw(4) == 0 {
                        view.remove("ClusterQueue", "", &name);
                    } else {
                        let selector = match draw(3) {
                            0 => serde_json::json!({}),
                            1 => serde_json::json!({"matchLabels": {"team": team}}),
                            _ => {
                                serde_json::json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["b", "c"]}]})
                            }
                        };
                        let queue =
                            serde_json::json!({"metadata": {"name": name}, "spec": {"namespaceSelector": selector}});
                        view.apply(decode("kueue.x-k8s.io/v1beta2", "ClusterQueue", queue));
                    }
                }
            }
            let accepting_kept = view.accepting.get().is_some();
            let fresh = Served::build(&view.served_sources());
            assert_eq!(view.served.get(), Some(&fresh), "kept current through every change");
            // What rests on them went when they changed: who accepts workloads is as worked out now.
            for queue in ["q0", "q1", "q2", "q3"] {
                assert_eq!(
                    view.accepts_workloads(queue),
                    super::super::active::accepts_workloads(&view, queue),
                    "{queue}"
                );
            }
            changed += 1;
            kept_dependents += usize::from(accepting_kept);
        }
        assert!(
            changed == 600 && kept_dependents > 100,
            "{kept_dependents} of {changed} changes kept who accepts workloads"
        );
    }
}
