// Automatically generated rust module for 'trace.proto' file

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

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum SpanFlags {
    SPAN_FLAGS_DO_NOT_USE = 0,
    SPAN_FLAGS_TRACE_FLAGS_MASK = 255,
    SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK = 256,
    SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK = 512,
}

impl Default for SpanFlags {
    fn default() -> Self {
        SpanFlags::SPAN_FLAGS_DO_NOT_USE
    }
}

impl From<i32> for SpanFlags {
    fn from(i: i32) -> Self {
        match i {
            0 => SpanFlags::SPAN_FLAGS_DO_NOT_USE,
            255 => SpanFlags::SPAN_FLAGS_TRACE_FLAGS_MASK,
            256 => SpanFlags::SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK,
            512 => SpanFlags::SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK,
            _ => Self::default(),
        }
    }
}

impl<'a> From<&'a str> for SpanFlags {
    fn from(s: &'a str) -> Self {
        match s {
            "SPAN_FLAGS_DO_NOT_USE" => SpanFlags::SPAN_FLAGS_DO_NOT_USE,
            "SPAN_FLAGS_TRACE_FLAGS_MASK" => SpanFlags::SPAN_FLAGS_TRACE_FLAGS_MASK,
            "SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK" => SpanFlags::SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK,
            "SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK" => SpanFlags::SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK,
            _ => Self::default(),
        }
    }
}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct TracesData<'a> {
    pub resource_spans: Vec<opentelemetry::proto::trace::v1::ResourceSpans<'a>>,
}

impl<'a> MessageRead<'a> for TracesData<'a> {
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

impl<'a> MessageWrite for TracesData<'a> {
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
pub struct ResourceSpans<'a> {
    pub resource: Option<opentelemetry::proto::resource::v1::Resource<'a>>,
    pub scope_spans: Vec<opentelemetry::proto::trace::v1::ScopeSpans<'a>>,
    pub schema_url: Cow<'a, str>,
}

impl<'a> MessageRead<'a> for ResourceSpans<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.resource = Some(r.read_message::<opentelemetry::proto::resource::v1::Resource>(bytes)?),
                Ok(18) => msg.scope_spans.push(r.read_message::<opentelemetry::proto::trace::v1::ScopeSpans>(bytes)?),
                Ok(26) => msg.schema_url = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for ResourceSpans<'a> {
    fn get_size(&self) -> usize {
        0
        + self.resource.as_ref().map_or(0, |m| 1 + sizeof_len((m).get_size()))
        + self.scope_spans.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
        + if self.schema_url == "" { 0 } else { 1 + sizeof_len((&self.schema_url).len()) }
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        if let Some(ref s) = self.resource { w.write_with_tag(10, |w| w.write_message(s))?; }
        for s in &self.scope_spans { w.write_with_tag(18, |w| w.write_message(s))?; }
        if self.schema_url != "" { w.write_with_tag(26, |w| w.write_string(&**&self.schema_url))?; }
        Ok(())
    }
}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct ScopeSpans<'a> {
    pub scope: Option<opentelemetry::proto::common::v1::InstrumentationScope<'a>>,
    pub spans: Vec<opentelemetry::proto::trace::v1::Span<'a>>,
    pub schema_url: Cow<'a, str>,
}

