//! The cluster view the server reads: a [`ClusterState`] behind a lock, filled
//! once from a state file or kept current by the watch caches in [`watch`].

mod confirm;
pub mod evaluations;
mod lookups;
pub mod watch;

pub use confirm::{CONFIRMS_PER_SECOND, Confirmation};
pub use lookups::LOOKUP_TIMEOUT;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, RwLockReadGuard, Weak};
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DynamicObject};

use crate::cluster::Absent;
use crate::cluster::{ClusterObject, ClusterState, ObjectCounts, OwnerKey, objects};
use crate::vocabulary::kueue::{DeployedRelease, KueueInstall};

/// A live lookup that could not say whether an object exists.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    #[error("timed out {0}")]
    Timeout(String),
    #[error("{what}: {source}")]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
}

pub struct ClusterCache {
    state: RwLock<ClusterState>,
    /// Kinds whose first list has not completed; empty means synced.
    pending: Mutex<HashSet<&'static str>>,
    live: Option<LiveLookup>,
    /// Why the served Kueue API says the cluster runs another release than
    /// the config's `kueue.version` (`ServedKueueApi::contradicts`).
    release_warning: Mutex<Option<String>>,
    /// What Kueue's Deployment says of its release (`None`: not read, as
    /// from a state file).
    deployed_release: Mutex<Option<DeployedRelease>>,
    derivation: Derivation,
    /// Whether every kind has synced, for reviews that wait for it.
    synced: tokio::sync::watch::Sender<bool>,
    confirms: confirm::ConfirmGate,
}

/// What is derived from the view ([`ClusterState::derive`]) is worked out off
/// the review path, by a thread of its own, in steps short enough that a
/// watch update waiting for the lock, and the reviews behind it, never wait
/// long. A review that comes first derives what it needs itself.
#[derive(Default)]
struct Derivation {
    /// Changes made to the view, and the count the last derivation to finish started from.
    changes: AtomicU64,
    derived_at: AtomicU64,
    /// Set once a derivation that started with the view synced has finished: readiness waits for it.
    ready: AtomicBool,
    /// The last derivation's duration, in nanoseconds.
    last_nanos: AtomicU64,
    wake: (Mutex<()>, Condvar),
}

/// How long the deriver waits after a change for more before it starts: a
/// burst of watch events is derived once.
const DERIVE_AFTER: Duration = Duration::from_millis(10);

/// What the confirm-before-deny lookup needs: a client, and the Kueue resources
/// in the versions the watch caches chose (none while Kueue is absent).
struct LiveLookup {
    client: kube::Client,
    kueue_resources: Mutex<HashMap<&'static str, ApiResource>>,
    /// Owner kinds as discovery last found them served, by (group, kind).
    owner_resources: Mutex<HashMap<(String, String), ApiResource>>,
}

impl ClusterCache {
    /// A fixed view from a state file: synced and derived from the start, no live lookups.
    pub fn from_state(state: ClusterState) -> Self {
        let cache = Self::new(state, &[], None);
        cache.rederive();
        cache
    }

