//! The canonical, tagged, length-prefixed encoder that every projection is written with.

pub(crate) const SET_TAG: u8 = tag::SET;

/// Tags of the byte format. Changing one is a breaking change of every fingerprint.
mod tag {
    pub(super) const STR: u8 = 0x01;
    pub(super) const BYTES: u8 = 0x02;
    pub(super) const U64: u8 = 0x03;
    pub(super) const I64: u8 = 0x04;
    pub(super) const FALSE: u8 = 0x05;
    pub(super) const TRUE: u8 = 0x06;
    pub(super) const NONE: u8 = 0x07;
    pub(super) const SOME: u8 = 0x08;
    pub(super) const LIST: u8 = 0x09;
    pub(super) const SET: u8 = 0x0A;
    pub(super) const MAP: u8 = 0x0B;
    pub(super) const RECORD: u8 = 0x0C;
}

/// Writes projection values in the canonical byte format below.
///
/// # Byte format (version 1)
///
/// Every value starts with a one-byte tag. Lengths and counts are `u64` little-endian.
///
/// | value            | bytes                                                          |
/// |------------------|----------------------------------------------------------------|
/// | string           | `0x01` · len · UTF-8 bytes                                     |
/// | bytes            | `0x02` · len · bytes                                           |
/// | unsigned integer | `0x03` · 8 bytes LE                                            |
/// | signed integer   | `0x04` · 8 bytes LE (two's complement)                         |
/// | `false` / `true` | `0x05` / `0x06`                                                |
/// | `None`           | `0x07`                                                         |
/// | `Some(v)`        | `0x08` · v                                                     |
/// | list             | `0x09` · count · items in the given order                      |
/// | set              | `0x0A` · count · items sorted by their encoded bytes           |
/// | map              | `0x0B` · count · (key · value) pairs sorted by encoded key, then value |
/// | record           | `0x0C` · count · (`u16` LE field tag · value) in the order written |
///
/// Each encoded value is self-delimiting (prefix-free), so concatenations are unambiguous and
/// the encoding is injective. Sets and maps are multisets: duplicates are kept, and rejecting
/// them is the caller's validation job.
///
///(crate) const SET_TAG: u8 = tag::SET;
///
/// Build one with [`Encoder::new`], or let [`Fingerprint::of`](crate::Fingerprint::of) hand
/// you one.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    /// An empty encoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Forgets everything written, keeping the allocation for reuse.
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// Consumes the encoder, returning its bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    fn len_prefix(&mut self, len: usize) {
        // usize -> u64 is lossless on every platform Rust supports (usize is at most 64 bits).
        self.buf.extend_from_slice(&(len as u64).to_le_bytes());
    }

    /// Writes a UTF-8 string.
    pub fn str(&mut self, value: &str) {
        self.bytes_tagged(tag::STR, value.as_bytes())
    }

    /// Writes a byte string.
    pub fn bytes(&mut self, value: &[u8]) {
        self.bytes_tagged(tag::BYTES, value)
    }

    fn bytes_tagged(&mut self, tag: u8, value: &[u8]) {
        self.buf.push(tag);
        self.len_prefix(value.len());
        self.buf.extend_from_slice(value);
    }

    /// Writes an unsigned integer.
    pub fn u64(&mut self, value: u64) {
        self.buf.push(tag::U64);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    /// Writes a signed integer.
    pub fn i64(&mut self, value: i64) {
        self.buf.push(tag::I64);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    /// Writes a boolean.
    pub fn bool(&mut self, value: bool) {
        self.buf.push(if value { tag::TRUE } else { tag::FALSE });
    }

    /// Writes `None`, or `Some` followed by the value written by `some`.
    pub fn option<T>(&mut self, value: Option<T>, some: impl FnOnce(&mut Self, T)) {
        match value {
            None => self.buf.push(tag::NONE),
            Some(v) => {
                self.buf.push(tag::SOME);
                some(self, v);
            }
        }
    }

    /// Writes an ordered list: each item is written by `item`, in iteration order.
    pub fn list<I: IntoIterator>(&mut self, items: I, mut item: impl FnMut(&mut Self, I::Item)) {
        self.buf.push(tag::LIST);
        let count_at = self.reserve_count();
        let mut count = 0usize;
        for i in items {
            item(self, i);
            count += 1;
        }
        self.patch_count(count_at, count);
    }

    /// Writes a set: the order of `items` does not matter, because the encoded items are
    /// sorted by their bytes. Duplicates are kept (it is a multiset).
    pub fn set<I: IntoIterator>(&mut self, items: I, mut item: impl FnMut(&mut Self, I::Item)) {
        self.buf.push(tag::SET);
        let count_at = self.reserve_count();
        let body = self.buf.len();
        let mut ends = Vec::new();
        for i in items {
            item(self, i);
            ends.push(self.buf.len());
        }
        self.patch_count(count_at, ends.len());
        self.sort_segments(body, &ends);
    }

    /// Writes a map: entries are sorted by their encoded key, then their encoded value, so the
    /// iteration order of `entries` does not matter.
    pub fn map<K, V, I: IntoIterator<Item = (K, V)>>(
        &mut self,
        entries: I,
        mut key: impl FnMut(&mut Self, K),
        mut value: impl FnMut(&mut Self, V),
    ) {
        self.buf.push(tag::MAP);
        let count_at = self.reserve_count();
        let body = self.buf.len();
        let mut ends = Vec::new();
        for (k, v) in entries {
            // Key and value form one segment; sorting whole segments sorts by key first, and
            // since keys are prefix-free, a key never compares against part of a value.
            key(self, k);
            value(self, v);
            ends.push(self.buf.len());
        }
        self.patch_count(count_at, ends.len());
        self.sort_segments(body, &ends);
    }

    /// Writes a record. Fields are written with [`RecordEncoder::field`], each with a fixed,
    /// hand-assigned tag; by convention tags increase in the order fields are written.
    pub fn record(&mut self, fields: impl FnOnce(&mut RecordEncoder<'_>)) {
        self.buf.push(tag::RECORD);
        let count_at = self.reserve_count();
        let mut record = RecordEncoder {
            enc: self,
            count: 0,
            last_tag: None,
        };
        fields(&mut record);
        let count = record.count;
        self.patch_count(count_at, count);
    }

    /// Appends bytes that are already a complete encoded value (for example a nested
    /// projection encoded earlier). The caller guarantees they came from an [`Encoder`].
    pub fn encoded(&mut self, value: &Encoder) {
        self.buf.extend_from_slice(&value.buf);
    }

    fn reserve_count(&mut self) -> usize {
        let at = self.buf.len();
        self.buf.extend_from_slice(&[0u8; 8]);
        at
    }

    fn patch_count(&mut self, at: usize, count: usize) {
        self.buf[at..at + 8].copy_from_slice(&(count as u64).to_le_bytes());
    }

    /// Sorts the consecutive segments `body..ends[0]`, `ends[0]..ends[1]`, … in place.
    fn sort_segments(&mut self, body: usize, ends: &[usize]) {
        if ends.len() < 2 {
            return;
        }
        let mut ranges: Vec<(usize, usize)> = Vec::with_capacity(ends.len());
        let mut start = body;
        for &end in ends {
            ranges.push((start, end));
            start = end;
        }
        let segment = |r: &(usize, usize)| &self.buf[r.0..r.1];
        if ranges.windows(2).all(|w| segment(&w[0]) <= segment(&w[1])) {
            return;
        }
        ranges.sort_by(|a, b| segment(a).cmp(segment(b)));
        let mut sorted = Vec::with_capacity(self.buf.len() - body);
        for r in &ranges {
            sorted.extend_from_slice(&self.buf[r.0..r.1]);
        }
        self.buf.truncate(body);
        self.buf.extend_from_slice(&sorted);
    }
}

/// Writes the fields of one record; see [`Encoder::record`].
#[derive(Debug)]
pub struct RecordEncoder<'a> {
    enc: &'a mut Encoder,
    count: usize,
    last_tag: Option<u16>,
}

impl RecordEncoder<'_> {
    /// Writes one field: its tag, then the value written by `value`.
    pub fn field(&mut self, tag: u16, value: impl FnOnce(&mut Encoder)) {
        // Tags are code constants, not input: an out-of-order tag is a programming error in a
        // projection, caught in debug builds. The encoding stays injective either way.
        debug_assert!(
            self.last_tag.is_none_or(|last| last < tag),
            "record field tags must strictly increase"
        );
        self.last_tag = Some(tag);
        self.enc.buf.extend_from_slice(&tag.to_le_bytes());
        value(self.enc);
        self.count += 1;
    }
}
