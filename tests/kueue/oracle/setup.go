package main

// Decoding a scenario into typed objects, and an in-process Kueue: fake client,
// cache, queue manager and scheduler wired as cmd/kueue/main.go wires them.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetapi "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/kueue/pkg/controller/core/indexer"

	"eval-admission/tests/kueue/oracle/configapi"
	kueue "eval-admission/tests/kueue/oracle/kueueapi"
	"eval-admission/tests/kueue/oracle/qcache"
	"eval-admission/tests/kueue/oracle/schdcache"
	kueueconfig "sigs.k8s.io/kueue/pkg/config"
	"sigs.k8s.io/kueue/pkg/scheduler"
	"sigs.k8s.io/kueue/pkg/util/routine"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
	"sigs.k8s.io/kueue/pkg/workload"
)

// Where Kueue keeps its Configuration in a standard install.
const (
	kueueConfigNamespace = "kueue-system"
	kueueConfigMap       = "kueue-manager-config"
	kueueConfigKey       = "controller_manager_config.yaml"
)

var (
	objectScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		utilruntime.Must(corev1.AddToScheme(s))
		utilruntime.Must(batchv1.AddToScheme(s))
		utilruntime.Must(schedulingv1.AddToScheme(s))
		utilruntime.Must(nodev1.AddToScheme(s))
		utilruntime.Must(kueue.AddToScheme(s))
		registerOlderAPIs(s)
		utilruntime.Must(jobsetapi.AddToScheme(s))
		return s
	}()
	decoder      = serializer.NewCodecFactory(objectScheme).UniversalDeserializer()
	clientScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		utilruntime.Must(clientgoscheme.AddToScheme(s))
		utilruntime.Must(kueue.AddToScheme(s))
		registerOlderAPIs(s)
		utilruntime.Must(jobsetapi.AddToScheme(s))
		return s
	}()
	clientCodecs = serializer.NewCodecFactory(clientScheme)
	configScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		utilruntime.Must(configapi.AddToScheme(s))
		return s
	}()
)

// cluster is a decoded scenario: the objects Kueue would hold, by kind.
type cluster struct {
	namespaces      []*corev1.Namespace
	flavors         []*kueue.ResourceFlavor
	clusterQueues   []*kueue.ClusterQueue
	cohorts         []*kueue.Cohort
	localQueues     []*kueue.LocalQueue
	admissionChecks []*kueue.AdmissionCheck
	others          []client.Object // priority classes and anything else the client should hold
	config          configapi.Configuration
}

func decodeCluster(raw []json.RawMessage) (*cluster, error) {
	c := &cluster{}
	var configText string
	for i, doc := range raw {
		doc, err := crdDefaults.apply(doc)
		if err != nil {
			return nil, fmt.Errorf("object %d: %w", i+1, err)
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			// Kinds the oracle does not know (CRDs, ...) do not affect Kueue's scheduler.
			if runtime.IsNotRegisteredError(err) {
				continue
			}
			return nil, fmt.Errorf("object %d: %w", i+1, err)
		}
		// A dump of a live cluster (kubectl get -o yaml) carries resource
		// versions; the fake client creates objects only without one.
		if m, err := meta.Accessor(obj); err == nil {
			m.SetResourceVersion("")
			m.SetManagedFields(nil)
		}
		// An older Kueue API version's object, as the API server would serve
		// it to Kueue: converted to the version Kueue takes (toHub).
		if hub, converted, err := toHub(obj); converted || err != nil {
			if err != nil {
				return nil, fmt.Errorf("object %d: %w", i+1, err)
			}
			raw, _ := json.Marshal(hub)
			more, err := decodeCluster([]json.RawMessage{raw})
			if err != nil {
				return nil, err
			}
			c.merge(more)
			continue
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			c.namespaces = append(c.namespaces, o)
		case *corev1.ConfigMap:
			if o.Namespace == kueueConfigNamespace && o.Name == kueueConfigMap {
				configText = o.Data[kueueConfigKey]
			}
		case *kueue.ResourceFlavor:
			c.flavors = append(c.flavors, o)
		case *kueue.ClusterQueue:
			c.clusterQueues = append(c.clusterQueues, o)
		case *kueue.Cohort:
			c.cohorts = append(c.cohorts, o)
		case *kueue.LocalQueue:
			c.localQueues = append(c.localQueues, o)
		case *kueue.AdmissionCheck:
			c.admissionChecks = append(c.admissionChecks, o)
		case *kueue.WorkloadPriorityClass:
			c.others = append(c.others, o)
		case *schedulingv1.PriorityClass:
			c.others = append(c.others, o)
		case *corev1.LimitRange, *nodev1.RuntimeClass:
			// What Kueue adds to a Workload's requests (workload.AdjustResources)
			// and checks them against (workload.ValidateAdmissibility).
			c.others = append(c.others, obj.(client.Object))
		}
	}
	cfg, err := loadConfig(configText)
	if err != nil {
		return nil, fmt.Errorf("kueue configuration: %w", err)
	}
	c.config = cfg
	return c, nil
}

