//! `Content-Encoding` of request bodies (`/ingest` and `/v1/traces`): gzip, deflate and zstd
//! decoded into a per-worker buffer, never past a cap on the decoded size.
//!
//! Sans-I/O: a whole (already read) body in, the decoded body out, with simd-json's padding
//! after it (`PaddedBody`) so a JSON body is parsed where it was decoded to. As the OpenTelemetry
//! Collector's `confighttp` does, the cap applies to the decoded bytes and decoding stops the
//! moment it is passed, so a "zip bomb" costs at most the cap (plus the codec's fixed state;
//! zstd's window is refused above [`ZSTD_MAX_WINDOW`] or the cap before anything is decoded).
//! No size the archive claims (gzip's `ISIZE`, zstd's frame content size) is trusted for
//! anything but a final check. The output buffer and the codecs' state are reused, so a warm
//! request allocates nothing.
//!
//! - `gzip` (and `x-gzip`): RFC 1952, header flags parsed here, members may be concatenated,
//!   each member's CRC-32 and size checked.
//! - `deflate`: as HTTP defines it, a zlib stream (RFC 1950, Adler-32 checked); a raw deflate
//!   stream (RFC 1951), which some clients send, is accepted too, told apart by the zlib header.
//! - `zstd`: RFC 8878 frames, possibly several; checksums checked when present; skippable
//!   frames skipped.
//! - `identity` or no header: the body as it is. Anything else: [`CompressError::Unsupported`].
//!
//! The codecs are pure Rust: flate2 on zlib-rs, and ruzstd; `docs/otlp.md` has the
//! measurements behind the choice.

use std::fmt;
use std::io::Read;

use flate2::{Crc, Decompress, FlushDecompress, Status};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

use super::body::{PaddedBody, BODY_PADDING};

/// The largest zstd window accepted (8 MiB: what zstd's own levels up to 19 use; `--long`
/// streams are refused). A window above the body cap is refused too.
pub const ZSTD_MAX_WINDOW: u64 = 8 << 20;

/// A body's content coding, from its `Content-Encoding` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Identity,
    Gzip,
    Deflate,
    Zstd,
}

impl Encoding {
    /// The coding a `Content-Encoding` value names (case-insensitive, spaces trimmed; `None`
    /// header = identity). Several codings (`gzip, zstd`) are not supported.
    pub fn from_header(value: Option<&[u8]>) -> Result<Encoding, CompressError> {
        let Some(v) = value else {
            return Ok(Encoding::Identity);
        };
        let v = v.trim_ascii();
        let is = |name: &str| v.eq_ignore_ascii_case(name.as_bytes());
        if v.is_empty() || is("identity") {
            Ok(Encoding::Identity)
        } else if is("gzip") || is("x-gzip") {
            Ok(Encoding::Gzip)
        } else if is("deflate") {
            Ok(Encoding::Deflate)
        } else if is("zstd") {
            Ok(Encoding::Zstd)
        } else {
            Err(CompressError::Unsupported)
        }
    }
}

/// Why a body could not be decoded. `Copy`: nothing is formatted on the request path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressError {
    /// A `Content-Encoding` other than gzip, deflate, zstd, identity: answer `415`.
    Unsupported,
    /// The decoded body would pass the cap: answer `413`.
    TooLarge { cap: usize },
    /// Not a valid stream of its coding (or a checksum mismatch): answer `400`.
    Corrupt(&'static str),
    /// The stream ends before it is complete: answer `400`.
    Truncated,
}

impl fmt::Display for CompressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompressError::Unsupported => {
                f.write_str("unsupported Content-Encoding: use gzip, deflate, zstd or identity")
            }
            CompressError::TooLarge { cap } => {
                write!(f, "the decompressed body is larger than {cap} bytes")
            }
            CompressError::Corrupt(what) => write!(f, "the compressed body is invalid: {what}"),
            CompressError::Truncated => f.write_str("the compressed body ends early"),
        }
    }
}

