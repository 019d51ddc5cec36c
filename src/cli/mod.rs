//! Commands other than `serve`: key and organisation management, price checks, re-pricing
//! stored spans.

pub mod keys;
pub mod orgs;
pub mod price;
pub mod reprice;
