//! Quota in a cohort tree, as Kueue's scheduler cache computes it
//! (pkg/cache/scheduler/resource_node.go): what a ClusterQueue could ever get
//! of one resource in one flavor, with nothing else running.
//!
//! A node's *subtree quota* is its own nominal quota plus what its children lend
//! it; a child lends all of its subtree quota except what its `lendingLimit`
//! keeps back (`localQuota`). A node's *potential* is what it keeps plus its
//! parent's potential, capped by its `borrowingLimit` (`potentialAvailable`).
//! With no usage, Kueue's `available` equals `potentialAvailable`, so a
//! workload alone fits iff its request is at most the potential.

use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};

use super::ClusterView;
use super::objects::ResourceGroup;

/// What a workload holds once admitted: (flavor, resource) -> milli-units.
pub type Usage = std::collections::BTreeMap<(String, String), i64>;

/// One node's quota for a flavor and resource: nominal, borrowingLimit, lendingLimit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct NodeQuota {
    nominal: i64,
    borrowing_limit: Option<i64>,
    lending_limit: Option<i64>,
}

fn node_quota(groups: &[ResourceGroup], flavor: &str, resource: &str) -> NodeQuota {
    groups
        .iter()
        .flat_map(|group| &group.flavors)
        .filter(|f| f.name == flavor)
        .find_map(|f| f.quota(resource))
        .map_or_else(NodeQuota::default, |q| NodeQuota {
            nominal: q.nominal,
            borrowing_limit: q.borrowing_limit,
            lending_limit: q.lending_limit,
        })
}

/// What a node keeps for itself (`resourceNode.localQuota`): with a
/// lendingLimit, the part of its subtree quota above it; without, nothing.
fn local_quota(subtree: i64, quota: NodeQuota) -> i64 {
    quota.lending_limit.map_or(0, |limit| (subtree - limit).max(0))
}

/// A cohort tree node: a ClusterQueue or a Cohort (explicit or implied by a name).
#[derive(Clone, Copy)]
enum Node<'a> {
    ClusterQueue(&'a str),
    Cohort(&'a str),
}

struct Tree<'v, V: ClusterView> {
    view: &'v V,
    flavor: &'v str,
    resource: &'v str,
    /// Whether cohorts' subtree quotas are read from the view's derivation;
    /// false while that derivation is being made.
    derived: bool,
}

impl<'v, V: ClusterView> Tree<'v, V> {
    fn new(view: &'v V, flavor: &'v str, resource: &'v str) -> Self {
        Self { view, flavor, resource, derived: true }
    }

    fn quota(&self, node: Node<'_>) -> NodeQuota {
        let groups = match node {
            Node::ClusterQueue(name) => self.view.cluster_queue(name).map(|q| q.resource_groups.as_slice()),
            Node::Cohort(name) => self.view.cohort(name).map(|c| c.resource_groups.as_slice()),
        };
        groups.map_or_else(NodeQuota::default, |groups| node_quota(groups, self.flavor, self.resource))
    }

    fn parent(&self, node: Node<'_>) -> Option<&'v str> {
        match node {
            Node::ClusterQueue(name) => self.view.cluster_queue(name)?.cohort.as_deref(),
            Node::Cohort(name) => self.view.cohort(name)?.parent.as_deref(),
        }
    }

    /// `SubtreeQuota`: own nominal plus what each child lends up.
    fn subtree(&self, node: Node<'_>, visiting: &mut HashSet<String>) -> i64 {
        let own = self.quota(node).nominal;
        let Node::Cohort(name) = node else { return own };
        if self.derived
            && let Some(derived) = self.view.subtree_quota(name, self.flavor, self.resource)
        {
            return derived;
        }
        if !visiting.insert(name.to_string()) {
            return own; // a cycle: Kueue refuses the tree; count nothing twice
        }
        let mut total = own;
        let children = self.view.cohort_tree().children(name);
        for child in children.cohorts {
            total = total.saturating_add(self.lent(Node::Cohort(child), visiting));
        }
        // An inactive queue still lends: Kueue's snapshot skips the queue but
        // clones each Cohort's quota sums as the cache built them, with every
        // queue in (`Cache.Snapshot`, `resourceNode.Clone`).
        for child in children.queues {
            total = total.saturating_add(self.lent(Node::ClusterQueue(child), visiting));
        }
        visiting.remove(name);
        total
    }

    fn lent(&self, child: Node<'_>, visiting: &mut HashSet<String>) -> i64 {
        let subtree = self.subtree(child, visiting);
        subtree - local_quota(subtree, self.quota(child))
    }

    /// The most a node's usage can reach when the queues that `holds` accepts
    /// each use up to their potential: a queue's own usage; a cohort's, what
    /// its children use past their local quotas (`addUsage`), at most its
    /// potential. A queue that lists no quota here gets no flavor assignment in it.
    fn most_usage(&self, node: Node<'_>, holds: &impl Fn(&str) -> bool, visiting: &mut HashSet<String>) -> i64 {
        let name = match node {
            Node::ClusterQueue(name) => {
                let listed =
                    self.view.cluster_queue(name).is_some_and(|q| q.quota(self.flavor, self.resource).is_some());
                return if listed && holds(name) {
                    self.view.potential_available(name, self.flavor, self.resource)
                } else {
                    0
                };
            }
            Node::Cohort(name) => name,
        };
        if !visiting.insert(name.to_string()) {
            return 0; // a cycle: Kueue refuses the tree
        }
        let past_local = |this: &Self, child: Node<'_>, visiting: &mut HashSet<String>| {
            let used = this.most_usage(child, holds, visiting);
            let keeps = local_quota(this.subtree(child, &mut HashSet::new()), this.quota(child));
            (used - keeps).max(0)
        };
        let mut total: i64 = 0;
        let children = self.view.cohort_tree().children(name);
        for child in children.cohorts {
            total = total.saturating_add(past_local(self, Node::Cohort(child), visiting));
        }
        for child in children.queues {
            total = total.saturating_add(past_local(self, Node::ClusterQueue(child), visiting));
        }
        visiting.remove(name);
        total.min(self.potential(node, &mut HashSet::new()))
    }

