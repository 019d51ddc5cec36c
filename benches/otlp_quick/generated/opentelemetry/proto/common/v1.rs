// Automatically generated rust module for 'common.proto' file

#![allow(non_snake_case)]
#![allow(non_upper_case_globals)]
#![allow(non_camel_case_types)]
#![allow(unused_imports)]
#![allow(unknown_lints)]
#![allow(clippy::all)]
#![cfg_attr(rustfmt, rustfmt_skip)]


use std::borrow::Cow;
use quick_protobuf::{MessageInfo, MessageRead, MessageWrite, BytesReader, Writer, WriterBackend, Result};
use quick_protobuf::sizeofs::*;
use super::super::super::super::*;

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct AnyValue<'a> {
    pub value: opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue<'a>,
}

impl<'a> MessageRead<'a> for AnyValue<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.value = opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::string_value(r.read_string(bytes).map(Cow::Borrowed)?),
                Ok(16) => msg.value = opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::bool_value(r.read_bool(bytes)?),
                Ok(24) => msg.value = opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::int_value(r.read_int64(bytes)?),
                Ok(33) => msg.value = opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::double_value(r.read_double(bytes)?),
                Ok(42) => msg.value = opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::array_value(r.read_message::<opentelemetry::proto::common::v1::ArrayValue>(bytes)?),
                Ok(50) => msg.value = opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::kvlist_value(r.read_message::<opentelemetry::proto::common::v1::KeyValueList>(bytes)?),
                Ok(58) => msg.value = opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::bytes_value(r.read_bytes(bytes).map(Cow::Borrowed)?),
                Ok(64) => msg.value = opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::string_value_strindex(r.read_int32(bytes)?),
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for AnyValue<'a> {
    fn get_size(&self) -> usize {
        0
        + match self.value {
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::string_value(ref m) => 1 + sizeof_len((m).len()),
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::bool_value(ref m) => 1 + sizeof_varint(*(m) as u64),
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::int_value(ref m) => 1 + sizeof_varint(*(m) as u64),
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::double_value(_) => 1 + 8,
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::array_value(ref m) => 1 + sizeof_len((m).get_size()),
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::kvlist_value(ref m) => 1 + sizeof_len((m).get_size()),
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::bytes_value(ref m) => 1 + sizeof_len((m).len()),
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::string_value_strindex(ref m) => 1 + sizeof_varint(*(m) as u64),
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::None => 0,
    }    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        match self.value {            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::string_value(ref m) => { w.write_with_tag(10, |w| w.write_string(&**m))? },
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::bool_value(ref m) => { w.write_with_tag(16, |w| w.write_bool(*m))? },
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::int_value(ref m) => { w.write_with_tag(24, |w| w.write_int64(*m))? },
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::double_value(ref m) => { w.write_with_tag(33, |w| w.write_double(*m))? },
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::array_value(ref m) => { w.write_with_tag(42, |w| w.write_message(m))? },
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::kvlist_value(ref m) => { w.write_with_tag(50, |w| w.write_message(m))? },
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::bytes_value(ref m) => { w.write_with_tag(58, |w| w.write_bytes(&**m))? },
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::string_value_strindex(ref m) => { w.write_with_tag(64, |w| w.write_int32(*m))? },
            opentelemetry::proto::common::v1::mod_AnyValue::OneOfvalue::None => {},
    }        Ok(())
    }
}

pub mod mod_AnyValue {

use super::*;

#[derive(Debug, PartialEq, Clone)]
pub enum OneOfvalue<'a> {
    string_value(Cow<'a, str>),
    bool_value(bool),
    int_value(i64),
    double_value(f64),
    array_value(opentelemetry::proto::common::v1::ArrayValue<'a>),
    kvlist_value(opentelemetry::proto::common::v1::KeyValueList<'a>),
    bytes_value(Cow<'a, [u8]>),
    string_value_strindex(i32),
    None,
}

impl<'a> Default for OneOfvalue<'a> {
    fn default() -> Self {
        OneOfvalue::None
    }
}

}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct ArrayValue<'a> {
    pub values: Vec<opentelemetry::proto::common::v1::AnyValue<'a>>,
}

impl<'a> MessageRead<'a> for ArrayValue<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.values.push(r.read_message::<opentelemetry::proto::common::v1::AnyValue>(bytes)?),
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for ArrayValue<'a> {
    fn get_size(&self) -> usize {
        0
        + self.values.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        for s in &self.values { w.write_with_tag(10, |w| w.write_message(s))?; }
        Ok(())
    }
}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct KeyValueList<'a> {
    pub values: Vec<opentelemetry::proto::common::v1::KeyValue<'a>>,
}

