//! Graceful shutdown: on SIGTERM or SIGINT, report not ready, keep serving for a
//! delay (endpoints take time to drop the pod), then stop accepting and let
//! in-flight reviews finish. A second signal exits at once.

use std::time::Duration;

use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Running,
    /// Readiness is false; the listener still accepts.
    Draining,
    /// The listener is closed; in-flight connections finish.
    Stopping,
}

/// A shared handle on the shutdown phase.
#[derive(Clone)]
pub struct Shutdown {
    phase: watch::Sender<Phase>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    pub fn new() -> Self {
        Self { phase: watch::Sender::new(Phase::Running) }
    }

    pub fn is_draining(&self) -> bool {
        *self.phase.borrow() >= Phase::Draining
    }

    pub fn advance(&self, phase: Phase) {
        self.phase.send_if_modified(|current| {
            let later = phase > *current;
            if later {
                *current = phase;
            }
            later
        });
    }

    /// Resolves once the phase reaches `phase`.
    pub async fn reached(&self, phase: Phase) {
        let mut receiver = self.phase.subscribe();
        let _ = receiver.wait_for(|current| *current >= phase).await;
    }

    /// Drives the phases from process signals. The handlers are installed
    /// here, before the caller binds its listeners: a SIGTERM that arrives
    /// once the ports answer must start the graceful shutdown, not take the
    /// default action and kill the process.
    pub fn on_signals(self, delay: Duration) -> std::io::Result<impl std::future::Future<Output = ()>> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        Ok(async move {
            tokio::select! {
                _ = terminate.recv() => {},
                _ = interrupt.recv() => {},
            }
            tracing::info!(delay_ms = delay.as_millis() as u64, "shutdown: not ready; serving on for the delay");
            self.advance(Phase::Draining);
            tokio::spawn(async move {
                tokio::select! {
                    _ = terminate.recv() => {},
                    _ = interrupt.recv() => {},
                }
                tracing::warn!("second signal: exiting now");
                std::process::exit(130);
            });
            tokio::time::sleep(delay).await;
            tracing::info!("shutdown: closing the listener and finishing in-flight reviews");
            self.advance(Phase::Stopping);
        })
    }
}
