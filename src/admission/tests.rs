//! The two webhooks through `decide` and `review`: what reaches the policy,
//! and what goes back to the API server.

use crate::admission::{Decision, Webhook, decide, request::decode};
use crate::cluster::ClusterView;
use crate::config::Config;
use crate::rules;
use crate::vocabulary::reason::Reason;

fn mutate(config: &Config, view: &impl ClusterView, request: &crate::admission::Request) -> Decision {
    decide(Webhook::Mutate, request, config, view).unwrap()
}

fn validate(config: &Config, view: &impl ClusterView, request: &crate::admission::Request) -> Decision {
    decide(Webhook::Validate, request, config, view).unwrap()
}

mod mutating {
    use super::*;
    use crate::admission::{ReviewBuilder, review_offline};
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
        let outcome = review_offline(Webhook::Mutate, &create_review(&job), &config, &state).unwrap();
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
        let first = response(&review_offline(Webhook::Mutate, &create_review(&job), &config, &state).unwrap().body);
        let patch: json_patch::Patch = serde_json::from_value(decoded_patch(&first)).unwrap();
        json_patch::patch(&mut job, &patch).unwrap();
        let second = response(&review_offline(Webhook::Mutate, &create_review(&job), &config, &state).unwrap().body);
        assert_eq!(second["allowed"], true);
        assert!(second.get("patch").is_none() && second.get("patchType").is_none(), "{second}");
        assert_eq!(second["auditAnnotations"]["reason"], "already-queued");
    }

    #[test]
    fn a_labelled_job_is_only_suspended_and_a_suspended_aiperf_jobset_is_untouched() {
        let (config, state) = (Config::default(), seed_state());
        let job = evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", "shared-queue")], None);
        let response = response(&review_offline(Webhook::Mutate, &create_review(&job), &config, &state).unwrap().body);
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
        let response = response(&review_offline(Webhook::Mutate, &create_review(&job), &config, &state).unwrap().body);
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
        let response = response(&review_offline(Webhook::Mutate, &create_review(&job), &config, &state).unwrap().body);
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

        let all = Config::parse("selection: {allWorkloads: true}").unwrap().config;
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
        use crate::cluster::Absent;
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
        let warn = Config::parse("enforcement: {missing-local-queue: Warn}").unwrap().config;
        let warned = validate(&warn, &state, &request(&missing_queue_job()));
        assert_eq!(
            (warned.allowed, warned.reason, warned.enforcement_label()),
            (true, Reason::MissingLocalQueue, "Warn")
        );
        assert_eq!(warned.warnings, vec![denied.message.clone().unwrap()]);
        assert!(warned.unconfirmed.is_some(), "a warning about a missing object is confirmed live too");
        let off = Config::parse("enforcement: {missing-local-queue: Off}").unwrap().config;
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
        let deny = Config::parse("enforcement: {bypasses-kueue: Deny}").unwrap().config;
        let denied = mutate(&deny, &state, &job);
        assert!(!denied.allowed);
        assert!(
            denied.message.as_deref().unwrap().starts_with("Job plain/evalhub-3f2a has no kueue.x-k8s.io/queue-name")
        );
        let off = Config::parse("enforcement: {bypasses-kueue: Off}").unwrap().config;
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
        let drop = Config::parse("dropRepeatedPodPriorityClass: true").unwrap().config;
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

/// What reaches the API server and the metrics besides the verdict: the
/// request fields `decide` reads, the encoded response, the names the
/// metrics use, and the reviews the `review` command and the tests build.
mod plumbing {
    use super::*;
    use crate::admission::{BadReview, Operation, ReviewBuilder, outcome, response, review_noop, review_offline};
    use crate::rules::fixtures::*;
    use crate::workload::WorkloadKind;
    use serde_json::{Value, json};

    fn queued_job() -> Value {
        evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", "eval-queue")], None)
    }

    fn request(value: &Value) -> crate::admission::Request {
        decode(&serde_json::to_vec(value).unwrap()).unwrap()
    }

    #[test]
    fn the_webhooks_and_operations_have_their_metric_names() {
        assert_eq!((Webhook::Mutate.as_str(), Webhook::Validate.as_str()), ("mutate", "validate"));
        let operations =
            [Operation::Create, Operation::Update, Operation::Delete, Operation::Connect, Operation::Unknown];
        assert_eq!(operations.map(Operation::as_str), ["CREATE", "UPDATE", "DELETE", "CONNECT", "UNKNOWN"]);
    }

    #[test]
    fn the_noop_baseline_answers_allowed_with_the_uid() {
        let body = ReviewBuilder::create(WorkloadKind::Job, &queued_job()).uid("noop-1").to_bytes();
        let (uid, answer) = review_noop(&body).unwrap();
        assert_eq!(uid, "noop-1");
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(
            answer,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"uid": "noop-1",
                "allowed": true, "auditAnnotations": {"decision": "allowed", "reason": "not-a-workload"}}})
        );
        assert_eq!(review_noop(b"{}").unwrap_err(), BadReview("no request in the AdmissionReview".into()));
    }

    #[test]
    fn the_builder_writes_the_reviews_the_api_server_sends() {
        let job = queued_job();
        let create = ReviewBuilder::create(ReviewBuilder::kind_of(&job), &job).to_value();
        assert_eq!(create["request"]["operation"], "CREATE");
        assert_eq!(create["request"]["options"]["kind"], "CreateOptions");
        assert_eq!(create["request"]["oldObject"], Value::Null);
        assert_eq!(create["request"]["namespace"], "team-a-namespace", "the object's namespace");
        assert_eq!(create["request"]["kind"], json!({"group": "batch", "version": "v1", "kind": "Job"}));

        let mut old = job.clone();
        old["spec"]["suspend"] = json!(true);
        let update = ReviewBuilder::update(WorkloadKind::Job, &old, &job)
            .namespace("elsewhere")
            .uid("u-9")
            .user("bob")
            .to_value();
        assert_eq!(update["request"]["operation"], "UPDATE");
        assert_eq!(update["request"]["options"]["kind"], "UpdateOptions");
        assert_eq!(update["request"]["oldObject"], old);
        assert_eq!(update["request"]["object"], job);
        assert_eq!(update["request"]["namespace"], "elsewhere");
        assert_eq!(update["request"]["uid"], "u-9");
        assert_eq!(update["request"]["userInfo"]["username"], "bob");
        let decoded = request(&update);
        assert_eq!(
            (decoded.operation, decoded.namespace(), decoded.uid.as_str()),
            (Operation::Update, Some("elsewhere"), "u-9")
        );
        assert!(decoded.old_object.is_some());

        let jobset = aiperf_jobset_value("my-benchmarks", None, &[("workers", None)]);
        assert_eq!(ReviewBuilder::kind_of(&jobset), WorkloadKind::JobSet);
        assert_eq!(ReviewBuilder::kind_of(&job), WorkloadKind::Job);
    }

    #[test]
    fn the_request_namespace_wins_and_an_empty_one_falls_back_to_the_object() {
        let job = queued_job();
        let with_namespace = |namespace: Value| {
            let mut review = ReviewBuilder::create(WorkloadKind::Job, &job).to_value();
            review["request"]["namespace"] = namespace;
            request(&review)
        };
        assert_eq!(with_namespace(json!("other")).namespace(), Some("other"));
        assert_eq!(with_namespace(json!("")).namespace(), Some("team-a-namespace"));
        assert_eq!(with_namespace(Value::Null).namespace(), Some("team-a-namespace"));

        let mut nameless = job.clone();
        nameless["metadata"]["namespace"] = json!("");
        let mut review = ReviewBuilder::create(WorkloadKind::Job, &nameless).to_value();
        review["request"]["namespace"] = json!("");
        let request = request(&review);
        assert_eq!(request.namespace(), None);
        let error = decide(Webhook::Validate, &request, &Config::default(), &seed_state()).unwrap_err();
        assert_eq!(error, BadReview("Job request without a namespace".into()));
    }

    #[test]
    fn a_request_without_its_object_is_a_bad_review() {
        let mut review = ReviewBuilder::create(WorkloadKind::Job, &queued_job()).to_value();
        review["request"]["object"] = Value::Null;
        let error = decide(Webhook::Validate, &request(&review), &Config::default(), &seed_state()).unwrap_err();
        assert_eq!(error, BadReview("CREATE Job without an object".into()));
        let update = ReviewBuilder::update(WorkloadKind::Job, &Value::Null, &queued_job()).to_value();
        let error = decide(Webhook::Validate, &request(&update), &Config::default(), &seed_state()).unwrap_err();
        assert_eq!(error, BadReview("UPDATE of Job without oldObject".into()));
    }

    #[test]
    fn a_subresource_is_left_alone_and_an_empty_one_is_none() {
        let (config, state) = (Config::default(), seed_state());
        let missing = evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", "no-such-queue")], None);
        let mut review = ReviewBuilder::create(WorkloadKind::Job, &missing).to_value();
        review["request"]["subResource"] = json!("status");
        let decision = validate(&config, &state, &request(&review));
        assert_eq!((decision.allowed, decision.reason), (true, Reason::Subresource));
        review["request"]["subResource"] = json!("");
        let decision = validate(&config, &state, &request(&review));
        assert_eq!((decision.allowed, decision.reason), (false, Reason::MissingLocalQueue));
    }

    #[test]
    fn a_denial_goes_out_as_a_forbidden_status() {
        let (config, state) = (Config::default(), seed_state());
        let missing = evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", "no-such-queue")], None);
        let body = ReviewBuilder::create(WorkloadKind::Job, &missing).uid("u-3").to_bytes();
        let answered = review_offline(Webhook::Validate, &body, &config, &state).unwrap();
        let message = answered.decision.message.clone().unwrap();
        let response = serde_json::from_slice::<Value>(&answered.body).unwrap()["response"].clone();
        assert_eq!(
            response,
            json!({"uid": "u-3", "allowed": false,
                "status": {"status": "Failure", "code": 403, "reason": "Forbidden", "message": message},
                "auditAnnotations": {"decision": "denied", "reason": "missing-local-queue", "enforcement": "Deny"}})
        );
        assert_eq!(
            (answered.uid.as_str(), answered.kind.as_str(), answered.namespace.as_str(), answered.name.as_str()),
            ("u-3", "Job", "team-a-namespace", "evalhub-3f2a")
        );
        assert_eq!(
            (answered.operation, answered.username.as_str(), answered.dry_run),
            (Operation::Create, "kubernetes-admin", false)
        );

        // An allowed decision never carries a status, even with a message.
        let allowed = Decision { message: Some("not sent".into()), ..Decision::allow(Reason::Checked) };
        let response = serde_json::from_slice::<Value>(&response::encode("u", &allowed)).unwrap()["response"].clone();
        assert!(response.get("status").is_none(), "{response}");
    }

    #[test]
    fn the_outcome_names_the_object_by_its_name_else_generate_name_else_the_request() {
        let mut job = queued_job();
        job["metadata"]["name"] = Value::Null;
        job["metadata"]["generateName"] = json!("evalhub-");
        let mut review = ReviewBuilder::create(WorkloadKind::Job, &job).to_value();
        review["request"]["dryRun"] = json!(true);
        let request = request(&review);
        let decision = Decision::allow(Reason::Checked);
        let answered = outcome(request.clone(), decision.clone());
        assert_eq!((answered.name.as_str(), answered.dry_run), ("evalhub-", true));
        let mut bare = request;
        bare.object = None;
        bare.name = Some("from-request".into());
        assert_eq!(outcome(bare, decision).name, "from-request");
    }
}

