//! Who can reclaim from whom: for a ClusterQueue borrowing one resource in one
//! flavor, the other ClusterQueues of its cohort tree that Kueue could let
//! reclaim it, each with what it takes of the preempted workload's priority.
//! Derived once per change and per (ClusterQueue, flavor, resource), so a
//! review only compares priorities (`rules::exposure` reads it).
//!
//! Followed in Kueue v0.19.2 (pkg/scheduler/preemption/classical): a reclaimer
//! needs that flavor-resource (`WorkloadUsesResources`), reclaims only from a
//! queue over its nominal quota (`collectCandidatesInSubtree`), preempts while
//! borrowing only under `IsBorrowingWithinCohortForbidden` /
//! `isAboveBorrowingThreshold`, and simulates preemption only up to its nominal
//! quota unless it may reclaim in the hierarchy (`fitsResourceQuota`). With fair
//! sharing on, `fairPreemptions` runs instead (see `rules::exposure::reclaim`).

use super::quota::{CohortsOver, Contest, Pool, most_without_borrowing, nominal};
use super::{ClusterQueue, ClusterView, ReclaimWithinCohort};

/// A ClusterQueue that could reclaim what the borrower holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reclaimer {
    pub name: String,
    /// Any or LowerPriority (a queue that never reclaims is not listed).
    pub policy: ReclaimWithinCohort,
    pub while_borrowing: WhileBorrowing,
    /// Whether it reclaims when it may preempt while borrowing, and when not.
    pub reclaims_while_borrowing: bool,
    pub reclaims_otherwise: bool,
}

/// When a reclaimer may preempt while it borrows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhileBorrowing {
    Never,
    /// Fair sharing: it can get the flavor-resource at all.
    Always,
    /// borrowWithinCohort LowerPriority: for a workload some nameable priority
    /// outranks, at or below the threshold if there is one.
    UpTo(Option<i32>),
}

impl WhileBorrowing {
    /// Whether it may, against a workload of `priority` that `outranked` says
    /// some nameable priority is above.
    pub fn applies(self, priority: i32, outranked: bool) -> bool {
        match self {
            Self::Never => false,
            Self::Always => true,
            Self::UpTo(threshold) => outranked && threshold.is_none_or(|threshold| priority <= threshold),
        }
    }
}

impl Reclaimer {
    pub fn reclaims(&self, while_borrowing: bool) -> bool {
        if while_borrowing { self.reclaims_while_borrowing } else { self.reclaims_otherwise }
    }
}

/// The ClusterQueues of `borrower`'s cohort tree that could reclaim `resource`
/// in `flavor` from it, in name order, as far as one of them can be the first
/// for some priority: a reader takes the first whose policy and preempting
/// while borrowing fit the workload's priority. So once one reclaims from
/// every priority some class outranks, only `Any` reclaimers are looked at
/// further, and once one reclaims from every priority, none. (Reclaiming while
/// borrowing is never less than reclaiming without: `Contest::never_short`
/// only grows less likely as the reach grows.) Empty when the borrower cannot
/// borrow that flavor-resource (then it is never over its nominal quota there).
///
/// The borrower is a candidate only while over its nominal quota, so only
/// where it can borrow at all. A reclaimer needs that flavor-resource, and
/// either its branch of the tree lends into the pool the borrower draws from
/// (the pool is fungible: once the tree is busy, what the reclaimer's side lent
/// is what the borrower holds), or it may preempt while it borrows itself.
///
/// `pool` gives the tree's pool under a root (`quota::tree_pool` with the
/// queues that accept workloads), which the caller keeps for all its borrowers.
pub fn reclaimers(
    view: &impl ClusterView,
    borrower: &str,
    flavor: &str,
    resource: &str,
    pool: impl FnOnce(&str) -> Option<Pool>,
) -> Vec<Reclaimer> {
    listed(view, borrower, flavor, resource, pool, true)
}

