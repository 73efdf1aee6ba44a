//! The flat row form of a record that the SQL adapters store, and its strict decoding.

use compat_fingerprint::{Breakdown, Fingerprint, ShortDigest};

use crate::error::describe_json_error;
use crate::record::check_name;
use crate::{
    Compatibility, RECORD_FORMAT_VERSION, RecordId, RecordStatus, SessionState, StoreError,
    ThreadRecord, Timestamp,
};

/// One record as the SQL tables hold it: scalars and two JSON text columns.
#[derive(Debug, Clone)]
pub(crate) struct StoredRow {
    pub(crate) id: String,
    pub(crate) key: String,
    pub(crate) status: String,
    pub(crate) format: i64,
    pub(crate) driver_type: String,
    pub(crate) agent: String,
    pub(crate) fingerprint: String,
    pub(crate) scheme_version: i64,
    pub(crate) components: String,
    pub(crate) codec: String,
    pub(crate) state: String,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) turns: i64,
    pub(crate) namespace: Option<String>,
}

/// The columns of the records table, in [`StoredRow`] order.
pub(crate) const COLUMNS: &str = "id, key, status, format, driver_type, agent, fingerprint, \
     scheme_version, components, codec, state, created_at, updated_at, turns, namespace";

/// [`COLUMNS`], each qualified by a table alias (`t.id, t.key, ...`), for joins.
pub(crate) fn columns_of(alias: &str) -> String {
    COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The newest schema version of the SQL adapters. Both number their migrations alike: entry
/// `n` brings the schema from version `n` to `n + 1`, so a column added to the records
/// table (and to [`StoredRow`], [`COLUMNS`] and [`RowSource`]) is one version on both.
pub(crate) const SCHEMA_VERSION: i64 = 4;

/// Refuses a schema this build cannot read: newer than [`SCHEMA_VERSION`], or negative.
/// `engine` names the database in the message ("SQLite", "PostgreSQL").
pub(crate) fn check_schema_version(engine: &str, found: i64) -> Result<(), StoreError> {
    if found > SCHEMA_VERSION {
        return Err(StoreError::corrupt(format!(
            "the {engine} schema is at version {found}, newer than this build supports ({SCHEMA_VERSION})"
        )));
    }
    if found < 0 {
        return Err(StoreError::corrupt(format!(
            "the {engine} schema version {found} is not a valid version"
        )));
    }
    Ok(())
}

/// A fencing token as the SQL adapters store it (a signed 64-bit integer).
pub(crate) fn token_to_sql(token: u64) -> Result<i64, StoreError> {
    i64::try_from(token).map_err(|_| StoreError::invalid("lease token is out of range"))
}

/// A stored fencing token; a negative one was never written by a store.
pub(crate) fn token_from_sql(token: i64) -> Result<u64, StoreError> {
    u64::try_from(token).map_err(|_| StoreError::corrupt("a stored lease token is negative"))
}

/// A database row the records table's columns can be read from, by index in [`COLUMNS`]
/// order: each SQL adapter implements it for its driver's row type.
pub(crate) trait RowSource {
    /// The driver's error for a column of the wrong type.
    type Error;
    /// A text column.
    fn text(&self, index: usize) -> Result<String, Self::Error>;
    /// An integer column.
    fn int(&self, index: usize) -> Result<i64, Self::Error>;
    /// A nullable text column.
    fn opt_text(&self, index: usize) -> Result<Option<String>, Self::Error>;
}

impl StoredRow {
    /// Reads a row selected with [`COLUMNS`] (or [`columns_of`]), in that order.
    pub(crate) fn read<R: RowSource>(row: &R) -> Result<Self, R::Error> {
        Ok(Self {
            id: row.text(0)?,
            key: row.text(1)?,
            status: row.text(2)?,
            format: row.int(3)?,
            driver_type: row.text(4)?,
            agent: row.text(5)?,
            fingerprint: row.text(6)?,
            scheme_version: row.int(7)?,
            components: row.text(8)?,
            codec: row.text(9)?,
            state: row.text(10)?,
            created_at: row.int(11)?,
            updated_at: row.int(12)?,
            turns: row.int(13)?,
            namespace: row.opt_text(14)?,
        })
    }

    /// Encodes a record. Serializing these plain types cannot fail; a failure would be a bug
    /// in serde_json, reported as `InvalidInput` rather than a panic.
    pub(crate) fn encode(record: &ThreadRecord) -> Result<Self, StoreError> {
        let components = serde_json::to_string(&record.compatibility.components)
            .map_err(|_| StoreError::invalid("the component breakdown does not serialize"))?;
        let state = serde_json::to_string(&record.state)
            .map_err(|_| StoreError::invalid("the session state does not serialize"))?;
        Ok(Self {
            id: record.id.as_str().to_owned(),
            key: record.key.clone(),
            status: record.status.as_str().to_owned(),
            format: i64::from(RECORD_FORMAT_VERSION),
            driver_type: record.driver_type.clone(),
            agent: record.agent.clone(),
            fingerprint: record.compatibility.fingerprint.to_string(),
            scheme_version: i64::from(record.compatibility.scheme_version),
            components,
            codec: record.session_codec.clone(),
            state,
            created_at: record.created_at.as_millis(),
            updated_at: record.updated_at.as_millis(),
            turns: i64::try_from(record.turns).unwrap_or(i64::MAX),
            namespace: record.namespace.clone(),
        })
    }

    /// Decodes a stored row, refusing anything this build does not understand.
    pub(crate) fn decode(self) -> Result<ThreadRecord, StoreError> {
        let which = ShortDigest::of_str(&self.id);
        let corrupt = |what: String| StoreError::corrupt(format!("record {which}: {what}"));
        if self.format != i64::from(RECORD_FORMAT_VERSION) {
            return Err(corrupt(format!(
                "record format version {} is not supported (this build reads version {RECORD_FORMAT_VERSION})",
                self.format
            )));
        }
        let id = RecordId::new(self.id)
            .map_err(|_| corrupt("the record id is empty or too long".into()))?;
        let status = RecordStatus::parse(&self.status)
            .ok_or_else(|| corrupt("the status is neither \"active\" nor \"archived\"".into()))?;
        let fingerprint: Fingerprint = self
            .fingerprint
            .parse()
            .map_err(|e| corrupt(format!("the compatibility fingerprint does not parse: {e}")))?;
        let scheme_version = u32::try_from(self.scheme_version).map_err(|_| {
            corrupt(format!(
                "the fingerprint scheme version {} is out of range",
                self.scheme_version
            ))
        })?;
        let turns = u64::try_from(self.turns)
            .map_err(|_| corrupt(format!("the turn count {} is negative", self.turns)))?;
        if self
            .namespace
            .as_deref()
            .is_some_and(|ns| check_name("namespace", ns).is_err())
        {
            return Err(corrupt(
                "the owning namespace is empty, too long or holds a NUL character".into(),
            ));
        }
        let components: Breakdown = serde_json::from_str(&self.components).map_err(|e| {
            corrupt(format!(
                "the component breakdown does not decode: {}",
                describe_json_error(&e)
            ))
        })?;
        let state: SessionState = serde_json::from_str(&self.state).map_err(|e| {
            corrupt(format!(
                "the session state does not decode: {}",
                describe_json_error(&e)
            ))
        })?;
        Ok(ThreadRecord {
            id,
            key: self.key,
            status,
            driver_type: self.driver_type,
            agent: self.agent,
            compatibility: Compatibility {
                fingerprint,
                scheme_version,
                components,
            },
            session_codec: self.codec,
            state,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
            turns,
            namespace: self.namespace,
        })
    }
}

/// Decodes rows in order, stopping at the first unreadable one.
pub(crate) fn decode_all(rows: Vec<StoredRow>) -> Result<Vec<ThreadRecord>, StoreError> {
    rows.into_iter().map(StoredRow::decode).collect()
}

/// Property suite of the private row decoder (issue 13): whatever a SQL row holds, decoding
/// never panics, refuses with `Corrupt` naming the record only by digest and never echoing a
/// column, and a row encoded from a record decodes to that record.
#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod fuzz {
    use std::collections::BTreeMap;

    use compat_fingerprint::{Breakdown, ComponentName, Fingerprint};
    use proptest::prelude::*;
    use proptest::test_runner::Config;

    use super::StoredRow;
    use crate::{
        Compatibility, RECORD_FORMAT_VERSION, RecordId, RecordStatus, SessionState, StoreError,
        ThreadRecord, Timestamp,
    };

    fn config() -> Config {
        test_support::fuzz_config()
    }

    /// Column text: arbitrary, JSON-looking, or valid values of some column.
    fn column() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => "\\PC{0,40}",
            1 => Just("active".to_owned()),
            1 => Just("archived".to_owned()),
            1 => Just(Fingerprint::from_bytes([7; 32]).to_string()),
            1 => Just("{}".to_owned()),
            1 => Just(r#"{"resume_id":"r","display_id":null,"data":{}}"#.to_owned()),
            1 => "\\{\"[a-z_]{1,10}\":\\PC{0,12}\\}",
        ]
    }

    fn number() -> impl Strategy<Value = i64> {
        prop_oneof![
            Just(i64::from(RECORD_FORMAT_VERSION)),
            Just(1),
            any::<i64>(),
        ]
    }

    prop_compose! {
        fn stored_row()(
            id in column(), key in column(), status in column(), format in number(),
            driver_type in column(), agent in column(), fingerprint in column(),
            scheme_version in number(), components in column(), codec in column(),
            state in column(), created_at in any::<i64>(), updated_at in any::<i64>(),
            turns in number(),
            namespace in proptest::option::of(column()),
        ) -> StoredRow {
            StoredRow {
                id, key, status, format, driver_type, agent, fingerprint, scheme_version,
                components, codec, state, created_at, updated_at, turns, namespace,
            }
        }
    }

    /// A row's text columns, kept before `decode` consumes the row: both fuzz properties
    /// compare what decoding says against them.
    fn text_columns(row: &StoredRow) -> [String; 10] {
        [
            row.id.clone(),
            row.key.clone(),
            row.status.clone(),
            row.driver_type.clone(),
            row.agent.clone(),
            row.fingerprint.clone(),
            row.components.clone(),
            row.codec.clone(),
            row.state.clone(),
            row.namespace.clone().unwrap_or_default(),
        ]
    }

    prop_compose! {
        fn record()(
            key in "[a-z0-9/_-]{1,24}",
            archived in any::<bool>(),
            driver in "\\PC{0,12}",
            agent in "\\PC{0,12}",
            root in any::<[u8; 32]>(),
            scheme_version in any::<u32>(),
            parts in proptest::collection::btree_map("[a-z][a-z0-9_.]{0,12}", any::<[u8; 32]>(), 0..4),
            codec in "\\PC{0,12}",
            resume_id in "\\PC{0,24}",
            display_id in proptest::option::of("\\PC{0,12}"),
            data in proptest::collection::btree_map("\\PC{0,8}", "\\PC{0,8}", 0..4),
            created_at in any::<i64>(),
            updated_at in any::<i64>(),
            turns in 0..=i64::MAX as u64,
            namespace in proptest::option::of("[a-z][a-z0-9_-]{0,8}(:[A-Za-z0-9._@+-]{1,12})?"),
        ) -> ThreadRecord {
            let mut components = Breakdown::new();
            for (name, digest) in parts {
                if let Ok(name) = ComponentName::new(&name) {
                    components.insert_or_replace(name, Fingerprint::from_bytes(digest));
                }
            }
            ThreadRecord {
                id: RecordId::generate(),
                key,
                status: if archived { RecordStatus::Archived } else { RecordStatus::Active },
                driver_type: driver,
                agent,
                compatibility: Compatibility {
                    fingerprint: Fingerprint::from_bytes(root),
                    scheme_version,
                    components,
                },
                session_codec: codec,
                state: SessionState { resume_id, display_id, data: data.into_iter().collect::<BTreeMap<_, _>>() },
                created_at: Timestamp::from_millis(created_at),
                updated_at: Timestamp::from_millis(updated_at),
                turns,
                namespace,
            }
        }
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn any_row_decodes_or_is_refused_as_corrupt_without_echo(row in stored_row()) {
            let columns = text_columns(&row);
            match row.decode() {
                Ok(record) => {
                    prop_assert_eq!(record.status.as_str(), columns[2].as_str());
                    prop_assert_eq!(&record.state, &serde_json::from_str::<SessionState>(&columns[8]).unwrap());
                }
                Err(StoreError::Corrupt { .. }) => {}
                Err(other) => prop_assert!(false, "not Corrupt: {other:?}"),
            }
        }

        #[test]
        fn refusals_never_reproduce_a_column(row in stored_row()) {
            let columns = text_columns(&row);
            if let Err(error) = row.decode() {
                let message = error.to_string();
                for column in columns.iter().filter(|c| c.len() >= 12) {
                    prop_assert!(!message.contains(column.as_str()), "{message}");
                }
            }
        }

        #[test]
        fn encoded_records_decode_to_themselves(record in record()) {
            let row = StoredRow::encode(&record).unwrap();
            prop_assert_eq!(row.decode().unwrap(), record);
        }

        #[test]
        fn a_damaged_column_of_a_good_row_is_refused(record in record(), which in 0usize..5, junk in "\\PC{0,16}") {
            let mut row = StoredRow::encode(&record).unwrap();
            match which {
                0 => row.status = junk.clone(),
                1 => row.fingerprint = junk.clone(),
                2 => row.components = format!("[{junk}"),
                3 => row.state = format!("{{{junk}"),
                _ => row.format = i64::from(RECORD_FORMAT_VERSION) + 1,
            }
            let refused = matches!(row.decode(), Err(StoreError::Corrupt { .. }));
            let still_valid = match which {
                0 => RecordStatus::parse(&junk).is_some(),
                1 => junk.parse::<Fingerprint>().is_ok(),
                _ => false,
            };
            prop_assert_eq!(refused, !still_valid);
        }
    }
}
