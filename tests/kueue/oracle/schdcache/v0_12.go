//go:build kueue_v0_12

// Package schdcache names the scheduler cache of the judged release: in
// v0.12 it is sigs.k8s.io/kueue/pkg/cache (pkg/cache/scheduler from v0.13).
package schdcache

import "sigs.k8s.io/kueue/pkg/cache"

type (
	Cache                = cache.Cache
	ClusterQueueSnapshot = cache.ClusterQueueSnapshot
	Option               = cache.Option
	Snapshot             = cache.Snapshot
)

var New = cache.New
