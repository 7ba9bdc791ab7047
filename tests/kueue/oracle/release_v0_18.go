//go:build kueue_v0_18

// The seams of release_v0_19.go for Kueue v0.18.

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

// applyDefaultLocalQueue: v0.18.2 labels the job in any namespace (the
// namespace check of Kueue #13374 arrives in v0.18.5).
func applyDefaultLocalQueue(_ context.Context, _ client.Client, obj client.Object, exist func(string) bool, _ labels.Selector) error {
	jobframework.ApplyDefaultLocalQueue(obj, exist)
	return nil
}

// applyDefaultWorkloadPriorityClass: as in v0.19.
func applyDefaultWorkloadPriorityClass(ctx context.Context, cl client.Client, obj client.Object) {
	jobframework.ApplyDefaultWorkloadPriorityClass(ctx, cl, obj)
}

func constructWorkload(ctx context.Context, cl client.Client, job jobframework.GenericJob) (*kueue.Workload, error) {
	return jobframework.ConstructWorkload(ctx, cl, job, nil)
}

// noFitReason: v0.18 keeps no such record; the Workload's condition says it.
func noFitReason(*qcache.Manager, *kueue.Workload) (string, bool) {
	return "", false
}

// withLimitRangeIndex: v0.18 lists LimitRanges with Container items only.
func withLimitRangeIndex(builder *fake.ClientBuilder) *fake.ClientBuilder {
	return builder.WithIndex(&corev1.LimitRange{}, indexer.LimitRangeHasContainerType, indexer.IndexLimitRangeHasContainerType)
}

// quotaCheckOptions and quotaCheckStrategy: as in v0.19.
func quotaCheckOptions(cfg *configapi.Configuration) []scheduler.Option {
	return []scheduler.Option{scheduler.WithQuotaCheckStrategy(quotaCheckStrategy(cfg))}
}

func quotaCheckStrategy(cfg *configapi.Configuration) configapi.QuotaCheckStrategy {
	if features.Enabled(features.QuotaCheckStrategy) && cfg.Resources != nil && cfg.Resources.QuotaCheckStrategy != nil {
		return *cfg.Resources.QuotaCheckStrategy
	}
	return configapi.QuotaCheckBlockUndeclared
}

// available, nominalQuota and quotaUsage: as in v0.19 (resources.Amount).
func available(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.Available(fr).Int64()
}

func nominalQuota(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.QuotaFor(fr).Nominal.Int64()
}

func quotaUsage(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.ResourceNode.Usage[fr].Int64()
}
