//! Commands other than `serve`: key and organisation management, price checks.

pub mod keys;
pub mod orgs;
pub mod price;
