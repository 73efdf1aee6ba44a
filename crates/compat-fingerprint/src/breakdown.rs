//! Fingerprints built from named components, and the diff that explains a mismatch.

use std::collections::BTreeMap;
use std::fmt;

use crate::{Fingerprint, Kind, ShortDigest};

const NAME_MAX: usize = 64;

/// The fixed identifier of one component of a [`Breakdown`], such as `model` or
/// `attachment.semantic:3f2a9c1b04de`.
///
/// Grammar: 1 to 64 characters; the first is `a-z`; the rest are `a-z`, `0-9`, `.`, `_`, `-`
/// or `:`. Names are code constants, optionally suffixed with a [`ShortDigest`]
/// ([`ComponentName::with_digest`]), so they never carry input values.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct ComponentName(String);

/// Why a string is not a valid [`ComponentName`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ComponentNameError {
    /// The name is empty.
    #[error("component name is empty")]
    Empty,
    /// The name is longer than 64 characters.
    #[error("component name is {len} bytes long; the limit is 64")]
    TooLong {
        /// The length found.
        len: usize,
    },
    /// The name has a character outside the grammar (not shown: it may be input).
    #[error("component name has a character outside [a-z0-9._:-] at byte {position}")]
    BadCharacter {
        /// Byte offset of the first bad character.
        position: usize,
    },
}

impl ComponentName {
    /// Validates a component name.
    pub fn new(name: impl Into<String>) -> Result<Self, ComponentNameError> {
        let name = name.into();
        if name.is_empty() {
            return Err(ComponentNameError::Empty);
        }
        if name.len() > NAME_MAX {
            return Err(ComponentNameError::TooLong { len: name.len() });
        }
        for (position, b) in name.bytes().enumerate() {
            let ok = match b {
                b'a'..=b'z' => true,
                b'0'..=b'9' | b'.' | b'_' | b'-' | b':' => position > 0,
                _ => false,
            };
            if !ok {
                return Err(ComponentNameError::BadCharacter { position });
            }
        }
        Ok(Self(name))
    }

    /// `prefix:<digest>`: a component that stands for one of many values (an attachment, an
    /// MCP server) named by a short digest instead of its raw string.
    pub fn with_digest(prefix: &str, digest: ShortDigest) -> Result<Self, ComponentNameError> {
        // Only the prefix needs checking: `:` and hex digits are always in the grammar.
        Self::new(prefix)?;
        let mut name = String::with_capacity(prefix.len() + 13);
        name.push_str(prefix);
        name.push(':');
        std::fmt::Write::write_fmt(&mut name, format_args!("{digest}"))
            .map_err(|_| ComponentNameError::Empty)?;
        if name.len() > NAME_MAX {
            return Err(ComponentNameError::TooLong { len: name.len() });
        }
        Ok(Self(name))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ComponentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ComponentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ComponentName({})", self.0)
    }
}

impl<'de> serde::Deserialize<'de> for ComponentName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Self::new(s).map_err(serde::de::Error::custom)
    }
}

/// A set of named component digests. Its [`root`](Breakdown::root) fingerprint is a hash of
/// all of them; its [`diff`](Breakdown::diff) with another says which components changed.
///
/// Serializes as a map from component name to `b3:` fingerprint: safe to store and to show.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Breakdown {
    components: BTreeMap<ComponentName, Fingerprint>,
}

/// Why a component could not be added to a [`Breakdown`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BreakdownError {
    /// A component with this name is already present.
    #[error("component {name} is already present")]
    Duplicate {
        /// The component's name (a fixed identifier, safe to show).
        name: ComponentName,
    },
}

/// How one component differs between two breakdowns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Change {
    /// Present only in the new breakdown.
    Added,
    /// Present only in the old breakdown.
    Removed,
    /// Present in both with different digests.
    Changed,
}

/// One entry of [`Breakdown::diff`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ComponentChange {
    /// The component.
    pub name: ComponentName,
    /// What happened to it.
    pub change: Change,
}

impl fmt::Display for ComponentChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.change {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Changed => "changed",
        };
        write!(f, "{} {what}", self.name)
    }
}

impl Breakdown {
    /// An empty breakdown.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a component; a name that is already present is an error and changes nothing.
    pub fn insert(
        &mut self,
        name: ComponentName,
        digest: Fingerprint,
    ) -> Result<(), BreakdownError> {
        use std::collections::btree_map::Entry;
        match self.components.entry(name) {
            Entry::Occupied(e) => Err(BreakdownError::Duplicate {
                name: e.key().clone(),
            }),
            Entry::Vacant(e) => {
                e.insert(digest);
                Ok(())
            }
        }
    }

    /// Sets a component, replacing any digest it had.
    pub fn insert_or_replace(&mut self, name: ComponentName, digest: Fingerprint) {
        self.components.insert(name, digest);
    }

    /// The digest of one component.
    pub fn get(&self, name: &ComponentName) -> Option<Fingerprint> {
        self.components.get(name).copied()
    }

    /// The components, sorted by name.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&ComponentName, &Fingerprint)> {
        self.components.iter()
    }

    /// How many components there are.
    pub fn len(&self) -> usize {
        self.components.len()
    }

    /// Whether there are no components.
    pub fn is_empty(&self) -> bool {
        self.components.is_empty()
    }

    /// The fingerprint of the whole breakdown under `kind`: a hash of every (name, digest)
    /// pair, independent of insertion order.
    pub fn root(&self, kind: Kind) -> Fingerprint {
        Fingerprint::of(kind, |e| {
            e.map(
                self.components.iter(),
                |e, name| {
                    e.str(name.as_str());
                },
                |e, digest| {
                    e.bytes(digest.as_bytes());
                },
            );
        })
    }

    /// The components that differ from `self` (old) to `new`, sorted by name.
    pub fn diff(&self, new: &Breakdown) -> Vec<ComponentChange> {
        let mut changes = Vec::new();
        for (name, old_digest) in &self.components {
            match new.components.get(name) {
                None => changes.push(ComponentChange {
                    name: name.clone(),
                    change: Change::Removed,
                }),
                Some(d) if d != old_digest => changes.push(ComponentChange {
                    name: name.clone(),
                    change: Change::Changed,
                }),
                Some(_) => {}
            }
        }
        for name in new.components.keys() {
            if !self.components.contains_key(name) {
                changes.push(ComponentChange {
                    name: name.clone(),
                    change: Change::Added,
                });
            }
        }
        changes.sort_by(|a, b| a.name.cmp(&b.name));
        changes
    }
}

impl FromIterator<(ComponentName, Fingerprint)> for Breakdown {
    /// Collects components; a repeated name keeps the last digest.
    fn from_iter<T: IntoIterator<Item = (ComponentName, Fingerprint)>>(iter: T) -> Self {
        Self {
            components: iter.into_iter().collect(),
        }
    }
}