    /// What a ClusterQueue always has, whatever the queues that `holds` accepts
    /// use: its local quota (`localQuota`, kept back by its lendingLimit) and,
    /// from each cohort up its path whose subtree no other such queue is in, that
    /// cohort's local quota (the root's whole subtree), each step capped by the
    /// node's borrowingLimit (`available`). A cohort another queue can draw from
    /// guarantees nothing, nor does anything above it.
    fn guaranteed(&self, queue: &str, holds: &impl Fn(&str) -> bool) -> i64 {
        let cap = |node: Node<'_>| {
            let quota = self.quota(node);
            let subtree = self.subtree(node, &mut HashSet::new());
            quota.borrowing_limit.map(|limit| (subtree - local_quota(subtree, quota)).saturating_add(limit))
        };
        // No other queue below the cohort that lists the quota and holds workloads.
        let alone_in = |cohort: &str| {
            let mut stack = vec![cohort];
            let mut seen = HashSet::new();
            while let Some(cohort) = stack.pop() {
                if !seen.insert(cohort) {
                    continue;
                }
                let children = self.view.cohort_tree().children(cohort);
                let other_holder = children.queues.iter().any(|name| {
                    name != queue
                        && holds(name)
                        && self.view.cluster_queue(name).is_some_and(|q| q.quota(self.flavor, self.resource).is_some())
                });
                if other_holder {
                    return false;
                }
                stack.extend(children.cohorts.iter().map(String::as_str));
            }
            true
        };
        let own = Node::ClusterQueue(queue);
        let path = cohort_path(self.view, queue);
        // From the top down: what each cohort passes to the node below it.
        let mut from_above: i64 = 0;
        for (index, cohort) in path.iter().enumerate().rev() {
            if !alone_in(cohort) {
                from_above = 0;
                continue;
            }
            let node = Node::Cohort(cohort);
            let subtree = self.subtree(node, &mut HashSet::new());
            let is_root = index + 1 == path.len() || self.view.cohort(cohort).and_then(|c| c.parent.as_ref()).is_none();
            let keeps = if is_root { subtree } else { local_quota(subtree, self.quota(node)) };
            let passed = cap(node).map_or(from_above, |cap| from_above.min(cap));
            from_above = keeps.saturating_add(if is_root { 0 } else { passed });
        }
        let keeps = local_quota(self.subtree(own, &mut HashSet::new()), self.quota(own));
        let passed = cap(own).map_or(from_above, |cap| from_above.min(cap));
        keeps.saturating_add(passed).min(self.view.potential_available(queue, self.flavor, self.resource))
    }

    /// `potentialAvailable`.
    fn potential(&self, node: Node<'_>, visiting: &mut HashSet<String>) -> i64 {
        let quota = self.quota(node);
        let subtree = self.subtree(node, &mut HashSet::new());
        let Some(parent) = self.parent(node) else { return subtree };
        if !visiting.insert(parent.to_string()) {
            return subtree;
        }
        let mut potential = local_quota(subtree, quota).saturating_add(self.potential(Node::Cohort(parent), visiting));
        if let Some(limit) = quota.borrowing_limit {
            potential = potential.min(subtree.saturating_add(limit));
        }
        potential
    }
}

/// The most of `resource` in `flavor` ClusterQueue `cluster_queue` could ever
/// hold (Kueue: `ClusterQueueSnapshot.PotentialAvailable`), in milli-units.
pub fn potential_available(view: &impl ClusterView, cluster_queue: &str, flavor: &str, resource: &str) -> i64 {
    let tree = Tree::new(view, flavor, resource);
    tree.potential(Node::ClusterQueue(cluster_queue), &mut HashSet::new())
}

/// A cohort's subtree quota worked out from its tree, not read from the
/// view's derivation: what that derivation holds.
pub fn underived_subtree(view: &impl ClusterView, cohort: &str, flavor: &str, resource: &str) -> i64 {
    let tree = Tree { view, flavor, resource, derived: false };
    tree.subtree(Node::Cohort(cohort), &mut HashSet::new())
}

/// The cohorts above a ClusterQueue, nearest first (a cycle stops the walk).
fn cohort_path(view: &impl ClusterView, cluster_queue: &str) -> Vec<String> {
    let mut path = vec![];
    let mut seen = HashSet::new();
    let mut current = view.cluster_queue(cluster_queue).and_then(|q| q.cohort.clone());
    while let Some(cohort) = current {
        if !seen.insert(cohort.clone()) {
            break;
        }
        current = view.cohort(&cohort).and_then(|c| c.parent.clone());
        path.push(cohort);
    }
    path
}

/// Each queue's side of the tree below the two queues' lowest common cohort:
/// the queue itself, then its cohorts up to (not including) that cohort.
/// `None` when they share no cohort.
fn sides<'a>(ours: &'a [String], theirs: &'a [String]) -> Option<(&'a [String], &'a [String])> {
    let common = theirs.iter().position(|cohort| ours.contains(cohort))?;
    let ours_below = ours.iter().position(|cohort| *cohort == theirs[common])?;
    Some((&ours[..ours_below], &theirs[..common]))
}

/// Whether `reclaimer` can be short while it has Kueue's hierarchical
/// advantage over what `borrower` holds, and then fit in what evicting it frees
/// (`collectCandidatesForHierarchicalReclaim`: a request that fits the quota of
/// the reclaimer or of a cohort on its side below the common cohort makes every
/// candidate found above a `HiearchicalReclaim`, preemptible at any borrowing).
/// Two ways: the reclaimer's own nominal quota flows into the common pool (its
/// branch lends), so a borrower can be holding it; or some node on its side
/// lends what it holds (so others can take it) and the reclaimer may borrow
/// through every node up to the common cohort, where the borrower's share is freed.
pub fn reclaimer_can_take_back(
    view: &impl ClusterView,
    reclaimer: &str,
    borrower: &str,
    flavor: &str,
    resource: &str,
) -> bool {
    Contest::new(view, borrower, flavor, resource, |_| false).can_take_back(reclaimer)
}

