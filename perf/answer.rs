//! One HTTP/1.1 answer read off a keep-alive connection, for the load generators: its status,
//! with its body (`Content-Length`) read past so the next answer starts clean.

use std::io::Read;
use std::net::TcpStream;

/// Reads one answer into `buf` (grown to fit it) and returns its status.
pub fn read(stream: &mut TcpStream, buf: &mut Vec<u8>) -> u16 {
    let mut have = 0;
    loop {
        if have == buf.len() {
            buf.resize(buf.len().max(4096) * 2, 0);
        }
        let n = stream.read(&mut buf[have..]).expect("read answer");
        assert!(n > 0, "server closed the connection");
        have += n;
        let text = &buf[..have];
        let Some(end) = text.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = std::str::from_utf8(&text[..end]).expect("ASCII head");
        let status: u16 = head[9..12].parse().expect("status");
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        if buf.len() < end + 4 + len {
            buf.resize(end + 4 + len, 0);
        }
        while have < end + 4 + len {
            let n = stream.read(&mut buf[have..]).expect("read body");
            assert!(n > 0, "server closed the connection");
            have += n;
        }
        return status;
    }
}