/// [`reclaimers`], or with `prune` false every one that could reclaim at some priority.
fn listed(
    view: &impl ClusterView,
    borrower: &str,
    flavor: &str,
    resource: &str,
    pool: impl FnOnce(&str) -> Option<Pool>,
    prune: bool,
) -> Vec<Reclaimer> {
    let Some(root) = view.cohort_root(borrower) else { return Vec::new() };
    if view.potential_available(borrower, flavor, resource) <= nominal(view, borrower, flavor, resource) {
        return Vec::new();
    }
    let fair_sharing = view.kueue_config().fair_sharing_enabled();
    let usable = |queue: &str| view.accepts_workloads(queue);
    let contest = Contest::new(view, borrower, flavor, resource, usable).with_pool(pool(root));
    let cohorts_over = if fair_sharing { CohortsOver::AnyResource } else { CohortsOver::ThisResource };
    let mut found = Vec::new();
    // Every priority some class outranks is already reclaimed from by one found.
    let mut outranked_covered = false;
    let (_, members) = view.cohort_tree().members(root);
    for name in members.iter().filter(|name| *name != borrower) {
        let Some(queue) = view.cluster_queue(name) else { continue };
        let policy = queue.reclaim_within_cohort;
        if policy == ReclaimWithinCohort::Never || queue.quota(flavor, resource).is_none() {
            continue; // never reclaims, or has no quota in this flavor-resource
        }
        if prune && outranked_covered && policy == ReclaimWithinCohort::LowerPriority {
            continue; // it reclaims only from priorities one found already does
        }
        if !view.accepts_workloads(name) {
            continue; // no preemptor can ever be admitted through it
        }
        let while_borrowing = if fair_sharing {
            if view.potential_available(name, flavor, resource) > 0 {
                WhileBorrowing::Always
            } else {
                WhileBorrowing::Never
            }
        } else if queue.borrow_within_cohort.lower_priority {
            WhileBorrowing::UpTo(queue.borrow_within_cohort.max_priority_threshold)
        } else {
            WhileBorrowing::Never
        };
        if !contest.side_can_be_over(name, cohorts_over) {
            continue; // evicting it would free nothing the reclaimer's side can reach
        }
        let takes_back = contest.can_take_back(name);
        let reclaims = |while_borrowing: bool| {
            if !fair_sharing && !while_borrowing && always_borrows(view, name, queue, borrower, flavor) {
                return false; // every workload it could admit borrows, and it may not preempt while borrowing
            }
            // Nothing of ours it could take back; or the tree holds what it could
            // need beside everyone's most: it never reclaims.
            (takes_back || while_borrowing) && !contest.never_short(name, while_borrowing)
        };
        // Borrowing under a threshold needs an outranked priority: past
        // `outranked_covered`, only what it does otherwise can be first.
        let borrowing_matters = match while_borrowing {
            WhileBorrowing::Never => false,
            WhileBorrowing::Always => true,
            WhileBorrowing::UpTo(_) => !(prune && outranked_covered),
        };
        let reclaims_while_borrowing = borrowing_matters && reclaims(true);
        let reclaims_otherwise = while_borrowing != WhileBorrowing::Always && reclaims(false);
        if !(reclaims_while_borrowing || reclaims_otherwise) {
            continue;
        }
        let found_one =
            Reclaimer { name: name.to_string(), policy, while_borrowing, reclaims_while_borrowing, reclaims_otherwise };
        let from_every_outranked = reclaims_otherwise
            || while_borrowing == WhileBorrowing::Always
            || while_borrowing == WhileBorrowing::UpTo(None);
        found.push(found_one);
        let from_every = reclaims_otherwise || while_borrowing == WhileBorrowing::Always;
        if prune && policy == ReclaimWithinCohort::Any && from_every {
            break; // it reclaims from every priority: nobody after it is ever the first
        }
        outranked_covered |= from_every_outranked;
    }
    found
}

