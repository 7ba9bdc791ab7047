//! Guards on UPDATE of an evaluation: nobody takes a queued workload out of
//! Kueue's hands, and a changed queue or priority is checked like a new one.
//!
//! Fields the update leaves alone are not re-checked: a LocalQueue deleted after
//! a Job was created must not wedge that Job's later updates (finalizers, Kueue's
//! own admission writes).

use super::suspend;
use super::verdict::{Denial, Subject};
use crate::cluster::ClusterView;
use crate::config::Config;
use crate::vocabulary::kueue::QUEUE_NAME_LABEL;
use crate::vocabulary::reason::Reason;
use crate::workload::Workload;

/// Checks an update of an evaluation; `Ok` carries warnings and whether anything
/// the policy reads changed.
pub fn check_update(
    config: &Config,
    view: &impl ClusterView,
    subject: Subject<'_>,
    old: &Workload,
    username: &str,
) -> Result<(Vec<String>, bool), Denial> {
    let new = subject.workload;
    let version = view.kueue_config().version;
    let (old_queue, new_queue) = (old.queue_name_read_by(version), new.queue_name_read_by(version));
    if let (Some(was), None) = (old_queue, new_queue) {
        // Before Kueue v0.15 the queue may have come from the deprecated annotation alone.
        let (removed, keep) = if old.queue_name().is_some() {
            ("label", "Keep the label")
        } else {
            ("annotation", "Keep the annotation")
        };
        return Err(Denial::new(
            Reason::QueueLabelRemoved,
            format!(
                "{subject}: removing {removed} {QUEUE_NAME_LABEL} (was '{was}') would let this evaluation run outside \
                 Kueue. {keep}; to run it differently, delete and recreate it."
            ),
        ));
    }
    if old_queue != new_queue && !old.is_suspended() {
        return Err(Denial::new(
            Reason::QueueChangedWhileRunning,
            format!(
                "{subject}: label {QUEUE_NAME_LABEL} cannot change from '{}' to '{}' while the workload is not \
                 suspended. Delete and recreate it in the other queue.",
                old_queue.unwrap_or(""),
                new_queue.unwrap_or("")
            ),
        ));
    }
    suspend::check_unsuspend(config, subject, old, username)?;

    let queue_changed = old_queue != new_queue;
    let priority_changed = old.priority_class_label() != new.priority_class_label()
        || old.pod_priority_classes() != new.pod_priority_classes();
    let mut warnings = Vec::new();
    if queue_changed || priority_changed {
        warnings = super::check_queued(view, subject)?;
    }
    Ok((warnings, queue_changed || priority_changed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::fixtures::*;

    fn suspended(mut workload: Workload, suspend: bool) -> Workload {
        workload.spec.get_or_insert_with(Default::default).suspend = Some(suspend);
        workload
    }

    fn relabel(mut workload: Workload, key: &str, value: Option<&str>) -> Workload {
        let labels = workload.metadata.labels.get_or_insert_with(Default::default);
        match value {
            Some(value) => labels.insert(key.into(), value.into()),
            None => labels.remove(key),
        };
        workload
    }

    #[test]
    fn removing_the_queue_label_is_refused() {
        let (config, state) = (Config::default(), seed_state());
        let old = suspended(evalhub_job("team-a-namespace", Some("eval-queue")), true);
        let new = relabel(old.clone(), QUEUE_NAME_LABEL, None);
        let denial = check_update(&config, &state, job_subject(&new), &old, "alice").unwrap_err();
        assert_eq!(denial.reason, Reason::QueueLabelRemoved);
        assert!(denial.message.contains("removing label kueue.x-k8s.io/queue-name (was 'eval-queue')"));

        // Before v0.15 a job queued by the deprecated annotation alone: its removal is named as such.
        let v0_14 = state_of_release("v0.14.8", &[crate::rules::fixtures::SEED_STATE]);
        let annotated = testkit::JobBuilder::evalhub("team-a-namespace").annotation(QUEUE_NAME_LABEL, "eval-queue");
        let mut cleared = annotated.clone().suspend(true).build();
        cleared["metadata"]["annotations"].as_object_mut().unwrap().remove(QUEUE_NAME_LABEL);
        let annotated: Workload = serde_json::from_value(annotated.suspend(true).build()).unwrap();
        let cleared: Workload = serde_json::from_value(cleared).unwrap();
        let denial = check_update(&config, &v0_14, job_subject(&cleared), &annotated, "alice").unwrap_err();
        assert_eq!(denial.reason, Reason::QueueLabelRemoved);
        assert!(denial.message.contains("removing annotation kueue.x-k8s.io/queue-name (was 'eval-queue')"));
        assert!(denial.message.contains("Keep the annotation;"), "{}", denial.message);
    }

    #[test]
    fn the_queue_may_change_only_while_suspended_and_only_to_a_queue_that_exists() {
        let (config, state) = (Config::default(), seed_state());
        let running = suspended(evalhub_job("team-a-namespace", Some("eval-queue")), false);
        let moved = relabel(running.clone(), QUEUE_NAME_LABEL, Some("held-queue"));
        let denial = check_update(&config, &state, job_subject(&moved), &running, "alice").unwrap_err();
        assert_eq!(denial.reason, Reason::QueueChangedWhileRunning);

        let waiting = suspended(evalhub_job("team-a-namespace", Some("eval-queue")), true);
        let to_held = relabel(waiting.clone(), QUEUE_NAME_LABEL, Some("held-queue"));
        let denial = check_update(&config, &state, job_subject(&to_held), &waiting, "alice").unwrap_err();
        assert_eq!(denial.reason, Reason::LocalQueueStopped, "a held queue admits nothing: {}", denial.message);
        let same_queue = relabel(waiting.clone(), QUEUE_NAME_LABEL, Some("eval-queue"));
        let (_, changed) = check_update(&config, &state, job_subject(&same_queue), &waiting, "alice").unwrap();
        assert!(!changed, "the same queue again is no change");
        let to_missing = relabel(waiting.clone(), QUEUE_NAME_LABEL, Some("nope"));
        let denial = check_update(&config, &state, job_subject(&to_missing), &waiting, "alice").unwrap_err();
        assert_eq!(denial.reason, Reason::MissingLocalQueue);
        let to_preemptive = relabel(waiting.clone(), QUEUE_NAME_LABEL, Some("shared-queue"));
        let denial = check_update(&config, &state, job_subject(&to_preemptive), &waiting, "alice").unwrap_err();
        assert_eq!(denial.reason, Reason::Preemptible);
    }

    #[test]
    fn switching_to_a_preemptible_or_missing_priority_is_refused() {
        let (config, state) = (Config::default(), seed_state());
        let old = suspended(
            evalhub_job_with(
                "team-a-namespace",
                Some("shared-queue"),
                &[("kueue.x-k8s.io/priority-class", "production")],
            ),
            true,
        );
        let lowered = relabel(old.clone(), "kueue.x-k8s.io/priority-class", Some("experimental"));
        assert_eq!(
            check_update(&config, &state, job_subject(&lowered), &old, "alice").unwrap_err().reason,
            Reason::Preemptible
        );
        let missing = relabel(old.clone(), "kueue.x-k8s.io/priority-class", Some("urgent"));
        assert_eq!(
            check_update(&config, &state, job_subject(&missing), &old, "alice").unwrap_err().reason,
            Reason::MissingWorkloadPriorityClass
        );
        // system-cluster-critical outranks every class a WorkloadPriorityClass gives on a LowerPriority queue.
        let raised = relabel(old.clone(), "kueue.x-k8s.io/priority-class", Some("aiperf-high"));
        assert_eq!(
            check_update(&config, &state, job_subject(&raised), &old, "alice").unwrap_err().reason,
            Reason::Preemptible
        );
        let safe = relabel(raised, QUEUE_NAME_LABEL, Some("eval-queue"));
        assert!(check_update(&config, &state, job_subject(&safe), &old, "alice").is_ok());
    }

    #[test]
    fn a_running_job_edited_in_its_own_queue_is_no_queue_change() {
        let (config, state) = (Config::default(), seed_state());
        let running = suspended(evalhub_job("team-a-namespace", Some("eval-queue")), false);
        let edited = relabel(running.clone(), "team", Some("a"));
        assert_eq!(check_update(&config, &state, job_subject(&edited), &running, "alice"), Ok((Vec::new(), false)));
    }

    #[test]
    fn a_changed_queue_or_priority_that_passes_is_checked_and_reported_changed() {
        let (config, state) = (Config::default(), seed_state());
        let old = suspended(
            evalhub_job_with(
                "team-a-namespace",
                Some("eval-queue"),
                &[("kueue.x-k8s.io/priority-class", "production")],
            ),
            true,
        );
        let lowered = relabel(old.clone(), "kueue.x-k8s.io/priority-class", Some("routine"));
        let (warnings, changed) = check_update(&config, &state, job_subject(&lowered), &old, "alice").unwrap();
        assert!(changed, "a priority change is a change");
        assert_eq!(warnings.len(), 1, "checked like a new one: {warnings:?}");
        assert!(warnings[0].starts_with("Kueue's waitForPodsReady is on"), "{warnings:?}");

        let held = relabel(old.clone(), QUEUE_NAME_LABEL, Some("held-queue"));
        let (warnings, changed) = check_update(&config, &state, job_subject(&old), &held, "alice").unwrap();
        assert!(changed, "a queue change is a change");
        assert_eq!(warnings.len(), 1, "checked like a new one: {warnings:?}");
    }

    #[test]
    fn unrelated_updates_are_not_rechecked() {
        let (config, state) = (Config::default(), seed_state());
        // The queue was deleted after creation: a finalizer edit must still pass.
        let old = suspended(evalhub_job("team-a-namespace", Some("deleted-queue")), true);
        let new = relabel(old.clone(), "team", Some("a"));
        let (warnings, changed) = check_update(&config, &state, job_subject(&new), &old, "alice").unwrap();
        assert!(warnings.is_empty() && !changed);
        // Kueue's own unsuspend is fine.
        let admitted = suspended(old.clone(), false);
        assert!(
            check_update(
                &config,
                &state,
                job_subject(&admitted),
                &old,
                "system:serviceaccount:kueue-system:kueue-controller-manager"
            )
            .is_ok()
        );
    }
}
