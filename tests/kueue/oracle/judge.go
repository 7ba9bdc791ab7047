package main

// The two questions, answered by Kueue's code: admissible (judge) and exposed
// (exposure, with the probes of probes.go).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	kueue "eval-admission/tests/kueue/oracle/kueueapi"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	jobjob "sigs.k8s.io/kueue/pkg/controller/jobs/job"
	jobjobset "sigs.k8s.io/kueue/pkg/controller/jobs/jobset"
	"sigs.k8s.io/kueue/pkg/workload"
)

// Scheduling cycles per run: the first nominates and admits or preempts; the
// others let a preemptor that waited on its victims retry. More change nothing
// in these scenarios (checked: 3 and 6 give the same verdicts on the fixed seed).
const cyclesPerRun = 3

// admissionCycles bounds the cycles the evaluation gets alone. A workload
// whose flavor scans stopped short of their last flavor is requeued at once
// and resumes them (FlavorFungibilityPreserveScanProgress), one cycle per
// step, so three cycles could end a run Kueue would go on with; the run ends
// by itself once nothing is left in the heap.
const admissionCycles = 64

// The Integrations.Frameworks names of the two kinds eval-admission reviews.
var frameworkOf = map[string]string{"Job": "batch/job", "JobSet": "jobset.x-k8s.io/jobset"}

// submittedAt is the evaluation's creation time; probes are a second newer, or
// older where only an older workload could preempt (LowerOrNewerEqualPriority).
var submittedAt = metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))

