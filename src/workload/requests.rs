//! What Kueue counts against quota for a workload: its pod sets, their pod
//! counts and per-pod requests, with Kueue's arithmetic.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::limits::{LimitItem, ProblemKind, ResourceAmounts, ResourceProblem, Surroundings, keep_first};
use super::{
    Container, Placement, PodSpec, ResourceList, ResourceRequirements, Text, Tolerant, TolerantList, Workload,
    WorkloadKind,
};
use crate::vocabulary::kueue::DEFAULT_POD_SET_NAME;
use crate::vocabulary::quantity::{self, Quantity};

/// One podset of the Kueue Workload for a Job or JobSet, with what Kueue counts
/// against quota for it (Kueue v0.19.2 `pkg/workload` `totalRequestsFromPodSets`).
///
/// Values are milli-units in `i64`, saturating at `i64::MAX`. Kueue keeps `cpu` in
/// milli-units and every other resource in whole units rounded up per pod
/// (`pkg/resources` `ResourceValue`), so non-cpu values here are always multiples
/// of 1000: compare them with quotas converted the same way
/// ([`Quantity::kueue_milli`]). Resources requested as `0` are present with `0`,
/// as in Kueue's map. Not included, because they need cluster objects or Kueue's
/// configuration: RuntimeClass overhead (`handlePodOverhead`, used only when the
/// template has no `overhead`), LimitRange defaults (`handlePodLimitRange`),
/// `excludeResourcePrefixes` and resource transformations, and the `pods` resource
/// the flavor assigner adds (= `count`) when a ClusterQueue covers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSetRequests {
    /// Kueue's podset name: `main` for a Job, the (lower-cased) replicatedJob name for a JobSet.
    pub name: String,
    /// Pods in the podset (`PodSet.Count`).
    pub count: i64,
    /// A Job's `kueue.x-k8s.io/job-min-parallelism` as Kueue reads it (`minPodsCount`:
    /// `strconv.Atoi`, then `int32`): with partial admission (on by default) Kueue may
    /// admit between this and `count` pods. Kueue's Job webhook refuses values
    /// outside `1..count`. Always `None` for a JobSet.
    pub min_count: Option<i64>,
    /// Per pod, milli-units.
    pub per_pod: BTreeMap<Text, i64>,
    /// `per_pod` times `count` (in Kueue's units, saturating), milli-units.
    pub total: BTreeMap<Text, i64>,
    /// Where its pods may run: Kueue skips a flavor it does not match.
    pub placement: Placement,
    /// What Kueue's scheduler finds invalid in its resources (requests above
    /// limits, outside the namespace's LimitRange), in Kueue's order: any
    /// keeps the Workload pending forever.
    pub problems: Vec<ResourceProblem>,
}

/// Exact per-pod requests before Kueue's integer conversion.
type ExactRequests = ResourceAmounts;

impl PodSetRequests {
    fn new(name: String, count: i64, min_count: Option<i64>, requests: &ExactRequests, placement: Placement) -> Self {
        let mut per_pod = BTreeMap::new();
        let mut total = BTreeMap::new();
        for (resource, quantity) in requests {
            // ResourceValue, then FloorToZero, then Mul(count) (saturating), per resource.
            let value = quantity.kueue_value(resource).max(0);
            let scaled = value.saturating_mul(count);
            per_pod.insert(resource.clone(), quantity::units_to_milli(resource, value));
            total.insert(resource.clone(), quantity::units_to_milli(resource, scaled));
        }
        Self { name, count, min_count, per_pod, total, placement, problems: Vec::new() }
    }

    /// The pod set with `count` pods, each asking what one did (Kueue's
    /// `PodSetResources.ScaledTo`, which divides the totals by the old count
    /// and multiplies by the new).
    pub fn scaled_to(&self, count: i64) -> Self {
        let total =
            self.per_pod.iter().map(|(resource, per_pod)| (resource.clone(), per_pod.saturating_mul(count))).collect();
        Self { count, total, ..self.clone() }
    }

    /// The fewest pods Kueue may admit it with: a `minCount` below `count`
    /// (the Job webhook refuses one outside `1..=count`), else `count`.
    pub fn fewest(&self) -> i64 {
        self.min_count.filter(|min| (1..self.count).contains(min)).unwrap_or(self.count)
    }
}

/// The field `.1` of the object at path `.0`, written out only when an error
/// message needs it: a well-formed workload costs no formatting.
struct Field<'a>(&'a dyn fmt::Display, &'a str);

impl fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// Item `.1` of the list at path `.0`.
struct Item<'a>(&'a dyn fmt::Display, usize);