impl<'a> MessageRead<'a> for ScopeSpans<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.scope = Some(r.read_message::<opentelemetry::proto::common::v1::InstrumentationScope>(bytes)?),
                Ok(18) => msg.spans.push(r.read_message::<opentelemetry::proto::trace::v1::Span>(bytes)?),
                Ok(26) => msg.schema_url = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for ScopeSpans<'a> {
    fn get_size(&self) -> usize {
        0
        + self.scope.as_ref().map_or(0, |m| 1 + sizeof_len((m).get_size()))
        + self.spans.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
        + if self.schema_url == "" { 0 } else { 1 + sizeof_len((&self.schema_url).len()) }
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        if let Some(ref s) = self.scope { w.write_with_tag(10, |w| w.write_message(s))?; }
        for s in &self.spans { w.write_with_tag(18, |w| w.write_message(s))?; }
        if self.schema_url != "" { w.write_with_tag(26, |w| w.write_string(&**&self.schema_url))?; }
        Ok(())
    }
}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct Span<'a> {
    pub trace_id: Cow<'a, [u8]>,
    pub span_id: Cow<'a, [u8]>,
    pub trace_state: Cow<'a, str>,
    pub parent_span_id: Cow<'a, [u8]>,
    pub flags: u32,
    pub name: Cow<'a, str>,
    pub kind: opentelemetry::proto::trace::v1::mod_Span::SpanKind,
    pub start_time_unix_nano: u64,
    pub end_time_unix_nano: u64,
    pub attributes: Vec<opentelemetry::proto::common::v1::KeyValue<'a>>,
    pub dropped_attributes_count: u32,
    pub events: Vec<opentelemetry::proto::trace::v1::mod_Span::Event<'a>>,
    pub dropped_events_count: u32,
    pub links: Vec<opentelemetry::proto::trace::v1::mod_Span::Link<'a>>,
    pub dropped_links_count: u32,
    pub status: Option<opentelemetry::proto::trace::v1::Status<'a>>,
}