/// The most of `resource` in `flavor` a request of `reclaimer`'s can ask and
/// still preempt what `borrower` holds without the reclaimer borrowing, as
/// classical preemption must when borrowWithinCohort does not allow it
/// (`classicalPreemptions`). Such a candidate is either a
/// `ReclaimWithoutBorrowing` one, taken only while the whole request fits the
/// reclaimer's nominal quota (`workloadFits` with `allowBorrowing` false), or
/// one the request has a hierarchical advantage over: the whole request fits,
/// by `QuantitiesFitInQuota`, the reclaimer or a cohort on its side below the
/// one it shares with the borrower, which holds at most its subtree quota
/// beside what the nodes below it keep (`LocalAvailable`).
pub fn most_without_borrowing(
    view: &impl ClusterView,
    reclaimer: &str,
    borrower: &str,
    flavor: &str,
    resource: &str,
) -> i64 {
    let tree = Tree::new(view, flavor, resource);
    let queue = Node::ClusterQueue(reclaimer);
    let nominal = tree.quota(queue).nominal;
    let (ours, theirs) = (cohort_path(view, borrower), cohort_path(view, reclaimer));
    let Some((_, their_side)) = sides(&ours, &theirs) else { return nominal };
    let mut kept_below = local_quota(nominal, tree.quota(queue));
    let mut most = nominal;
    for cohort in their_side {
        let node = Node::Cohort(cohort);
        let subtree = tree.subtree(node, &mut HashSet::new());
        most = most.max(subtree.saturating_add(kept_below));
        kept_below = kept_below.saturating_add(local_quota(subtree, tree.quota(node)));
    }
    most
}

/// Whether what `borrower` holds can be a reclaim candidate for `reclaimer`:
/// Kueue looks for candidates only in subtrees over their quota and takes one
/// only while its queue and every cohort up to the common one are over theirs
/// (classical: `collectCandidatesInSubtree`, `candidateIsValid`; fair sharing:
/// `TargetClusterQueueOrdering.nextTarget` prunes queues and cohorts that do
/// not borrow). The borrower can be over its nominal quota only if its potential
/// exceeds it; a cohort only if the most its children can put in it exceeds its
/// subtree quota. A cohort's usage is what its children use past their local
/// quotas (`addUsage`: a child's lendingLimit keeps that part out of the
/// cohort; saved cases s1-81543, s1-88072); the queues that count are those that
/// can hold workloads (`usable`, and the borrower, which holds this one), each
/// at its potential. Which resource a cohort must be over in is `cohorts_over`.
pub fn borrower_side_can_be_over(
    view: &impl ClusterView,
    borrower: &str,
    reclaimer: &str,
    (flavor, resource): (&str, &str),
    cohorts_over: CohortsOver,
    usable: impl Fn(&str) -> bool,
) -> bool {
    Contest::new(view, borrower, flavor, resource, usable).side_can_be_over(reclaimer, cohorts_over)
}

/// Which of a cohort's resources it must be over for a workload below it to be
/// a reclaim candidate: classical preemption asks about the resources the
/// preemptor needs (`collectCandidatesInSubtree`: `IsWithinNominalInResources`);
/// fair sharing prunes a cohort only when it borrows nothing at all
/// (`TargetClusterQueueOrdering.nextTarget` on `DRS.IsBorrowing`, which
/// `dominantResourceShare` sets when usage passes the subtree quota in any
/// flavor-resource; saved case s77-2952, over in memory, reclaimed for cpu).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CohortsOver {
    ThisResource,
    AnyResource,
}

/// Every flavor-resource any ClusterQueue or Cohort lists a quota for.
pub fn flavor_resources(view: &impl ClusterView) -> Vec<(&str, &str)> {
    let queues = view.cluster_queues().flat_map(|(_, queue)| &queue.resource_groups);
    let cohorts = view.cohorts().flat_map(|(_, cohort)| &cohort.resource_groups);
    let mut listed: Vec<(&str, &str)> = queues
        .chain(cohorts)
        .flat_map(|group| &group.flavors)
        .flat_map(|flavor| flavor.resources.iter().map(|r| (flavor.name.as_str(), r.name.as_str())))
        .collect();
    listed.sort_unstable();
    listed.dedup();
    listed
}

/// Whether `reclaimer` can never be short of `resource` in `flavor` in the
/// cohort tree it shares with `borrower`, so it never reclaims: the pool the tree
/// shares holds, at once, all that every other queue which can hold workloads
/// (`usable`) could ever draw from it and all the reclaimer could need.
/// Kueue preempts only for a workload that does not fit (`Preemptor.GetTargets`
/// runs after `fitsResourceQuota` fails). The pool is the root's subtree quota;
/// a queue draws from it what its potential exceeds what it keeps for itself.
/// A reclaimer that may not borrow while preempting (`borrows_while_preempting`
/// false) simulates preemption only while its usage would stay within its
/// nominal quota or fit a cohort below the root (`fitsResourceQuota`:
/// `mayReclaimInHierarchy` from `FindHeightOfLowestSubtreeThatFits`), so it
/// needs at most the larger of its nominal quota and what it keeps plus the
/// largest subtree quota of a cohort above it short of the root (in a flat
/// tree, its nominal quota), less the borrower's nominal quota where that
/// cohort holds the borrower too (`FindHeightOfLowestSubtreeThatFits` asks
/// whether the request fits the cohort beside its current usage, which then
/// includes the borrower's, over its nominal while it is a candidate);
/// otherwise it may need its whole potential.
/// Answered only where the pool is
/// one: a Cohort's own borrowingLimit or lendingLimit splits it, and then this
/// says no (the caller stays careful).
pub fn reclaimer_never_short(
    view: &impl ClusterView,
    borrower: &str,
    reclaimer: &str,
    borrows_while_preempting: bool,
    flavor: &str,
    resource: &str,
    usable: impl Fn(&str) -> bool,
) -> bool {
    Contest::new(view, borrower, flavor, resource, usable).never_short(reclaimer, borrows_while_preempting)
}

