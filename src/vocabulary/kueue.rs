//! Kueue's names: API groups, labels and annotations it reads, where its
//! Configuration lives, and the kinds it admits as a whole. One home each, so
//! the config, the view and the rules cannot drift apart.

/// The group of Kueue's objects (LocalQueue, ClusterQueue, Cohort, ...).
pub const KUEUE_GROUP: &str = "kueue.x-k8s.io";
/// The CRD whose presence means "Kueue is installed".
pub const LOCAL_QUEUE_CRD: &str = "localqueues.kueue.x-k8s.io";

pub const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// The same key as an annotation: Kueue before v0.15 reads it where the label
/// is missing or empty ([`KueueVersion::reads_queue_annotation`]).
pub const QUEUE_NAME_ANNOTATION: &str = "kueue.x-k8s.io/queue-name";
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
/// The service account of Kueue's controller manager in a standard install,
/// and its Deployment's name (Kueue's release manifests, its Helm chart
/// installed as `kueue`, and the Red Hat build's operator alike).
pub const CONTROLLER_MANAGER: &str = "kueue-controller-manager";
/// The label Helm charts put on what they install, Kueue's chart its
/// appVersion (`kueue.labels` in charts/kueue/templates/_helpers.tpl).
pub const HELM_VERSION_LABEL: &str = "app.kubernetes.io/version";
/// The repository of upstream Kueue's images, as its release manifests and
/// chart name them (`registry.k8s.io/kueue/kueue:vX.Y.Z`), after the registry.
const UPSTREAM_IMAGE_REPOSITORY: &str = "kueue/kueue";
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

/// The most pod sets a Workload of this release holds
/// (`apis/kueue/*/workload_types.go`, `+kubebuilder:validation:MaxItems` on
/// `podSets`: 8 up to v0.17, 10 in v0.18, 18 from v0.19): the API server
/// refuses a Workload with more, so a JobSet with more replicated jobs is never
/// admitted.
pub fn most_pod_sets(version: KueueVersion) -> usize {
    if version.since(0, 19, 0) {
        18
    } else if version.since(0, 18, 0) {
        10
    } else {
        8
    }
}

/// A Kueue release, `v0.19.2`. The model's version-dependent rules compare
/// against it; each cites the tags its behaviour holds for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KueueVersion {
    pub major: u16,
    pub minor: u16,
    pub patch: u16,
}

impl KueueVersion {
    pub const fn new(major: u16, minor: u16, patch: u16) -> Self {
        Self { major, minor, patch }
    }

    /// The releases the model is written and judged for: the Red Hat build of
    /// Kueue 1.1 pins v0.12.10, and v0.19.2 is the newest the judge builds.
    pub const OLDEST_MODELLED: KueueVersion = KueueVersion::new(0, 12, 0);
    pub const NEWEST_MODELLED: KueueVersion = KueueVersion::new(0, 19, 2);

    /// `v0.19.2` or `0.19.2`; a pre-release or build suffix (`-rc.1`, `+abc`)
    /// is read as its release.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bare = text.strip_prefix('v').unwrap_or(text);
        let release = bare.split(['-', '+']).next().unwrap_or_default();
        let mut parts = release.split('.').map(|part| part.parse::<u16>().ok());
        match (parts.next().flatten(), parts.next().flatten(), parts.next().flatten(), parts.next()) {
            (Some(major), Some(minor), Some(patch), None) => Ok(Self::new(major, minor, patch)),
            _ => Err(format!("'{text}' is not a Kueue release such as v0.19.2")),
        }
    }

    /// Whether the model speaks for this release.
    pub fn is_modelled(self) -> bool {
        (Self::OLDEST_MODELLED..=Self::NEWEST_MODELLED).contains(&self)
            || (self.major, self.minor) == (Self::NEWEST_MODELLED.major, Self::NEWEST_MODELLED.minor)
    }

    /// Whether `jobframework.QueueNameForObject` falls back to the deprecated
    /// queue-name annotation when the label is missing or empty: up to
    /// v0.14.8; from v0.15.0 it reads the label only.
    pub fn reads_queue_annotation(self) -> bool {
        !self.since(0, 15, 0)
    }

    /// Whether the flavor assigner reads a pod template's node selector and
    /// required node affinity on the label keys of every flavor of the
    /// resource group (`ResourceGroup.LabelKeys` in `flavorSelector`) rather
    /// than the flavor's own: before v0.17.6, and in v0.18.0 and v0.18.1
    /// (Kueue #12449 is in v0.17.6 and v0.18.2).
    pub fn reads_group_label_keys(self) -> bool {
        !(self.since(0, 18, 2) || (self.minor == 17 && self.since(0, 17, 6)))
    }

    /// Whether the flavor assigner skips a zero request of a resource no
    /// resource group of the ClusterQueue covers (`FlavorAssigner.assignFlavors`,
    /// Kueue #8241, from v0.16.0): before, `findFlavorForPodSetResource`
    /// answers "resource ... unavailable in ClusterQueue" for it as for any other.
    pub fn skips_uncovered_zero_requests(self) -> bool {
        self.since(0, 16, 0)
    }

    /// At or after `major.minor.patch`.
    pub fn since(self, major: u16, minor: u16, patch: u16) -> bool {
        self >= Self::new(major, minor, patch)
    }
}

