//! Watch caches: kube-runtime watchers that keep a [`ClusterCache`] current.
//!
//! Every event is pruned to a [`ClusterObject`] at once, so the cache holds only
//! what the rules read. The LocalQueue CRD is watched too: when Kueue is installed
//! while we run, its watchers start; when it is removed, they stop and the Kueue
//! part of the view is cleared.

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, LimitRange, Namespace};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tokio::task::{JoinHandle, JoinSet};

use super::ClusterCache;
use crate::cluster::OwnerKey;
use crate::cluster::kueue_config::KueueConfig;
use crate::cluster::objects::{self, ClusterObject, NamespaceInfo};
use crate::config::OwnerKind;
use crate::vocabulary::kueue::{
    self, DEFAULT_QUEUE_ANNOTATION, DeployedRelease, KUEUE_GROUP, KueueInstall, LOCAL_QUEUE_CRD, ServedKueueApi,
};

/// Kinds whose first list must complete before the view is synced.
pub const CORE_KINDS: [&str; 6] =
    ["Namespace", "PriorityClass", "LimitRange", "RuntimeClass", "CustomResourceDefinition", "ConfigMap"];
const KUEUE_KINDS: [(&str, &str); 6] = [
    ("LocalQueue", "localqueues"),
    ("ClusterQueue", "clusterqueues"),
    ("Cohort", "cohorts"),
    ("ResourceFlavor", "resourceflavors"),
    ("AdmissionCheck", "admissionchecks"),
    ("WorkloadPriorityClass", "workloadpriorityclasses"),
];
/// Newest first: the first version the API server serves for a kind is used.
const KUEUE_VERSIONS: [&str; 3] = ["v1beta2", "v1beta1", "v1alpha1"];

/// How often the owner kinds' APIs are discovered again (a CRD installed or removed).
const OWNER_DISCOVERY_INTERVAL: Duration = Duration::from_secs(30);

/// Watch tasks running now, for the metrics (and the test that CRD churn leaks none).
static RUNNING_WATCHERS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

