//! The audit: what still matters about an evaluation already in the cluster.
//! It is judged as the validating webhook would judge it created now (the same
//! entry point, [`super::validate_create`]); what is kept depends on its stage:
//! a queued one is reported for anything that refuses it (Kueue would leave it
//! waiting forever), a running one only for being preemptible (admission is
//! behind it), a finished one for nothing. One with no queue bypassed Kueue.

use super::verdict::{Subject, Verdict};
use super::{Setting, working_queues};
use crate::cluster::{Absent, ClusterView};
use crate::config::Selected;
use crate::vocabulary::kueue::{DEFAULT_QUEUE_ANNOTATION, QUEUE_NAME_LABEL};
use crate::vocabulary::reason::{Enforcement, Reason};
use crate::vocabulary::text::join;
use crate::workload::Stage;

/// What the audit reports about one workload: the rule, the message its owner
/// reads (a denial's message, when a denial is the cause), and the config's
/// enforcement of that rule (`Off` rules are never reported).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub reason: Reason,
    pub message: String,
    pub enforcement: Enforcement,
    /// The missing object the finding rests on: a caller with a live cluster
    /// looks it up before reporting, as the server does before denying.
    pub absent: Option<Absent>,
}

/// The finding in a verdict of [`super::validate_create`] on a workload at `stage`.
///
/// A WorkloadPriorityClass deleted after the create is no finding: Kueue
/// resolved it into the Workload when it made one, and resolves it again only
/// when the workload's class label changes (v0.19.2
/// `jobframework.updateWorkloadPriorities`: "resolving only when at least one
/// workload needs a transition"), so the Workload keeps its priority and is
/// admitted as before. (A stored evaluation passed the webhook, so its class
/// existed when Kueue made its Workload.)
pub(super) fn kept(stage: Stage, verdict: Verdict) -> Option<Finding> {
    let Verdict::Deny(denial) = verdict else { return None };
    let matters = match stage {
        _ if denial.reason == Reason::MissingWorkloadPriorityClass => false,
        Stage::Queued => true,
        Stage::Running => denial.reason == Reason::Preemptible,
        Stage::Finished => false,
    };
    let reported = matters && denial.enforcement != Enforcement::Off;
    reported.then_some(Finding {
        reason: denial.reason,
        message: denial.message,
        enforcement: denial.enforcement,
        absent: denial.absent,
    })
}

