//! Seeded set-ups for the differential test: what a platform team could
//! plausibly have in a cluster, and an evaluation submitted into it.
//!
//! Each scenario is drawn from its own RNG stream (seed, index), so any one of
//! them can be regenerated alone. The objects are valid as Kueue's CRDs
//! validate them (limits only with a cohort, lendingLimit <= nominalQuota, the
//! same resources in every flavor of a group), since the API server would
//! refuse anything else. Nothing here knows what Kueue will decide.

use eval_admission::vocabulary::kueue::KueueVersion;
use serde_json::{Map, Value, json};
use testkit::workload::{self, JobBuilder, JobSetBuilder};

/// SplitMix64: small, fast, and the same sequence on every platform and version.
pub struct Rng(u64);

impl Rng {
    pub fn for_scenario(seed: u64, index: u64) -> Self {
        let mut rng = Rng(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        rng.next();
        rng
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// 0..n
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// Picks by weight: `[(weight, item)]`.
    pub fn weighted<'a, T>(&mut self, items: &'a [(u64, T)]) -> &'a T {
        let total: u64 = items.iter().map(|(w, _)| w).sum();
        let mut roll = self.below(total);
        for (weight, item) in items {
            if roll < *weight {
                return item;
            }
            roll -= weight;
        }
        &items[items.len() - 1].1
    }
}

#[derive(Clone)]
pub struct Scenario {
    pub id: String,
    pub objects: Vec<Value>,
    pub workload: Value,
}

const EVAL_NAMESPACE: &str = "team-a";
const FLAVORS: [&str; 3] = ["default-flavor", "a100", "h100"];
const GPU: &str = "nvidia.com/gpu";
const GPU_PRODUCT: &str = "nvidia.com/gpu.product";
/// Mixed into the seed for the placement stream.
const PLACEMENT_STREAM: u64 = 0x7A1E_5EED_0000_0031;

