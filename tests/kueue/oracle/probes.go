package main

// Exposure: could a workload another user submits make Kueue preempt the
// admitted evaluation? The oracle does not decide this itself: it enumerates
// probe workloads and lets Kueue's scheduler (its preemptor included) run on
// each, in a fresh in-process Kueue where the evaluation was admitted first.
//
// The probe space, and why it is enough for the generator's set-ups:
//   - queue: every ClusterQueue in the evaluation's cohort tree (itself
//     included), reached through a LocalQueue the user creates in the first
//     namespace that ClusterQueue's namespaceSelector selects where Kueue
//     manages a labelled job (before v0.15, any: see submittingNamespace);
//   - priority: every value a user can give a Workload: each
//     WorkloadPriorityClass, each PriorityClass (system ones included: Kueue
//     reads them with a plain Get), and the no-class default;
//   - age: newer than the evaluation, and older at equal priority (the case
//     LowerOrNewerEqualPriority turns on);
//   - size and flavor: for each flavor and resource the evaluation holds, one
//     resource requested, pinned to that flavor by nodeSelector when the flavor
//     has nodeLabels, at the two edges Kueue's own snapshot gives: one unit more
//     than the probe's ClusterQueue has available now (it must preempt), and all
//     it would have if the evaluation were gone (the largest that preempting it
//     could make fit);
//   - load: the evaluation alone; or a top-priority filler in its own
//     ClusterQueue taking all that queue can still get (so it borrows as far as
//     Kueue lets it: cohort reclamation needs the victim's queue over nominal);
//     or top-priority fillers in the other ClusterQueues of its tree taking all
//     they can (nothing left to lend: within-queue preemption needs that); or
//     both, its own first and then the others nearest first (so its borrowing
//     climbs the tree), all but the probe's queue, which arrives with its quota
//     lent out; or,
//     when nothing outranks the evaluation, a filler at its own priority
//     admitted before it (equal priorities are preempted newest first).

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	kueue "eval-admission/tests/kueue/oracle/kueueapi"
	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/kueue/pkg/resources"
	"sigs.k8s.io/kueue/pkg/util/limitrange"
	"sigs.k8s.io/kueue/pkg/util/priority"
	"sigs.k8s.io/kueue/pkg/workload"
)

// debugProbes (ORACLE_DEBUG=1) prints every probe's outcome on stderr.
var debugProbes = os.Getenv("ORACLE_DEBUG") != ""

type probe struct {
	clusterQueue string
	localQueue   string
	namespace    string
	priority     int32
	older        bool
	load         load
	spare        string // ownThenOthersFull: the queue left unfilled (the probe's)
	flavor       kueue.ResourceFlavorReference
	resource     corev1.ResourceName
	amount       int64
	pinned       bool
	// atLeast: the amount is a floor the probe must reach (one unit more
	// than is free); else a ceiling it must not pass (all that would be free).
	atLeast bool
}

func (p probe) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "priority %d", p.priority)
	if p.older {
		b.WriteString(" (older)")
	}
	fmt.Fprintf(&b, " in ClusterQueue %s requesting %s %s", p.clusterQueue, p.resource, quantityString(p.resource, p.amount))
	if p.pinned {
		fmt.Fprintf(&b, " on flavor %s", p.flavor)
	}
	b.WriteString(p.load.String())
	if p.spare != "" {
		fmt.Fprintf(&b, " (all but %s)", p.spare)
	}
	return b.String()
}

