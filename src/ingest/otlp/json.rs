//! OTLP/JSON: walks simd-json's tape of an `ExportTraceServiceRequest` and hands every span,
//! with its resource and scope, to a `SpanSink`, exactly as `proto.rs` does for protobuf.
//!
//! The OTLP specification's JSON: field names in lowerCamelCase (snake_case, protobuf's own
//! JSON names, are accepted too: one more arm per field), trace and span ids as hex of either
//! case (base64 too, as some exporters write bytes fields: `raw::json_id`), enums as integers
//! (their names too), 64-bit integers as numbers or decimal strings, unknown fields ignored,
//! `null` as absent. A known field of the wrong JSON type refuses the body, saying which.
//!
//! The walk never recurses deeper than the schema except through attribute values, which stop
//! at `MAX_VALUE_DEPTH`; a value of an unexpected shape is skipped in one step with the node
//! count its container header stores.

use bumpalo::collections::Vec as BVec;
use bumpalo::Bump;
use simd_json::{Node, StaticNode};

use super::raw::{self, Attr, RawSpan, Resource, Scope, SpanSink, Value, MAX_VALUE_DEPTH};

/// Why a JSON body is not an OTLP export. `Copy`: the message is static.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShapeError {
    /// A field of the wrong JSON type; says which and what it must be.
    Shape(&'static str),
    /// Attribute values nested deeper than `MAX_VALUE_DEPTH`.
    TooDeep,
}

/// Walks a parsed tape and hands its spans to `sink`.
pub fn walk<'a, S: SpanSink<'a>>(
    tape: &[Node<'a>],
    arena: &'a Bump,
    sink: &mut S,
) -> Result<(), ShapeError> {
    let mut w = Walker {
        tape,
        pos: 0,
        arena,
        attrs: BVec::with_capacity_in(64, arena),
    };
    let Node::Object { len, .. } = w.next() else {
        return Err(ShapeError::Shape("the body must be a JSON object"));
    };
    for _ in 0..len {
        match w.key() {
            "resourceSpans" | "resource_spans" => {
                let Some(n) = w.array("resourceSpans must be an array")? else {
                    continue;
                };
                for _ in 0..n {
                    w.resource_spans(sink)?;
                }
            }
            _ => w.skip_value(),
        }
    }
    Ok(())
}

struct Walker<'t, 'a> {
    tape: &'t [Node<'a>],
    /// The next node to read.
    pos: usize,
    arena: &'a Bump,
    /// The current span's attributes; cleared for the next span.
    attrs: BVec<'a, Attr<'a>>,
}