/// Whether every workload `reclaimer` could admit must borrow to preempt what
/// `borrower` holds in `flavor` (saved case s1-50973): some resource that the
/// LimitRanges of every namespace it serves force on each pod
/// ([`ClusterView::request_floor`]) is more than it can ask without borrowing
/// ([`most_without_borrowing`]) in each flavor Kueue could assign that
/// resource: the contested flavor when the resource shares its resource group
/// (one flavor per group and pod set), any flavor of its own group otherwise.
/// A resource the queue does not cover at all admits nothing
/// (`findFlavorForPodSets`: "resource ... unavailable in ClusterQueue").
fn always_borrows(
    view: &impl ClusterView,
    reclaimer_name: &str,
    reclaimer: &ClusterQueue,
    borrower: &str,
    flavor: &str,
) -> bool {
    let Some(floor) = view.request_floor(reclaimer_name) else { return false };
    floor.iter().any(|(resource, least)| {
        let least = least.kueue_milli(resource);
        if least <= 0 {
            return false;
        }
        let group = reclaimer.resource_groups.iter().find(|g| g.covered_resources.iter().any(|r| r == resource));
        let Some(group) = group else { return true };
        let too_little = |f: &str| least > most_without_borrowing(view, reclaimer_name, borrower, f, resource);
        if group.flavors.iter().any(|f| f.name == flavor) {
            too_little(flavor)
        } else {
            group.flavors.iter().all(|f| too_little(&f.name))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::quota::tree_pool;
    use crate::cluster::{ClusterState, state_file};

    /// The first that reclaims from a workload of `priority` (`outranked`:
    /// some nameable priority is above it), as `rules::exposure` reads a list.
    fn first(list: &[Reclaimer], priority: i32, outranked: bool) -> Option<&str> {
        list.iter()
            .find(|r| {
                let policy_allows = match r.policy {
                    ReclaimWithinCohort::Never => false,
                    ReclaimWithinCohort::Any => true,
                    ReclaimWithinCohort::LowerPriority => outranked,
                };
                policy_allows && r.reclaims(r.while_borrowing.applies(priority, outranked))
            })
            .map(|r| r.name.as_str())
    }

    /// A tree of queues whose policies, limits and thresholds vary with `seed`.
    fn varied_tree(seed: u64) -> ClusterState {
        let mut next = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut draw = |n: u64| {
            next = next.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (next >> 33) % n
        };
        let mut yaml = String::from(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n---\n\
             apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {kubernetes.io/metadata.name: a}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: left}\nspec: {parentName: root}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: right}\nspec: {parentName: root}\n",
        );
        for queue in 0..10 {
            let cohort = ["left", "right", "root"][draw(3) as usize];
            let reclaim = ["Never", "LowerPriority", "Any"][draw(3) as usize];
            let borrow = match draw(3) {
                0 => String::new(),
                1 => ", borrowWithinCohort: {policy: LowerPriority}".into(),
                _ => {
                    format!(", borrowWithinCohort: {{policy: LowerPriority, maxPriorityThreshold: {}}}", draw(4) * 100)
                }
            };
            let limits = [", borrowingLimit: 1", ", lendingLimit: 1", ", borrowingLimit: 0", "", ""][draw(5) as usize];
            let selector = if draw(4) == 0 { "{matchLabels: {none: none}}" } else { "{}" };
            yaml.push_str(&format!(
                "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: q{queue}}}\nspec:\n  \
                 cohortName: {cohort}\n  namespaceSelector: {selector}\n  preemption: {{reclaimWithinCohort: {reclaim}{borrow}}}\n  \
                 resourceGroups: [{{coveredResources: [cpu], flavors: [{{name: f, resources: [{{name: cpu, nominalQuota: {}{limits}}}]}}]}}]\n",
                draw(4)
            ));
        }
        state_file::parse(yaml.as_bytes()).unwrap()
    }

    #[test]
    fn the_pruned_list_names_the_same_first_reclaimer_at_every_priority() {
        let mut compared = 0;
        let mut pruned_away = 0;
        for seed in 0..200 {
            let view = varied_tree(seed);
            for borrower in (0..10).map(|q| format!("q{q}")) {
                let pool = |root: &str| tree_pool(&view, root, "f", "cpu", |q| view.accepts_workloads(q));
                let all = listed(&view, &borrower, "f", "cpu", pool, false);
                let pruned = reclaimers(&view, &borrower, "f", "cpu", pool);
                pruned_away += all.len() - pruned.len();
                for priority in [-1, 0, 99, 100, 150, 200, 300, 301, 1000] {
                    for outranked in [false, true] {
                        assert_eq!(
                            first(&pruned, priority, outranked),
                            first(&all, priority, outranked),
                            "seed {seed}, borrower {borrower}, priority {priority}, outranked {outranked}"
                        );
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 10_000 && pruned_away > 100, "{compared} compared, {pruned_away} pruned away");
    }

    const FAIR_SHARING: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kueue-manager-config, namespace: kueue-system}\n\
        data:\n  controller_manager_config.yaml: |\n    apiVersion: config.kueue.x-k8s.io/v1beta2\n    kind: Configuration\n\
        \x20   fairSharing:\n      preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]\n";

    /// One flat cohort `c` with a namespace every queue selects (except where
    /// `selector` says otherwise), in flavor `f`, cpu only.
    fn flat(queues: &[(&str, &str, &str, &str)], extra: &str) -> ClusterState {
        let mut yaml = String::from(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\n---\n\
             apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {kubernetes.io/metadata.name: a}}\n",
        );
        for (name, preemption, quota, selector) in queues {
            yaml.push_str(&format!(
                "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec:\n  cohortName: c\n  \
                 namespaceSelector: {selector}\n  preemption: {preemption}\n  resourceGroups: [{{coveredResources: [cpu], \
                 flavors: [{{name: f, resources: [{{name: cpu, {quota}}}]}}]}}]\n"
            ));
        }
        if !extra.is_empty() {
            yaml.push_str("---\n");
            yaml.push_str(extra);
        }
        state_file::parse(yaml.as_bytes()).unwrap()
    }

    fn names(view: &ClusterState, borrower: &str) -> Vec<String> {
        let pool = |root: &str| tree_pool(view, root, "f", "cpu", |q| view.accepts_workloads(q));
        reclaimers(view, borrower, "f", "cpu", pool).into_iter().map(|r| r.name).collect()
    }

    #[test]
    fn the_list_stops_where_nobody_after_can_be_first() {
        let lender = ("lender", "{}", "nominalQuota: 8", "{}");
        let borrower = ("b", "{}", "nominalQuota: 0", "{}");
        let lower = |name| (name, "{reclaimWithinCohort: LowerPriority}", "nominalQuota: 4", "{}");
        let any = |name| (name, "{reclaimWithinCohort: Any}", "nominalQuota: 4", "{}");
        // One reclaiming from every outranked priority: later LowerPriority ones never come first.
        assert_eq!(names(&flat(&[borrower, lender, lower("r1"), lower("r2")], ""), "b"), ["r1"]);
        // One reclaiming from every priority: nobody after it.
        assert_eq!(names(&flat(&[borrower, lender, any("r1"), any("r2")], ""), "b"), ["r1"]);
        // A LowerPriority one first leaves room for an Any one after it.
        assert_eq!(names(&flat(&[borrower, lender, lower("r1"), any("r2"), any("r3")], ""), "b"), ["r1", "r2"]);
        // Preempting while borrowing with no threshold, it reclaims from every
        // outranked priority though it lends nothing to take back.
        let while_borrowing = (
            "r1",
            "{reclaimWithinCohort: LowerPriority, borrowWithinCohort: {policy: LowerPriority}}",
            "nominalQuota: 0",
            "{}",
        );
        let view = flat(&[borrower, lender, while_borrowing, lower("r2")], "");
        let listed = reclaimers(&view, "b", "f", "cpu", |_| None);
        assert_eq!(listed.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["r1"]);
        assert_eq!((listed[0].reclaims_while_borrowing, listed[0].reclaims_otherwise), (true, false));
        // With a threshold it does not: r2 may come first above it.
        let capped = (
            "r1",
            "{reclaimWithinCohort: LowerPriority, borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 10}}",
            "nominalQuota: 0",
            "{}",
        );
        assert_eq!(names(&flat(&[borrower, lender, capped, lower("r2")], ""), "b"), ["r1", "r2"]);
        // Under fair sharing a reclaimer that can get the flavor-resource preempts while borrowing.
        let fair = flat(
            &[borrower, lender, ("r1", "{reclaimWithinCohort: LowerPriority}", "nominalQuota: 0", "{}"), lower("r2")],
            FAIR_SHARING,
        );
        let listed = reclaimers(&fair, "b", "f", "cpu", |_| None);
        assert_eq!(listed.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["r1"]);
        assert_eq!(listed[0].while_borrowing, WhileBorrowing::Always);
        assert!(listed[0].reclaims_while_borrowing);
        // Classical, the same r1 lends nothing and may not preempt while borrowing: only r2.
        let classical = flat(
            &[borrower, lender, ("r1", "{reclaimWithinCohort: LowerPriority}", "nominalQuota: 0", "{}"), lower("r2")],
            "",
        );
        assert_eq!(names(&classical, "b"), ["r2"]);
    }

    #[test]
    fn a_reclaimer_the_tree_always_has_room_for_is_not_listed() {
        // As `quota::tests::a_reclaimer_that_always_fits_never_reclaims`: a and
        // r each draw at most 6 and 4 of the 12 the cohort holds while idle takes
        // no workloads (its selector matches no namespace). r lends its quota,
        // so it could take it back, but it is never short.
        let a = ("a", "{}", "nominalQuota: 4, borrowingLimit: 2", "{}");
        let r = ("r", "{reclaimWithinCohort: Any}", "nominalQuota: 4", "{}");
        let idle = |selector| ("idle", "{}", "nominalQuota: 4", selector);
        assert!(names(&flat(&[a, r, idle("{matchLabels: {none: none}}")], ""), "a").is_empty());
        // If idle takes workloads too, the cohort can run short: r reclaims.
        assert_eq!(names(&flat(&[a, r, idle("{}")], ""), "a"), ["r"]);
    }

    #[test]
    fn preempting_while_borrowing_needs_an_outranked_priority_at_or_below_the_threshold() {
        let cases = [
            (WhileBorrowing::Never, 0, true, false),
            (WhileBorrowing::Always, 0, false, true),
            (WhileBorrowing::UpTo(None), 5, true, true),
            (WhileBorrowing::UpTo(None), 5, false, false),
            (WhileBorrowing::UpTo(Some(5)), 5, true, true),
            (WhileBorrowing::UpTo(Some(5)), 4, true, true),
            (WhileBorrowing::UpTo(Some(5)), 6, true, false),
        ];
        for (while_borrowing, priority, outranked, applies) in cases {
            assert_eq!(
                while_borrowing.applies(priority, outranked),
                applies,
                "{while_borrowing:?} {priority} {outranked}"
            );
        }
    }
}