func exposure(ctx context.Context, c *cluster, wl, admitted *kueue.Workload) (string, string, int, error) {
	home := string(admitted.Status.Admission.ClusterQueue)
	evalPriority := priority.Priority(wl)
	targets := probeTargets(c, home)
	if len(targets) == 0 {
		return "", "", 0, nil
	}
	probeQueues := make([]*kueue.LocalQueue, 0, len(targets))
	for _, t := range targets {
		probeQueues = append(probeQueues, t.queue)
	}
	withProbeQueues := *c
	withProbeQueues.localQueues = append(slices.Clone(c.localQueues), probeQueues...)

	// ownThenOthersFull runs once per probed queue, which is left unfilled:
	// a reclaimer reclaims only what it lacks below its own quota (or, if it
	// may borrow while preempting, below its potential), so it must arrive
	// with its quota lent out to the queues that filled the pool.
	type run struct {
		l     load
		spare string
	}
	runs := []run{{alone, ""}, {ownQueueFull, ""}, {othersFull, ""}}
	for _, t := range targets {
		if t.clusterQueue != home {
			runs = append(runs, run{ownThenOthersFull, t.clusterQueue})
		}
	}
	runs = append(runs, run{ownQueueFilledEarlier, ""})
	for _, t := range targets {
		if t.clusterQueue != home {
			runs = append(runs, run{allFilledEarlier, t.clusterQueue})
		}
	}
	if fairSharingEnabled(&c.config) {
		for _, t := range targets {
			if t.clusterQueue != home {
				runs = append(runs, run{ownTopBorrower, t.clusterQueue})
			}
		}
	}

	count := 0
	for _, r := range runs {
		l := r.l
		env, added, err := prepare(ctx, &withProbeQueues, wl, targets, l, r.spare)
		if err != nil {
			return "", "", count, err
		}
		if l != alone && !added {
			continue // nothing left to fill: the same state as alone
		}
		snap, err := env.cache.Snapshot(ctx)
		if err != nil {
			return "", "", count, err
		}
		evalInfo := workload.NewInfo(mustGet(env, wl))
		usage := evalInfo.FlavorResourceUsage()
		for _, t := range targets {
			if r.spare != "" && t.clusterQueue != r.spare {
				continue
			}
			cq := snap.ClusterQueue(kueue.ClusterQueueReference(t.clusterQueue))
			if cq == nil {
				continue
			}
			for _, fr := range sortedFlavorResources(usage) {
				now := available(cq, fr)
				restore := simulateRemoval(snap, evalInfo)
				without := available(cq, fr)
				restore()
				if without <= now {
					continue // the evaluation's quota is not what this queue lacks
				}
				amounts := []int64{now + 1}
				if without != now+1 {
					amounts = append(amounts, without)
				}
				for _, pr := range availablePriorities(c) {
					for _, older := range ageVariants(pr, evalPriority) {
						for _, amount := range amounts {
							for _, pinned := range pinVariants(c, fr.Flavor) {
								p := probe{clusterQueue: t.clusterQueue, localQueue: t.queue.Name, namespace: t.queue.Namespace,
									priority: pr, older: older, load: l, spare: r.spare, flavor: fr.Flavor, resource: fr.Resource,
									amount: amount, pinned: pinned, atLeast: amount == now+1}
								count++
								reason, err := tryProbe(ctx, &withProbeQueues, wl, targets, p)
								if err != nil {
									return "", "", count, err
								}
								if reason != "" {
									return p.String(), reason, count, nil
								}
							}
						}
					}
				}
			}
		}
	}
	return "", "", count, nil
}

type probeTarget struct {
	clusterQueue string
	queue        *kueue.LocalQueue
}

// probeTargets: the ClusterQueues of the evaluation's cohort tree that some
// managed namespace can submit to, each with the LocalQueue a user would create.
func probeTargets(c *cluster, home string) []probeTarget {
	homeRoot := ""
	for _, cq := range c.clusterQueues {
		if cq.Name == home {
			homeRoot = cohortRoot(c, cohortName(cq))
		}
	}
	var targets []probeTarget
	for _, cq := range c.clusterQueues {
		inTree := cq.Name == home || (homeRoot != "" && cohortRoot(c, cohortName(cq)) == homeRoot)
		if !inTree {
			continue
		}
		ns := submittingNamespace(c, cq)
		if ns == "" {
			continue
		}
		targets = append(targets, probeTarget{clusterQueue: cq.Name, queue: &kueue.LocalQueue{
			ObjectMeta: metav1.ObjectMeta{Name: "oracle-probe-" + cq.Name, Namespace: ns},
			Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq.Name)},
		}})
	}
	return targets
}

func cohortRoot(c *cluster, name string) string {
	seen := map[string]bool{}
	for name != "" && !seen[name] {
		seen[name] = true
		parent := ""
		for _, co := range c.cohorts {
			if co.Name == name {
				parent = cohortParent(co)
			}
		}
		if parent == "" {
			return name
		}
		name = parent
	}
	return name
}