impl fmt::Display for Item<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.0, self.1)
    }
}

/// A count field (`parallelism`, `completions`, `replicas`): `None` when absent or
/// null; an error unless a non-negative `int32`, as the API server requires.
fn read_count(value: Option<&Value>, path: &dyn fmt::Display) -> Result<Option<i64>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_i64() {
            Some(count) if (0..=i64::from(i32::MAX)).contains(&count) => Ok(Some(count)),
            _ => Err(format!("{path}: {value} is not a valid count (a non-negative 32-bit integer)")),
        },
    }
}

/// Pods of one Job: `parallelism` (API default 1), capped by `completions` when set
/// (Kueue v0.19.2 `job_controller.go` `podsCount`, `jobset_controller.go`
/// `PodsCountPerReplica`; batch/v1 `SetDefaults_Job` defaults `parallelism` to 1).
fn job_pods_count(
    parallelism: Option<&Value>,
    completions: Option<&Value>,
    path: &dyn fmt::Display,
) -> Result<i64, String> {
    let parallelism = read_count(parallelism, &Field(path, "parallelism"))?.unwrap_or(1);
    let completions = read_count(completions, &Field(path, "completions"))?;
    Ok(completions.map_or(parallelism, |completions| completions.min(parallelism)))
}

/// Decodes a `ResourceList`; quantities must be valid and non-negative (API validation).
fn resource_list(list: Option<&ResourceList>, path: &dyn fmt::Display) -> Result<ExactRequests, String> {
    let entries = match list {
        None => return Ok(ExactRequests::new()),
        Some(Tolerant::Malformed(found)) => return Err(format!("{path}: expected a map of quantities, found {found}")),
        Some(Tolerant::Value(entries)) => entries,
    };
    let mut parsed = ExactRequests::new();
    for (resource, raw) in entries {
        let quantity = Quantity::from_json(raw).map_err(|e| format!("{path}[{resource}]: {e}"))?;
        if quantity.is_negative() {
            return Err(format!("{path}[{resource}]: {raw} is negative; quantities must be >= 0"));
        }
        parsed.insert(resource.clone(), quantity);
    }
    Ok(parsed)
}

/// A container's (or the pod's) requests and limits as Kueue adjusts them:
/// the LimitRange item's `default` for missing limits and `defaultRequest`
/// for missing requests (`handlePodLimitRange`), then limits standing in for
/// requests still missing (`UseLimitsAsMissingRequestsInPod`); each through
/// `MergeResourceListKeepFirst`, so a request, even `0`, wins.
fn container_resources(
    resources: Option<&Tolerant<ResourceRequirements>>,
    path: &dyn fmt::Display,
    defaults: Option<&LimitItem>,
) -> Result<(ExactRequests, ExactRequests), String> {
    let (mut requests, mut limits) = match resources {
        None => (ExactRequests::new(), ExactRequests::new()),
        Some(Tolerant::Malformed(found)) => return Err(format!("{path}: expected an object, found {found}")),
        Some(Tolerant::Value(resources)) => (
            resource_list(resources.requests.as_ref(), &Field(path, "requests"))?,
            resource_list(resources.limits.as_ref(), &Field(path, "limits"))?,
        ),
    };
    if let Some(defaults) = defaults {
        keep_first(&mut limits, &defaults.default);
        keep_first(&mut requests, &defaults.default_request);
    }
    keep_first(&mut requests, &limits);
    Ok((requests, limits))
}

fn add_into(sum: &mut ExactRequests, other: &ExactRequests) {
    for (resource, quantity) in other {
        let entry = sum.entry(resource.clone()).or_default();
        *entry = entry.saturating_add(*quantity);
    }
}

fn max_into(max: &mut ExactRequests, other: &ExactRequests) {
    for (resource, quantity) in other {
        match max.get_mut(resource) {
            Some(current) if *current >= *quantity => {}
            Some(current) => *current = *quantity,
            None => {
                max.insert(resource.clone(), *quantity);
            }
        }
    }
}

/// What the init containers need at most while they start, in one pass
/// (`PodRequests`'s init loop, which adds every running sidecar to each init
/// container and so costs init containers × resources; an attacker's 4,000 of
/// each took 12 s). A plain init container needs itself plus the sidecars
/// started before it; a sidecar, every sidecar so far. Quantities are never
/// negative, so the sidecars' running sum only grows: of the sidecars-only
/// needs the last is the largest, and a plain init container can raise the
/// most only in its own resources.
#[derive(Debug, Default)]
struct InitNeeds {
    /// The sidecars started so far, summed.
    sidecars: ExactRequests,
    /// The most a plain init container needed, in its own resources.
    plain: ExactRequests,
}

