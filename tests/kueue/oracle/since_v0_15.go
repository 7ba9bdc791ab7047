//go:build !kueue_v0_14 && !kueue_v0_12

// Seams shared by every release judged from v0.15 on (v0.16, v0.18, v0.19):
// where Kueue's v1beta2 API, its hub from v0.15.0, and the internal packages
// that came with it differ from v0.12 and v0.14 (before_v0_15.go holds
// theirs; kueueOptions for v0.12 and v0.14 is in release_v0_12.go and
// release_v0_14.go).

package main

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueuev1beta1 "sigs.k8s.io/kueue/apis/kueue/v1beta1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	"sigs.k8s.io/kueue/pkg/scheduler/preemption/fairsharing"
)

// registerOlderAPIs: a set-up may hold v1beta1 objects, which the API server
// converts for Kueue (toHub).
func registerOlderAPIs(s *runtime.Scheme) {
	utilruntime.Must(kueuev1beta1.AddToScheme(s))
}

// toHub converts a v1beta1 object to v1beta2 with Kueue's own conversion
// functions (the API server does the same through Kueue's conversion webhook);
// converted is false for any other object.
func toHub(obj runtime.Object) (hub runtime.Object, converted bool, err error) {
	switch obj.(type) {
	case *kueuev1beta1.ClusterQueue:
		hub = &kueue.ClusterQueue{}
	case *kueuev1beta1.LocalQueue:
		hub = &kueue.LocalQueue{}
	case *kueuev1beta1.Cohort:
		hub = &kueue.Cohort{}
	case *kueuev1beta1.ResourceFlavor:
		hub = &kueue.ResourceFlavor{}
	case *kueuev1beta1.WorkloadPriorityClass:
		hub = &kueue.WorkloadPriorityClass{}
	case *kueuev1beta1.AdmissionCheck:
		hub = &kueue.AdmissionCheck{}
	default:
		return nil, false, nil
	}
	if err := objectScheme.Convert(obj, hub, nil); err != nil {
		return nil, true, err
	}
	hub.GetObjectKind().SetGroupVersionKind(kueue.SchemeGroupVersion.WithKind(obj.GetObjectKind().GroupVersionKind().Kind))
	return hub, true, nil
}

// kueueOptions: the cache's, queue manager's and scheduler's options from the
// Configuration, as cmd/kueue/main.go passes them, with one preemption
// expectations store shared by the queue manager and the scheduler.
func kueueOptions(cfg *configapi.Configuration) ([]schdcache.Option, []qcache.Option, []scheduler.Option) {
	var cacheOpts []schdcache.Option
	if cfg.FairSharing != nil {
		cacheOpts = append(cacheOpts, schdcache.WithFairSharing(fairsharing.Enabled(cfg.FairSharing)))
	}
	if cfg.AdmissionFairSharing != nil {
		cacheOpts = append(cacheOpts, schdcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
	}
	if res := cfg.Resources; res != nil {
		if len(res.ExcludeResourcePrefixes) > 0 {
			cacheOpts = append(cacheOpts, schdcache.WithExcludedResourcePrefixes(res.ExcludeResourcePrefixes))
		}
		if len(res.Transformations) > 0 {
			cacheOpts = append(cacheOpts, schdcache.WithResourceTransformations(res.Transformations))
		}
	}
	expectations := preemptexpectations.New()
	queueOpts := []qcache.Option{qcache.WithPreemptionExpectations(expectations)}
	if cfg.AdmissionFairSharing != nil {
		queueOpts = append(queueOpts, qcache.WithAdmissionFairSharing(cfg.AdmissionFairSharing))
	}
	if res := cfg.Resources; res != nil {
		if len(res.ExcludeResourcePrefixes) > 0 {
			queueOpts = append(queueOpts, qcache.WithExcludedResourcePrefixes(res.ExcludeResourcePrefixes))
		}
		if len(res.Transformations) > 0 {
			queueOpts = append(queueOpts, qcache.WithResourceTransformations(res.Transformations))
		}
	}
	schedOpts := []scheduler.Option{
		scheduler.WithFairSharing(cfg.FairSharing),
		scheduler.WithAdmissionFairSharing(cfg.AdmissionFairSharing),
		scheduler.WithPreemptionExpectations(expectations),
	}
	return cacheOpts, queueOpts, schedOpts
}

// newQueueManager: the queue manager without its background requeuer.
func newQueueManager(cl client.Client, cache *schdcache.Cache, opts ...qcache.Option) *qcache.Manager {
	return qcache.NewManagerForUnitTests(cl, cache, opts...)
}

// queueWorkload: the queue manager's AddOrUpdateWorkload (with a logger).
func queueWorkload(queues *qcache.Manager, log logr.Logger, wl *kueue.Workload) error {
	return queues.AddOrUpdateWorkload(log, wl)
}

// fairSharingEnabled: a fairSharing section turns it on (config v1beta2).
func fairSharingEnabled(cfg *configapi.Configuration) bool {
	return fairsharing.Enabled(cfg.FairSharing)
}

// cohortName: the ClusterQueue's spec.cohortName.
func cohortName(cq *kueue.ClusterQueue) string {
	return string(cq.Spec.CohortName)
}

// prepareWorkloadPriority: the priority part of JobReconciler.prepareWorkload.
func prepareWorkloadPriority(ctx context.Context, cl client.Client, obj client.Object, wl *kueue.Workload, custom func() string) error {
	return jobframework.PrepareWorkloadPriority(ctx, cl, obj, wl, custom)
}