impl<'a> MessageRead<'a> for Span<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.trace_id = r.read_bytes(bytes).map(Cow::Borrowed)?,
                Ok(18) => msg.span_id = r.read_bytes(bytes).map(Cow::Borrowed)?,
                Ok(26) => msg.trace_state = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(34) => msg.parent_span_id = r.read_bytes(bytes).map(Cow::Borrowed)?,
                Ok(133) => msg.flags = r.read_fixed32(bytes)?,
                Ok(42) => msg.name = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(48) => msg.kind = r.read_enum(bytes)?,
                Ok(57) => msg.start_time_unix_nano = r.read_fixed64(bytes)?,
                Ok(65) => msg.end_time_unix_nano = r.read_fixed64(bytes)?,
                Ok(74) => msg.attributes.push(r.read_message::<opentelemetry::proto::common::v1::KeyValue>(bytes)?),
                Ok(80) => msg.dropped_attributes_count = r.read_uint32(bytes)?,
                Ok(90) => msg.events.push(r.read_message::<opentelemetry::proto::trace::v1::mod_Span::Event>(bytes)?),
                Ok(96) => msg.dropped_events_count = r.read_uint32(bytes)?,
                Ok(106) => msg.links.push(r.read_message::<opentelemetry::proto::trace::v1::mod_Span::Link>(bytes)?),
                Ok(112) => msg.dropped_links_count = r.read_uint32(bytes)?,
                Ok(122) => msg.status = Some(r.read_message::<opentelemetry::proto::trace::v1::Status>(bytes)?),
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for Span<'a> {
    fn get_size(&self) -> usize {
        0
        + if self.trace_id == Cow::Borrowed(b"") { 0 } else { 1 + sizeof_len((&self.trace_id).len()) }
        + if self.span_id == Cow::Borrowed(b"") { 0 } else { 1 + sizeof_len((&self.span_id).len()) }
        + if self.trace_state == "" { 0 } else { 1 + sizeof_len((&self.trace_state).len()) }
        + if self.parent_span_id == Cow::Borrowed(b"") { 0 } else { 1 + sizeof_len((&self.parent_span_id).len()) }
        + if self.flags == 0u32 { 0 } else { 2 + 4 }
        + if self.name == "" { 0 } else { 1 + sizeof_len((&self.name).len()) }
        + if self.kind == opentelemetry::proto::trace::v1::mod_Span::SpanKind::SPAN_KIND_UNSPECIFIED { 0 } else { 1 + sizeof_varint(*(&self.kind) as u64) }
        + if self.start_time_unix_nano == 0u64 { 0 } else { 1 + 8 }
        + if self.end_time_unix_nano == 0u64 { 0 } else { 1 + 8 }
        + self.attributes.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
        + if self.dropped_attributes_count == 0u32 { 0 } else { 1 + sizeof_varint(*(&self.dropped_attributes_count) as u64) }
        + self.events.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
        + if self.dropped_events_count == 0u32 { 0 } else { 1 + sizeof_varint(*(&self.dropped_events_count) as u64) }
        + self.links.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
        + if self.dropped_links_count == 0u32 { 0 } else { 1 + sizeof_varint(*(&self.dropped_links_count) as u64) }
        + self.status.as_ref().map_or(0, |m| 1 + sizeof_len((m).get_size()))
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        if self.trace_id != Cow::Borrowed(b"") { w.write_with_tag(10, |w| w.write_bytes(&**&self.trace_id))?; }
        if self.span_id != Cow::Borrowed(b"") { w.write_with_tag(18, |w| w.write_bytes(&**&self.span_id))?; }
        if self.trace_state != "" { w.write_with_tag(26, |w| w.write_string(&**&self.trace_state))?; }
        if self.parent_span_id != Cow::Borrowed(b"") { w.write_with_tag(34, |w| w.write_bytes(&**&self.parent_span_id))?; }
        if self.flags != 0u32 { w.write_with_tag(133, |w| w.write_fixed32(*&self.flags))?; }
        if self.name != "" { w.write_with_tag(42, |w| w.write_string(&**&self.name))?; }
        if self.kind != opentelemetry::proto::trace::v1::mod_Span::SpanKind::SPAN_KIND_UNSPECIFIED { w.write_with_tag(48, |w| w.write_enum(*&self.kind as i32))?; }
        if self.start_time_unix_nano != 0u64 { w.write_with_tag(57, |w| w.write_fixed64(*&self.start_time_unix_nano))?; }
        if self.end_time_unix_nano != 0u64 { w.write_with_tag(65, |w| w.write_fixed64(*&self.end_time_unix_nano))?; }
        for s in &self.attributes { w.write_with_tag(74, |w| w.write_message(s))?; }
        if self.dropped_attributes_count != 0u32 { w.write_with_tag(80, |w| w.write_uint32(*&self.dropped_attributes_count))?; }
        for s in &self.events { w.write_with_tag(90, |w| w.write_message(s))?; }
        if self.dropped_events_count != 0u32 { w.write_with_tag(96, |w| w.write_uint32(*&self.dropped_events_count))?; }
        for s in &self.links { w.write_with_tag(106, |w| w.write_message(s))?; }
        if self.dropped_links_count != 0u32 { w.write_with_tag(112, |w| w.write_uint32(*&self.dropped_links_count))?; }
        if let Some(ref s) = self.status { w.write_with_tag(122, |w| w.write_message(s))?; }
        Ok(())
    }
}

pub mod mod_Span {

use std::borrow::Cow;
use super::*;

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct Event<'a> {
    pub time_unix_nano: u64,
    pub name: Cow<'a, str>,
    pub attributes: Vec<opentelemetry::proto::common::v1::KeyValue<'a>>,
    pub dropped_attributes_count: u32,
}

