use std::{mem, sync::Arc};

use crate::{
    binary::{Encoder, ReadEx},
    errors::Result,
    types::{
        column::{
            array::ArrayColumnData, column_data::ArcColumnData, nullable::NullableColumnData,
            ColumnWrapper,
        },
        HasSqlType, Marshal, SqlType, StatBuffer, Unmarshal, Value, ValueRef,
    },
};

use super::{
    column_data::{BoxColumnData, ColumnData},
    list::List,
    ColumnFrom, FlatArrays,
};

pub struct VectorColumnData<T>
where
    T: StatBuffer
        + Unmarshal<T>
        + Marshal
        + Copy
        + Into<Value>
        + From<Value>
        + Sync
        + HasSqlType
        + 'static,
{
    pub(crate) data: List<T>,
}

impl<T> ColumnFrom for Vec<T>
where
    T: StatBuffer
        + Unmarshal<T>
        + Marshal
        + Copy
        + Into<Value>
        + From<Value>
        + Send
        + Sync
        + HasSqlType
        + 'static,
{
    // traceingest patch: the vector becomes the column as it is (upstream pushed each value).
    fn column_from<W: ColumnWrapper>(source: Self) -> W::Wrapper {
        W::wrap(VectorColumnData {
            data: List::from(source),
        })
    }
}

impl<T> ColumnFrom for Vec<Option<T>>
where
    Value: From<T>,
    T: StatBuffer
        + Unmarshal<T>
        + Marshal
        + Copy
        + Default
        + Into<Value>
        + From<Value>
        + Send
        + Sync
        + HasSqlType
        + 'static,
{
    // traceingest patch: fill the null map and the values directly. Upstream pushes every
    // element as a boxed `Value::Nullable`, interning its `SqlType` in a global map each time.
    fn column_from<W: ColumnWrapper>(source: Self) -> W::Wrapper {
        let nulls: Vec<u8> = source.iter().map(|v| u8::from(v.is_none())).collect();
        let values: Vec<T> = source.iter().map(|v| v.unwrap_or_default()).collect();
        let inner: ArcColumnData = Arc::new(VectorColumnData {
            data: List::from(values),
        });
        W::wrap(NullableColumnData { inner, nulls })
    }
}

impl<T> ColumnFrom for Vec<Vec<T>>
where
    Value: From<T>,
    T: StatBuffer
        + Unmarshal<T>
        + Marshal
        + Copy
        + Into<Value>
        + From<Value>
        + Send
        + Sync
        + HasSqlType
        + 'static,
{
    // traceingest patch: one flat list of values plus the offsets. Upstream turns every array
    // into a `Value::Array` (a `Vec<Value>` in an `Arc`, its type interned in a global map)
    // and pushes a clone of each element.
    fn column_from<W: ColumnWrapper>(source: Self) -> W::Wrapper {
        let total: usize = source.iter().map(Vec::len).sum();
        let mut values = List::with_capacity(total);
        let mut offsets = List::with_capacity(source.len());
        let mut offset = 0_u64;
        for array in source {
            offset += array.len() as u64;
            offsets.push(offset);
            for v in array {
                values.push(v);
            }
        }
        let inner: ArcColumnData = Arc::new(VectorColumnData { data: values });
        W::wrap(ArrayColumnData { inner, offsets })
    }
}

// traceingest patch: see `flat.rs`.
impl<T> ColumnFrom for FlatArrays<T>
where
    T: StatBuffer
        + Unmarshal<T>
        + Marshal
        + Copy
        + Into<Value>
        + From<Value>
        + Send
        + Sync
        + HasSqlType
        + 'static,
{
    fn column_from<W: ColumnWrapper>(source: Self) -> W::Wrapper {
        let inner: ArcColumnData = Arc::new(VectorColumnData {
            data: List::from(source.values),
        });
        W::wrap(ArrayColumnData {
            inner,
            offsets: List::from(source.offsets),
        })
    }
}

impl<T> VectorColumnData<T>
where
    T: StatBuffer
        + Unmarshal<T>
        + Marshal
        + Copy
        + Into<Value>
        + From<Value>
        + Sync
        + HasSqlType
        + 'static,
{
    pub(crate) fn with_capacity(capacity: usize) -> VectorColumnData<T> {
        VectorColumnData {
            data: List::with_capacity(capacity),
        }
    }

    pub(crate) fn load<R: ReadEx>(reader: &mut R, size: usize) -> Result<VectorColumnData<T>> {
        let mut data = List::with_capacity(size);
        unsafe {
            data.set_len(size);
        }
        reader.read_bytes(data.as_mut())?;
        Ok(Self { data })
    }
}

impl<T> ColumnData for VectorColumnData<T>
where
    T: StatBuffer
        + Unmarshal<T>
        + Marshal
        + Copy
        + Into<Value>
        + From<Value>
        + Send
        + Sync
        + HasSqlType
        + 'static,
{
    fn sql_type(&self) -> SqlType {
        T::sql_type()
    }

    fn save(&self, encoder: &mut Encoder, start: usize, end: usize) {
        save_data::<T>(self.data.as_ref(), encoder, start, end);
    }

    fn len(&self) -> usize {
        self.data.len()
    }

    fn push(&mut self, value: Value) {
        self.data.push(T::from(value));
    }

    fn at(&self, index: usize) -> ValueRef {
        let v: Value = self.data.at(index).into();
        match v {
            Value::Bool(x) => ValueRef::Bool(x),
            Value::UInt8(x) => ValueRef::UInt8(x),
            Value::UInt16(x) => ValueRef::UInt16(x),
            Value::UInt32(x) => ValueRef::UInt32(x),
            Value::UInt64(x) => ValueRef::UInt64(x),

            Value::Int8(x) => ValueRef::Int8(x),
            Value::Int16(x) => ValueRef::Int16(x),
            Value::Int32(x) => ValueRef::Int32(x),
            Value::Int64(x) => ValueRef::Int64(x),

            Value::Float32(x) => ValueRef::Float32(x),
            Value::Float64(x) => ValueRef::Float64(x),

            _ => panic!("can't convert value to value_ref."),
        }
    }

    fn clone_instance(&self) -> BoxColumnData {
        Box::new(Self {
            data: self.data.clone(),
        })
    }

    unsafe fn get_internal(
        &self,
        pointers: &[*mut *const u8],
        level: u8,
        _props: u32,
    ) -> Result<()> {
        assert_eq!(level, 0);
        *pointers[0] = self.data.as_ptr() as *const u8;
        *(pointers[1] as *mut usize) = self.len();
        Ok(())
    }
}

pub(crate) fn save_data<T>(data: &[u8], encoder: &mut Encoder, start: usize, end: usize) {
    let start_index = start * mem::size_of::<T>();
    let end_index = end * mem::size_of::<T>();
    encoder.write_bytes(&data[start_index..end_index]);
}
