// Automatically generated rust module for 'trace_service.proto' file

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
use super::super::super::super::super::*;

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct ExportTraceServiceRequest<'a> {
    pub resource_spans: Vec<opentelemetry::proto::trace::v1::ResourceSpans<'a>>,
}

impl<'a> MessageRead<'a> for ExportTraceServiceRequest<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.resource_spans.push(r.read_message::<opentelemetry::proto::trace::v1::ResourceSpans>(bytes)?),
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for ExportTraceServiceRequest<'a> {
    fn get_size(&self) -> usize {
        0
        + self.resource_spans.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        for s in &self.resource_spans { w.write_with_tag(10, |w| w.write_message(s))?; }
        Ok(())
    }
}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct ExportTraceServiceResponse<'a> {
    pub partial_success: Option<opentelemetry::proto::collector::trace::v1::ExportTracePartialSuccess<'a>>,
}

impl<'a> MessageRead<'a> for ExportTraceServiceResponse<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.partial_success = Some(r.read_message::<opentelemetry::proto::collector::trace::v1::ExportTracePartialSuccess>(bytes)?),
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for ExportTraceServiceResponse<'a> {
    fn get_size(&self) -> usize {
        0
        + self.partial_success.as_ref().map_or(0, |m| 1 + sizeof_len((m).get_size()))
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        if let Some(ref s) = self.partial_success { w.write_with_tag(10, |w| w.write_message(s))?; }
        Ok(())
    }
}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct ExportTracePartialSuccess<'a> {
    pub rejected_spans: i64,
    pub error_message: Cow<'a, str>,
}

impl<'a> MessageRead<'a> for ExportTracePartialSuccess<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(8) => msg.rejected_spans = r.read_int64(bytes)?,
                Ok(18) => msg.error_message = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for ExportTracePartialSuccess<'a> {
    fn get_size(&self) -> usize {
        0
        + if self.rejected_spans == 0i64 { 0 } else { 1 + sizeof_varint(*(&self.rejected_spans) as u64) }
        + if self.error_message == "" { 0 } else { 1 + sizeof_len((&self.error_message).len()) }
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        if self.rejected_spans != 0i64 { w.write_with_tag(8, |w| w.write_int64(*&self.rejected_spans))?; }
        if self.error_message != "" { w.write_with_tag(18, |w| w.write_string(&**&self.error_message))?; }
        Ok(())
    }
}