/// A borrower's place in its cohort tree for one flavor and resource, as each
/// reclaimer of the tree meets it (the three questions above). What depends
/// only on the borrower and on which queues can hold workloads (`usable`) is
/// worked out once, so asking for every reclaimer of a tree costs each one a
/// walk of its own path, not of the tree.
pub struct Contest<'v, V: ClusterView, U: Fn(&str) -> bool> {
    tree: Tree<'v, V>,
    borrower: &'v str,
    /// The cohorts above the borrower, nearest first.
    path: Vec<String>,
    usable: U,
    /// Per cohort on the borrower's side and way of counting: whether it can be over its quota.
    over: RefCell<HashMap<(String, CohortsOver), bool>>,
    flavor_resources: OnceCell<Vec<(&'v str, &'v str)>>,
    /// The tree's pool, when it is one (no Cohort's own limit splits it).
    pool: OnceCell<Option<Pool>>,
}

/// The pool a tree shares for one flavor-resource, and what its usable
/// queues could draw from it past what they keep (`reclaimer_never_short`).
#[derive(Debug, Clone)]
pub struct Pool {
    root: String,
    quota: i64,
    drawn_by_usable: i128,
}

impl<'v, V: ClusterView, U: Fn(&str) -> bool> Contest<'v, V, U> {
    pub fn new(view: &'v V, borrower: &'v str, flavor: &'v str, resource: &'v str, usable: U) -> Self {
        Self {
            tree: Tree::new(view, flavor, resource),
            borrower,
            path: cohort_path(view, borrower),
            usable,
            over: RefCell::default(),
            flavor_resources: OnceCell::new(),
            pool: OnceCell::new(),
        }
    }

    fn holds(&self, name: &str) -> bool {
        name == self.borrower || (self.usable)(name)
    }

    /// `reclaimer_can_take_back`.
    pub fn can_take_back(&self, reclaimer: &str) -> bool {
        let tree = &self.tree;
        let theirs = cohort_path(tree.view, reclaimer);
        let Some((_, their_side)) = sides(&self.path, &theirs) else { return false };
        let nodes: Vec<Node<'_>> =
            std::iter::once(Node::ClusterQueue(reclaimer)).chain(their_side.iter().map(|c| Node::Cohort(c))).collect();
        let branch = *nodes.last().expect("the reclaimer itself is always there");
        let lent = |node: Node<'_>| tree.lent(node, &mut HashSet::new());
        if tree.quota(Node::ClusterQueue(reclaimer)).nominal > 0 && lent(branch) > 0 {
            return true;
        }
        let borrows_through = nodes.iter().all(|node| tree.quota(*node).borrowing_limit != Some(0));
        borrows_through && nodes.iter().any(|node| tree.subtree(*node, &mut HashSet::new()) > 0 && lent(*node) > 0)
    }

    /// `borrower_side_can_be_over`.
    pub fn side_can_be_over(&self, reclaimer: &str, cohorts_over: CohortsOver) -> bool {
        let (view, flavor, resource) = (self.tree.view, self.tree.flavor, self.tree.resource);
        let theirs = cohort_path(view, reclaimer);
        let Some((our_side, _)) = sides(&self.path, &theirs) else { return false };
        if view.potential_available(self.borrower, flavor, resource)
            <= self.tree.quota(Node::ClusterQueue(self.borrower)).nominal
        {
            return false;
        }
        our_side.iter().all(|cohort| self.cohort_can_be_over(cohort, cohorts_over))
    }

    fn cohort_can_be_over(&self, cohort: &str, cohorts_over: CohortsOver) -> bool {
        let key = (cohort.to_string(), cohorts_over);
        if let Some(known) = self.over.borrow().get(&key) {
            return *known;
        }
        let view = self.tree.view;
        let holds = |name: &str| self.holds(name);
        let over = |tree: &Tree<'_, V>| {
            let node = Node::Cohort(cohort);
            tree.most_usage(node, &holds, &mut HashSet::new()) > tree.subtree(node, &mut HashSet::new())
        };
        let answer = match cohorts_over {
            CohortsOver::ThisResource => over(&self.tree),
            CohortsOver::AnyResource => self
                .flavor_resources
                .get_or_init(|| flavor_resources(view))
                .iter()
                .any(|&(flavor, resource)| over(&Tree::new(view, flavor, resource))),
        };
        self.over.borrow_mut().insert(key, answer);
        answer
    }

    /// `reclaimer_never_short`.
    pub fn never_short(&self, reclaimer: &str, borrows_while_preempting: bool) -> bool {
        let tree = &self.tree;
        let (view, flavor, resource) = (tree.view, tree.flavor, tree.resource);
        let Some(root) = self.path.first().and_then(|cohort| view.cohort_tree().root(cohort)) else { return false };
        let reach = if borrows_while_preempting {
            view.potential_available(reclaimer, flavor, resource)
        } else {
            reach_without_borrowing(tree, reclaimer, &self.path, self.borrower, root)
        };
        let holds = |name: &str| self.holds(name);
        if reach <= tree.guaranteed(reclaimer, &holds) {
            return true; // what it keeps to itself covers all it could preempt for
        }
        let Some(pool) = self.pool.get_or_init(|| tree_pool(view, root, flavor, resource, &self.usable)) else {
            return false;
        };
        let mut drawn = pool.drawn_by_usable;
        let in_tree = view
            .cluster_queue(reclaimer)
            .filter(|queue| queue.quota(flavor, resource).is_some())
            .and_then(|queue| queue.cohort.as_deref())
            .is_some_and(|cohort| view.cohort_tree().root(cohort) == Some(pool.root.as_str()));
        if in_tree {
            let node = Node::ClusterQueue(reclaimer);
            let keeps = local_quota(tree.subtree(node, &mut HashSet::new()), tree.quota(node));
            if (self.usable)(reclaimer) {
                drawn -= i128::from(view.potential_available(reclaimer, flavor, resource).saturating_sub(keeps).max(0));
            }
            drawn += i128::from(reach.saturating_sub(keeps).max(0));
        }
        // Kueue's sums saturate; every term is at least zero, so the sum is capped.
        i64::try_from(drawn).unwrap_or(i64::MAX) <= pool.quota
    }

    /// The tree's pool, worked out once for all the borrowers of a tree (the
    /// same `usable` is the caller's to keep).
    pub fn with_pool(self, pool: Option<Pool>) -> Self {
        let _ = self.pool.set(pool);
        self
    }
}

