//! What the namespace and the cluster add to a pod template's resources before
//! Kueue counts them, and what they hold them to: Kueue v0.19.2
//! `pkg/workload/resources.go` `AdjustResources` (RuntimeClass overhead,
//! LimitRange defaults, limits as missing requests), then, in the scheduler,
//! `ValidateResources` (requests at most limits) and `ValidateLimitRange`
//! (`pkg/util/limitrange` `Summary.ValidatePodSpec`: within min and max).

use std::collections::BTreeMap;
use std::fmt;

use super::Text;
use crate::vocabulary::quantity::{self, Quantity};

/// Exact amounts by resource name.
pub type ResourceAmounts = BTreeMap<Text, Quantity>;

/// One LimitRange item's lists for a type (`Container` or `Pod`), or the
/// summary of all of a namespace's items of that type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitItem {
    pub max: ResourceAmounts,
    pub min: ResourceAmounts,
    pub default: ResourceAmounts,
    pub default_request: ResourceAmounts,
}

impl LimitItem {
    /// `addToSummary`: the lowest max, the highest min, the first default and
    /// defaultRequest met.
    pub fn merge(&mut self, item: &LimitItem) {
        for (resource, max) in &item.max {
            self.max.entry(resource.clone()).and_modify(|kept| *kept = (*kept).min(*max)).or_insert(*max);
        }
        for (resource, min) in &item.min {
            self.min.entry(resource.clone()).and_modify(|kept| *kept = (*kept).max(*min)).or_insert(*min);
        }
        keep_first(&mut self.default, &item.default);
        keep_first(&mut self.default_request, &item.default_request);
    }
}

/// A namespace's LimitRanges summarized by type (`limitrange.Summarize`);
/// only `Container` and `Pod` change what Kueue counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitSummary {
    pub container: Option<LimitItem>,
    pub pod: Option<LimitItem>,
}

impl LimitSummary {
    /// What every pod Kueue admits in the namespace asks at least, by resource.
    /// Where the Container defaults give every container a resource
    /// (`AdjustResources`), `ValidateLimitRange` holds each container to the
    /// Container min and the pod to the Pod min; without a default a container
    /// may leave the resource out, and Kueue checks a min only where the pod
    /// names the resource (`Summary.ValidatePodSpec`, `GreaterKeys`), so that
    /// min forces nothing.
    pub fn request_floor(&self) -> ResourceAmounts {
        let Some(container) = &self.container else { return ResourceAmounts::new() };
        let pod_min = |resource: &Text| self.pod.as_ref().and_then(|pod| pod.min.get(resource));
        container
            .default
            .keys()
            .chain(container.default_request.keys())
            .filter_map(|resource| {
                let least = [container.min.get(resource), pod_min(resource)].into_iter().flatten().max()?;
                Some((resource.clone(), *least))
            })
            .collect()
    }
}

/// Where a pod template is reviewed: its namespace's LimitRanges and the
/// cluster's RuntimeClasses. The cluster view provides it; [`Bare`] is none.
pub trait Surroundings {
    fn limits(&self) -> Option<&LimitSummary>;
    /// `overhead.podFixed` of RuntimeClass `class`; `None` when it does not
    /// exist or has none (Kueue then adds nothing and logs the miss).
    fn runtime_overhead(&self, class: &str) -> Option<&ResourceAmounts>;
    /// Kueue's Configuration `resources`: exclusions and transformations.
    fn resource_settings(&self) -> Option<&super::ResourceSettings>;
}

/// No LimitRange and no RuntimeClass.
pub struct Bare;

impl Surroundings for Bare {
    fn limits(&self) -> Option<&LimitSummary> {
        None
    }

    fn runtime_overhead(&self, _class: &str) -> Option<&ResourceAmounts> {
        None
    }

    fn resource_settings(&self) -> Option<&super::ResourceSettings> {
        None
    }
}

