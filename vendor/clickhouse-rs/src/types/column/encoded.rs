//! traceingest patch: a column whose native-format bytes the caller has already written.
//!
//! Building a column value by value (`Vec<&str>`, `Vec<Option<Decimal>>`, ...) costs thousands
//! of instructions per row of a wide table: every value is converted, pooled and then copied
//! again into the wire buffer. An [`EncodedColumn`] holds the column's data exactly as the
//! native protocol sends it (for `Nullable(T)` the null map, then the values; for `Array(T)` the
//! end offsets, then the values; a `String` as its varint length and bytes), in one or more
//! parts that are written back to back. The bytes are shared (`Arc`), so the caller can take its
//! buffers back once the insert is done and reuse them for the next one. A part of at least
//! `SHARE_MIN_BYTES` is not copied into the command's buffer at all: the transport writes it to
//! the socket from where it is (`writev`), and drops its `Arc` once it is written.
//!
//! Limits: the column is write-only (`at` and `push` panic) and is written whole: a block of
//! these columns must not be cut into chunks, i.e. it must have at most 1,048,576 rows. A column
//! whose type differs from the table's is refused by `Block::cast_to` (no conversion is tried).

use std::sync::Arc;

use crate::{
    binary::{Encoder, SHARE_MIN_BYTES},
    types::{SqlType, Value, ValueRef},
};

use super::{
    column_data::{BoxColumnData, ColumnData},
    ColumnFrom, ColumnWrapper,
};

/// One column of `rows` values, already in the native format. See the module docs.
#[derive(Clone)]
pub struct EncodedColumn {
    pub sql_type: SqlType,
    pub rows: usize,
    pub parts: Vec<Arc<Vec<u8>>>,
}

impl ColumnFrom for EncodedColumn {
    fn column_from<W: ColumnWrapper>(source: Self) -> W::Wrapper {
        W::wrap(source)
    }
}

impl ColumnData for EncodedColumn {
    fn sql_type(&self) -> SqlType {
        self.sql_type.clone()
    }

    fn save(&self, encoder: &mut Encoder, start: usize, end: usize) {
        assert!(
            start == 0 && end == self.rows,
            "an encoded column is written whole (rows {start}..{end} of {})",
            self.rows
        );
        encoder.reserve(self.wire_size_hint());
        // traceingest patch: large parts go to the socket from where they are.
        for part in &self.parts {
            encoder.write_shared(part);
        }
    }

    fn len(&self) -> usize {
        self.rows
    }

    fn push(&mut self, _value: Value) {
        panic!("an encoded column is write-only: values cannot be pushed")
    }

    fn at(&self, _index: usize) -> ValueRef {
        panic!("an encoded column is write-only: its values cannot be read back")
    }

    fn clone_instance(&self) -> BoxColumnData {
        Box::new(self.clone())
    }

    fn is_encoded(&self) -> bool {
        true
    }

    /// The bytes copied into the command's buffer: parts sent in place take none of it.
    fn wire_size_hint(&self) -> usize {
        self.parts
            .iter()
            .map(|p| p.len())
            .filter(|&n| n < SHARE_MIN_BYTES)
            .sum()
    }
}
