//! `eval-admission serve`: the HTTPS webhook server and its admin port.

pub mod admin;
pub mod audit;
pub mod body_budget;
pub mod certificates;
pub mod connections;
pub mod deadlines;
mod der;
pub mod duration;
mod review_error;
pub mod routes;
pub mod shutdown;
pub mod tls;

pub use review_error::ReviewError;

use std::net::SocketAddr;

use clap::builder::TypedValueParser as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::cache::ClusterCache;
use crate::cache::watch;
use crate::cluster::state_file;
use crate::config::Config;
use crate::error::Error;
use crate::telemetry::{LogFormat, Metrics};
use body_budget::BodyBudget;
use connections::{ConnectionLimits, Listener};
use deadlines::ReadDeadlines;
use routes::{AppState, LARGE_BODY_POOL_BYTES, Limits, SMALL_BODY_BYTES};
use shutdown::{Phase, Shutdown};

#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// HTTPS address for /mutate and /validate.
    #[arg(long, env = "EVAL_ADMISSION_LISTEN", default_value = "0.0.0.0:8443")]
    pub listen: SocketAddr,
    /// Plain-HTTP address for /livez, /readyz and /metrics (the Deployment binds the pod IP).
    #[arg(long, env = "EVAL_ADMISSION_ADMIN_LISTEN", default_value = "127.0.0.1:8080")]
    pub admin_listen: SocketAddr,
    /// Most HTTPS connections open at once; one more is closed at once. Lowered
    /// to fit the descriptor limit.
    #[arg(long, env = "EVAL_ADMISSION_MAX_CONNECTIONS", default_value_t = WEBHOOK_CONNECTIONS.max_connections,
          value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    pub max_connections: usize,
    /// Serving certificate (PEM, leaf first); re-read when it changes. Or --tls-secret.
    #[arg(long, env = "EVAL_ADMISSION_TLS_CERT", required_unless_present = "tls_secret", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// Serving key (PEM); re-read when it changes.
    #[arg(long, env = "EVAL_ADMISSION_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    #[command(flatten)]
    pub certificates: certificates::CertificateArgs,
    /// CA (PEM) that callers' client certificates must chain to; without it
    /// anyone who reaches the port is answered. Re-read when it changes.
    #[arg(long, env = "EVAL_ADMISSION_CLIENT_CA_FILE")]
    pub client_ca_file: Option<PathBuf>,
    /// A name the caller's certificate must carry as Common Name or DNS SAN
    /// (repeatable or comma-separated; any of them will do). Needs --client-ca-file.
    #[arg(long = "client-name", value_name = "NAME", env = "EVAL_ADMISSION_CLIENT_NAMES", value_delimiter = ',',
          requires = "client_ca_file", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub client_names: Vec<String>,
    /// Policy configuration file (YAML).
    #[arg(long, env = "EVAL_ADMISSION_CONFIG")]
    pub config: Option<PathBuf>,
    /// Serve from a cluster state file instead of watching a cluster.
    #[arg(long, env = "EVAL_ADMISSION_CLUSTER")]
    pub cluster: Option<PathBuf>,
    /// Largest AdmissionReview body accepted (an UPDATE carries two objects,
    /// each at most the API server's 3 MiB request limit).
    #[arg(long, env = "EVAL_ADMISSION_MAX_BODY_BYTES", default_value_t = routes::DEFAULT_MAX_BODY_BYTES,
          value_parser = max_body_bytes)]
    pub max_body_bytes: usize,
    /// After SIGTERM, keep serving (not ready) this long before closing the listener.
    #[arg(long, env = "EVAL_ADMISSION_SHUTDOWN_DELAY", default_value = "5s",
          value_parser = duration::within(Duration::ZERO, Duration::from_secs(120)))]
    pub shutdown_delay: Duration,
    /// Longest wait for in-flight reviews once the listener is closed.
    #[arg(long, env = "EVAL_ADMISSION_DRAIN_TIMEOUT", default_value = "20s",
          value_parser = duration::within(Duration::ZERO, Duration::from_secs(300)))]
    pub drain_timeout: Duration,
    /// How often the certificate files are checked for changes.
    #[arg(long, env = "EVAL_ADMISSION_CERT_RELOAD_INTERVAL", default_value = "2s",
          value_parser = duration::within(Duration::from_millis(100), Duration::from_secs(3600)))]
    pub cert_reload_interval: Duration,
    /// Timeout of the live LocalQueue lookup made before a missing-queue denial.
    #[arg(long, env = "EVAL_ADMISSION_CONFIRM_TIMEOUT", default_value = "2s",
          value_parser = duration::within(Duration::from_millis(10), Duration::from_secs(30)))]
    pub confirm_timeout: Duration,
    /// Log format: auto (JSON unless on a terminal), json or text.
    #[arg(long, env = "EVAL_ADMISSION_LOG_FORMAT", value_enum, default_value = "auto")]
    pub log_format: LogFormat,
    /// Offer HTTP/2 (ALPN h2) beside HTTP/1.1. Off by default: measured
    /// through the API server, it did not lower the API server's CPU or the
    /// latency per create (BENCHMARKS.md), and each HTTP/2 connection carries
    /// up to 8 reviews at once, which the small-body memory bound does not count.
    #[arg(long, env = "EVAL_ADMISSION_HTTP2")]
    pub http2: bool,
    /// Benchmark baseline: read each review, answer allowed, decide nothing.
    #[arg(long, hide = true)]
    pub noop: bool,
    #[command(flatten)]
    pub audit: audit::AuditArgs,
}