func submittingNamespace(c *cluster, cq *kueue.ClusterQueue) string {
	sel, err := metav1.LabelSelectorAsSelector(cq.Spec.NamespaceSelector)
	if err != nil {
		return ""
	}
	names := make([]string, 0, len(c.namespaces))
	byName := map[string]*corev1.Namespace{}
	for _, ns := range c.namespaces {
		names = append(names, ns.Name)
		byName[ns.Name] = ns
	}
	sort.Strings(names)
	// A probe is a labelled job: ReconcileGenericJob applies
	// managedJobsNamespaceSelector to it only under
	// ManagedJobsNamespaceSelectorAlwaysRespected (alpha, off, before v0.15),
	// as the judge does to the evaluation (judge.go); v0.12 has no such gate
	// (selectorAlwaysRespected, release_v0_12.go).
	anyNamespace := !selectorAlwaysRespected()
	for _, name := range names {
		ns := byName[name]
		managed, err := c.managedNamespace(ns)
		if err == nil && (managed || anyNamespace) && sel.Matches(labels.Set(ns.Labels)) {
			return name
		}
	}
	return ""
}

// availablePriorities: every priority a user can give a workload, highest first.
func availablePriorities(c *cluster) []int32 {
	set := map[int32]bool{}
	var defaultValue int32
	haveDefault := false
	for _, o := range c.others {
		switch pc := o.(type) {
		case *kueue.WorkloadPriorityClass:
			set[pc.Value] = true
		case *schedulingv1.PriorityClass:
			set[pc.Value] = true
			if pc.GlobalDefault && (!haveDefault || pc.Value < defaultValue) {
				defaultValue, haveDefault = pc.Value, true
			}
		}
	}
	set[defaultValue] = true // a workload naming no class
	values := slices.Collect(maps.Keys(set))
	slices.Sort(values)
	slices.Reverse(values)
	return values
}

func ageVariants(probePriority, evalPriority int32) []bool {
	if probePriority == evalPriority {
		return []bool{true, false}
	}
	return []bool{false}
}

func pinVariants(c *cluster, flavor kueue.ResourceFlavorReference) []bool {
	for _, rf := range c.flavors {
		if rf.Name == string(flavor) && len(rf.Spec.NodeLabels) > 0 {
			return []bool{true, false}
		}
	}
	return []bool{false}
}

func sortedFlavorResources(usage resources.FlavorResourceQuantities) []resources.FlavorResource {
	frs := slices.Collect(maps.Keys(usage))
	slices.SortFunc(frs, func(a, b resources.FlavorResource) int {
		if a.Flavor != b.Flavor {
			return strings.Compare(string(a.Flavor), string(b.Flavor))
		}
		return strings.Compare(string(a.Resource), string(b.Resource))
	})
	return frs
}

// load is what runs beside the admitted evaluation when a probe arrives.
type load int

const (
	// alone: the evaluation is the only workload.
	alone load = iota
	// ownQueueFull: a top-priority filler in its own ClusterQueue takes all
	// that queue can still get (so it borrows as far as Kueue lets it).
	ownQueueFull
	// othersFull: top-priority fillers in the other ClusterQueues of its tree
	// take all they can get (the cohort has nothing left to lend).
	othersFull
	// ownThenOthersFull: ownQueueFull, then othersFull. The other queues,
	// using their own quota, push the evaluation's queue's borrowing up the
	// tree, where a queue with reclaim rights higher up can take it back
	// (collectCandidatesForHierarchicalReclaim looks only in subtrees over
	// their nominal quota).
	ownThenOthersFull
	// ownQueueFilledEarlier: when no priority outranks the evaluation's, a
	// filler at its own priority, admitted before it, takes all its
	// ClusterQueue can still get beside it. Among equal priorities Kueue
	// preempts the most recently admitted first (CandidatesOrdering), so a
	// newer filler goes before the evaluation; an earlier one keeps the queue
	// over nominal when the evaluation's turn comes. Such a co-tenant is
	// ordinary: submitted a moment before, or while the evaluation waited.
	ownQueueFilledEarlier
	// allFilledEarlier: the fillers of ownThenOthersFull (sized beside the
	// evaluation, sparing the probed queue), all admitted before it at its
	// priority, when no priority outranks it. A busy cohort that an
	// evaluation squeezes into last: it is the newest at the top priority, so
	// a reclaimer that may take any priority finds it first in line.
	allFilledEarlier
	// ownTopBorrower (fair sharing only): the other queues but the probed one
	// first up to their nominal quota, then the evaluation's own queue full,
	// then the others take what is left. Fair sharing takes candidates from the
	// queue with the highest dominant resource share first
	// (TargetClusterQueueOrdering.nextTarget); the greedy fills above make a
	// sibling the top borrower, this one makes the evaluation's queue it.
	ownTopBorrower
)

