//! The canonical, tagged, self-delimiting encoder that every projection is written with.

/// Tags of the byte format. Changing one is a breaking change of every fingerprint.
mod tag {
    pub(crate) const STR: u8 = 0x01;
    pub(crate) const BYTES: u8 = 0x02;
    pub(crate) const U64: u8 = 0x03;
    pub(crate) const I64: u8 = 0x04;
    pub(crate) const FALSE: u8 = 0x05;
    pub(crate) const TRUE: u8 = 0x06;
    pub(crate) const NONE: u8 = 0x07;
    pub(crate) const SOME: u8 = 0x08;
    pub(crate) const LIST: u8 = 0x09;
    pub(crate) const SET: u8 = 0x0A;
    pub(crate) const MAP: u8 = 0x0B;
    pub(crate) const RECORD: u8 = 0x0C;
    /// Precedes every element of a list, set or map.
    pub(crate) const ITEM: u8 = 0x01;
    /// Ends a list, set or map.
    pub(crate) const END: u8 = 0x00;
}

pub(crate) use tag::{END as END_TAG, ITEM as ITEM_TAG, SET as SET_TAG};

/// Writes projection values in the canonical byte format below.
///
/// # Byte format (version 1)
///
/// Every value starts with a one-byte tag. `len` is the unsigned LEB128 length in bytes;
/// LEB128 is seven bits a byte, low bits first, the high bit set on every byte but the last.
///
/// | value            | bytes                                                              |
/// |------------------|--------------------------------------------------------------------|
/// | string           | `0x01` · len · UTF-8 bytes                                         |
/// | bytes            | `0x02` · len · bytes                                               |
/// | unsigned integer | `0x03` · LEB128                                                    |
/// | signed integer   | `0x04` · 8 bytes LE (two's complement)                             |
/// | `false` / `true` | `0x05` / `0x06`                                                    |
/// | `None`           | `0x07`                                                             |
/// | `Some(v)`        | `0x08` · v                                                         |
/// | list             | `0x09` · (`0x01` · item)* in the given order · `0x00`              |
/// | set              | `0x0A` · (`0x01` · item)* sorted by item bytes · `0x00`            |
/// | map              | `0x0B` · (`0x01` · key · value)* sorted by key, then value · `0x00` |
/// | record           | `0x0C` · (LEB128 field tag ≥ 1 · value)* in written order · `0x00` |
///
/// Each encoded value is self-delimiting (prefix-free), so concatenations are unambiguous and
/// the encoding is injective. Sets and maps are multisets: duplicates are kept, and rejecting
/// them is the caller's validation job. Record field tags are code constants starting at 1
/// (tag 0 ends a record).
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

    /// An encoder that writes after the bytes `buf` already holds (usually an empty buffer
    /// kept for reuse).
    pub fn from_vec(buf: Vec<u8>) -> Self {
        Self { buf }
    }

    /// An empty encoder with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            buf: Vec::with_capacity(capacity),
        }
    }

    /// The bytes written so far.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Forgets everything written, keeping the allocation for reuse.
    #[inline]
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// Consumes the encoder, returning its bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    #[inline]
    fn len_prefix(&mut self, len: usize) {
        // usize -> u64 is lossless on every platform Rust supports (usize is at most 64 bits).
        self.leb128(len as u64);
    }

    /// Unsigned LEB128: seven bits a byte, low bits first, high bit set on all but the last.
    #[inline]
    fn leb128(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.buf.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.buf.push(n as u8);
    }

    /// Writes a UTF-8 string.
    #[inline]
    pub fn str(&mut self, value: &str) {
        self.bytes_tagged(tag::STR, value.as_bytes());
    }

    /// Writes a byte string.
    #[inline]
    pub fn bytes(&mut self, value: &[u8]) {
        self.bytes_tagged(tag::BYTES, value);
    }

    #[inline]
    fn bytes_tagged(&mut self, tag: u8, value: &[u8]) {
        self.buf.push(tag);
        self.len_prefix(value.len());
        self.buf.extend_from_slice(value);
    }

    /// Writes an unsigned integer.
    #[inline]
    pub fn u64(&mut self, value: u64) {
        self.buf.push(tag::U64);
        self.leb128(value);
    }

    /// Writes a signed integer.
    #[inline]
    pub fn i64(&mut self, value: i64) {
        self.buf.push(tag::I64);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    /// Writes a boolean.
    #[inline]
    pub fn bool(&mut self, value: bool) {
        self.buf.push(if value { tag::TRUE } else { tag::FALSE });
    }

    /// Writes `None`, or `Some` followed by the value written by `some`.
    #[inline]
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
        for i in items {
            self.buf.push(tag::ITEM);
            item(self, i);
        }
        self.buf.push(tag::END);
    }

    /// Writes a set: the order of `items` does not matter, because the encoded items are
    /// sorted by their bytes. Duplicates are kept (it is a multiset).
    pub fn set<I: IntoIterator>(&mut self, items: I, mut item: impl FnMut(&mut Self, I::Item)) {
        self.buf.push(tag::SET);
        let body = self.buf.len();
        let mut ends = Ends::default();
        for i in items {
            self.buf.push(tag::ITEM);
            item(self, i);
            ends.push(self.buf.len());
        }
        self.sort_segments(body, ends.as_slice());
        self.buf.push(tag::END);
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
        let body = self.buf.len();
        let mut ends = Ends::default();
        for (k, v) in entries {
            // Key and value form one segment; sorting whole segments sorts by key first, and
            // since keys are prefix-free, a key never compares against part of a value.
            self.buf.push(tag::ITEM);
            key(self, k);
            value(self, v);
            ends.push(self.buf.len());
        }
        self.sort_segments(body, ends.as_slice());
        self.buf.push(tag::END);
    }

    /// Writes a record. Fields are written with [`RecordEncoder::field`], each with a fixed,
    /// hand-assigned tag (1 or more); by convention tags increase in the order fields are written.
    pub fn record(&mut self, fields: impl FnOnce(&mut RecordEncoder<'_>)) {
        self.buf.push(tag::RECORD);
        let mut record = RecordEncoder {
            enc: self,
            last_tag: 0,
        };
        fields(&mut record);
        self.buf.push(0);
    }

    /// Appends bytes that are already a complete encoded value (for example a nested
    /// projection encoded earlier). The caller guarantees they came from an [`Encoder`].
    #[inline]
    pub fn encoded(&mut self, value: &Encoder) {
        self.buf.extend_from_slice(&value.buf);
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

/// Segment ends of a set or map; most have zero or one element, which need no allocation.
#[derive(Default)]
struct Ends {
    first: [usize; 1],
    len: usize,
    rest: Vec<usize>,
}

impl Ends {
    fn push(&mut self, end: usize) {
        match self.len {
            0 => self.first[0] = end,
            1 => {
                self.rest.reserve(4);
                self.rest.push(self.first[0]);
                self.rest.push(end);
            }
            _ => self.rest.push(end),
        }
        self.len += 1;
    }

    fn as_slice(&self) -> &[usize] {
        match self.len {
            0 => &[],
            1 => &self.first,
            _ => &self.rest,
        }
    }
}

/// Writes the fields of one record; see [`Encoder::record`].
#[derive(Debug)]
pub struct RecordEncoder<'a> {
    enc: &'a mut Encoder,
    last_tag: u16,
}

impl RecordEncoder<'_> {
    /// Writes one field: its tag, then the value written by `value`.
    #[inline]
    pub fn field(&mut self, tag: u16, value: impl FnOnce(&mut Encoder)) -> &mut Self {
        // Tags are code constants, not input: tag 0 or an out-of-order tag is a programming
        // error in a projection, caught in debug builds.
        debug_assert!(
            tag > self.last_tag,
            "record field tags must be >= 1 and strictly increase"
        );
        self.last_tag = tag;
        self.enc.leb128(u64::from(tag));
        value(self.enc);
        self
    }
}
