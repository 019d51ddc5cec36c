pub(crate) use self::{encoder::give_back, encoder::Encoder, encoder::Packed, encoder::SHARE_MIN_BYTES, parser::Parser, read_ex::ReadEx, uvarint::put_uvarint};

mod encoder;
mod parser;
pub mod protocol;
mod read_ex;
mod uvarint;
