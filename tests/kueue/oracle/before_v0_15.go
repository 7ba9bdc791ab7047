//go:build kueue_v0_12 || kueue_v0_14

// The seams of since_v0_15.go for every release judged before v0.15 (v0.12,
// v0.14): before the v1beta2 API (apis/kueue/v1beta2 and apis/config/v1beta2
// arrive in v0.15.0), their scheduler, cache and queue manager take v1beta1
// objects and config.Load returns a v1beta1 Configuration. The Kueue types
// are the judged release's, named by the alias packages.

package main

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"eval-admission/tests/kueue/oracle/configapi"
	kueue "eval-admission/tests/kueue/oracle/kueueapi"
	"eval-admission/tests/kueue/oracle/qcache"
	"eval-admission/tests/kueue/oracle/schdcache"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

// registerOlderAPIs and toHub: v1beta1 is the newest version before v0.15
// and its hub; there is nothing older to convert (v1alpha1 holds Topology,
// and in v0.12 Cohort, registered by kueueapi).
func registerOlderAPIs(*runtime.Scheme) {}

func toHub(runtime.Object) (runtime.Object, bool, error) { return nil, false, nil }

// newQueueManager: before v0.15 there is no NewManagerForUnitTests, and
// NewManager starts nothing in the background (inadmissible workloads are
// requeued synchronously).
func newQueueManager(cl client.Client, cache *schdcache.Cache, opts ...qcache.Option) *qcache.Manager {
	return qcache.NewManager(cl, cache, opts...)
}

// queueWorkload: before v0.15, Manager.AddOrUpdateWorkload takes no logger.
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

// prepareWorkloadPriority: before v0.15 there is no PrepareWorkloadPriority;
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