/// The tree's pool under `root` for one flavor-resource, or `None` where a
/// Cohort's own borrowingLimit or lendingLimit splits it (then
/// `reclaimer_never_short` says no: the caller stays careful).
pub fn tree_pool(
    view: &impl ClusterView,
    root: &str,
    flavor: &str,
    resource: &str,
    usable: impl Fn(&str) -> bool,
) -> Option<Pool> {
    let tree = Tree::new(view, flavor, resource);
    let (cohorts, queues) = view.cohort_tree().members(root);
    for cohort in cohorts {
        let quota = tree.quota(Node::Cohort(cohort));
        if quota.borrowing_limit.is_some() || quota.lending_limit.is_some() {
            return None;
        }
    }
    let mut drawn: i128 = 0;
    for name in queues {
        let listed = view.cluster_queue(name).is_some_and(|q| q.quota(flavor, resource).is_some());
        if !listed || !usable(name) {
            continue; // Kueue assigns a queue only the flavors it lists: it draws none of this one
        }
        let node = Node::ClusterQueue(name);
        let keeps = local_quota(tree.subtree(node, &mut HashSet::new()), tree.quota(node));
        let most = view.potential_available(name, flavor, resource);
        drawn += i128::from(most.saturating_sub(keeps).max(0));
    }
    let quota = tree.subtree(Node::Cohort(root), &mut HashSet::new());
    Some(Pool { root: root.to_string(), quota, drawn_by_usable: drawn })
}

/// The most a reclaimer that may not borrow while preempting uses, with the
/// request it simulates preemption for: its nominal quota, or what it keeps plus
/// the room in a cohort on its path short of the root (`fitsResourceQuota`,
/// `FindHeightOfLowestSubtreeThatFits`), at most its potential.
fn reach_without_borrowing<V: ClusterView>(
    tree: &Tree<'_, V>,
    reclaimer: &str,
    borrower_path: &[String],
    borrower: &str,
    root: &str,
) -> i64 {
    let view = tree.view;
    let node = Node::ClusterQueue(reclaimer);
    let keeps = local_quota(tree.subtree(node, &mut HashSet::new()), tree.quota(node));
    let below_root = cohort_path(view, reclaimer).into_iter().filter(|cohort| cohort != root);
    // A cohort that also holds the borrower has the borrower's usage in it, and
    // the borrower is a candidate only while over its nominal quota: what is
    // left there for the reclaimer is at most the rest.
    let borrower_nominal = tree.quota(Node::ClusterQueue(borrower)).nominal;
    let room = |cohort: String| {
        let subtree = tree.subtree(Node::Cohort(&cohort), &mut HashSet::new());
        if borrower_path.contains(&cohort) { subtree.saturating_sub(borrower_nominal) } else { subtree }
    };
    let largest = below_root.map(room).max().unwrap_or(0);
    let reach = tree.quota(node).nominal.max(keeps.saturating_add(largest));
    reach.min(view.potential_available(reclaimer, tree.flavor, tree.resource))
}

/// The top of a ClusterQueue's cohort tree (a cohort without a Cohort object is
/// its own root; a cycle stops the walk where it closes).
pub fn tree_root(view: &impl ClusterView, cluster_queue: &str) -> Option<String> {
    let cohort = view.cluster_queue(cluster_queue)?.cohort.as_deref()?;
    view.cohort_tree().root(cohort).map(str::to_string)
}

/// Whether a request of the ClusterQueue's, beside `held` of `resource` in
/// `flavor` that a workload of its holds, can fit a cohort on its path short of
/// the root: then the request is simulated for preemption whatever the queue's
/// own nominal quota (`fitsResourceQuota`: `mayReclaimInHierarchy` from
/// `FindHeightOfLowestSubtreeThatFits`), within the queue as well as across it.
/// That function asks, node by node up the path, whether the cohort's usage plus
/// what is still missing exceeds its subtree quota; the held workload's usage
/// is in every cohort it reached past the local quotas below (`addUsage`), and
/// what those local quotas still have free is subtracted from what is missing.
/// With the held workload alone the usage is least, so a cohort that has no room
/// then (saved cases s1-7010, s1-70941) never has.
pub fn fits_below_root(view: &impl ClusterView, cluster_queue: &str, flavor: &str, resource: &str, held: i64) -> bool {
    let tree = Tree::new(view, flavor, resource);
    let path = cohort_path(view, cluster_queue);
    let below_root = path.len().saturating_sub(1);
    let queue = Node::ClusterQueue(cluster_queue);
    let keeps = local_quota(tree.quota(queue).nominal, tree.quota(queue));
    // What the held workload puts in the node's parent, and what the nodes below have free.
    let mut passed = (held - keeps).max(0);
    let mut free_below = (keeps - held).max(0);
    for cohort in &path[..below_root] {
        let node = Node::Cohort(cohort);
        let subtree = tree.subtree(node, &mut HashSet::new());
        // The smallest request (one unit) is missing once free_below is spent.
        if passed.saturating_sub(free_below) < subtree {
            return true;
        }
        let keeps = local_quota(subtree, tree.quota(node));
        free_below = free_below.saturating_add((keeps - passed).max(0));
        passed = (passed - keeps).max(0);
    }
    false
}