impl<'a> MessageRead<'a> for Event<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(9) => msg.time_unix_nano = r.read_fixed64(bytes)?,
                Ok(18) => msg.name = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(26) => msg.attributes.push(r.read_message::<opentelemetry::proto::common::v1::KeyValue>(bytes)?),
                Ok(32) => msg.dropped_attributes_count = r.read_uint32(bytes)?,
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for Event<'a> {
    fn get_size(&self) -> usize {
        0
        + if self.time_unix_nano == 0u64 { 0 } else { 1 + 8 }
        + if self.name == "" { 0 } else { 1 + sizeof_len((&self.name).len()) }
        + self.attributes.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
        + if self.dropped_attributes_count == 0u32 { 0 } else { 1 + sizeof_varint(*(&self.dropped_attributes_count) as u64) }
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        if self.time_unix_nano != 0u64 { w.write_with_tag(9, |w| w.write_fixed64(*&self.time_unix_nano))?; }
        if self.name != "" { w.write_with_tag(18, |w| w.write_string(&**&self.name))?; }
        for s in &self.attributes { w.write_with_tag(26, |w| w.write_message(s))?; }
        if self.dropped_attributes_count != 0u32 { w.write_with_tag(32, |w| w.write_uint32(*&self.dropped_attributes_count))?; }
        Ok(())
    }
}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct Link<'a> {
    pub trace_id: Cow<'a, [u8]>,
    pub span_id: Cow<'a, [u8]>,
    pub trace_state: Cow<'a, str>,
    pub attributes: Vec<opentelemetry::proto::common::v1::KeyValue<'a>>,
    pub dropped_attributes_count: u32,
    pub flags: u32,
}

impl<'a> MessageRead<'a> for Link<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(10) => msg.trace_id = r.read_bytes(bytes).map(Cow::Borrowed)?,
                Ok(18) => msg.span_id = r.read_bytes(bytes).map(Cow::Borrowed)?,
                Ok(26) => msg.trace_state = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(34) => msg.attributes.push(r.read_message::<opentelemetry::proto::common::v1::KeyValue>(bytes)?),
                Ok(40) => msg.dropped_attributes_count = r.read_uint32(bytes)?,
                Ok(53) => msg.flags = r.read_fixed32(bytes)?,
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for Link<'a> {
    fn get_size(&self) -> usize {
        0
        + if self.trace_id == Cow::Borrowed(b"") { 0 } else { 1 + sizeof_len((&self.trace_id).len()) }
        + if self.span_id == Cow::Borrowed(b"") { 0 } else { 1 + sizeof_len((&self.span_id).len()) }
        + if self.trace_state == "" { 0 } else { 1 + sizeof_len((&self.trace_state).len()) }
        + self.attributes.iter().map(|s| 1 + sizeof_len((s).get_size())).sum::<usize>()
        + if self.dropped_attributes_count == 0u32 { 0 } else { 1 + sizeof_varint(*(&self.dropped_attributes_count) as u64) }
        + if self.flags == 0u32 { 0 } else { 1 + 4 }
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        if self.trace_id != Cow::Borrowed(b"") { w.write_with_tag(10, |w| w.write_bytes(&**&self.trace_id))?; }
        if self.span_id != Cow::Borrowed(b"") { w.write_with_tag(18, |w| w.write_bytes(&**&self.span_id))?; }
        if self.trace_state != "" { w.write_with_tag(26, |w| w.write_string(&**&self.trace_state))?; }
        for s in &self.attributes { w.write_with_tag(34, |w| w.write_message(s))?; }
        if self.dropped_attributes_count != 0u32 { w.write_with_tag(40, |w| w.write_uint32(*&self.dropped_attributes_count))?; }
        if self.flags != 0u32 { w.write_with_tag(53, |w| w.write_fixed32(*&self.flags))?; }
        Ok(())
    }
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum SpanKind {
    SPAN_KIND_UNSPECIFIED = 0,
    SPAN_KIND_INTERNAL = 1,
    SPAN_KIND_SERVER = 2,
    SPAN_KIND_CLIENT = 3,
    SPAN_KIND_PRODUCER = 4,
    SPAN_KIND_CONSUMER = 5,
}

impl Default for SpanKind {
    fn default() -> Self {
        SpanKind::SPAN_KIND_UNSPECIFIED
    }
}

