// traceingest patch: `give_back`, `Packed` and `SHARE_MIN_BYTES` for the transport and the
// encoded columns (see PATCHES.md, changes 8 and 11).
pub(crate) use self::{encoder::give_back, encoder::Encoder, encoder::Packed, encoder::SHARE_MIN_BYTES, parser::Parser, read_ex::ReadEx, uvarint::put_uvarint};

mod encoder;
mod parser;
pub mod protocol;
mod read_ex;
mod uvarint;
