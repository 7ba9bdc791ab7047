//go:build kueue_v0_12

// Package qcache names the queue manager of the judged release: in v0.12 it
// is sigs.k8s.io/kueue/pkg/queue (pkg/cache/queue from v0.13).
package qcache

import "sigs.k8s.io/kueue/pkg/queue"

type (
	Manager = queue.Manager
	Option  = queue.Option
)

var NewManager = queue.NewManager
