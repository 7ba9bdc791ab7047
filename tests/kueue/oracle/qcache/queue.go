//go:build !kueue_v0_12

// Package qcache names the queue manager of the judged release:
// sigs.k8s.io/kueue/pkg/cache/queue from v0.13 (v0_12.go: pkg/queue).
// The release seams import the real package; these are the same types.
package qcache

import qcache "sigs.k8s.io/kueue/pkg/cache/queue"

type (
	Manager = qcache.Manager
	Option  = qcache.Option
)
