//! OTLP/protobuf: walks an `ExportTraceServiceRequest` with the wire reader (`protowire.rs`)
//! and hands every span, with its resource and scope, to a `SpanSink`.
//!
//! The schema is opentelemetry-proto's (`collector/trace/v1`, `trace/v1`, `common/v1`,
//! `resource/v1`), and so are the decoding rules, prost's: a known field with another wire
//! type, a string that is not UTF-8, a truncated field refuse the body; unknown fields are
//! skipped; a singular message field sent twice is merged (its fields overwrite, repeated
//! fields append), a `oneof` takes the last member sent (two array or two key-value-list values
//! in a row merge). The fuzz target holds this reader to prost's decode of the same bytes.
//!
//! A `ResourceSpans` and a `ScopeSpans` are each read twice: first their resource (scope) and
//! the fields that are checked only, then their spans, so that every span is mapped knowing its
//! resource whatever order the fields came in. Nothing allocates outside the arena: a span's
//! attributes go into one scratch vector reused for every span.

use bumpalo::collections::Vec as BVec;
use bumpalo::Bump;

use super::protowire::{utf8, varint, ProtoError, ProtoErrorKind, Reader, WireType};
use super::raw::{Attr, RawSpan, Resource, Scope, SpanSink, Value, MAX_VALUE_DEPTH};

/// Decodes `body` and hands its spans to `sink`. On an error, spans already handed on are
/// meaningless (the caller refuses the whole body).
pub fn walk<'a, S: SpanSink<'a>>(
    body: &'a [u8],
    arena: &'a Bump,
    sink: &mut S,
) -> Result<(), ProtoError> {
    let mut w = Walker {
        arena,
        attrs: BVec::with_capacity_in(64, arena),
    };
    let mut r = Reader::new(body);
    while !r.is_empty() {
        match r.key()? {
            (1, wire) => {
                r.expect(wire, WireType::Len)?;
                w.resource_spans(r.message()?, sink)?;
            }
            (field, wire) => r.skip(field, wire)?,
        }
    }
    Ok(())
}

/// What a field of a message that is checked but not kept must be.
#[derive(Debug, Clone, Copy)]
enum Check {
    Varint,
    Fixed32,
    Fixed64,
    Bytes,
    /// Length-delimited, UTF-8.
    Str,
    /// A `KeyValue`, its value decoded (and so checked) into the arena.
    Attribute,
}

/// `Span.Event`: time, name, attributes, dropped attributes count.
const EVENT: &[(u32, Check)] = {
    use Check::*;
    &[(1, Fixed64), (2, Str), (3, Attribute), (4, Varint)]
};

/// `Span.Link`: trace id, span id, trace state, attributes, dropped attributes count, flags.
const LINK: &[(u32, Check)] = {
    use Check::*;
    &[
        (1, Bytes),
        (2, Bytes),
        (3, Str),
        (4, Attribute),
        (5, Varint),
        (6, Fixed32),
    ]
};

/// A resource's `EntityRef`: schema url, type, id keys, description keys.
const ENTITY_REF: &[(u32, Check)] = {
    use Check::*;
    &[(1, Str), (2, Str), (3, Str), (4, Str)]
};

struct Walker<'a> {
    arena: &'a Bump,
    /// The current span's attributes; cleared for the next span.
    attrs: BVec<'a, Attr<'a>>,
}

