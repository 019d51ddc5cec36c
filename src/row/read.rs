//! Reading a batch back: its strings skipped or checked, and `RowReader`, the values of each
//! row (for the dead-letter file).

use super::columns::{Kind, COLUMNS, KINDS, REGIONS};
use super::RowBatch;

/// Byte offset just past the first `n` strings (varint length, bytes) of a checked batch's
/// `bytes` (every string known to fit; panics otherwise), the one-byte lengths of short
/// strings without the general varint loop. The flush thread cuts batches with it where they
/// have no group index for the cut (`sink/clickhouse/order.rs`, `block.rs`).
#[inline]
pub fn skip_strings(bytes: &[u8], n: usize) -> usize {
    let mut at = 0;
    for _ in 0..n {
        let b = bytes[at];
        if b < 0x80 {
            at += 1 + usize::from(b);
        } else {
            let (len, used) = read_varint(&bytes[at..]).expect("checked batch");
            at += used + len as usize;
        }
    }
    at
}

/// Byte offset just past the first `n` strings of `bytes`, or `None` if they do not fit;
/// checking that every one of them is UTF-8.
pub(super) fn check_strings(bytes: &[u8], n: usize) -> Result<Option<usize>, &'static str> {
    let mut utf8 = true;
    let end = strings_end(bytes, n, |s| {
        utf8 = std::str::from_utf8(s).is_ok();
        utf8
    });
    if utf8 {
        Ok(end)
    } else {
        Err("a string is not UTF-8")
    }
}

/// Byte offset just past the first `n` strings of `bytes`, if they fit and each passes `ok`.
#[inline]
pub(super) fn strings_end(
    bytes: &[u8],
    n: usize,
    mut ok: impl FnMut(&[u8]) -> bool,
) -> Option<usize> {
    let mut at = 0;
    for _ in 0..n {
        let (len, used) = read_varint(&bytes[at..])?;
        let start = at.checked_add(used)?;
        at = start.checked_add(usize::try_from(len).ok()?)?;
        if at > bytes.len() || !ok(&bytes[start..at]) {
            return None;
        }
    }
    Some(at)
}

/// An unsigned LEB128 varint at the start of `bytes`: (value, bytes used).
pub(super) fn read_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7F) << (7 * i);
        if b < 0x80 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Reads a checked batch's rows in order, value by value.
pub struct RowReader<'b> {
    pub(super) batch: &'b RowBatch,
    /// Read position in every region.
    pub(super) at: [usize; REGIONS],
    /// Array columns: elements before the current row.
    pub(super) elems: [usize; COLUMNS],
    pub(super) row: usize,
    pub(super) end: usize,
}

/// One value as read back.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'b> {
    Str(&'b str),
    U64(u64),
    /// `Money` as well: units of 1e-10 USD.
    I64(i64),
    F64(f64),
    U32(u32),
    Null,
    Ints(Vec<u64>),
    Strs(Vec<&'b str>),
}

impl<'b> RowReader<'b> {
    /// The next row's values, in column order, or `None` past the range.
    pub fn next_row(&mut self) -> Option<Vec<Value<'b>>> {
        if self.row >= self.end {
            return None;
        }
        let values = (0..COLUMNS).map(|c| self.value(c)).collect();
        self.row += 1;
        Some(values)
    }

    fn take(&mut self, region: usize, n: usize) -> &'b [u8] {
        let bytes = &self.batch.data()[self.batch.region(region)];
        let s = &bytes[self.at[region]..self.at[region] + n];
        self.at[region] += n;
        s
    }

    fn string(&mut self, region: usize) -> &'b str {
        let bytes = &self.batch.data()[self.batch.region(region)];
        let (len, used) = read_varint(&bytes[self.at[region]..]).expect("checked batch");
        self.at[region] += used;
        let s = self.take(region, len as usize);
        std::str::from_utf8(s).expect("checked batch")
    }

    fn fixed<const W: usize>(&mut self, region: usize) -> [u8; W] {
        self.take(region, W).try_into().expect("W bytes")
    }

    fn value(&mut self, c: usize) -> Value<'b> {
        let (head, tail) = (2 * c, 2 * c + 1);
        let kind = KINDS[c];
        let null = kind.tail_width() > 0 && self.take(head, 1)[0] == 1;
        let v = match kind {
            Kind::Str => Value::Str(self.string(head)),
            Kind::U64 => Value::U64(u64::from_le_bytes(self.fixed(head))),
            Kind::Time => Value::U32(u32::from_le_bytes(self.fixed(head))),
            Kind::OptU64 => Value::U64(u64::from_le_bytes(self.fixed(tail))),
            Kind::OptF64 => Value::F64(f64::from_le_bytes(self.fixed(tail))),
            Kind::Money => Value::I64(i64::from_le_bytes(self.fixed(tail))),
            Kind::OptTime => Value::U32(u32::from_le_bytes(self.fixed(tail))),
            Kind::Ints | Kind::MetaKeys | Kind::MetaValues => {
                let end = u64::from_le_bytes(self.fixed(head)) as usize;
                let n = end - self.elems[c];
                self.elems[c] = end;
                if kind == Kind::Ints {
                    Value::Ints(
                        (0..n)
                            .map(|_| u64::from_le_bytes(self.fixed(tail)))
                            .collect(),
                    )
                } else {
                    Value::Strs((0..n).map(|_| self.string(tail)).collect())
                }
            }
        };
        if null {
            Value::Null
        } else {
            v
        }
    }
}
