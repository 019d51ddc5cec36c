//! Commands other than `serve`: key management, schema migration, price checks.

pub mod keys;
pub mod price;