func judge(sc *scenario) (verdict, error) {
	ctx := context.Background()
	c, err := decodeCluster(sc.Objects)
	if err != nil {
		return verdict{}, err
	}
	job, err := decodeJob(sc.Workload)
	if err != nil {
		return verdict{}, err
	}
	obj := job.Object()

	ns := c.namespace(obj.GetNamespace())
	if ns == nil {
		return verdict{Stage: "unmanaged", Reason: fmt.Sprintf("namespace %q does not exist", obj.GetNamespace())}, nil
	}
	managed, err := c.managedNamespace(ns)
	if err != nil {
		return verdict{}, err
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if !slices.Contains(c.config.Integrations.Frameworks, frameworkOf[kind]) {
		return verdict{Stage: "unmanaged", Reason: fmt.Sprintf("integration %s is not enabled", frameworkOf[kind])}, nil
	}

	env, err := newEnv(ctx, c)
	if err != nil {
		return verdict{}, err
	}
	// Kueue's own mutating webhook runs after eval-admission's: the default
	// LocalQueue and the default WorkloadPriorityClass.
	sel, err := metav1.LabelSelectorAsSelector(c.config.ManagedJobsNamespaceSelector)
	if err != nil {
		return verdict{}, err
	}
	if err := applyDefaultLocalQueue(ctx, env.client, obj, env.queues.DefaultLocalQueueExist, sel); err != nil {
		return verdict{}, err
	}
	applyDefaultWorkloadPriorityClass(ctx, env.client, obj)
	// Then the job controller (jobframework JobReconciler.ReconcileGenericJob):
	// the namespace, for a job with a queue name only under
	// ManagedJobsNamespaceSelectorAlwaysRespected (beta, on, from v0.15; locked
	// on in v0.19; not in v0.12: selectorAlwaysRespected), then the queue name.
	labelled := jobframework.QueueName(job) != ""
	if !managed && (!labelled || selectorAlwaysRespected()) {
		return verdict{Stage: "unmanaged", Reason: "namespace not selected by managedJobsNamespaceSelector"}, nil
	}
	if !labelled && !c.config.ManageJobsWithoutQueueName {
		return verdict{Stage: "unmanaged", Reason: "no queue-name label: Kueue ignores the job"}, nil
	}

	wl, err := buildWorkload(ctx, env.client, job)
	if err != nil {
		return verdict{Stage: "no-workload", Reason: err.Error()}, nil
	}
	// The fake client stores anything; the API server validates the Workload.
	if err := validateCreate(kueue.SchemeGroupVersion.WithKind("Workload"), wl); err != nil {
		return verdict{Stage: "no-workload", Reason: "the API server refuses the Workload: " + err.Error()}, nil
	}
	admitted, reason, err := admitAlone(c, env, wl)
	if err != nil {
		return verdict{}, err
	}
	if admitted == nil {
		return verdict{Stage: "pending", Reason: reason}, nil
	}
	v := verdict{Admissible: true, Stage: "admitted"}
	exposedBy, evictReason, probes, err := exposure(ctx, c, wl, admitted)
	if err != nil {
		return verdict{}, err
	}
	v.Probes = probes
	exposed := exposedBy != ""
	v.Exposed = &exposed
	v.Preemptor, v.EvictionReason = exposedBy, evictReason
	return v, nil
}

func decodeJob(raw []byte) (jobframework.GenericJob, error) {
	raw, err := crdDefaults.apply(raw)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	obj, _, err := decoder.Decode(raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	var job jobframework.GenericJob
	switch o := obj.(type) {
	case *batchv1.Job:
		defaultJobSpec(&o.Spec)
		job = (*jobjob.Job)(o)
	case *jobsetapi.JobSet:
		for i := range o.Spec.ReplicatedJobs {
			defaultJobSpec(&o.Spec.ReplicatedJobs[i].Template.Spec)
		}
		job = (*jobjobset.JobSet)(o)
	default:
		return nil, fmt.Errorf("workload: %T is neither a batch/v1 Job nor a JobSet", obj)
	}
	o := job.Object()
	if o.GetUID() == "" {
		o.SetUID(types.UID("uid-" + o.GetName()))
	}
	o.SetCreationTimestamp(submittedAt)
	return job, nil
}

// defaultJobSpec applies the API server's defaults for the fields Kueue reads
// to count pods (k8s.io/kubernetes pkg/apis/batch/v1 SetDefaults_Job):
// parallelism 1, and completions 1 when both are unset.
func defaultJobSpec(spec *batchv1.JobSpec) {
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To[int32](1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To[int32](1)
	}
}

// buildWorkload is what the job reconciler does for a job without a Workload:
// jobframework.ConstructWorkload, then the priority (JobReconciler.prepareWorkload).
func buildWorkload(ctx context.Context, cl client.Client, job jobframework.GenericJob) (*kueue.Workload, error) {
	wl, err := constructWorkload(ctx, cl, job)
	if err != nil {
		return nil, err
	}
	var custom func() string
	if withClass, ok := job.(jobframework.JobWithPriorityClass); ok {
		custom = withClass.PriorityClass
	}
	if err := prepareWorkloadPriority(ctx, cl, job.Object(), wl, custom); err != nil {
		return nil, err
	}
	wl.CreationTimestamp = submittedAt
	wl.UID = types.UID("wl-" + string(job.Object().GetUID()))
	return wl, nil
}

// admitAlone submits the Workload into the otherwise idle set-up and runs the
// scheduler. Not admitted: Kueue's reason, from the Workload's QuotaReserved
// condition, the missing queue, or the ClusterQueue's readiness.
func admitAlone(c *cluster, env *kueueEnv, wl *kueue.Workload) (*kueue.Workload, string, error) {
	if err := env.submit(wl.DeepCopy()); err != nil {
		return nil, "", err
	}
	if err := env.cycles(admissionCycles); err != nil {
		return nil, "", err
	}
	got, err := env.get(wl.Name, wl.Namespace)
	if err != nil {
		return nil, "", err
	}
	if hasQuota(got) {
		return got, "", nil
	}
	if !env.queues.QueueForWorkloadExists(got) {
		return nil, fmt.Sprintf("LocalQueue %s doesn't exist", got.Spec.QueueName), nil
	}
	for _, lq := range c.localQueues {
		if lq.Namespace == got.Namespace && lq.Name == string(got.Spec.QueueName) {
			if lq.Spec.StopPolicy != nil && *lq.Spec.StopPolicy != kueue.None {
				return nil, fmt.Sprintf("LocalQueue %s is stopped (stopPolicy %s)", lq.Name, *lq.Spec.StopPolicy), nil
			}
			if status, why, msg := env.cache.ClusterQueueReadiness(lq.Spec.ClusterQueue); status != metav1.ConditionTrue {
				return nil, fmt.Sprintf("ClusterQueue %s is inactive: %s: %s", lq.Spec.ClusterQueue, why, msg), nil
			}
		}
	}
	for _, cond := range got.Status.Conditions {
		if cond.Type == kueue.WorkloadQuotaReserved && cond.Status == metav1.ConditionFalse {
			return nil, cond.Message, nil
		}
	}
	if msg, ok := noFitReason(env.queues, got); ok {
		return nil, msg, nil
	}
	return nil, "never given quota", nil
}

func hasQuota(wl *kueue.Workload) bool { return workload.HasQuotaReservation(wl) }

func evicted(wl *kueue.Workload) bool {
	return metaCondition(wl, kueue.WorkloadEvicted) != nil
}

func metaCondition(wl *kueue.Workload, kind string) *metav1.Condition {
	for i := range wl.Status.Conditions {
		c := &wl.Status.Conditions[i]
		if c.Type == kind && c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return nil
}

var errNotReadmitted = errors.New("the evaluation was not admitted again in a fresh set-up (nondeterministic scheduling?)")
