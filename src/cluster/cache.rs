//! The cluster view the server reads: a [`ClusterState`] behind a lock, filled
//! once from a state file or kept current by the watch caches in [`super::watch`].

use std::collections::HashSet;
use std::sync::{Mutex, RwLock, RwLockReadGuard};
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject};

use super::objects::{self, ClusterObject};
use super::{ClusterState, ObjectCounts};
use crate::error::Error;

pub struct ClusterCache {
    state: RwLock<ClusterState>,
    /// Kinds whose first list has not completed; empty means synced.
    pending: Mutex<HashSet<&'static str>>,
    live: Option<LiveLookup>,
}

/// What the confirm-before-deny lookup needs: a client, and the LocalQueue
/// resource in the version the watch caches chose (None while Kueue is absent).
struct LiveLookup {
    client: kube::Client,
    local_queues: Mutex<Option<ApiResource>>,
}

impl ClusterCache {
    /// A fixed view from a state file: synced from the start, no live lookups.
    pub fn from_state(state: ClusterState) -> Self {
        Self { state: RwLock::new(state), pending: Mutex::new(HashSet::new()), live: None }
    }

    /// An empty view that watch caches will fill; not synced until they report.
    pub fn live(client: kube::Client, initial_pending: &[&'static str]) -> Self {
        Self {
            state: RwLock::new(ClusterState::default()),
            pending: Mutex::new(initial_pending.iter().copied().collect()),
            live: Some(LiveLookup { client, local_queues: Mutex::new(None) }),
        }
    }

    /// The current view. Hold the guard only while deciding: never across an await.
    pub fn read(&self) -> RwLockReadGuard<'_, ClusterState> {
        self.state.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn update<R>(&self, change: impl FnOnce(&mut ClusterState) -> R) -> R {
        let mut state = self.state.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        change(&mut state)
    }

    pub fn is_synced(&self) -> bool {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }

    pub fn set_pending(&self, kind: &'static str) {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).insert(kind);
    }

    pub fn set_synced(&self, kind: &'static str) {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).remove(kind);
    }

    pub fn counts(&self) -> ObjectCounts {
        self.read().counts()
    }

    pub(crate) fn set_local_queue_resource(&self, resource: Option<ApiResource>) {
        if let Some(live) = &self.live {
            *live.local_queues.lock().unwrap_or_else(|p| p.into_inner()) = resource;
        }
    }

    /// Looks a LocalQueue up on the API server before a denial, since the watch
    /// cache may lag a queue created a moment ago (a Namespace, its LocalQueue
    /// and a Job applied together). A found queue goes into the view.
    /// Without a live cluster the view is authoritative: `Ok(false)`.
    pub async fn confirm_local_queue(&self, namespace: &str, name: &str, timeout: Duration) -> Result<bool, Error> {
        let Some(live) = &self.live else { return Ok(false) };
        let resource = live.local_queues.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(resource) = resource else { return Ok(false) };
        let api: Api<DynamicObject> = Api::namespaced_with(live.client.clone(), namespace, &resource);
        let found = tokio::time::timeout(timeout, api.get_opt(name))
            .await
            .map_err(|_| Error::Timeout(format!("confirming LocalQueue {namespace}/{name}")))??;
        let Some(object) = found else { return Ok(false) };
        let Ok(value) = serde_json::to_value(&object) else { return Ok(false) };
        match objects::decode(&resource.api_version, "LocalQueue", value) {
            Ok(Some(decoded @ ClusterObject::LocalQueue { .. })) => {
                self.update(|state| state.apply(decoded));
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}
