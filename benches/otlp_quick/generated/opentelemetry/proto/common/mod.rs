// Automatically generated mod.rs
pub mod v1;
