//! The webhook routes. [`router`] builds them from an [`AppState`], so tests can
//! drive the exact router the server runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use crate::admission::{self, BadReview, Outcome, Webhook};
use crate::cache::{ClusterCache, Confirmation};
use crate::cluster::{Absent, ClusterState};
use crate::config::Config;
use crate::server::body_budget::{BodyBudget, Reservation, SmallBodySlot};
use crate::server::shutdown::Shutdown;
use crate::server::{ReviewError, duration};
use crate::telemetry::{ErrorLabels, Metrics, ReviewLabels, WebhookLabels};

/// Everything a review needs, shared by all connections.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub cluster: Arc<ClusterCache>,
    pub metrics: Arc<Metrics>,
    pub limits: Limits,
    /// Bytes of bodies held at once across connections.
    pub body_budget: BodyBudget,
    /// Reviews decided at once off the async workers ([`Deciders`]).
    pub deciders: Deciders,
    /// Answer every review "allowed" after reading it: the benchmark baseline.
    pub noop: bool,
    /// The shutdown phase: while draining, every HTTP/1.1 answer closes its connection.
    pub shutdown: Shutdown,
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_body_bytes: usize,
    /// Upper bound on one review, body included, when the API server sends no `?timeout=`.
    pub review_deadline: Duration,
    /// Left for the API server out of its own timeout.
    pub deadline_margin: Duration,
    /// The confirm-before-deny LocalQueue lookup.
    pub confirm_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            review_deadline: Duration::from_secs(9),
            deadline_margin: Duration::from_millis(500),
            confirm_timeout: Duration::from_secs(2),
        }
    }
}

/// The largest body accepted by default.
pub const DEFAULT_MAX_BODY_BYTES: usize = admission::MOST_REVIEW_BYTES;
/// The default pool for bodies over [`SMALL_BODY_BYTES`], shared by all connections.
pub const LARGE_BODY_POOL_BYTES: usize = 24 * 1024 * 1024;
/// Bodies up to this size are bounded by the connection cap alone (a 40 KB JobSet CREATE fits).
pub const SMALL_BODY_BYTES: usize = 64 * 1024;
/// Bodies up to this size are decided on the async worker that read them:
/// at the costliest review per KiB (BENCHMARKS.md, section 3c) that is under
/// 2 ms, and handing the worker off costs about 8 us, a twentieth of an
/// EvalHub review. Larger ones are decided off the workers.
pub const INLINE_DECISION_BYTES: usize = 16 * 1024;

/// The reviews decided at once off the async workers: half the cores, at
/// least one, so that large reviews, however many arrive, leave the async
/// workers (which read every body and decide the small ones) cores of their
/// own. A review waits for a decider within its deadline.
#[derive(Debug, Clone)]
pub struct Deciders(Arc<tokio::sync::Semaphore>);

impl Deciders {
    pub fn new(count: usize) -> Self {
        Self(Arc::new(tokio::sync::Semaphore::new(count.max(1))))
    }

    /// Half the cores the process may use, at least one.
    pub fn half_the_cores() -> Self {
        Self::new(std::thread::available_parallelism().map_or(1, usize::from) / 2)
    }
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/mutate", post(|state, request| handle(Webhook::Mutate, state, request)))
        .route("/validate", post(|state, request| handle(Webhook::Validate, state, request)))
        .with_state(state)
}

async fn handle(webhook: Webhook, State(app): State<AppState>, request: Request) -> Response {
    let started = Instant::now();
    let (parts, body) = request.into_parts();
    let version = parts.version;
    let mut response = answer(webhook, &app, parts, body, started).await;
    // The API server keeps its connections to a replica after the endpoints
    // drop it, and would send the next review down one just as the drain
    // closes it (a create fails with "broken pipe"): while draining, tell it to
    // close each connection after its answer, so it dials a ready replica.
    // HTTP/2 has no such header; its graceful shutdown sends GOAWAY instead.
    if app.shutdown.is_draining() && version <= axum::http::Version::HTTP_11 {
        response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    }
    response
}

