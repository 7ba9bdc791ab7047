//! The Workload Kueue would create must be one the API server stores: its CRD
//! (`apis/kueue/v1beta2/workload_types.go`) holds 1 to 18 pod sets (v0.19; 10
//! in v0.18, 8 before),
//! and a pod set's `minCount` is at least 1 and at most its `count` (a CEL
//! rule). Otherwise the job controller's create fails on every reconcile, no
//! Workload ever reaches the queue, and the job stays suspended.

use super::verdict::{Denial, Subject};
use crate::vocabulary::kueue::{JOB_MIN_PARALLELISM_ANNOTATION, KueueVersion, most_pod_sets};
use crate::vocabulary::reason::Reason;
use crate::workload::PodSetRequests;

pub fn check_workload_api(
    subject: Subject<'_>,
    pod_sets: &[PodSetRequests],
    kueue: KueueVersion,
) -> Result<(), Denial> {
    let most = most_pod_sets(kueue);
    let refused = |why: String, fix: &str| {
        Err(Denial::new(
            Reason::WorkloadRefused,
            format!(
                "{subject} would stay suspended forever: {why}, so the API server refuses the Workload Kueue creates \
                 for it and Kueue would never admit it. To fix: {fix}."
            ),
        ))
    };
    if pod_sets.len() > most {
        return refused(
            format!(
                "it has {} replicated jobs, and a Kueue {kueue} Workload holds at most {most} pod sets",
                pod_sets.len()
            ),
            &format!("run it as JobSets of at most {most} replicated jobs each"),
        );
    }
    for pod_set in pod_sets {
        if let Some(min) = pod_set.min_count
            && !(1..=pod_set.count).contains(&min)
        {
            return refused(
                format!(
                    "its annotation {JOB_MIN_PARALLELISM_ANNOTATION} is {min}, and Kueue's Workload needs a minimum \
                     count between 1 and its {} pods",
                    pod_set.count
                ),
                &format!("set {JOB_MIN_PARALLELISM_ANNOTATION} between 1 and {}, or remove it", pod_set.count),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::fixtures::*;
    use crate::workload::WorkloadKind;

    #[test]
    fn eighteen_replicated_jobs_fit_a_workload_and_nineteen_do_not() {
        let jobset = |count: usize| {
            let mut builder = testkit::JobSetBuilder::aiperf("my-benchmarks").queue("aiperf-queue");
            for index in 0..count {
                builder = builder.replicated(&format!("shard-{index}"), None);
            }
            let jobset: crate::workload::Workload = serde_json::from_value(builder.build()).unwrap();
            jobset
        };
        let check = |count: usize, release: &str| {
            let jobset = jobset(count);
            let pod_sets = jobset.pod_sets(WorkloadKind::JobSet).unwrap();
            check_workload_api(jobset_subject(&jobset), &pod_sets, KueueVersion::parse(release).unwrap())
        };
        assert!(check(18, "v0.19.2").is_ok());
        let denial = check(19, "v0.19.2").unwrap_err();
        assert_eq!(denial.reason, Reason::WorkloadRefused);
        assert!(
            denial.message.contains(
                "would stay suspended forever: it has 19 replicated jobs, and a Kueue v0.19.2 Workload holds at most \
                 18 pod sets"
            ),
            "{}",
            denial.message
        );
        // The CRD's MaxItems by release.
        assert!(check(10, "v0.18.2").is_ok() && check(11, "v0.18.5").is_err());
        assert!(check(8, "v0.17.0").is_ok() && check(9, "v0.16.6").is_err() && check(9, "v0.12.10").is_err());
    }

    #[test]
    fn a_minimum_count_outside_one_to_count_is_refused() {
        let v0_19 = KueueVersion::default();
        let job = |min: &str| {
            let job = testkit::JobBuilder::evalhub("team-a-namespace")
                .queue("eval-queue")
                .parallelism(4)
                .annotation(JOB_MIN_PARALLELISM_ANNOTATION, min)
                .build();
            let job: crate::workload::Workload = serde_json::from_value(job).unwrap();
            let pod_sets = job.pod_sets(WorkloadKind::Job).unwrap();
            check_workload_api(job_subject(&job), &pod_sets, v0_19).map_err(|denial| denial.reason)
        };
        assert_eq!(job("1"), Ok(()));
        assert_eq!(job("4"), Ok(()));
        assert_eq!(job("0"), Err(Reason::WorkloadRefused));
        assert_eq!(job("5"), Err(Reason::WorkloadRefused));
        assert_eq!(job("many"), Ok(()), "not a number: Kueue sets no minCount");
    }
}
