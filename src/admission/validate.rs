//! The validating webhook: on CREATE and UPDATE, refuse an evaluation that would
//! wait forever or could be preempted; on UPDATE, guard the queue and suspend.

use super::{Decision, Operation, Request, target};
use crate::cluster::ClusterView;
use crate::config::Config;
use crate::error::Error;
use crate::rules::{self, Reason, update};

pub fn validate(config: &Config, view: &impl ClusterView, request: &Request) -> Result<Decision, Error> {
    let target = match target(config, request)? {
        Ok(target) => target,
        Err(reason) => return Ok(Decision::allow(reason)),
    };
    let result = match (request.operation, target.old) {
        (Operation::Update, Some(old)) => {
            update::check_update(config, view, target.subject, old, &request.user_info.username).map(
                |(warnings, changed)| {
                    let reason = if changed { Reason::Checked } else { Reason::UpdateUnchanged };
                    Decision::allow_with_warnings(reason, warnings)
                },
            )
        }
        _ => rules::check_queued(view, target.subject)
            .map(|warnings| Decision::allow_with_warnings(Reason::Checked, warnings)),
    };
    Ok(result.unwrap_or_else(Decision::deny))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::request::decode;
    use crate::admission::review_for_manifest;
    use crate::rules::fixtures::*;
    use crate::workload::WorkloadKind;
    use serde_json::{Value, json};

    fn validate_create(object: &Value) -> Decision {
        let kind = if object["kind"] == "JobSet" { WorkloadKind::JobSet } else { WorkloadKind::Job };
        let review = review_for_manifest(kind, object["metadata"]["namespace"].as_str().unwrap(), object);
        validate(&Config::default(), &seed_state(), &decode(&serde_json::to_vec(&review).unwrap()).unwrap()).unwrap()
    }

    fn validate_update(old: &Value, new: &Value, username: &str) -> Decision {
        let mut review = review_for_manifest(WorkloadKind::Job, "team-a-namespace", new);
        review["request"]["operation"] = json!("UPDATE");
        review["request"]["oldObject"] = old.clone();
        review["request"]["userInfo"]["username"] = json!(username);
        validate(&Config::default(), &seed_state(), &decode(&serde_json::to_vec(&review).unwrap()).unwrap()).unwrap()
    }

    #[test]
    fn a_queued_evaluation_on_a_safe_queue_is_allowed() {
        let decision = validate_create(&evalhub_job_value(
            "team-a-namespace",
            &[("kueue.x-k8s.io/queue-name", "eval-queue")],
            None,
        ));
        assert!(decision.allowed);
        assert_eq!(decision.reason, Reason::Checked);
        // Kueue's default waitForPodsReady can still evict it: said, not refused.
        assert_eq!(decision.warnings.len(), 1, "{:?}", decision.warnings);
        assert!(decision.warnings[0].starts_with("Kueue's waitForPodsReady is on (timeout 30m0s)"));
    }

    #[test]
    fn each_denial_on_create() {
        let cases: [(Value, Reason); 4] = [
            (
                evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", "eval-queu")], None),
                Reason::MissingLocalQueue,
            ),
            (
                evalhub_job_value(
                    "team-a-namespace",
                    &[("kueue.x-k8s.io/queue-name", "eval-queue"), ("kueue.x-k8s.io/priority-class", "urgent")],
                    None,
                ),
                Reason::MissingWorkloadPriorityClass,
            ),
            (
                evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", "eval-queue")], Some("nope")),
                Reason::MissingPriorityClass,
            ),
            (
                evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", "shared-queue")], None),
                Reason::Preemptible,
            ),
        ];
        for (object, reason) in cases {
            let decision = validate_create(&object);
            assert!(!decision.allowed, "{reason:?}");
            assert_eq!(decision.reason, reason);
        }
    }

    #[test]
    fn denials_for_missing_objects_ask_the_server_to_confirm_them() {
        use crate::rules::Absent;
        let queue = [("kueue.x-k8s.io/queue-name", "new-queue")];
        let class = [("kueue.x-k8s.io/queue-name", "eval-queue"), ("kueue.x-k8s.io/priority-class", "new-class")];
        let eval_queue = [("kueue.x-k8s.io/queue-name", "eval-queue")];
        let cases = [
            (evalhub_job_value("team-a-namespace", &queue, None), Absent::LocalQueue("new-queue".into())),
            (evalhub_job_value("team-a-namespace", &class, None), Absent::WorkloadPriorityClass("new-class".into())),
            (
                evalhub_job_value("team-a-namespace", &eval_queue, Some("new-pc")),
                Absent::PriorityClass("new-pc".into()),
            ),
        ];
        for (object, absent) in cases {
            assert_eq!(validate_create(&object).unconfirmed, Some(absent));
        }
        let preemptible = [("kueue.x-k8s.io/queue-name", "shared-queue")];
        let decision = validate_create(&evalhub_job_value("team-a-namespace", &preemptible, None));
        assert_eq!((decision.allowed, decision.unconfirmed), (false, None), "nothing missing, nothing to confirm");
    }

    #[test]
    fn the_namespace_default_is_named_when_it_is_the_cause() {
        let state = state_with(&[
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n  annotations: {kueue.x-k8s.io/default-queue-name: gone}\n",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: localqueues.kueue.x-k8s.io}\n",
        ]);
        let job = evalhub_job("ns", Some("gone"));
        let denial = rules::check_queued(&state, job_subject(&job)).unwrap_err();
        assert!(
            denial.message.contains("(namespace annotation kueue.x-k8s.io/default-queue-name)"),
            "{}",
            denial.message
        );
    }

    #[test]
    fn held_and_orphaned_queues_are_refused_with_a_queue_that_works() {
        for (queue, reason) in
            [("held-queue", Reason::LocalQueueStopped), ("orphan-queue", Reason::ClusterQueueMissing)]
        {
            let decision =
                validate_create(&evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", queue)], None));
            assert_eq!((decision.allowed, decision.reason), (false, reason), "{queue}");
            let message = decision.message.unwrap();
            assert!(message.ends_with("a LocalQueue that would admit it (eval-queue)."), "{message}");
        }
    }

    #[test]
    fn updates_go_through_the_guards() {
        let mut old = evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", "eval-queue")], None);
        old["spec"]["suspend"] = json!(true);
        let mut new = old.clone();
        new["spec"]["suspend"] = json!(false);
        assert_eq!(validate_update(&old, &new, "alice").reason, Reason::UnsuspendNotAllowed);
        assert!(validate_update(&old, &new, "system:serviceaccount:kueue-system:kueue-controller-manager").allowed);
        // Dropping the selecting labels does not escape the guards.
        new["metadata"]["labels"] = json!({"kueue.x-k8s.io/queue-name": "eval-queue"});
        assert_eq!(validate_update(&old, &new, "alice").reason, Reason::UnsuspendNotAllowed);
        // A deletion in progress is never blocked.
        new["metadata"]["deletionTimestamp"] = json!("2026-12-02T10:00:00Z");
        assert!(validate_update(&old, &new, "alice").allowed);
    }
}
