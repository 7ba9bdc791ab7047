//! How many bytes of request bodies the server holds at once, across every
//! connection. A body is admitted by its declared length before a byte of it
//! is read, so a client cannot make the server grow by sending slowly.
//!
//! Reviews the API server sends are small (a 5 KB Job, a 40 KB JobSet): each
//! connection may hold one body up to [`BodyBudget::small_body_bytes`]
//! outside the pool ([`SmallBodySlot`]), since the connection cap already
//! bounds them (connections × small). HTTP/1.1 reads one request at a time,
//! so its one body always has the slot; an HTTP/2 connection carries several
//! streams at once, and each body but the one holding the slot counts against
//! the pool. Larger ones, up to the body limit, share one pool; when it is
//! spent a body is refused at once (429) rather than waited for, and small
//! reviews on other connections go on being answered.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug, Clone)]
pub struct BodyBudget {
    large_bodies: Arc<Semaphore>,
    large_pool_bytes: usize,
    small_body_bytes: usize,
}

/// A connection's one small body outside the pool, free again when that body is dropped.
#[derive(Debug, Clone, Default)]
pub struct SmallBodySlot(Arc<AtomicBool>);

/// Bytes held for one body until it is dropped.
#[derive(Debug)]
pub struct Reservation(#[allow(dead_code)] Held);

#[derive(Debug)]
enum Held {
    Slot(SmallBodySlot),
    Pool(#[allow(dead_code)] OwnedSemaphorePermit),
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Held::Slot(slot) = self {
            slot.0.store(false, Ordering::Release);
        }
    }
}

/// The pool of large bodies is spent: try again shortly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spent {
    pub pool_bytes: usize,
}

impl BodyBudget {
    /// `large_pool_bytes` must be at least the largest body accepted, or such a
    /// body could never be read.
    pub fn new(large_pool_bytes: usize, small_body_bytes: usize) -> Self {
        let permits = large_pool_bytes.min(Semaphore::MAX_PERMITS);
        Self { large_bodies: Arc::new(Semaphore::new(permits)), large_pool_bytes: permits, small_body_bytes }
    }

    pub fn small_body_bytes(&self) -> usize {
        self.small_body_bytes
    }

    /// Holds `length` bytes for a body about to be read on the connection
    /// whose slot is `slot`: the slot if the body is small and the slot free,
    /// else bytes of the pool.
    pub fn reserve(&self, length: usize, slot: &SmallBodySlot) -> Result<Reservation, Spent> {
        if length <= self.small_body_bytes
            && slot.0.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
        {
            return Ok(Reservation(Held::Slot(slot.clone())));
        }
        let spent = Spent { pool_bytes: self.large_pool_bytes };
        let permits = u32::try_from(length).map_err(|_| spent)?;
        self.large_bodies
            .clone()
            .try_acquire_many_owned(permits)
            .map(|permit| Reservation(Held::Pool(permit)))
            .map_err(|_| spent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_bodies_share_one_pool_and_each_connection_one_small_body() {
        let budget = BodyBudget::new(100, 10);
        let connection = SmallBodySlot::default();
        let first = budget.reserve(60, &connection).unwrap();
        assert_eq!(budget.reserve(41, &connection).unwrap_err(), Spent { pool_bytes: 100 }, "60 + 41 > 100");
        let second = budget.reserve(40, &connection).unwrap();
        assert!(budget.reserve(11, &connection).is_err(), "the pool is spent");
        // One small body per connection passes whatever the pool holds.
        let connections: Vec<SmallBodySlot> = (0..1000).map(|_| SmallBodySlot::default()).collect();
        let smalls: Vec<_> = connections.iter().map(|slot| budget.reserve(10, slot).unwrap()).collect();
        // A second small body on a connection (an HTTP/2 stream) counts against the pool, spent here.
        assert!(budget.reserve(10, &connections[0]).is_err());
        drop(smalls);
        assert!(budget.reserve(10, &connections[0]).is_ok(), "a dropped small body frees its slot");
        drop(first);
        assert!(budget.reserve(60, &connection).is_ok(), "a dropped reservation returns its bytes");
        drop(second);
        assert!(budget.reserve(101, &connection).is_err(), "larger than the pool: never");
        assert!(budget.reserve(usize::MAX, &connection).is_err());
    }

    #[test]
    fn small_bodies_past_the_slot_take_pool_bytes() {
        let budget = BodyBudget::new(25, 10);
        let connection = SmallBodySlot::default();
        let held: Vec<_> = (0..3).map(|_| budget.reserve(10, &connection)).collect();
        // The slot, then two from the pool of 25: the third would need 10 more than the 5 left.
        assert_eq!(held.iter().filter(|r| r.is_ok()).count(), 3);
        assert!(budget.reserve(10, &connection).is_err());
    }
}
