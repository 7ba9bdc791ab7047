//! What keeps the confirm-before-deny lookups from becoming a caller's tool:
//! concurrent reviews missing the same object share one GET, and GETs are
//! rationed (a token bucket) so that any caller, whatever it sends, makes the
//! server issue at most [`CONFIRMS_PER_SECOND`] a second after a burst of as
//! many. Past the ration a denial stands on the watch cache alone, which lags
//! only an object created within the last moment.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::OnceCell;

/// Live lookups a second, and the burst allowed after a quiet spell. A
/// denial that rests on missing objects needs at most three.
pub const CONFIRMS_PER_SECOND: f64 = 20.0;

/// What a confirm lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    Found,
    Absent,
    /// Over the ration: not looked up, the watch cache decides.
    Throttled,
}

impl Confirmation {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Found => "found",
            Self::Absent => "absent",
            Self::Throttled => "throttled",
        }
    }
}

#[derive(Default)]
pub(super) struct ConfirmGate {
    in_flight: Mutex<HashMap<String, Arc<OnceCell<bool>>>>,
    ration: Mutex<Ration>,
}

struct Ration {
    tokens: f64,
    refilled: Instant,
}

impl Default for Ration {
    fn default() -> Self {
        Self { tokens: CONFIRMS_PER_SECOND, refilled: Instant::now() }
    }
}

/// Why a shared lookup gave no answer.
pub(super) enum Unanswered<E> {
    Throttled,
    Failed(E),
}

impl ConfirmGate {
    /// Whether `key` exists, looked up by `lookup` unless a lookup of the same
    /// key is in flight (then its answer is shared) or the ration is spent.
    pub(super) async fn confirm<E>(
        &self,
        key: String,
        lookup: impl Future<Output = Result<bool, E>>,
    ) -> Result<bool, Unanswered<E>> {
        let cell = self.in_flight.lock().unwrap_or_else(|p| p.into_inner()).entry(key.clone()).or_default().clone();
        let _leave = Leave { gate: self, key, cell: &cell };
        cell.get_or_try_init(|| async {
            if !self.take() {
                return Err(Unanswered::Throttled);
            }
            lookup.await.map_err(Unanswered::Failed)
        })
        .await
        .copied()
    }

    fn take(&self) -> bool {
        self.take_at(Instant::now())
    }

    fn take_at(&self, now: Instant) -> bool {
        let mut ration = self.ration.lock().unwrap_or_else(|p| p.into_inner());
        let earned = now.duration_since(ration.refilled).as_secs_f64() * CONFIRMS_PER_SECOND;
        ration.tokens = (ration.tokens + earned).min(CONFIRMS_PER_SECOND);
        ration.refilled = now;
        if ration.tokens < 1.0 {
            return false;
        }
        ration.tokens -= 1.0;
        true
    }
}

/// Forgets a finished lookup, so the next review asks again (the object may
/// have been created since); a newer lookup of the same key stays.
struct Leave<'g> {
    gate: &'g ConfirmGate,
    key: String,
    cell: &'g Arc<OnceCell<bool>>,
}

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        let mut in_flight = self.gate.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if in_flight.get(&self.key).is_some_and(|current| Arc::ptr_eq(current, self.cell)) {
            in_flight.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The burst, exactly, then one lookup per 1/20 s earned.
    #[test]
    fn the_ration_is_a_burst_then_a_steady_rate() {
        let gate = ConfirmGate::default();
        let start = gate.ration.lock().unwrap().refilled;
        let burst = (0..100).filter(|_| gate.take_at(start)).count();
        assert_eq!(burst, CONFIRMS_PER_SECOND as usize);
        let later = start + std::time::Duration::from_millis(100);
        let earned = (0..100).filter(|_| gate.take_at(later)).count();
        assert_eq!(earned, 2, "0.1 s at 20 a second");
        let much_later = later + std::time::Duration::from_secs(60);
        assert_eq!((0..100).filter(|_| gate.take_at(much_later)).count(), burst, "never more than the burst");
    }

    /// The metric's label values, as docs/operations.md documents them.
    #[test]
    fn each_answer_has_its_label() {
        let labels = [Confirmation::Found, Confirmation::Absent, Confirmation::Throttled].map(Confirmation::label);
        assert_eq!(labels, ["found", "absent", "throttled"]);
    }

    #[tokio::test]
    async fn concurrent_confirms_of_one_object_share_a_lookup() {
        let gate = ConfirmGate::default();
        let calls = AtomicUsize::new(0);
        let (release, released) = tokio::sync::watch::channel(false);
        let lookup = || {
            let mut released = released.clone();
            let calls = &calls;
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                released.wait_for(|go| *go).await.unwrap();
                Ok::<_, ()>(true)
            }
        };
        let waiting = futures::future::join_all((0..10).map(|_| gate.confirm("LocalQueue a/q".into(), lookup())));
        let releasing = async {
            // Let all ten join before the one lookup answers.
            tokio::task::yield_now().await;
            release.send(true).unwrap();
        };
        let (answers, ()) = tokio::join!(waiting, releasing);
        assert!(answers.iter().all(|answer| matches!(answer, Ok(true))));
        assert_eq!(calls.load(Ordering::SeqCst), 1, "one GET for ten reviews");
        assert!(gate.in_flight.lock().unwrap().is_empty(), "forgotten once answered");
        assert!(matches!(gate.confirm("LocalQueue a/q".into(), lookup()).await, Ok(true)));
        assert_eq!(calls.load(Ordering::SeqCst), 2, "a later review asks again");
    }

    #[tokio::test]
    async fn lookups_past_the_ration_are_not_made() {
        let gate = ConfirmGate::default();
        let mut made = 0;
        let mut throttled = 0;
        for i in 0..100 {
            match gate.confirm(format!("LocalQueue a/q{i}"), async { Ok::<_, ()>(false) }).await {
                Ok(_) => made += 1,
                Err(Unanswered::Throttled) => throttled += 1,
                Err(Unanswered::Failed(())) => unreachable!(),
            }
        }
        // The burst, plus what the bucket earned while the loop ran (well under one more).
        assert!((CONFIRMS_PER_SECOND as usize..=CONFIRMS_PER_SECOND as usize + 1).contains(&made), "{made} made");
        assert_eq!(made + throttled, 100);
    }
}
