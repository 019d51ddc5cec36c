use std::{io::Write, string::ToString, sync::Arc};

use either::Either;

use crate::{
    binary::{Encoder, ReadEx},
    errors::Result,
    types::{
        column::{
            array::ArrayColumnData, column_data::ArcColumnData, list::List,
            nullable::NullableColumnData, ColumnWrapper, StringPool,
        },
        Column, ColumnType, FromSql, SqlType, Value, ValueRef,
    },
};

use super::{
    column_data::{BoxColumnData, ColumnData},
    ColumnFrom, FlatStringArrays,
};

pub(crate) struct StringColumnData {
    pool: StringPool,
}

pub(crate) struct StringAdapter<K: ColumnType> {
    pub(crate) column: Column<K>,
}

impl StringColumnData {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            pool: StringPool::with_capacity(capacity),
        }
    }

    pub(crate) fn load<T: ReadEx>(reader: &mut T, size: usize) -> Result<Self> {
        let mut data = Self::with_capacity(size);

        for _ in 0..size {
            reader.read_str_into_buffer(&mut data.pool)?;
        }

        Ok(data)
    }
}

impl ColumnFrom for Vec<String> {
    fn column_from<W: ColumnWrapper>(data: Self) -> W::Wrapper {
        W::wrap(StringColumnData { pool: data.into() })
    }
}

impl<'a> ColumnFrom for Vec<&'a str> {
    fn column_from<W: ColumnWrapper>(source: Self) -> W::Wrapper {
        let data: Vec<_> = source.iter().map(ToString::to_string).collect();
        W::wrap(StringColumnData { pool: data.into() })
    }
}

impl<'a> ColumnFrom for Vec<&'a [u8]> {
    fn column_from<W: ColumnWrapper>(data: Self) -> W::Wrapper {
        W::wrap(StringColumnData { pool: data.into() })
    }
}

trait StringSource {
    fn into_value(self) -> Value;
    fn bytes(&self) -> &[u8];
}

impl StringSource for String {
    fn into_value(self) -> Value {
        self.into()
    }
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl StringSource for &str {
    fn into_value(self) -> Value {
        self.into()
    }
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl StringSource for Vec<u8> {
    fn into_value(self) -> Value {
        Value::String(Arc::new(self))
    }
    fn bytes(&self) -> &[u8] {
        self
    }
}

impl ColumnFrom for Vec<Vec<String>> {
    fn column_from<W: ColumnWrapper>(source: Self) -> <W as ColumnWrapper>::Wrapper {
        make_array_of_array::<W, String>(source)
    }
}

impl ColumnFrom for Vec<Vec<&str>> {
    fn column_from<W: ColumnWrapper>(source: Self) -> <W as ColumnWrapper>::Wrapper {
        make_array_of_array::<W, &str>(source)
    }
}

// traceingest patch: every string goes straight into one pool, with the offsets alongside.
// Upstream makes each string a `Value::String` (two allocations), each array a `Value::Array`
// (two more, its type interned in a global map), then copies them in one by one.
fn make_array_of_array<W: ColumnWrapper, S: StringSource>(
    source: Vec<Vec<S>>,
) -> <W as ColumnWrapper>::Wrapper {
    let mut offsets = List::with_capacity(source.len());
    let mut offset = 0_u64;
    for vs in &source {
        offset += vs.len() as u64;
        offsets.push(offset);
    }
    let pool = StringPool::from_slices(source.iter().flatten().map(StringSource::bytes));
    let inner: ArcColumnData = Arc::new(StringColumnData { pool });
    W::wrap(ArrayColumnData { inner, offsets })
}

// traceingest patch: see `flat.rs`.
impl<'a> ColumnFrom for FlatStringArrays<'a> {
    fn column_from<W: ColumnWrapper>(source: Self) -> W::Wrapper {
        let pool = StringPool::from_slices(source.values.iter().copied());
        let inner: ArcColumnData = Arc::new(StringColumnData { pool });
        W::wrap(ArrayColumnData {
            inner,
            offsets: List::from(source.offsets),
        })
    }
}

impl ColumnFrom for Vec<Option<Vec<u8>>> {
    fn column_from<W: ColumnWrapper>(source: Self) -> W::Wrapper {
        make_opt_column::<W, Vec<u8>>(source)
    }
}

impl ColumnFrom for Vec<Option<&str>> {
    fn column_from<W: ColumnWrapper>(source: Self) -> W::Wrapper {
        make_opt_column::<W, &str>(source)
    }
}

impl ColumnFrom for Vec<Option<String>> {
    fn column_from<W: ColumnWrapper>(source: Self) -> W::Wrapper {
        make_opt_column::<W, String>(source)
    }
}

fn make_opt_column<W: ColumnWrapper, S: StringSource>(source: Vec<Option<S>>) -> W::Wrapper {
    let inner = Arc::new(StringColumnData::with_capacity(source.len()));

    let mut data = NullableColumnData {
        inner,
        nulls: Vec::with_capacity(source.len()),
    };

    for value in source {
        let item = if let Some(v) = value {
            let inner = v.into_value();
            Value::Nullable(Either::Right(Box::new(inner)))
        } else {
            Value::Nullable(Either::Left(SqlType::String.into()))
        };
        data.push(item);
    }

    W::wrap(data)
}

impl ColumnData for StringColumnData {
    fn sql_type(&self) -> SqlType {
        SqlType::String
    }

    // traceingest patch: one reservation for the whole column, then each string by index
    // (upstream walked an iterator through `skip`/`take` and grew the buffer as it went).
    fn save(&self, encoder: &mut Encoder, start: usize, end: usize) {
        let end = end.min(self.pool.len());
        let mut bytes = 0;
        for i in start..end {
            bytes += self.pool.get(i).len() + 1;
        }
        encoder.reserve(bytes + (end - start) * 2);
        for i in start..end {
            encoder.byte_string(self.pool.get(i));
        }
    }

    fn len(&self) -> usize {
        self.pool.len()
    }

    fn push(&mut self, value: Value) {
        let s: Vec<u8> = value.into();
        let mut b = self.pool.allocate(s.len());
        b.write_all(s.as_ref()).unwrap();
    }

    fn at(&self, index: usize) -> ValueRef {
        let s = self.pool.get(index);
        ValueRef::from(s)
    }

    fn clone_instance(&self) -> BoxColumnData {
        Box::new(Self {
            pool: self.pool.clone(),
        })
    }

    unsafe fn get_internal(
        &self,
        pointers: &[*mut *const u8],
        level: u8,
        _props: u32,
    ) -> Result<()> {
        assert_eq!(level, 0);
        *pointers[0] = &self.pool as *const StringPool as *const u8;
        *(pointers[1] as *mut usize) = self.len();
        Ok(())
    }
}

impl<K: ColumnType> ColumnData for StringAdapter<K> {
    fn sql_type(&self) -> SqlType {
        SqlType::String
    }

    fn save(&self, encoder: &mut Encoder, start: usize, end: usize) {
        for index in start..end {
            let buf: Vec<u8> = Vec::from_sql(self.column.at(index)).unwrap();
            encoder.byte_string(buf);
        }
    }

    fn len(&self) -> usize {
        self.column.len()
    }

    fn push(&mut self, _value: Value) {
        unimplemented!()
    }

    fn at(&self, index: usize) -> ValueRef {
        self.column.at(index)
    }

    fn clone_instance(&self) -> BoxColumnData {
        unimplemented!()
    }
}
