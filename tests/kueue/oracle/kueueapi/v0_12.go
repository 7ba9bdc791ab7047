//go:build kueue_v0_12

// Package kueueapi names the Kueue API types the oracle uses in the version
// the judged release's scheduler, cache and queue manager take. v0.12 is
// v1beta1.go's v0.14 list but for Cohort, which v0.12 serves as v1alpha1
// only (apis/kueue/v1alpha1/cohort_types.go at v0.12.10; v1beta1 from
// v0.13): its parent is spec.parent, read through cohortParent
// (release_v0_12.go). AddToScheme registers both versions.

package kueueapi

import (
	"k8s.io/apimachinery/pkg/runtime"

	kueuealpha "sigs.k8s.io/kueue/apis/kueue/v1alpha1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta1"
)

type (
	AdmissionCheck          = kueue.AdmissionCheck
	ClusterQueue            = kueue.ClusterQueue
	ClusterQueueReference   = kueue.ClusterQueueReference
	Cohort                  = kueuealpha.Cohort
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

var SchemeGroupVersion = kueue.SchemeGroupVersion

// AddToScheme registers v1beta1 and v1alpha1 (Cohort, Topology).
func AddToScheme(s *runtime.Scheme) error {
	if err := kueue.AddToScheme(s); err != nil {
		return err
	}
	return kueuealpha.AddToScheme(s)
}
