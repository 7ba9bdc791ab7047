//! The two webhooks through `decide` and `review`: what reaches the policy,
//! and what goes back to the API server.

use crate::admission::{Decision, Webhook, decide, request::decode};
use crate::cluster::ClusterView;
use crate::config::Config;
use crate::rules::{self, Reason};

fn mutate(config: &Config, view: &impl ClusterView, request: &crate::admission::Request) -> Decision {
    decide(Webhook::Mutate, request, config, view).unwrap()
}

fn validate(config: &Config, view: &impl ClusterView, request: &crate::admission::Request) -> Decision {
    decide(Webhook::Validate, request, config, view).unwrap()
}

mod mutating {
    use super::*;
    use crate::admission::{ReviewBuilder, review};
    use crate::rules::fixtures::*;
    use base64::Engine;
    use serde_json::{Value, json};

    fn create_review(object: &Value) -> Vec<u8> {
        ReviewBuilder::create(ReviewBuilder::kind_of(object), object).to_bytes()
    }

    fn response(body: &[u8]) -> Value {
        serde_json::from_slice::<Value>(body).unwrap()["response"].clone()
    }

    fn decoded_patch(response: &Value) -> Value {
        let bytes = base64::engine::general_purpose::STANDARD.decode(response["patch"].as_str().unwrap()).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn an_evalhub_job_gets_the_namespace_default_and_suspend() {
        let (config, state) = (Config::default(), seed_state());
        let job = evalhub_job_value("team-a-namespace", &[], None);
        let outcome = review(Webhook::Mutate, &create_review(&job), &config, &state).unwrap();
        let response = response(&outcome.body);
        assert_eq!(response["allowed"], true);
        assert_eq!(response["patchType"], "JSONPatch");
        assert_eq!(response["uid"], "00000000-0000-0000-0000-000000000000");
        assert_eq!(
            decoded_patch(&response),
            json!([{"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "eval-queue"},
                   {"op": "add", "path": "/spec/suspend", "value": true}])
        );
        assert_eq!(response["auditAnnotations"], json!({"decision": "patched", "reason": "queued"}));
    }

    #[test]
    fn reviewing_the_mutated_object_again_gives_no_patch() {
        let (config, state) = (Config::default(), seed_state());
        let mut job = evalhub_job_value("team-a-namespace", &[], None);
        let first = response(&review(Webhook::Mutate, &create_review(&job), &config, &state).unwrap().body);
        let patch: json_patch::Patch = serde_json::from_value(decoded_patch(&first)).unwrap();
        json_patch::patch(&mut job, &patch).unwrap();
        let second = response(&review(Webhook::Mutate, &create_review(&job), &config, &state).unwrap().body);
        assert_eq!(second["allowed"], true);
        assert!(second.get("patch").is_none() && second.get("patchType").is_none(), "{second}");
        assert_eq!(second["auditAnnotations"]["reason"], "already-queued");
    }

    #[test]
    fn a_labelled_job_is_only_suspended_and_a_suspended_aiperf_jobset_is_untouched() {
        let (config, state) = (Config::default(), seed_state());
        let job = evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", "shared-queue")], None);
        let response = response(&review(Webhook::Mutate, &create_review(&job), &config, &state).unwrap().body);
        assert_eq!(decoded_patch(&response), json!([{"op": "add", "path": "/spec/suspend", "value": true}]));

        // AIPerf labels and suspends its JobSets itself when it resolved a queue.
        let jobset =
            aiperf_jobset_value("my-benchmarks", Some("aiperf-queue"), &[("controller", None), ("workers", None)]);
        let decision = mutate(&config, &state, &decode(&create_review(&jobset)).unwrap());
        assert_eq!(decision.reason, Reason::AlreadyQueued);
        // Without a queue it gets the namespace default, like a Job.
        let jobset = aiperf_jobset_value("my-benchmarks", None, &[("controller", None), ("workers", None)]);
        let decision = mutate(&config, &state, &decode(&create_review(&jobset)).unwrap());
        assert_eq!(decision.reason, Reason::Queued);
        assert_eq!(serde_json::to_value(&decision.patch).unwrap()[0]["value"], "aiperf-queue");
    }

    #[test]
    fn no_default_anywhere_means_a_bypass_warning_and_no_patch() {
        let (config, state) = (Config::default(), seed_state());
        let job = evalhub_job_value("plain", &[], None);
        let response = response(&review(Webhook::Mutate, &create_review(&job), &config, &state).unwrap().body);
        assert_eq!(response["allowed"], true);
        assert!(response.get("patch").is_none());
        assert_eq!(
            response["warnings"][0],
            "no kueue.x-k8s.io/queue-name label and namespace 'plain' has no default queue: this Job bypasses Kueue \
             and runs without quota. Set the label, or annotate the namespace with kueue.x-k8s.io/default-queue-name. \
             EvalHub users: set queue.name in the evaluation request."
        );
        assert!(
            response["warnings"][0].as_str().unwrap().chars().count() <= 512,
            "short enough to read beside kubectl's output"
        );
    }

    #[test]
    fn the_default_local_queue_is_used_when_there_is_no_annotation() {
        let (config, state) = (Config::default(), seed_state());
        let job = evalhub_job_value("defaulted", &[], None);
        let response = response(&review(Webhook::Mutate, &create_review(&job), &config, &state).unwrap().body);
        assert_eq!(decoded_patch(&response)[0]["value"], "default");
    }

    #[test]
    fn non_evaluations_owned_jobs_and_updates_are_left_alone() {
        let (config, state) = (Config::default(), seed_state());
        let mut other = evalhub_job_value("team-a-namespace", &[], None);
        other["metadata"]["labels"] = json!({"app": "web"});
        let decision = mutate(&config, &state, &decode(&create_review(&other)).unwrap());
        assert_eq!((decision.reason, decision.patch.0.len(), decision.warnings.len()), (Reason::NotAnEvaluation, 0, 0));

        let mut owned = evalhub_job_value("team-a-namespace", &[], None);
        owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "1", "controller": true}]);
        let decision = mutate(&config, &state, &decode(&create_review(&owned)).unwrap());
        assert_eq!((decision.reason, decision.allowed), (Reason::UnverifiedOwner, false), "no JobSet 'js' in the view");
        assert!(decision.unconfirmed.is_some(), "the server looks the owner up before it refuses");
        let mut with_owner = state.clone();
        with_owner.apply(crate::cluster::ClusterObject::Owner {
            key: crate::cluster::OwnerKey {
                api_group: "jobset.x-k8s.io".into(),
                kind: "JobSet".into(),
                namespace: "team-a-namespace".into(),
                name: "js".into(),
            },
            uid: "1".into(),
        });
        let decision = mutate(&config, &with_owner, &decode(&create_review(&owned)).unwrap());
        assert_eq!(decision.reason, Reason::OwnedByKueueWorkload);