pub fn running_watchers() -> i64 {
    RUNNING_WATCHERS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Counts a watch task while it lives (aborted tasks drop it too).
struct Running;

impl Running {
    fn start() -> Self {
        RUNNING_WATCHERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING_WATCHERS.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Starts the watchers; they run until the runtime stops. Every task is owned
/// by a [`JoinSet`] of the task that started it, so aborting a parent aborts
/// everything under it.
pub fn start(
    client: kube::Client,
    cache: Arc<ClusterCache>,
    kueue: KueueInstall,
    owner_kinds: Vec<OwnerKind>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tasks = JoinSet::new();
        tasks.spawn(watch_namespaces(client.clone(), cache.clone()));
        tasks.spawn(watch_priority_classes(client.clone(), cache.clone()));
        tasks.spawn(watch_limit_ranges(client.clone(), cache.clone()));
        tasks.spawn(watch_runtime_classes(client.clone(), cache.clone()));
        tasks.spawn(watch_kueue_config(client.clone(), cache.clone(), kueue.clone()));
        tasks.spawn(watch_kueue_deployment(client.clone(), cache.clone(), kueue));
        tasks.spawn(watch_owners(client.clone(), cache.clone(), owner_kinds));
        watch_kueue_crd(client, cache).await;
    })
}

/// Follows Kueue's ConfigMap (by name only: RBAC grants that one object). An
/// unreadable Configuration keeps the last good one and says so; a missing
/// ConfigMap means the release's manifests' defaults.
async fn watch_kueue_config(client: kube::Client, cache: Arc<ClusterCache>, kueue: KueueInstall) {
    let _running = Running::start();
    let api: Api<ConfigMap> = Api::namespaced(client, &kueue.namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={}", kueue.config_map));
    let stream = watcher::watcher(api, config).default_backoff();
    let prune = move |object: ConfigMap| {
        let text = object.data.as_ref()?.get(kueue::CONFIG_MAP_KEY)?;
        match KueueConfig::parse_for(text, &kueue) {
            Ok(config) => Some(ClusterObject::KueueConfiguration { config: Box::new(config) }),
            Err(error) => {
                tracing::warn!(%error, "Kueue's Configuration cannot be read; keeping the last one");
                None
            }
        }
    };
    follow("ConfigMap", stream, cache, prune, |object| (object.namespace().unwrap_or_default(), object.name_any()))
        .await;
}

/// Follows Kueue's controller-manager Deployment (by name only, as RBAC
/// grants): its Helm version label or image tag confirms or contradicts the
/// configured release, or cannot say (`KueueInstall::check_deployment`).
/// Readiness does not wait for it: it changes what is said, not a verdict.
async fn watch_kueue_deployment(client: kube::Client, cache: Arc<ClusterCache>, kueue: KueueInstall) {
    let _running = Running::start();
    let api: Api<Deployment> = Api::namespaced(client, &kueue.namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={}", kueue.deployment));
    let stream = watcher::watcher(api, config).default_backoff();
    futures::pin_mut!(stream);
    // The Deployment the current (re)list found, until the list completes.
    let mut listed: Option<Option<Deployment>> = None;
    while let Some(event) = stream.next().await {
        let found = match event {
            Ok(Event::Init) => {
                listed = Some(None);
                continue;
            }
            Ok(Event::InitApply(deployment)) => {
                listed = Some(Some(deployment));
                continue;
            }
            Ok(Event::InitDone) => listed.take().flatten(),
            Ok(Event::Apply(deployment)) => Some(deployment),
            Ok(Event::Delete(_)) => None,
            Err(error) => {
                tracing::warn!(%error, "watch of Kueue's Deployment failed; retrying with backoff");
                // Never read (forbidden, say): /readyz says the release is not known, and why.
                if !cache.deployed_release_read() {
                    cache.set_deployed_release(kueue.deployment_unreadable(&error.to_string()));
                }
                continue;
            }
        };
        let said = kueue.check_deployment(found.as_ref().map(release_facts));
        if cache.set_deployed_release(said.clone()) {
            match said {
                DeployedRelease::Contradicted(why) => {
                    tracing::warn!(%why, "the cluster runs another Kueue release than configured")
                }
                DeployedRelease::Unknown(why) => tracing::info!(%why, "Kueue's release is not known"),
                DeployedRelease::Confirmed(what) => tracing::info!(%what, "Kueue's Deployment confirms the release"),
            }
        }
    }
}

/// A Deployment's Helm version label and its `manager` container's image (or
/// its first container's).
fn release_facts(deployment: &Deployment) -> (Option<&str>, Option<&str>) {
    let label = deployment.metadata.labels.as_ref().and_then(|labels| labels.get(kueue::HELM_VERSION_LABEL));
    let containers = deployment.spec.as_ref().and_then(|spec| spec.template.spec.as_ref()).map(|pod| &pod.containers);
    let container =
        containers.and_then(|containers| containers.iter().find(|c| c.name == "manager").or(containers.first()));
    (label.map(String::as_str), container.and_then(|c| c.image.as_deref()))
}

/// Applies one watcher stream to the cache. On a (re)list, objects of this kind
/// that are no longer listed are dropped when the list completes.
async fn follow<K, S>(
    kind: &'static str,
    stream: S,
    cache: Arc<ClusterCache>,
    prune: impl Fn(K) -> Option<ClusterObject>,
    key: impl Fn(&K) -> (String, String),
) where
    S: Stream<Item = Result<Event<K>, watcher::Error>>,
{
    futures::pin_mut!(stream);
    let mut relist: Option<Vec<ClusterObject>> = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => relist = Some(Vec::new()),
            Ok(Event::InitApply(object)) => {
                if let (Some(listed), Some(pruned)) = (relist.as_mut(), prune(object)) {
                    listed.push(pruned);
                }
            }
            Ok(Event::InitDone) => {
                let listed = relist.take().unwrap_or_default();
                cache.update(|state| {
                    state.clear_kind(kind);
                    for object in listed {
                        state.apply(object);
                    }
                });
                cache.set_synced(kind);
                tracing::info!(kind, objects = ?cache.counts(), "watch cache synced");
            }
            Ok(Event::Apply(object)) => {
                if let Some(pruned) = prune(object) {
                    cache.update(|state| state.apply(pruned));
                }
            }
            Ok(Event::Delete(object)) => {
                let (namespace, name) = key(&object);
                cache.update(|state| state.remove(kind, &namespace, &name));
            }
            Err(error) => tracing::warn!(kind, %error, "watch failed; retrying with backoff"),
        }
    }
}

async fn watch_namespaces(client: kube::Client, cache: Arc<ClusterCache>) {
    let _running = Running::start();
    let api: Api<PartialObjectMeta<Namespace>> = Api::all(client);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    let prune = |object: PartialObjectMeta<Namespace>| {
        let default_queue = object.annotations().get(DEFAULT_QUEUE_ANNOTATION).filter(|v| !v.is_empty()).cloned();
        let labels = object.labels().clone();
        Some(ClusterObject::Namespace { name: object.name_any(), info: NamespaceInfo { default_queue, labels } })
    };
    follow("Namespace", stream, cache, prune, |object| (String::new(), object.name_any())).await;
}

async fn watch_priority_classes(client: kube::Client, cache: Arc<ClusterCache>) {
    let _running = Running::start();
    let api: Api<PriorityClass> = Api::all(client);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    let prune = |object: PriorityClass| {
        Some(ClusterObject::PriorityClass {
            name: object.name_any(),
            class: objects::PriorityClass {
                value: object.value,
                global_default: object.global_default.unwrap_or(false),
            },
        })
    };
    follow("PriorityClass", stream, cache, prune, |object| (String::new(), object.name_any())).await;
}

/// LimitRanges in every namespace: their defaults and bounds change what
/// Kueue counts and admits (`workload.AdjustResources`, `ValidateLimitRange`).
async fn watch_limit_ranges(client: kube::Client, cache: Arc<ClusterCache>) {
    let _running = Running::start();
    let api: Api<LimitRange> = Api::all(client);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    let prune = |object: LimitRange| {
        let (namespace, name) = (object.namespace().unwrap_or_default(), object.name_any());
        let value = serde_json::to_value(&object).ok()?;
        match objects::decode("v1", "LimitRange", value) {
            Ok(pruned) => pruned,
            Err(error) => {
                // The object is a user's, and the error may quote it.
                let error = crate::vocabulary::caller_text::CallerText::error(error).to_string();
                tracing::warn!(error = error.as_str(), namespace, name, "LimitRange cannot be read; leaving it out");
                None
            }
        }
    };
    follow("LimitRange", stream, cache, prune, |object| (object.namespace().unwrap_or_default(), object.name_any()))
        .await;
}

/// RuntimeClasses: their overhead adds to what Kueue counts per pod.
async fn watch_runtime_classes(client: kube::Client, cache: Arc<ClusterCache>) {
    let _running = Running::start();
    let api: Api<RuntimeClass> = Api::all(client);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    let prune = |object: RuntimeClass| {
        let name = object.name_any();
        let value = serde_json::to_value(&object).ok()?;
        match objects::decode("node.k8s.io/v1", "RuntimeClass", value) {
            Ok(pruned) => pruned,
            Err(error) => {
                // The object is a user's, and the error may quote it.
                let error = crate::vocabulary::caller_text::CallerText::error(error).to_string();
                tracing::warn!(error = error.as_str(), name, "RuntimeClass cannot be read; leaving it out");
                None
            }
        }
    };
    follow("RuntimeClass", stream, cache, prune, |object| (String::new(), object.name_any())).await;
}

/// Follows the LocalQueue CRD and runs the Kueue watchers while it exists.
async fn watch_kueue_crd(client: kube::Client, cache: Arc<ClusterCache>) {
    let _running = Running::start();
    let api: Api<PartialObjectMeta<CustomResourceDefinition>> = Api::all(client.clone());
    let config = watcher::Config::default().fields(&format!("metadata.name={LOCAL_QUEUE_CRD}"));
    let stream = watcher::watcher(api, config).default_backoff();
    futures::pin_mut!(stream);
    let mut kueue: Option<JoinHandle<()>> = None;
    let mut seen_in_list = false;
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => seen_in_list = false,
            Ok(Event::InitApply(_)) | Ok(Event::Apply(_)) => {
                seen_in_list = true;
                if kueue.as_ref().is_none_or(JoinHandle::is_finished) {
                    tracing::info!("Kueue CRDs present: starting Kueue watchers");
                    for (kind, _) in KUEUE_KINDS {
                        cache.set_pending(kind);
                    }
                    cache.update(|state| state.kueue_installed = true);
                    kueue = Some(tokio::spawn(watch_kueue(client.clone(), cache.clone())));
                }
            }
            Ok(Event::InitDone) => {
                if !seen_in_list {
                    stop_kueue(&cache, kueue.take());
                }
                cache.set_synced("CustomResourceDefinition");
            }
            Ok(Event::Delete(_)) => {
                tracing::info!("Kueue CRDs removed: stopping Kueue watchers");
                stop_kueue(&cache, kueue.take());
            }
            Err(error) => tracing::warn!(%error, "CRD watch failed; retrying with backoff"),
        }
    }
}

