//! (g) The audit: evaluations already queued or running, judged again when the
//! cluster changes, reported on the workload (a Warning Event), in the metrics
//! and in a PolicyReport, and by `eval-admission audit` and `review job/NAME`
//! against the live cluster; all cleared when the cause goes.

use super::*;

/// How long the audit gets to notice a change (the issue's bound).
const AUDIT_WAIT: Duration = Duration::from_secs(30);

impl Cluster {
    /// `eval_admission_audit_findings` for this namespace and reason.
    fn findings_gauge(&self, namespace: &str, reason: &str) -> Option<i64> {
        let metrics = common::control_plane::http_get(self.webhook.admin_port, "/metrics")?;
        let series = format!(
            "eval_admission_audit_findings{{reason=\"{reason}\",enforcement=\"Deny\",namespace=\"{namespace}\"}} "
        );
        metrics.lines().find_map(|line| line.strip_prefix(&series)?.trim().parse().ok())
    }

    /// The audit's PolicyReport of `namespace`, if there is one.
    fn policy_report(&self, namespace: &str) -> Option<Value> {
        let found = self
            .kubectl(&["get", "policyreports.wgpolicyk8s.io", "eval-admission", "-n", namespace, "-o", "json"], None);
        found.status.success().then(|| serde_json::from_slice(&found.stdout).unwrap())
    }

    /// `eval-admission ARGS --kubeconfig` against this cluster: (exit code, stdout).
    fn eval_admission(&self, args: &[&str]) -> (i32, String) {
        let output = Command::new(BIN)
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["--config", repo("tests/kueue/eval-admission-config.yaml").to_str().unwrap()])
            .output()
            .unwrap();
        assert!(output.status.code() != Some(2), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        (output.status.code().unwrap(), String::from_utf8(output.stdout).unwrap())
    }
}