/// The newest `kueue.x-k8s.io` version the API server serves for LocalQueue
/// and for Cohort (`None` where no Cohort CRD is served).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServedKueueApi<'a> {
    pub local_queue: &'a str,
    pub cohort: Option<&'a str>,
}

impl ServedKueueApi<'_> {
    /// The releases whose CRDs serve these versions, read from each tag's
    /// `config/components/crd/bases`: LocalQueue is served as v1beta2 from
    /// v0.15.0 (v1beta1 only before); Cohort as v1beta1 from v0.13.0
    /// (v1alpha1 only in v0.12). `(oldest, before)`: at or after the first,
    /// and before the second where there is one.
    pub fn releases(&self) -> (KueueVersion, Option<KueueVersion>) {
        let v0_13 = KueueVersion::new(0, 13, 0);
        let v0_15 = KueueVersion::new(0, 15, 0);
        match (self.local_queue, self.cohort) {
            ("v1beta2", _) => (v0_15, None),
            (_, Some("v1alpha1")) => (KueueVersion::OLDEST_MODELLED, Some(v0_13)),
            (_, Some("v1beta1")) => (v0_13, Some(v0_15)),
            _ => (KueueVersion::OLDEST_MODELLED, Some(v0_15)),
        }
    }

    /// Why `configured` cannot be the release that serves these versions (a
    /// model of the wrong Kueue gives wrong verdicts), or `None` when it can be.
    pub fn contradicts(&self, configured: KueueVersion) -> Option<String> {
        let (oldest, before) = self.releases();
        let range = match before {
            Some(before) => format!("Kueue {oldest} up to {before} (not included)"),
            None => format!("Kueue {oldest} or later"),
        };
        let fits = configured >= oldest && before.is_none_or(|before| configured < before);
        let cohort = self.cohort.map(|version| format!(" and Cohort as {version}")).unwrap_or_default();
        (!fits).then(|| {
            format!(
                "the config's kueue.version is {configured}, but the API server serves LocalQueue as \
                 kueue.x-k8s.io/{}{cohort}, as {range} does: set kueue.version to the release the cluster runs",
                self.local_queue
            )
        })
    }
}

impl Default for KueueVersion {
    fn default() -> Self {
        Self::NEWEST_MODELLED
    }
}

