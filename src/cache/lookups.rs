//! The cache as [`admission::Lookups`] for what reads the live cluster outside
//! a review's deadline (the audit, the commands): the view, and a live GET of
//! an object it lacks within [`LOOKUP_TIMEOUT`]. Reviews have their own, held
//! to the API server's deadline (`server::routes`).

use std::ops::Deref;
use std::time::Duration;

use super::{ClusterCache, Confirmation};
use crate::admission::{BadReview, Lookups};
use crate::cluster::{Absent, ClusterState};
use crate::error::Error;

/// How long one live lookup of an object the view lacks may take.
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

impl Lookups for ClusterCache {
    type View = ClusterState;
    type Error = Error;

    fn view(&self) -> impl Deref<Target = ClusterState> + '_ {
        self.read()
    }

    /// Throttled lookups (`confirm`) answer from the view, as a review's do.
    async fn confirm_absent(&self, namespace: &str, absent: &Absent) -> Result<bool, Error> {
        let found = ClusterCache::confirm_absent(self, namespace, absent, LOOKUP_TIMEOUT)
            .await
            .map_err(|e| Error::Cluster(e.to_string()))?;
        Ok(found == Confirmation::Found)
    }

    async fn decide<R>(&self, work: impl FnOnce() -> R + Send) -> Result<R, Error> {
        Ok(work())
    }
}

impl From<BadReview> for Error {
    fn from(BadReview(reason): BadReview) -> Self {
        Self::Request(reason)
    }
}
