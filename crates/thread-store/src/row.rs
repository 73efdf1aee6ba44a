//! The flat row form of a record that the SQL adapters store, and its strict decoding.

use compat_fingerprint::{Breakdown, Fingerprint, ShortDigest};

use crate::error::describe_json_error;
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
}

/// The columns of the records table, in [`StoredRow`] order.
pub(crate) const COLUMNS: &str = "id, key, status, format, driver_type, agent, fingerprint, \
     scheme_version, components, codec, state, created_at, updated_at";

impl StoredRow {
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
        })
    }
}

/// Decodes rows in order, stopping at the first unreadable one.
pub(crate) fn decode_all(rows: Vec<StoredRow>) -> Result<Vec<ThreadRecord>, StoreError> {
    rows.into_iter().map(StoredRow::decode).collect()
}