func (c *cluster) merge(o *cluster) {
	c.namespaces = append(c.namespaces, o.namespaces...)
	c.flavors = append(c.flavors, o.flavors...)
	c.clusterQueues = append(c.clusterQueues, o.clusterQueues...)
	c.cohorts = append(c.cohorts, o.cohorts...)
	c.localQueues = append(c.localQueues, o.localQueues...)
	c.admissionChecks = append(c.admissionChecks, o.admissionChecks...)
	c.others = append(c.others, o.others...)
}

// loadConfig reads Kueue's Configuration with Kueue's own loader (defaults and
// all), or Kueue's defaults when the scenario has no kueue-manager-config.
func loadConfig(text string) (configapi.Configuration, error) {
	if text == "" {
		// -default-config: the Configuration Kueue's release ships; else the code's defaults.
		_, cfg, err := kueueconfig.Load(configScheme, *defaultConfig)
		return cfg, err
	}
	f, err := os.CreateTemp("", "kueue-config-*.yaml")
	if err != nil {
		return configapi.Configuration{}, err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(text); err != nil {
		return configapi.Configuration{}, err
	}
	f.Close()
	_, cfg, err := kueueconfig.Load(configScheme, f.Name())
	return cfg, err
}

func (c *cluster) namespace(name string) *corev1.Namespace {
	for _, ns := range c.namespaces {
		if ns.Name == name {
			return ns
		}
	}
	return nil
}

// managedNamespace is the job reconciler's check (jobframework
// JobReconciler.ReconcileGenericJob with the selector cmd/kueue builds by
// metav1.LabelSelectorAsSelector from managedJobsNamespaceSelector).
func (c *cluster) managedNamespace(ns *corev1.Namespace) (bool, error) {
	sel, err := metav1.LabelSelectorAsSelector(c.config.ManagedJobsNamespaceSelector)
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(ns.Labels)), nil
}

// kueueEnv is one in-process Kueue over a fresh fake client.
type kueueEnv struct {
	ctx       context.Context
	log       logr.Logger
	client    client.Client
	cache     *schdcache.Cache
	queues    *qcache.Manager
	scheduler *scheduler.Scheduler
	admitting sync.WaitGroup
	events    *utiltesting.EventRecorder
	// clock ticks one second per scheduling cycle, so quota reservation
	// times (which order preemption candidates, CandidatesOrdering) follow
	// the order of admission even after the API's one-second truncation.
	clock *testingclock.FakeClock
}