impl InitNeeds {
    fn start(&mut self, own: &ExactRequests, is_sidecar: bool) {
        if is_sidecar {
            add_into(&mut self.sidecars, own);
            return;
        }
        for (resource, quantity) in own {
            let running = self.sidecars.get(resource).copied().unwrap_or_default();
            let need = quantity.saturating_add(running);
            match self.plain.get_mut(resource) {
                Some(most) if *most >= need => {}
                Some(most) => *most = need,
                None => {
                    self.plain.insert(resource.clone(), need);
                }
            }
        }
    }

    fn most(mut self) -> ExactRequests {
        max_into(&mut self.plain, &self.sidecars);
        self.plain
    }
}

fn containers<'a>(
    list: Option<&'a TolerantList<Container>>,
    path: &dyn fmt::Display,
) -> Result<Vec<&'a Container>, String> {
    match list {
        None => Ok(Vec::new()),
        Some(TolerantList::Malformed(found)) => Err(format!("{path}: expected an array, found {found}")),
        Some(TolerantList::Items(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Tolerant::Value(container) => Ok(container),
                Tolerant::Malformed(found) => Err(format!("{path}[{index}]: expected an object, found {found}")),
            })
            .collect(),
    }
}

/// The requests of one pod, exact (before Kueue's integer conversion), following
/// `k8s.io/component-helpers/resource` v0.36.2 `PodRequests` with the default
/// options Kueue v0.19.2 passes (`pkg/workload` `totalRequestsFromPodSets`), after
/// Kueue's `UseLimitsAsMissingRequestsInPod`:
/// - containers are summed;
/// - each init container needs itself plus the sidecars (init containers with
///   `restartPolicy: Always`) started before it; sidecars also run alongside the
///   containers, so they are added to the sum (`AggregateContainerRequests`);
/// - the pod needs the larger of that sum and the largest init container need;
/// - pod-level `resources.requests` for cpu, memory and hugepages-* replace the
///   aggregate when any of them is set (`IsPodLevelRequestsSet`);
/// - `overhead` is added.
fn pod_requests(
    spec: Option<&PodSpec>,
    path: &dyn fmt::Display,
    surroundings: &impl Surroundings,
    problems: &mut Vec<ResourceProblem>,
) -> Result<ExactRequests, String> {
    let mut requests = ExactRequests::new();
    let Some(spec) = spec else {
        return Ok(requests);
    };
    let limit_ranges = surroundings.limits();
    let container_range = limit_ranges.and_then(|summary| summary.container.as_ref());
    // ValidateResources (requests above limits) over every container first,
    // then ValidateLimitRange: the first problem Kueue would name.
    let mut range_problems = Vec::new();
    let mut check =
        |at: &dyn fmt::Display, requests: &ExactRequests, limits: &ExactRequests| match ResourceProblem::find(
            at,
            requests,
            limits,
            container_range,
        ) {
            Some(problem) if problem.kind == ProblemKind::RequestsAboveLimits => problems.push(problem),
            Some(problem) => range_problems.push(problem),
            None => {}
        };
    let containers_path = Field(path, "containers");
    for (index, container) in containers(spec.containers.as_ref(), &containers_path)?.into_iter().enumerate() {
        let at = Item(&containers_path, index);
        let (own, limits) =
            container_resources(container.resources.as_ref(), &Field(&at, "resources"), container_range)?;
        check(&at, &own, &limits);
        add_into(&mut requests, &own);
    }

    let init_path = Field(path, "initContainers");
    let mut init_needs = InitNeeds::default();
    for (index, container) in containers(spec.init_containers.as_ref(), &init_path)?.into_iter().enumerate() {
        let at = Item(&init_path, index);
        let (own, limits) =
            container_resources(container.resources.as_ref(), &Field(&at, "resources"), container_range)?;
        check(&at, &own, &limits);
        let is_sidecar = match &container.restart_policy {
            None | Some(Value::Null) => false,
            Some(Value::String(policy)) => policy == "Always",
            Some(other) => {
                return Err(format!("{}: expected a string, found {other}", Field(&at, "restartPolicy")));
            }
        };
        if is_sidecar {
            add_into(&mut requests, &own);
        }
        init_needs.start(&own, is_sidecar);
    }
    max_into(&mut requests, &init_needs.most());

    // Pod-level resources get the Pod item's defaults only when present at all.
    let pod_range = limit_ranges.and_then(|summary| summary.pod.as_ref());
    let pod_defaults = pod_range.filter(|_| spec.resources.is_some());
    let pod_path = Field(path, "resources");
    let (pod_level, pod_limits) = container_resources(spec.resources.as_ref(), &pod_path, pod_defaults)?;
    if let Some(problem) = ResourceProblem::find(&pod_path, &pod_level, &pod_limits, None) {
        problems.push(problem);
    }
    let supported = |resource: &str| matches!(resource, "cpu" | "memory") || resource.starts_with("hugepages-");
    if pod_level.keys().any(|resource| supported(resource)) {
        for (resource, quantity) in pod_level {
            if supported(&resource) {
                requests.insert(resource, quantity);
            }
        }
    }

    let overhead = resource_list(spec.overhead.as_ref(), &Field(path, "overhead"))?;
    // handlePodOverhead: the RuntimeClass's overhead, only where the template has none.
    let class = spec.runtime_class_name.as_deref().filter(|_| overhead.is_empty());
    match class.and_then(|class| surroundings.runtime_overhead(class)) {
        Some(class_overhead) => add_into(&mut requests, class_overhead),
        None => add_into(&mut requests, &overhead),
    }
    if let Some(range) = pod_range
        && let Some(problem) = ResourceProblem::find_in_pod(path, &requests, range)
    {
        range_problems.push(problem);
    }
    problems.extend(range_problems);
    Ok(requests)
}