func (l load) String() string {
	return [...]string{"", ", its own queue filled", ", the other queues filled",
		", its own queue then the other queues filled", ", its own queue filled earlier at its priority",
		", every queue filled earlier at its priority",
		", the other queues filled to nominal, then its own queue, then the other queues"}[l]
}

// prepare builds a fresh Kueue with the evaluation admitted and the load beside it.
// It reports whether the load added anything.
func prepare(ctx context.Context, c *cluster, wl *kueue.Workload, targets []probeTarget, l load, spare string) (*kueueEnv, bool, error) {
	switch l {
	case ownQueueFilledEarlier:
		return prepareFilledEarlier(ctx, c, wl)
	case allFilledEarlier:
		return prepareAllEarlier(ctx, c, wl, targets, spare)
	}
	env, err := newEnv(ctx, c)
	if err != nil {
		return nil, false, err
	}
	if err := env.submit(wl.DeepCopy()); err != nil {
		return nil, false, err
	}
	if err := env.cycles(cyclesPerRun); err != nil {
		return nil, false, err
	}
	admitted := mustGet(env, wl)
	if !hasQuota(admitted) {
		return nil, false, errNotReadmitted
	}
	home := string(admitted.Status.Admission.ClusterQueue)
	usage := workload.NewInfo(admitted).FlavorResourceUsage()
	added := false
	switch l {
	case alone:
	case ownQueueFull:
		added, err = fill(ctx, env, c, usage, home, wl.Namespace, string(wl.Spec.QueueName), "own")
	case othersFull:
		added, err = fillOthers(ctx, env, c, wl, usage, targets, spare)
	case ownThenOthersFull:
		// Only the others' fill is new: with nothing added there it is ownQueueFull again.
		if _, err = fill(ctx, env, c, usage, home, wl.Namespace, string(wl.Spec.QueueName), "own"); err == nil {
			added, err = fillOthers(ctx, env, c, wl, usage, nearestFirst(c, home, targets), spare)
		}
	case ownTopBorrower:
		ordered := nearestFirst(c, home, targets)
		for _, t := range ordered {
			if t.clusterQueue == home || t.clusterQueue == spare || err != nil {
				continue
			}
			_, err = fillTo(ctx, env, c, usage, t.clusterQueue, t.queue.Namespace, t.queue.Name, t.clusterQueue+"-nominal", map[resources.FlavorResource]int64{})
		}
		if err == nil {
			_, err = fill(ctx, env, c, usage, home, wl.Namespace, string(wl.Spec.QueueName), "own")
		}
		// The rest only where the evaluation's queue now borrows, and each
		// other queue borrowing less than it: a share is a queue's largest
		// over its resources, so a sibling borrowing more, or another resource
		// as well, would outrank it.
		var borrowed map[resources.FlavorResource]int64
		if err == nil {
			borrowed, err = borrowedBy(ctx, env, home, usage)
		}
		if err == nil && len(borrowed) > 0 {
			which := resources.FlavorResourceQuantities{}
			below := map[resources.FlavorResource]int64{}
			for fr, v := range borrowed {
				which[fr], below[fr] = usage[fr], v-1
			}
			for _, t := range ordered {
				if t.clusterQueue == home || t.clusterQueue == spare || err != nil {
					continue
				}
				var more bool
				more, err = fillTo(ctx, env, c, which, t.clusterQueue, t.queue.Namespace, t.queue.Name, t.clusterQueue, below)
				added = added || more
			}
		}
	}
	return env, added, err
}

// fillOthers fills, in the order given, every target but the evaluation's
// own ClusterQueue and spare (the probed queue, left unfilled). Nearest first
// (nearestFirst): the evaluation's siblings, using their own quota, push its
// cohort over nominal before farther queues soak up the pool.
func fillOthers(ctx context.Context, env *kueueEnv, c *cluster, wl *kueue.Workload, usage resources.FlavorResourceQuantities, targets []probeTarget, spare string) (bool, error) {
	home := string(mustGet(env, wl).Status.Admission.ClusterQueue)
	added := false
	for _, t := range targets {
		if t.clusterQueue == home || t.clusterQueue == spare {
			continue
		}
		more, err := fill(ctx, env, c, usage, t.clusterQueue, t.queue.Namespace, t.queue.Name, t.clusterQueue)
		if err != nil {
			return false, err
		}
		added = added || more
	}
	return added, nil
}

