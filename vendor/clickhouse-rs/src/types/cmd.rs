use log::trace;

use crate::{
    binary::{protocol, Encoder, Packed},
    client_info,
    errors::Result,
    types::{Context, Options, Query, SettingType, Simple},
    Block,
};

/// Represents Clickhouse commands.
pub(crate) enum Cmd {
    Hello(Context),
    Ping,
    SendQuery(Query, Context),
    SendData(Block, Context),
    Union(Box<Cmd>, Box<Cmd>),
    Cancel,
}

impl Cmd {
    /// Returns the packed command: its bytes, and (traceingest patch) the large shared parts
    /// of encoded columns to send in place.
    #[inline(always)]
    pub(crate) fn get_packed_command(&self) -> Result<Packed> {
        encode_command(self)
    }
}

#[derive(Debug, PartialOrd, PartialEq)]
enum SettingsBinaryFormat {
    Old,
    Strings,
}

fn encode_command(cmd: &Cmd) -> Result<Packed> {
    match cmd {
        Cmd::Hello(context) => encode_hello(context).map(Packed::from),
        Cmd::Ping => Ok(encode_ping().into()),
        Cmd::SendQuery(query, context) => encode_query(query, context).map(Packed::from),
        Cmd::SendData(block, context) => encode_data(block, context),
        Cmd::Union(first, second) => encode_union(first.as_ref(), second.as_ref()),
        Cmd::Cancel => Ok(encode_cancel().into()),
    }
}

fn encode_hello(context: &Context) -> Result<Vec<u8>> {
    trace!("[hello]        -> {}", client_info::description());

    let mut encoder = Encoder::new();
    encoder.uvarint(protocol::CLIENT_HELLO);
    client_info::write(&mut encoder);

    let options = context.options.get()?;

    encoder.string(&options.database);
    encoder.string(&options.username);
    encoder.string(&options.password);

    Ok(encoder.get_buffer())
}

fn encode_ping() -> Vec<u8> {
    trace!("[ping]         -> ping");

    let mut encoder = Encoder::new();
    encoder.uvarint(protocol::CLIENT_PING);
    encoder.get_buffer()
}

fn encode_cancel() -> Vec<u8> {
    trace!("[cancel]");

    let mut encoder = Encoder::new();
    encoder.uvarint(protocol::CLIENT_CANCEL);
    encoder.get_buffer()
}

fn encode_query(query: &Query, context: &Context) -> Result<Vec<u8>> {
    trace!("[send query] {}", query.get_sql());

    // DBMS_MIN_REVISION_WITH_CLIENT_INFO
    let mut encoder = Encoder::new();
    encoder.uvarint(protocol::CLIENT_QUERY);
    encoder.string("");

    {
        let hostname = &context.hostname;
        encoder.uvarint(1);
        encoder.string("");
        encoder.string(query.get_id()); // initial_query_id;
        encoder.string("[::ffff:127.0.0.1]:0");
        encoder.uvarint(1); // iface type TCP;
        encoder.string(hostname);
        encoder.string(hostname);
    }
    client_info::write(&mut encoder);

    if context.server_info.revision >= protocol::DBMS_MIN_REVISION_WITH_QUOTA_KEY_IN_CLIENT_INFO {
        encoder.string("");
    }

    if context.server_info.revision >= protocol::DBMS_MIN_REVISION_WITH_VERSION_PATCH {
        encoder.uvarint(0);
    }

    let options = context.options.get()?;

    let settings_format = if context.server_info.revision
        >= protocol::DBMS_MIN_REVISION_WITH_SETTINGS_SERIALIZED_AS_STRINGS
    {
        SettingsBinaryFormat::Strings
    } else {
        SettingsBinaryFormat::Old
    };

    // traceingest patch: the query's own settings, after the connection's.
    if !query.get_settings().is_empty() && settings_format < SettingsBinaryFormat::Strings {
        return Err(crate::errors::Error::Other(
            "per-query settings need a ClickHouse server that takes settings as strings (19.x or later)"
                .into(),
        ));
    }
    serialize_settings(&mut encoder, &options, query.get_settings(), settings_format);

    encoder.uvarint(protocol::STATE_COMPLETE);

    encoder.uvarint(if options.compression {
        protocol::COMPRESS_ENABLE
    } else {
        protocol::COMPRESS_DISABLE
    });

    let options = context.options.get()?;

    encoder.string(query.get_sql());
    Block::<Simple>::default().send_data(&mut encoder, options.compression);

    Ok(encoder.get_buffer())
}