impl<'a> Walker<'a> {
    fn resource_spans<S: SpanSink<'a>>(
        &mut self,
        msg: Reader<'a>,
        sink: &mut S,
    ) -> Result<(), ProtoError> {
        // First pass: the resource (all of them: a message field sent twice is merged) and the
        // checks of the other fields; the scope spans only have their wire type checked.
        let mut resource_attrs = BVec::new_in(self.arena);
        self.first_pass(msg, |w, m| w.resource(m, &mut resource_attrs))?;
        let resource = Resource {
            attributes: resource_attrs.into_bump_slice(),
        };
        // Second pass: the spans. Every field was read once already, so nothing but the scope
        // spans themselves can fail here.
        let mut r = msg;
        while !r.is_empty() {
            match r.key()? {
                (2, _) => self.scope_spans(r.message()?, &resource, sink)?,
                (field, wire) => r.skip(field, wire)?,
            }
        }
        Ok(())
    }

    /// The first pass over a `ResourceSpans` or a `ScopeSpans`, which have the same shape:
    /// field 1 (the resource, or the scope) goes to `head`; field 2 (what the second pass
    /// reads) is only checked to be length-delimited, and counted; field 3 is the schema URL.
    fn first_pass(
        &mut self,
        mut r: Reader<'a>,
        mut head: impl FnMut(&mut Self, Reader<'a>) -> Result<(), ProtoError>,
    ) -> Result<usize, ProtoError> {
        let mut count = 0;
        while !r.is_empty() {
            match r.key()? {
                (1, wire) => {
                    r.expect(wire, WireType::Len)?;
                    head(self, r.message()?)?;
                }
                (2, wire) => {
                    r.expect(wire, WireType::Len)?;
                    r.bytes()?;
                    count += 1;
                }
                (3, wire) => {
                    r.expect(wire, WireType::Len)?;
                    r.str()?;
                }
                (field, wire) => r.skip(field, wire)?,
            }
        }
        Ok(count)
    }

    fn resource(
        &mut self,
        mut r: Reader<'a>,
        attrs: &mut BVec<'a, Attr<'a>>,
    ) -> Result<(), ProtoError> {
        while !r.is_empty() {
            match r.key()? {
                (1, wire) => {
                    r.expect(wire, WireType::Len)?;
                    attrs.push(self.key_value(r.message()?, 1)?);
                }
                (2, wire) => {
                    r.expect(wire, WireType::Varint)?;
                    r.varint()?;
                }
                (3, wire) => {
                    r.expect(wire, WireType::Len)?;
                    self.check(r.message()?, ENTITY_REF)?;
                }
                (field, wire) => r.skip(field, wire)?,
            }
        }
        Ok(())
    }

    fn scope_spans<S: SpanSink<'a>>(
        &mut self,
        msg: Reader<'a>,
        resource: &Resource<'a>,
        sink: &mut S,
    ) -> Result<(), ProtoError> {
        let mut scope = Scope::default();
        let mut scope_attrs = BVec::new_in(self.arena);
        let spans = self.first_pass(msg, |w, m| w.scope(m, &mut scope, &mut scope_attrs))?;
        scope.attributes = scope_attrs.into_bump_slice();
        sink.reserve(spans);
        let mut r = msg;
        while !r.is_empty() {
            match r.key()? {
                (2, _) => {
                    let span = self.span(r.message()?)?;
                    sink.span(&span, &scope, resource);
                }
                (field, wire) => r.skip(field, wire)?,
            }
        }
        Ok(())
    }

    fn scope(
        &mut self,
        mut r: Reader<'a>,
        scope: &mut Scope<'a>,
        attrs: &mut BVec<'a, Attr<'a>>,
    ) -> Result<(), ProtoError> {
        while !r.is_empty() {
            match r.key()? {
                (1, wire) => {
                    r.expect(wire, WireType::Len)?;
                    scope.name = r.str()?;
                }
                (2, wire) => {
                    r.expect(wire, WireType::Len)?;
                    scope.version = r.str()?;
                }
                (3, wire) => {
                    r.expect(wire, WireType::Len)?;
                    attrs.push(self.key_value(r.message()?, 1)?);
                }
                (4, wire) => {
                    r.expect(wire, WireType::Varint)?;
                    r.varint()?;
                }
                (field, wire) => r.skip(field, wire)?,
            }
        }
        Ok(())
    }

    /// One span; its attributes are in `self.attrs` until the next span.
    #[inline]
    fn span<'s>(&'s mut self, mut r: Reader<'a>) -> Result<RawSpan<'a, 's>, ProtoError> {
        self.attrs.clear();
        let mut s = RawSpan::default();
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            match field {
                1 | 2 | 4 => {
                    r.expect(wire, WireType::Len)?;
                    let id = r.bytes()?;
                    match field {
                        1 => s.trace_id = id,
                        2 => s.span_id = id,
                        _ => s.parent_span_id = id,
                    }
                }
                3 => {
                    r.expect(wire, WireType::Len)?;
                    r.str()?;
                }
                5 => {
                    r.expect(wire, WireType::Len)?;
                    s.name = r.str()?;
                }
                6 => {
                    r.expect(wire, WireType::Varint)?;
                    s.kind = r.varint()? as i32;
                }
                7 => {
                    r.expect(wire, WireType::Fixed64)?;
                    s.start_ns = r.fixed64()?;
                }
                8 => {
                    r.expect(wire, WireType::Fixed64)?;
                    s.end_ns = r.fixed64()?;
                }
                9 => {
                    r.expect(wire, WireType::Len)?;
                    let kv = self.key_value(r.message()?, 1)?;
                    self.attrs.push(kv);
                }
                10 | 12 | 14 => {
                    r.expect(wire, WireType::Varint)?;
                    r.varint()?;
                }
                11 => {
                    r.expect(wire, WireType::Len)?;
                    self.check(r.message()?, EVENT)?;
                    s.events += 1;
                }
                13 => {
                    r.expect(wire, WireType::Len)?;
                    self.check(r.message()?, LINK)?;
                    s.links += 1;
                }
                15 => {
                    r.expect(wire, WireType::Len)?;
                    status(r.message()?, &mut s)?;
                }
                16 => {
                    r.expect(wire, WireType::Fixed32)?;
                    r.fixed32()?;
                }
                _ => r.skip(field, wire)?,
            }
        }
        s.attributes = &self.attrs;
        Ok(s)
    }

    /// A message that is checked, as prost would decode it, but not kept (`fields` says what
    /// each known field must be; unknown fields are skipped).
    fn check(&mut self, mut r: Reader<'a>, fields: &[(u32, Check)]) -> Result<(), ProtoError> {
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            let Some(&(_, check)) = fields.iter().find(|f| f.0 == field) else {
                r.skip(field, wire)?;
                continue;
            };
            let want = match check {
                Check::Varint => WireType::Varint,
                Check::Fixed32 => WireType::Fixed32,
                Check::Fixed64 => WireType::Fixed64,
                Check::Bytes | Check::Str | Check::Attribute => WireType::Len,
            };
            r.expect(wire, want)?;
            match check {
                Check::Varint => {
                    r.varint()?;
                }
                Check::Fixed32 => {
                    r.fixed32()?;
                }
                Check::Fixed64 => {
                    r.fixed64()?;
                }
                Check::Bytes => {
                    r.bytes()?;
                }
                Check::Str => {
                    r.str()?;
                }
                Check::Attribute => {
                    self.key_value(r.message()?, 1)?;
                }
            }
        }
        Ok(())
    }

    /// A `KeyValue` whose value is at nesting `depth` (1 for an attribute). Always inlined: a
    /// call per attribute was 1% of an export's instructions.
    #[inline(always)]
    fn key_value(&mut self, r: Reader<'a>, depth: u32) -> Result<Attr<'a>, ProtoError> {
        if depth <= MAX_VALUE_DEPTH {
            if let Some(kv) = simple_key_value(r.rest()) {
                return Ok(kv);
            }
        }
        self.key_value_fields(r, depth)
    }

    /// A `KeyValue` field by field: any shape, and every error.
    fn key_value_fields(&mut self, mut r: Reader<'a>, depth: u32) -> Result<Attr<'a>, ProtoError> {
        let mut kv = Attr::default();
        while !r.is_empty() {
            match r.key()? {
                (1, wire) => {
                    r.expect(wire, WireType::Len)?;
                    kv.key = r.str()?;
                }
                (2, wire) => {
                    r.expect(wire, WireType::Len)?;
                    self.any_value(r.message()?, depth, &mut kv.value)?;
                }
                (3, wire) => {
                    // `key_strindex`: a profiles dictionary index, meaningless in traces.
                    r.expect(wire, WireType::Varint)?;
                    r.varint()?;
                }
                (field, wire) => r.skip(field, wire)?,
            }
        }
        Ok(kv)
    }

    /// Merges an `AnyValue` into `into` (a value sent twice is merged, as prost does).
    fn any_value(
        &mut self,
        mut r: Reader<'a>,
        depth: u32,
        into: &mut Value<'a>,
    ) -> Result<(), ProtoError> {
        if depth > MAX_VALUE_DEPTH {
            return Err(ProtoError {
                kind: ProtoErrorKind::TooDeep,
                offset: r.offset(),
            });
        }
        while !r.is_empty() {
            match r.key()? {
                (1, wire) => {
                    r.expect(wire, WireType::Len)?;
                    *into = Value::Str(r.str()?);
                }
                (2, wire) => {
                    r.expect(wire, WireType::Varint)?;
                    *into = Value::Bool(r.varint()? != 0);
                }
                (3, wire) => {
                    r.expect(wire, WireType::Varint)?;
                    *into = Value::Int(r.varint()? as i64);
                }
                (4, wire) => {
                    r.expect(wire, WireType::Fixed64)?;
                    *into = Value::Double(f64::from_bits(r.fixed64()?));
                }
                (5, wire) => {
                    r.expect(wire, WireType::Len)?;
                    let items = self.array(r.message()?, depth)?;
                    *into = match *into {
                        Value::Array(before) => Value::Array(self.concat(before, items)),
                        _ => Value::Array(items),
                    };
                }
                (6, wire) => {
                    r.expect(wire, WireType::Len)?;
                    let kvs = self.kvlist(r.message()?, depth)?;
                    *into = match *into {
                        Value::Kvlist(before) => Value::Kvlist(self.concat(before, kvs)),
                        _ => Value::Kvlist(kvs),
                    };
                }
                (7, wire) => {
                    r.expect(wire, WireType::Len)?;
                    *into = Value::Bytes(r.bytes()?);
                }
                (8, wire) => {
                    // `string_value_strindex`: a profiles dictionary index; no value here.
                    r.expect(wire, WireType::Varint)?;
                    r.varint()?;
                    *into = Value::Empty;
                }
                (field, wire) => r.skip(field, wire)?,
            }
        }
        Ok(())
    }

    /// An `ArrayValue`'s values, in the arena: counted first, so the slice is allocated once.
    fn array(&mut self, msg: Reader<'a>, depth: u32) -> Result<&'a [Value<'a>], ProtoError> {
        let n = count_field_1(msg)?;
        let items = self.arena.alloc_slice_fill_copy(n, Value::Empty);
        let mut r = msg;
        let mut i = 0;
        while !r.is_empty() {
            match r.key()? {
                (1, _) => {
                    self.any_value(r.message()?, depth + 1, &mut items[i])?;
                    i += 1;
                }
                (field, wire) => r.skip(field, wire)?,
            }
        }
        Ok(items)
    }

    /// A `KeyValueList`'s pairs, in the arena.
    fn kvlist(&mut self, msg: Reader<'a>, depth: u32) -> Result<&'a [Attr<'a>], ProtoError> {
        let n = count_field_1(msg)?;
        let kvs = self.arena.alloc_slice_fill_copy(n, Attr::default());
        let mut r = msg;
        let mut i = 0;
        while !r.is_empty() {
            match r.key()? {
                (1, _) => {
                    kvs[i] = self.key_value(r.message()?, depth + 1)?;
                    i += 1;
                }
                (field, wire) => r.skip(field, wire)?,
            }
        }
        Ok(kvs)
    }

    /// `a` then `b` in one arena slice (a repeated field merged twice).
    #[cold]
    fn concat<T: Copy>(&self, a: &[T], b: &'a [T]) -> &'a [T] {
        if a.is_empty() {
            return b;
        }
        let mut v = BVec::with_capacity_in(a.len() + b.len(), self.arena);
        v.extend_from_slice(a);
        v.extend_from_slice(b);
        v.into_bump_slice()
    }
}

/// The `KeyValue` in `b` if it has the shape nearly every exporter writes: the key (field 1,
/// a length under 128), then, unless the value is empty, one `AnyValue` (field 2) holding one
/// string, bool, int or double, each field once. `None` for any other shape and for anything
/// invalid, which `Walker::key_value_fields` then reads (and refuses) field by field; what
/// this returns is exactly what that would, only without its general loops.
#[inline]
fn simple_key_value(b: &[u8]) -> Option<Attr<'_>> {
    if b.len() < 2 || b[0] != 0x0a || b[1] >= 0x80 {
        return None;
    }
    let key_end = 2 + usize::from(b[1]);
    let key = utf8(b.get(2..key_end)?)?;
    let value = match b.get(key_end..)? {
        [] => Value::Empty,
        [0x12, rest @ ..] => {
            let (len, used) = varint(rest)?;
            let any = rest.get(used..)?;
            if u64::try_from(any.len()).ok()? != len {
                return None;
            }
            simple_any_value(any)?
        }
        _ => return None,
    };
    Some(Attr { key, value })
}

/// An `AnyValue` of no field or of one scalar field (string, bool, int, double); `None`
/// otherwise (see `simple_key_value`).
#[inline]
fn simple_any_value(b: &[u8]) -> Option<Value<'_>> {
    let (&tag, rest) = match b.split_first() {
        None => return Some(Value::Empty),
        Some(split) => split,
    };
    match tag {
        0x0a => {
            let (len, used) = varint(rest)?;
            let s = rest.get(used..)?;
            (u64::try_from(s.len()).ok()? == len).then_some(())?;
            Some(Value::Str(utf8(s)?))
        }
        0x10 | 0x18 => {
            let (v, used) = varint(rest)?;
            (used == rest.len()).then_some(())?;
            Some(if tag == 0x10 {
                Value::Bool(v != 0)
            } else {
                Value::Int(v as i64)
            })
        }
        0x21 => {
            let bits: [u8; 8] = rest.try_into().ok()?;
            Some(Value::Double(f64::from_bits(u64::from_le_bytes(bits))))
        }
        _ => None,
    }
}

/// How many field-1 entries a message has (each checked to be length-delimited; everything
/// else skipped, as the second pass will).
fn count_field_1(mut r: Reader<'_>) -> Result<usize, ProtoError> {
    let mut n = 0;
    while !r.is_empty() {
        match r.key()? {
            (1, wire) => {
                r.expect(wire, WireType::Len)?;
                r.bytes()?;
                n += 1;
            }
            (field, wire) => r.skip(field, wire)?,
        }
    }
    Ok(n)
}

/// A span's `Status` (sent twice, merged: each field overwrites).
fn status<'a>(mut r: Reader<'a>, s: &mut RawSpan<'a, '_>) -> Result<(), ProtoError> {
    while !r.is_empty() {
        match r.key()? {
            (2, wire) => {
                r.expect(wire, WireType::Len)?;
                s.status_message = r.str()?;
            }
            (3, wire) => {
                r.expect(wire, WireType::Varint)?;
                s.status_code = r.varint()? as i32;
            }
            (field, wire) => r.skip(field, wire)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::otlp::protowire::write;

    /// Every `KeyValue` the fast path takes reads exactly as field by field; every other shape
    /// (and every invalid one) is left to the field-by-field reader.
    #[test]
    fn the_simple_key_value_reads_as_the_general_one_or_not_at_all() {
        let kv = |key: &[u8], any: Option<&[u8]>| {
            let mut out = Vec::new();
            write::bytes(&mut out, 1, key);
            if let Some(any) = any {
                write::bytes(&mut out, 2, any);
            }
            out
        };
        let any = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut out = Vec::new();
            f(&mut out);
            out
        };
        let s = any(&|o| write::bytes(o, 1, "naïve 🚀".as_bytes()));
        let long = any(&|o| write::bytes(o, 1, "x".repeat(300).as_bytes()));
        let int = any(&|o| write::uint(o, 3, 4096));
        let negative = any(&|o| write::uint(o, 3, -7i64 as u64));
        let boolean = any(&|o| write::uint(o, 2, 1));
        let double = any(&|o| write::fixed64(o, 4, 0.2f64.to_bits()));
        let two = any(&|o| {
            write::uint(o, 3, 1);
            write::bytes(o, 1, b"then a string");
        });
        let bad_utf8 = any(&|o| write::bytes(o, 1, b"\xc3\x28"));
        let array = any(&|o| write::bytes(o, 5, &any(&|p| write::bytes(p, 1, &int))));
        let taken: &[(Vec<u8>, bool)] = &[
            (kv(b"gen_ai.request.model", Some(&s)), true),
            (kv(b"k", Some(&long)), true),
            (kv(b"k", Some(&int)), true),
            (kv(b"k", Some(&negative)), true),
            (kv(b"k", Some(&boolean)), true),
            (kv(b"k", Some(&double)), true),
            (kv(b"k", Some(&[])), true),
            (kv(b"k", None), true),
            (kv(b"", Some(&int)), true),
            (kv(&[b'k'; 127], Some(&int)), true),
            // Left to the general reader: a key of 128 bytes or more, two value fields, a
            // nested value, an unknown field, the fields in the other order, fields twice.
            (kv(&[b'k'; 128], Some(&int)), false),
            (kv(b"k", Some(&two)), false),
            (kv(b"k", Some(&array)), false),
            ([kv(b"k", Some(&int)), vec![0x18, 1]].concat(), false),
            (
                [&[0x12, int.len() as u8][..], &int, &[0x0a, 1, b'k']].concat(),
                false,
            ),
            ([kv(b"k", None), kv(b"j", Some(&int))].concat(), false),
            // Invalid: also left to it, which refuses them.
            (kv(b"\xff", Some(&int)), false),
            (kv(b"k", Some(&bad_utf8)), false),
            (kv(b"k", Some(&[0x18])), false),
            (kv(b"k", Some(&[0x21, 1, 2, 3])), false),
            (kv(b"k", Some(&int))[..5].to_vec(), false),
        ];
        let arena = Bump::new();
        let mut w = Walker {
            arena: &arena,
            attrs: BVec::new_in(&arena),
        };
        for (bytes, simple) in taken {
            let fast = simple_key_value(bytes);
            assert_eq!(fast.is_some(), *simple, "{bytes:x?}");
            let general = w.key_value_fields(Reader::new(bytes), 1);
            if let Some(fast) = fast {
                assert_eq!(Ok(fast), general, "{bytes:x?}");
            }
            assert_eq!(w.key_value(Reader::new(bytes), 1), general, "{bytes:x?}");
        }
    }
}
