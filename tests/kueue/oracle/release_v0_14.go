//go:build kueue_v0_14

// What only v0.14 (v0.14.8: the Red Hat build of Kueue 1.2 pins it) does:
// cmd/kueue's options. Its API is v1beta1 (before_v0_15.go); its internal
// packages are where v0.19 has them (pkg/cache/scheduler, pkg/cache/queue).

package main

import (
	configapi "sigs.k8s.io/kueue/apis/config/v1beta1"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/scheduler"
)

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
