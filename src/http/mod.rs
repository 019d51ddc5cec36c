//! HTTP/1.1 on the wire: request framing and answers.

pub mod request;
pub mod response;