func newEnv(ctx context.Context, c *cluster, extra ...client.Object) (*kueueEnv, error) {
	log := logr.Discard()
	objs := make([]client.Object, 0, len(c.namespaces)+len(c.others)+len(extra))
	for _, ns := range c.namespaces {
		objs = append(objs, ns.DeepCopy())
	}
	for _, o := range c.others {
		objs = append(objs, o.DeepCopyObject().(client.Object))
	}
	objs = append(objs, extra...)
	// utiltesting.NewClientBuilder's client (same scheme and indexes), but one
	// scheme for all runs and the plain object tracker: the field-managed one
	// builds a REST mapper of the whole scheme per client, two thirds of a run.
	builder := fake.NewClientBuilder().WithScheme(clientScheme).
		WithObjectTracker(clienttesting.NewObjectTracker(clientScheme, clientCodecs.UniversalDecoder())).
		WithIndex(&kueue.LocalQueue{}, indexer.QueueClusterQueueKey, indexer.IndexQueueClusterQueue).
		WithIndex(&kueue.Workload{}, indexer.WorkloadQueueKey, indexer.IndexWorkloadQueue).
		WithIndex(&kueue.Workload{}, indexer.WorkloadClusterQueueKey, indexer.IndexWorkloadClusterQueue).
		WithIndex(&kueue.Workload{}, indexer.OwnerReferenceUID, indexer.IndexOwnerUID)
	cl := withLimitRangeIndex(builder).
		WithObjects(objs...).
		WithStatusSubresource(&kueue.Workload{}, &kueue.ClusterQueue{}, &kueue.LocalQueue{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: utiltesting.TreatSSAAsStrategicMerge}).
		Build()

	// The cache, queue manager and scheduler options, as the release's
	// cmd/kueue/main.go derives them from the Configuration.
	cacheOpts, queueOpts, schedOpts := kueueOptions(&c.config)
	cache := schdcache.New(cl, cacheOpts...)
	queues := newQueueManager(cl, cache, queueOpts...)

	for _, rf := range c.flavors {
		cache.AddOrUpdateResourceFlavor(log, rf.DeepCopy())
	}
	for _, ac := range c.admissionChecks {
		cache.AddOrUpdateAdmissionCheck(log, ac.DeepCopy())
	}
	for _, co := range c.cohorts {
		if err := cache.AddOrUpdateCohort(co.DeepCopy()); err != nil {
			return nil, fmt.Errorf("cohort %s: %w", co.Name, err)
		}
		queues.AddOrUpdateCohort(ctx, co.DeepCopy())
	}
	for _, cq := range c.clusterQueues {
		if err := cl.Create(ctx, cq.DeepCopy()); err != nil {
			return nil, fmt.Errorf("clusterqueue %s: %w", cq.Name, err)
		}
		if err := cache.AddClusterQueue(ctx, cq.DeepCopy()); err != nil {
			return nil, fmt.Errorf("clusterqueue %s: %w", cq.Name, err)
		}
		if err := queues.AddClusterQueue(ctx, cq.DeepCopy()); err != nil {
			return nil, fmt.Errorf("clusterqueue %s: %w", cq.Name, err)
		}
	}
	for _, lq := range c.localQueues {
		if err := addLocalQueue(ctx, cl, cache, queues, lq); err != nil {
			return nil, err
		}
	}

	env := &kueueEnv{ctx: ctx, log: log, client: cl, cache: cache, queues: queues, events: &utiltesting.EventRecorder{},
		clock: testingclock.NewFakeClock(submittedAt.Add(time.Minute))}
	schedOpts = append(schedOpts, scheduler.WithClock(nil, env.clock))
	env.scheduler = scheduler.New(queues, cache, cl, env.events, append(schedOpts, quotaCheckOptions(&c.config)...)...)
	env.scheduler.SetAdmissionRoutineWrapperForOracle(routine.NewWrapper(
		func() { env.admitting.Add(1) },
		func() { env.admitting.Done() },
	))
	return env, nil
}

