// Automatically generated rust module for 'resource.proto' file

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
pub struct Resource<'a> {
    pub attributes: Vec<opentelemetry::proto::common::v1::KeyValue<'a>>,
    pub dropped_attributes_count: u32,
    pub entity_refs: Vec<opentelemetry::proto::common::v1::EntityRef<'a>>,
}

impl<'a> MessageRead<'a> for Resource<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.attributes.push(r.read_message::<opentelemetry::proto::common::v1::KeyValue>(bytes)?),
                Ok(16) => msg.dropped_attributes_count = r.read_uint32(bytes)?,
                Ok(26) => msg.entity_refs.push(r.read_message::<opentelemetry::proto::common::v1::EntityRef>(bytes)?),
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for Resource<'a> {
    fn get_size(&self) -> usize {
        0
        + self.attributes.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
        + if self.dropped_attributes_count == 0u32 { 0 } else { 1 + sizeof_varint(*(&self.dropped_attributes_count) as u64) }
        + self.entity_refs.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        for s in &self.attributes { w.write_with_tag(10, |w| w.write_message(s))?; }
        if self.dropped_attributes_count != 0u32 { w.write_with_tag(16, |w| w.write_uint32(*&self.dropped_attributes_count))?; }
        for s in &self.entity_refs { w.write_with_tag(26, |w| w.write_message(s))?; }
        Ok(())
    }
}

