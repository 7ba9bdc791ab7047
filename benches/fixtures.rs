//! Realistic review bodies for the benchmarks, shaped like what the API server
//! sends: an EvalHub Job as `kubectl create` leaves it (managedFields included),
//! 8.5 KB as a review, with 4.9 KB and 9.7 KB variants; an AIPerf JobSet with a
//! controller and workers, about 42 KB; and a Job UPDATE carrying both objects.

#![allow(dead_code)]

use eval_admission::admission::ReviewBuilder;
use eval_admission::workload::WorkloadKind::{Job, JobSet};
use serde_json::Value;
use testkit::{JobBuilder, JobSetBuilder};

pub fn evalhub_job(namespace: &str) -> Value {
    evalhub_job_with_env(namespace, 40, 12)
}

/// The EvalHub Job with `adapter_env` and `sidecar_env` variables in its two
/// containers: the knob that sets the body's size.
pub fn evalhub_job_with_env(namespace: &str, adapter_env: usize, sidecar_env: usize) -> Value {
    JobBuilder::evalhub_created(namespace, adapter_env, sidecar_env).build()
}

pub fn aiperf_jobset(namespace: &str) -> Value {
    JobSetBuilder::aiperf_created(namespace).build()
}

/// The builder the tests use, with a uid and user as the API server would send them.
fn review(builder: ReviewBuilder, user: &str) -> Vec<u8> {
    builder.uid("b6f7a0c2-5d1e-4f3a-9c8b-2e4d6f8a0b1c").user(user).to_bytes()
}

/// An EvalHub Job CREATE in team-a-namespace (gets the namespace default queue).
pub fn job_create() -> Vec<u8> {
    review(
        ReviewBuilder::create(Job, &evalhub_job("team-a-namespace")),
        "system:serviceaccount:team-a-namespace:evalhub",
    )
}

/// A smaller EvalHub Job CREATE, about 4 KB (8 and 2 environment variables).
pub fn job_create_4k() -> Vec<u8> {
    review(
        ReviewBuilder::create(Job, &evalhub_job_with_env("team-a-namespace", 8, 2)),
        "system:serviceaccount:team-a-namespace:evalhub",
    )
}

/// A larger EvalHub Job CREATE, about 10 KB (52 and 14 environment variables).
pub fn job_create_10k() -> Vec<u8> {
    review(
        ReviewBuilder::create(Job, &evalhub_job_with_env("team-a-namespace", 52, 14)),
        "system:serviceaccount:team-a-namespace:evalhub",
    )
}

/// The same Job after mutation, as the validating webhook receives it.
pub fn job_create_mutated() -> Vec<u8> {
    let job = queued("team-a-namespace").build();
    review(ReviewBuilder::create(Job, &job), "system:serviceaccount:team-a-namespace:evalhub")
}

/// The EvalHub Job as eval-admission leaves it: queued and suspended
/// (managedFields as created: the mutation does not record fields).
fn queued(namespace: &str) -> JobBuilder {
    JobBuilder::evalhub_created(namespace, 40, 12).queue("eval-queue").suspend(true)
}

/// Kueue unsuspending the queued Job: an UPDATE with both objects.
pub fn job_update() -> Vec<u8> {
    let old = queued("team-a-namespace").build();
    let new = queued("team-a-namespace").suspend(false).build();
    review(ReviewBuilder::update(Job, &old, &new), "system:serviceaccount:kueue-system:kueue-controller-manager")
}

/// An AIPerf JobSet CREATE in my-benchmarks (no queue label: gets the namespace default).
pub fn jobset_create() -> Vec<u8> {
    review(
        ReviewBuilder::create(JobSet, &aiperf_jobset("my-benchmarks")),
        "system:serviceaccount:aiperf-system:aiperf-operator",
    )
}
