//go:build !kueue_v0_14 && !kueue_v0_12

// Package kueueapi names the Kueue API types the oracle uses in the version
// the judged release's scheduler, cache and queue manager take: v1beta2, the hub from v0.15 (Kueue's storage version
// and what its internal packages take). v1beta1.go is the same list for v0.14.

package kueueapi

import kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

type (
	AdmissionCheck          = kueue.AdmissionCheck
	ClusterQueue            = kueue.ClusterQueue
	ClusterQueueReference   = kueue.ClusterQueueReference
	Cohort                  = kueue.Cohort
	LocalQueue              = kueue.LocalQueue
	LocalQueueName          = kueue.LocalQueueName
	LocalQueueSpec          = kueue.LocalQueueSpec
	PodSet                  = kueue.PodSet
	ResourceFlavor          = kueue.ResourceFlavor
	ResourceFlavorReference = kueue.ResourceFlavorReference
	Workload                = kueue.Workload
	WorkloadList            = kueue.WorkloadList
	WorkloadPriorityClass   = kueue.WorkloadPriorityClass
	WorkloadSpec            = kueue.WorkloadSpec
)

const (
	DefaultPodSetName     = kueue.DefaultPodSetName
	None                  = kueue.None
	PreemptionPolicyNever = kueue.PreemptionPolicyNever
	WorkloadEvicted       = kueue.WorkloadEvicted
	WorkloadPreempted     = kueue.WorkloadPreempted
	WorkloadQuotaReserved = kueue.WorkloadQuotaReserved
)

var (
	AddToScheme        = kueue.AddToScheme
	SchemeGroupVersion = kueue.SchemeGroupVersion
)