async fn answer(
    webhook: Webhook,
    app: &AppState,
    parts: axum::http::request::Parts,
    body: Body,
    started: Instant,
) -> Response {
    // One deadline from the first moment: a body that arrives slowly spends the review's time.
    let deadline = started + deadline(query_param(&parts.uri, "timeout"), &app.limits);
    // One small body per connection outside the pool; a request from a test's
    // router, outside any connection, is a connection of its own.
    let slot = parts.extensions.get::<SmallBodySlot>().cloned().unwrap_or_default();
    let result = match read_body(app, &parts.headers, &slot, body, deadline).await {
        Ok((bytes, _held)) if app.noop => noop(&bytes),
        Ok((bytes, _held)) => review(app, webhook, &bytes, deadline).await,
        Err(error) => Err(error),
    };
    let elapsed = started.elapsed();
    app.metrics
        .review_duration
        .get_or_create(&WebhookLabels { webhook: webhook.as_str() })
        .observe(elapsed.as_secs_f64());
    match result {
        Ok(outcome) => {
            if !app.noop {
                record(app, webhook, &outcome, elapsed);
            }
            ([(header::CONTENT_TYPE, "application/json")], outcome.body).into_response()
        }
        Err(error) => {
            let label = ErrorLabels { webhook: webhook.as_str(), error: error.metric_label() };
            app.metrics.review_errors.get_or_create(&label).inc();
            // Escaped, cut and quoted: the error may quote the caller's body.
            let logged = crate::vocabulary::caller_text::CallerText::error(&error).to_string();
            tracing::warn!(webhook = webhook.as_str(), error = logged.as_str(), "review failed");
            error.into_response()
        }
    }
}

/// Reads the body within the deadline, judged first by its declared length
/// alone: over the limit is 413 and a spent budget 429 before a byte is read.
/// The API server always sends `Content-Length`; a body without one is 411.
async fn read_body(
    app: &AppState,
    headers: &HeaderMap,
    slot: &SmallBodySlot,
    body: Body,
    deadline: Instant,
) -> Result<(Vec<u8>, Reservation), ReviewError> {
    let declared = headers.get(header::CONTENT_LENGTH).map(|value| value.to_str().ok()?.parse::<u64>().ok());
    let length = match (declared, axum::body::HttpBody::size_hint(&body).exact()) {
        (Some(Some(length)), _) | (None, Some(length)) => length,
        (Some(None), _) => return Err(ReviewError::BadReview(BadReview("Content-Length is not a number".into()))),
        (None, None) => return Err(ReviewError::LengthRequired),
    };
    let limit = app.limits.max_body_bytes;
    let length =
        usize::try_from(length).ok().filter(|length| *length <= limit).ok_or(ReviewError::BodyTooLarge { limit })?;
    let held =
        app.body_budget.reserve(length, slot).map_err(|spent| ReviewError::Busy { pool_bytes: spent.pool_bytes })?;
    match tokio::time::timeout_at(deadline.into(), collect(body, length)).await {
        Ok(Ok(bytes)) => Ok((bytes, held)),
        Ok(Err(error)) => Err(ReviewError::BadReview(error)),
        Err(_) => Err(ReviewError::BodyDeadline),
    }
}

/// The body copied into one buffer of its declared length as its frames
/// arrive. Keeping the frames instead (`to_bytes`) would keep each one's
/// whole receive buffer: an HTTP/2 client sending 1-byte DATA frames made 4
/// MiB of bodies hold 185 MiB.
async fn collect(mut body: Body, length: usize) -> Result<Vec<u8>, BadReview> {
    use http_body_util::BodyExt as _;
    let mut bytes = Vec::with_capacity(length);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| BadReview(format!("reading the body: {error}")))?;
        if let Some(data) = frame.data_ref() {
            if data.len() > length - bytes.len() {
                return Err(BadReview(format!("the body is longer than its Content-Length, {length} bytes")));
            }
            bytes.extend_from_slice(data);
        }
    }
    Ok(bytes)
}

