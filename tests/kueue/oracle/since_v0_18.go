//go:build !kueue_v0_12 && !kueue_v0_14 && !kueue_v0_16

// Seams shared by every release judged from v0.18 on (v0.18, v0.19);
// before_v0_18.go holds what the older ones do instead.

package main

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/resources"
	"sigs.k8s.io/kueue/pkg/scheduler"
)

// applyDefaultWorkloadPriorityClass is the webhooks' default
// WorkloadPriorityClass (WorkloadPriorityClassDefaulting, Kueue #10798).
func applyDefaultWorkloadPriorityClass(ctx context.Context, cl client.Client, obj client.Object) {
	jobframework.ApplyDefaultWorkloadPriorityClass(ctx, cl, obj)
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