// borrowedBy: for each flavor-resource of usage in which ClusterQueue cq is
// over its nominal quota now, by how much.
func borrowedBy(ctx context.Context, env *kueueEnv, cq string, usage resources.FlavorResourceQuantities) (map[resources.FlavorResource]int64, error) {
	snap, err := env.cache.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	queue := snap.ClusterQueue(kueue.ClusterQueueReference(cq))
	borrowed := map[resources.FlavorResource]int64{}
	for fr := range usage {
		if queue != nil && queue.Borrowing(fr) {
			borrowed[fr] = quotaUsage(queue, fr) - nominalQuota(queue, fr)
		}
	}
	return borrowed, nil
}

// nearestFirst orders targets by how low their lowest common cohort with home
// sits (siblings first), then queues that never reclaim before those that do.
func nearestFirst(c *cluster, home string, targets []probeTarget) []probeTarget {
	parent := func(cohort string) string {
		for _, co := range c.cohorts {
			if co.Name == cohort {
				return cohortParent(co)
			}
		}
		return ""
	}
	path := func(cq string) []string {
		var cohort string
		for _, q := range c.clusterQueues {
			if q.Name == cq {
				cohort = cohortName(q)
			}
		}
		var up []string
		for cohort != "" && !slices.Contains(up, cohort) {
			up = append(up, cohort)
			cohort = parent(cohort)
		}
		return up
	}
	homePath := path(home)
	distance := func(t probeTarget) int {
		for _, cohort := range path(t.clusterQueue) {
			if i := slices.Index(homePath, cohort); i >= 0 {
				return i
			}
		}
		return len(homePath)
	}
	// Among equals, queues that never reclaim go first: they soak up the pool
	// the reclaimers lent, which a reclaimer then wants back.
	reclaims := func(t probeTarget) int {
		for _, q := range c.clusterQueues {
			if q.Name == t.clusterQueue && q.Spec.Preemption != nil &&
				q.Spec.Preemption.ReclaimWithinCohort != "" && q.Spec.Preemption.ReclaimWithinCohort != kueue.PreemptionPolicyNever {
				return 1
			}
		}
		return 0
	}
	sorted := slices.Clone(targets)
	slices.SortStableFunc(sorted, func(a, b probeTarget) int {
		if d := distance(a) - distance(b); d != 0 {
			return d
		}
		return reclaims(a) - reclaims(b)
	})
	return sorted
}

// prepareFilledEarlier builds the ownQueueFilledEarlier load: the filler is
// sized in a first Kueue where the evaluation was admitted alone, then a second
// Kueue admits the filler first and the evaluation a cycle later. It reports
// false (nothing to probe) when some priority outranks the evaluation's (the
// top-priority filler of ownQueueFull already covers that) or when the
// evaluation no longer gets its quota beside the filler.
func prepareFilledEarlier(ctx context.Context, c *cluster, wl *kueue.Workload) (*kueueEnv, bool, error) {
	evalPriority := priority.Priority(wl)
	if availablePriorities(c)[0] != evalPriority {
		return nil, false, nil
	}
	sizing, err := newEnv(ctx, c)
	if err != nil {
		return nil, false, err
	}
	if err := sizing.submit(wl.DeepCopy()); err != nil {
		return nil, false, err
	}
	if err := sizing.cycles(cyclesPerRun); err != nil {
		return nil, false, err
	}
	alone := mustGet(sizing, wl)
	if !hasQuota(alone) {
		return nil, false, errNotReadmitted
	}
	home := string(alone.Status.Admission.ClusterQueue)
	byFlavor, err := fillAmounts(ctx, sizing, workload.NewInfo(alone).FlavorResourceUsage(), home, nil)
	if err != nil || len(byFlavor) == 0 {
		return nil, false, err
	}
	env, err := newEnv(ctx, c)
	if err != nil {
		return nil, false, err
	}
	for i, flavor := range slices.Sorted(maps.Keys(byFlavor)) {
		f := probeWorkload(c, false, fmt.Sprintf("oracle-filler-earlier-%d", i), wl.Namespace, string(wl.Spec.QueueName), evalPriority,
			byFlavor[flavor], nodeSelectorFor(c, flavor), tolerationsFor(c, flavor), submittedAt.Add(-time.Second))
		if err := env.submit(f); err != nil {
			return nil, false, err
		}
	}
	if err := env.cycles(cyclesPerRun); err != nil {
		return nil, false, err
	}
	if err := env.submit(wl.DeepCopy()); err != nil {
		return nil, false, err
	}
	if err := env.cycles(cyclesPerRun); err != nil {
		return nil, false, err
	}
	beside := mustGet(env, wl)
	if !hasQuota(beside) || !equality.Semantic.DeepEqual(beside.Status.Admission, alone.Status.Admission) {
		return nil, false, nil // the filler changed where the evaluation goes: another set-up
	}
	return env, true, nil
}