fn stop_kueue(cache: &ClusterCache, running: Option<JoinHandle<()>>) {
    if let Some(handle) = running {
        handle.abort();
    }
    for (kind, _) in KUEUE_KINDS {
        cache.set_synced(kind);
    }
    cache.forget_kueue_resources();
    cache.set_release_warning(None);
    cache.update(|state| state.clear_kueue());
}

/// Says, in the log, /readyz and a metric, when the Kueue API the API server
/// serves cannot come from the release the config names: the model would
/// judge by another Kueue's rules.
fn check_release(cache: &ClusterCache, served: &[(&'static str, ApiResource)]) {
    let version_of = |kind| served.iter().find(|(k, _)| *k == kind).map(|(_, resource)| resource.version.as_str());
    let Some(local_queue) = version_of("LocalQueue") else { return };
    let api = ServedKueueApi { local_queue, cohort: version_of("Cohort") };
    let configured = cache.read().kueue().version;
    let warning = api.contradicts(configured);
    match &warning {
        Some(why) => tracing::warn!(%why, "the cluster runs another Kueue release than configured"),
        None => tracing::info!(version = %configured, local_queue, "the served Kueue API fits the configured release"),
    }
    cache.set_release_warning(warning);
}

/// Discovers the served Kueue versions (retrying while a new CRD is being
/// established), then watches each Kueue kind.
async fn watch_kueue(client: kube::Client, cache: Arc<ClusterCache>) {
    let _running = Running::start();
    let mut delay = Duration::from_millis(200);
    let served = loop {
        match served_kueue_resources(&client).await {
            Ok(resources) if resources.iter().any(|(kind, _)| *kind == "LocalQueue") => break resources,
            Ok(_) => tracing::info!("Kueue API not served yet; retrying"),
            Err(error) => tracing::warn!(%error, "Kueue API discovery failed; retrying"),
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(10));
    };
    check_release(&cache, &served);
    // Dropped with this task when the Kueue CRDs go: every per-kind watcher stops with it.
    let mut tasks = JoinSet::new();
    for (kind, _) in KUEUE_KINDS {
        match served.iter().find(|(served_kind, _)| *served_kind == kind) {
            Some((_, resource)) => {
                cache.set_kueue_resource(kind, resource.clone());
                tasks.spawn(watch_kueue_kind(client.clone(), cache.clone(), kind, resource.clone()));
            }
            // An older Kueue without Cohort objects: nothing to wait for.
            None => cache.set_synced(kind),
        }
    }
    while tasks.join_next().await.is_some() {}
}

async fn watch_kueue_kind(client: kube::Client, cache: Arc<ClusterCache>, kind: &'static str, resource: ApiResource) {
    let _running = Running::start();
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    let api_version = resource.api_version.clone();
    let prune = move |object: DynamicObject| {
        let value = serde_json::to_value(&object).ok()?;
        match objects::decode(&api_version, kind, value) {
            Ok(decoded) => decoded,
            Err(error) => {
                // The object is a user's, and the error may quote it.
                let error = crate::vocabulary::caller_text::CallerText::error(error).to_string();
                tracing::warn!(kind, error = error.as_str(), "skipping an object the rules cannot read");
                None
            }
        }
    };
    follow(kind, stream, cache, prune, |object| (object.namespace().unwrap_or_default(), object.name_any())).await;
}

/// Keeps the identities (namespace, name, uid) of the owner kinds Kueue admits
/// as a unit, for the ownership rule: one metadata watch per kind the API
/// server serves, found by discovery now and every [`OWNER_DISCOVERY_INTERVAL`].
/// Not needed for readiness: a miss is confirmed by a live lookup.
async fn watch_owners(client: kube::Client, cache: Arc<ClusterCache>, kinds: Vec<OwnerKind>) {
    let _running = Running::start();
    let mut watchers: JoinSet<()> = JoinSet::new();
    let mut running: std::collections::HashMap<(String, String), (ApiResource, tokio::task::AbortHandle)> =
        std::collections::HashMap::new();
    loop {
        for owner in &kinds {
            let key = (owner.api_group.clone(), owner.kind.clone());
            let served = match super::served_resource(&client, &owner.api_group, &owner.kind).await {
                Ok(served) => served,
                Err(error) => {
                    tracing::debug!(kind = %owner.kind, %error, "owner discovery failed; keeping what runs");
                    continue;
                }
            };
            let current = running.get(&key).map(|(resource, _)| resource.api_version.clone());
            if served.as_ref().map(|resource| resource.api_version.clone()) == current {
                continue;
            }
            if let Some((_, handle)) = running.remove(&key) {
                handle.abort();
                cache.update(|state| state.clear_owners(&owner.api_group, &owner.kind));
            }
            cache.set_owner_resource(&owner.api_group, &owner.kind, served.clone());
            if let Some(resource) = served {
                tracing::info!(kind = %owner.kind, version = %resource.api_version, "watching owners of a Kueue-managed kind");
                let handle =
                    watchers.spawn(watch_owner_kind(client.clone(), cache.clone(), owner.clone(), resource.clone()));
                running.insert(key, (resource, handle));
            }
        }
        while watchers.try_join_next().is_some() {}
        tokio::time::sleep(OWNER_DISCOVERY_INTERVAL).await;
    }
}

async fn watch_owner_kind(client: kube::Client, cache: Arc<ClusterCache>, owner: OwnerKind, resource: ApiResource) {
    let _running = Running::start();
    let api: Api<PartialObjectMeta<DynamicObject>> = Api::all_with(client, &resource);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let key_of = |object: &PartialObjectMeta<DynamicObject>| OwnerKey {
        api_group: owner.api_group.clone(),
        kind: owner.kind.clone(),
        namespace: object.namespace().unwrap_or_default(),
        name: object.name_any(),
    };
    let mut relist: Option<Vec<(OwnerKey, String)>> = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Init) => relist = Some(Vec::new()),
            Ok(Event::InitApply(object)) => {
                if let (Some(listed), Some(uid)) = (relist.as_mut(), object.uid()) {
                    listed.push((key_of(&object), uid));
                }
            }
            Ok(Event::InitDone) => {
                let listed = relist.take().unwrap_or_default();
                cache.update(|state| {
                    state.clear_owners(&owner.api_group, &owner.kind);
                    for (key, uid) in listed {
                        state.apply(ClusterObject::Owner { key, uid });
                    }
                });
            }
            Ok(Event::Apply(object)) => {
                if let Some(uid) = object.uid() {
                    cache.update(|state| state.apply(ClusterObject::Owner { key: key_of(&object), uid }));
                }
            }
            Ok(Event::Delete(object)) => cache.update(|state| state.remove_owner(&key_of(&object))),
            Err(error) => tracing::warn!(kind = %owner.kind, %error, "owner watch failed; retrying with backoff"),
        }
    }
}

/// For each Kueue kind, the newest version the API server serves.
async fn served_kueue_resources(client: &kube::Client) -> Result<Vec<(&'static str, ApiResource)>, kube::Error> {
    let mut found = Vec::new();
    for version in KUEUE_VERSIONS {
        let list = match client.list_api_group_resources(&format!("{KUEUE_GROUP}/{version}")).await {
            Ok(list) => list,
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(error) => return Err(error),
        };
        for (kind, plural) in KUEUE_KINDS {
            let served = list.resources.iter().any(|r| r.name == plural);
            if served && !found.iter().any(|(k, _)| *k == kind) {
                let gvk = GroupVersionKind::gvk(KUEUE_GROUP, version, kind);
                found.push((kind, ApiResource::from_gvk_with_plural(&gvk, plural)));
            }
        }
    }
    Ok(found)
}