/// The finding for an evaluation with no queue Kueue reads: Kueue does not
/// manage it. The way out offered is to create it again with a queue, naming
/// only the namespace's LocalQueues it would pass every check with.
pub(super) fn bypass(
    enforcement: Enforcement,
    view: &impl ClusterView,
    subject: Subject<'_>,
    stage: Stage,
    selected: Selected<'_>,
) -> Option<Finding> {
    if enforcement == Enforcement::Off {
        return None;
    }
    let what = match stage {
        Stage::Queued => "is suspended with no one to start it",
        Stage::Running => "runs without quota, outside Kueue",
        Stage::Finished => return None,
    };
    let mut message = format!("{subject} has no {QUEUE_NAME_LABEL} label: Kueue does not manage it, and it {what}.");
    let queues = working_queues(view, subject, "");
    match queues.as_slice() {
        [] => message.push_str(&format!(
            " No LocalQueue in namespace '{ns}' would admit it as it is; ask the namespace owner for one, and to \
             annotate the namespace with {DEFAULT_QUEUE_ANNOTATION}.",
            ns = subject.namespace
        )),
        queues => message.push_str(&format!(
            " To fix: create it again with label {QUEUE_NAME_LABEL} set to a LocalQueue that would admit it ({}).",
            join(queues)
        )),
    }
    message.push_str(&selected.submitter_hint(&[Setting::Queue]));
    Some(Finding { reason: Reason::BypassesKueue, message, enforcement, absent: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::rules::fixtures::{evalhub_job, evalhub_job_with, job_subject, seed_state};
    use crate::rules::{Verdict, audit_existing, validate_create};

    /// Every stage of a workload refused for a missing LocalQueue, one Kueue
    /// could preempt, and one with no queue, under the defaults.
    #[test]
    fn what_is_reported_depends_on_the_stage() {
        let (config, view) = (Config::default(), seed_state());
        let missing = evalhub_job("team-a-namespace", Some("retired-queue"));
        let Verdict::Deny(denial) = validate_create(&config, &view, job_subject(&missing)) else { panic!() };
        let found = audit_existing(&config, &view, job_subject(&missing), Stage::Queued).unwrap();
        assert_eq!(
            (found.reason, &found.message),
            (Reason::MissingLocalQueue, &denial.message),
            "the denial, as it is"
        );
        assert_eq!(found.absent, denial.absent, "confirmed live before it is reported");
        assert_eq!(audit_existing(&config, &view, job_subject(&missing), Stage::Running), None, "admitted already");
        assert_eq!(audit_existing(&config, &view, job_subject(&missing), Stage::Finished), None);

        let exposed = evalhub_job_with(
            "team-a-namespace",
            Some("shared-queue"),
            &[("kueue.x-k8s.io/priority-class", "experimental")],
        );
        for stage in [Stage::Queued, Stage::Running] {
            let found = audit_existing(&config, &view, job_subject(&exposed), stage).unwrap();
            assert_eq!(found.reason, Reason::Preemptible, "{stage:?}");
        }
        assert_eq!(audit_existing(&config, &view, job_subject(&exposed), Stage::Finished), None);

        // Its class deleted since: Kueue keeps the priority its Workload got.
        let declassed = evalhub_job_with(
            "team-a-namespace",
            Some("eval-queue"),
            &[("kueue.x-k8s.io/priority-class", "deleted-since")],
        );
        let Verdict::Deny(denial) = validate_create(&config, &view, job_subject(&declassed)) else { panic!() };
        assert_eq!(denial.reason, Reason::MissingWorkloadPriorityClass, "a create is refused");
        assert_eq!(
            audit_existing(&config, &view, job_subject(&declassed), Stage::Queued),
            None,
            "a stored one waits no longer"
        );

        let admitted = evalhub_job("team-a-namespace", Some("eval-queue"));
        for stage in [Stage::Queued, Stage::Running, Stage::Finished] {
            assert_eq!(audit_existing(&config, &view, job_subject(&admitted), stage), None, "{stage:?}");
        }
    }

    #[test]
    fn one_with_no_queue_bypassed_kueue_and_is_offered_only_queues_that_work() {
        let (config, view) = (Config::default(), seed_state());
        // team-a-namespace has a default queue now; this one was created without it.
        let unqueued = evalhub_job("team-a-namespace", None);
        let found = audit_existing(&config, &view, job_subject(&unqueued), Stage::Running).unwrap();
        assert_eq!((found.reason, found.enforcement), (Reason::BypassesKueue, Enforcement::Warn));
        assert!(found.message.contains("runs without quota, outside Kueue"), "{}", found.message);
        let offered = found.message.split("would admit it (").nth(1).unwrap().split(')').next().unwrap();
        assert!(!offered.is_empty() && !offered.contains("shared-queue"), "only queues that pass: {offered}");
        let queued = audit_existing(&config, &view, job_subject(&unqueued), Stage::Queued).unwrap();
        assert!(queued.message.contains("suspended with no one to start it"), "{}", queued.message);
        assert_eq!(audit_existing(&config, &view, job_subject(&unqueued), Stage::Finished), None);

        let nowhere = evalhub_job("plain", None);
        let found = audit_existing(&config, &view, job_subject(&nowhere), Stage::Running).unwrap();
        assert!(found.message.contains("No LocalQueue in namespace 'plain'"), "{}", found.message);
    }

    #[test]
    fn a_rule_set_off_is_never_reported() {
        let config = Config::parse("enforcement: {bypasses-kueue: Off, missing-local-queue: Warn}").unwrap().config;
        let view = seed_state();
        let unqueued = evalhub_job("plain", None);
        assert_eq!(audit_existing(&config, &view, job_subject(&unqueued), Stage::Running), None);
        let missing = evalhub_job("team-a-namespace", Some("retired-queue"));
        let found = audit_existing(&config, &view, job_subject(&missing), Stage::Queued).unwrap();
        assert_eq!(found.enforcement, Enforcement::Warn, "a warned rule is reported, as a warning");
        let config = Config::parse("enforcement: {missing-local-queue: Off}").unwrap().config;
        assert_eq!(audit_existing(&config, &view, job_subject(&missing), Stage::Queued), None);
    }
}