    /// A fixed view that reports synced only once told `set_synced` for each
    /// of `pending`: a live view's start, without a cluster.
    #[cfg(test)]
    pub(crate) fn unsynced(state: ClusterState, pending: &[&'static str]) -> Self {
        Self::new(state, pending, None)
    }

    /// An empty view that watch caches will fill; not synced until they report.
    pub fn live(client: kube::Client, initial_pending: &[&'static str], kueue: KueueInstall) -> Self {
        let live = LiveLookup {
            client,
            kueue_resources: Mutex::new(HashMap::new()),
            owner_resources: Mutex::new(HashMap::new()),
        };
        Self::new(ClusterState::for_kueue(kueue), initial_pending, Some(live))
    }

    fn new(state: ClusterState, pending: &[&'static str], live: Option<LiveLookup>) -> Self {
        Self {
            state: RwLock::new(state),
            pending: Mutex::new(pending.iter().copied().collect()),
            live,
            release_warning: Mutex::default(),
            deployed_release: Mutex::default(),
            derivation: Derivation::default(),
            synced: tokio::sync::watch::Sender::new(pending.is_empty()),
            confirms: confirm::ConfirmGate::default(),
        }
    }

    /// The current view. Hold the guard only while deciding: never across an await.
    pub fn read(&self) -> RwLockReadGuard<'_, ClusterState> {
        self.state.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn update<R>(&self, change: impl FnOnce(&mut ClusterState) -> R) -> R {
        let mut state = self.state.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        let changed = change(&mut state);
        drop(state);
        self.changed();
        changed
    }

    /// Changes made to the view so far: the audit judges again when it moves.
    pub fn changes(&self) -> u64 {
        self.derivation.changes.load(Ordering::SeqCst)
    }

    /// Tells the deriver the view changed (or synced: readiness waits for a
    /// derivation that started synced).
    fn changed(&self) {
        self.derivation.changes.fetch_add(1, Ordering::SeqCst);
        // Under the deriver's lock, so the change cannot slip between its check and its wait.
        let (lock, wake) = &self.derivation.wake;
        let _waiting = lock.lock().unwrap_or_else(|p| p.into_inner());
        wake.notify_all();
    }

    /// Derives what the view lacks, step by step, each step under the lock
    /// alone; starts again when the view changes meanwhile. Returns once a
    /// derivation finished on a view no change followed.
    pub fn rederive(&self) {
        loop {
            let started = Instant::now();
            let at = self.derivation.changes.load(Ordering::SeqCst);
            let synced = self.is_synced();
            let mut step = Some(0);
            while let Some(next) = step {
                if self.derivation.changes.load(Ordering::SeqCst) != at {
                    break;
                }
                step = self.read().derive_step(next);
            }
            if step.is_none() && self.derivation.changes.load(Ordering::SeqCst) == at {
                let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                self.derivation.last_nanos.store(nanos, Ordering::Relaxed);
                self.derivation.derived_at.store(at, Ordering::SeqCst);
                if synced {
                    self.derivation.ready.store(true, Ordering::SeqCst);
                }
                return;
            }
        }
    }

    /// Starts the thread that derives after each change (it ends with the cache).
    pub fn derive_in_background(self: &Arc<Self>) {
        let cache: Weak<Self> = Arc::downgrade(self);
        let spawned = std::thread::Builder::new().name("derive".into()).spawn(move || {
            let mut derived: Option<u64> = None;
            loop {
                let Some(cache) = cache.upgrade() else { return };
                let now = cache.derivation.changes.load(Ordering::SeqCst);
                if derived == Some(now) {
                    // Wait for a change; wake now and then to notice the cache is gone.
                    let (lock, wake) = &cache.derivation.wake;
                    let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
                    let _ = wake.wait_timeout_while(guard, Duration::from_secs(1), |_| {
                        cache.derivation.changes.load(Ordering::SeqCst) == now
                    });
                    continue;
                }
                std::thread::sleep(DERIVE_AFTER);
                cache.rederive();
                derived = Some(cache.derivation.derived_at.load(Ordering::SeqCst));
            }
        });
        if let Err(error) = spawned {
            tracing::error!(%error, "could not start the derivation thread: reviews derive what they need");
            self.derivation.ready.store(true, Ordering::SeqCst);
        }
    }

    /// Whether a derivation has finished since the view first synced.
    pub fn is_derived(&self) -> bool {
        self.derivation.ready.load(Ordering::SeqCst)
    }

    /// Whether what is derived is of the view as it is now.
    pub fn is_current(&self) -> bool {
        self.derivation.derived_at.load(Ordering::SeqCst) == self.derivation.changes.load(Ordering::SeqCst)
    }

    /// How long the last derivation took.
    pub fn last_derivation(&self) -> Duration {
        Duration::from_nanos(self.derivation.last_nanos.load(Ordering::Relaxed))
    }

    pub fn is_synced(&self) -> bool {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }

    /// The kinds whose first list has not completed, sorted: what readiness waits for.
    pub fn pending_kinds(&self) -> Vec<&'static str> {
        let mut pending: Vec<_> = self.pending.lock().unwrap_or_else(|p| p.into_inner()).iter().copied().collect();
        pending.sort_unstable();
        pending
    }

    /// Waits until every kind has synced.
    pub async fn synced(&self) {
        // `wait_for` sees the value when called, so a sync just before is not missed.
        let _ = self.synced.subscribe().wait_for(|synced| *synced).await;
    }

    pub fn set_pending(&self, kind: &'static str) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.insert(kind);
        self.synced.send_replace(false);
    }

    pub fn set_synced(&self, kind: &'static str) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let removed = pending.remove(kind);
        self.synced.send_replace(pending.is_empty());
        drop(pending);
        if removed {
            self.changed();
        }
    }

    /// Why the cluster runs another Kueue release than configured, as its
    /// served API and its Deployment say.
    pub fn release_warnings(&self) -> Vec<String> {
        let api = self.release_warning.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let deployment = match self.deployed_release() {
            Some(DeployedRelease::Contradicted(why)) => Some(why),
            _ => None,
        };
        api.into_iter().chain(deployment).collect()
    }

    /// Why the release cannot be confirmed from Kueue's Deployment, if it cannot.
    pub fn release_unknown(&self) -> Option<String> {
        match self.deployed_release() {
            Some(DeployedRelease::Unknown(why)) => Some(why),
            _ => None,
        }
    }

    pub fn release_confirmed(&self) -> bool {
        matches!(self.deployed_release(), Some(DeployedRelease::Confirmed(_)))
    }

    /// Whether Kueue's Deployment has been read (or found unreadable) at all.
    pub(crate) fn deployed_release_read(&self) -> bool {
        self.deployed_release().is_some()
    }

    fn deployed_release(&self) -> Option<DeployedRelease> {
        self.deployed_release.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records what Kueue's Deployment says; true when that changed.
    pub(crate) fn set_deployed_release(&self, said: DeployedRelease) -> bool {
        let mut deployed = self.deployed_release.lock().unwrap_or_else(|p| p.into_inner());
        deployed.replace(said.clone()) != Some(said)
    }

    pub(crate) fn set_release_warning(&self, warning: Option<String>) {
        *self.release_warning.lock().unwrap_or_else(|p| p.into_inner()) = warning;
    }

    pub fn counts(&self) -> ObjectCounts {
        self.read().counts()
    }

    /// Records the version a Kueue kind is served in, for the live lookups.
    pub(crate) fn set_kueue_resource(&self, kind: &'static str, resource: ApiResource) {
        if let Some(live) = &self.live {
            live.kueue_resources.lock().unwrap_or_else(|p| p.into_inner()).insert(kind, resource);
        }
    }

    /// Records (or, with `None`, forgets) the resource an owner kind is served as.
    pub(crate) fn set_owner_resource(&self, api_group: &str, kind: &str, resource: Option<ApiResource>) {
        if let Some(live) = &self.live {
            let mut resources = live.owner_resources.lock().unwrap_or_else(|p| p.into_inner());
            let key = (api_group.to_string(), kind.to_string());
            match resource {
                Some(resource) => resources.insert(key, resource),
                None => resources.remove(&key),
            };
        }
    }

    /// Kueue was removed: nothing of it to look up.
    pub(crate) fn forget_kueue_resources(&self) {
        if let Some(live) = &self.live {
            live.kueue_resources.lock().unwrap_or_else(|p| p.into_inner()).clear();
        }
    }

    /// Looks an object a denial found missing up on the API server, since the
    /// watch cache may lag one created a moment ago (a Namespace, its LocalQueue
    /// and a Job applied together). A found object goes into the view.
    /// Without a live cluster the view is authoritative: `Absent`. Lookups of
    /// one object at once are one GET, and GETs are rationed (`confirm`).
    pub async fn confirm_absent(
        &self,
        namespace: &str,
        absent: &Absent,
        timeout: Duration,
    ) -> Result<Confirmation, LookupError> {
        let Some(live) = &self.live else { return Ok(Confirmation::Absent) };
        let key = format!("{namespace}/{absent:?}");
        match self.confirms.confirm(key, self.look_up(live, namespace, absent, timeout)).await {
            Ok(true) => Ok(Confirmation::Found),
            Ok(false) => Ok(Confirmation::Absent),
            Err(confirm::Unanswered::Throttled) => Ok(Confirmation::Throttled),
            Err(confirm::Unanswered::Failed(error)) => Err(error),
        }
    }

    async fn look_up(
        &self,
        live: &LiveLookup,
        namespace: &str,
        absent: &Absent,
        timeout: Duration,
    ) -> Result<bool, LookupError> {
        let (kind, name) = match absent {
            Absent::Owner(claimed) => return self.confirm_owner(live, &claimed.owner, &claimed.uid, timeout).await,
            Absent::LocalQueue(name) => ("LocalQueue", name),
            Absent::ClusterQueue(name) => ("ClusterQueue", name),
            Absent::WorkloadPriorityClass(name) => ("WorkloadPriorityClass", name),
            Absent::PriorityClass(name) => ("PriorityClass", name),
            Absent::ResourceFlavor(name) => ("ResourceFlavor", name),
            Absent::AdmissionCheck(name) => ("AdmissionCheck", name),
        };
        let what = || format!("confirming {kind} {name}");
        let found = if kind == "PriorityClass" {
            let api: Api<k8s_openapi::api::scheduling::v1::PriorityClass> = Api::all(live.client.clone());
            let found = tokio::time::timeout(timeout, api.get_opt(name))
                .await
                .map_err(|_| LookupError::Timeout(what()))?
                .map_err(|source| LookupError::Api { what: what(), source })?;
            found.map(|class| ("scheduling.k8s.io/v1".to_string(), serde_json::to_value(class)))
        } else {
            let resource = live.kueue_resources.lock().unwrap_or_else(|p| p.into_inner()).get(kind).cloned();
            let Some(resource) = resource else { return Ok(false) };
            let api: Api<DynamicObject> = if kind == "LocalQueue" {
                Api::namespaced_with(live.client.clone(), namespace, &resource)
            } else {
                Api::all_with(live.client.clone(), &resource)
            };
            let found = tokio::time::timeout(timeout, api.get_opt(name))
                .await
                .map_err(|_| LookupError::Timeout(what()))?
                .map_err(|source| LookupError::Api { what: what(), source })?;
            found.map(|object| (resource.api_version.clone(), serde_json::to_value(object)))
        };
        let Some((api_version, Ok(value))) = found else { return Ok(false) };
        match objects::decode(&api_version, kind, value) {
            Ok(Some(decoded)) => {
                self.update(|state| state.apply(decoded));
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Looks up the owner a workload's reference names (its metadata only).
    /// `Ok(true)` only when it exists with the uid the reference names; what is
    /// found joins the view either way. A kind the API server does not serve
    /// has no objects: `Ok(false)`.
    async fn confirm_owner(
        &self,
        live: &LiveLookup,
        owner: &OwnerKey,
        uid: &str,
        timeout: Duration,
    ) -> Result<bool, LookupError> {
        let what = || format!("confirming {} {}/{}", owner.kind, owner.namespace, owner.name);
        let lookup = async {
            let known = live
                .owner_resources
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&(owner.api_group.clone(), owner.kind.clone()))
                .cloned();
            let resource = match known {
                Some(resource) => resource,
                None => match served_resource(&live.client, &owner.api_group, &owner.kind).await? {
                    Some(resource) => resource,
                    None => return Ok(None),
                },
            };
            let api: Api<DynamicObject> = Api::namespaced_with(live.client.clone(), &owner.namespace, &resource);
            api.get_metadata_opt(&owner.name).await
        };
        let found = tokio::time::timeout(timeout, lookup)
            .await
            .map_err(|_| LookupError::Timeout(what()))?
            .map_err(|source| LookupError::Api { what: what(), source })?;
        let Some(found_uid) = found.and_then(|meta| meta.metadata.uid) else { return Ok(false) };
        let matches = found_uid == uid;
        self.update(|state| state.apply(ClusterObject::Owner { key: owner.clone(), uid: found_uid }));
        Ok(matches)
    }
}

/// The resource `kind` of `api_group` is served as, in the group's preferred
/// version; `None` when the API server does not serve it.
pub async fn served_resource(
    client: &kube::Client,
    api_group: &str,
    kind: &str,
) -> Result<Option<ApiResource>, kube::Error> {
    match kube::discovery::group(client, api_group).await {
        Ok(group) => Ok(group.recommended_kind(kind).map(|(resource, _)| resource)),
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_release_is_told_from_the_served_api_and_the_deployment() {
        let cache = ClusterCache::from_state(ClusterState::default());
        assert!(cache.release_warnings().is_empty() && cache.release_unknown().is_none() && !cache.release_confirmed());
        assert!(!cache.deployed_release_read());
        cache.set_release_warning(Some("by the API".into()));
        assert!(cache.set_deployed_release(DeployedRelease::Contradicted("by the Deployment".into())));
        assert!(!cache.set_deployed_release(DeployedRelease::Contradicted("by the Deployment".into())), "unchanged");
        assert_eq!(cache.release_warnings(), ["by the API", "by the Deployment"]);
        assert!(cache.set_deployed_release(DeployedRelease::Unknown("by digest".into())));
        assert_eq!(cache.release_warnings(), ["by the API"]);
        assert_eq!(cache.release_unknown().as_deref(), Some("by digest"));
        assert!(cache.deployed_release_read());
        assert!(!cache.release_confirmed());
        cache.set_release_warning(None);
        assert!(cache.set_deployed_release(DeployedRelease::Confirmed("v0.19.2".into())));
        assert!(cache.release_confirmed() && cache.release_unknown().is_none() && cache.release_warnings().is_empty());
    }

    #[test]
    fn ready_waits_for_a_derivation_that_started_synced_and_the_deriver_follows_changes() {
        let cache = Arc::new(ClusterCache::new(ClusterState::default(), &["Namespace"], None));
        cache.derive_in_background();
        let eventually = |what: &str, holds: &dyn Fn() -> bool| {
            let deadline = Instant::now() + Duration::from_secs(30);
            while !holds() {
                assert!(Instant::now() < deadline, "never: {what}");
                std::thread::sleep(Duration::from_millis(5));
            }
        };
        let namespace = |name: &str| {
            let value = serde_json::json!({"metadata": {"name": name}});
            objects::decode("v1", "Namespace", value).unwrap().unwrap()
        };
        cache.update(|state| state.apply(namespace("a")));
        eventually("derived while unsynced", &|| cache.is_current());
        assert!(!cache.is_derived(), "not ready before the sync");
        // The sync changes no object; the derivation after it is what readiness waits for.
        cache.set_synced("Namespace");
        eventually("ready after the sync", &|| cache.is_derived());
        cache.update(|state| state.apply(namespace("b")));
        eventually("derived again after a change", &|| cache.is_current());
        assert!(cache.is_derived(), "a change after ready keeps it ready");
        // The thread lets the cache go (it holds it only while it looks), and then ends.
        let weak = Arc::downgrade(&cache);
        drop(cache);
        eventually("the cache dropped", &|| weak.upgrade().is_none());
    }
}