impl<'a> MessageRead<'a> for KeyValueList<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.values.push(r.read_message::<opentelemetry::proto::common::v1::KeyValue>(bytes)?),
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for KeyValueList<'a> {
    fn get_size(&self) -> usize {
        0
        + self.values.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        for s in &self.values { w.write_with_tag(10, |w| w.write_message(s))?; }
        Ok(())
    }
}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct KeyValue<'a> {
    pub key: Cow<'a, str>,
    pub value: Option<opentelemetry::proto::common::v1::AnyValue<'a>>,
    pub key_strindex: i32,
}

impl<'a> MessageRead<'a> for KeyValue<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.key = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(18) => msg.value = Some(r.read_message::<opentelemetry::proto::common::v1::AnyValue>(bytes)?),
                Ok(24) => msg.key_strindex = r.read_int32(bytes)?,
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for KeyValue<'a> {
    fn get_size(&self) -> usize {
        0
        + if self.key == "" { 0 } else { 1 + sizeof_len((&self.key).len()) }
        + self.value.as_ref().map_or(0, |m| 1 + sizeof_len((m).get_size()))
        + if self.key_strindex == 0i32 { 0 } else { 1 + sizeof_varint(*(&self.key_strindex) as u64) }
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        if self.key != "" { w.write_with_tag(10, |w| w.write_string(&**&self.key))?; }
        if let Some(ref s) = self.value { w.write_with_tag(18, |w| w.write_message(s))?; }
        if self.key_strindex != 0i32 { w.write_with_tag(24, |w| w.write_int32(*&self.key_strindex))?; }
        Ok(())
    }
}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct InstrumentationScope<'a> {
    pub name: Cow<'a, str>,
    pub version: Cow<'a, str>,
    pub attributes: Vec<opentelemetry::proto::common::v1::KeyValue<'a>>,
    pub dropped_attributes_count: u32,
}

impl<'a> MessageRead<'a> for InstrumentationScope<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.name = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(18) => msg.version = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(26) => msg.attributes.push(r.read_message::<opentelemetry::proto::common::v1::KeyValue>(bytes)?),
                Ok(32) => msg.dropped_attributes_count = r.read_uint32(bytes)?,
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for InstrumentationScope<'a> {
    fn get_size(&self) -> usize {
        0
        + if self.name == "" { 0 } else { 1 + sizeof_len((&self.name).len()) }
        + if self.version == "" { 0 } else { 1 + sizeof_len((&self.version).len()) }
        + self.attributes.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
        + if self.dropped_attributes_count == 0u32 { 0 } else { 1 + sizeof_varint(*(&self.dropped_attributes_count) as u64) }
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        if self.name != "" { w.write_with_tag(10, |w| w.write_string(&**&self.name))?; }
        if self.version != "" { w.write_with_tag(18, |w| w.write_string(&**&self.version))?; }
        for s in &self.attributes { w.write_with_tag(26, |w| w.write_message(s))?; }
        if self.dropped_attributes_count != 0u32 { w.write_with_tag(32, |w| w.write_uint32(*&self.dropped_attributes_count))?; }
        Ok(())
    }
}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct EntityRef<'a> {
    pub schema_url: Cow<'a, str>,
    pub type_pb: Cow<'a, str>,
    pub id_keys: Vec<Cow<'a, str>>,
    pub description_keys: Vec<Cow<'a, str>>,
}

impl<'a> MessageRead<'a> for EntityRef<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.schema_url = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(18) => msg.type_pb = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(26) => msg.id_keys.push(r.read_string(bytes).map(Cow::Borrowed)?),
                Ok(34) => msg.description_keys.push(r.read_string(bytes).map(Cow::Borrowed)?),
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for EntityRef<'a> {
    fn get_size(&self) -> usize {
        0
        + if self.schema_url == "" { 0 } else { 1 + sizeof_len((&self.schema_url).len()) }
        + if self.type_pb == "" { 0 } else { 1 + sizeof_len((&self.type_pb).len()) }
        + self.id_keys.iter().map(|s| 1 + sizeof_len((s).len())).sum::<usize>()
        + self.description_keys.iter().map(|s| 1 + sizeof_len((s).len())).sum::<usize>()
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        if self.schema_url != "" { w.write_with_tag(10, |w| w.write_string(&**&self.schema_url))?; }
        if self.type_pb != "" { w.write_with_tag(18, |w| w.write_string(&**&self.type_pb))?; }
        for s in &self.id_keys { w.write_with_tag(26, |w| w.write_string(&**s))?; }
        for s in &self.description_keys { w.write_with_tag(34, |w| w.write_string(&**s))?; }
        Ok(())
    }
}

