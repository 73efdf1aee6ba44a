//! The clock that the memory and SQLite stores read lease expiry from, and a manual one for
//! tests.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use crate::Timestamp;

/// A source of the current time for lease expiry.
///
/// The memory and SQLite stores take one as `Arc<dyn Clock>`, so tests can expire leases
/// without sleeping. The PostgreSQL store ignores host clocks: it uses the server's `now()`.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that moves only when told to. Clones share the same time.
#[derive(Clone)]
pub struct ManualClock {
    millis: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: Timestamp) -> Self {
        Self {
            millis: Arc::new(AtomicI64::new(start.as_millis())),
        }
    }

    /// A clock stopped at the current system time.
    pub fn starting_now() -> Self {
        Self::new(Timestamp::now())
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        let _ = self
            .millis
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |m| {
                Some(m.saturating_add(by))
            });
    }

    /// Sets the clock to `to` (which may be earlier than now).
    pub fn set(&self, to: Timestamp) {
        self.millis.store(to.as_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(self.millis.load(Ordering::SeqCst))
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ManualClock").field(&self.now()).finish()
    }
}
