//! Watch caches of the cluster objects: filled in by the live server (see server/).
