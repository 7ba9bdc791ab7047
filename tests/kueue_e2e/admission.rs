//! (a) Queueing and admission: Kueue admits what eval-admission queued and holds
//! what does not fit.

use super::*;

#[test]
fn kueue_admits_what_eval_admission_queued_and_holds_what_does_not_fit() {
    let cluster = cluster();
    let s = unique();
    let (rf, cq, ns) = (format!("rf-{s}"), format!("admit-{s}"), format!("admit-{s}"));
    cluster.apply(&[
        flavor(&rf),
        cluster_queue(&cq, &rf, &[("cpu", "1", None)], None, Value::Null),
        namespace(&ns, Some("eval-queue"), &[]),
        local_queue(&ns, "eval-queue", &cq),
    ]);

    // As EvalHub creates it: only the namespace annotation names a queue.
    let created = cluster.create(&evaluation(&ns, "first", "1", &[], &[]));
    assert_eq!(created["metadata"]["labels"][QUEUE_LABEL], "eval-queue", "eval-admission labelled it");
    assert_eq!(created["spec"]["suspend"], true, "stored suspended, before Kueue admitted anything");
    let workload = wait_admitted(cluster, &ns, "first");
    assert_eq!(workload["spec"]["queueName"], "eval-queue", "Kueue queued it where our label says");
    assert!(condition_true(&workload, "QuotaReserved"));
    assert_eq!(workload["status"]["admission"]["clusterQueue"], cq.as_str());

    // Beyond the quota: Kueue makes its Workload and keeps it pending, suspended.
    let second = cluster.create(&evaluation(&ns, "second", "1", &[], &[]));
    assert_eq!(second["spec"]["suspend"], true);
    wait_pending(cluster, &ns, "second");
    std::thread::sleep(Duration::from_secs(3));
    let pending = cluster.job_workload(&ns, "second").unwrap();
    assert_eq!(pending["spec"]["queueName"], "eval-queue");
    assert!(!condition_true(&pending, "QuotaReserved"), "over quota: {pending}");
    assert!(cluster.suspended("job", &ns, "second"), "Kueue keeps the second Job suspended");
    assert!(!cluster.suspended("job", &ns, "first"), "the first keeps running");

    // An AIPerf JobSet the same way: its operator reads no namespace annotation,
    // so it arrives without a label (the example, minus its AIPerfJob owner).
    let (big, benchmarks) = (format!("big-{s}"), format!("benchmarks-{s}"));
    cluster.apply(&[
        cluster_queue(&big, &rf, &[("cpu", "100", None), ("memory", "100Gi", None)], None, Value::Null),
        namespace(&benchmarks, Some("aiperf-queue"), &[]),
        local_queue(&benchmarks, "aiperf-queue", &big),
    ]);
    let mut jobset: Value =
        serde_yaml::from_str(&std::fs::read_to_string(repo("examples/aiperf-jobset.yaml")).unwrap()).unwrap();
    jobset["metadata"]["namespace"] = benchmarks.clone().into();
    jobset["metadata"].as_object_mut().unwrap().remove("ownerReferences");
    assert!(jobset["metadata"]["labels"].get(QUEUE_LABEL).is_none() && jobset["spec"].get("suspend").is_none());
    let created = cluster.create(&jobset);
    assert_eq!(created["metadata"]["labels"][QUEUE_LABEL], "aiperf-queue");
    assert_eq!(created["spec"]["suspend"], true, "eval-admission suspends a queued JobSet");
    let name = created["metadata"]["name"].as_str().unwrap().to_string();
    let workload = wait_for("Kueue to admit and start the JobSet", ADMISSION_WAIT, || {
        let workload = cluster.workload(&benchmarks, "JobSet", &name)?;
        (condition_true(&workload, "Admitted") && !cluster.suspended("jobset", &benchmarks, &name)).then_some(workload)
    });
    assert_eq!(workload["spec"]["queueName"], "aiperf-queue");
}