pub fn scenario(seed: u64, index: u64) -> Scenario {
    let mut rng = Rng::for_scenario(seed, index);
    let mut objects = Vec::new();

    // Namespaces, with the label the API server always sets.
    let team_a_default_queue = rng.chance(25);
    let namespaces = [("team-a", "a"), ("team-b", "b"), ("research", "r")];
    for (name, team) in namespaces {
        let mut labels = json!({"kubernetes.io/metadata.name": name, "team": team});
        if rng.chance(70) {
            labels["kueue-managed"] = json!("true");
        }
        objects.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}));
    }

    // Placement (node labels, taints, selectors, affinity, tolerations) is
    // drawn from a stream of its own, so the rest of each set-up is the one
    // the same seed gave before placement was generated.
    let mut placing = Rng::for_scenario(seed ^ PLACEMENT_STREAM, index);

    // ResourceFlavors.
    let flavor_count = 1 + rng.below(3) as usize;
    let flavors: Vec<&str> = FLAVORS[..flavor_count].to_vec();
    for flavor in &flavors {
        if rng.chance(4) {
            continue; // referenced but never created: the ClusterQueue is inactive
        }
        // Node labels on every flavor, under one key, as a cluster with node
        // pools has them: the judge's probes pin a flavor through them (a
        // nodeSelector excludes a flavor only where their keys meet).
        let spec = flavor_placement(&mut placing, flavor);
        objects.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": flavor}, "spec": spec}));
    }

    // A cohort tree of up to three levels; Cohort objects only where they say
    // something (a parent or quota), as an administrator would write them.
    let cohorts = cohort_tree(&mut rng, &flavors, &mut objects);

    // AdmissionChecks: one Active, one not.
    objects.push(admission_check("ac-ready", true));
    objects.push(admission_check("ac-inactive", false));

    // ClusterQueues.
    let cq_count = 1 + rng.below(6) as usize;
    let mut cluster_queues = Vec::new();
    for i in 0..cq_count {
        let name = format!("cq-{i}");
        objects.push(cluster_queue(&mut rng, &name, &flavors, &cohorts));
        cluster_queues.push(name);
    }

    // LocalQueues: most ClusterQueues get one in the evaluation's namespace,
    // others in the other namespaces (where probes and other teams submit).
    let mut eval_queues = Vec::new();
    for cq in &cluster_queues {
        if rng.chance(80) {
            let name = format!("lq-{cq}");
            let mut spec = json!({"clusterQueue": cq});
            if rng.chance(5) {
                spec["stopPolicy"] = json!(rng.pick(&["Hold", "HoldAndDrain"]));
            }
            objects.push(local_queue(EVAL_NAMESPACE, &name, spec));
            eval_queues.push(name);
        }
        for ns in ["team-b", "research"] {
            if rng.chance(30) {
                objects.push(local_queue(ns, &format!("lq-{cq}"), json!({"clusterQueue": cq})));
            }
        }
    }
    if rng.chance(5) {
        // A LocalQueue whose ClusterQueue does not exist.
        objects.push(local_queue(EVAL_NAMESPACE, "orphan", json!({"clusterQueue": "cq-missing"})));
        eval_queues.push("orphan".into());
    }

    // Priority classes: WorkloadPriorityClasses, PriorityClasses, and the two
    // system ones every real cluster has (when the state was exported whole).
    let mut workload_classes = Vec::new();
    for (name, value) in [("wpc-low", 100), ("wpc-mid", 500), ("wpc-high", 1000)] {
        if rng.chance(50) {
            objects.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": {"name": name}, "value": value}));
            workload_classes.push(name);
        }
    }
    let mut pod_classes = Vec::new();
    for (name, value) in [("pc-low", 50), ("pc-mid", 200), ("pc-high", 1000)] {
        if rng.chance(45) {
            let mut pc = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": value});
            if name == "pc-low" && rng.chance(30) {
                pc["globalDefault"] = json!(true);
            }
            objects.push(pc);
            pod_classes.push(name);
        }
    }
    if rng.chance(50) {
        for (name, value) in [("system-cluster-critical", 2_000_000_000), ("system-node-critical", 2_000_001_000)] {
            objects.push(json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": value}));
        }
    }

    // Kueue's Configuration, where Kueue keeps it (or absent: the release's).
    if rng.chance(40) {
        objects.push(kueue_config(&mut rng));
    }

    // The evaluation.
    let queue = if team_a_default_queue { None } else { queue_label(&mut rng, &eval_queues) };
    if team_a_default_queue {
        let annotation = queue_label(&mut rng, &eval_queues).unwrap_or_else(|| "lq-cq-0".into());
        let ns = objects.iter_mut().find(|o| o["kind"] == "Namespace" && o["metadata"]["name"] == EVAL_NAMESPACE);
        if let Some(ns) = ns {
            ns["metadata"]["annotations"] = json!({"kueue.x-k8s.io/default-queue-name": annotation});
        }
    }
    let workload_class = if rng.chance(45) {
        Some(if rng.chance(10) || workload_classes.is_empty() { "wpc-missing" } else { *rng.pick(&workload_classes) })
    } else {
        None
    };
    let mut workload = if rng.chance(55) {
        evalhub_job(&mut rng, index, queue.as_deref(), workload_class, &pod_classes)
    } else {
        aiperf_jobset(&mut rng, index, queue.as_deref(), workload_class, &pod_classes)
    };
    place_pods(&mut placing, &mut workload);
    partial_admission(&mut placing, &mut workload);
    wide_jobset(&mut placing, &mut workload);
    adjusted_resources(&mut placing, &mut objects, &mut workload);
    resource_settings(&mut placing, &mut objects, &mut workload);
    if !judged_release_since(0, 15, 0) {
        to_v1beta1(&mut objects);
    }

    Scenario { id: format!("s{seed}-{index}"), objects, workload }
}