/// One query parameter, undecoded: the API server sends only `?timeout=10s`.
fn query_param<'u>(uri: &'u Uri, name: &str) -> Option<&'u str> {
    uri.query()?.split('&').find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

/// The API server appends `?timeout=10s`; answer with a margin to spare.
fn deadline(timeout: Option<&str>, limits: &Limits) -> Duration {
    let from_api_server = timeout.and_then(duration::parse).map(|t| t.saturating_sub(limits.deadline_margin));
    match from_api_server {
        Some(budget) if !budget.is_zero() => budget.min(limits.review_deadline),
        _ => limits.review_deadline,
    }
}

/// The server's [`admission::Lookups`]: the watch caches, and a live GET of
/// an object they lack, within what is left of the review's deadline.
struct Live<'a> {
    app: &'a AppState,
    deadline: Instant,
    /// Whether the body is large enough to be decided off the async workers.
    off_the_workers: bool,
}

impl admission::Lookups for Live<'_> {
    type View = ClusterState;
    type Error = ReviewError;

    fn view(&self) -> impl std::ops::Deref<Target = ClusterState> + '_ {
        self.app.cluster.read()
    }

    async fn confirm_absent(&self, namespace: &str, absent: &Absent) -> Result<bool, ReviewError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReviewError::Deadline(format!(
                "no time left to confirm {absent:?} before the API server's deadline"
            )));
        }
        let found =
            self.app.cluster.confirm_absent(namespace, absent, left.min(self.app.limits.confirm_timeout)).await?;
        if found == Confirmation::Throttled {
            tracing::debug!(?absent, "live lookups throttled: deciding from the watch cache");
        }
        self.app.metrics.confirm_lookups.get_or_create(&crate::telemetry::ObjectLabels { kind: found.label() }).inc();
        Ok(found == Confirmation::Found)
    }

    /// A large body's review on a worker handed off to the blocking pool
    /// (`block_in_place`: the runtime moves the worker's other tasks to a new
    /// thread), by at most [`Deciders`] at once, waited for within the deadline.
    async fn decide<R>(&self, work: impl FnOnce() -> R + Send) -> Result<R, ReviewError> {
        let multi_thread =
            tokio::runtime::Handle::current().runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread;
        if !self.off_the_workers || !multi_thread {
            return Ok(work());
        }
        let permit = tokio::time::timeout_at(self.deadline.into(), self.app.deciders.0.acquire())
            .await
            .map_err(|_| ReviewError::Deadline("every decider was busy until the API server's deadline".into()))?
            .map_err(|_| ReviewError::NotReady("the deciders are closed"))?;
        let decided = tokio::task::block_in_place(work);
        drop(permit);
        Ok(decided)
    }
}

/// The review, once the view has synced: decided from the watch caches, a
/// denial that rests on a missing object confirmed live first (the only API
/// calls on the request path, bounded by the deadline). A replica that has
/// just started can be sent reviews while its endpoint is still listed: it
/// holds them until it syncs (1 to 2 s) rather than fail them, and answers
/// 500 only at the deadline.
async fn review(app: &AppState, webhook: Webhook, body: &[u8], deadline: Instant) -> Result<Outcome, ReviewError> {
    if tokio::time::timeout_at(deadline.into(), app.cluster.synced()).await.is_err() {
        return Err(ReviewError::NotReady("the cluster view did not sync before the API server's deadline"));
    }
    let off_the_workers = body.len() > INLINE_DECISION_BYTES;
    admission::review(webhook, body, &app.config, &Live { app, deadline, off_the_workers }).await
}

/// The baseline: decode only the uid and answer allowed.
fn noop(body: &[u8]) -> Result<Outcome, ReviewError> {
    let (uid, body) = admission::review_noop(body)?;
    Ok(Outcome {
        body,
        decision: admission::Decision::allow(crate::vocabulary::reason::Reason::NotAWorkload),
        uid,
        kind: String::new(),
        namespace: String::new(),
        name: String::new(),
        operation: admission::Operation::Unknown,
        username: String::new(),
        dry_run: false,
    })
}