impl std::error::Error for CompressError {}

/// Per-worker decoding state and output buffer, reused by every request.
pub struct Decompressor {
    /// The decoded body, then its padding; keeps its capacity (at most cap + 1 bytes, or the
    /// body and its padding) for the next request.
    out: Vec<u8>,
    /// Inflate state (about 40 KB, allocated once), for gzip and deflate.
    inflate: Decompress,
    /// zstd state, its window buffer allocated at the first zstd body's window size.
    zstd: FrameDecoder,
    /// Bytes zeroed for zstd reads so far: what a test compares with the bytes decoded.
    #[cfg(test)]
    zeroed: usize,
}

impl Default for Decompressor {
    fn default() -> Self {
        Self::new()
    }
}

/// First output allocation; the buffer doubles from there up to the cap.
const FIRST_OUTPUT: usize = 64 << 10;

impl Decompressor {
    pub fn new() -> Decompressor {
        Decompressor {
            out: Vec::new(),
            inflate: Decompress::new(false),
            zstd: FrameDecoder::new(),
            #[cfg(test)]
            zeroed: 0,
        }
    }

    /// Decodes `input` (coded as `encoding`) into the reused buffer and returns it, padded;
    /// for `Identity`, `input` is copied (the caller may as well use it in place). At most
    /// `cap` decoded bytes, else `TooLarge` having decoded at most `cap + 1`.
    pub fn decompress(
        &mut self,
        encoding: Encoding,
        input: &[u8],
        cap: usize,
    ) -> Result<PaddedBody<'_>, CompressError> {
        self.out.clear();
        match encoding {
            Encoding::Identity => {
                if input.len() > cap {
                    return Err(CompressError::TooLarge { cap });
                }
                self.out.extend_from_slice(input);
            }
            Encoding::Gzip => self.gzip(input, cap)?,
            Encoding::Deflate => {
                let zlib = is_zlib_header(input);
                self.inflate.reset(zlib);
                let used = self.inflate_stream(input, cap)?;
                if used != input.len() {
                    return Err(CompressError::Corrupt("data after the deflate stream"));
                }
            }
            Encoding::Zstd => self.zstd(input, cap)?,
        }
        // The padding: spaces after the body. Exactly what it needs, once: a warm buffer of
        // the same size already has the room, so this does not allocate.
        let len = self.out.len();
        self.out.reserve_exact(BODY_PADDING);
        self.out.resize(len + BODY_PADDING, b' ');
        Ok(PaddedBody::new(&mut self.out, len))
    }

    /// Bytes the output buffer holds on to between requests.
    pub fn retained_bytes(&self) -> usize {
        self.out.capacity()
    }

    /// Makes room for more output: doubles the buffer, up to `cap + 1` bytes in all.
    #[inline]
    fn grow(&mut self, cap: usize) -> Result<(), CompressError> {
        if self.out.len() > cap {
            return Err(CompressError::TooLarge { cap });
        }
        if self.out.len() == self.out.capacity() {
            let limit = cap.saturating_add(1);
            // Not `clamp`: with a cap below `FIRST_OUTPUT` its bounds would cross (a panic).
            let want = (self.out.capacity() * 2).max(FIRST_OUTPUT).min(limit);
            self.out.reserve_exact(want - self.out.len());
        }
        Ok(())
    }

    /// Inflates one deflate (or zlib, per the last `reset`) stream from the start of `input`
    /// to the end of the output; returns the input bytes it used.
    fn inflate_stream(&mut self, input: &[u8], cap: usize) -> Result<usize, CompressError> {
        let start_in = self.inflate.total_in();
        loop {
            self.grow(cap)?;
            let used = (self.inflate.total_in() - start_in) as usize;
            let before = (self.inflate.total_in(), self.out.len());
            let status = self
                .inflate
                .decompress_vec(&input[used..], &mut self.out, FlushDecompress::None)
                .map_err(|_| CompressError::Corrupt("invalid deflate data"))?;
            if self.out.len() > cap {
                return Err(CompressError::TooLarge { cap });
            }
            match status {
                Status::StreamEnd => return Ok((self.inflate.total_in() - start_in) as usize),
                Status::Ok | Status::BufError => {
                    let progressed = (self.inflate.total_in(), self.out.len()) != before;
                    let consumed = (self.inflate.total_in() - start_in) as usize;
                    let input_left = consumed < input.len();
                    let room_left = self.out.len() < self.out.capacity();
                    if !progressed && (!input_left || room_left) {
                        return Err(CompressError::Truncated);
                    }
                }
            }
        }
    }

    fn gzip(&mut self, input: &[u8], cap: usize) -> Result<(), CompressError> {
        let mut at = 0;
        loop {
            at += gzip_header(&input[at..])?;
            let member_start = self.out.len();
            self.inflate.reset(false);
            at += self.inflate_stream(&input[at..], cap)?;
            let trailer = input.get(at..at + 8).ok_or(CompressError::Truncated)?;
            let crc = u32::from_le_bytes(trailer[..4].try_into().expect("4 bytes"));
            let size = u32::from_le_bytes(trailer[4..].try_into().expect("4 bytes"));
            let mut sum = Crc::new();
            sum.update(&self.out[member_start..]);
            if sum.sum() != crc {
                return Err(CompressError::Corrupt("gzip CRC-32 mismatch"));
            }
            if size != (self.out.len() - member_start) as u32 {
                return Err(CompressError::Corrupt("gzip size mismatch"));
            }
            at += 8;
            if at == input.len() {
                return Ok(());
            }
        }
    }

    fn zstd(&mut self, input: &[u8], cap: usize) -> Result<(), CompressError> {
        let mut src = input;
        loop {
            if let Some(skip) = zstd_skippable(src)? {
                src = &src[skip..];
                if src.is_empty() {
                    return Ok(());
                }
                continue;
            }
            let window = zstd_window(src)?;
            if window > ZSTD_MAX_WINDOW || window > cap as u64 + 1 {
                return Err(CompressError::TooLarge { cap });
            }
            self.zstd
                .reset(&mut src)
                .map_err(|_| CompressError::Corrupt("invalid zstd frame header"))?;
            loop {
                // Drain what is decoded (all of it once the frame is finished), then decode
                // one more block: memory stays at the window plus one block (128 KiB). Only
                // the bytes ready are zeroed for the read, not the buffer's whole spare room:
                // a frame of millions of empty blocks would zero it once per block.
                loop {
                    let ready = self.zstd.can_collect();
                    if ready == 0 {
                        break;
                    }
                    self.grow(cap)?;
                    let len = self.out.len();
                    let take = ready.min(self.out.capacity() - len);
                    self.out.resize(len + take, 0);
                    #[cfg(test)]
                    {
                        self.zeroed += take;
                    }
                    let n = self
                        .zstd
                        .read(&mut self.out[len..])
                        .map_err(|_| CompressError::Corrupt("invalid zstd data"))?;
                    self.out.truncate(len + n);
                    if self.out.len() > cap {
                        return Err(CompressError::TooLarge { cap });
                    }
                    if n == 0 {
                        return Err(CompressError::Corrupt("invalid zstd data"));
                    }
                }
                if self.zstd.is_finished() {
                    if self.zstd.can_collect() == 0 {
                        break;
                    }
                    continue;
                }
                if src.is_empty() {
                    return Err(CompressError::Truncated);
                }
                self.zstd
                    .decode_blocks(&mut src, BlockDecodingStrategy::UptoBlocks(1))
                    .map_err(|e| match e {
                        ruzstd::decoding::errors::FrameDecoderError::FailedToReadBlockHeader(_)
                        | ruzstd::decoding::errors::FrameDecoderError::FailedToReadChecksum(_) => {
                            CompressError::Truncated
                        }
                        _ => CompressError::Corrupt("invalid zstd data"),
                    })?;
            }
            if let (Some(sent), Some(got)) = (
                self.zstd.get_checksum_from_data(),
                self.zstd.get_calculated_checksum(),
            ) {
                if sent != got {
                    return Err(CompressError::Corrupt("zstd checksum mismatch"));
                }
            }
            if src.is_empty() {
                return Ok(());
            }
        }
    }
}