/// A pod's requests under Kueue's Configuration `resources`, when it has any.
fn counted(requests: ExactRequests, surroundings: &impl Surroundings) -> ExactRequests {
    match surroundings.resource_settings() {
        Some(settings) => settings.apply(requests),
        None => requests,
    }
}

impl Workload {
    /// The podsets of the Workload Kueue v0.19.2 creates for this Job or JobSet, with
    /// their counts and the requests Kueue counts against quota (see
    /// [`PodSetRequests`]). Follows `pkg/controller/jobs/job/job_controller.go`
    /// `(*Job).PodSets` (one podset `main`, `podsCount`, `minPodsCount`) and
    /// `pkg/controller/jobs/jobset/jobset_controller.go` `(*JobSet).PodSets` (one
    /// podset per replicatedJob, `replicas` (CRD default 1) times
    /// `PodsCountPerReplica`), and `pkg/workload` `totalRequestsFromPodSets`.
    ///
    /// Absent fields take their API defaults; a wrongly typed or invalid field (a
    /// malformed or negative quantity, a negative count, a replicatedJob without a
    /// name), which the API server would refuse, is an error naming the field.
    pub fn pod_sets(&self, kind: WorkloadKind) -> Result<Vec<PodSetRequests>, String> {
        self.pod_sets_in(kind, &super::limits::Bare)
    }