impl<'a> Walker<'_, 'a> {
    #[inline]
    fn next(&mut self) -> Node<'a> {
        let n = self.tape[self.pos];
        self.pos += 1;
        n
    }

    /// Skips the value at `pos`, however nested.
    #[inline]
    fn skip_value(&mut self) {
        if let Node::Object { count, .. } | Node::Array { count, .. } = self.next() {
            self.pos += count;
        }
    }

    #[inline]
    fn key(&mut self) -> &'a str {
        match self.next() {
            Node::String(s) => s,
            _ => "",
        }
    }

    /// An object's member count; `None` for `null`.
    fn object(&mut self, what: &'static str) -> Result<Option<usize>, ShapeError> {
        match self.next() {
            Node::Object { len, .. } => Ok(Some(len)),
            Node::Static(StaticNode::Null) => Ok(None),
            other => self.wrong(other, what),
        }
    }

    /// An array's length; `None` for `null`.
    fn array(&mut self, what: &'static str) -> Result<Option<usize>, ShapeError> {
        match self.next() {
            Node::Array { len, .. } => Ok(Some(len)),
            Node::Static(StaticNode::Null) => Ok(None),
            other => self.wrong(other, what),
        }
    }

    fn string(&mut self, what: &'static str) -> Result<Option<&'a str>, ShapeError> {
        match self.next() {
            Node::String(s) => Ok(Some(s)),
            Node::Static(StaticNode::Null) => Ok(None),
            other => self.wrong(other, what),
        }
    }

    /// A 64-bit unsigned integer: a number or a decimal string.
    fn uint64(&mut self, what: &'static str) -> Result<Option<u64>, ShapeError> {
        let v = match self.next() {
            Node::Static(StaticNode::U64(u)) => Some(u),
            Node::Static(StaticNode::I64(i)) => u64::try_from(i).ok(),
            Node::Static(StaticNode::F64(f)) if f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 => {
                Some(f as u64)
            }
            Node::String(s) => s.parse().ok(),
            Node::Static(StaticNode::Null) => return Ok(None),
            _ => None,
        };
        v.map(Some).ok_or(ShapeError::Shape(what))
    }

    /// A 64-bit signed integer: a number or a decimal string; `null` is absent.
    fn int64(&mut self, what: &'static str) -> Result<Option<i64>, ShapeError> {
        let v = match self.next() {
            Node::Static(StaticNode::I64(i)) => Some(i),
            Node::Static(StaticNode::U64(u)) => i64::try_from(u).ok(),
            Node::Static(StaticNode::F64(f)) if f.fract() == 0.0 && f.abs() < 9.2e18 => {
                Some(f as i64)
            }
            Node::String(s) => s.parse().ok(),
            Node::Static(StaticNode::Null) => return Ok(None),
            _ => None,
        };
        v.map(Some).ok_or(ShapeError::Shape(what))
    }

    /// An enum: its number, or its name from `names` (`null` = 0).
    fn enumeration(&mut self, names: &[&str], what: &'static str) -> Result<i32, ShapeError> {
        let v = match self.next() {
            Node::Static(StaticNode::I64(i)) => i32::try_from(i).ok(),
            Node::Static(StaticNode::U64(u)) => i32::try_from(u).ok(),
            Node::String(s) => match names.iter().position(|n| *n == s) {
                Some(i) => Some(i as i32),
                None => s.parse().ok(),
            },
            Node::Static(StaticNode::Null) => Some(0),
            _ => None,
        };
        v.ok_or(ShapeError::Shape(what))
    }

    #[cold]
    fn wrong<T>(&self, _node: Node<'a>, what: &'static str) -> Result<T, ShapeError> {
        Err(ShapeError::Shape(what))
    }

    fn resource_spans<S: SpanSink<'a>>(&mut self, sink: &mut S) -> Result<(), ShapeError> {
        let Some(len) = self.object("each of resourceSpans must be an object")? else {
            return Ok(());
        };
        // The resource first, wherever it is, so every span is mapped knowing it.
        let (mut resource_at, mut scopes_at) = (None, None);
        for _ in 0..len {
            match self.key() {
                "resource" => resource_at = Some(self.pos),
                "scopeSpans" | "scope_spans" => scopes_at = Some(self.pos),
                _ => {}
            }
            self.skip_value();
        }
        let end = self.pos;
        let mut resource = Resource::default();
        if let Some(at) = resource_at {
            self.pos = at;
            resource.attributes = self.resource()?;
        }
        if let Some(at) = scopes_at {
            self.pos = at;
            if let Some(n) = self.array("scopeSpans must be an array")? {
                for _ in 0..n {
                    self.scope_spans(&resource, sink)?;
                }
            }
        }
        self.pos = end;
        Ok(())
    }

    fn resource(&mut self) -> Result<&'a [Attr<'a>], ShapeError> {
        let Some(len) = self.object("resource must be an object")? else {
            return Ok(&[]);
        };
        let mut attrs: &'a [Attr<'a>] = &[];
        for _ in 0..len {
            match self.key() {
                "attributes" => attrs = self.attribute_list(1)?,
                _ => self.skip_value(),
            }
        }
        Ok(attrs)
    }

    fn scope_spans<S: SpanSink<'a>>(
        &mut self,
        resource: &Resource<'a>,
        sink: &mut S,
    ) -> Result<(), ShapeError> {
        let Some(len) = self.object("each of scopeSpans must be an object")? else {
            return Ok(());
        };
        let (mut scope_at, mut spans_at) = (None, None);
        for _ in 0..len {
            match self.key() {
                "scope" => scope_at = Some(self.pos),
                "spans" => spans_at = Some(self.pos),
                _ => {}
            }
            self.skip_value();
        }
        let end = self.pos;
        let mut scope = Scope::default();
        if let Some(at) = scope_at {
            self.pos = at;
            self.scope(&mut scope)?;
        }
        if let Some(at) = spans_at {
            self.pos = at;
            if let Some(n) = self.array("spans must be an array")? {
                sink.reserve(n);
                for _ in 0..n {
                    if let Some(span) = self.span()? {
                        sink.span(&span, &scope, resource);
                    }
                }
            }
        }
        self.pos = end;
        Ok(())
    }

    fn scope(&mut self, scope: &mut Scope<'a>) -> Result<(), ShapeError> {
        let Some(len) = self.object("scope must be an object")? else {
            return Ok(());
        };
        for _ in 0..len {
            match self.key() {
                "name" => scope.name = self.string("scope name must be a string")?.unwrap_or(""),
                "version" => {
                    scope.version = self.string("scope version must be a string")?.unwrap_or("")
                }
                "attributes" => scope.attributes = self.attribute_list(1)?,
                _ => self.skip_value(),
            }
        }
        Ok(())
    }

    /// One span (`None` for `null`); its attributes are in `self.attrs` until the next.
    fn span<'s>(&'s mut self) -> Result<Option<RawSpan<'a, 's>>, ShapeError> {
        let Some(len) = self.object("each span must be an object")? else {
            return Ok(None);
        };
        self.attrs.clear();
        let mut s = RawSpan::default();
        for _ in 0..len {
            match self.key() {
                "traceId" | "trace_id" => {
                    s.trace_id = self.id(&mut s.unreadable_ids, raw::TRACE_ID)?
                }
                "spanId" | "span_id" => s.span_id = self.id(&mut s.unreadable_ids, raw::SPAN_ID)?,
                "parentSpanId" | "parent_span_id" => {
                    s.parent_span_id = self.id(&mut s.unreadable_ids, raw::PARENT_SPAN_ID)?
                }
                "name" => s.name = self.string("span name must be a string")?.unwrap_or(""),
                "kind" => s.kind = self.enumeration(SPAN_KINDS, "kind must be an enum")?,
                "startTimeUnixNano" | "start_time_unix_nano" => {
                    s.start_ns = self
                        .uint64("startTimeUnixNano must be an unsigned 64-bit integer")?
                        .unwrap_or(0)
                }
                "endTimeUnixNano" | "end_time_unix_nano" => {
                    s.end_ns = self
                        .uint64("endTimeUnixNano must be an unsigned 64-bit integer")?
                        .unwrap_or(0)
                }
                "attributes" => {
                    let Some(n) = self.array("attributes must be an array")? else {
                        continue;
                    };
                    for _ in 0..n {
                        if let Some(kv) = self.key_value(1)? {
                            self.attrs.push(kv);
                        }
                    }
                }
                "events" => s.events = self.events()?,
                "links" => s.links = self.links()?,
                "status" => self.status(&mut s)?,
                // Read and checked as the protobuf reader checks them, not kept.
                "traceState" | "trace_state" => {
                    self.string("traceState must be a string")?;
                }
                "flags" => {
                    self.uint32("a span's flags must be an unsigned 32-bit integer")?;
                }
                "droppedAttributesCount"
                | "dropped_attributes_count"
                | "droppedEventsCount"
                | "dropped_events_count"
                | "droppedLinksCount"
                | "dropped_links_count" => {
                    self.uint32("droppedAttributesCount, droppedEventsCount and droppedLinksCount must be unsigned 32-bit integers")?;
                }
                _ => self.skip_value(),
            }
        }
        s.attributes = &self.attrs;
        Ok(Some(s))
    }

    /// `events`: checked as the protobuf reader checks them (each field of its type), not
    /// kept; how many there are.
    fn events(&mut self) -> Result<u32, ShapeError> {
        let Some(n) = self.array("events must be an array")? else {
            return Ok(0);
        };
        for _ in 0..n {
            let Some(len) = self.object("each event must be an object")? else {
                continue;
            };
            for _ in 0..len {
                match self.key() {
                    "timeUnixNano" | "time_unix_nano" => {
                        self.uint64("an event's timeUnixNano must be an unsigned 64-bit integer")?;
                    }
                    "name" => {
                        self.string("an event's name must be a string")?;
                    }
                    "attributes" => self.check_attributes()?,
                    "droppedAttributesCount" | "dropped_attributes_count" => {
                        self.uint32("droppedAttributesCount must be an unsigned 32-bit integer")?;
                    }
                    _ => self.skip_value(),
                }
            }
        }
        Ok(n as u32)
    }

    /// `links`: checked as `events`; how many there are.
    fn links(&mut self) -> Result<u32, ShapeError> {
        let Some(n) = self.array("links must be an array")? else {
            return Ok(0);
        };
        for _ in 0..n {
            let Some(len) = self.object("each link must be an object")? else {
                continue;
            };
            for _ in 0..len {
                match self.key() {
                    "traceId" | "trace_id" | "spanId" | "span_id" => {
                        self.string("a link's ids must be strings (hex)")?;
                    }
                    "traceState" | "trace_state" => {
                        self.string("a link's traceState must be a string")?;
                    }
                    "attributes" => self.check_attributes()?,
                    "droppedAttributesCount" | "dropped_attributes_count" => {
                        self.uint32("droppedAttributesCount must be an unsigned 32-bit integer")?;
                    }
                    "flags" => {
                        self.uint32("a link's flags must be an unsigned 32-bit integer")?;
                    }
                    _ => self.skip_value(),
                }
            }
        }
        Ok(n as u32)
    }

    /// An attribute list that is checked, not kept.
    fn check_attributes(&mut self) -> Result<(), ShapeError> {
        let Some(n) = self.array("attributes must be an array")? else {
            return Ok(());
        };
        for _ in 0..n {
            self.key_value(1)?;
        }
        Ok(())
    }

    /// A 32-bit unsigned integer (a number or a decimal string); `null` is absent.
    fn uint32(&mut self, what: &'static str) -> Result<Option<u32>, ShapeError> {
        match self.uint64(what)? {
            Some(v) => u32::try_from(v)
                .map(Some)
                .map_err(|_| ShapeError::Shape(what)),
            None => Ok(None),
        }
    }

    /// An id: its bytes, or, spelled as neither hex nor base64 of 8 or 16 bytes, none and
    /// `bit` set in `unreadable` (a later spelling of the same field that reads clears it).
    fn id(&mut self, unreadable: &mut u8, bit: u8) -> Result<&'a [u8], ShapeError> {
        let id = match self.string("ids must be strings (hex)")? {
            Some(s) => raw::json_id(s, self.arena),
            None => Some(&[][..]),
        };
        match id {
            Some(id) => {
                *unreadable &= !bit;
                Ok(id)
            }
            None => {
                *unreadable |= bit;
                Ok(&[])
            }
        }
    }

    fn status(&mut self, s: &mut RawSpan<'a, '_>) -> Result<(), ShapeError> {
        let Some(len) = self.object("status must be an object")? else {
            return Ok(());
        };
        for _ in 0..len {
            match self.key() {
                "message" => {
                    s.status_message = self
                        .string("status message must be a string")?
                        .unwrap_or("")
                }
                "code" => {
                    s.status_code = self.enumeration(STATUS_CODES, "status code must be an enum")?
                }
                _ => self.skip_value(),
            }
        }
        Ok(())
    }

    /// An array of `KeyValue`s, in the arena (resource and scope attributes, kvlist values).
    fn attribute_list(&mut self, depth: u32) -> Result<&'a [Attr<'a>], ShapeError> {
        let Some(n) = self.array("attributes must be an array")? else {
            return Ok(&[]);
        };
        let mut out = BVec::with_capacity_in(n, self.arena);
        for _ in 0..n {
            if let Some(kv) = self.key_value(depth)? {
                out.push(kv);
            }
        }
        Ok(out.into_bump_slice())
    }

    /// A `KeyValue` (`None` for `null`) whose value is at nesting `depth`.
    fn key_value(&mut self, depth: u32) -> Result<Option<Attr<'a>>, ShapeError> {
        let Some(len) = self.object("each attribute must be an object")? else {
            return Ok(None);
        };
        let mut kv = Attr::default();
        for _ in 0..len {
            match self.key() {
                "key" => kv.key = self.string("attribute key must be a string")?.unwrap_or(""),
                "value" => kv.value = self.any_value(depth)?,
                _ => self.skip_value(),
            }
        }
        Ok(Some(kv))
    }

    /// An `AnyValue` object; of several members the last one counts, as in protobuf.
    fn any_value(&mut self, depth: u32) -> Result<Value<'a>, ShapeError> {
        if depth > MAX_VALUE_DEPTH {
            return Err(ShapeError::TooDeep);
        }
        let Some(len) = self.object("an attribute value must be an object")? else {
            return Ok(Value::Empty);
        };
        let mut v = Value::Empty;
        for _ in 0..len {
            match self.key() {
                "stringValue" | "string_value" => {
                    if let Some(s) = self.string("stringValue must be a string")? {
                        v = Value::Str(s);
                    }
                }
                "boolValue" | "bool_value" => match self.next() {
                    Node::Static(StaticNode::Bool(b)) => v = Value::Bool(b),
                    Node::Static(StaticNode::Null) => {}
                    _ => return Err(ShapeError::Shape("boolValue must be a boolean")),
                },
                "intValue" | "int_value" => {
                    if let Some(i) = self.int64("intValue must be a 64-bit integer")? {
                        v = Value::Int(i);
                    }
                }
                "doubleValue" | "double_value" => {
                    if let Some(d) = self.double()? {
                        v = Value::Double(d);
                    }
                }
                "bytesValue" | "bytes_value" => {
                    if let Some(s) = self.string("bytesValue must be a base64 string")? {
                        v = Value::Bytes(
                            raw::base64_decode(s, self.arena)
                                .ok_or(ShapeError::Shape("bytesValue must be base64"))?,
                        );
                    }
                }
                "arrayValue" | "array_value" => {
                    if let Some(items) = self.values(depth, false)? {
                        v = items;
                    }
                }
                "kvlistValue" | "kvlist_value" => {
                    if let Some(items) = self.values(depth, true)? {
                        v = items;
                    }
                }
                _ => self.skip_value(),
            }
        }
        Ok(v)
    }

    /// A double: a number, or a string (`"NaN"`, `"Infinity"`, `"-Infinity"` or a number);
    /// `null` is absent.
    fn double(&mut self) -> Result<Option<f64>, ShapeError> {
        const WHAT: &str = "doubleValue must be a number";
        match self.next() {
            Node::Static(StaticNode::F64(f)) => Ok(Some(f)),
            Node::Static(StaticNode::I64(i)) => Ok(Some(i as f64)),
            Node::Static(StaticNode::U64(u)) => Ok(Some(u as f64)),
            Node::String("NaN") => Ok(Some(f64::NAN)),
            Node::String("Infinity") => Ok(Some(f64::INFINITY)),
            Node::String("-Infinity") => Ok(Some(f64::NEG_INFINITY)),
            Node::String(s) => s.parse().map(Some).map_err(|_| ShapeError::Shape(WHAT)),
            Node::Static(StaticNode::Null) => Ok(None),
            _ => Err(ShapeError::Shape(WHAT)),
        }
    }

    /// An `ArrayValue` or `KeyValueList` object: `{"values": [...]}`.
    fn values(&mut self, depth: u32, kv: bool) -> Result<Option<Value<'a>>, ShapeError> {
        let Some(len) = self.object("arrayValue and kvlistValue must be objects")? else {
            return Ok(None);
        };
        let mut v = if kv {
            Value::Kvlist(&[])
        } else {
            Value::Array(&[])
        };
        for _ in 0..len {
            match (self.key(), kv) {
                ("values", true) => v = Value::Kvlist(self.attribute_list(depth + 1)?),
                ("values", false) => {
                    let Some(n) = self.array("values must be an array")? else {
                        continue;
                    };
                    let items = self.arena.alloc_slice_fill_copy(n, Value::Empty);
                    for item in items.iter_mut() {
                        *item = self.any_value(depth + 1)?;
                    }
                    v = Value::Array(items);
                }
                _ => self.skip_value(),
            }
        }
        Ok(Some(v))
    }
}

/// `SpanKind` names, by number.
const SPAN_KINDS: &[&str] = &[
    "SPAN_KIND_UNSPECIFIED",
    "SPAN_KIND_INTERNAL",
    "SPAN_KIND_SERVER",
    "SPAN_KIND_CLIENT",
    "SPAN_KIND_PRODUCER",
    "SPAN_KIND_CONSUMER",
];

/// `StatusCode` names, by number.
const STATUS_CODES: &[&str] = &["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];
