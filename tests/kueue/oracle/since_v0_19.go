//go:build !kueue_v0_12 && !kueue_v0_14 && !kueue_v0_16 && !kueue_v0_18

// The seams where Kueue's exported API differs by release, as the release
// tests/kueue/go.mod pins (v0.19) has them. The files are grouped by the
// Kueue change, each naming the releases on each side of it:
// before_v0_19.go, since_v0_18.go and before_v0_18.go, since_v0_15.go and
// before_v0_15.go; release_v0_12.go and release_v0_14.go hold what only
// that release does. hack/build-oracle.sh builds an older release with the
// tag kueue_<minor> (kueue_v0_16 ...).

package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
)

// applyDefaultLocalQueue is the Job and JobSet webhooks' LocalQueue
// defaulting: from v0.19.1 (and v0.18.5) only in a namespace that
// managedJobsNamespaceSelector selects (Kueue #13374).
func applyDefaultLocalQueue(ctx context.Context, cl client.Client, obj client.Object, exist func(string) bool, sel labels.Selector) error {
	return jobframework.ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector(ctx, cl, obj, exist, sel)
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
