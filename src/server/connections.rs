//! The accept loop of both listeners, bounded by construction: at most
//! `max_connections` open at once, a deadline on the TLS handshake, on each
//! request's headers and on an idle keep-alive connection (`deadlines`), and
//! small per-connection buffers. Bodies are bounded by the routes (the body
//! budget and the review deadline).
//!
//! At the cap, a new connection takes the place of the oldest one that has
//! not completed a request yet (a flood of stalled connections holds them
//! all, until their deadlines pass, about 10 s): the API server's keep-alive
//! connections, which have, are never closed for it, and its fresh ones are
//! served. Only when every open connection has completed a request is the new
//! one closed at once, so the kernel backlog and the descriptor table never fill.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt as _;

use super::body_budget::SmallBodySlot;
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
/// HTTP/2 flow control: what a client may send before the server reads it,
/// per stream and per connection. hyper's defaults (1 MiB each) let a
/// connection park a MiB in the h2 receive buffers, outside the body budget;
/// these hold it to one small body per connection and let an 8 MiB body
/// stream at the review's pace (measured: BENCHMARKS.md, HTTP/2 attacks).
const H2_STREAM_WINDOW_BYTES: u32 = 64 * 1024;
const H2_CONNECTION_WINDOW_BYTES: u32 = 128 * 1024;
/// How long a new connection at the cap waits for the one it evicted to close.
const EVICTION_WAIT: Duration = Duration::from_millis(200);

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
    let evicted = metrics.connections_evicted.get_or_create(&labels).clone();
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let unserved = Arc::new(Unserved::default());
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
        let permit = match slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) if unserved.evict_oldest() => {
                evicted.inc();
                match tokio::time::timeout(EVICTION_WAIT, slots.clone().acquire_owned()).await {
                    Ok(Ok(permit)) => permit,
                    _ => {
                        refused.inc();
                        continue;
                    }
                }
            }
            Err(_) => {
                refused.inc();
                drop(tcp);
                continue;
            }
        };
        let slot = Slot::take(permit, open.clone());
        let _ = tcp.set_nodelay(true);
        let connection = unserved.enter();
        let service = service(app.clone(), connection.served.clone());
        let watcher = graceful.watcher();
        let tls = listener.tls.clone();
        let name = listener.name;
        let protocols = protocols.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let mut http1 = hyper::server::conn::http1::Builder::new();
            // `Deadlined` keeps the head and idle deadlines; hyper's own would close idle connections early.
            http1.header_read_timeout(None).max_buf_size(READ_BUFFER_BYTES).keep_alive(true);
            let serving = async {
                match tls {
                    Some(acceptor) => {
                        let Some(stream) = handshake(&acceptor, tcp, limits.handshake_timeout).await else {
                            return Ok(());
                        };
                        if let (Some(h2), Some(b"h2")) = (&protocols.h2, stream.get_ref().1.alpn_protocol()) {
                            h2.inc();
                            let mut http2 = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
                            http2
                                .timer(TokioTimer::new())
                                .max_concurrent_streams(H2_MAX_STREAMS)
                                .max_header_list_size(H2_MAX_HEADER_BYTES)
                                .initial_stream_window_size(H2_STREAM_WINDOW_BYTES)
                                .initial_connection_window_size(H2_CONNECTION_WINDOW_BYTES)
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
                }
            };
            // Evicted: dropping the connection closes it, mid-handshake or mid-request.
            let result = tokio::select! {
                result = serving => result,
                () = connection.evict.notified() => {
                    tracing::debug!(listener = name, %peer, "evicted for a new connection at the cap");
                    return;
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

/// The service one connection runs: the app, told which connection each
/// request came on (its small-body slot), marking the connection served once
/// a request has been answered.
fn service(
    app: axum::Router,
    served: Arc<AtomicBool>,
) -> impl hyper::service::Service<
    hyper::Request<hyper::body::Incoming>,
    Response = axum::response::Response,
    Error = std::convert::Infallible,
    Future = impl Future<Output = Result<axum::response::Response, std::convert::Infallible>> + Send,
> + Clone {
    let slot = SmallBodySlot::default();
    hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
        request.extensions_mut().insert(slot.clone());
        let answer = app.clone().oneshot(request.map(axum::body::Body::new));
        let served = served.clone();
        async move {
            let response = answer.await;
            served.store(true, Ordering::Release);
            response
        }
    })
}

/// The open connections that have not completed a request yet, oldest first:
/// the ones a new connection at the cap may take the place of.
#[derive(Default)]
struct Unserved {
    connections: Mutex<BTreeMap<u64, Arc<Connection>>>,
    next: std::sync::atomic::AtomicU64,
}

struct Connection {
    served: Arc<AtomicBool>,
    evict: Notify,
}

impl Unserved {
    fn enter(self: &Arc<Self>) -> EnteredOwned {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection { served: Arc::default(), evict: Notify::new() });
        self.connections.lock().unwrap_or_else(|p| p.into_inner()).insert(id, connection.clone());
        EnteredOwned { unserved: self.clone(), id, connection }
    }

    /// Tells the oldest connection that has served nothing to close; whether there was one.
    fn evict_oldest(&self) -> bool {
        let mut connections = self.connections.lock().unwrap_or_else(|p| p.into_inner());
        // Served ones leave lazily, here: a keep-alive connection stays open for long.
        connections.retain(|_, connection| !connection.served.load(Ordering::Acquire));
        let Some((_, oldest)) = connections.pop_first() else { return false };
        // `notify_one` keeps the wake-up for a task not yet waiting.
        oldest.evict.notify_one();
        true
    }
}

/// A connection's place in [`Unserved`], left when its task ends.
struct EnteredOwned {
    unserved: Arc<Unserved>,
    id: u64,
    connection: Arc<Connection>,
}

impl std::ops::Deref for EnteredOwned {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.connection
    }
}

impl Drop for EnteredOwned {
    fn drop(&mut self) {
        self.unserved.connections.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.id);
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