/// The ClusterQueue's own nominal quota of `resource` in `flavor`.
pub fn nominal(view: &impl ClusterView, cluster_queue: &str, flavor: &str, resource: &str) -> i64 {
    let tree = Tree::new(view, flavor, resource);
    tree.quota(Node::ClusterQueue(cluster_queue)).nominal
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::state_file;

    fn state(yaml: &str) -> crate::cluster::ClusterState {
        state_file::parse(yaml.as_bytes()).unwrap()
    }

    const ONE: CohortsOver = CohortsOver::ThisResource;

    const CPU_4: &str =
        "resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: 4";

    #[test]
    fn a_reclaimer_that_always_fits_never_reclaims() {
        let queue = |name: &str, extra: &str| {
            format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec: {{cohortName: c, {CPU_4}{extra}}}]}}]}}]}}\n---\n"
            )
        };
        let tree = queue("a", ", borrowingLimit: 2") + &queue("b", ", borrowingLimit: 2") + &queue("idle", "");
        let view = state(&tree);
        // a and b each draw at most 6 of the pool of 12 (4 + 4 + idle's 4).
        assert!(reclaimer_never_short(&view, "a", "b", true, "f", "cpu", |q| q != "idle"));
        // If idle takes workloads too, it could want all 12: someone can be short.
        assert!(!reclaimer_never_short(&view, "a", "b", true, "f", "cpu", |_| true));
        // With only a beside it (a draws 6 of 12), idle as the reclaimer: if it
        // may borrow while preempting it could want all 12; if not, in a flat
        // tree it reclaims only within its own 4, and 6 + 4 fit.
        assert!(!reclaimer_never_short(&view, "a", "idle", true, "f", "cpu", |q| q == "a"));
        assert!(reclaimer_never_short(&view, "a", "idle", false, "f", "cpu", |q| q == "a"));
        // Beneath a cohort short of the root, a reclaimer that may not borrow
        // while preempting needs at most what it keeps plus that cohort's
        // quota (saved case s1-33835). inner holds a's 4 and keeper's lent 2;
        // the root adds two idle queues' 8: a pool of 14. keeper needs at most
        // 2 + 6 and draws 6; a draws its potential, 4 + 2. 12 fit in 14.
        let inner = |q: String| q.replace("cohortName: c", "cohortName: inner");
        let nested = inner(queue("a", ", borrowingLimit: 2"))
            + &inner(queue("keeper", ", lendingLimit: 2"))
            + &queue("idle", "")
            + &queue("idle-too", "")
            + "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: inner}\nspec: {parentName: c}\n";
        let view = state(&nested);
        assert!(reclaimer_never_short(&view, "a", "keeper", false, "f", "cpu", |q| q == "a"));
        // Borrowing while preempting, it may want its whole potential, 2 + 14.
        assert!(!reclaimer_never_short(&view, "a", "keeper", true, "f", "cpu", |q| q == "a"));
        // A Cohort's own limit splits the pool: no answer.
        let limited = state(&format!(
            "{tree}apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: c}}\nspec: {{{CPU_4}, borrowingLimit: 0}}]}}]}}]}}\n"
        ));
        assert!(!reclaimer_never_short(&limited, "a", "b", true, "f", "cpu", |q| q != "idle"));
        // Not in a cohort: not a tree.
        let alone = state(&format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: a}}\nspec: {{{CPU_4}}}]}}]}}]}}\n"
        ));
        assert!(!reclaimer_never_short(&alone, "a", "a", true, "f", "cpu", |_| true));
    }

    #[test]
    fn without_borrowing_a_reclaimer_asks_at_most_its_nominal_or_a_cohort_below_the_common_one() {
        // r keeps 3 of its 4 (lendingLimit 1); mid holds 2 of its own, r's 1 and
        // beside's 4: a request of 10 fits mid with what r keeps.
        let view = state(&format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: mid}}\n\
             spec: {{parentName: root, resourceGroups: [{{coveredResources: [cpu], flavors: [{{name: f, resources: [{{name: cpu, nominalQuota: 2}}]}}]}}]}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: r}}\nspec: {{cohortName: mid, {CPU_4}, lendingLimit: 1}}]}}]}}]}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: b}}\nspec: {{cohortName: root, {CPU_4}}}]}}]}}]}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: beside}}\nspec: {{cohortName: mid, {CPU_4}}}]}}]}}]}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: elsewhere}}\nspec: {{cohortName: other, {CPU_4}}}]}}]}}]}}\n"
        ));
        assert_eq!(most_without_borrowing(&view, "r", "b", "f", "cpu"), 10_000);
        // Sharing mid itself, no cohort lies below the common one: the nominal quota.
        assert_eq!(most_without_borrowing(&view, "r", "beside", "f", "cpu"), 4000);
        assert_eq!(most_without_borrowing(&view, "r", "elsewhere", "f", "cpu"), 4000);
        assert_eq!(most_without_borrowing(&view, "r", "b", "f", "memory"), 0);
    }

    #[test]
    fn the_state_derives_potentials_once_and_again_after_a_change() {
        let mut view = state(&format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: a}}\nspec: {{cohortName: c, {CPU_4}}}]}}]}}]}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: b}}\nspec: {{cohortName: c, {CPU_4}}}]}}]}}]}}\n"
        ));
        assert_eq!(view.potential_available("a", "f", "cpu"), potential_available(&view, "a", "f", "cpu"));
        assert_eq!(view.potential_available("a", "f", "cpu"), 8000);
        view.remove("ClusterQueue", "", "b");
        assert_eq!(view.potential_available("a", "f", "cpu"), 4000, "b's quota left the cohort with b");
        // Not listed by the queue: computed, not remembered.
        assert_eq!(view.potential_available("a", "other", "cpu"), 0);
        assert_eq!(view.cohort_root("a"), Some("c"));
        let parent = serde_json::json!({"metadata": {"name": "c"}, "spec": {"parentName": "top"}});
        view.apply(crate::cluster::objects::decode("kueue.x-k8s.io/v1beta2", "Cohort", parent).unwrap().unwrap());
        assert_eq!(view.cohort_root("a"), Some("top"), "the root follows the new parent");
        assert_eq!(view.cohort_root("missing"), None);
    }

    #[test]
    fn alone_a_queue_gets_its_nominal_quota() {
        let view = state(&format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: a}}\nspec: {{{CPU_4}}}]}}]}}]}}\n"
        ));
        assert_eq!(potential_available(&view, "a", "f", "cpu"), 4000);
        assert_eq!(potential_available(&view, "a", "other", "cpu"), 0);
    }

    #[test]
    fn a_cohort_lends_what_its_members_do_not_keep() {
        let view = state(&format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: a}}\nspec: {{cohortName: c, {CPU_4}}}]}}]}}]}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: b}}\nspec: {{cohortName: c, {CPU_4}, lendingLimit: 1}}]}}]}}]}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: capped}}\nspec: {{cohortName: c, {CPU_4}, borrowingLimit: 2}}]}}]}}]}}\n"
        ));
        // a: all of a's 4 and capped's 4 are in the cohort, plus the 1 b lends.
        assert_eq!(potential_available(&view, "a", "f", "cpu"), 9000);
        // b keeps 3 and can use the cohort's 9.
        assert_eq!(potential_available(&view, "b", "f", "cpu"), 12000);
        // capped: its 4 plus at most 2 borrowed.
        assert_eq!(potential_available(&view, "capped", "f", "cpu"), 6000);
    }

    #[test]
    fn a_cohort_with_borrowing_limit_zero_caps_its_subtree() {
        let view = state(&format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: a}}\nspec: {{cohortName: leaf, {CPU_4}}}]}}]}}]}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: b}}\nspec: {{cohortName: root, {CPU_4}}}]}}]}}]}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: leaf}}\nspec: {{parentName: root, resourceGroups: [{{coveredResources: [cpu], flavors: [{{name: f, resources: [{{name: cpu, nominalQuota: 0, borrowingLimit: 0}}]}}]}}]}}\n"
        ));
        assert_eq!(potential_available(&view, "a", "f", "cpu"), 4000, "leaf cannot borrow from root");
        assert_eq!(potential_available(&view, "b", "f", "cpu"), 8000, "a's quota is lent up to root");
    }

    fn cluster_queue(name: &str, cohort: &str, limits: &str) -> String {
        format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec: {{cohortName: {cohort}, {CPU_4}{limits}}}]}}]}}]}}\n---\n"
        )
    }

    fn cohort(name: &str, spec: &str) -> String {
        format!("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: {name}}}\nspec: {{{spec}}}\n---\n")
    }

    #[test]
    fn a_reclaimer_beside_the_borrower_has_only_the_rest_of_their_cohort() {
        // Saved case s1-56965. level holds both queues' 4; root adds an idle 4:
        // a pool of 12. The borrower draws 4 + 2. The reclaimer may not borrow
        // while preempting: Kueue simulates preemption only if its request fits
        // level beside level's usage, which holds the borrower's over-nominal 4+,
        // so it needs at most 8 - 4. 6 + 4 fit in 12: it is never short.
        let tree = cohort("level", "parentName: root")
            + &cluster_queue("reclaimer", "level", "")
            + &cluster_queue("borrower", "level", ", borrowingLimit: 2")
            + &cluster_queue("idle", "root", "");
        let view = state(&tree);
        assert!(reclaimer_never_short(&view, "borrower", "reclaimer", false, "f", "cpu", |q| q == "borrower"));
        // Borrowing while preempting, it may want its whole potential, 12.
        assert!(!reclaimer_never_short(&view, "borrower", "reclaimer", true, "f", "cpu", |q| q == "borrower"));
    }

    #[test]
    fn a_reclaimer_takes_back_what_its_side_lends_or_what_it_can_borrow() {
        let tree = cohort("left", "parentName: root")
            + &cohort("right", "parentName: root")
            + &cluster_queue("borrower", "left", "")
            + &cluster_queue("keeper", "right", ", lendingLimit: 0")
            + &cluster_queue("lender", "right", "");
        let view = state(&tree);
        // keeper keeps its own 4, but right lends lender's 4 into root, where borrower can hold it.
        assert!(reclaimer_can_take_back(&view, "keeper", "borrower", "f", "cpu"));
        // Within one cohort the side is the queue itself: keeper lends nothing; lender does.
        assert!(!reclaimer_can_take_back(&view, "keeper", "lender", "f", "cpu"));
        assert!(reclaimer_can_take_back(&view, "lender", "keeper", "f", "cpu"));
        assert!(!reclaimer_can_take_back(&view, "keeper", "borrower", "other-flavor", "cpu"));

        // A cohort that lends nothing upward: its sibling can take the
        // reclaimer's quota, and the reclaimer then borrows from root, where
        // the borrower holds what root has (Kueue v0.19.2, saved case s1-27489).
        let closed = cohort("left", "parentName: root")
            + &cohort("closed", &format!("parentName: root, {CPU_4}, lendingLimit: 0}}]}}]}}]"))
            + &cluster_queue("borrower", "left", "")
            + &cluster_queue("lender", "left", "")
            + &cluster_queue("reclaimer", "closed", "")
            + &cluster_queue("taker", "closed", "");
        assert!(reclaimer_can_take_back(&state(&closed), "reclaimer", "borrower", "f", "cpu"));
        let walled = closed.replace("name: reclaimer}\nspec: {cohortName: closed, resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: 4",
            "name: reclaimer}\nspec: {cohortName: closed, resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: 4, borrowingLimit: 0");
        assert_ne!(walled, closed);
        assert!(
            !reclaimer_can_take_back(&state(&walled), "reclaimer", "borrower", "f", "cpu"),
            "it cannot borrow root's"
        );
    }

    #[test]
    fn a_borrower_is_a_candidate_only_if_its_side_can_be_over_its_quota() {
        let tree = cohort("left", "parentName: root")
            + &cohort("right", "parentName: root")
            + &cluster_queue("borrower", "left", ", borrowingLimit: 2")
            + &cluster_queue("idle", "left", "")
            + &cluster_queue("reclaimer", "right", "");
        let view = state(&tree);
        // left holds 8; borrower alone can hold 6 of it: left never goes over (saved case s1-17139).
        assert!(!borrower_side_can_be_over(&view, "borrower", "reclaimer", ("f", "cpu"), ONE, |_| false));
        // If idle takes workloads too, together they can take reclaimer's 4 as well.
        assert!(borrower_side_can_be_over(&view, "borrower", "reclaimer", ("f", "cpu"), ONE, |_| true));
        // Within left the side is the borrower, which can borrow 2.
        assert!(borrower_side_can_be_over(&view, "borrower", "idle", ("f", "cpu"), ONE, |_| false));

        // A cohort that may not borrow is never over its quota.
        let walled = |limits: &str| {
            state(
                &(cohort("left", &format!("parentName: root, {CPU_4}{limits}}}]}}]}}]"))
                    + &cluster_queue("borrower", "left", "")
                    + &cluster_queue("reclaimer", "root", "")),
            )
        };
        let walled_in_cpu = walled(", borrowingLimit: 0");
        assert!(!borrower_side_can_be_over(&walled_in_cpu, "borrower", "reclaimer", ("f", "cpu"), ONE, |_| true));
        assert!(borrower_side_can_be_over(&walled(""), "borrower", "reclaimer", ("f", "cpu"), ONE, |_| true));
    }

    #[test]
    fn under_fair_sharing_a_cohort_over_in_any_resource_keeps_its_borrowers_reclaimable() {
        // Saved case s77-2952. left may not borrow cpu, so it is never over in
        // cpu, but the borrower lends none of its memory and may borrow 2 more,
        // which left has none of: left can be over in memory. Classical
        // preemption asks about cpu alone; fair sharing descends into any cohort
        // that borrows anything.
        let queue = |name: &str, cohort: &str, memory: &str| {
            format!(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: {name}}}\nspec: {{cohortName: \
                 {cohort}, resourceGroups: [{{coveredResources: [cpu, memory], flavors: [{{name: f, resources: \
                 [{{name: cpu, nominalQuota: 4}}, {{name: memory, nominalQuota: 4{memory}}}]}}]}}]}}\n---\n"
            )
        };
        let tree = cohort("left", &format!("parentName: root, {CPU_4}, borrowingLimit: 0}}]}}]}}]"))
            + &queue("borrower", "left", ", lendingLimit: 0, borrowingLimit: 2")
            + &queue("reclaimer", "root", "");
        let view = state(&tree);
        let cpu = ("f", "cpu");
        assert!(!borrower_side_can_be_over(&view, "borrower", "reclaimer", cpu, ONE, |_| true));
        assert!(borrower_side_can_be_over(&view, "borrower", "reclaimer", cpu, CohortsOver::AnyResource, |_| true));
        // Borrowing no memory, the borrower never puts more in left than left holds.
        let walled = state(&tree.replace("lendingLimit: 0, borrowingLimit: 2", "borrowingLimit: 0"));
        assert!(!borrower_side_can_be_over(&walled, "borrower", "reclaimer", cpu, CohortsOver::AnyResource, |_| true));
    }

    #[test]
    fn what_a_queue_keeps_below_its_lending_limit_never_reaches_its_cohort() {
        // Saved cases s1-81543, s1-88072. borrower keeps 2 of its 4 and lends 2
        // to left, which has 1 of its own: left holds 3. Borrowing 1 (left's own
        // 1), borrower uses 5, of which 3 reach left: left is never over.
        let left = |own: u32| {
            cohort(
                "left",
                &format!(
                    "parentName: root, resourceGroups: [{{coveredResources: [cpu], flavors: [{{name: f, resources: [{{name: cpu, nominalQuota: {own}}}]}}]}}]"
                ),
            )
        };
        let tree = |borrowing: u32| {
            left(1)
                + &cluster_queue("borrower", "left", &format!(", lendingLimit: 2, borrowingLimit: {borrowing}"))
                + &cluster_queue("reclaimer", "root", "")
        };
        let view = state(&tree(1));
        assert_eq!(potential_available(&view, "borrower", "f", "cpu"), 5000);
        assert!(!borrower_side_can_be_over(&view, "borrower", "reclaimer", ("f", "cpu"), ONE, |_| false));
        // Borrowing 2, it needs 1 from the root: 4 reach left, over its 3.
        assert!(borrower_side_can_be_over(&state(&tree(2)), "borrower", "reclaimer", ("f", "cpu"), ONE, |_| false));
    }

    #[test]
    fn a_reclaimer_alone_under_a_cohort_that_keeps_its_quota_is_never_short() {
        // Saved case s1-82777. closed keeps all it holds (its own 1 and the
        // reclaimer's 2) and may borrow 1 from root. The reclaimer may not borrow
        // while preempting: it simulates preemption for at most closed's 3, and
        // nobody else can draw on closed, so those 3 are always there.
        let closed = |members: &str| {
            cohort(
                "closed",
                "parentName: root, resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: \
                 [{name: cpu, nominalQuota: 1, lendingLimit: 0, borrowingLimit: 1}]}]}]",
            ) + &cluster_queue("reclaimer", "closed", ", nominalQuota: 2, lendingLimit: 2")
                .replace("nominalQuota: 4, ", "")
                + members
                + &cluster_queue("borrower", "root", "")
        };
        let view = state(&closed(""));
        let tree = Tree::new(&view, "f", "cpu");
        let everyone = |_: &str| true;
        assert_eq!(tree.guaranteed("reclaimer", &everyone), 3000);
        assert!(reclaimer_never_short(&view, "borrower", "reclaimer", false, "f", "cpu", everyone));
        // Borrowing while preempting it may ask for 4, one more than is kept for it.
        assert!(!reclaimer_never_short(&view, "borrower", "reclaimer", true, "f", "cpu", everyone));
        // A second queue in closed can use closed's quota: nothing is kept for the reclaimer.
        let shared = state(&closed(&cluster_queue("sibling", "closed", "")));
        let tree = Tree::new(&shared, "f", "cpu");
        assert_eq!(tree.guaranteed("reclaimer", &everyone), 0);
        assert!(!reclaimer_never_short(&shared, "borrower", "reclaimer", false, "f", "cpu", everyone));
        // Unless that queue takes no workloads: then its 4, lent to closed, are kept too.
        assert_eq!(tree.guaranteed("reclaimer", &|q: &str| q != "sibling"), 7000);
    }

    #[test]
    fn cycles_end() {
        let view = state(&format!(
            "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {{name: a}}\nspec: {{cohortName: x, {CPU_4}}}]}}]}}]}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: x}}\nspec: {{parentName: y}}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {{name: y}}\nspec: {{parentName: x}}\n"
        ));
        let _ = potential_available(&view, "a", "f", "cpu");
    }
}
