//! (d) The unsuspend guard: only Kueue may unsuspend a queued evaluation.

use super::*;

/// Brings eval-admission back with the Kueue test config.
struct RestoreConfig<'a>(&'a Cluster);

impl Drop for RestoreConfig<'_> {
    fn drop(&mut self) {
        self.0.webhook_up(&repo("tests/kueue/eval-admission-config.yaml"));
    }
}

/// Kueue's unsuspend reaches eval-admission's validation (the shipped
/// matchConditions skip only the standard install's service account, not
/// `kueue-e2e-controller`) and passes because the config names Kueue's
/// identity; alice's does not. With the shipped default config (another
/// identity), Kueue's own unsuspend is refused and the admitted Job stays
/// suspended: kueue.controllerUsernames must name the identity Kueue really runs as.
#[test]
fn only_kueue_may_unsuspend_a_queued_evaluation() {
    let cluster = cluster();
    let s = unique();
    let rf = format!("rf-{s}");
    let (open, spare) = (format!("open-{s}"), format!("spare-{s}"));
    let ns = format!("guard-{s}");
    cluster.apply(&[
        flavor(&rf),
        cluster_queue(&open, &rf, &[("cpu", "1", None)], None, Value::Null),
        cluster_queue(&spare, &rf, &[("cpu", "1", None)], None, Value::Null),
        namespace(&ns, None, &[]),
        local_queue(&ns, "open", &open),
        local_queue(&ns, "spare", &spare),
    ]);
    cluster.ok(&["create", "role", "jobs", "-n", &ns, "--verb=*", "--resource=jobs"], None);
    cluster.ok(&["create", "rolebinding", "alice-jobs", "-n", &ns, "--role=jobs", "--user=alice"], None);

    // Kueue admits and starts it: its UPDATE went through eval-admission and was allowed.
    cluster.create(&evaluation(&ns, "started", "1", &[(QUEUE_LABEL, "open")], &[]));
    wait_admitted(cluster, &ns, "started");
    let reviews = wait_for("eval-admission's log of Kueue's unsuspend", Duration::from_secs(10), || {
        let reviews: Vec<Value> = cluster
            .webhook
            .reviews("started")
            .into_iter()
            .filter(|r| r["webhook"] == "validate" && r["operation"] == "UPDATE" && r["user"] == KUEUE_USER)
            .collect();
        (!reviews.is_empty()).then_some(reviews)
    });
    assert!(reviews.iter().all(|r| r["decision"] == "allowed"), "{reviews:?}");

    // alice may edit Jobs, but not start a queued evaluation herself: this one
    // waits behind "started", which holds all of open's quota.
    let held = evaluation(&ns, "held", "1", &[(QUEUE_LABEL, "open")], &[]);
    cluster.ok(&["create", "-f", "-", "--as=alice"], Some(&held.to_string()));
    let stderr = cluster.refused(
        &["patch", "job", "held", "-n", &ns, "--as=alice", "--type=merge", "-p", r#"{"spec":{"suspend":false}}"#],
        None,
    );
    assert!(
        stderr.contains(&format!("only Kueue ({KUEUE_USER}) may set spec.suspend to false, and alice tried")),
        "{stderr}"
    );
    assert!(cluster.suspended("job", &ns, "held"));

    // The shipped default names the standard install's service account: Kueue
    // here (another identity) reserves quota but cannot start the Job.
    let _restore = RestoreConfig(cluster);
    cluster.webhook_up(&repo("manifests/base/config.yaml"));
    cluster.create(&evaluation(&ns, "stuck", "1", &[(QUEUE_LABEL, "spare")], &[]));
    let denied = wait_for("Kueue's refused unsuspend", ADMISSION_WAIT, || {
        cluster
            .webhook
            .reviews("stuck")
            .into_iter()
            .find(|r| r["operation"] == "UPDATE" && r["user"] == KUEUE_USER && r["decision"] == "denied")
    });
    assert_eq!(denied["reason"], "unsuspend-not-allowed", "{denied}");
    let workload = cluster.job_workload(&ns, "stuck").unwrap();
    assert!(condition_true(&workload, "QuotaReserved"), "Kueue reserved the quota: {workload}");
    assert!(cluster.suspended("job", &ns, "stuck"), "but could not start the Job");

    // With Kueue's identity configured again, Kueue starts it (an edit nudges its retry).
    drop(_restore);
    cluster.ok(&["annotate", "job", "stuck", "-n", &ns, "nudge=1"], None);
    wait_admitted(cluster, &ns, "stuck");
}