fn record(app: &AppState, webhook: Webhook, outcome: &Outcome, elapsed: Duration) {
    use crate::vocabulary::caller_text::CallerText;
    let decision = &outcome.decision;
    let kind = match outcome.kind.as_str() {
        "Job" => "Job",
        "JobSet" => "JobSet",
        _ => "other",
    };
    let labels = ReviewLabels {
        webhook: webhook.as_str(),
        kind,
        operation: outcome.operation.as_str(),
        decision: decision.verdict(),
        reason: decision.reason.as_str(),
        enforcement: decision.enforcement_label(),
    };
    app.metrics.reviews.get_or_create(&labels).inc();
    // Every field the caller wrote goes through `CallerText`: escaped, so it
    // cannot forge a line, and cut, so the line always reaches the log.
    tracing::info!(
        uid = %CallerText::new(&outcome.uid),
        webhook = webhook.as_str(),
        kind = %CallerText::new(&outcome.kind),
        namespace = %CallerText::new(&outcome.namespace),
        name = %CallerText::new(&outcome.name),
        operation = outcome.operation.as_str(),
        user = %CallerText::new(&outcome.username),
        decision = decision.verdict(),
        reason = decision.reason.as_str(),
        enforcement = decision.enforcement_label(),
        warnings = decision.warnings.len(),
        dry_run = outcome.dry_run,
        latency_us = elapsed.as_micros() as u64,
        "review"
    );
}

