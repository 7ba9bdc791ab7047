//! `eval-admission serve`: the HTTPS webhook server and its admin port.

pub mod admin;
mod review_error;
pub mod routes;
pub mod shutdown;
pub mod tls;

pub use review_error::ReviewError;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::cache::ClusterCache;
use crate::cache::watch;
use crate::cluster::state_file;
use crate::config::Config;
use crate::error::Error;
use crate::telemetry::{LogFormat, Metrics};
use routes::{AppState, Limits};
use shutdown::{Phase, Shutdown};

#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// HTTPS address for /mutate and /validate.
    #[arg(long, env = "EVAL_ADMISSION_LISTEN", default_value = "0.0.0.0:8443")]
    pub listen: SocketAddr,
    /// Plain-HTTP address for /livez, /readyz and /metrics.
    #[arg(long, env = "EVAL_ADMISSION_ADMIN_LISTEN", default_value = "0.0.0.0:8080")]
    pub admin_listen: SocketAddr,
    /// Serving certificate (PEM, leaf first); re-read when it changes.
    #[arg(long, env = "EVAL_ADMISSION_TLS_CERT")]
    pub tls_cert: PathBuf,
    /// Serving key (PEM); re-read when it changes.
    #[arg(long, env = "EVAL_ADMISSION_TLS_KEY")]
    pub tls_key: PathBuf,
    /// Policy configuration file (YAML).
    #[arg(long, env = "EVAL_ADMISSION_CONFIG")]
    pub config: Option<PathBuf>,
    /// Serve from a cluster state file instead of watching a cluster.
    #[arg(long, env = "EVAL_ADMISSION_CLUSTER")]
    pub cluster: Option<PathBuf>,
    /// Largest AdmissionReview body accepted (an UPDATE carries two objects).
    #[arg(long, env = "EVAL_ADMISSION_MAX_BODY_BYTES", default_value_t = 8 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// After SIGTERM, keep serving (not ready) this long before closing the listener.
    #[arg(long, env = "EVAL_ADMISSION_SHUTDOWN_DELAY", default_value = "5s", value_parser = parse_duration)]
    pub shutdown_delay: Duration,
    /// Longest wait for in-flight reviews once the listener is closed.
    #[arg(long, env = "EVAL_ADMISSION_DRAIN_TIMEOUT", default_value = "20s", value_parser = parse_duration)]
    pub drain_timeout: Duration,
    /// How often the certificate files are checked for changes.
    #[arg(long, env = "EVAL_ADMISSION_CERT_RELOAD_INTERVAL", default_value = "2s", value_parser = parse_duration)]
    pub cert_reload_interval: Duration,
    /// Timeout of the live LocalQueue lookup made before a missing-queue denial.
    #[arg(long, env = "EVAL_ADMISSION_CONFIRM_TIMEOUT", default_value = "2s", value_parser = parse_duration)]
    pub confirm_timeout: Duration,
    /// Kueue's Configuration: the ConfigMap (namespace/name) Kueue's manager mounts.
    #[arg(long, env = "EVAL_ADMISSION_KUEUE_CONFIG_MAP", default_value = "kueue-system/kueue-manager-config", value_parser = parse_config_map)]
    pub kueue_config_map: watch::KueueConfigMap,
    /// Log format: auto (JSON unless on a terminal), json or text.
    #[arg(long, env = "EVAL_ADMISSION_LOG_FORMAT", value_enum, default_value = "auto")]
    pub log_format: LogFormat,
    /// Benchmark baseline: read each review, answer allowed, decide nothing.
    #[arg(long, hide = true)]
    pub noop: bool,
}

fn parse_config_map(text: &str) -> Result<watch::KueueConfigMap, String> {
    match text.split_once('/') {
        Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(watch::KueueConfigMap { namespace: namespace.to_string(), name: name.to_string() })
        }
        _ => Err(format!("'{text}' is not namespace/name")),
    }
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    routes::parse_go_duration(text).ok_or_else(|| format!("'{text}' is not a duration like 5s or 500ms"))
}