impl std::fmt::Display for KueueVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl<'de> serde::Deserialize<'de> for KueueVersion {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        KueueVersion::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Which Kueue runs the cluster and where: its release, its namespace (where
/// its controller manager runs and its Configuration's ConfigMap lives), that
/// ConfigMap's name, and who it acts as. Upstream's install is the default;
/// the Red Hat build of Kueue runs in `openshift-kueue-operator`. The policy
/// config's `kueue` section, so a field this version does not know is ignored
/// and reported as the config's are (crate::config), unlike in Kueue's own
/// Configuration, which Kueue decodes strictly (cluster::kueue_config).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KueueInstall {
    pub version: KueueVersion,
    pub namespace: String,
    pub config_map: String,
    /// Who Kueue's writes come as (it unsuspends Jobs it admits). Unset: the
    /// controller manager's service account in `namespace`.
    pub controller_usernames: Option<Vec<String>>,
    /// The Deployment of Kueue's controller manager in `namespace`, whose
    /// Helm version label or image tag says which release runs.
    pub deployment: String,
    /// Whether Kueue's webhooks are called only in the namespaces its
    /// managedJobsNamespaceSelector selects. The Red Hat build's are: its
    /// operator sets that selector to `kueue.openshift.io/managed: "true"` and
    /// adds the same label to every namespaced webhook's namespaceSelector
    /// (openshift/kueue-operator pkg/webhook `mergeNamespaceSelectors`), so
    /// Kueue neither defaults a queue nor suspends a job anywhere else.
    pub webhooks_only_in_managed_namespaces: bool,
}

impl Default for KueueInstall {
    fn default() -> Self {
        Self {
            version: KueueVersion::default(),
            namespace: DEFAULT_NAMESPACE.to_string(),
            config_map: CONFIG_MAP.to_string(),
            deployment: CONTROLLER_MANAGER.to_string(),
            controller_usernames: None,
            webhooks_only_in_managed_namespaces: false,
        }
    }
}

impl KueueInstall {
    /// `controllerUsernames`, or the controller manager's service account.
    pub fn controller_usernames(&self) -> Vec<String> {
        match &self.controller_usernames {
            Some(names) => names.clone(),
            None => vec![format!("system:serviceaccount:{}:{CONTROLLER_MANAGER}", self.namespace)],
        }
    }

    /// What Kueue's controller-manager Deployment says of the release it
    /// runs, against `version`. `deployment` is its Helm version label and
    /// its `manager` container's image (the first container's, if none is
    /// named so); `None` when there is no such Deployment.
    pub fn check_deployment(&self, deployment: Option<(Option<&str>, Option<&str>)>) -> DeployedRelease {
        let name = format!("Deployment {}/{}", self.namespace, self.deployment);
        let unknown = |why: String| self.deployment_unreadable(&why);
        let Some((label, image)) = deployment else {
            return unknown("it does not exist".into());
        };
        // Written to /readyz and the log as they are, but for control characters.
        let labelled = label.and_then(|text| {
            let release = KueueVersion::parse(text).ok()?;
            Some((release, format!("its label {HELM_VERSION_LABEL}={}", text.escape_debug())))
        });
        let (release, source) = match (labelled, image) {
            (Some(found), _) => found,
            (None, Some(image)) => match upstream_image_release(image) {
                Some(release) => (release, format!("its image {}", image.escape_debug())),
                None => {
                    return unknown(format!("its image {} names no upstream Kueue release", image.escape_debug()));
                }
            },
            (None, None) => return unknown("it names no image".into()),
        };
        if release == self.version {
            DeployedRelease::Confirmed(format!("{name} runs Kueue {release} ({source})"))
        } else {
            DeployedRelease::Contradicted(format!(
                "the config's kueue.version is {}, but {name} runs Kueue {release} ({source})",
                self.version
            ))
        }
    }

    /// Kueue's Deployment says nothing of the release, for `why`.
    pub fn deployment_unreadable(&self, why: &str) -> DeployedRelease {
        DeployedRelease::Unknown(format!(
            "Kueue's release cannot be read from Deployment {}/{} ({why}): judging by the config's kueue.version, {}",
            self.namespace, self.deployment, self.version
        ))
    }

    pub fn is_controller(&self, username: &str) -> bool {
        match &self.controller_usernames {
            Some(names) => names.iter().any(|name| name == username),
            None => {
                username
                    .strip_prefix("system:serviceaccount:")
                    .and_then(|account| account.strip_prefix(self.namespace.as_str()))
                    .and_then(|account| account.strip_prefix(':'))
                    == Some(CONTROLLER_MANAGER)
            }
        }
    }
}

/// What Kueue's Deployment says of its release, as
/// [`KueueInstall::check_deployment`] reads it; each holds the sentence to log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeployedRelease {
    Confirmed(String),
    Contradicted(String),
    /// No such Deployment, or one whose image names no release (an image by
    /// digest only, as the Red Hat build's are, or a private mirror's tag).
    Unknown(String),
}