func addLocalQueue(ctx context.Context, cl client.Client, cache *schdcache.Cache, queues *qcache.Manager, lq *kueue.LocalQueue) error {
	if err := cl.Create(ctx, lq.DeepCopy()); err != nil {
		return fmt.Errorf("localqueue %s/%s: %w", lq.Namespace, lq.Name, err)
	}
	if err := cache.AddLocalQueue(lq.DeepCopy()); err != nil {
		return fmt.Errorf("localqueue %s/%s: %w", lq.Namespace, lq.Name, err)
	}
	// A stopped LocalQueue never reaches the queue manager, so nothing in it is
	// scheduled (LocalQueueReconciler.Create adds it only with stopPolicy None).
	if ptr.Deref(lq.Spec.StopPolicy, kueue.None) != kueue.None {
		return nil
	}
	if err := queues.AddLocalQueue(ctx, lq.DeepCopy()); err != nil {
		return fmt.Errorf("localqueue %s/%s: %w", lq.Namespace, lq.Name, err)
	}
	return nil
}

// submit creates a Workload and hands it to the queue manager, as Kueue's
// workload controller does on a create event.
func (e *kueueEnv) submit(wl *kueue.Workload) error {
	if err := e.client.Create(e.ctx, wl); err != nil {
		return err
	}
	// WorkloadReconciler.Create: RuntimeClass overhead, LimitRange defaults and
	// limits as missing requests, on the copy the queue manager holds.
	queued := wl.DeepCopy()
	workload.AdjustResources(e.ctx, e.client, queued)
	// An error means no queue holds it (its LocalQueue does not exist): it stays pending.
	_ = queueWorkload(e.queues, e.log, queued)
	return nil
}

// cycles runs scheduling cycles, waiting for each cycle's admissions, and
// feeds every Workload that got quota back into the cache and out of the
// queues, as the workload controller would.
func (e *kueueEnv) cycles(n int) error {
	for range n {
		// Heads blocks while no active ClusterQueue has a workload to pop (the
		// controller waits for an event then); here that means the run is over.
		if !e.headsPending() {
			break
		}
		at := e.clock.Now()
		e.scheduler.ScheduleOnceForOracle(e.ctx)
		e.admitting.Wait()
		e.clock.Step(time.Second)
		var list kueue.WorkloadList
		if err := e.client.List(e.ctx, &list); err != nil {
			return err
		}
		for i := range list.Items {
			wl := &list.Items[i]
			if hasQuota(wl) && !evicted(wl) {
				if quotaReservedByWallClock && e.restampQuotaReservation(wl, at) {
					if err := e.client.Status().Update(e.ctx, wl); err != nil {
						return err
					}
				}
				e.cache.AddOrUpdateWorkload(e.log, wl.DeepCopy())
			}
		}
	}
	return nil
}

// restampQuotaReservation: where the release stamps the QuotaReserved
// condition with the wall clock (quotaReservedByWallClock), the time of the
// cycle that reserved the quota instead, as later releases stamp it from the
// scheduler's clock. In-process every cycle runs within the same wall-clock
// second, so every admitted workload would tie on its quota reservation time
// (preemption.CandidatesOrdering: newest first), where a cluster's admissions
// in separate cycles are seconds apart. Whether it changed the condition.
func (e *kueueEnv) restampQuotaReservation(wl *kueue.Workload, at time.Time) bool {
	cond := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
	if cond == nil || !cond.LastTransitionTime.Time.After(e.clock.Now()) {
		return false // stamped on the judge's own timeline already
	}
	cond.LastTransitionTime = metav1.NewTime(at)
	return true
}

func (e *kueueEnv) headsPending() bool {
	for cq, pending := range e.queues.Dump() {
		if len(pending) > 0 && e.cache.ClusterQueueActive(cq) {
			return true
		}
	}
	return false
}

func (e *kueueEnv) get(name, namespace string) (*kueue.Workload, error) {
	var wl kueue.Workload
	err := e.client.Get(e.ctx, client.ObjectKey{Name: name, Namespace: namespace}, &wl)
	return &wl, err
}