/// The same set-up in Kueue's v1beta1 API, for a release before v0.15.0,
/// which serves no kueue.x-k8s.io/v1beta2 (it arrives in v0.15.0): every
/// Kueue object's apiVersion, and the one field the generator writes whose
/// name differs, ClusterQueue `spec.cohortName` (v1beta1 `spec.cohort`;
/// apis/kueue/v1beta1 clusterqueue_conversion.go at v0.16.6). The rest of
/// what it writes has the same names and meaning in both (checked against
/// the v1beta1 types at v0.14.8), and before v0.13.0 the Cohort, which is
/// v1alpha1 there. Done after the draw, so the set-up is the
/// one the same seed gives the default judge.
fn to_v1beta1(objects: &mut [Value]) {
    for object in objects.iter_mut() {
        if object["apiVersion"] != "kueue.x-k8s.io/v1beta2" {
            continue;
        }
        object["apiVersion"] = json!("kueue.x-k8s.io/v1beta1");
        // Before v0.13.0 Cohort is served as v1alpha1 only, its parent in
        // `spec.parent` (apis/kueue/v1alpha1/cohort_types.go at v0.12.10;
        // v1beta1 Cohort, with `spec.parentName`, arrives in v0.13.0).
        if object["kind"] == "Cohort" && !judged_release_since(0, 13, 0) {
            object["apiVersion"] = json!("kueue.x-k8s.io/v1alpha1");
            if let Some(spec) = object["spec"].as_object_mut()
                && let Some(parent) = spec.remove("parentName")
            {
                spec.insert("parent".into(), parent);
            }
        }
        if object["kind"] == "ClusterQueue"
            && let Some(spec) = object["spec"].as_object_mut()
            && let Some(cohort) = spec.remove("cohortName")
        {
            spec.insert("cohort".into(), cohort);
        }
    }
}

fn queue_label(rng: &mut Rng, eval_queues: &[String]) -> Option<String> {
    if eval_queues.is_empty() || rng.chance(8) {
        return Some("lq-missing".into());
    }
    Some(rng.pick(eval_queues).clone())
}

struct Cohorts {
    /// Names a ClusterQueue may join (leaves and inner cohorts alike).
    names: Vec<String>,
}

fn cohort_tree(rng: &mut Rng, flavors: &[&str], objects: &mut Vec<Value>) -> Cohorts {
    let depth = rng.below(4); // 0: no cohorts
    let mut names = Vec::new();
    if depth == 0 {
        return Cohorts { names };
    }
    let mut parent: Option<String> = None;
    for level in 0..depth {
        let name = if level == 0 { "root".to_string() } else { format!("level-{level}") };
        let mut spec = Map::new();
        if let Some(parent) = &parent {
            spec.insert("parentName".into(), json!(parent));
        }
        if rng.chance(30) {
            // A Cohort's own quota: lends to its subtree, or caps what it borrows.
            let mut resource = json!({"name": "cpu", "nominalQuota": rng.below(5)});
            if rng.chance(50) {
                resource["borrowingLimit"] = json!(rng.below(3));
            }
            if rng.chance(30) {
                resource["lendingLimit"] = json!(0);
            }
            spec.insert(
                "resourceGroups".into(),
                json!([{"coveredResources": ["cpu"], "flavors": [{"name": flavors[0], "resources": [resource]}]}]),
            );
        }
        if !spec.is_empty() || rng.chance(50) {
            objects.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                "metadata": {"name": name}, "spec": Value::Object(spec)}));
        }
        names.push(name.clone());
        // A sibling leaf under the same parent, sometimes.
        if level > 0 && rng.chance(30) {
            let sibling = format!("{name}-b");
            objects.push(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                "metadata": {"name": sibling}, "spec": {"parentName": parent}}));
            names.push(sibling);
        }
        parent = Some(name);
    }
    Cohorts { names }
}

