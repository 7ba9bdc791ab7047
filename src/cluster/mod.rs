//! The cluster view: what the rules may know about the cluster.
//!
//! [`ClusterView`] is the lookup interface the rules are written against.
//! [`ClusterState`] implements it with plain maps; it is filled either from a
//! state file ([`state_file`]) or, in a cluster, by the watch caches in
//! [`crate::cache`], which hold it behind a lock and keep it current.

pub mod active;
pub mod cohort_tree;
pub mod kueue_config;
pub mod objects;
pub mod placement;
pub mod priorities;
pub mod quota;
pub mod reclaim;
pub mod selector;
mod served;
mod state;
pub mod state_file;
mod view;

pub use objects::{
    ClusterObject, ClusterQueue, Cohort, LocalQueue, NamespaceInfo, NamespaceSelector, OwnerKey, PriorityClass,
    ReclaimWithinCohort, ResourceFlavor, ResourceGroup, StopPolicy, WithinClusterQueue,
};
pub use state::{ClusterState, ObjectCounts};
pub use view::{Absent, ClaimedOwner, ClusterView, InNamespace, WithPriorityClass};