/// `MergeResourceListKeepFirst(into, from)`: what `into` lacks, from `from`.
pub(super) fn keep_first(into: &mut ResourceAmounts, from: &ResourceAmounts) {
    for (resource, amount) in from {
        into.entry(resource.clone()).or_insert(*amount);
    }
}

/// Why Kueue would find a pod set's resources invalid: the scheduler keeps
/// the Workload pending (`ValidateAdmissibility`) whatever the quota.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceProblem {
    pub kind: ProblemKind,
    /// The container (`spec.template.spec.containers[0]`) or pod it is about.
    pub at: String,
    /// The resources it is about, each with the two amounts compared (in
    /// Kueue's units): the workload's, then the bound.
    pub resources: Vec<(Text, Quantity, Quantity)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// `requests must not exceed its limits` (after the LimitRange defaults).
    RequestsAboveLimits,
    /// `requests must not be above the limitRange max`.
    AboveLimitRangeMax,
    /// `requests must not be below the limitRange min`.
    BelowLimitRangeMin,
}

impl ResourceProblem {
    /// Checks requests against limits, and both against a LimitRange item's
    /// min and max, as Kueue compares them (in its integer units, a resource
    /// only where both sides name it); the first problem, in Kueue's order.
    pub(super) fn find(
        at: &dyn fmt::Display,
        requests: &ResourceAmounts,
        limits: &ResourceAmounts,
        range: Option<&LimitItem>,
    ) -> Option<Self> {
        let above = |resource: &Text, amount: &Quantity, bound: &Quantity| {
            (amount.kueue_value(resource) > bound.kueue_value(resource)).then(|| (resource.clone(), *amount, *bound))
        };
        let problem =
            |kind, resources: Vec<_>| (!resources.is_empty()).then(|| Self { kind, at: at.to_string(), resources });
        let over_limits =
            requests.iter().filter_map(|(resource, request)| above(resource, request, limits.get(resource)?)).collect();
        if let Some(found) = problem(ProblemKind::RequestsAboveLimits, over_limits) {
            return Some(found);
        }
        let range = range?;
        // The larger and the smaller of request and limit, where either is set
        // (`MergeResourceListKeepMax`/`KeepMin`), against max and min.
        let either = |resource: &Text, pick: fn(Quantity, Quantity) -> Quantity| match (
            requests.get(resource),
            limits.get(resource),
        ) {
            (Some(request), Some(limit)) => Some(pick(*request, *limit)),
            (one, other) => one.or(other).copied(),
        };
        let over_max = range
            .max
            .iter()
            .filter_map(|(resource, max)| above(resource, &either(resource, Quantity::max)?, max))
            .collect();
        problem(ProblemKind::AboveLimitRangeMax, over_max).or_else(|| {
            let under_min = range
                .min
                .iter()
                .filter_map(|(resource, min)| {
                    let (r, min, has) = above(resource, min, &either(resource, Quantity::min)?)?;
                    Some((r, has, min))
                })
                .collect();
            problem(ProblemKind::BelowLimitRangeMin, under_min)
        })
    }

    /// A problem of the whole pod (its total against a `Pod` item).
    pub(super) fn find_in_pod(at: &dyn fmt::Display, total: &ResourceAmounts, range: &LimitItem) -> Option<Self> {
        Self::find(at, total, &ResourceAmounts::new(), Some(range))
    }
}