/// Handshake and request-header deadlines: a slow or silent client cannot hold a connection.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

pub async fn serve(args: ServeArgs) -> Result<(), Error> {
    let logging = crate::telemetry::init_logging(args.log_format).map_err(Error::Logging)?;
    // Signal handlers first: a SIGTERM at any point after this starts the graceful shutdown.
    let shutdown = Shutdown::new();
    let on_signals = shutdown.clone().on_signals(args.shutdown_delay).map_err(Error::Signals)?;
    let config = Arc::new(Config::load(args.config.as_deref())?);
    let mut metrics = Metrics::new();
    metrics.count_dropped_log_lines(logging.dropped_lines());
    let metrics = Arc::new(metrics);
    let certificates = Arc::new(tls::CertStore::load(&args.tls_cert, &args.tls_key)?);
    let acceptor = TlsAcceptor::from(Arc::new(certificates.server_config()?));

    let cluster = match &args.cluster {
        Some(path) => {
            let state = state_file::load(path)?;
            tracing::info!(file = %path.display(), objects = ?state.counts(), "serving from a cluster state file");
            Arc::new(ClusterCache::from_state(state))
        }
        None => {
            let client = kube::Client::try_default().await?;
            let cache = Arc::new(ClusterCache::live(client.clone(), &watch::CORE_KINDS));
            watch::start(client, cache.clone(), args.kueue_config_map.clone());
            tracing::info!("watching the cluster");
            cache
        }
    };

    let listener =
        TcpListener::bind(args.listen).await.map_err(|source| Error::Listen { address: args.listen, source })?;
    let admin_listener = TcpListener::bind(args.admin_listen)
        .await
        .map_err(|source| Error::Listen { address: args.admin_listen, source })?;
    tracing::info!(listen = %args.listen, admin = %args.admin_listen, noop = args.noop, "eval-admission serving");

    tokio::spawn(on_signals);
    tokio::spawn(tls::watch(certificates, args.cert_reload_interval, metrics.clone()));

    let admin = admin::router(admin::AdminState {
        cluster: cluster.clone(),
        metrics: metrics.clone(),
        shutdown: shutdown.clone(),
    });
    let admin_shutdown = shutdown.clone();
    tokio::spawn(async move {
        let stopped = async move { admin_shutdown.reached(Phase::Stopping).await };
        if let Err(error) = axum::serve(admin_listener, admin).with_graceful_shutdown(stopped).await {
            tracing::error!(%error, "admin server failed");
        }
    });

    let limits =
        Limits { max_body_bytes: args.max_body_bytes, confirm_timeout: args.confirm_timeout, ..Limits::default() };
    let app = routes::router(AppState { config, cluster, metrics, limits, noop: args.noop });
    serve_https(listener, acceptor, app, &shutdown, args.drain_timeout).await;
    tracing::info!("eval-admission stopped");
    Ok(())
}

/// Accepts TLS connections until shutdown reaches [`Phase::Stopping`], then waits
/// (up to `drain_timeout`) for open connections to finish their reviews.
pub async fn serve_https(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    app: axum::Router,
    shutdown: &Shutdown,
    drain_timeout: Duration,
) {
    let graceful = GracefulShutdown::new();
    let stopping = shutdown.reached(Phase::Stopping);
    tokio::pin!(stopping);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stopping => break,
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(app.clone());
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(error)) => {
                    tracing::debug!(%peer, %error, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT).keep_alive(true);
            let connection = builder.serve_connection(TokioIo::new(tls), service);
            if let Err(error) = watcher.watch(connection).await {
                tracing::debug!(%peer, %error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(drain_timeout, graceful.shutdown()).await.is_err() {
        tracing::warn!("drain timed out; closing the remaining connections");
    }
}