/// At least one small review and at most what the large-body pool holds.
fn max_body_bytes(text: &str) -> Result<usize, String> {
    let bytes: usize = text.parse().map_err(|_| format!("'{text}' is not a number of bytes"))?;
    if (SMALL_BODY_BYTES..=LARGE_BODY_POOL_BYTES).contains(&bytes) {
        Ok(bytes)
    } else {
        Err(format!("{bytes} is outside the range allowed, {SMALL_BODY_BYTES} to {LARGE_BODY_POOL_BYTES}"))
    }
}

/// The webhook port: a silent client loses its connection after the handshake
/// or head deadline. An idle keep-alive connection is kept longer than the API
/// server keeps it (90 s: its webhook client's transport takes
/// `http.DefaultTransport`'s `IdleConnTimeout`, apimachinery `SetOldTransportDefaults`), so the API server is always the side that closes it and never
/// writes a review into a connection this side is closing.
const WEBHOOK_CONNECTIONS: ConnectionLimits = ConnectionLimits {
    max_connections: 256,
    handshake_timeout: Duration::from_secs(5),
    deadlines: ReadDeadlines { idle: Duration::from_secs(120), head: Duration::from_secs(10) },
};
/// The admin port serves the kubelet's probes and a Prometheus scrape: a few
/// connections, quick requests.
const ADMIN_CONNECTIONS: ConnectionLimits = ConnectionLimits {
    max_connections: 32,
    handshake_timeout: Duration::ZERO,
    // Probes and scrapes are GETs, which clients retry on a closed idle connection.
    deadlines: ReadDeadlines { idle: Duration::from_secs(5), head: Duration::from_secs(5) },
};
/// Descriptors kept for the rest of the process: the admin port's connections,
/// the Kubernetes client's, the certificate files, stdio.
const RESERVED_DESCRIPTORS: usize = 64;

