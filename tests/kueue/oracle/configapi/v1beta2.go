//go:build !kueue_v0_14 && !kueue_v0_12

// Package configapi names Kueue's Configuration in the version the judged
// release's config.Load returns: v1beta2 from v0.15 (v1beta1.go: v0.14).
package configapi

import config "sigs.k8s.io/kueue/apis/config/v1beta2"

type Configuration = config.Configuration

var AddToScheme = config.AddToScheme
