//go:build kueue_v0_14

// The seams of release_v0_19.go and since_v0_15.go for Kueue v0.14 (v0.14.8:
// the Red Hat build of Kueue 1.2 pins it). v0.14 predates the v1beta2 API
// (apis/kueue/v1beta2 and apis/config/v1beta2 arrive in v0.15.0): its
// scheduler, cache and queue manager take v1beta1 objects and config.Load
// returns a v1beta1 Configuration (kueueapi/v1beta1.go, configapi/v1beta1.go).
// The internal packages are where v0.19 has them (pkg/cache/scheduler,
// pkg/cache/queue); what differs is cited below.

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
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta1"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/features"
	// Every integration, as cmd/kueue/main.go imports them: v0.14's
	// config.Load validates the Configuration against the registered
	// integrations, as v0.16's does (release_v0_16.go).
	_ "sigs.k8s.io/kueue/pkg/controller/jobs"
	"sigs.k8s.io/kueue/pkg/resources"
	"sigs.k8s.io/kueue/pkg/scheduler"
	"sigs.k8s.io/kueue/pkg/workload"
)

// registerOlderAPIs and toHub: v1beta1 is v0.14's newest version and its
// hub; there is nothing older to convert (v1alpha1 holds Topology only).
func registerOlderAPIs(*runtime.Scheme) {}

func toHub(runtime.Object) (runtime.Object, bool, error) { return nil, false, nil }

// kueueOptions: cmd/kueue/main.go at v0.14.8 passes the cache
// WithFairSharing(cfg.FairSharing.Enable) (config v1beta1 turns fair sharing
// on with fairSharing.enable; fairsharing.Enabled comes later), and has no
// preemption expectations (pkg/scheduler/preemption/expectations and
// WithPreemptionExpectations come after v0.14). Like the other releases'
// judges it leaves out WithPodsReadyTracking: with waitForPodsReady.enable,
// v1beta1 defaults blockAdmission to true, and the scheduler then waits for
// the admitted workloads' pods to be ready before admitting another
// (Scheduler.schedule, Cache.WaitForPodsReady) — when, not whether, a
// workload is admitted or preempted, and the judge's workloads have no pods.
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
		cacheOpts = append(cacheOpts, schdcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
	}
	schedOpts := []scheduler.Option{
		scheduler.WithFairSharing(cfg.FairSharing),
		scheduler.WithAdmissionFairSharing(cfg.AdmissionFairSharing),
	}
	return cacheOpts, queueOpts, schedOpts
}

// newQueueManager: v0.14 has no NewManagerForUnitTests; its NewManager
// starts nothing in the background (inadmissible workloads are requeued
// synchronously).
func newQueueManager(cl client.Client, cache *schdcache.Cache, opts ...qcache.Option) *qcache.Manager {
	return qcache.NewManager(cl, cache, opts...)
}

// queueWorkload: v0.14's Manager.AddOrUpdateWorkload takes no logger.
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

// prepareWorkloadPriority: v0.14 has no PrepareWorkloadPriority; its
// JobReconciler.prepareWorkload sets the priority class name, source and
// value from jobframework.ExtractPriority.
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

// applyDefaultLocalQueue: v0.14.8 labels the job in any namespace
// (jobframework.ApplyDefaultLocalQueue; no namespace check, Kueue #13374).
func applyDefaultLocalQueue(_ context.Context, _ client.Client, obj client.Object, exist func(string) bool, _ labels.Selector) error {
	jobframework.ApplyDefaultLocalQueue(obj, exist)
	return nil
}

// applyDefaultWorkloadPriorityClass: no WorkloadPriorityClass defaulting in
// v0.14 (Kueue #10798), as in v0.16.
func applyDefaultWorkloadPriorityClass(context.Context, client.Client, client.Object) {}

// constructWorkload: ConstructWorkload takes the label keys to copy only.
func constructWorkload(ctx context.Context, cl client.Client, job jobframework.GenericJob) (*kueue.Workload, error) {
	return jobframework.ConstructWorkload(ctx, cl, job, nil)
}

// noFitReason: v0.14 keeps no such record; the Workload's condition says it.
func noFitReason(*qcache.Manager, *kueue.Workload) (string, bool) {
	return "", false
}

// withLimitRangeIndex: v0.14 lists LimitRanges with Container items only.
func withLimitRangeIndex(builder *fake.ClientBuilder) *fake.ClientBuilder {
	return builder.WithIndex(&corev1.LimitRange{}, indexer.LimitRangeHasContainerType, indexer.IndexLimitRangeHasContainerType)
}

// quotaCheckOptions: no quota check strategy before v0.18 (Kueue #9808).
func quotaCheckOptions(*configapi.Configuration) []scheduler.Option {
	return nil
}

// available, nominalQuota and quotaUsage: plain int64, as in v0.16.
func available(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.Available(fr)
}

func nominalQuota(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.QuotaFor(fr).Nominal
}

func quotaUsage(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.ResourceNode.Usage[fr]
}

// cohortParent: the Cohort's spec.parentName.
func cohortParent(co *kueue.Cohort) string {
	return string(co.Spec.ParentName)
}

// simulateRemoval: the snapshot without the workload's usage in its
// ClusterQueue (Snapshot.SimulateWorkloadRemoval); returns the restore.
func simulateRemoval(snap *schdcache.Snapshot, wl *workload.Info) func() {
	return snap.SimulateWorkloadRemoval([]*workload.Info{wl})
}

// selectorAlwaysRespected: whether the managedJobsNamespaceSelector applies to
// a job with a queue name too (ManagedJobsNamespaceSelectorAlwaysRespected).
func selectorAlwaysRespected() bool {
	return features.Enabled(features.ManagedJobsNamespaceSelectorAlwaysRespected)
}

// quotaReservedByWallClock: no; workload.SetQuotaReservation stamps the
// QuotaReserved condition with the scheduler's clock.
const quotaReservedByWallClock = false
