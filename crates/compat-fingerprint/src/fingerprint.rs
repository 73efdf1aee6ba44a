//! The [`Fingerprint`] digest type, fingerprint [`Kind`]s and short diagnostic digests.

use std::fmt;
use std::str::FromStr;

use crate::Encoder;

/// One kind of fingerprint: a hard-coded, globally unique, versioned blake3 `derive_key`
/// context string, such as `"agent-sdk 2026-11-30 thread-invocation v1"`.
///
/// Two kinds never produce the same fingerprint for the same input. Runtime values (a driver
/// name, a tenant) belong in the encoded projection, never in the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kind {
    context: &'static str,
}

impl Kind {
    /// A kind with the given context string. Use a constant, and bump its version whenever
    /// the projection it hashes changes shape.
    pub const fn new(context: &'static str) -> Self {
        Self { context }
    }

    /// The context string.
    pub const fn context(&self) -> &'static str {
        self.context
    }

    /// A hasher for this kind, for callers that stream bytes themselves.
    pub fn hasher(&self) -> FingerprintHasher {
        FingerprintHasher(with_prepared(self.context, |h| h.clone()))
    }
}

/// Deriving a context key costs a blake3 compression, and a `blake3::Hasher` is a ~2 KiB value
/// that is expensive to copy. Projections hash many small values under a handful of kinds, so
/// each thread keeps one prepared hasher per kind and resets it between uses.
fn with_prepared<R>(context: &'static str, f: impl FnOnce(&mut blake3::Hasher) -> R) -> R {
    use std::cell::RefCell;
    /// Kinds are code constants, so this stays small; the cap guards against leaked strings.
    const CAP: usize = 64;
    thread_local! {
        static PREPARED: RefCell<Vec<(&'static str, blake3::Hasher)>> = const { RefCell::new(Vec::new()) };
    }
    PREPARED.with(|cache| {
        let Ok(mut cache) = cache.try_borrow_mut() else {
            // Re-entered from inside `f`: fall back to a fresh hasher.
            return f(&mut blake3::Hasher::new_derive_key(context));
        };
        let index = match cache
            .iter()
            .position(|(c, _)| std::ptr::eq(*c, context) || *c == context)
        {
            Some(i) => i,
            None if cache.len() < CAP => {
                cache.push((context, blake3::Hasher::new_derive_key(context)));
                cache.len() - 1
            }
            None => {
                drop(cache);
                return f(&mut blake3::Hasher::new_derive_key(context));
            }
        };
        let hasher = &mut cache[index].1;
        hasher.reset();
        f(hasher)
    })
}

/// Runs `f` with an empty byte buffer that is reused across calls on this thread, so hashing
/// a projection does not allocate. A nested call (from inside `f`) gets a fresh buffer.
fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    use std::cell::RefCell;
    /// Buffers larger than this are not kept, so one huge projection does not pin memory.
    const KEEP: usize = 64 * 1024;
    thread_local! {
        static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    let mut buf = SCRATCH.with(|s| {
        s.try_borrow_mut()
            .map(|mut b| std::mem::take(&mut *b))
            .unwrap_or_default()
    });
    buf.clear();
    let out = f(&mut buf);
    if buf.capacity() <= KEEP {
        buf.clear();
        SCRATCH.with(|s| {
            if let Ok(mut slot) = s.try_borrow_mut()
                && slot.capacity() < buf.capacity()
            {
                *slot = buf;
            }
        });
    }
    out
}

/// A streaming hasher for one [`Kind`]; most callers want [`Fingerprint::of`].
#[derive(Debug, Clone)]
pub struct FingerprintHasher(blake3::Hasher);

impl FingerprintHasher {
    /// Feeds bytes; they should be an [`Encoder`]'s output, or the encoding is not canonical.
    pub fn update(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update(bytes);
        self
    }

    /// The fingerprint of everything fed so far.
    pub fn finish(&self) -> Fingerprint {
        Fingerprint(*self.0.finalize().as_bytes())
    }
}

/// A 32-byte blake3 digest of a projection, displayed as `b3:<64 hex digits>`.
///
/// Cheap to copy and compare. It reveals nothing about its input beyond equality.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

const PREFIX: &str = "b3:";

impl Fingerprint {
    /// Encodes a projection with `project` and hashes it under `kind`.
    pub fn of(kind: Kind, project: impl FnOnce(&mut Encoder)) -> Self {
        with_scratch(|buf| {
            let mut enc = Encoder::from_vec(std::mem::take(buf));
            project(&mut enc);
            let fingerprint = Self::of_encoded(kind, &enc);
            *buf = enc.into_bytes();
            fingerprint
        })
    }

    /// Hashes an already encoded projection under `kind`.
    pub fn of_encoded(kind: Kind, encoded: &Encoder) -> Self {
        with_prepared(kind.context, |h| {
            Self(*h.update(encoded.as_bytes()).finalize().as_bytes())
        })
    }

    /// Hashes a set of already encoded values under `kind`, without copying them: the same
    /// fingerprint as [`Encoder::set`] over [`Encoder::encoded`] items. Sorts `items` in place.
    pub fn of_encoded_set(kind: Kind, items: &mut [&[u8]]) -> Self {
        use crate::encoder::{END_TAG, ITEM_TAG, SET_TAG};
        items.sort_unstable();
        // One contiguous update: many tiny updates cost more than the copy.
        with_scratch(|bytes| {
            bytes.push(SET_TAG);
            for item in items.iter() {
                bytes.push(ITEM_TAG);
                bytes.extend_from_slice(item);
            }
            bytes.push(END_TAG);
            with_prepared(kind.context, |h| {
                Self(*h.update(bytes).finalize().as_bytes())
            })
        })
    }

    /// The fingerprint with these raw digest bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The raw digest bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The first six bytes, for messages that must name a value without reproducing it.
    pub fn short(&self) -> ShortDigest {
        let mut short = [0u8; SHORT_LEN];
        short.copy_from_slice(&self.0[..SHORT_LEN]);
        ShortDigest(short)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(PREFIX)?;
        write_hex(f, &self.0)
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// Why a string is not a [`Fingerprint`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseFingerprintError {
    /// The string does not start with `b3:`.
    #[error("fingerprint must start with \"b3:\"")]
    MissingPrefix,
    /// The hex part does not have 64 digits.
    #[error("fingerprint must have 64 hex digits after \"b3:\", found {len}")]
    BadLength {
        /// How many characters followed the prefix.
        len: usize,
    },
    /// A character is not a lowercase hex digit.
    #[error("fingerprint has a non-hex character at position {position}")]
    BadDigit {
        /// Byte offset of the first bad character, counted after the prefix.
        position: usize,
    },
}

impl FromStr for Fingerprint {
    type Err = ParseFingerprintError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s
            .strip_prefix(PREFIX)
            .ok_or(ParseFingerprintError::MissingPrefix)?;
        if hex.len() != 64 {
            return Err(ParseFingerprintError::BadLength { len: hex.len() });
        }
        let mut out = [0u8; 32];
        let digits = hex.as_bytes();
        for (i, byte) in out.iter_mut().enumerate() {
            let hi = hex_value(digits[2 * i])
                .ok_or(ParseFingerprintError::BadDigit { position: 2 * i })?;
            let lo = hex_value(digits[2 * i + 1]).ok_or(ParseFingerprintError::BadDigit {
                position: 2 * i + 1,
            })?;
            *byte = (hi << 4) | lo;
        }
        Ok(Self(out))
    }
}

impl serde::Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

const SHORT_LEN: usize = 6;

/// Six digest bytes shown as 12 hex digits: enough to tell values apart in a message, while
/// reproducing none of them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShortDigest([u8; SHORT_LEN]);

/// Context for digests of identity strings that appear in diagnostics.
const DIAGNOSTIC: Kind =
    Kind::new("agent-sdk 2026-11-30 compat-fingerprint diagnostic-identity v1");

impl ShortDigest {
    /// The short digest of a caller- or provider-supplied string, for error messages that must
    /// refer to it without reproducing it.
    pub fn of_str(value: &str) -> Self {
        Fingerprint::of(DIAGNOSTIC, |e| {
            e.str(value);
        })
        .short()
    }
}

impl fmt::Display for ShortDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Debug for ShortDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ShortDigest({self})")
    }
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 64];
    for (i, b) in bytes.iter().enumerate() {
        out[2 * i] = DIGITS[usize::from(b >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(b & 0x0f)];
    }
    // Every byte written above is an ASCII hex digit.
    f.write_str(std::str::from_utf8(&out[..bytes.len() * 2]).map_err(|_| fmt::Error)?)
}

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}