        let all = Config::parse("selection: {allWorkloads: true}").unwrap();
        let decision = mutate(&all, &state, &decode(&create_review(&other)).unwrap());
        assert_eq!(decision.reason, Reason::Queued, "allWorkloads applies the policy to every Job");
    }
}

mod validating {
    use super::*;
    use crate::admission::ReviewBuilder;
    use crate::rules::fixtures::*;
    use crate::workload::WorkloadKind;
    use serde_json::{Value, json};

    fn validate_create(object: &Value) -> Decision {
        let review = ReviewBuilder::create(ReviewBuilder::kind_of(object), object);
        validate(&Config::default(), &seed_state(), &decode(&review.to_bytes()).unwrap())
    }

    fn validate_update(old: &Value, new: &Value, username: &str) -> Decision {
        let review = ReviewBuilder::update(WorkloadKind::Job, old, new).user(username);
        validate(&Config::default(), &seed_state(), &decode(&review.to_bytes()).unwrap())
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
            assert!(
                message.ends_with(
                    "a LocalQueue that would admit it (eval-queue). EvalHub users: set queue.name in the evaluation request."
                ),
                "{message}"
            );
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

/// The config's say: per-rule enforcement, the submitters' own words, and the
/// selectors by controller owner.
mod policy_config {
    use super::*;
    use crate::admission::ReviewBuilder;
    use crate::rules::fixtures::*;
    use serde_json::{Value, json};

    fn request(object: &Value) -> crate::admission::Request {
        decode(&ReviewBuilder::create(ReviewBuilder::kind_of(object), object).to_bytes()).unwrap()
    }

    fn missing_queue_job() -> Value {
        evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", "no-such-queue")], None)
    }

    #[test]
    fn a_warned_rule_lets_the_workload_through_with_its_message() {
        let state = seed_state();
        let denied = validate(&Config::default(), &state, &request(&missing_queue_job()));
        assert_eq!((denied.allowed, denied.enforcement_label()), (false, "Deny"));
        let warn = Config::parse("enforcement: {missing-local-queue: Warn}").unwrap();
        let warned = validate(&warn, &state, &request(&missing_queue_job()));
        assert_eq!(
            (warned.allowed, warned.reason, warned.enforcement_label()),
            (true, Reason::MissingLocalQueue, "Warn")
        );
        assert_eq!(warned.warnings, vec![denied.message.clone().unwrap()]);
        assert!(warned.unconfirmed.is_some(), "a warning about a missing object is confirmed live too");
        let off = Config::parse("enforcement: {missing-local-queue: Off}").unwrap();
        let silent = validate(&off, &state, &request(&missing_queue_job()));
        assert_eq!((silent.allowed, silent.warnings.len(), silent.enforcement_label()), (true, 0, "Off"));
        assert_eq!(silent.unconfirmed, None);
        let body = crate::admission::response::encode("u", &warned);
        let response: Value = serde_json::from_slice::<Value>(&body).unwrap()["response"].clone();
        assert_eq!(
            response["auditAnnotations"],
            json!({"decision": "allowed", "reason": "missing-local-queue", "enforcement": "Warn"})
        );
    }

    #[test]
    fn running_outside_kueue_can_be_denied_or_let_be() {
        let state = seed_state();
        let job = request(&evalhub_job_value("plain", &[], None));
        let warned = mutate(&Config::default(), &state, &job);
        assert_eq!((warned.allowed, warned.reason, warned.warnings.len()), (true, Reason::BypassesKueue, 1));
        assert!(warned.warnings[0].ends_with("EvalHub users: set queue.name in the evaluation request."));
        let deny = Config::parse("enforcement: {bypasses-kueue: Deny}").unwrap();
        let denied = mutate(&deny, &state, &job);
        assert!(!denied.allowed);
        assert!(
            denied.message.as_deref().unwrap().starts_with("Job plain/evalhub-3f2a has no kueue.x-k8s.io/queue-name")
        );
        let off = Config::parse("enforcement: {bypasses-kueue: Off}").unwrap();
        let silent = mutate(&off, &state, &job);
        assert_eq!((silent.allowed, silent.warnings.len(), silent.enforcement_label()), (true, 0, "Off"));
    }

    #[test]
    fn denials_end_with_the_submitters_own_way_to_fix_them() {
        let state = seed_state();
        let evalhub = validate(&Config::default(), &state, &request(&missing_queue_job()));
        assert!(evalhub.message.unwrap().ends_with(". EvalHub users: set queue.name in the evaluation request."));
        let jobset = aiperf_jobset_value("my-benchmarks", Some("no-such-queue"), &[("workers", None)]);
        let aiperf = validate(&Config::default(), &state, &request(&jobset));
        assert!(
            aiperf.message.unwrap().ends_with(". AIPerf users: pass --queue-name (spec.scheduling.queueName)."),
            "the AIPerfJob owner does not take the JobSet out of the policy"
        );
        let mut opt_in = missing_queue_job();
        opt_in["metadata"]["labels"] =
            json!({"eval-admission.io/evaluation": "true", "kueue.x-k8s.io/queue-name": "no-such-queue"});
        let kubectl = validate(&Config::default(), &state, &request(&opt_in));
        assert!(kubectl.message.unwrap().contains("ask the namespace owner to create LocalQueue 'no-such-queue'."));
    }

    #[test]
    fn an_aiperf_sweep_controller_jobset_is_selected_by_its_owner() {
        let state = seed_state();
        let mut jobset = aiperf_jobset_value("my-benchmarks", None, &[("controller", None)]);
        jobset["metadata"]["labels"] = json!({});
        jobset["metadata"]["ownerReferences"] = json!([{"apiVersion": "aiperf.nvidia.com/v1alpha1",
            "kind": "AIPerfSweep", "name": "sweep", "uid": "1", "controller": true}]);
        let decision = mutate(&Config::default(), &state, &request(&jobset));
        assert_eq!((decision.allowed, decision.reason), (true, Reason::Queued));
        jobset["metadata"]["ownerReferences"][0]["controller"] = json!(false);
        assert_eq!(mutate(&Config::default(), &state, &request(&jobset)).reason, Reason::NotAnEvaluation);
    }

    #[test]
    fn the_repeated_pod_class_is_dropped_when_the_config_says_so() {
        let state = seed_state();
        let job = evalhub_job_value(
            "team-a-namespace",
            &[("kueue.x-k8s.io/priority-class", "production")],
            Some("production"),
        );
        let denied = validate(&Config::default(), &state, &request(&job));
        assert_eq!((denied.allowed, denied.reason), (false, Reason::PodsWouldBeRefused));
        let drop = Config::parse("dropRepeatedPodPriorityClass: true").unwrap();
        let mutated = mutate(&drop, &state, &request(&job));
        assert_eq!(mutated.warnings.len(), 1, "{:?}", mutated.warnings);
        let mut patched = job.clone();
        json_patch::patch(&mut patched, &mutated.patch).unwrap();
        assert!(patched["spec"]["template"]["spec"].get("priorityClassName").is_none());
        assert!(validate(&drop, &state, &request(&patched)).allowed, "the validating webhook then lets it through");
        let again = mutate(&drop, &state, &request(&patched));
        assert!(again.patch.0.is_empty(), "idempotent");
        assert_eq!(again.reason, Reason::AlreadyQueued, "nothing left to drop");
        let mut queued = job.clone();
        queued["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = json!("eval-queue");
        queued["spec"]["suspend"] = json!(true);
        assert_eq!(
            mutate(&drop, &state, &request(&queued)).reason,
            Reason::Queued,
            "queued already, but the class goes"
        );
    }
}