/// True if `b` starts with a zlib header (deflate, window <= 32 KiB, no preset dictionary,
/// check bits right); else the stream is taken for raw deflate.
fn is_zlib_header(b: &[u8]) -> bool {
    match b {
        [cmf, flg, ..] => {
            cmf & 0x0F == 8
                && cmf >> 4 <= 7
                && flg & 0x20 == 0
                && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0
        }
        _ => false,
    }
}

/// The length of a gzip member header at the start of `b`.
fn gzip_header(b: &[u8]) -> Result<usize, CompressError> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    let fixed = b.get(..10).ok_or(CompressError::Truncated)?;
    if fixed[0] != 0x1F || fixed[1] != 0x8B {
        return Err(CompressError::Corrupt("not a gzip stream"));
    }
    if fixed[2] != 8 {
        return Err(CompressError::Corrupt(
            "gzip compression method is not deflate",
        ));
    }
    let flags = fixed[3];
    if flags & 0xE0 != 0 {
        return Err(CompressError::Corrupt("reserved gzip flags set"));
    }
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let len = b.get(at..at + 2).ok_or(CompressError::Truncated)?;
        at += 2 + usize::from(u16::from_le_bytes([len[0], len[1]]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let rest = b.get(at..).ok_or(CompressError::Truncated)?;
            let nul = rest
                .iter()
                .position(|&c| c == 0)
                .ok_or(CompressError::Truncated)?;
            at += nul + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    if at > b.len() {
        return Err(CompressError::Truncated);
    }
    Ok(at)
}

/// The length of a skippable frame (RFC 8878, 3.1.2: magic 0x184D2A50 to 0x184D2A5F, then
/// its size) at the start of `b`, which a decoder skips; `None` for any other frame.
fn zstd_skippable(b: &[u8]) -> Result<Option<usize>, CompressError> {
    match b {
        [m, 0x2A, 0x4D, 0x18, ..] if m & 0xF0 == 0x50 => {
            let size = b.get(4..8).ok_or(CompressError::Truncated)?;
            let size = u32::from_le_bytes(size.try_into().expect("4 bytes")) as usize;
            let len = size.checked_add(8).ok_or(CompressError::Truncated)?;
            if len > b.len() {
                return Err(CompressError::Truncated);
            }
            Ok(Some(len))
        }
        _ => Ok(None),
    }
}

/// The window size a zstd frame at the start of `b` asks for (RFC 8878, 3.1.1.1), read before
/// any decoder sees it.
fn zstd_window(b: &[u8]) -> Result<u64, CompressError> {
    let magic = b.get(..4).ok_or(CompressError::Truncated)?;
    if magic != [0x28, 0xB5, 0x2F, 0xFD] {
        return Err(CompressError::Corrupt("not a zstd frame"));
    }
    let fhd = *b.get(4).ok_or(CompressError::Truncated)?;
    let single_segment = fhd & 0x20 != 0;
    if !single_segment {
        let wd = *b.get(5).ok_or(CompressError::Truncated)?;
        let log = 10 + u64::from(wd >> 3);
        let base = 1u64 << log;
        return Ok(base + (base / 8) * u64::from(wd & 7));
    }
    // Single segment: the window is the frame content size.
    let dict_len = [0, 1, 2, 4][usize::from(fhd & 3)];
    let fcs_len = [1, 2, 4, 8][usize::from(fhd >> 6)];
    let at = 5 + dict_len;
    let fcs = b.get(at..at + fcs_len).ok_or(CompressError::Truncated)?;
    let mut v = [0u8; 8];
    v[..fcs_len].copy_from_slice(fcs);
    let size = u64::from_le_bytes(v);
    Ok(if fcs_len == 2 { size + 256 } else { size })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const CAP: usize = 1 << 20;

    fn body() -> Vec<u8> {
        (0..40_000u32)
            .flat_map(|i| format!("span {i} says {}\n", i * 7919 % 1000).into_bytes())
            .collect()
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn raw_deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    fn run(
        d: &mut Decompressor,
        e: Encoding,
        input: &[u8],
        cap: usize,
    ) -> Result<Vec<u8>, CompressError> {
        d.decompress(e, input, cap).map(|b| b.bytes().to_vec())
    }

    #[test]
    fn headers() {
        type Case<'s> = (Option<&'s [u8]>, Result<Encoding, CompressError>);
        let cases: &[Case<'_>] = &[
            (None, Ok(Encoding::Identity)),
            (Some(b""), Ok(Encoding::Identity)),
            (Some(b" Identity "), Ok(Encoding::Identity)),
            (Some(b"gzip"), Ok(Encoding::Gzip)),
            (Some(b"GZIP"), Ok(Encoding::Gzip)),
            (Some(b"x-gzip"), Ok(Encoding::Gzip)),
            (Some(b"deflate"), Ok(Encoding::Deflate)),
            (Some(b"zstd"), Ok(Encoding::Zstd)),
            (Some(b"br"), Err(CompressError::Unsupported)),
            (Some(b"gzip, zstd"), Err(CompressError::Unsupported)),
            (Some(b"compress"), Err(CompressError::Unsupported)),
        ];
        for (h, want) in cases {
            assert_eq!(Encoding::from_header(*h), *want, "{h:?}");
        }
    }

    #[test]
    fn every_coding_round_trips_and_reuses_its_buffer() {
        let data = body();
        let mut d = Decompressor::new();
        let mut two_members = gzip(&data[..1000]);
        two_members.extend(gzip(&data[1000..]));
        let cases = [
            (Encoding::Identity, data.clone()),
            (Encoding::Gzip, gzip(&data)),
            (Encoding::Gzip, two_members),
            (Encoding::Deflate, zlib(&data)),
            (Encoding::Deflate, raw_deflate(&data)),
            (Encoding::Zstd, zstd(&data)),
            (Encoding::Gzip, gzip(b"")),
            (Encoding::Zstd, zstd(b"")),
        ];
        for (e, input) in &cases {
            let want: &[u8] = if input.len() < 100 { b"" } else { &data };
            assert_eq!(
                run(&mut d, *e, input, 4 * CAP).as_deref(),
                Ok(want),
                "{e:?}"
            );
        }
        let kept = d.retained_bytes();
        assert!(kept <= 4 * CAP + 1, "{kept}");
        for (e, input) in &cases {
            run(&mut d, *e, input, 4 * CAP).unwrap();
        }
        assert_eq!(
            d.retained_bytes(),
            kept,
            "the buffer is reused, not regrown"
        );
    }

    #[test]
    fn bombs_stop_at_the_cap() {
        // 128 MiB of zeros in about 130 KB of gzip (members of 8 MiB), and as zlib and zstd.
        let zeros = vec![0u8; 8 << 20];
        let mut one = gzip(&zeros);
        let mut bomb = Vec::new();
        for _ in 0..16 {
            bomb.extend_from_slice(&one);
        }
        let mut d = Decompressor::new();
        let too_large = Err(CompressError::TooLarge { cap: CAP });
        assert_eq!(run(&mut d, Encoding::Gzip, &bomb, CAP), too_large);
        assert!(d.retained_bytes() <= CAP + 1, "{}", d.retained_bytes());
        assert_eq!(
            run(&mut d, Encoding::Deflate, &zlib(&zeros), CAP),
            too_large
        );
        assert_eq!(run(&mut d, Encoding::Zstd, &zstd(&zeros), CAP), too_large);
        assert!(d.retained_bytes() <= CAP + 1, "{}", d.retained_bytes());
        // A cap of exactly the size passes; one less does not.
        one = gzip(&zeros[..1000]);
        assert_eq!(
            run(&mut d, Encoding::Gzip, &one, 1000).map(|v| v.len()),
            Ok(1000)
        );
        assert_eq!(
            run(&mut d, Encoding::Gzip, &one, 999),
            Err(CompressError::TooLarge { cap: 999 })
        );
        assert_eq!(
            run(&mut d, Encoding::Identity, &zeros[..1000], 999),
            Err(CompressError::TooLarge { cap: 999 })
        );
        // gzip's ISIZE is not trusted: one claiming 4 GiB changes nothing but the final check.
        let mut liar = gzip(b"hello");
        let n = liar.len();
        liar[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            run(&mut d, Encoding::Gzip, &liar, CAP),
            Err(CompressError::Corrupt("gzip size mismatch"))
        );
        // A zstd frame asking for a window past the limit is refused before decoding.
        let mut big_window = zstd(b"hello");
        big_window[4] = 0; // no single segment, no checksum, no dictionary, no content size
        big_window.insert(5, 31 << 3); // window 2^41
        assert_eq!(run(&mut d, Encoding::Zstd, &big_window, CAP), too_large);
    }

    /// A cap below the first output buffer's size, on a fresh decompressor (as with
    /// `INGEST_MAX_BODY_BYTES` under 64 KiB): the buffer's growth must not cross its bounds.
    #[test]
    fn caps_below_the_first_buffer_work_on_a_fresh_decompressor() {
        let data = &body()[..30_000];
        for (e, input) in [
            (Encoding::Gzip, gzip(data)),
            (Encoding::Deflate, zlib(data)),
        ] {
            for cap in [50_000, 30_000] {
                let mut d = Decompressor::new();
                let out = run(&mut d, e, &input, cap);
                assert!(out.as_deref() == Ok(data), "{e:?} under a cap of {cap}");
            }
            let mut d = Decompressor::new();
            assert_eq!(
                run(&mut d, e, &input, 29_999).map(|v| v.len()),
                Err(CompressError::TooLarge { cap: 29_999 }),
                "{e:?}"
            );
        }
        // zstd refuses a frame whose window is past the cap before decoding; either way, no
        // panic.
        let mut d = Decompressor::new();
        let out = run(&mut d, Encoding::Zstd, &zstd(data), 50_000);
        assert!(
            out.as_deref() == Ok(data) || out == Err(CompressError::TooLarge { cap: 50_000 }),
            "{:?}",
            out.map(|v| v.len())
        );
    }

    #[test]
    fn truncated_and_corrupt_streams() {
        let data = body();
        let mut d = Decompressor::new();
        for (e, whole) in [
            (Encoding::Gzip, gzip(&data)),
            (Encoding::Deflate, zlib(&data)),
            (Encoding::Deflate, raw_deflate(&data)),
            (Encoding::Zstd, zstd(&data)),
        ] {
            for cut in [
                0,
                1,
                5,
                11,
                whole.len() / 2,
                whole.len() - 9,
                whole.len() - 1,
            ] {
                let got = run(&mut d, e, &whole[..cut], 4 * CAP);
                assert!(
                    matches!(
                        got,
                        Err(CompressError::Truncated | CompressError::Corrupt(_))
                    ),
                    "{e:?} cut at {cut}: {:?}",
                    got.map(|v| v.len())
                );
            }
        }
        let mut bad_crc = gzip(&data);
        let n = bad_crc.len();
        bad_crc[n - 8] ^= 1;
        assert_eq!(
            run(&mut d, Encoding::Gzip, &bad_crc, 4 * CAP),
            Err(CompressError::Corrupt("gzip CRC-32 mismatch"))
        );
        assert_eq!(
            run(&mut d, Encoding::Gzip, b"{\"not\":\"gzip\"}", CAP),
            Err(CompressError::Corrupt("not a gzip stream"))
        );
        assert_eq!(
            run(&mut d, Encoding::Zstd, b"{\"not\":\"zstd\"}", CAP),
            Err(CompressError::Corrupt("not a zstd frame"))
        );
        let mut trailing = gzip(b"x");
        trailing.extend_from_slice(b"garbage!!!!");
        assert!(run(&mut d, Encoding::Gzip, &trailing, CAP).is_err());
        // A good body after all those errors still decodes.
        assert_eq!(
            run(&mut d, Encoding::Gzip, &gzip(&data), 4 * CAP).map(|v| v.len()),
            Ok(data.len())
        );
    }

    /// A zstd frame of many empty blocks (3 bytes each: a 10 MiB body holds 3.5 million) costs
    /// time in proportion to its size, not blocks times the output buffer's spare room: a warm
    /// buffer was zeroed to its capacity for every block, minutes of a worker per request.
    #[test]
    fn empty_zstd_blocks_do_not_zero_the_warm_buffer_each() {
        let mut d = Decompressor::new();
        let warm = vec![0u8; 4 * CAP - 1000];
        run(&mut d, Encoding::Gzip, &gzip(&warm), 4 * CAP).unwrap();
        assert!(d.retained_bytes() >= 4 * CAP - 1000);
        // No single segment, window 1 KiB; raw blocks of 0 bytes, then an empty last one.
        let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x00];
        for _ in 0..1000 {
            frame.extend_from_slice(&[0, 0, 0]);
        }
        frame.extend_from_slice(&[1, 0, 0]);
        assert_eq!(run(&mut d, Encoding::Zstd, &frame, 4 * CAP), Ok(Vec::new()));
        // Counted, not timed: the work is the bytes zeroed, none for empty blocks (the old
        // code zeroed the warm buffer's spare room, megabytes, once per block).
        assert_eq!(d.zeroed, 0);
        // Blocks with data still come out whole, across frames.
        let data = body();
        let mut two = zstd(&data[..5000]);
        two.extend(zstd(&data[5000..]));
        assert_eq!(
            run(&mut d, Encoding::Zstd, &two, 4 * CAP).as_deref(),
            Ok(&data[..])
        );
        assert_eq!(d.zeroed, data.len(), "only what was decoded");
    }

    /// Skippable frames (RFC 8878, 3.1.2: what klauspost/compress's padding and the seekable
    /// format's seek table are) are skipped wherever they are, as zstd itself does; one that
    /// claims more bytes than the body holds is truncated.
    #[test]
    fn zstd_skippable_frames_are_skipped() {
        let data = body();
        let skippable = |magic: u8, content: &[u8]| {
            let mut f = vec![magic, 0x2A, 0x4D, 0x18];
            f.extend_from_slice(&(content.len() as u32).to_le_bytes());
            f.extend_from_slice(content);
            f
        };
        let mut input = skippable(0x50, b"seek table");
        input.extend(zstd(&data[..5000]));
        input.extend(skippable(0x5F, b""));
        input.extend(zstd(&data[5000..]));
        input.extend(skippable(0x5A, &[0; 100]));
        let mut d = Decompressor::new();
        let got = run(&mut d, Encoding::Zstd, &input, 4 * CAP);
        assert_eq!(got.as_ref().map(Vec::len), Ok(data.len()));
        assert!(got.unwrap() == data);
        let mut short = zstd(b"x");
        short.extend(&skippable(0x50, b"abc")[..9]);
        assert_eq!(
            run(&mut d, Encoding::Zstd, &short, CAP),
            Err(CompressError::Truncated)
        );
    }
}
