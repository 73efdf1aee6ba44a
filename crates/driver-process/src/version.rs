//! [`Version`]: a CLI's `major.minor.patch`, found in its `--version` text. A leaf: the
//! probe that runs the CLI is [`probe`](crate::probe).

use std::fmt;

/// A `major.minor.patch` version, ordered numerically.
///
/// ```
/// use driver_process::version::Version;
///
/// let v = Version::new(0, 169, 0);
/// assert!(v > Version::new(0, 99, 12));
/// assert_eq!(v.to_string(), "0.169.0");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// The major number.
    pub major: u64,
    /// The minor number.
    pub minor: u64,
    /// The patch number.
    pub patch: u64,
}

impl Version {
    /// A version.
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// The first `x.y.z` in `text` whose first digit does not follow a digit or a dot (so
    /// `1.2.3` is found in `v1.2.3-rc1`, and nothing in `a.1.2.3`'s middle). Numbers that
    /// overflow `u64` are not versions.
    pub fn find_in(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        (0..bytes.len())
            .filter(|&i| {
                bytes[i].is_ascii_digit()
                    && (i == 0 || !(bytes[i - 1].is_ascii_digit() || bytes[i - 1] == b'.'))
            })
            .find_map(|i| parse_at(&bytes[i..]))
    }
}

/// `x.y.z` at the start of `bytes`.
fn parse_at(bytes: &[u8]) -> Option<Version> {
    let mut parts = [0u64; 3];
    let mut rest = bytes;
    for (n, part) in parts.iter_mut().enumerate() {
        if n > 0 {
            rest = rest.strip_prefix(b".")?;
        }
        let len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if len == 0 {
            return None;
        }
        *part = std::str::from_utf8(&rest[..len]).ok()?.parse().ok()?;
        rest = &rest[len..];
    }
    Some(Version::new(parts[0], parts[1], parts[2]))
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}
