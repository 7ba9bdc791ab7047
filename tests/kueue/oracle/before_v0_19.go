//go:build kueue_v0_12 || kueue_v0_14 || kueue_v0_16 || kueue_v0_18

// The seams of since_v0_19.go for every release judged before v0.19 (v0.12,
// v0.14, v0.16, v0.18). The Kueue types are the judged release's, named by
// the alias packages (kueueapi, qcache).

package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kueue "eval-admission/tests/kueue/oracle/kueueapi"
	"eval-admission/tests/kueue/oracle/qcache"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

// applyDefaultLocalQueue: before v0.19 the webhooks label the job in any
// namespace (jobframework.ApplyDefaultLocalQueue, no namespace check; the
// check of Kueue #13374 arrives in v0.18.5 and v0.19.1, and v0.18.2 is the
// newest v0.18 the module proxy serves). LocalQueueDefaulting is beta and on
// by default from v0.12.
func applyDefaultLocalQueue(_ context.Context, _ client.Client, obj client.Object, exist func(string) bool, _ labels.Selector) error {
	jobframework.ApplyDefaultLocalQueue(obj, exist)
	return nil
}

// constructWorkload: before v0.19, ConstructWorkload takes the label keys to
// copy only.
func constructWorkload(ctx context.Context, cl client.Client, job jobframework.GenericJob) (*kueue.Workload, error) {
	return jobframework.ConstructWorkload(ctx, cl, job, nil)
}

// noFitReason: before v0.19 the queue manager keeps no such record (no
// Manager.GetNoFitReason); the Workload's condition says it.
func noFitReason(*qcache.Manager, *kueue.Workload) (string, bool) {
	return "", false
}

// withLimitRangeIndex: before v0.19 workload.AdjustResources lists
// LimitRanges with Container items only (indexer.LimitRangeHasContainerType).
func withLimitRangeIndex(builder *fake.ClientBuilder) *fake.ClientBuilder {
	return builder.WithIndex(&corev1.LimitRange{}, indexer.LimitRangeHasContainerType, indexer.IndexLimitRangeHasContainerType)
}
