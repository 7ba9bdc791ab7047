//! (f) The Red Hat build of Kueue's shape: the real Kueue v0.16.6 (the build's
//! release 1.3) as `openshift-kueue-operator:kueue-controller-manager`, with
//! the Configuration its operator writes to the ConfigMap eval-admission
//! reads, its webhooks called only in namespaces labelled
//! `kueue.openshift.io/managed: "true"`, and eval-admission installed with the
//! Red Hat profile (manifests/redhat-kueue) told that release. An environment
//! of its own, beside the shared one.

use common::control_plane::{ControlPlane, EvalAdmission, Kueue, KueueSetup};

use super::*;

/// The Red Hat build of Kueue 1.3 pins upstream v0.16.6.
const RELEASE: &str = "v0.16.6";
const OPERATOR_NAMESPACE: &str = "openshift-kueue-operator";
const SERVICE_ACCOUNT: &str = "system:serviceaccount:openshift-kueue-operator:kueue-controller-manager";
const MANAGED_LABEL: (&str, &str) = ("kueue.openshift.io/managed", "true");

/// The Configuration the operator (openshift/kueue-operator release-1.3,
/// pkg/configmap `defaultKueueConfigurationTemplate`) writes for a Kueue CR
/// enabling BatchJob and JobSet, with no gang scheduling, preemption policy
/// or label policy set: waitForPodsReady and fairSharing left out.
fn operator_configuration() -> Value {
    json!({
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": OPERATOR_NAMESPACE,
        "controller": {"groupKindConcurrency": {
            "Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 5, "LocalQueue.kueue.x-k8s.io": 1,
            "ClusterQueue.kueue.x-k8s.io": 1, "ResourceFlavor.kueue.x-k8s.io": 1,
        }},
        "clientConnection": {"qps": 50, "burst": 100},
        "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
        "managedJobsNamespaceSelector": {"matchLabels": {MANAGED_LABEL.0: MANAGED_LABEL.1}},
        "manageJobsWithoutQueueName": false,
    })
}

/// The shipped Red Hat profile's config, told the release this Kueue is.
fn red_hat_profile(into: &Path) -> PathBuf {
    let mut config: Value =
        serde_yaml::from_str(&std::fs::read_to_string(repo("manifests/redhat-kueue/config.yaml")).unwrap()).unwrap();
    config["kueue"]["version"] = RELEASE.into();
    let path = into.join("redhat-kueue-config.yaml");
    std::fs::write(&path, serde_yaml::to_string(&config).unwrap()).unwrap();
    path
}

/// Kueue first (its release's CRDs replace the plane's), then its ConfigMap,
/// then eval-admission, which reads both when it starts.
fn red_hat_cluster() -> Cluster {
    let plane = ControlPlane::start(&[]).unwrap();
    eprintln!("Red Hat-shaped environment in {}", plane.dir.display());
    let setup = KueueSetup {
        release: Some(RELEASE.to_string()),
        user: SERVICE_ACCOUNT.to_string(),
        namespace: OPERATOR_NAMESPACE.to_string(),
        configuration: operator_configuration(),
        webhook_namespace_label: Some((MANAGED_LABEL.0.to_string(), MANAGED_LABEL.1.to_string())),
    };
    let kueue = Kueue::start_with(&plane, &setup).unwrap();
    let config_map = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kueue-manager-config", "namespace": OPERATOR_NAMESPACE},
        "data": {"controller_manager_config.yaml": serde_yaml::to_string(kueue.configuration()).unwrap()},
    });
    plane.apply(&[config_map], &[]).unwrap();
    let config = red_hat_profile(&plane.dir);
    let webhook =
        EvalAdmission::start_with(&plane, Path::new(BIN), &config, &repo("manifests/redhat-kueue/webhooks")).unwrap();
    Environment { kueue: Some(kueue), webhook, plane }
}

#[test]
fn red_hat_build_queues_evaluations_where_kueue_manages_and_leaves_the_rest_alone() {
    let cluster = red_hat_cluster();
    // The served API agrees with the configured release; Kueue runs as a
    // process here, with no Deployment to read its release from.
    let expected = "ok\nnote: Kueue's release cannot be read from Deployment \
                    openshift-kueue-operator/kueue-controller-manager (it does not exist): judging by the config's \
                    kueue.version, v0.16.6\n";
    testkit::wait_for("/readyz to say what it knows of the release", Duration::from_secs(30), || {
        (testkit::http_get(cluster.webhook.admin_port, "/readyz")? == expected).then_some(())
    });

    let s = unique();
    let (rf, cq, managed, unmanaged) =
        (format!("rf-{s}"), format!("rh-{s}"), format!("managed-{s}"), format!("plain-{s}"));
    // Both namespaces have a LocalQueue named default, which upstream Kueue
    // v0.16.6's webhook would give an unlabelled Job in either (#13374); the
    // Red Hat build calls its webhook only in the labelled one.
    cluster.apply(&[
        flavor(&rf),
        cluster_queue(&cq, &rf, &[("cpu", "2", None)], None, Value::Null),
        namespace(&managed, None, &[MANAGED_LABEL]),
        local_queue(&managed, "default", &cq),
        namespace(&unmanaged, None, &[]),
        local_queue(&unmanaged, "default", &cq),
    ]);

    // The unmanaged one first: by the time Kueue has admitted the managed one,
    // it has had its chance at this one too.
    let left_alone = cluster.create(&evaluation(&unmanaged, "eval", "1", &[], &[]));
    assert!(
        left_alone["metadata"]["labels"].get(QUEUE_LABEL).is_none(),
        "no queue where Kueue does not manage: {left_alone}"
    );
    assert_ne!(left_alone["spec"]["suspend"], true, "not suspended, so not stranded: {left_alone}");

    let queued = cluster.create(&evaluation(&managed, "eval", "1", &[], &[]));
    assert_eq!(queued["metadata"]["labels"][QUEUE_LABEL], "default", "queued to the namespace's default LocalQueue");
    assert_eq!(queued["spec"]["suspend"], true, "stored suspended, for Kueue to start");
    // Kueue unsuspends it as its service account: the identity the profile
    // names, which its webhooks' not-kueue condition lets through.
    let workload = wait_admitted(&cluster, &managed, "eval");
    assert_eq!(workload["status"]["admission"]["clusterQueue"], cq.as_str());

    assert!(cluster.job_workload(&unmanaged, "eval").is_none(), "Kueue leaves the unmanaged namespace's Job alone");
    assert!(!cluster.suspended("job", &unmanaged, "eval"));
    let review = cluster.webhook.reviews("eval");
    assert!(review.iter().all(|entry| entry["decision"] != "denied"), "{review:?}");
}
