//! The objects both parts create: the base Kueue set-up, the platform at scale
//! (part B), and the EvalHub Job part A creates.

use super::*;

pub(crate) fn kueue(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", kind), plural)
}

pub(crate) fn dynamic(value: Value) -> Result<DynamicObject> {
    Ok(serde_json::from_value(value)?)
}

pub(crate) async fn create_cluster_scoped(client: &kube::Client, resource: &ApiResource, value: Value) -> Result<()> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), resource);
    api.create(&PostParams::default(), &dynamic(value)?).await.context("creating a Kueue object")?;
    Ok(())
}

pub(crate) async fn create_namespace(client: &kube::Client, name: &str, team: &str, cluster_queue: &str) -> Result<()> {
    let namespace: Namespace = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {"team": team, "kueue.openshift.io/managed": "true"},
            "annotations": {DEFAULT_QUEUE_ANNOTATION: QUEUE},
        }
    }))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    let resource = kueue("LocalQueue", "localqueues");
    let queue = dynamic(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": QUEUE, "namespace": name},
        "spec": {"clusterQueue": cluster_queue},
    }))?;
    Api::<DynamicObject>::namespaced_with(client.clone(), name, &resource)
        .create(&PostParams::default(), &queue)
        .await
        .with_context(|| format!("creating LocalQueue {name}/{QUEUE}"))?;
    Ok(())
}

pub(crate) fn resource_quota(cpu: u32, gpus: u32) -> Value {
    json!([{
        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
        "flavors": [{"name": "default-flavor", "resources": [
            {"name": "cpu", "nominalQuota": cpu},
            {"name": "memory", "nominalQuota": format!("{}Gi", cpu * 4)},
            {"name": "nvidia.com/gpu", "nominalQuota": gpus},
        ]}],
    }])
}

/// The shared objects: a flavor and `bench-cq` (no preemption, any namespace),
/// which every latency namespace's LocalQueue points to.
pub(crate) async fn create_base(client: &kube::Client) -> Result<()> {
    create_cluster_scoped(
        client,
        &kueue("ResourceFlavor", "resourceflavors"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}}),
    )
    .await?;
    create_cluster_scoped(
        client,
        &kueue("ClusterQueue", "clusterqueues"),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "bench-cq"},
               "spec": {"namespaceSelector": {}, "resourceGroups": resource_quota(1024, 64)}}),
    )
    .await
}

/// What a platform team has besides its namespaces: 10 team ClusterQueues (some
/// preempting, most in a two-level cohort tree) and a shared one, 3 Cohorts, 4
/// WorkloadPriorityClasses, 3 PriorityClasses. Returns the counts.
pub(crate) async fn create_platform(client: &kube::Client) -> Result<BTreeMap<&'static str, usize>> {
    let cohorts = kueue("Cohort", "cohorts");
    for (name, parent) in [("gpu-root", None), ("gpu-research", Some("gpu-root")), ("gpu-prod", Some("gpu-root"))] {
        let mut cohort = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": name}});
        if let Some(parent) = parent {
            cohort["spec"] = json!({"parentName": parent});
        }
        create_cluster_scoped(client, &cohorts, cohort).await?;
    }
    let cluster_queues = kueue("ClusterQueue", "clusterqueues");
    for team in 0..10 {
        let mut spec = json!({
            "namespaceSelector": {"matchLabels": {"team": format!("team-{team}")}},
            "resourceGroups": resource_quota(64, 8),
        });
        match team % 3 {
            0 => spec["preemption"] = json!({"withinClusterQueue": "LowerPriority"}),
            1 => spec["preemption"] = json!({"withinClusterQueue": "Never", "reclaimWithinCohort": "Never"}),
            _ => {}
        }
        if team < 4 {
            spec["cohortName"] = json!("gpu-research");
        } else if team < 8 {
            spec["cohortName"] = json!("gpu-prod");
        }
        create_cluster_scoped(
            client,
            &cluster_queues,
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                   "metadata": {"name": format!("team-{team}-cq")}, "spec": spec}),
        )
        .await?;
    }
    create_cluster_scoped(
        client,
        &cluster_queues,
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "shared-gpu-cq"},
               "spec": {"namespaceSelector": {}, "cohortName": "gpu-root",
                        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                        "resourceGroups": resource_quota(256, 32)}}),
    )
    .await?;
    let workload_priority_classes = kueue("WorkloadPriorityClass", "workloadpriorityclasses");
    for (name, value) in [("production", 1000), ("aiperf-high", 1000), ("routine", 500), ("experimental", 100)] {
        create_cluster_scoped(
            client,
            &workload_priority_classes,
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                   "metadata": {"name": name}, "value": value, "description": format!("{name} evaluations")}),
        )
        .await?;
    }
    let priority_classes = Api::<PriorityClass>::all(client.clone());
    for (name, value) in [("gpu-high", 1000), ("gpu-batch", 200), ("gpu-low", 10)] {
        let class: PriorityClass = serde_json::from_value(json!({"metadata": {"name": name}, "value": value}))?;
        priority_classes
            .create(&PostParams::default(), &class)
            .await
            .with_context(|| format!("PriorityClass {name}"))?;
    }
    // bench-cq from part A is one more ClusterQueue.
    Ok(BTreeMap::from([
        ("cluster_queues", 12),
        ("cohorts", 3),
        ("workload_priority_classes", 4),
        ("priority_classes", 3),
    ]))
}

/// The EvalHub Job of examples/evalhub-job.yaml, with generateName in `namespace`.
pub(crate) fn evalhub_job(namespace: &str) -> Result<Job> {
    let job = JobBuilder::evalhub_example().generate_name("evalhub-bench-").namespace(namespace).build();
    Ok(serde_json::from_value(job)?)
}

/// Queued: the label our namespace annotation names and spec.suspend true.
pub(crate) fn queued(job: &Job) -> bool {
    let label = job.metadata.labels.as_ref().and_then(|labels| labels.get(QUEUE_LABEL));
    let suspend = job.spec.as_ref().and_then(|spec| spec.suspend);
    label.map(String::as_str) == Some(QUEUE) && suspend == Some(true)
}

pub(crate) fn untouched(job: &Job) -> bool {
    let label = job.metadata.labels.as_ref().and_then(|labels| labels.get(QUEUE_LABEL));
    let suspend = job.spec.as_ref().and_then(|spec| spec.suspend);
    label.is_none() && suspend != Some(true)
}
