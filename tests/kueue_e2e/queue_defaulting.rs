//! (b) Webhook order: Kueue's queue defaulting sees eval-admission's label
//! because eval-admission's configuration sorts first.

use super::*;

/// Puts eval-admission's mutating configuration back under its shipped name.
struct RestoreOrder<'a>(&'a Cluster);

impl Drop for RestoreOrder<'_> {
    fn drop(&mut self) {
        let _ = self.0.kubectl(&["delete", "mutatingwebhookconfiguration", "zz-eval-admission-mutating"], None);
        self.0.webhook.register().unwrap();
    }
}

/// The API server calls mutating configurations in name order:
/// eval-admission-mutating before kueue-mutating-webhook-configuration, so
/// Kueue's own defaulting sees the queue label we add from the namespace
/// annotation.
///
/// Suspension cannot show it (we suspend the Job ourselves), nor can the
/// Workload (Kueue's Job controller reads the stored Job, label and all,
/// whichever webhook ran first). What can: Kueue's Job defaulting
/// (jobframework.ApplyDefaultForManagedBy, called from JobWebhook.Default)
/// sets `spec.managedBy: kueue.x-k8s.io/multikueue` on a Job whose
/// queue-name label leads to a ClusterQueue with a MultiKueue admission check,
/// and it reads that label from the object it is handed. Nothing else sets
/// that field. So a Job that reaches the API server without a label but is
/// stored with `managedBy` was labelled before Kueue's webhook ran; and with
/// our configuration renamed to sort after Kueue's, the same Job is stored
/// labelled but without `managedBy`.
#[test]
fn kueues_defaulting_sees_our_label_because_our_configuration_sorts_first() {
    let cluster = cluster();
    let names = cluster.ok(&["get", "mutatingwebhookconfigurations", "-o", "name"], None);
    let names: Vec<&str> = names
        .lines()
        .map(|line| line.trim_start_matches("mutatingwebhookconfiguration.admissionregistration.k8s.io/"))
        .collect();
    let ours = names.iter().position(|n| *n == "eval-admission-mutating").expect("ours registered");
    let kueues = names.iter().position(|n| *n == "kueue-mutating-webhook-configuration").expect("Kueue's registered");
    assert!(ours < kueues, "name order: {names:?}");

    // MultiKueue is only the vehicle that makes Kueue's defaulting visible
    // (managedBy); its AdmissionCheck has no worker cluster here, so it is not
    // Active and eval-admission's validation rightly refuses these Jobs as never
    // admitted. This test is about the mutating order: validation is
    // unregistered for it and put back after.
    cluster.ok(&["delete", "validatingwebhookconfiguration", "eval-admission-validating"], None);
    let _revalidate = RestoreOrder(cluster);
    let s = unique();
    let (rf, cq, ns, check) = (format!("rf-{s}"), format!("mk-{s}"), format!("order-{s}"), format!("mk-{s}"));
    cluster.apply(&[
        flavor(&rf),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": check},
               "spec": {"controllerName": "kueue.x-k8s.io/multikueue"}}),
        {
            let mut queue = cluster_queue(&cq, &rf, &[("cpu", "1", None)], None, Value::Null);
            queue["spec"]["admissionChecksStrategy"] = json!({"admissionChecks": [{"name": check}]});
            queue
        },
        namespace(&ns, Some("mk-queue"), &[]),
        local_queue(&ns, "mk-queue", &cq),
    ]);
    // Kueue's webhook answers from its cache: wait until it knows the queue.
    let multikueue = Some("kueue.x-k8s.io/multikueue");
    let probe = |name: &str| {
        let printed: Value = serde_json::from_str(&cluster.ok(
            &["create", "--dry-run=server", "-o", "json", "-f", "-"],
            Some(&evaluation(&ns, name, "1", &[], &[]).to_string()),
        ))
        .unwrap();
        printed
    };
    wait_for("Kueue's cache to know LocalQueue mk-queue", ADMISSION_WAIT, || {
        (probe("probe")["spec"]["managedBy"].as_str() == multikueue).then_some(())
    });

    let stored = cluster.create(&evaluation(&ns, "in-order", "1", &[], &[]));
    assert_eq!(stored["metadata"]["labels"][QUEUE_LABEL], "mk-queue");
    assert_eq!(stored["spec"]["suspend"], true);
    assert_eq!(stored["spec"]["managedBy"].as_str(), multikueue, "Kueue's defaulting saw our label: {stored}");
    let workload = wait_for("Kueue's Workload", ADMISSION_WAIT, || cluster.job_workload(&ns, "in-order"));
    assert_eq!(workload["spec"]["queueName"], "mk-queue");

    // Not an evaluation: eval-admission leaves it alone, so Kueue sees no label and does nothing.
    let mut other = evaluation(&ns, "not-ours", "1", &[], &[]);
    other["metadata"]["labels"] = json!({"app": "web"});
    let stored = cluster.create(&other);
    assert!(stored["spec"].get("managedBy").is_none() && stored["spec"]["suspend"] != true, "{stored}");

    // Our configuration renamed to sort after Kueue's: the label arrives too late for Kueue's defaulting.
    let mut renamed: Value = serde_json::from_str(
        &cluster.ok(&["get", "mutatingwebhookconfiguration", "eval-admission-mutating", "-o", "json"], None),
    )
    .unwrap();
    let metadata = renamed["metadata"].as_object_mut().unwrap();
    metadata.retain(|key, _| key == "labels");
    metadata.insert("name".into(), "zz-eval-admission-mutating".into());
    let _restore = RestoreOrder(cluster);
    cluster.create(&renamed);
    cluster.ok(&["delete", "mutatingwebhookconfiguration", "eval-admission-mutating"], None);
    wait_for("the API server to call our configuration by its new name", ADMISSION_WAIT, || {
        let printed = probe("probe");
        let names = cluster.ok(&["get", "mutatingwebhookconfigurations", "-o", "name"], None);
        (printed["metadata"]["labels"][QUEUE_LABEL] == "mk-queue" && !names.contains("/eval-admission-mutating\n"))
            .then_some(())
    });
    let stored = cluster.create(&evaluation(&ns, "out-of-order", "1", &[], &[]));
    assert_eq!(stored["metadata"]["labels"][QUEUE_LABEL], "mk-queue", "still labelled, by us");
    assert_eq!(stored["spec"]["suspend"], true, "and suspended, by us");
    assert!(stored["spec"].get("managedBy").is_none(), "Kueue's defaulting ran before the label existed: {stored}");
}
