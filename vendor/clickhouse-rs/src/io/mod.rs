pub(crate) use self::{stream::Stream, transport::ClickhouseTransport};

mod read_to_end;
pub(crate) mod stream;
pub(crate) mod transport;
