//! The accept loop of both listeners, bounded by construction: at most
//! `max_connections` open at once (one more is accepted and closed at once, so
//! the kernel backlog and the descriptor table never fill), a deadline on the
//! TLS handshake, on each request's headers and on an idle keep-alive
//! connection (`deadlines`), and small per-connection buffers. Bodies are bounded by the
//! routes (the body budget and the review deadline).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;

use super::deadlines::{Deadlined, ReadDeadlines};
use crate::telemetry::{ListenerLabels, Metrics, ProtocolLabels};

/// What one listener lets its clients hold.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub handshake_timeout: Duration,
    pub deadlines: ReadDeadlines,
}

/// hyper's per-connection read buffer, at its smallest that still holds the
/// headers any API server or probe sends (8 KiB is hyper's floor).
const READ_BUFFER_BYTES: usize = 16 * 1024;
/// An HTTP/2 connection (when `--http2` offers it): reviews in flight on it at
/// once, and the most header bytes a request may carry.
const H2_MAX_STREAMS: u32 = 8;
const H2_MAX_HEADER_BYTES: u32 = 16 * 1024;

/// One listener: its name (the metric label), its socket, TLS or plain.
pub struct Listener {
    pub name: &'static str,
    pub socket: TcpListener,
    pub tls: Option<TlsAcceptor>,
}

/// Serves `app` on `listener` until `stop` resolves, then waits up to
/// `drain_timeout` for open connections to finish their requests.
pub async fn serve(
    listener: Listener,
    app: axum::Router,
    limits: ConnectionLimits,
    metrics: Arc<Metrics>,
    stop: impl Future<Output = ()>,
    drain_timeout: Duration,
) {
    let labels = ListenerLabels { listener: listener.name };
    let open = metrics.connections_open.get_or_create(&labels).clone();
    let refused = metrics.connections_refused.get_or_create(&labels).clone();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    // One statement each: `get_or_create` returns a read guard, and a second
    // call for a new label set while it is held would wait for the write lock forever.
    let served = |protocol| {
        metrics.connections_served.get_or_create(&ProtocolLabels { listener: listener.name, protocol }).clone()
    };
    let http1 = served("http/1.1");
    // Only TLS offers h2 (by ALPN); the plain admin listener never serves it.
    let h2 = listener.tls.as_ref().map(|_| served("h2"));
    let protocols = Arc::new(Protocols { http1, h2 });
    let graceful = GracefulShutdown::new();
    tokio::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.socket.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors despite the cap (another part of the
                    // process holds them): back off instead of spinning.
                    tracing::warn!(listener = listener.name, %error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            refused.inc();
            drop(tcp);
            continue;
        };
        let slot = Slot::take(permit, open.clone());
        let _ = tcp.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let watcher = graceful.watcher();
        let tls = listener.tls.clone();
        let name = listener.name;
        let protocols = protocols.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let mut http1 = hyper::server::conn::http1::Builder::new();
            // `Deadlined` keeps the head and idle deadlines; hyper's own would close idle connections early.
            http1.header_read_timeout(None).max_buf_size(READ_BUFFER_BYTES).keep_alive(true);
            let result = match tls {
                Some(acceptor) => {
                    let Some(stream) = handshake(&acceptor, tcp, limits.handshake_timeout).await else { return };
                    if let (Some(h2), Some(b"h2")) = (&protocols.h2, stream.get_ref().1.alpn_protocol()) {
                        h2.inc();
                        let mut http2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
                        http2
                            .timer(TokioTimer::new())
                            .max_concurrent_streams(H2_MAX_STREAMS)
                            .max_header_list_size(H2_MAX_HEADER_BYTES)
                            // A silent peer is found by ping, as http1 finds it by the header deadline.
                            .keep_alive_interval(limits.deadlines.head)
                            .keep_alive_timeout(limits.deadlines.head);
                        watcher.watch(http2.serve_connection(TokioIo::new(stream), service)).await
                    } else {
                        protocols.http1.inc();
                        let stream = Deadlined::new(stream, limits.deadlines);
                        watcher.watch(http1.serve_connection(TokioIo::new(stream), service)).await
                    }
                }
                None => {
                    protocols.http1.inc();
                    let tcp = Deadlined::new(tcp, limits.deadlines);
                    watcher.watch(http1.serve_connection(TokioIo::new(tcp), service)).await
                }
            };
            if let Err(error) = result {
                tracing::debug!(listener = name, %peer, %error, "connection ended with an error");
            }
        });
    }
    let name = listener.name;
    drop(listener);
    if !drain_timeout.is_zero() && tokio::time::timeout(drain_timeout, graceful.shutdown()).await.is_err() {
        tracing::warn!(listener = name, "drain timed out; closing the remaining connections");
    }
}

async fn handshake(
    acceptor: &TlsAcceptor,
    tcp: TcpStream,
    timeout: Duration,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    match tokio::time::timeout(timeout, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(error)) => {
            tracing::debug!(%error, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!("TLS handshake timed out");
            None
        }
    }
}

/// Connections served, by the protocol ALPN chose.
struct Protocols {
    http1: Counter,
    /// `None` on a plain listener.
    h2: Option<Counter>,
}

/// An open connection's place under the cap, counted in the gauge while held.
struct Slot {
    _permit: OwnedSemaphorePermit,
    open: Gauge,
}

impl Slot {
    fn take(permit: OwnedSemaphorePermit, open: Gauge) -> Self {
        open.inc();
        Self { _permit: permit, open }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.open.dec();
    }
}

/// Raises the soft limit on open descriptors to the hard limit and returns
/// how many connections fit under it, leaving `reserved` for everything else
/// the process opens (the Kubernetes client, certificate reads, the admin port).
pub fn connections_that_fit(wanted: usize, reserved: usize) -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    let soft = unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return wanted;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
        limit.rlim_cur
    };
    let available = usize::try_from(soft).unwrap_or(usize::MAX).saturating_sub(reserved);
    wanted.min(available).max(1)
}