fn cluster_queue(rng: &mut Rng, name: &str, flavors: &[&str], cohorts: &Cohorts) -> Value {
    let mut spec = Map::new();
    let cohort = (!cohorts.names.is_empty() && rng.chance(70)).then(|| rng.pick(&cohorts.names).clone());
    if let Some(cohort) = &cohort {
        spec.insert("cohortName".into(), json!(cohort));
    }
    let selectors = [
        (12, None),
        (50, Some(json!({}))),
        (20, Some(json!({"matchLabels": {"team": "a"}}))),
        (10, Some(json!({"matchLabels": {"team": "b"}}))),
        (8, Some(json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "r"]}]}))),
    ];
    let selector = rng.weighted(&selectors);
    if let Some(selector) = selector {
        spec.insert("namespaceSelector".into(), selector.clone());
    }
    if rng.chance(6) {
        spec.insert("stopPolicy".into(), json!(rng.pick(&["Hold", "HoldAndDrain"])));
    }
    if rng.chance(10) {
        let check = rng.pick(&["ac-ready", "ac-inactive", "ac-missing"]);
        spec.insert("admissionChecksStrategy".into(), json!({"admissionChecks": [{"name": check}]}));
    }
    let mut preemption = Map::new();
    if rng.chance(60) {
        preemption.insert(
            "withinClusterQueue".into(),
            json!(rng.pick(&["Never", "LowerPriority", "LowerOrNewerEqualPriority"])),
        );
    }
    if rng.chance(50) {
        preemption.insert("reclaimWithinCohort".into(), json!(rng.pick(&["Never", "LowerPriority", "Any"])));
    }
    if rng.chance(25) {
        let borrow = if rng.chance(70) {
            json!({"policy": "LowerPriority", "maxPriorityThreshold": rng.pick(&[0, 100, 200, 500, 1000])})
        } else {
            json!({"policy": "Never"})
        };
        preemption.insert("borrowWithinCohort".into(), borrow);
    }
    if !preemption.is_empty() {
        spec.insert("preemption".into(), Value::Object(preemption));
    }

    // Resource groups: cpu and memory on one flavor or two; GPUs on the GPU
    // flavors when there are any.
    let mut groups = Vec::new();
    let has_cohort = cohort.is_some();
    let cpu_flavors: Vec<&str> =
        if flavors.len() > 1 && rng.chance(30) { flavors[..2].to_vec() } else { vec![flavors[0]] };
    groups.push(json!({
        "coveredResources": ["cpu", "memory"],
        "flavors": cpu_flavors.iter().map(|f| json!({"name": f, "resources": [
            quota(rng, "cpu", 16, has_cohort),
            quota(rng, "memory", 64, has_cohort),
        ]})).collect::<Vec<_>>(),
    }));
    let gpu_flavors: Vec<&str> = flavors.iter().copied().filter(|f| *f != "default-flavor").collect();
    if !gpu_flavors.is_empty() && rng.chance(60) && !cpu_flavors.iter().any(|f| gpu_flavors.contains(f)) {
        let chosen: Vec<&str> =
            if gpu_flavors.len() > 1 && rng.chance(50) { gpu_flavors.clone() } else { vec![*rng.pick(&gpu_flavors)] };
        groups.push(json!({
            "coveredResources": [GPU],
            "flavors": chosen.iter().map(|f| json!({"name": f, "resources": [quota(rng, GPU, 8, has_cohort)]}))
                .collect::<Vec<_>>(),
        }));
    }
    spec.insert("resourceGroups".into(), json!(groups));
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": Value::Object(spec)})
}

/// One resource's quota; memory in Gi. Limits only with a cohort (Kueue's CRD rule).
fn quota(rng: &mut Rng, resource: &str, max: u64, has_cohort: bool) -> Value {
    // Mostly enough for one evaluation; sometimes too little, sometimes none.
    let (small, large) = (rng_range(rng, 1, max / 2), rng_range(rng, max / 2, max));
    let nominal = *rng.weighted(&[(10, 0), (25, small), (65, large)]);
    let amount = |v: u64| if resource == "memory" { json!(format!("{v}Gi")) } else { json!(v) };
    let mut q = json!({"name": resource, "nominalQuota": amount(nominal)});
    if has_cohort && rng.chance(30) {
        q["borrowingLimit"] = amount(rng.below(max / 2 + 1));
    }
    if has_cohort && rng.chance(25) {
        q["lendingLimit"] = amount(rng.below(nominal + 1));
    }
    q
}

fn rng_range(rng: &mut Rng, low: u64, high: u64) -> u64 {
    low + rng.below(high.saturating_sub(low) + 1)
}

fn local_queue(namespace: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace}, "spec": spec})
}

