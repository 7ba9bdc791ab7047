//go:build kueue_v0_14 || kueue_v0_12

// Package configapi names Kueue's Configuration in the version the judged
// release's config.Load returns: v1beta1 in v0.14 and v0.12
// (apis/config/v1beta2 arrives in v0.15.0).
package configapi

import config "sigs.k8s.io/kueue/apis/config/v1beta1"

type Configuration = config.Configuration

var AddToScheme = config.AddToScheme