/// The release in an upstream Kueue image's tag (`.../kueue/kueue:v0.19.2`,
/// digest or not); any other repository's tags mean something else.
fn upstream_image_release(image: &str) -> Option<KueueVersion> {
    let named = image.split('@').next()?;
    let (repository, tag) = named.rsplit_once(':').filter(|(_, tag)| !tag.contains('/'))?;
    if !repository.ends_with(UPSTREAM_IMAGE_REPOSITORY) || !tag.starts_with('v') {
        return None;
    }
    let before = &repository[..repository.len() - UPSTREAM_IMAGE_REPOSITORY.len()];
    (before.is_empty() || before.ends_with('/')).then(|| KueueVersion::parse(tag).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_order_and_print() {
        let v = |text| KueueVersion::parse(text).unwrap();
        assert_eq!(v("v0.19.2"), KueueVersion::new(0, 19, 2));
        assert_eq!(v("0.12.10").to_string(), "v0.12.10");
        assert_eq!(v("v0.18.5-rc.1"), KueueVersion::new(0, 18, 5));
        assert!(v("v0.12.10") < v("v0.14.8") && v("v0.18.5") < v("v0.19.1"), "numeric, not text, order");
        assert!(v("v0.15.0").since(0, 15, 0) && !v("v0.14.8").since(0, 15, 0));
        for bad in ["", "v0.19", "v0.19.2.1", "latest", "v0.x.1", "v0.19.99999"] {
            assert!(KueueVersion::parse(bad).unwrap_err().contains("is not a Kueue release"), "{bad}");
        }
    }

    #[test]
    fn the_model_speaks_for_v0_12_to_v0_19() {
        let v = |text| KueueVersion::parse(text).unwrap();
        assert!(v("v0.12.0").is_modelled() && v("v0.16.6").is_modelled() && v("v0.19.2").is_modelled());
        assert!(v("v0.19.9").is_modelled(), "a later patch of the newest minor");
        assert!(!v("v0.11.9").is_modelled() && !v("v0.20.0").is_modelled() && !v("v1.19.2").is_modelled());
    }

    #[test]
    fn kueue_12449_reads_each_flavors_own_label_keys_from_v0_17_6_and_v0_18_2() {
        let v = |text| KueueVersion::parse(text).unwrap();
        for (release, group) in
            [("v0.12.10", true), ("v0.16.6", true), ("v0.17.5", true), ("v0.17.6", false), ("v0.18.0", true)]
                .into_iter()
                .chain([("v0.18.1", true), ("v0.18.2", false), ("v0.19.0", false), ("v0.19.2", false)])
        {
            assert_eq!(v(release).reads_group_label_keys(), group, "{release}");
        }
    }

    #[test]
    fn the_served_api_bounds_the_release() {
        let v = |text| KueueVersion::parse(text).unwrap();
        let newest = ServedKueueApi { local_queue: "v1beta2", cohort: Some("v1beta2") };
        assert_eq!(newest.contradicts(v("v0.15.0")), None);
        assert_eq!(newest.contradicts(v("v0.19.2")), None);
        assert_eq!(
            newest.contradicts(v("v0.14.8")).unwrap(),
            "the config's kueue.version is v0.14.8, but the API server serves LocalQueue as kueue.x-k8s.io/v1beta2 \
             and Cohort as v1beta2, as Kueue v0.15.0 or later does: set kueue.version to the release the cluster runs"
        );
        let v0_14 = ServedKueueApi { local_queue: "v1beta1", cohort: Some("v1beta1") };
        assert_eq!(v0_14.contradicts(v("v0.13.0")), None);
        assert_eq!(v0_14.contradicts(v("v0.14.8")), None);
        assert!(
            v0_14.contradicts(v("v0.15.0")).unwrap().contains("as Kueue v0.13.0 up to v0.15.0 (not included) does")
        );
        assert!(v0_14.contradicts(v("v0.12.10")).is_some());
        let v0_12 = ServedKueueApi { local_queue: "v1beta1", cohort: Some("v1alpha1") };
        assert_eq!(v0_12.contradicts(v("v0.12.10")), None);
        assert!(v0_12.contradicts(v("v0.13.0")).is_some());
        let no_cohorts = ServedKueueApi { local_queue: "v1beta1", cohort: None };
        assert_eq!(no_cohorts.contradicts(v("v0.14.8")), None);
        assert!(no_cohorts.contradicts(v("v0.16.6")).is_some());
    }

    #[test]
    fn kueue_acts_as_its_service_account_unless_told_otherwise() {
        let upstream = KueueInstall::default();
        assert_eq!(upstream.controller_usernames(), ["system:serviceaccount:kueue-system:kueue-controller-manager"]);
        let red_hat = KueueInstall { namespace: "openshift-kueue-operator".into(), ..KueueInstall::default() };
        assert_eq!(
            red_hat.controller_usernames(),
            ["system:serviceaccount:openshift-kueue-operator:kueue-controller-manager"]
        );
        assert!(red_hat.is_controller("system:serviceaccount:openshift-kueue-operator:kueue-controller-manager"));
        for other in [
            "system:serviceaccount:kueue-system:kueue-controller-manager",
            "system:serviceaccount:openshift-kueue-operator:kueue-controller-manager2",
            "system:serviceaccount:openshift-kueue-operator-x:kueue-controller-manager",
            "openshift-kueue-operator:kueue-controller-manager",
        ] {
            assert!(!red_hat.is_controller(other), "{other}");
        }
        let none = KueueInstall { controller_usernames: Some(Vec::new()), ..KueueInstall::default() };
        assert!(none.controller_usernames().is_empty() && !none.is_controller(&upstream.controller_usernames()[0]));
    }

    #[test]
    fn kueues_deployment_confirms_contradicts_or_cannot_say_its_release() {
        let install = KueueInstall { version: KueueVersion::parse("v0.18.2").unwrap(), ..KueueInstall::default() };
        let check = |label, image| install.check_deployment(Some((label, image)));
        let confirmed = check(None, Some("registry.k8s.io/kueue/kueue:v0.18.2"));
        assert_eq!(
            confirmed,
            DeployedRelease::Confirmed(
                "Deployment kueue-system/kueue-controller-manager runs Kueue v0.18.2 (its image \
                 registry.k8s.io/kueue/kueue:v0.18.2)"
                    .into()
            )
        );
        assert!(matches!(
            check(None, Some("mirror.example:5000/kueue/kueue:v0.18.2@sha256:ab")),
            DeployedRelease::Confirmed(_)
        ));
        assert!(matches!(check(Some("v0.18.2"), Some("private/kueue:latest")), DeployedRelease::Confirmed(_)));
        assert_eq!(
            check(None, Some("registry.k8s.io/kueue/kueue:v0.18.5")),
            DeployedRelease::Contradicted(
                "the config's kueue.version is v0.18.2, but Deployment kueue-system/kueue-controller-manager runs \
                 Kueue v0.18.5 (its image registry.k8s.io/kueue/kueue:v0.18.5)"
                    .into()
            )
        );
        // Helm's label speaks first; a label that is no release leaves the image to speak.
        assert!(matches!(
            check(Some("v0.19.2"), Some("registry.k8s.io/kueue/kueue:v0.18.2")),
            DeployedRelease::Contradicted(_)
        ));
        assert!(matches!(
            check(Some("main"), Some("registry.k8s.io/kueue/kueue:v0.18.2")),
            DeployedRelease::Confirmed(_)
        ));
        let forged = check(None, Some("x\nwarning: forged"));
        assert!(
            matches!(&forged, DeployedRelease::Unknown(why) if why.contains("its image x\\nwarning: forged names"))
        );
        // The Red Hat build's images are by digest, and other repositories' tags are their own.
        for image in [
            "registry.redhat.io/kueue/kueue-rhel9@sha256:0123",
            "registry.k8s.io/kueue/kueue@sha256:0123",
            "registry.k8s.io/kueue/kueue:main",
            "example.com/notkueue/kueue:v0.18.2",
            "example.com/team/kueue-fork:v0.18.2",
            "example.com/kueue/controller:v0.18.2",
            "registry.k8s.io/kueue/kueue:0.18.2",
            "localhost:5000/kueue/kueue",
        ] {
            let unknown = check(None, Some(image));
            assert_eq!(
                unknown,
                DeployedRelease::Unknown(format!(
                    "Kueue's release cannot be read from Deployment kueue-system/kueue-controller-manager (its image \
                     {image} names no upstream Kueue release): judging by the config's kueue.version, v0.18.2"
                )),
                "{image}"
            );
        }
        assert_eq!(
            install.check_deployment(None),
            DeployedRelease::Unknown(
                "Kueue's release cannot be read from Deployment kueue-system/kueue-controller-manager (it does not \
                 exist): judging by the config's kueue.version, v0.18.2"
                    .into()
            )
        );
    }
}
