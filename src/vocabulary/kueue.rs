//! Kueue's names: API groups, labels and annotations it reads, where its
//! Configuration lives, and the kinds it admits as a whole. One home each, so
//! the config, the view and the rules cannot drift apart.

/// The group of Kueue's objects (LocalQueue, ClusterQueue, Cohort, ...).
pub const KUEUE_GROUP: &str = "kueue.x-k8s.io";
/// The CRD whose presence means "Kueue is installed".
pub const LOCAL_QUEUE_CRD: &str = "localqueues.kueue.x-k8s.io";

pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
pub const PRIORITY_CLASS_LABEL: &str = "kueue.x-k8s.io/priority-class";
/// The namespace annotation naming a default queue (not an upstream Kueue feature).
pub const DEFAULT_QUEUE_ANNOTATION: &str = "kueue.x-k8s.io/default-queue-name";
/// Kueue's partial admission annotation on a batch/v1 Job (Kueue v0.19.2
/// `pkg/controller/jobs/job` `JobMinParallelismAnnotation`).
pub const JOB_MIN_PARALLELISM_ANNOTATION: &str = "kueue.x-k8s.io/job-min-parallelism";
/// The name of a Job's only podset in its Kueue Workload (`kueue.DefaultPodSetName`).
pub const DEFAULT_POD_SET_NAME: &str = "main";

/// `DefaultNamespace` in apis/config/v1beta2/defaults.go: where a standard
/// install runs Kueue (used when the Kueue pod has no service-account namespace file).
pub const DEFAULT_NAMESPACE: &str = "kueue-system";
/// The service account of Kueue's controller manager in a standard install.
pub const CONTROLLER_MANAGER: &str = "kueue-controller-manager";
/// The ConfigMap holding Kueue's Configuration, and its key.
pub const CONFIG_MAP: &str = "kueue-manager-config";
pub const CONFIG_MAP_KEY: &str = "controller_manager_config.yaml";

/// The label every Namespace carries with its own name (`corev1.LabelMetadataName`).
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// The kinds Kueue's integrations admit as a whole (Kueue skips Jobs they own):
/// the default of `kueueManagedOwners`, and the owner kinds a state file may list.
pub const DEFAULT_MANAGED_OWNERS: [(&str, &str); 12] = [
    ("jobset.x-k8s.io", "JobSet"),
    ("kubeflow.org", "MPIJob"),
    ("kubeflow.org", "PyTorchJob"),
    ("kubeflow.org", "TFJob"),
    ("kubeflow.org", "XGBoostJob"),
    ("kubeflow.org", "PaddleJob"),
    ("kubeflow.org", "JAXJob"),
    ("trainer.kubeflow.org", "TrainJob"),
    ("ray.io", "RayJob"),
    ("ray.io", "RayCluster"),
    ("workload.codeflare.dev", "AppWrapper"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
];

pub fn is_default_managed_owner(api_group: &str, kind: &str) -> bool {
    DEFAULT_MANAGED_OWNERS.contains(&(api_group, kind))
}

/// The most pod sets a Workload holds (v0.19.2 `apis/kueue/v1beta2/workload_types.go`,
/// `+kubebuilder:validation:MaxItems=18` on `podSets`): the API server refuses
/// a Workload with more, so a JobSet with more replicated jobs is never admitted.
pub const MOST_POD_SETS: usize = 18;
