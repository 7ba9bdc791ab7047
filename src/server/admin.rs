//! The plain-HTTP admin port: liveness, readiness, metrics.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;

use super::routes::text;
use super::shutdown::Shutdown;
use super::tls::CertStore;
use crate::cache::ClusterCache;
use crate::telemetry::Metrics;

#[derive(Clone)]
pub struct AdminState {
    pub cluster: Arc<ClusterCache>,
    pub certificates: Arc<CertStore>,
    pub metrics: Arc<Metrics>,
    pub shutdown: Shutdown,
}

pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/livez", get(|| async { text(StatusCode::OK, "ok\n") }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

/// Ready once the cluster view has synced and been derived, and no longer once shutdown begins,
/// so the Service stops routing reviews here before the listener closes.
///
/// A view that cannot sync (the Kueue CRDs exist but their API cannot be
/// discovered or listed) keeps the replica unready for as long as it lasts:
/// it would otherwise answer from a view without Kueue's objects and refuse
/// evaluations Kueue would admit. With `failurePolicy: Fail` that holds new
/// evaluations back, which is the choice Fail makes; the body names what is
/// waited for, and the log says why.
async fn readyz(State(admin): State<AdminState>) -> Response {
    if admin.shutdown.is_draining() {
        return text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n");
    }
    // Self-managed (--tls-secret): until the Secret's pair is trusted by the webhooks.
    if !admin.certificates.is_serving() {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            "no serving certificate yet: waiting for the Secret's pair and its authority in the webhook configurations\n",
        );
    }
    let pending = admin.cluster.pending_kinds();
    if !pending.is_empty() {
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("cluster view not synced: waiting for {}\n", pending.join(", ")),
        );
    }
    // The first derivation after the sync: until then the first reviews
    // would derive the view themselves, and be the slow ones.
    if !admin.cluster.is_derived() {
        return text(StatusCode::SERVICE_UNAVAILABLE, "cluster view synced, not yet derived\n");
    }
    // Still ready: the release is said, not held against the reviews.
    let mut body = String::from("ok\n");
    for why in admin.cluster.release_warnings() {
        body.push_str(&format!("warning: {why}\n"));
    }
    if let Some(why) = admin.cluster.release_unknown() {
        body.push_str(&format!("note: {why}\n"));
    }
    text(StatusCode::OK, body)
}

async fn metrics(State(admin): State<AdminState>) -> Response {
    admin.metrics.set_cache(admin.cluster.is_synced(), admin.cluster.counts());
    admin.metrics.watchers_running.set(crate::cache::watch::running_watchers());
    admin.metrics.kueue_release_contradicted.set(i64::from(!admin.cluster.release_warnings().is_empty()));
    admin.metrics.kueue_release_confirmed.set(i64::from(admin.cluster.release_confirmed()));
    admin.metrics.view_derivation_seconds.set(admin.cluster.last_derivation().as_secs_f64());
    admin.metrics.view_derived.set(i64::from(admin.cluster.is_current()));
    let mut response = text(StatusCode::OK, admin.metrics.encode());
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    response
}
