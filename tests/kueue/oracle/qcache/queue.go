//go:build !kueue_v0_12

// Package qcache names the queue manager of the judged release:
// sigs.k8s.io/kueue/pkg/cache/queue from v0.13 (v0_12.go: pkg/queue).
// The seams shared across releases (before_v0_15.go, before_v0_19.go) name
// it here; a release's own file imports the real package, the same types.
package qcache

import qcache "sigs.k8s.io/kueue/pkg/cache/queue"

type (
	Manager = qcache.Manager
	Option  = qcache.Option
)

var NewManager = qcache.NewManager