impl fmt::Display for ResourceProblem {
    /// `spec.template.spec.containers[0] requests cpu 2, above its limit 1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, bound) = match self.kind {
            ProblemKind::RequestsAboveLimits => ("above its limit", "limit"),
            ProblemKind::AboveLimitRangeMax => ("above the namespace's LimitRange max", "max"),
            ProblemKind::BelowLimitRangeMin => ("below the namespace's LimitRange min", "min"),
        };
        let shown = |resource: &str, amount: &Quantity| quantity::format_milli(resource, amount.kueue_milli(resource));
        let amounts: Vec<String> = self
            .resources
            .iter()
            .map(|(resource, has, limit)| {
                format!("{resource} {} ({bound} {})", shown(resource, has), shown(resource, limit))
            })
            .collect();
        write!(f, "{} asks for {}, {what}", self.at, amounts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amounts(pairs: &[(&str, &str)]) -> ResourceAmounts {
        pairs.iter().map(|(k, v)| (Text::from(*k), Quantity::parse(v).unwrap())).collect()
    }

    #[test]
    fn summaries_keep_the_tightest_bounds_and_the_first_defaults() {
        let mut summary =
            LimitItem { max: amounts(&[("cpu", "8")]), default: amounts(&[("cpu", "1")]), ..LimitItem::default() };
        summary.merge(&LimitItem {
            max: amounts(&[("cpu", "4"), ("memory", "8Gi")]),
            min: amounts(&[("cpu", "100m")]),
            default: amounts(&[("cpu", "2"), ("memory", "1Gi")]),
            ..LimitItem::default()
        });
        assert_eq!(summary.max, amounts(&[("cpu", "4"), ("memory", "8Gi")]));
        assert_eq!(summary.min, amounts(&[("cpu", "100m")]));
        assert_eq!(summary.default, amounts(&[("cpu", "1"), ("memory", "1Gi")]));
    }

    #[test]
    fn a_min_forces_a_floor_only_where_a_container_default_names_the_resource() {
        let summary = LimitSummary {
            container: Some(LimitItem {
                min: amounts(&[("memory", "2Gi"), ("cpu", "1")]),
                default_request: amounts(&[("memory", "1Gi")]),
                default: amounts(&[("nvidia.com/gpu", "1")]),
                ..LimitItem::default()
            }),
            pod: Some(LimitItem {
                min: amounts(&[("memory", "3Gi"), ("nvidia.com/gpu", "1")]),
                ..LimitItem::default()
            }),
        };
        // cpu has a min and no default: a container may leave it out.
        assert_eq!(summary.request_floor(), amounts(&[("memory", "3Gi"), ("nvidia.com/gpu", "1")]));
        assert!(LimitSummary { pod: summary.pod.clone(), container: None }.request_floor().is_empty());
    }

    #[test]
    fn problems_come_in_kueues_order_and_compare_named_resources_only() {
        let at = "spec.template.spec.containers[0]";
        let range =
            LimitItem { max: amounts(&[("cpu", "4")]), min: amounts(&[("memory", "1Gi")]), ..LimitItem::default() };
        let above_limit =
            ResourceProblem::find(&at, &amounts(&[("cpu", "2")]), &amounts(&[("cpu", "1")]), Some(&range)).unwrap();
        assert_eq!(above_limit.kind, ProblemKind::RequestsAboveLimits);
        assert_eq!(
            above_limit.to_string(),
            "spec.template.spec.containers[0] asks for cpu 2 (limit 1), above its limit"
        );
        let above_max =
            ResourceProblem::find(&at, &amounts(&[("cpu", "2")]), &amounts(&[("cpu", "6")]), Some(&range)).unwrap();
        assert_eq!(above_max.kind, ProblemKind::AboveLimitRangeMax, "the limit is what exceeds the max");
        let below_min =
            ResourceProblem::find(&at, &amounts(&[("memory", "512Mi")]), &amounts(&[]), Some(&range)).unwrap();
        assert_eq!(below_min.kind, ProblemKind::BelowLimitRangeMin);
        assert_eq!(ResourceProblem::find(&at, &amounts(&[("nvidia.com/gpu", "1")]), &amounts(&[]), Some(&range)), None);
        assert_eq!(
            ResourceProblem::find(&at, &amounts(&[("cpu", "1500m")]), &amounts(&[("cpu", "1501m")]), None),
            None
        );
    }
}
