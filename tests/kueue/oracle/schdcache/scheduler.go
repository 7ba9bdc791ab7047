//go:build !kueue_v0_12

// Package schdcache names the scheduler cache of the judged release:
// sigs.k8s.io/kueue/pkg/cache/scheduler from v0.13 (v0_12.go: pkg/cache).
// The release seams import the real package; these are the same types.
package schdcache

import schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"

type (
	Cache                = schdcache.Cache
	ClusterQueueSnapshot = schdcache.ClusterQueueSnapshot
	Option               = schdcache.Option
	Snapshot             = schdcache.Snapshot
)

var New = schdcache.New
