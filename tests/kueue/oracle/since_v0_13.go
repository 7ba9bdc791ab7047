//go:build !kueue_v0_12

// Seams shared by every release judged from v0.13 on (v0.14, v0.16, v0.18,
// v0.19); release_v0_12.go holds what v0.12 does instead. The Kueue types
// are the judged release's, named by the alias packages.

package main

import (
	kueue "eval-admission/tests/kueue/oracle/kueueapi"
	"eval-admission/tests/kueue/oracle/schdcache"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/workload"
)

// cohortParent: the Cohort's spec.parentName (v1beta1 Cohort from v0.13).
func cohortParent(co *kueue.Cohort) string {
	return string(co.Spec.ParentName)
}

// simulateRemoval: the snapshot without the workload's usage in its
// ClusterQueue (Snapshot.SimulateWorkloadRemoval); returns the restore.
func simulateRemoval(snap *schdcache.Snapshot, wl *workload.Info) func() {
	return snap.SimulateWorkloadRemoval([]*workload.Info{wl})
}

// selectorAlwaysRespected: whether the managedJobsNamespaceSelector applies to
// a job with a queue name too (ManagedJobsNamespaceSelectorAlwaysRespected,
// from v0.13; off by default before v0.15).
func selectorAlwaysRespected() bool {
	return features.Enabled(features.ManagedJobsNamespaceSelectorAlwaysRespected)
}

// quotaReservedByWallClock: no; from v0.13 workload.SetQuotaReservation takes
// a clock and stamps the QuotaReserved condition with the scheduler's time.
const quotaReservedByWallClock = false
