//go:build kueue_v0_12

// What only v0.12 (v0.12.10: the Red Hat build of Kueue 1.1 pins it) does
// at the seams of since_v0_13.go and in cmd/kueue's options. Like v0.14 it
// predates the v1beta2 API (before_v0_15.go). Unlike v0.14:
//   - the internal packages are pkg/cache and pkg/queue (pkg/cache/scheduler
//     and pkg/cache/queue from v0.13), named for the other files by the alias
//     packages oracle/schdcache and oracle/qcache;
//   - Cohort is served as v1alpha1 only, its parent in spec.parent
//     (kueueapi/v0_12.go, cohortParent);
//   - the cache takes no admission fair sharing, the scheduler neither;
//   - SimulateWorkloadRemoval is a ClusterQueueSnapshot method.

package main

import (
	configapi "sigs.k8s.io/kueue/apis/config/v1beta1"
	kueuealpha "sigs.k8s.io/kueue/apis/kueue/v1alpha1"
	schdcache "sigs.k8s.io/kueue/pkg/cache"
	qcache "sigs.k8s.io/kueue/pkg/queue"
	"sigs.k8s.io/kueue/pkg/scheduler"
	"sigs.k8s.io/kueue/pkg/workload"
)

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