    /// [`Self::pod_sets`] where `surroundings` holds the namespace's
    /// LimitRanges and the cluster's RuntimeClasses: requests as Kueue adjusts
    /// them, and each pod set's [`ResourceProblem`]s.
    pub fn pod_sets_in(
        &self,
        kind: WorkloadKind,
        surroundings: &impl Surroundings,
    ) -> Result<Vec<PodSetRequests>, String> {
        let spec = self.spec.as_ref();
        match kind {
            WorkloadKind::Job => {
                let count = job_pods_count(
                    spec.and_then(|spec| spec.parallelism.as_ref()),
                    spec.and_then(|spec| spec.completions.as_ref()),
                    &"spec",
                )?;
                let pod_spec = spec.and_then(|spec| spec.template.as_ref()).and_then(|template| template.spec.as_ref());
                let mut problems = Vec::new();
                let requests = pod_requests(pod_spec, &"spec.template.spec", surroundings, &mut problems)?;
                let requests = counted(requests, surroundings);
                let placement = Placement::read(pod_spec, &"spec.template.spec")?;
                // minPodsCount: strconv.Atoi, then int32(..).
                let min_count = self
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|annotations| annotations.job_min_parallelism.as_deref())
                    .and_then(|value| value.parse::<i64>().ok())
                    .map(|value| i64::from(value as i32));
                let pod_set =
                    PodSetRequests::new(DEFAULT_POD_SET_NAME.to_owned(), count, min_count, &requests, placement);
                Ok(vec![PodSetRequests { problems, ..pod_set }])
            }
            WorkloadKind::JobSet => {
                let mut pod_sets = Vec::new();
                for (index, replicated) in
                    spec.and_then(|spec| spec.replicated_jobs.as_deref()).unwrap_or_default().iter().enumerate()
                {
                    let path = Item(&"spec.replicatedJobs", index);
                    let name = replicated
                        .name
                        .as_deref()
                        .filter(|name| !name.is_empty())
                        .ok_or_else(|| format!("{}: required", Field(&path, "name")))?;
                    let replicas = read_count(replicated.replicas.as_ref(), &Field(&path, "replicas"))?.unwrap_or(1);
                    let job_spec = replicated.template.as_ref().and_then(|job| job.spec.as_ref());
                    let per_job = job_pods_count(
                        job_spec.and_then(|job_spec| job_spec.parallelism.as_ref()),
                        job_spec.and_then(|job_spec| job_spec.completions.as_ref()),
                        &Field(&path, "template.spec"),
                    )?;
                    let pod_spec = job_spec
                        .and_then(|job_spec| job_spec.template.as_ref())
                        .and_then(|template| template.spec.as_ref());
                    let mut problems = Vec::new();
                    let template_path = Field(&path, "template.spec.template.spec");
                    let requests = pod_requests(pod_spec, &template_path, surroundings, &mut problems)?;
                    let requests = counted(requests, surroundings);
                    let placement = Placement::read(pod_spec, &template_path)?;
                    // kueue.NewPodSetReference lower-cases the name.
                    let pod_set =
                        PodSetRequests::new(name.to_lowercase(), replicas * per_job, None, &requests, placement);
                    pod_sets.push(PodSetRequests { problems, ..pod_set });
                }
                Ok(pod_sets)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::kueue::{JOB_MIN_PARALLELISM_ANNOTATION, QUEUE_NAME_LABEL};
    use serde_json::json;

    const GI: i64 = 1 << 30;
    const MI: i64 = 1 << 20;

    fn workload(value: Value) -> Workload {
        serde_json::from_value(value).expect("workload decodes")
    }

    fn job(spec: Value) -> Workload {
        workload(json!({"metadata": {"name": "j", "labels": {QUEUE_NAME_LABEL: "q"}}, "spec": spec}))
    }

    fn job_with_pod(pod_spec: Value) -> Workload {
        job(json!({"template": {"spec": pod_spec}}))
    }

    fn only_pod_set(workload: &Workload) -> PodSetRequests {
        let mut pod_sets = workload.pod_sets(WorkloadKind::Job).expect("pod sets");
        assert_eq!(pod_sets.len(), 1);
        pod_sets.remove(0)
    }

    fn milli(pairs: &[(&str, i64)]) -> BTreeMap<Text, i64> {
        pairs.iter().map(|(resource, value)| (Text::from(*resource), *value)).collect()
    }

    #[test]
    fn every_pod_set_carries_its_resource_problems() {
        let pod =
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]});
        let job: Workload = serde_json::from_value(json!({"spec": {"template": {"spec": pod}}})).unwrap();
        let jobset: Workload = serde_json::from_value(json!({"spec": {"replicatedJobs": [
            {"name": "ok", "template": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}},
            {"name": "workers", "template": {"spec": {"template": {"spec": pod}}}},
        ]}}))
        .unwrap();
        let job_problems = &job.pod_sets(WorkloadKind::Job).unwrap()[0].problems;
        assert_eq!(job_problems[0].at, "spec.template.spec.containers[0]");
        let pod_sets = jobset.pod_sets(WorkloadKind::JobSet).unwrap();
        assert!(pod_sets[0].problems.is_empty());
        assert_eq!(pod_sets[1].problems[0].at, "spec.replicatedJobs[1].template.spec.template.spec.containers[0]");
    }

    #[test]
    fn job_with_parallelism_and_a_limits_only_container() {
        let job = job(json!({
            "parallelism": 2,
            "template": {"spec": {"containers": [
                {"name": "eval", "resources": {"limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}}},
                {"name": "log", "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m", "memory": "64Mi"}}}
            ]}}
        }));
        let pod_set = only_pod_set(&job);
        assert_eq!(pod_set.name, "main");
        assert_eq!(pod_set.count, 2);
        assert_eq!(pod_set.min_count, None);
        assert_eq!(
            pod_set.per_pod,
            milli(&[("cpu", 2100), ("memory", (4 * GI + 64 * MI) * 1000), ("nvidia.com/gpu", 1000)])
        );
        assert_eq!(
            pod_set.total,
            milli(&[("cpu", 4200), ("memory", (8 * GI + 128 * MI) * 1000), ("nvidia.com/gpu", 2000)])
        );
        // The existing API still reads the same object.
        assert_eq!(job.queue_name(), Some("q"));
    }

    #[test]
    fn job_counts_follow_defaults_and_completions() {
        let count = |spec: Value| only_pod_set(&job(spec)).count;
        assert_eq!(count(json!({})), 1);
        assert_eq!(count(json!({"parallelism": 4})), 4);
        assert_eq!(count(json!({"parallelism": 4, "completions": 3})), 3);
        assert_eq!(count(json!({"parallelism": 4, "completions": 10})), 4);
        assert_eq!(count(json!({"completions": 5})), 1);
        assert_eq!(count(json!({"parallelism": 0})), 0);
        assert_eq!(count(json!({"parallelism": null})), 1);
        // No spec at all: the API defaults give one pod with no requests.
        let bare = workload(json!({"metadata": {"name": "j"}}));
        let pod_set = only_pod_set(&bare);
        assert_eq!((pod_set.count, pod_set.per_pod.len()), (1, 0));
        assert_eq!(workload(json!({})).pod_sets(WorkloadKind::JobSet), Ok(vec![]));
    }

    #[test]
    fn job_min_parallelism_annotation() {
        let job = workload(json!({
            "metadata": {"annotations": {JOB_MIN_PARALLELISM_ANNOTATION: "2"}},
            "spec": {"parallelism": 5}
        }));
        assert_eq!(only_pod_set(&job).min_count, Some(2));
        let unparsable = workload(json!({"metadata": {"annotations": {JOB_MIN_PARALLELISM_ANNOTATION: "two"}}}));
        assert_eq!(only_pod_set(&unparsable).min_count, None);
    }

    #[test]
    fn jobset_with_replicas_and_parallelism() {
        let jobset = workload(json!({
            "metadata": {"name": "aiperf-x"},
            "spec": {"replicatedJobs": [
                {"name": "controller", "template": {"spec": {"template": {"spec": {"containers": [
                    {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
                ]}}}}},
                {"name": "Workers", "replicas": 2, "template": {"spec": {
                    "parallelism": 3, "completions": 5,
                    "template": {"spec": {"containers": [
                        {"resources": {"requests": {"cpu": "4"}, "limits": {"nvidia.com/gpu": "1"}}}
                    ]}}
                }}}
            ]}
        }));
        let pod_sets = jobset.pod_sets(WorkloadKind::JobSet).unwrap();
        assert_eq!(pod_sets.len(), 2);
        assert_eq!((pod_sets[0].name.as_str(), pod_sets[0].count), ("controller", 1));
        assert_eq!(pod_sets[0].total, milli(&[("cpu", 500), ("memory", GI * 1000)]));
        assert_eq!((pod_sets[1].name.as_str(), pod_sets[1].count), ("workers", 6));
        assert_eq!(pod_sets[1].per_pod, milli(&[("cpu", 4000), ("nvidia.com/gpu", 1000)]));
        assert_eq!(pod_sets[1].total, milli(&[("cpu", 24_000), ("nvidia.com/gpu", 6000)]));
        // Completions below parallelism cap the pods per Job; replicas 0 means none.
        let capped = workload(json!({"spec": {"replicatedJobs": [
            {"name": "a", "replicas": 3, "template": {"spec": {"parallelism": 4, "completions": 2}}},
            {"name": "b", "replicas": 0, "template": {"spec": {"parallelism": 4}}}
        ]}}));
        let counts: Vec<i64> = capped.pod_sets(WorkloadKind::JobSet).unwrap().iter().map(|p| p.count).collect();
        assert_eq!(counts, [6, 0]);
    }

    #[test]
    fn init_containers_larger_than_containers() {
        let pod_set = only_pod_set(&job_with_pod(json!({
            "initContainers": [
                {"resources": {"requests": {"cpu": "4", "memory": "1Gi"}}},
                {"resources": {"limits": {"cpu": "3", "example.com/dongle": "2"}}}
            ],
            "containers": [
                {"resources": {"requests": {"cpu": "1", "memory": "2Gi"}}},
                {"resources": {"requests": {"cpu": "500m"}}}
            ]
        })));
        // cpu: max(1.5, 4, 3); memory: max(2Gi, 1Gi); the init-only resource still counts.
        assert_eq!(pod_set.per_pod, milli(&[("cpu", 4000), ("example.com/dongle", 2000), ("memory", 2 * GI * 1000)]));
    }

    /// `PodRequests`'s init loop as it reads, and as this file did until the
    /// one-pass [`InitNeeds`]: each init container's need with every running sidecar added.
    fn init_needs_as_written(inits: &[(ExactRequests, bool)]) -> ExactRequests {
        let mut sidecars = ExactRequests::new();
        let mut most = ExactRequests::new();
        for (own, is_sidecar) in inits {
            if *is_sidecar {
                add_into(&mut sidecars, own);
                max_into(&mut most, &sidecars);
            } else {
                let mut need = own.clone();
                add_into(&mut need, &sidecars);
                max_into(&mut most, &need);
            }
        }
        most
    }

    /// The one pass equals the loop as written on 20,000 random init
    /// sequences: resources from a small set so they collide, amounts from
    /// zero to near the saturation point, sidecars anywhere.
    #[test]
    fn init_needs_in_one_pass_equal_the_loop_as_written() {
        let mut state = 0x5eed_u64;
        let mut next = move |below: u64| {
            // SplitMix64: the same sequence everywhere.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % below
        };
        let resources = ["cpu", "memory", "nvidia.com/gpu", "example.com/x"];
        let amounts = ["0", "1", "250m", "2", "1Gi", "9223372036"];
        for case in 0..20_000 {
            let inits: Vec<(ExactRequests, bool)> = (0..next(7))
                .map(|_| {
                    let own = (0..next(4))
                        .map(|_| {
                            let resource = resources[next(4) as usize];
                            (resource.into(), Quantity::parse(amounts[next(6) as usize]).unwrap())
                        })
                        .collect();
                    (own, next(3) == 0)
                })
                .collect();
            let mut one_pass = InitNeeds::default();
            for (own, is_sidecar) in &inits {
                one_pass.start(own, *is_sidecar);
            }
            assert_eq!(one_pass.most(), init_needs_as_written(&inits), "case {case}: {inits:?}");
        }
    }

    #[test]
    fn sidecars_run_alongside_and_before_later_init_containers() {
        let pod_set = only_pod_set(&job_with_pod(json!({
            "initContainers": [
                {"name": "setup", "resources": {"requests": {"cpu": "1200m"}}},
                {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}},
                {"name": "warmup", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}
            ],
            "containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]
        })));
        // containers + sidecar = 1.5 cpu, 1.25Gi; warmup needs 2 + 0.5 cpu, 1Gi + 256Mi; setup 1.2.
        assert_eq!(pod_set.per_pod, milli(&[("cpu", 2500), ("memory", (GI + 256 * MI) * 1000)]));

        // A sidecar larger than the init containers after it sets the sum.
        let pod_set = only_pod_set(&job_with_pod(json!({
            "initContainers": [
                {"restartPolicy": "Always", "resources": {"limits": {"cpu": "3"}}},
                {"resources": {"requests": {"cpu": "1"}}},
                {"restartPolicy": "OnFailure", "resources": {"requests": {"cpu": "1"}}}
            ],
            "containers": [{"resources": {"requests": {"cpu": "2"}}}]
        })));
        assert_eq!(pod_set.per_pod, milli(&[("cpu", 5000)]));
    }

    #[test]
    fn pod_level_resources_and_overhead() {
        let pod_set = only_pod_set(&job_with_pod(json!({
            "resources": {"requests": {"cpu": "3"}, "limits": {"memory": "8Gi"}},
            "overhead": {"cpu": "250m", "memory": "128Mi"},
            "containers": [
                {"resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}}}
            ]
        })));
        // Pod-level cpu and memory (limit standing in for the request) replace the
        // containers' sum; the gpu stays per container; overhead is added on top.
        assert_eq!(
            pod_set.per_pod,
            milli(&[("cpu", 3250), ("memory", (8 * GI + 128 * MI) * 1000), ("nvidia.com/gpu", 2000)])
        );
        // Pod-level resources naming only unsupported resources are ignored.
        let pod_set = only_pod_set(&job_with_pod(json!({
            "resources": {"requests": {"nvidia.com/gpu": "8"}},
            "containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}]
        })));
        assert_eq!(pod_set.per_pod, milli(&[("nvidia.com/gpu", 1000)]));
    }

    #[test]
    fn rounding_happens_once_per_pod_as_in_kueue() {
        let pod_set = only_pod_set(&job(json!({"parallelism": 3, "template": {"spec": {"containers": [
            {"resources": {"requests": {"cpu": "0.1m", "memory": "0.5", "nvidia.com/gpu": "1.5", "example.com/zero": "0"}}},
            {"resources": {"requests": {"cpu": "0.1m", "memory": "0.5"}}}
        ]}}})));
        // cpu 0.2m -> 1m; memory 1 byte (exact sum, then rounded); gpu 1.5 -> 2 per pod.
        assert_eq!(
            pod_set.per_pod,
            milli(&[("cpu", 1), ("example.com/zero", 0), ("memory", 1000), ("nvidia.com/gpu", 2000)])
        );
        assert_eq!(
            pod_set.total,
            milli(&[("cpu", 3), ("example.com/zero", 0), ("memory", 3000), ("nvidia.com/gpu", 6000)])
        );
        // Requests win over limits even when zero.
        let pod_set = only_pod_set(&job_with_pod(json!({"containers": [
            {"resources": {"requests": {"cpu": 0}, "limits": {"cpu": 2}}}
        ]})));
        assert_eq!(pod_set.per_pod, milli(&[("cpu", 0)]));
    }

    #[test]
    fn streaming_decode_matches() {
        // The webhook decodes bytes, not a serde_json::Value: same result, wrong types included.
        let text = r#"{"spec": {"parallelism": 2, "template": {"spec": {"containers": [
            {"name": "a", "image": "x", "env": [{"name": "K", "value": "V"}],
             "resources": {"limits": {"cpu": 1.5, "memory": "1Gi"}, "claims": [{"name": "c"}]}},
            {"name": "b", "resources": "none"}
        ]}}}}"#;
        let decoded: Workload = serde_json::from_str(text).expect("decodes");
        assert!(
            decoded.pod_sets(WorkloadKind::Job).unwrap_err().starts_with("spec.template.spec.containers[1].resources:")
        );
        let fine = text.replace(r#"{"name": "b", "resources": "none"}"#, r#"{"name": "b"}"#);
        let decoded: Workload = serde_json::from_str(&fine).expect("decodes");
        assert_eq!(only_pod_set(&decoded).total, milli(&[("cpu", 3000), ("memory", 2 * GI * 1000)]));
    }

    #[test]
    fn malformed_fields_are_reported_not_fatal() {
        let error = |workload: Workload, kind| workload.pod_sets(kind).unwrap_err();
        let bad_quantity = job_with_pod(json!({"containers": [
            {"resources": {"requests": {"cpu": "1"}}},
            {"resources": {"requests": {"cpu": "2 cores"}}}
        ]}));
        let message = error(bad_quantity, WorkloadKind::Job);
        assert!(
            message.starts_with("spec.template.spec.containers[1].resources.requests[cpu]: \"2 cores\""),
            "{message}"
        );

        let negative = job_with_pod(json!({"containers": [{"resources": {"limits": {"memory": "-1Gi"}}}]}));
        assert!(error(negative, WorkloadKind::Job).contains("containers[0].resources.limits[memory]"));

        // Wrong JSON types decode (the rest of the object is still usable) and are reported.
        let wrong_types = job(json!({"parallelism": "2", "template": {"spec": {"containers": "none"}}}));
        assert_eq!(wrong_types.queue_name(), Some("q"));
        assert!(error(wrong_types, WorkloadKind::Job).starts_with("spec.parallelism: \"2\""));
        let wrong_list = job_with_pod(json!({"containers": "none", "priorityClassName": "high"}));
        assert_eq!(wrong_list.pod_priority_classes()[0].class_name, "high");
        assert_eq!(
            error(wrong_list, WorkloadKind::Job),
            "spec.template.spec.containers: expected an array, found a string"
        );
        let wrong_item = job_with_pod(json!({"initContainers": [7]}));
        assert_eq!(
            error(wrong_item, WorkloadKind::Job),
            "spec.template.spec.initContainers[0]: expected an object, found a number"
        );
        let wrong_map = job_with_pod(json!({"containers": [{"resources": {"requests": ["cpu"]}}]}));
        assert!(
            error(wrong_map, WorkloadKind::Job).ends_with("requests: expected a map of quantities, found an array")
        );
        let wrong_policy = job_with_pod(json!({"initContainers": [{"restartPolicy": true}]}));
        assert!(error(wrong_policy, WorkloadKind::Job).contains("initContainers[0].restartPolicy"));
        let bad_object = job_with_pod(json!({"containers": [{"resources": {"requests": {"cpu": {"value": 1}}}}]}));
        assert!(error(bad_object, WorkloadKind::Job).contains("not an object"));

        let jobset = |replicated: Value| workload(json!({"spec": {"replicatedJobs": [replicated]}}));
        assert_eq!(
            error(jobset(json!({"name": "w", "replicas": -1})), WorkloadKind::JobSet),
            "spec.replicatedJobs[0].replicas: -1 is not a valid count (a non-negative 32-bit integer)"
        );
        assert_eq!(
            error(jobset(json!({"replicas": 1})), WorkloadKind::JobSet),
            "spec.replicatedJobs[0].name: required"
        );
        assert!(
            error(jobset(json!({"name": "w", "template": {"spec": {"completions": 1.5}}})), WorkloadKind::JobSet)
                .starts_with("spec.replicatedJobs[0].template.spec.completions: 1.5")
        );
    }
}