/// A plain-text status answer (admin port).
pub fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body.into()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    fn app(noop: bool, max_body_bytes: usize) -> Router {
        app_shutting_down(noop, max_body_bytes, Shutdown::new())
    }

    fn app_shutting_down(noop: bool, max_body_bytes: usize, shutdown: Shutdown) -> Router {
        let state = crate::cluster::state_file::parse(include_bytes!("../../examples/cluster.yaml")).unwrap();
        router(AppState {
            config: Arc::new(Config::default()),
            cluster: Arc::new(ClusterCache::from_state(state)),
            metrics: Arc::new(Metrics::new()),
            limits: Limits { max_body_bytes, ..Limits::default() },
            body_budget: BodyBudget::new(LARGE_BODY_POOL_BYTES, SMALL_BODY_BYTES),
            deciders: Deciders::new(2),
            noop,
            shutdown,
        })
    }

    async fn call(app: Router, path: &str, body: &'static [u8]) -> (StatusCode, String) {
        let request = axum::http::Request::post(path).body(Body::from(body)).unwrap();
        let response = app.oneshot(request).await.unwrap();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    const POD_REVIEW: &[u8] = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1",
        "kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{}}}"#;

    #[tokio::test]
    async fn the_router_answers_reviews_and_refuses_oversized_bodies() {
        let (status, body) = call(app(false, 1 << 20), "/validate", POD_REVIEW).await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains(r#""uid":"u-1","allowed":true"#), "{body}");
        let (status, _) = call(app(false, 16), "/validate", POD_REVIEW).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        let (status, _) = call(app(false, 1 << 20), "/nope", POD_REVIEW).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn noop_mode_echoes_the_uid_and_decides_nothing() {
        let job = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-2",
            "kind":{"group":"batch","version":"v1","kind":"Job"},"operation":"CREATE","namespace":"plain",
            "object":{"metadata":{"labels":{"app":"evalhub","component":"evaluation-job"}}}}}"#;
        let (status, body) = call(app(true, 1 << 20), "/mutate", job).await;
        assert_eq!(status, StatusCode::OK);
        let response: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(response["response"]["uid"], "u-2");
        assert_eq!(response["response"]["allowed"], true);
        assert!(response["response"].get("warnings").is_none(), "noop does not run the rules");
    }

    /// Running: keep-alive. Draining: every HTTP/1.1 answer, a review or an
    /// error, closes its connection; HTTP/2 gets no `Connection` header (it
    /// is not allowed there).
    #[tokio::test]
    async fn answers_close_their_connection_while_draining() {
        let answer = |shutdown: &Shutdown, version, max_body_bytes| {
            let app = app_shutting_down(false, max_body_bytes, shutdown.clone());
            let request = axum::http::Request::post("/validate").version(version).body(Body::from(POD_REVIEW)).unwrap();
            async move {
                let response = app.oneshot(request).await.unwrap();
                (response.status(), response.headers().get(header::CONNECTION).cloned())
            }
        };
        let (http11, http2) = (axum::http::Version::HTTP_11, axum::http::Version::HTTP_2);
        let shutdown = Shutdown::new();
        assert_eq!(answer(&shutdown, http11, 1 << 20).await, (StatusCode::OK, None));
        shutdown.advance(crate::server::shutdown::Phase::Draining);
        let close = Some(header::HeaderValue::from_static("close"));
        assert_eq!(answer(&shutdown, http11, 1 << 20).await, (StatusCode::OK, close.clone()));
        assert_eq!(answer(&shutdown, http11, 16).await, (StatusCode::PAYLOAD_TOO_LARGE, close));
        assert_eq!(answer(&shutdown, http2, 1 << 20).await, (StatusCode::OK, None));
    }

    /// A replica restarted behind a listed endpoint: a review that comes
    /// before its view has synced waits for it, then is answered; one whose
    /// deadline comes first is answered 500 at the deadline.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_review_before_the_sync_waits_for_it() {
        let state = crate::cluster::state_file::parse(include_bytes!("../../examples/cluster.yaml")).unwrap();
        let cluster = Arc::new(ClusterCache::unsynced(state, &["Namespace"]));
        let app = router(AppState {
            config: Arc::new(Config::default()),
            cluster: cluster.clone(),
            metrics: Arc::new(Metrics::new()),
            limits: Limits::default(),
            body_budget: BodyBudget::new(LARGE_BODY_POOL_BYTES, SMALL_BODY_BYTES),
            deciders: Deciders::new(1),
            noop: false,
            shutdown: Shutdown::new(),
        });
        let request = |timeout: &str| {
            let uri = format!("/validate?timeout={timeout}");
            app.clone().oneshot(axum::http::Request::post(uri).body(Body::from(POD_REVIEW)).unwrap())
        };
        let started = Instant::now();
        let late = request("1500ms").await.unwrap();
        assert_eq!(late.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(started.elapsed() >= Duration::from_secs(1), "held to the deadline, 1 s: {:?}", started.elapsed());
        let mut waiting = tokio::spawn(request("10s"));
        assert!(
            tokio::time::timeout(Duration::from_millis(200), &mut waiting).await.is_err(),
            "held while the view has not synced"
        );
        cluster.set_synced("Namespace");
        let answered = tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("answered once synced");
        assert_eq!(answered.unwrap().unwrap().status(), StatusCode::OK);
    }

    #[test]
    fn deadlines_follow_the_api_server_timeout() {
        let limits = Limits::default();
        assert_eq!(deadline(Some("10s"), &limits), Duration::from_secs(9));
        assert_eq!(deadline(Some("3s"), &limits), Duration::from_millis(2500));
        assert_eq!(deadline(Some("1500ms"), &limits), Duration::from_secs(1));
        assert_eq!(deadline(Some("bogus"), &limits), limits.review_deadline);
        assert_eq!(deadline(None, &limits), limits.review_deadline);
        assert_eq!(deadline(Some("100000000000000000000s"), &limits), limits.review_deadline);
    }

    #[test]
    fn the_timeout_is_read_from_the_query() {
        let uri = |text: &str| text.parse::<Uri>().unwrap();
        assert_eq!(query_param(&uri("/mutate?timeout=10s"), "timeout"), Some("10s"));
        assert_eq!(query_param(&uri("/mutate?a=1&timeout=3s"), "timeout"), Some("3s"));
        assert_eq!(query_param(&uri("/mutate?timeouts=3s"), "timeout"), None);
        assert_eq!(query_param(&uri("/mutate"), "timeout"), None);
    }
}