// prepareAllEarlier builds the allFilledEarlier load: ownThenOthersFull in a
// first Kueue sizes the fillers beside the evaluation; a second Kueue admits
// the same fillers first, then the evaluation into the room they leave. It
// reports false (nothing to probe) when some priority outranks the
// evaluation's, when the others' fill added nothing (ownQueueFilledEarlier
// covers that), or when the evaluation no longer lands where it did.
func prepareAllEarlier(ctx context.Context, c *cluster, wl *kueue.Workload, targets []probeTarget, spare string) (*kueueEnv, bool, error) {
	evalPriority := priority.Priority(wl)
	if availablePriorities(c)[0] != evalPriority {
		return nil, false, nil
	}
	sizing, added, err := prepare(ctx, c, wl, targets, ownThenOthersFull, spare)
	if err != nil || !added {
		return nil, false, err
	}
	beside := mustGet(sizing, wl)
	var list kueue.WorkloadList
	if err := sizing.client.List(ctx, &list); err != nil {
		return nil, false, err
	}
	env, err := newEnv(ctx, c)
	if err != nil {
		return nil, false, err
	}
	var fillers []*kueue.Workload
	for _, f := range list.Items {
		if !strings.HasPrefix(f.Name, "oracle-filler-") || !hasQuota(&f) {
			continue
		}
		// The same filler, at the evaluation's priority, submitted before it.
		earlier := &kueue.Workload{ObjectMeta: metav1.ObjectMeta{Name: f.Name, Namespace: f.Namespace, UID: f.UID,
			CreationTimestamp: metav1.NewTime(submittedAt.Add(-time.Second))}, Spec: *f.Spec.DeepCopy()}
		earlier.Spec.Priority = &evalPriority
		if err := env.submit(earlier); err != nil {
			return nil, false, err
		}
		fillers = append(fillers, earlier)
	}
	if err := env.cycles(cyclesPerRun); err != nil {
		return nil, false, err
	}
	for _, f := range fillers {
		if !hasQuota(mustGet(env, f)) {
			return nil, false, nil // admitted in another order they no longer all fit: another set-up
		}
	}
	if err := env.submit(wl.DeepCopy()); err != nil {
		return nil, false, err
	}
	if err := env.cycles(cyclesPerRun); err != nil {
		return nil, false, err
	}
	last := mustGet(env, wl)
	if !hasQuota(last) || !equality.Semantic.DeepEqual(last.Status.Admission, beside.Status.Admission) {
		return nil, false, nil
	}
	return env, true, nil
}

// fill submits, through queue, top-priority fillers that take what ClusterQueue
// cq can still get of each flavor and resource the evaluation holds, and lets
// Kueue admit them.
func fill(ctx context.Context, env *kueueEnv, c *cluster, usage resources.FlavorResourceQuantities, cq, namespace, queue, tag string) (bool, error) {
	return fillTo(ctx, env, c, usage, cq, namespace, queue, tag, nil)
}

