//! Whether Kueue holds a ClusterQueue inactive (v0.19.2 `clusterQueue.inactiveReason`
//! and `updateQueueStatus`). An inactive queue admits nothing, but its quota
//! still counts in its cohort (see `quota::Tree::subtree`).

use super::{ClusterQueue, ClusterView, NamespaceSelector, StopPolicy};

/// Why Kueue holds a ClusterQueue inactive (`clusterQueue.inactiveReason`),
/// all causes at once; `None` when it is active.
pub fn inactive_reason(view: &impl ClusterView, queue: &ClusterQueue) -> Option<String> {
    if is_active_queue(view, queue) {
        return None;
    }
    let mut reasons = Vec::new();
    if let NamespaceSelector::Invalid(error) = &queue.namespace_selector {
        reasons.push(format!("has a namespaceSelector Kueue cannot parse ({error})"));
    }
    if queue.stop_policy != StopPolicy::None {
        reasons.push(format!("has stopPolicy {}", queue.stop_policy.as_str()));
    }
    let missing: Vec<&str> = queue.flavor_names().into_iter().filter(|f| view.resource_flavor(f).is_none()).collect();
    if !missing.is_empty() {
        reasons.push(format!("names ResourceFlavor(s) that do not exist: {}", missing.join(", ")));
    }
    let missing: Vec<&str> = checks_where(view, queue, None).collect();
    if !missing.is_empty() {
        reasons.push(format!("names AdmissionCheck(s) that do not exist: {}", missing.join(", ")));
    }
    let inactive: Vec<&str> = checks_where(view, queue, Some(false)).collect();
    if !inactive.is_empty() {
        reasons.push(format!("names AdmissionCheck(s) that are not Active: {}", inactive.join(", ")));
    }
    Some(reasons.join("; "))
}

/// The same fact without building a message, for the per-review path.
pub fn is_active_queue(view: &impl ClusterView, queue: &ClusterQueue) -> bool {
    !matches!(queue.namespace_selector, NamespaceSelector::Invalid(_))
        && queue.stop_policy == StopPolicy::None
        && missing_flavors(view, queue).next().is_none()
        && checks_where(view, queue, None).next().is_none()
        && checks_where(view, queue, Some(false)).next().is_none()
}

/// An object a ClusterQueue names that the view does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingObject<'a> {
    ResourceFlavor(&'a str),
    AdmissionCheck(&'a str),
}

/// A missing object the queue's inactivity rests on alone: the first missing ResourceFlavor or AdmissionCheck when nothing else
/// (stopPolicy, an unparsable selector, an inactive check) keeps it inactive.
/// The server looks it up live before denying, since a flavor applied with
/// the Job may not have reached the watch cache yet.
pub fn only_missing_object<'a>(view: &'a impl ClusterView, queue: &'a ClusterQueue) -> Option<MissingObject<'a>> {
    let otherwise_inactive = matches!(queue.namespace_selector, NamespaceSelector::Invalid(_))
        || queue.stop_policy != StopPolicy::None
        || checks_where(view, queue, Some(false)).next().is_some();
    if otherwise_inactive {
        return None;
    }
    let flavor = missing_flavors(view, queue).next().map(MissingObject::ResourceFlavor);
    flavor.or_else(|| checks_where(view, queue, None).next().map(MissingObject::AdmissionCheck))
}

/// The flavors the queue names that do not exist (repeats included).
fn missing_flavors<'a>(view: &'a impl ClusterView, queue: &'a ClusterQueue) -> impl Iterator<Item = &'a str> {
    let flavors = queue.resource_groups.iter().flat_map(|g| &g.flavors).map(|f| f.name.as_str());
    flavors.filter(|f| view.resource_flavor(f).is_none())
}

/// The queue's AdmissionChecks whose state is `state` (None: missing; Some(active)).
fn checks_where<'a>(
    view: &'a impl ClusterView,
    queue: &'a ClusterQueue,
    state: Option<bool>,
) -> impl Iterator<Item = &'a str> {
    queue.admission_checks.iter().map(String::as_str).filter(move |c| view.admission_check(c) == state)
}

/// Whether anyone could get a workload into ClusterQueue `name` at all: it is
/// active and its namespaceSelector selects some namespace (where a user could
/// create a LocalQueue pointing at it). A queue that cannot take workloads can
/// neither preempt nor reclaim.
pub fn accepts_workloads(view: &impl ClusterView, name: &str) -> bool {
    let Some(queue) = view.cluster_queue(name) else { return false };
    if !is_active_queue(view, queue) {
        return false;
    }
    view.selects_a_managed_namespace(name)
}
