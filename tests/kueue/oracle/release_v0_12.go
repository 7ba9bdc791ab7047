//go:build kueue_v0_12

// The seams of release_v0_19.go and since_v0_15.go for Kueue v0.12 (v0.12.10:
// the Red Hat build of Kueue 1.1 pins it). Like v0.14 (release_v0_14.go) it
// predates the v1beta2 API: its scheduler, cache and queue manager take
// v1beta1 objects and config.Load returns a v1beta1 Configuration
// (configapi/v1beta1.go). Unlike v0.14:
//   - the internal packages are pkg/cache and pkg/queue (pkg/cache/scheduler
//     and pkg/cache/queue from v0.13), named for setup.go by the alias
//     packages oracle/schdcache and oracle/qcache;
//   - Cohort is served as v1alpha1 only, its parent in spec.parent
//     (kueueapi/v0_12.go, cohortParent);
//   - the cache takes no admission fair sharing, the scheduler neither;
//   - SimulateWorkloadRemoval is a ClusterQueueSnapshot method.

package main

import (
	"context"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta1"
	kueuealpha "sigs.k8s.io/kueue/apis/kueue/v1alpha1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta1"
	schdcache "sigs.k8s.io/kueue/pkg/cache"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	// Every integration, as cmd/kueue/main.go imports them: v0.12's
	// config.Load validates the Configuration against the registered
	// integrations, as v0.14's and v0.16's do.
	_ "sigs.k8s.io/kueue/pkg/controller/jobs"
	qcache "sigs.k8s.io/kueue/pkg/queue"
	"sigs.k8s.io/kueue/pkg/resources"
	"sigs.k8s.io/kueue/pkg/scheduler"
	"sigs.k8s.io/kueue/pkg/workload"
)

// registerOlderAPIs and toHub: v1beta1 is v0.12's newest version and its
// hub (v1alpha1 holds Cohort and Topology, registered by kueueapi).
func registerOlderAPIs(*runtime.Scheme) {}

func toHub(runtime.Object) (runtime.Object, bool, error) { return nil, false, nil }

