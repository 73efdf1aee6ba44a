//! Pre-warmed first turns: what [`Driver::prewarm`](crate::Driver::prewarm) leaves ready
//! ([`Prewarmed`]) and the [`PrewarmTicket`] the next run carries to find it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The place a driver reserved for a pre-warmed process of a request with no stored session
/// to continue (a new, stateless or forked session), which only the next run that carries it
/// ([`Request::with_prewarmed`](crate::Request::with_prewarmed)) may take.
///
/// A ticket is a random name, not a secret and not a capability: it serves a run only when
/// that run's exact [`ProcessSignature`](crate::ProcessSignature) is the pre-warm's (any
/// rotation in between recycles the process), and only once. A ticket of another driver, or
/// one whose process was evicted, finds nothing: the run starts its process as without one.
///
/// ```
/// use driver_spi::PrewarmTicket;
///
/// let a = PrewarmTicket::new();
/// assert_ne!(a, PrewarmTicket::new());
/// assert_eq!(a.as_str().len(), 32);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct PrewarmTicket(String);

impl PrewarmTicket {
    /// A fresh ticket: 128 random bits as hex.
    #[allow(
        clippy::new_without_default,
        reason = "every ticket is a new random name"
    )]
    pub fn new() -> Self {
        let mut bytes = [0u8; 16];
        if getrandom::fill(&mut bytes).is_err() {
            // Without an OS random source a ticket only needs to be unique in this process.
            static NEXT: AtomicU64 = AtomicU64::new(0);
            bytes[..8].copy_from_slice(&NEXT.fetch_add(1, Ordering::Relaxed).to_le_bytes());
            bytes[8..].copy_from_slice(&u64::from(std::process::id()).to_le_bytes());
        }
        Self(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The ticket's name (32 lowercase hex digits).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a pre-warm left ready for the next run of its request.
///
/// ```
/// use std::time::Duration;
/// use driver_spi::{Prewarmed, PrewarmTicket};
///
/// let ready = Prewarmed::new(Some(PrewarmTicket::new()))
///     .with_reused(false)
///     .with_expires_after(Some(Duration::from_secs(600)));
/// assert!(ready.ticket.is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Prewarmed {
    /// For a request with no stored session to continue: the ticket the next run must carry
    /// ([`Request::with_prewarmed`](crate::Request::with_prewarmed)). `None` for a resume,
    /// whose process is found by its session, as every resident turn's is.
    pub ticket: Option<PrewarmTicket>,
    /// Whether a live idle process already fit the request (nothing was started).
    pub reused: bool,
    /// How long the process stays ready unused before it is evicted like any idle one (the
    /// pool's idle timeout), when the driver knows; the host may drop what it kept for the
    /// run (the run-service attachment) then.
    pub expires_after: Option<Duration>,
}

impl Prewarmed {
    /// A pre-warm that started its process, with `ticket` (see [`ticket`](Self::ticket)).
    pub fn new(ticket: Option<PrewarmTicket>) -> Self {
        Self {
            ticket,
            reused: false,
            expires_after: None,
        }
    }

    /// Sets [`reused`](Self::reused).
    pub fn with_reused(mut self, reused: bool) -> Self {
        self.reused = reused;
        self
    }

    /// Sets [`expires_after`](Self::expires_after).
    pub fn with_expires_after(mut self, expires_after: Option<Duration>) -> Self {
        self.expires_after = expires_after;
        self
    }
}
