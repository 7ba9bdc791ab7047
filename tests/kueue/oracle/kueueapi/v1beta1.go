//go:build kueue_v0_14

// Package kueueapi names the Kueue API types the oracle uses in the version
// the judged release's scheduler, cache and queue manager take: v1beta1 in v0.14 (apis/kueue/v1beta2 arrives
// in v0.15.0). The two versions' types the oracle reads have the same shape
// but for ClusterQueue's cohort (spec.cohort, spec.cohortName from v1beta2),
// which the oracle reads through cohortName (release_v0_14.go).

package kueueapi

import kueue "sigs.k8s.io/kueue/apis/kueue/v1beta1"

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
