//! How many bytes of request bodies the server holds at once, across every
//! connection. A body is admitted by its declared length before a byte of it
//! is read, so a client cannot make the server grow by sending slowly.
//!
//! Reviews the API server sends are small (a 5 KB Job, a 40 KB JobSet): bodies
//! up to [`BodyBudget::small_body_bytes`] are not counted, since the connection
//! cap already bounds them (connections × small). Larger ones, up to the body
//! limit, share one pool; when it is spent a large body is refused at once
//! (429) rather than waited for, and small reviews go on being answered.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug, Clone)]
pub struct BodyBudget {
    large_bodies: Arc<Semaphore>,
    large_pool_bytes: usize,
    small_body_bytes: usize,
}

/// Bytes held for one body until it is dropped.
#[derive(Debug)]
pub struct Reservation(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

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

    /// Holds `length` bytes for a body about to be read.
    pub fn reserve(&self, length: usize) -> Result<Reservation, Spent> {
        if length <= self.small_body_bytes {
            return Ok(Reservation(None));
        }
        let spent = Spent { pool_bytes: self.large_pool_bytes };
        let permits = u32::try_from(length).map_err(|_| spent)?;
        self.large_bodies
            .clone()
            .try_acquire_many_owned(permits)
            .map(|permit| Reservation(Some(permit)))
            .map_err(|_| spent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_bodies_share_one_pool_and_small_ones_always_pass() {
        let budget = BodyBudget::new(100, 10);
        let first = budget.reserve(60).unwrap();
        assert_eq!(budget.reserve(41).unwrap_err(), Spent { pool_bytes: 100 }, "60 + 41 > 100");
        let second = budget.reserve(40).unwrap();
        assert!(budget.reserve(11).is_err(), "the pool is spent");
        let _smalls: Vec<_> = (0..1000).map(|_| budget.reserve(10).unwrap()).collect();
        drop(first);
        assert!(budget.reserve(60).is_ok(), "a dropped reservation returns its bytes");
        drop(second);
        assert!(budget.reserve(101).is_err(), "larger than the pool: never");
        assert!(budget.reserve(usize::MAX).is_err());
    }
}