#[test]
fn the_audit_reports_what_changed_under_queued_and_running_evaluations() {
    let cluster = cluster();
    let crds = Command::new(repo("hack/deploy-crds.sh")).output().unwrap();
    assert!(crds.status.success(), "{}", String::from_utf8_lossy(&crds.stderr));
    let policy_report_crd =
        format!("{}/wgpolicyk8s.io_policyreports.yaml", String::from_utf8(crds.stdout).unwrap().trim());
    cluster.ok(&["apply", "--server-side", "-f", &policy_report_crd], None);
    cluster.wait_established(&["-f", &policy_report_crd]).unwrap();

    // Queued, then its ClusterQueue stops selecting the namespace.
    let s = unique();
    let (rf, cq, ns) = (format!("rf-{s}"), format!("audit-{s}"), format!("audit-{s}"));
    let mut queue = cluster_queue(&cq, &rf, &[("cpu", "1", None)], None, Value::Null);
    queue["spec"]["namespaceSelector"] = json!({"matchLabels": {"audit": s}});
    cluster.apply(&[
        flavor(&rf),
        queue,
        namespace(&ns, Some("eval-queue"), &[("audit", &s)]),
        local_queue(&ns, "eval-queue", &cq),
    ]);
    cluster.create(&evaluation(&ns, "filler", "1", &[], &[]));
    wait_admitted(cluster, &ns, "filler");
    cluster.create(&evaluation(&ns, "waiting", "1", &[], &[]));
    wait_pending(cluster, &ns, "waiting");
    let (status, clean) = cluster.eval_admission(&["review", "job/waiting", "-n", &ns]);
    assert_eq!((status, clean.as_str()), (0, "1 workload audited, 0 found\n"), "waiting for quota is no finding");

    let narrowed = format!(r#"{{"spec":{{"namespaceSelector":{{"matchLabels":{{"audit":"nobody-{s}"}}}}}}}}"#);
    cluster.ok(&["patch", "clusterqueue.kueue.x-k8s.io", &cq, "--type=merge", "-p", &narrowed], None);
    let event = wait_for("the audit's Event on the waiting Job", AUDIT_WAIT, || {
        kueue_objects::audit_events(cluster, &ns, "waiting").into_iter().next()
    });
    assert_eq!((event["type"].as_str(), event["reason"].as_str()), (Some("Warning"), Some("NamespaceNotSelected")));
    let note = event["note"].as_str().unwrap();
    assert!(note.starts_with(&format!("Job {ns}/waiting")) && note.contains(&cq), "{note}");
    // The same message the live `review` gives, and a create would be refused with.
    let (status, review) = cluster.eval_admission(&["review", "job/waiting", "-n", &ns]);
    assert_eq!(status, 1);
    assert!(review.contains(note), "review says what the Event says:\n{review}\n{note}");
    let (status, audit) = cluster.eval_admission(&["audit", "-o", "json"]);
    assert_eq!(status, 1);
    let audit: Value = serde_json::from_str(&audit).unwrap();
    let reported: Vec<&Value> =
        audit["findings"].as_array().unwrap().iter().filter(|f| f["namespace"] == ns.as_str()).collect();
    assert_eq!(reported.len(), 1, "only the queued one: the running filler was admitted already");
    assert_eq!((reported[0]["name"].as_str(), reported[0]["message"].as_str()), (Some("waiting"), Some(note)));
    wait_for("the findings gauge to count it", AUDIT_WAIT, || {
        (cluster.findings_gauge(&ns, "namespace-not-selected") == Some(1)).then_some(())
    });
    let report = wait_for("the namespace's PolicyReport", AUDIT_WAIT, || cluster.policy_report(&ns));
    assert_eq!(report["summary"]["fail"], 1);
    assert_eq!(report["results"][0]["rule"], "namespace-not-selected");
    assert_eq!(report["results"][0]["resources"][0]["name"], "waiting");
    assert_eq!(report["results"][0]["message"], note);
    // Seen again in later rounds: still one Event.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(kueue_objects::audit_events(cluster, &ns, "waiting").len(), 1);

    let restored = format!(r#"{{"spec":{{"namespaceSelector":{{"matchLabels":{{"audit":"{s}"}}}}}}}}"#);
    cluster.ok(&["patch", "clusterqueue.kueue.x-k8s.io", &cq, "--type=merge", "-p", &restored], None);
    wait_for("the PolicyReport and the gauge to clear", AUDIT_WAIT, || {
        (cluster.policy_report(&ns).is_none() && cluster.findings_gauge(&ns, "namespace-not-selected").is_none())
            .then_some(())
    });

    // Running, borrowing from a neighbour that then gains reclaimWithinCohort: Any.
    let (cohort_name, lender, borrower, ns2) =
        (format!("c-{s}"), format!("lender-{s}"), format!("borrower-{s}"), format!("borrow-{s}"));
    cluster.apply(&[
        cluster_queue(&borrower, &rf, &[("cpu", "1", None)], Some(&cohort_name), Value::Null),
        cluster_queue(&lender, &rf, &[("cpu", "2", None)], Some(&cohort_name), json!({"reclaimWithinCohort": "Never"})),
        namespace(&ns2, Some("eval-queue"), &[]),
        local_queue(&ns2, "eval-queue", &borrower),
    ]);
    cluster.create(&evaluation(&ns2, "borrowing", "2", &[], &[]));
    wait_admitted(cluster, &ns2, "borrowing");
    assert!(kueue_objects::audit_events(cluster, &ns2, "borrowing").is_empty());
    let reclaim = r#"{"spec":{"preemption":{"reclaimWithinCohort":"Any"}}}"#;
    cluster.ok(&["patch", "clusterqueue.kueue.x-k8s.io", &lender, "--type=merge", "-p", reclaim], None);
    let event = wait_for("the audit's Event on the running Job", AUDIT_WAIT, || {
        kueue_objects::audit_events(cluster, &ns2, "borrowing").into_iter().next()
    });
    assert_eq!(event["reason"], "Preemptible");
    assert!(event["note"].as_str().unwrap().contains("Kueue could preempt it"), "{event}");
    assert!(!cluster.suspended("job", &ns2, "borrowing"), "it runs: reported, not stopped");
}