// kueueOptions: cmd/kueue/main.go at v0.12.10. The cache gets
// WithFairSharing(cfg.FairSharing.Enable) and the resources; the queue
// manager the resources and WithAdmissionFairSharing; the scheduler
// WithFairSharing only (no admission fair sharing in v0.12's cache or
// scheduler). Resource transformations are behind the
// ConfigurableResourceTransformations gate, beta and on by default in v0.12.
// As for the other releases, WithPodsReadyTracking is left out (when, not
// whether: release_v0_14.go), and so are WithPodsReadyRequeuingTimestamp,
// which orders workloads requeued after a pods-ready eviction, of which the
// judge has none.
func kueueOptions(cfg *configapi.Configuration) ([]schdcache.Option, []qcache.Option, []scheduler.Option) {
	var cacheOpts []schdcache.Option
	var queueOpts []qcache.Option
	if res := cfg.Resources; res != nil {
		if len(res.ExcludeResourcePrefixes) > 0 {
			cacheOpts = append(cacheOpts, schdcache.WithExcludedResourcePrefixes(res.ExcludeResourcePrefixes))
			queueOpts = append(queueOpts, qcache.WithExcludedResourcePrefixes(res.ExcludeResourcePrefixes))
		}
		if len(res.Transformations) > 0 {
			cacheOpts = append(cacheOpts, schdcache.WithResourceTransformations(res.Transformations))
			queueOpts = append(queueOpts, qcache.WithResourceTransformations(res.Transformations))
		}
	}
	if cfg.FairSharing != nil {
		cacheOpts = append(cacheOpts, schdcache.WithFairSharing(cfg.FairSharing.Enable))
	}
	if cfg.AdmissionFairSharing != nil {
		queueOpts = append(queueOpts, qcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
	}
	schedOpts := []scheduler.Option{scheduler.WithFairSharing(cfg.FairSharing)}
	return cacheOpts, queueOpts, schedOpts
}

// newQueueManager: v0.12's NewManager starts nothing in the background.
func newQueueManager(cl client.Client, cache *schdcache.Cache, opts ...qcache.Option) *qcache.Manager {
	return qcache.NewManager(cl, cache, opts...)
}

// queueWorkload: v0.12's Manager.AddOrUpdateWorkload takes no logger.
func queueWorkload(queues *qcache.Manager, _ logr.Logger, wl *kueue.Workload) error {
	return queues.AddOrUpdateWorkload(wl)
}

// fairSharingEnabled: config v1beta1's fairSharing.enable.
func fairSharingEnabled(cfg *configapi.Configuration) bool {
	return cfg.FairSharing != nil && cfg.FairSharing.Enable
}

// cohortName: v1beta1's ClusterQueue spec.cohort.
func cohortName(cq *kueue.ClusterQueue) string {
	return string(cq.Spec.Cohort)
}

// cohortParent: v1alpha1's Cohort spec.parent.
func cohortParent(co *kueuealpha.Cohort) string {
	return string(co.Spec.Parent)
}

// simulateRemoval: v0.12's SimulateWorkloadRemoval is the ClusterQueue
// snapshot's; the workload's usage leaves its own ClusterQueue, as v0.13's
// Snapshot.SimulateWorkloadRemoval does.
func simulateRemoval(snap *schdcache.Snapshot, wl *workload.Info) func() {
	return snap.ClusterQueue(wl.ClusterQueue).SimulateWorkloadRemoval([]*workload.Info{wl})
}

// prepareWorkloadPriority: the priority part of v0.12's
// JobReconciler.prepareWorkload (jobframework.ExtractPriority).
func prepareWorkloadPriority(ctx context.Context, cl client.Client, obj client.Object, wl *kueue.Workload, custom func() string) error {
	name, source, priority, err := jobframework.ExtractPriority(ctx, cl, obj, wl.Spec.PodSets, custom)
	if err != nil {
		return err
	}
	wl.Spec.PriorityClassName = name
	wl.Spec.Priority = &priority
	wl.Spec.PriorityClassSource = source
	return nil
}

// applyDefaultLocalQueue: v0.12.10 labels the job in any namespace
// (jobframework.ApplyDefaultLocalQueue, behind LocalQueueDefaulting, beta
// and on by default in v0.12).
func applyDefaultLocalQueue(_ context.Context, _ client.Client, obj client.Object, exist func(string) bool, _ labels.Selector) error {
	jobframework.ApplyDefaultLocalQueue(obj, exist)
	return nil
}

// applyDefaultWorkloadPriorityClass: no WorkloadPriorityClass defaulting.
func applyDefaultWorkloadPriorityClass(context.Context, client.Client, client.Object) {}

// constructWorkload: ConstructWorkload takes the label keys to copy only.
func constructWorkload(ctx context.Context, cl client.Client, job jobframework.GenericJob) (*kueue.Workload, error) {
	return jobframework.ConstructWorkload(ctx, cl, job, nil)
}

// noFitReason: v0.12 keeps no such record; the Workload's condition says it.
func noFitReason(*qcache.Manager, *kueue.Workload) (string, bool) {
	return "", false
}

// withLimitRangeIndex: v0.12 lists LimitRanges with Container items only.
func withLimitRangeIndex(builder *fake.ClientBuilder) *fake.ClientBuilder {
	return builder.WithIndex(&corev1.LimitRange{}, indexer.LimitRangeHasContainerType, indexer.IndexLimitRangeHasContainerType)
}

// quotaCheckOptions: no quota check strategy before v0.18.
func quotaCheckOptions(*configapi.Configuration) []scheduler.Option {
	return nil
}

// available, nominalQuota and quotaUsage: plain int64.
func available(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.Available(fr)
}

func nominalQuota(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.QuotaFor(fr).Nominal
}

func quotaUsage(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.ResourceNode.Usage[fr]
}

// selectorAlwaysRespected: v0.12 has no ManagedJobsNamespaceSelectorAlwaysRespected;
// its JobReconciler.ReconcileGenericJob applies the managedJobsNamespaceSelector
// to a job without a queue name only (under manageJobsWithoutQueueName and
// the ManagedJobsNamespaceSelector gate, beta and on in v0.12).
func selectorAlwaysRespected() bool { return false }

// quotaReservedByWallClock: v0.12.10's workload.SetQuotaReservation
// (pkg/workload/workload.go) sets the QuotaReserved condition without a
// LastTransitionTime, so apimeta.SetStatusCondition stamps metav1.Now(), the
// wall clock, not the scheduler's clock (v0.14.8's takes the clock's time).
// The judge restamps it with its cycle's time (setup.go
// restampQuotaReservation).
const quotaReservedByWallClock = true
