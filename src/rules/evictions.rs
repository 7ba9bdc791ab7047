//! Evictions no admission webhook can prevent, said as warnings.

use crate::cluster::ClusterView;
use crate::vocabulary::go_duration::go_duration;
use crate::vocabulary::text::join;

use super::verdict::Subject;

/// Evictions no admission webhook can prevent, said when they would restart a
/// non-checkpointing evaluation from zero: Kueue's waitForPodsReady evicts and
/// requeues an admitted workload whose pods are not all ready in time, and an
/// admission check may ask for a retry (the Workload is evicted and requeued).
pub(super) fn evictions_warnings(view: &impl ClusterView, subject: Subject<'_>, local_queue: &str) -> Vec<String> {
    let mut warnings = Vec::new();
    if subject.workload.is_checkpointing() {
        return warnings;
    }
    if let Some(ready) = view.kueue_config().effective_wait_for_pods_ready() {
        warnings.push(format!(
            "Kueue's waitForPodsReady is on (timeout {}): if this evaluation's pods are not all ready in time, Kueue \
             evicts and requeues it, and it restarts from zero.",
            go_duration(ready.timeout)
        ));
    }
    let checks = view
        .local_queue(subject.namespace, local_queue)
        .and_then(|q| view.cluster_queue(&q.cluster_queue))
        .map(|cq| cq.admission_checks.clone())
        .unwrap_or_default();
    if !checks.is_empty() {
        warnings.push(format!(
            "its ClusterQueue has AdmissionCheck(s) {}: a check that asks for a retry makes Kueue evict and requeue \
             it, and it restarts from zero.",
            join(&checks)
        ));
    }
    warnings
}
