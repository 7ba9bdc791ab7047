//go:build !kueue_v0_18 && !kueue_v0_16 && !kueue_v0_14 && !kueue_v0_12

// The seams where Kueue's exported API differs by release, for the release
// tests/kueue/go.mod pins (v0.19). release_v0_18.go and release_v0_16.go are
// the same seams for v0.18 and v0.16 (hack/build-oracle.sh builds them with
// the tags kueue_v0_18 and kueue_v0_16).

package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/resources"
	"sigs.k8s.io/kueue/pkg/scheduler"
)

// applyDefaultLocalQueue is the Job and JobSet webhooks' LocalQueue
// defaulting: from v0.19.1 (and v0.18.5) only in a namespace that
// managedJobsNamespaceSelector selects (Kueue #13374).
func applyDefaultLocalQueue(ctx context.Context, cl client.Client, obj client.Object, exist func(string) bool, sel labels.Selector) error {
	return jobframework.ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector(ctx, cl, obj, exist, sel)
}

// applyDefaultWorkloadPriorityClass is the webhooks' default
// WorkloadPriorityClass (WorkloadPriorityClassDefaulting, Kueue #10798).
func applyDefaultWorkloadPriorityClass(ctx context.Context, cl client.Client, obj client.Object) {
	jobframework.ApplyDefaultWorkloadPriorityClass(ctx, cl, obj)
}

// constructWorkload is jobframework.ConstructWorkload with no labels or
// annotations to copy.
func constructWorkload(ctx context.Context, cl client.Client, job jobframework.GenericJob) (*kueue.Workload, error) {
	return jobframework.ConstructWorkload(ctx, cl, job, nil, nil)
}

// noFitReason is the queue manager's record of why the workload did not fit.
func noFitReason(queues *qcache.Manager, wl *kueue.Workload) (string, bool) {
	return queues.GetNoFitReason(wl)
}

// withLimitRangeIndex adds the LimitRange index workload.AdjustResources lists by.
func withLimitRangeIndex(builder *fake.ClientBuilder) *fake.ClientBuilder {
	return builder.WithIndex(&corev1.LimitRange{}, indexer.LimitRangeHasContainerOrPodType, indexer.IndexLimitRangeHasContainerOrPodType)
}

// quotaCheckOptions: the scheduler's quota check strategy (Kueue #9808), as
// cmd/kueue/main.go passes it.
func quotaCheckOptions(cfg *configapi.Configuration) []scheduler.Option {
	return []scheduler.Option{scheduler.WithQuotaCheckStrategy(quotaCheckStrategy(cfg))}
}

// quotaCheckStrategy is cmd/kueue/main.go's: the Configuration's, with its gate on.
func quotaCheckStrategy(cfg *configapi.Configuration) configapi.QuotaCheckStrategy {
	if features.Enabled(features.QuotaCheckStrategy) && cfg.Resources != nil && cfg.Resources.QuotaCheckStrategy != nil {
		return *cfg.Resources.QuotaCheckStrategy
	}
	return configapi.QuotaCheckBlockUndeclared
}

// available, nominalQuota and quotaUsage: a ClusterQueue snapshot's
// quantities (resources.Amount, with Int64) in Kueue's int64 units.
func available(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.Available(fr).Int64()
}

func nominalQuota(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.QuotaFor(fr).Nominal.Int64()
}

func quotaUsage(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.ResourceNode.Usage[fr].Int64()
}
