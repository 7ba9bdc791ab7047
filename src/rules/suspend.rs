//! Starting suspended, and staying suspended until Kueue says otherwise.

use super::verdict::{Denial, Subject};
use crate::config::Config;
use crate::vocabulary::reason::Reason;
use crate::workload::Workload;

/// A queued workload must be created suspended: Kueue's own webhook may have run
/// before our label was added (configurations run in name order), and an
/// unsuspended Job starts pods before Kueue admits it.
pub fn must_start_suspended(queue: Option<&str>) -> bool {
    queue.is_some()
}

/// Only Kueue's controller may flip `spec.suspend` from true to false on a queued
/// evaluation; anyone else would start it outside Kueue's quota.
pub fn check_unsuspend(config: &Config, subject: Subject<'_>, old: &Workload, username: &str) -> Result<(), Denial> {
    let new = subject.workload;
    let unsuspended = old.is_suspended() && !new.is_suspended();
    let Some(queue) = new.queue_name_read_by(config.kueue.version) else {
        return Ok(());
    };
    if !unsuspended || config.is_kueue_controller(username) {
        return Ok(());
    }
    Err(Denial::new(
        Reason::UnsuspendNotAllowed,
        format!(
            "{subject} is queued in LocalQueue '{queue}': only Kueue ({}) may set spec.suspend to false, and {username} \
             tried. Kueue starts it when the queue admits it; see `kubectl get workloads -n {}` for its place.",
            crate::vocabulary::text::join(config.kueue.controller_usernames()),
            subject.namespace
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::fixtures::*;

    fn with_suspend(mut workload: Workload, suspend: Option<bool>) -> Workload {
        workload.spec.get_or_insert_with(Default::default).suspend = suspend;
        workload
    }

    #[test]
    fn only_kueue_unsuspends_a_queued_workload() {
        let config = Config::default();
        let old = with_suspend(evalhub_job("team-a-namespace", Some("eval-queue")), Some(true));
        let new = with_suspend(evalhub_job("team-a-namespace", Some("eval-queue")), Some(false));
        let denial = check_unsuspend(&config, job_subject(&new), &old, "alice").unwrap_err();
        assert_eq!(denial.reason, Reason::UnsuspendNotAllowed);
        assert!(denial.message.contains("alice tried"), "{}", denial.message);
        assert!(
            check_unsuspend(
                &config,
                job_subject(&new),
                &old,
                "system:serviceaccount:kueue-system:kueue-controller-manager"
            )
            .is_ok()
        );

        let unset = with_suspend(evalhub_job("team-a-namespace", Some("eval-queue")), None);
        assert!(
            check_unsuspend(&config, job_subject(&unset), &old, "alice").is_err(),
            "removing suspend unsuspends too"
        );
        assert!(check_unsuspend(&config, job_subject(&old), &old, "alice").is_ok(), "no change");
        // Kueue admitted it and it runs: a user's later edits (a label, a finalizer) are theirs to make.
        let relabelled = new.with_label("team", Some("a"));
        assert!(check_unsuspend(&config, job_subject(&relabelled), &new, "alice").is_ok(), "running, edited by alice");
        assert!(check_unsuspend(&config, job_subject(&old), &new, "alice").is_ok(), "suspending is always allowed");
    }

    #[test]
    fn unqueued_workloads_are_not_guarded() {
        let config = Config::default();
        let old = with_suspend(evalhub_job("plain", None), Some(true));
        let new = with_suspend(evalhub_job("plain", None), Some(false));
        assert!(check_unsuspend(&config, job_subject(&new), &old, "alice").is_ok());
    }
}
