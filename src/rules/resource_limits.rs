//! Resources Kueue finds invalid: requests above limits (after the namespace's
//! LimitRange defaults), or outside the LimitRange's min and max. Kueue's
//! scheduler checks them before any flavor (`workload.ValidateAdmissibility`,
//! `ValidateResources` then `ValidateLimitRange`) and keeps the Workload
//! pending, whatever the queue: no other queue is a way out.

use super::verdict::Inadmissible;
use crate::vocabulary::reason::Reason;
use crate::workload::{PodSetRequests, ProblemKind};

/// The first problem Kueue would name, in its order: requests above limits in
/// any pod set, then the LimitRange's bounds.
pub fn check(namespace: &str, pod_sets: &[PodSetRequests]) -> Result<(), Inadmissible> {
    let problems = || pod_sets.iter().flat_map(|pod_set| &pod_set.problems);
    let first =
        problems().find(|problem| problem.kind == ProblemKind::RequestsAboveLimits).or_else(|| problems().next());
    let Some(problem) = first else { return Ok(()) };
    let (reason, fix) = match problem.kind {
        ProblemKind::RequestsAboveLimits => (
            Reason::RequestsExceedLimits,
            format!(
                "set each request at most its limit (a limit the container does not set comes from the namespace's \
                 LimitRange default: kubectl get limitrange -n {namespace})"
            ),
        ),
        ProblemKind::AboveLimitRangeMax | ProblemKind::BelowLimitRangeMin => (
            Reason::OutsideLimitRange,
            format!("keep requests and limits within the LimitRange (kubectl describe limitrange -n {namespace})"),
        ),
    };
    Err(Inadmissible { advice: Some(fix), ..Inadmissible::new(reason, problem.to_string()) })
}

#[cfg(test)]
mod tests {
    use crate::rules::check_queued;
    use crate::rules::fixtures::*;
    use crate::vocabulary::reason::Reason;

    /// Replaces the example state's LimitRange (same name) for these tests.
    const LIMITS: &str = "apiVersion: v1\nkind: LimitRange\nmetadata: {name: team-a-limits, namespace: team-a-namespace}\n\
        spec:\n  limits:\n  - {type: Container, default: {cpu: \"1\"}, defaultRequest: {cpu: 500m}, max: {memory: 16Gi}}\n\
        \x20 - {type: Pod, max: {cpu: \"40\"}}\n";
    const KATA: &str = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: kata}\nhandler: kata\n\
        overhead: {podFixed: {cpu: \"31\"}}\n";

    fn reason(extra: &[&str], requests: &[(&str, &str)], pod: serde_json::Value) -> Result<(), (Reason, String)> {
        let mut documents = vec![SEED_STATE];
        documents.extend_from_slice(extra);
        let state = state_with(&documents);
        let mut job = testkit::JobBuilder::evalhub("team-a-namespace").queue("eval-queue").requests(requests).build();
        for (key, value) in pod.as_object().unwrap() {
            job["spec"]["template"]["spec"][key] = value.clone();
        }
        let job: crate::workload::Workload = serde_json::from_value(job).unwrap();
        check_queued(&state, job_subject(&job)).map(|_| ()).map_err(|denial| (denial.reason, denial.message))
    }

    #[test]
    fn a_default_limit_below_the_request_is_refused() {
        // 2 cpu asked, no limit set: the LimitRange's default limit of 1 applies.
        let (why, message) = reason(&[LIMITS], &[("cpu", "2"), ("memory", "1Gi")], serde_json::json!({})).unwrap_err();
        assert_eq!(why, Reason::RequestsExceedLimits, "{message}");
        assert!(
            message.contains(
                "would stay suspended forever: spec.template.spec.containers[0] asks for cpu 2 (limit 1), above its \
                 limit, so Kueue would never admit it. To fix: set each request at most its limit (a limit the \
                 container does not set comes from the namespace's LimitRange default: kubectl get limitrange -n \
                 team-a-namespace)."
            ),
            "{message}"
        );
        assert!(
            reason(&[], &[("cpu", "2"), ("memory", "1Gi")], serde_json::json!({})).is_ok(),
            "the example state's default limit is 48 cpu"
        );
        assert_eq!(reason(&[LIMITS], &[("cpu", "1"), ("memory", "1Gi")], serde_json::json!({})), Ok(()));
        // Above its limit and outside the LimitRange at once: Kueue names the limit first
        // (`ValidateResources` before `ValidateLimitRange`), whichever container comes first.
        let both = serde_json::json!({"containers": [
            {"name": "a", "image": "x", "resources": {"requests": {"cpu": "1", "memory": "32Gi"}}},
            {"name": "b", "image": "x", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]});
        assert_eq!(reason(&[LIMITS], &[], both).map_err(|(why, _)| why), Err(Reason::RequestsExceedLimits));
    }

    #[test]
    fn the_limit_range_bounds_containers_and_pods() {
        let (why, _) = reason(&[LIMITS], &[("cpu", "1"), ("memory", "32Gi")], serde_json::json!({})).unwrap_err();
        assert_eq!(why, Reason::OutsideLimitRange);
        // 1 cpu and 31 of RuntimeClass overhead pass the container item, not the Pod max of 40.
        let kata = serde_json::json!({"runtimeClassName": "kata"});
        assert!(
            reason(&[LIMITS, KATA], &[("cpu", "1"), ("memory", "1Gi")], kata.clone()).is_ok(),
            "32 cpu per pod fits"
        );
        let two = serde_json::json!({"runtimeClassName": "kata", "containers": [
            {"name": "a", "image": "x", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}},
            {"name": "b", "image": "x", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}]});
        let (why, _) = reason(&[LIMITS, KATA], &[], two).unwrap_err();
        assert_eq!(why, Reason::ExceedsQuota, "33 cpu per pod: within the Pod max of 40, beyond the queue's 32");
        let (why, message) = reason(
            &[LIMITS, KATA],
            &[],
            serde_json::json!({"runtimeClassName": "kata", "containers": [
            {"name": "a", "image": "x", "resources": {"requests": {"cpu": "10"}, "limits": {"cpu": "10"}}}]}),
        )
        .unwrap_err();
        assert_eq!(why, Reason::OutsideLimitRange, "10 + 31 > 40: {message}");
    }

    #[test]
    fn runtime_class_overhead_counts_against_quota() {
        // team-a-cq has 32 cpu: 2 cpu plus 31 of overhead do not fit.
        let kata = serde_json::json!({"runtimeClassName": "kata"});
        let (why, _) = reason(&[KATA], &[("cpu", "2"), ("memory", "1Gi")], kata.clone()).unwrap_err();
        assert_eq!(why, Reason::ExceedsQuota);
        assert!(reason(&[], &[("cpu", "2"), ("memory", "1Gi")], kata).is_ok(), "no such RuntimeClass: nothing added");
        let own = serde_json::json!({"runtimeClassName": "kata", "overhead": {"cpu": "1"}});
        assert!(reason(&[KATA], &[("cpu", "2"), ("memory", "1Gi")], own).is_ok(), "the template's overhead wins");
    }
}