// fillTo is fill, taking in each flavor-resource of beyond (when not nil) no
// more than brings cq to its nominal quota plus that much (none if absent).
func fillTo(ctx context.Context, env *kueueEnv, c *cluster, usage resources.FlavorResourceQuantities, cq, namespace, queue, tag string, beyond map[resources.FlavorResource]int64) (bool, error) {
	byFlavor, err := fillAmounts(ctx, env, usage, cq, beyond)
	if err != nil {
		return false, err
	}
	top := availablePriorities(c)[0]
	for i, flavor := range slices.Sorted(maps.Keys(byFlavor)) {
		f := probeWorkload(c, false, fmt.Sprintf("oracle-filler-%s-%d", tag, i), namespace, queue, top,
			byFlavor[flavor], nodeSelectorFor(c, flavor), tolerationsFor(c, flavor), submittedAt.Add(time.Second))
		if err := env.submit(f); err != nil {
			return false, err
		}
	}
	if len(byFlavor) == 0 {
		return false, nil
	}
	return true, env.cycles(cyclesPerRun)
}

// fillAmounts: per flavor, what ClusterQueue cq can still get now of each
// flavor and resource the evaluation holds (Kueue's own snapshot decides).
func fillAmounts(ctx context.Context, env *kueueEnv, usage resources.FlavorResourceQuantities, cq string, beyond map[resources.FlavorResource]int64) (map[kueue.ResourceFlavorReference]corev1.ResourceList, error) {
	snap, err := env.cache.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	target := snap.ClusterQueue(kueue.ClusterQueueReference(cq))
	if target == nil {
		return nil, nil
	}
	byFlavor := map[kueue.ResourceFlavorReference]corev1.ResourceList{}
	for _, fr := range sortedFlavorResources(usage) {
		if target.RGByResource(fr.Resource) == nil {
			continue // the queue does not cover it
		}
		left := available(target, fr)
		if beyond != nil {
			left = min(left, nominalQuota(target, fr)+beyond[fr]-quotaUsage(target, fr))
		}
		if left > 0 {
			if byFlavor[fr.Flavor] == nil {
				byFlavor[fr.Flavor] = corev1.ResourceList{}
			}
			byFlavor[fr.Flavor][fr.Resource] = quantity(fr.Resource, left)
		}
	}
	return byFlavor, nil
}

// tryProbe: Kueue's reason for preempting the evaluation, or "" if it did not.
func tryProbe(ctx context.Context, c *cluster, wl *kueue.Workload, targets []probeTarget, p probe) (string, error) {
	env, _, err := prepare(ctx, c, wl, targets, p.load, p.spare)
	if err != nil {
		return "", err
	}
	created := submittedAt.Add(2 * time.Second)
	if p.older {
		created = submittedAt.Add(-time.Second)
	}
	var selector map[string]string
	if p.pinned {
		selector = nodeSelectorFor(c, p.flavor)
	}
	pw := probeWorkload(c, p.atLeast, "oracle-probe", p.namespace, p.localQueue, p.priority,
		corev1.ResourceList{p.resource: quantity(p.resource, p.amount)}, selector, tolerationsFor(c, p.flavor), created)
	if err := env.submit(pw); err != nil {
		return "", err
	}
	if debugProbes {
		env.ctx = ctrl.LoggerInto(env.ctx, funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 6}))
	}
	if err := env.cycles(cyclesPerRun); err != nil {
		return "", err
	}
	got := mustGet(env, wl)
	if debugProbes {
		pgot := mustGet(env, pw)
		fmt.Fprintf(os.Stderr, "probe %s\n  eval: %+v\n  probe: %+v\n  events: %+v\n", p, got.Status.Conditions, pgot.Status.Conditions, env.events.RecordedEvents)
	}
	if cond := metaCondition(got, kueue.WorkloadPreempted); cond != nil {
		return cond.Reason, nil
	}
	if cond := metaCondition(got, kueue.WorkloadEvicted); cond != nil {
		return "Evicted:" + cond.Reason, nil
	}
	return "", nil
}

// probeWorkload is what a user would submit to ask Kueue for total in
// namespace: one pod, or, where the namespace's LimitRanges bound a pod, as
// many as they need (limitRangeShape), each rounded up when total is a floor
// to reach (atLeast), else down (a filler takes no more than is free).
func probeWorkload(c *cluster, atLeast bool, name, namespace, queue string, prio int32, total corev1.ResourceList, nodeSelector map[string]string, tolerations []corev1.Toleration, created time.Time) *kueue.Workload {
	count, requests, limits := limitRangeShape(c, namespace, total, atLeast)
	return &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, UID: types.UID("uid-" + namespace + "-" + name),
			CreationTimestamp: metav1.NewTime(created),
		},
		Spec: kueue.WorkloadSpec{
			QueueName: kueue.LocalQueueName(queue),
			Priority:  &prio,
			PodSets: []kueue.PodSet{{
				Name:  kueue.DefaultPodSetName,
				Count: count,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					NodeSelector: nodeSelector,
					Tolerations:  tolerations,
					Containers: []corev1.Container{{
						Name:      "probe",
						Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
					}},
					RestartPolicy: corev1.RestartPolicyNever,
				}},
			}},
		},
	}
}