fn serialize_settings(
    encoder: &mut Encoder,
    options: &Options,
    per_query: &[(String, String)],
    format: SettingsBinaryFormat,
) {
    if format < SettingsBinaryFormat::Strings {
        for (name, value) in &options.settings {
            encoder.string(name);
            match &value.value {
                SettingType::String(val) => encoder.string(val),
                // Bool and UInt64 is the same
                SettingType::Bool(val) => encoder.uvarint((val == &true) as u64),
                // Float is written in string representation
                SettingType::Float64(val) => encoder.string(val.to_string()),
                SettingType::UInt64(val) => encoder.uvarint(*val),
            }
        }
    } else {
        for (name, value) in &options.settings {
            encoder.string(name);
            encoder.write(value.is_important);
            encoder.string(value.to_string());
        }
        // traceingest patch: see `Query::setting`.
        for (name, value) in per_query {
            encoder.string(name);
            encoder.write(true);
            encoder.string(value);
        }
    }

    encoder.string(""); // end of settings marker
}

fn encode_data(block: &Block, context: &Context) -> Result<Packed> {
    let options = context.options.get()?;
    // traceingest patch: the buffer is the previous large command's (see `Encoder::reuse`) and
    // is sized once (a block of encoded columns knows its size).
    let mut encoder = Encoder::reuse();
    if !options.compression {
        encoder.reserve(block.wire_size_hint());
    }
    block.send_data(&mut encoder, options.compression);
    Ok(encoder.into_packed())
}

fn encode_union(first: &Cmd, second: &Cmd) -> Result<Packed> {
    let mut result = encode_command(first)?;
    result.append(encode_command(second)?);
    Ok(result)
}

/// traceingest patch: a query's own settings go after the connection's, each as name,
/// `is_important` and the value as a string; an older server is refused them.
#[cfg(test)]
mod query_settings_tests {
    use super::*;

    fn context(revision: u64) -> Context {
        let mut context = Context::default();
        context.server_info.revision = revision;
        context
    }

    /// `s` as the protocol writes a string: its length (one byte here), then its bytes.
    fn wire(s: &str) -> Vec<u8> {
        let mut out = vec![s.len() as u8];
        out.extend_from_slice(s.as_bytes());
        out
    }

    #[test]
    fn a_query_setting_is_sent_marked_important_before_the_end_marker() {
        let query = Query::new("INSERT INTO t (a) VALUES").setting("insert_deduplication_token", "tok-1");
        let bytes = encode_query(&query, &context(54429)).unwrap();
        let mut want = wire("insert_deduplication_token");
        want.push(1);
        want.extend(wire("tok-1"));
        want.extend(wire(""));
        let at = bytes
            .windows(want.len())
            .position(|w| w == want.as_slice())
            .expect("the setting, then the end of the settings");
        let sql = bytes
            .windows(24)
            .position(|w| w == b"INSERT INTO t (a) VALUES")
            .unwrap();
        assert!(at < sql, "settings come before the query text");
        let plain = encode_query(&Query::new("INSERT INTO t (a) VALUES"), &context(54429)).unwrap();
        assert_eq!(bytes.len(), plain.len() + want.len() - 1);
    }

    #[test]
    fn an_old_server_is_refused_query_settings() {
        let query = Query::new("SELECT 1").setting("insert_deduplication_token", "x");
        assert!(encode_query(&query, &context(54412)).is_err());
        assert!(encode_query(&Query::new("SELECT 1"), &context(54412)).is_ok());
    }
}