fn admission_check(name: &str, active: bool) -> Value {
    json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": name},
        "spec": {"controllerName": "example.com/check"},
        "status": {"conditions": [{"type": "Active", "status": if active { "True" } else { "False" },
            "reason": "Generated", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
}

fn kueue_config(rng: &mut Rng) -> Value {
    // Before v0.15.0 Kueue knows config v1beta1 only, where waitForPodsReady
    // and fairSharing are on with `enable: true` (v1beta2: by being there).
    let v1beta1 = !judged_release_since(0, 15, 0);
    let (api_version, enable) = if v1beta1 { ("v1beta1", "  enable: true\n") } else { ("v1beta2", "") };
    let mut config = format!("apiVersion: config.kueue.x-k8s.io/{api_version}\nkind: Configuration\n");
    config.push_str("integrations:\n  frameworks:\n  - batch/job\n");
    if rng.chance(85) {
        config.push_str("  - jobset.x-k8s.io/jobset\n");
    }
    if rng.chance(40) {
        config.push_str("managedJobsNamespaceSelector:\n  matchLabels:\n    kueue-managed: \"true\"\n");
    }
    if rng.chance(30) {
        config.push_str(&format!("waitForPodsReady:\n{enable}  timeout: 5m\n"));
    }
    if rng.chance(20) {
        config.push_str(&format!(
            "fairSharing:\n{enable}  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]\n"
        ));
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
        "data": {"controller_manager_config.yaml": config}})
}

/// Container requests: small, so that they fit some quotas and not others.
fn requests(rng: &mut Rng, gpu: bool) -> Value {
    let mut r = json!({"cpu": format!("{}", 1 + rng.below(3)), "memory": format!("{}Gi", 1 + rng.below(8))});
    if gpu {
        r[GPU] = json!(format!("{}", 1 + rng.below(2)));
    }
    r
}

fn pod_class(rng: &mut Rng, pod_classes: &[&str], workload_class: Option<&str>) -> Option<String> {
    if let Some(class) = workload_class
        && rng.chance(30)
    {
        // EvalHub's hardware profiles name the same class in both places.
        return Some(class.to_string());
    }
    if rng.chance(35) {
        return Some(if pod_classes.is_empty() || rng.chance(15) {
            "pc-missing".to_string()
        } else {
            rng.pick(pod_classes).to_string()
        });
    }
    None
}

fn pod_spec(rng: &mut Rng, class: Option<String>, gpu: bool) -> Value {
    workload::pod_spec("main", "busybox", Some(requests(rng, gpu)), class.as_deref())
}

fn evalhub_job(
    rng: &mut Rng,
    index: u64,
    queue: Option<&str>,
    workload_class: Option<&str>,
    pod_classes: &[&str],
) -> Value {
    let class = pod_class(rng, pod_classes, workload_class);
    let gpu = rng.chance(40);
    let parallelism = 1 + rng.below(2);
    JobBuilder::new(EVAL_NAMESPACE, &format!("evalhub-{index}"))
        .label_object(workload::evalhub_labels(&format!("job-{index}"), None))
        .maybe(queue, JobBuilder::queue)
        .maybe(workload_class, JobBuilder::priority_class)
        .parallelism(parallelism)
        .backoff_limit(0)
        .pod_labels_from_job()
        .pod(pod_spec(rng, class, gpu))
        .build()
}

fn aiperf_jobset(
    rng: &mut Rng,
    index: u64,
    queue: Option<&str>,
    workload_class: Option<&str>,
    pod_classes: &[&str],
) -> Value {
    let mut jobset = JobSetBuilder::new(EVAL_NAMESPACE, &format!("aiperf-{index}"))
        .labels(&[("app", "aiperf"), ("aiperf.nvidia.com/job-id", &format!("job-{index}"))])
        .maybe(queue, JobSetBuilder::queue)
        .maybe(workload_class, JobSetBuilder::priority_class);
    for (i, name) in ["controller", "workers", "extra"].iter().enumerate().take(1 + rng.below(3) as usize) {
        let class = if i == 0 && rng.chance(50) { None } else { pod_class(rng, pod_classes, workload_class) };
        let gpu = *name != "controller" && rng.chance(50);
        let replicas = 1 + rng.below(2);
        let pod = pod_spec(rng, class, gpu);
        jobset = jobset.replicated_job(
            name,
            replicas,
            json!({"parallelism": 1, "completions": 1, "backoffLimit": 0, "template": {"spec": pod}}),
        );
    }
    if queue.is_some() {
        jobset = jobset.suspend(true);
    }
    jobset.build()
}

/// A flavor's node labels and taints as GPU node pools carry them: every
/// flavor its pool label; GPU flavors often the GPU product label (what
/// EvalHub's hardware profiles and AIPerf users select on) and the GPU
/// operator's taint, sometimes tolerated by the flavor itself.
fn flavor_placement(rng: &mut Rng, flavor: &str) -> Value {
    let mut labels = json!({"node-pool": flavor});
    let gpu = flavor != "default-flavor";
    if gpu && rng.chance(60) {
        labels[GPU_PRODUCT] = json!(flavor.to_uppercase());
    }
    let mut spec = json!({"nodeLabels": labels});
    if rng.chance(if gpu { 45 } else { 5 }) {
        let effect = *rng.weighted(&[(70, "NoSchedule"), (20, "NoExecute"), (10, "PreferNoSchedule")]);
        spec["nodeTaints"] = json!([{"key": GPU, "value": "present", "effect": effect}]);
        if rng.chance(10) {
            spec["tolerations"] = json!([{"key": GPU, "operator": "Exists"}]);
        }
    }
    spec
}

/// Each pod template, sometimes: a nodeSelector, a required node affinity
/// (In, NotIn, Exists, DoesNotExist over the flavors' keys and one no flavor
/// has), tolerations (right, wrong, or for every taint).
fn place_pods(rng: &mut Rng, workload: &mut Value) {
    for pod in pod_templates(workload) {
        if !rng.chance(40) {
            continue;
        }
        let value = |rng: &mut Rng, key: &str| -> String {
            match key {
                "node-pool" => rng.pick(&["default-flavor", "a100", "h100", "l40s"]).to_string(),
                GPU_PRODUCT => rng.pick(&["A100", "H100", "L40S"]).to_string(),
                _ => rng.pick(&["zone-a", "zone-b"]).to_string(),
            }
        };
        let keys = ["node-pool", GPU_PRODUCT, GPU_PRODUCT, "topology.kubernetes.io/zone"];
        if rng.chance(45) {
            let key = *rng.pick(&keys);
            pod["nodeSelector"] = json!({key: value(rng, key)});
        }
        if rng.chance(35) {
            let terms: Vec<Value> = (0..1 + rng.below(2))
                .map(|_| {
                    let requirements: Vec<Value> = (0..1 + rng.below(2))
                        .map(|_| {
                            let key = *rng.pick(&keys);
                            match *rng.pick(&["In", "In", "NotIn", "Exists", "DoesNotExist"]) {
                                operator @ ("Exists" | "DoesNotExist") => json!({"key": key, "operator": operator}),
                                operator => {
                                    let values: Vec<String> = (0..1 + rng.below(2)).map(|_| value(rng, key)).collect();
                                    json!({"key": key, "operator": operator, "values": values})
                                }
                            }
                        })
                        .collect();
                    json!({"matchExpressions": requirements})
                })
                .collect();
            pod["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
        }
        if rng.chance(55) {
            let toleration = rng
                .weighted(&[
                    (50, json!({"key": GPU, "operator": "Exists", "effect": "NoSchedule"})),
                    (20, json!({"key": GPU, "operator": "Equal", "value": "present"})),
                    (10, json!({"key": GPU, "operator": "Equal", "value": "absent"})),
                    (10, json!({"operator": "Exists"})),
                    (10, json!({"key": GPU, "operator": "Exists", "effect": "NoExecute"})),
                ])
                .clone();
            pod["tolerations"] = json!([toleration]);
        }
    }
}

/// Sometimes a wider Job that may run with fewer pods: parallelism 3 to 8 and
/// `kueue.x-k8s.io/job-min-parallelism` below it (Kueue's webhook refuses
/// anything outside 1..parallelism, so nothing else is drawn).
fn partial_admission(rng: &mut Rng, workload: &mut Value) {
    if workload["kind"] != "Job" || !rng.chance(20) {
        return;
    }
    let pods = 3 + rng.below(6);
    workload["spec"]["parallelism"] = json!(pods);
    workload["spec"]["completions"] = json!(pods);
    if rng.chance(80) {
        let min = 1 + rng.below(pods - 1);
        workload["metadata"]["annotations"] = json!({"kueue.x-k8s.io/job-min-parallelism": min.to_string()});
    }
}

/// Sometimes a JobSet of 17 to 20 replicated jobs, around the 18 pod sets a
/// Kueue Workload holds: copies of its last one, renamed.
fn wide_jobset(rng: &mut Rng, workload: &mut Value) {
    if workload["kind"] != "JobSet" || !rng.chance(4) {
        return;
    }
    let wanted = 17 + rng.below(4) as usize;
    let Some(jobs) = workload["spec"]["replicatedJobs"].as_array_mut() else { return };
    let Some(last) = jobs.last().cloned() else { return };
    for index in jobs.len()..wanted {
        let mut job = last.clone();
        job["name"] = json!(format!("shard-{index}"));
        jobs.push(job);
    }
}

/// What Kueue adds to requests and holds them to, sometimes: a LimitRange in
/// the evaluation's namespace (defaults, a default limit that may sit below a
/// request, min and max, for containers and pods), RuntimeClasses with
/// overhead (and pod templates naming them, or one that does not exist),
/// containers with limits and no requests, init containers and sidecars.
fn adjusted_resources(rng: &mut Rng, objects: &mut Vec<Value>, workload: &mut Value) {
    if rng.chance(25) {
        let mut container = Map::from_iter([("type".to_string(), json!("Container"))]);
        if rng.chance(60) {
            container.insert(
                "defaultRequest".into(),
                json!({"cpu": format!("{}m", 250 * (1 + rng.below(8))), "memory": "1Gi"}),
            );
        }
        if rng.chance(50) {
            container.insert("default".into(), json!({"cpu": format!("{}", 1 + rng.below(4))}));
        }
        if rng.chance(30) {
            container.insert(
                "max".into(),
                json!({"cpu": format!("{}", 1 + rng.below(4)), "memory": format!("{}Gi", 2 + rng.below(8))}),
            );
        }
        if rng.chance(15) {
            container.insert("min".into(), json!({"memory": format!("{}Gi", 1 + rng.below(2))}));
        }
        let mut limits = vec![Value::Object(container)];
        if rng.chance(25) {
            limits.push(json!({"type": "Pod", "max": {"cpu": format!("{}", 2 + rng.below(6))}}));
        }
        objects.push(json!({"apiVersion": "v1", "kind": "LimitRange",
            "metadata": {"name": "defaults", "namespace": EVAL_NAMESPACE}, "spec": {"limits": limits}}));
    }
    let with_runtime_classes = rng.chance(20);
    if with_runtime_classes {
        objects.push(json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata"},
            "handler": "kata", "overhead": {"podFixed": {"cpu": format!("{}m", 250 * (1 + rng.below(6))), "memory": "160Mi"}}}));
        objects.push(json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"}));
    }
    for pod in pod_templates(workload) {
        if with_runtime_classes && rng.chance(40) {
            pod["runtimeClassName"] = json!(rng.pick(&["kata", "nvidia", "gvisor"]));
        }
        let container = &mut pod["containers"][0]["resources"];
        if rng.chance(15) {
            // Limits only: Kueue counts them as the requests.
            let requests = container["requests"].take();
            *container = json!({"limits": requests});
        } else if rng.chance(15) {
            container["limits"] = json!({"cpu": format!("{}", 1 + rng.below(3))});
        }
        if rng.chance(15) {
            let restart = if rng.chance(50) { json!("Always") } else { Value::Null };
            let mut init = json!({"name": "init", "image": "busybox",
                "resources": {"requests": {"cpu": format!("{}", 1 + rng.below(3)), "memory": "1Gi"}}});
            if !restart.is_null() {
                init["restartPolicy"] = restart;
            }
            pod["initContainers"] = json!([init]);
        }
    }
}

/// Kueue's Configuration `resources`, sometimes (where a Configuration was
/// drawn): RDMA devices excluded, a GPU-slice resource replaced by whole
/// GPUs, or undeclared resources ignored; and the first container asking for
/// an RDMA device or a slice.
fn resource_settings(rng: &mut Rng, objects: &mut [Value], workload: &mut Value) {
    let config = objects.iter_mut().find(|o| o["kind"] == "ConfigMap");
    if let Some(config) = config
        && rng.chance(40)
    {
        let mut settings = *rng.pick(&[
            "resources:\n  excludeResourcePrefixes: [rdma/]\n",
            "resources:\n  transformations:\n  - input: example.com/gpu-slice\n    strategy: Replace\n    outputs: {nvidia.com/gpu: \"1\"}\n",
            "resources:\n  transformations:\n  - input: example.com/gpu-slice\n    outputs: {nvidia.com/gpu: 500m}\n",
            "resources:\n  quotaCheckStrategy: IgnoreUndeclared\n",
        ]);
        // Drawn for every release alike, so that the rest of the set-up stays
        // the one the same seed gives the default judge.
        if settings.contains("quotaCheckStrategy") && !judged_release_since(0, 18, 0) {
            settings = "";
        }
        let text = config["data"]["controller_manager_config.yaml"].as_str().unwrap_or_default().to_string();
        config["data"]["controller_manager_config.yaml"] = json!(text + settings);
    }
    if rng.chance(15) {
        let first = if workload["kind"] == "Job" {
            &mut workload["spec"]["template"]["spec"]["containers"][0]
        } else {
            &mut workload["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
        };
        let resource = *rng.pick(&["rdma/ib", "example.com/gpu-slice"]);
        if first["resources"]["requests"].is_object() {
            first["resources"]["requests"][resource] = json!(format!("{}", 1 + rng.below(2)));
        }
    }
    // A CPU-only template that still lists `nvidia.com/gpu: "0"`: a zero
    // request, which Kueue skips where no resource group covers it only from
    // v0.16.0 (Kueue #8241). The last draw of a set-up, so the rest of it
    // stays what the same seed gave before.
    if rng.chance(8) {
        for pod in pod_templates(workload) {
            let requests = &mut pod["containers"][0]["resources"]["requests"];
            if requests.is_object() && requests.get(GPU).is_none() {
                requests[GPU] = json!("0");
            }
        }
    }
}

/// Whether the release the differential test judges (FIDELITY_KUEUE; unset,
/// the one tests/kueue/go.mod pins, the newest) is at or after
/// `major.minor.patch`. A Configuration field a release does not know is not
/// one a cluster of it can have: Kueue decodes its Configuration strictly
/// and refuses to start (`resources.quotaCheckStrategy` arrives in v0.18.0,
/// Kueue #9808; v0.16.6 stops at "unknown field").
fn judged_release_since(major: u16, minor: u16, patch: u16) -> bool {
    super::judged_release().is_none_or(|release| {
        KueueVersion::parse(&release).expect("a Kueue release such as v0.18.2").since(major, minor, patch)
    })
}

/// The pod specs of a Job (one) or a JobSet (one per replicated job).
fn pod_templates(workload: &mut Value) -> Vec<&mut Value> {
    if workload["kind"] == "Job" {
        return vec![&mut workload["spec"]["template"]["spec"]];
    }
    workload["spec"]["replicatedJobs"]
        .as_array_mut()
        .map(|jobs| jobs.iter_mut().map(|job| &mut job["template"]["spec"]["template"]["spec"]).collect())
        .unwrap_or_default()
}

/// [`pod_templates`], to read.
pub fn pod_templates_of(workload: &Value) -> Vec<&Value> {
    if workload["kind"] == "Job" {
        return vec![&workload["spec"]["template"]["spec"]];
    }
    workload["spec"]["replicatedJobs"]
        .as_array()
        .map(|jobs| jobs.iter().map(|job| &job["template"]["spec"]["template"]["spec"]).collect())
        .unwrap_or_default()
}