// limitRangeShape: how a user whose namespace has LimitRanges asks Kueue for
// total (Kueue applies their defaults and checks their bounds, AdjustResources
// and ValidateLimitRange, so a bare request may be refused or grow): limits
// set equal to the requests (a default limit below a request is refused);
// every other resource the LimitRanges name asked for at its minimum (else a
// defaultRequest adds to it); the total split over as many pods as the
// container and pod maxima need. Without LimitRanges: one pod, total as is.
func limitRangeShape(c *cluster, namespace string, total corev1.ResourceList, roundUp bool) (int32, corev1.ResourceList, corev1.ResourceList) {
	var ranges []corev1.LimitRange
	for _, o := range c.others {
		if lr, ok := o.(*corev1.LimitRange); ok && lr.Namespace == namespace {
			ranges = append(ranges, *lr)
		}
	}
	if len(ranges) == 0 {
		return 1, total, nil
	}
	summary := limitrange.Summarize(ranges...)
	container, pod := summary[corev1.LimitTypeContainer], summary[corev1.LimitTypePod]
	count := int64(1)
	for name, q := range total {
		for _, most := range []corev1.ResourceList{container.Max, pod.Max} {
			if m, ok := most[name]; ok && m.MilliValue() > 0 {
				count = max(count, (q.MilliValue()+m.MilliValue()-1)/m.MilliValue())
			}
		}
	}
	requests := corev1.ResourceList{}
	for name, q := range total {
		// In Kueue's own units (milli-cpu, else whole units, ResourceValue),
		// which it rounds each pod's request up to.
		value := resources.ResourceValue(name, q)
		perPod := value / count
		if roundUp && value%count != 0 {
			perPod++
		}
		requests[name] = quantity(name, perPod)
	}
	for _, named := range []corev1.ResourceList{container.Default, container.DefaultRequest, container.Min, container.Max} {
		for name := range named {
			if _, ok := requests[name]; !ok {
				requests[name] = container.Min[name]
			}
		}
	}
	return int32(count), requests, requests.DeepCopy()
}

func nodeSelectorFor(c *cluster, flavor kueue.ResourceFlavorReference) map[string]string {
	for _, rf := range c.flavors {
		if rf.Name == string(flavor) && len(rf.Spec.NodeLabels) > 0 {
			return maps.Clone(rf.Spec.NodeLabels)
		}
	}
	return nil
}

// tolerationsFor: what a workload aimed at flavor must carry to enter it, a
// toleration of each of its taints. Without them a tainted flavor could never
// hold a probe or a filler, and would look safe only because the judge could
// not reach it; a real user submits with the tolerations (the flavor's own
// spec.tolerations do not matter here: Kueue adds them to what it admits).
func tolerationsFor(c *cluster, flavor kueue.ResourceFlavorReference) []corev1.Toleration {
	var tolerations []corev1.Toleration
	for _, rf := range c.flavors {
		if rf.Name != string(flavor) {
			continue
		}
		for _, taint := range rf.Spec.NodeTaints {
			tolerations = append(tolerations, corev1.Toleration{Key: taint.Key, Operator: corev1.TolerationOpEqual,
				Value: taint.Value, Effect: taint.Effect})
		}
	}
	return tolerations
}

// quantity turns Kueue's int64 amount back into a Quantity (cpu in millicores).
func quantity(name corev1.ResourceName, v int64) resource.Quantity {
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	}
	return *resource.NewQuantity(v, resource.DecimalSI)
}

func quantityString(name corev1.ResourceName, v int64) string {
	q := quantity(name, v)
	return q.String()
}

func mustGet(env *kueueEnv, wl *kueue.Workload) *kueue.Workload {
	got, err := env.get(wl.Name, wl.Namespace)
	if err != nil {
		panic(fmt.Sprintf("workload %s vanished: %v", wl.Name, err))
	}
	return got
}