/// The entry points' last step (`rules::enforce`): which denials end with the
/// submitters' own way to fix them, and the reasons' stable labels.
mod submitter_hints {
    use super::*;
    use crate::admission::ReviewBuilder;
    use crate::rules::fixtures::*;
    use crate::workload::WorkloadKind;
    use serde_json::json;

    #[test]
    fn every_reason_prints_as_its_label() {
        for reason in Reason::ALL {
            assert_eq!(reason.to_string(), reason.as_str());
            assert_eq!(Reason::from_label(&reason.to_string()), Some(reason));
        }
    }

    #[test]
    fn a_bad_namespace_default_ends_with_how_to_pick_a_queue() {
        let state = state_with(&[
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: odd\n  annotations:\n    kueue.x-k8s.io/default-queue-name: Eval_Queue\n",
        ]);
        let job = evalhub_job_value("odd", &[], None);
        let request = decode(&ReviewBuilder::create(WorkloadKind::Job, &job).to_bytes()).unwrap();
        let decision = mutate(&Config::default(), &state, &request);
        assert_eq!((decision.allowed, decision.reason), (false, Reason::InvalidDefaultQueue));
        let message = decision.message.unwrap();
        assert!(
            message.ends_with("on the workload. EvalHub users: set queue.name in the evaluation request."),
            "{message}"
        );
    }

    #[test]
    fn a_denial_that_offers_no_change_ends_without_a_hint() {
        let mut old = evalhub_job_value("team-a-namespace", &[("kueue.x-k8s.io/queue-name", "eval-queue")], None);
        old["spec"]["suspend"] = json!(true);
        let mut new = old.clone();
        new["metadata"]["labels"].as_object_mut().unwrap().remove("kueue.x-k8s.io/queue-name");
        let review = ReviewBuilder::update(WorkloadKind::Job, &old, &new).user("alice");
        let decision = validate(&Config::default(), &seed_state(), &decode(&review.to_bytes()).unwrap());
        assert_eq!((decision.allowed, decision.reason), (false, Reason::QueueLabelRemoved));
        let message = decision.message.unwrap();
        assert!(message.ends_with("to run it differently, delete and recreate it."), "{message}");
    }
}