impl From<i32> for SpanKind {
    fn from(i: i32) -> Self {
        match i {
            0 => SpanKind::SPAN_KIND_UNSPECIFIED,
            1 => SpanKind::SPAN_KIND_INTERNAL,
            2 => SpanKind::SPAN_KIND_SERVER,
            3 => SpanKind::SPAN_KIND_CLIENT,
            4 => SpanKind::SPAN_KIND_PRODUCER,
            5 => SpanKind::SPAN_KIND_CONSUMER,
            _ => Self::default(),
        }
    }
}

impl<'a> From<&'a str> for SpanKind {
    fn from(s: &'a str) -> Self {
        match s {
            "SPAN_KIND_UNSPECIFIED" => SpanKind::SPAN_KIND_UNSPECIFIED,
            "SPAN_KIND_INTERNAL" => SpanKind::SPAN_KIND_INTERNAL,
            "SPAN_KIND_SERVER" => SpanKind::SPAN_KIND_SERVER,
            "SPAN_KIND_CLIENT" => SpanKind::SPAN_KIND_CLIENT,
            "SPAN_KIND_PRODUCER" => SpanKind::SPAN_KIND_PRODUCER,
            "SPAN_KIND_CONSUMER" => SpanKind::SPAN_KIND_CONSUMER,
            _ => Self::default(),
        }
    }
}

}

#[allow(clippy::derive_partial_eq_without_eq)]
#[derive(Debug, Default, PartialEq, Clone)]
pub struct Status<'a> {
    pub message: Cow<'a, str>,
    pub code: opentelemetry::proto::trace::v1::mod_Status::StatusCode,
}

impl<'a> MessageRead<'a> for Status<'a> {
    fn from_reader(r: &mut BytesReader, bytes: &'a [u8]) -> Result<Self> {
        let mut msg = Self::default();
        while !r.is_eof() {
            match r.next_tag(bytes) {
                Ok(18) => msg.message = r.read_string(bytes).map(Cow::Borrowed)?,
                Ok(24) => msg.code = r.read_enum(bytes)?,
                Ok(t) => { r.read_unknown(bytes, t)?; }
                Err(e) => return Err(e),
            }
        }
        Ok(msg)
    }
}

impl<'a> MessageWrite for Status<'a> {
    fn get_size(&self) -> usize {
        0
        + if self.message == "" { 0 } else { 1 + sizeof_len((&self.message).len()) }
        + if self.code == opentelemetry::proto::trace::v1::mod_Status::StatusCode::STATUS_CODE_UNSET { 0 } else { 1 + sizeof_varint(*(&self.code) as u64) }
    }

    fn write_message<W: WriterBackend>(&self, w: &mut Writer<W>) -> Result<()> {
        if self.message != "" { w.write_with_tag(18, |w| w.write_string(&**&self.message))?; }
        if self.code != opentelemetry::proto::trace::v1::mod_Status::StatusCode::STATUS_CODE_UNSET { w.write_with_tag(24, |w| w.write_enum(*&self.code as i32))?; }
        Ok(())
    }
}

pub mod mod_Status {


#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum StatusCode {
    STATUS_CODE_UNSET = 0,
    STATUS_CODE_OK = 1,
    STATUS_CODE_ERROR = 2,
}

impl Default for StatusCode {
    fn default() -> Self {
        StatusCode::STATUS_CODE_UNSET
    }
}

impl From<i32> for StatusCode {
    fn from(i: i32) -> Self {
        match i {
            0 => StatusCode::STATUS_CODE_UNSET,
            1 => StatusCode::STATUS_CODE_OK,
            2 => StatusCode::STATUS_CODE_ERROR,
            _ => Self::default(),
        }
    }
}

impl<'a> From<&'a str> for StatusCode {
    fn from(s: &'a str) -> Self {
        match s {
            "STATUS_CODE_UNSET" => StatusCode::STATUS_CODE_UNSET,
            "STATUS_CODE_OK" => StatusCode::STATUS_CODE_OK,
            "STATUS_CODE_ERROR" => StatusCode::STATUS_CODE_ERROR,
            _ => Self::default(),
        }
    }
}

}

