//go:build kueue_v0_12 || kueue_v0_14 || kueue_v0_16

// The seams of since_v0_18.go for every release judged before v0.18 (v0.12,
// v0.14, v0.16). The Kueue types are the judged release's, named by the alias
// packages (configapi, schdcache).

package main

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"eval-admission/tests/kueue/oracle/configapi"
	"eval-admission/tests/kueue/oracle/schdcache"
	// Every integration, as cmd/kueue/main.go imports them: before v0.18,
	// config.Load validates the Configuration (config.validate, whose
	// validateIntegrations refuses a framework no linked package registered),
	// so the release's default Configuration, which lists them all, loads
	// only with them registered. From v0.18 Load no longer validates
	// (cmd/kueue calls config.Validate itself).
	_ "sigs.k8s.io/kueue/pkg/controller/jobs"
	"sigs.k8s.io/kueue/pkg/resources"
	"sigs.k8s.io/kueue/pkg/scheduler"
)

// applyDefaultWorkloadPriorityClass: no WorkloadPriorityClass defaulting
// before v0.18 (jobframework.ApplyDefaultWorkloadPriorityClass and the
// WorkloadPriorityClassDefaulting gate come with Kueue #10798): the Job and
// JobSet webhooks' Default applies the LocalQueue only.
func applyDefaultWorkloadPriorityClass(context.Context, client.Client, client.Object) {}

// quotaCheckOptions: no quota check strategy before v0.18 (no
// scheduler.WithQuotaCheckStrategy, Configuration
// resources.quotaCheckStrategy or QuotaCheckStrategy gate, Kueue #9808): the
// flavor assigner checks every resource a workload requests, as
// BlockUndeclared does.
func quotaCheckOptions(*configapi.Configuration) []scheduler.Option {
	return nil
}

// available, nominalQuota and quotaUsage: before v0.18 the snapshot's
// quantities are plain int64 (ClusterQueueSnapshot.Available,
// ResourceQuota.Nominal, resources.FlavorResourceQuantities);
// resources.Amount comes with v0.18.
func available(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.Available(fr)
}

func nominalQuota(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.QuotaFor(fr).Nominal
}

func quotaUsage(cq *schdcache.ClusterQueueSnapshot, fr resources.FlavorResource) int64 {
	return cq.ResourceNode.Usage[fr]
}
