//! The mutating webhook: on CREATE, give an evaluation its queue and start it suspended.

use super::patch::{self, Desired};
use super::{Decision, Operation, Request, target};
use crate::cluster::ClusterView;
use crate::config::Config;
use crate::error::Error;
use crate::rules::{Reason, queue, suspend};
use crate::workload::QUEUE_NAME_LABEL;

pub fn mutate(config: &Config, view: &impl ClusterView, request: &Request) -> Result<Decision, Error> {
    if request.operation != Operation::Create {
        return Ok(Decision::allow(Reason::OperationNotReviewed));
    }
    let target = match target(config, request)? {
        Ok(target) => target,
        Err(reason) => return Ok(Decision::allow(reason)),
    };
    let subject = target.subject;
    let resolved = match queue::resolve(view, subject) {
        Ok(resolved) => resolved,
        Err(denial) => return Ok(Decision::deny(denial)),
    };
    let Some((queue_name, source)) = resolved else {
        return Ok(Decision::allow_with_warnings(Reason::BypassesKueue, vec![queue::bypass_warning(subject)]));
    };
    let mut desired = Desired::default();
    if source != queue::QueueSource::Label {
        desired.labels.push((QUEUE_NAME_LABEL, &queue_name));
    }
    if suspend::must_start_suspended(Some(&queue_name)) {
        desired.suspend = Some(true);
    }
    let patch = patch::diff(subject.workload, &desired);
    let reason = if patch.0.is_empty() { Reason::AlreadyQueued } else { Reason::Queued };
    Ok(Decision { patch, ..Decision::allow(reason) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::{Webhook, review};
    use crate::rules::fixtures::*;
    use base64::Engine;
    use serde_json::{Value, json};

    pub(crate) fn create_review(object: &Value) -> Vec<u8> {
        let kind = if object["kind"] == "JobSet" {
            crate::workload::WorkloadKind::JobSet
        } else {
            crate::workload::WorkloadKind::Job
        };
        let namespace = object["metadata"]["namespace"].as_str().unwrap();
        serde_json::to_vec(&crate::admission::review_for_manifest(kind, namespace, object)).unwrap()
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
        let decision =
            mutate(&config, &state, &crate::admission::request::decode(&create_review(&jobset)).unwrap()).unwrap();
        assert_eq!(decision.reason, Reason::AlreadyQueued);
        // Without a queue it gets the namespace default, like a Job.
        let jobset = aiperf_jobset_value("my-benchmarks", None, &[("controller", None), ("workers", None)]);
        let decision =
            mutate(&config, &state, &crate::admission::request::decode(&create_review(&jobset)).unwrap()).unwrap();
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
             and runs without quota. Set the label, or annotate the namespace with kueue.x-k8s.io/default-queue-name."
        );
        assert!(response["warnings"][0].as_str().unwrap().len() <= 256, "the API server truncates longer warnings");
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
        let decision =
            mutate(&config, &state, &crate::admission::request::decode(&create_review(&other)).unwrap()).unwrap();
        assert_eq!((decision.reason, decision.patch.0.len(), decision.warnings.len()), (Reason::NotAnEvaluation, 0, 0));

        let mut owned = evalhub_job_value("team-a-namespace", &[], None);
        owned["metadata"]["ownerReferences"] = json!([{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js", "uid": "1", "controller": true}]);
        let decision =
            mutate(&config, &state, &crate::admission::request::decode(&create_review(&owned)).unwrap()).unwrap();
        assert_eq!(decision.reason, Reason::OwnedByKueueWorkload);

        let all = Config::parse("selection: {allWorkloads: true}").unwrap();
        let decision =
            mutate(&all, &state, &crate::admission::request::decode(&create_review(&other)).unwrap()).unwrap();
        assert_eq!(decision.reason, Reason::Queued, "allWorkloads applies the policy to every Job");
    }
}
