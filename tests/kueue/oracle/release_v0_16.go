//go:build kueue_v0_16

// The seams of release_v0_19.go for Kueue v0.16 (v0.16.6: the Red Hat build
// of Kueue 1.3 pins it).

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
	// Every integration, as cmd/kueue/main.go imports them: v0.16's
	// config.Load validates the Configuration (config.validate, whose
	// validateIntegrations refuses a framework no linked package registered),
	// so the release's default Configuration, which lists them all, loads
	// only with them registered. From v0.18 Load no longer validates
	// (cmd/kueue calls config.Validate itself).
	_ "sigs.k8s.io/kueue/pkg/controller/jobs"
	"sigs.k8s.io/kueue/pkg/resources"
	"sigs.k8s.io/kueue/pkg/scheduler"
)

// applyDefaultLocalQueue: v0.16.6 labels the job in any namespace
// (jobframework.ApplyDefaultLocalQueue; no namespace check, Kueue #13374).
func applyDefaultLocalQueue(_ context.Context, _ client.Client, obj client.Object, exist func(string) bool, _ labels.Selector) error {
	jobframework.ApplyDefaultLocalQueue(obj, exist)
	return nil
}

// applyDefaultWorkloadPriorityClass: v0.16 has no WorkloadPriorityClass
// defaulting (jobframework.ApplyDefaultWorkloadPriorityClass and the
// WorkloadPriorityClassDefaulting gate come with Kueue #10798): the Job and
// JobSet webhooks' Default applies the LocalQueue only.
func applyDefaultWorkloadPriorityClass(context.Context, client.Client, client.Object) {}

// constructWorkload: ConstructWorkload takes the label keys to copy only.
func constructWorkload(ctx context.Context, cl client.Client, job jobframework.GenericJob) (*kueue.Workload, error) {
	return jobframework.ConstructWorkload(ctx, cl, job, nil)
}

// noFitReason: v0.16 keeps no such record (no Manager.GetNoFitReason); the
// Workload's condition says it.
func noFitReason(*qcache.Manager, *kueue.Workload) (string, bool) {
	return "", false
}

// withLimitRangeIndex: v0.16's workload.AdjustResources lists LimitRanges
// with Container items only (indexer.LimitRangeHasContainerType).
func withLimitRangeIndex(builder *fake.ClientBuilder) *fake.ClientBuilder {
	return builder.WithIndex(&corev1.LimitRange{}, indexer.LimitRangeHasContainerType, indexer.IndexLimitRangeHasContainerType)
}

// quotaCheckOptions: v0.16 has no quota check strategy (no
// scheduler.WithQuotaCheckStrategy, Configuration resources.quotaCheckStrategy
// or QuotaCheckStrategy gate, Kueue #9808): its flavor assigner checks every
// resource a workload requests, as BlockUndeclared does.
func quotaCheckOptions(*configapi.Configuration) []scheduler.Option {
	return nil
}

// available, nominalQuota and quotaUsage: v0.16's snapshot quantities are
// plain int64 (ClusterQueueSnapshot.Available, ResourceQuota.Nominal,
// resources.FlavorResourceQuantities); resources.Amount comes later.
func available(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.Available(fr)
}

func nominalQuota(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.QuotaFor(fr).Nominal
}

func quotaUsage(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.ResourceNode.Usage[fr]
}