pub async fn serve(args: ServeArgs) -> Result<(), Error> {
    let logging = crate::telemetry::init_logging(args.log_format).map_err(Error::Logging)?;
    // Signal handlers first: a SIGTERM at any point after this starts the graceful shutdown.
    let shutdown = Shutdown::new();
    let on_signals = shutdown.clone().on_signals(args.shutdown_delay).map_err(Error::Signals)?;
    let loaded = Config::load(args.config.as_deref())?;
    for field in &loaded.unknown_fields {
        tracing::warn!(field = %field, "config file: {}", crate::config::unknown_field_warning(field));
    }
    let config = Arc::new(loaded.config);
    let mut metrics = Metrics::new();
    metrics.count_dropped_log_lines(logging.dropped_lines());
    let metrics = Arc::new(metrics);
    let certificates = Arc::new(match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => tls::CertStore::load(cert, key)?,
        // --tls-secret: filled by the self-managed certificates below.
        _ => tls::CertStore::empty(),
    });
    let client_auth = match &args.client_ca_file {
        Some(ca) => Some(Arc::new(tls::ClientAuth::load(ca, &args.client_names, &metrics)?)),
        None => None,
    };
    let acceptor = TlsAcceptor::from(Arc::new(certificates.server_config(args.http2, client_auth.clone())?));

    let mut live_client = None;
    let cluster = match &args.cluster {
        Some(path) => {
            let state = state_file::load(path, &config.kueue)?;
            tracing::info!(file = %path.display(), objects = ?state.counts(), "serving from a cluster state file");
            Arc::new(ClusterCache::from_state(state))
        }
        None => {
            let client = kube::Client::try_default().await?;
            let cache = Arc::new(ClusterCache::live(client.clone(), &watch::CORE_KINDS, config.kueue.clone()));
            cache.derive_in_background();
            watch::start(client.clone(), cache.clone(), config.kueue.clone(), config.kueue_managed_owners.clone());
            tracing::info!("watching the cluster");
            live_client = Some(client);
            cache
        }
    };
    if let Some(secret) = &args.certificates.tls_secret {
        let client = match &live_client {
            Some(client) => client.clone(),
            None => kube::Client::try_default().await?,
        };
        let store = certificates.clone();
        let managed =
            certificates::SelfManaged::new(client, secret.clone(), &args.certificates, store, metrics.clone());
        tokio::spawn(managed.run(shutdown.clone()));
    }
    // The audit needs the live cluster: a state file holds no workloads to audit.
    if !args.audit.is_on() {
        tracing::info!("audit off (--audit-interval 0s)");
    }
    let audit = live_client.filter(|_| args.audit.is_on()).map(|client| {
        let (cluster, config, metrics) = (cluster.clone(), config.clone(), metrics.clone());
        tokio::spawn(audit::run(client, cluster, config, metrics, args.audit.clone(), shutdown.clone()))
    });

    let listener =
        TcpListener::bind(args.listen).await.map_err(|source| Error::Listen { address: args.listen, source })?;
    let admin_listener = TcpListener::bind(args.admin_listen)
        .await
        .map_err(|source| Error::Listen { address: args.admin_listen, source })?;
    tracing::info!(listen = %args.listen, admin = %args.admin_listen, noop = args.noop, "eval-admission serving");

    tokio::spawn(on_signals);
    if args.tls_cert.is_some() {
        tokio::spawn(tls::watch(certificates.clone(), args.cert_reload_interval, metrics.clone()));
    }
    if let Some(client_auth) = client_auth {
        tokio::spawn(tls::watch_client_ca(client_auth, args.cert_reload_interval));
    }

    let admin = admin::router(admin::AdminState {
        cluster: cluster.clone(),
        certificates,
        metrics: metrics.clone(),
        shutdown: shutdown.clone(),
    });
    let admin_listener = Listener { name: "admin", socket: admin_listener, tls: None };
    let admin_stop = {
        let shutdown = shutdown.clone();
        async move { shutdown.reached(Phase::Stopping).await }
    };
    tokio::spawn(connections::serve(
        admin_listener,
        admin,
        ADMIN_CONNECTIONS,
        metrics.clone(),
        admin_stop,
        Duration::ZERO,
    ));

    let limits =
        Limits { max_body_bytes: args.max_body_bytes, confirm_timeout: args.confirm_timeout, ..Limits::default() };
    let body_budget = BodyBudget::new(LARGE_BODY_POOL_BYTES, SMALL_BODY_BYTES);
    let app = routes::router(AppState {
        config,
        cluster,
        metrics: metrics.clone(),
        limits,
        body_budget,
        deciders: routes::Deciders::half_the_cores(),
        noop: args.noop,
        shutdown: shutdown.clone(),
    });
    let max_connections = connections::connections_that_fit(args.max_connections, RESERVED_DESCRIPTORS);
    if max_connections < args.max_connections {
        tracing::warn!(
            max_connections,
            wanted = args.max_connections,
            "connection cap lowered to fit the descriptor limit"
        );
    }
    let webhook_limits = ConnectionLimits { max_connections, ..WEBHOOK_CONNECTIONS };
    let listener = Listener { name: "webhook", socket: listener, tls: Some(acceptor) };
    let stop = shutdown.reached(Phase::Stopping);
    connections::serve(listener, app, webhook_limits, metrics, stop, args.drain_timeout).await;
    if let Some(audit) = audit {
        // It gave the lease up when the drain began; this waits for it to say so.
        let _ = tokio::time::timeout(Duration::from_secs(5), audit).await;
    }
    tracing::info!("eval-admission stopped");
    Ok(())
}
