//! JSON string literals for answers: quotes, backslashes and control characters escaped.

/// What `write_json_string` does with each byte: 0 = copy, `u` = `\u00XX`, else `\` + that byte.
const ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// Appends `s` as a JSON string literal (quotes, `\"`, `\\`, control characters escaped).
pub fn write_json_string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc = ESCAPE[b as usize];
        if esc == 0 {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if esc == b'u' {
            out.extend_from_slice(b"\\u00");
            out.push(crate::hex::DIGITS[usize::from(b >> 4)]);
            out.push(crate::hex::DIGITS[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(&[b'\\', esc]);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}
