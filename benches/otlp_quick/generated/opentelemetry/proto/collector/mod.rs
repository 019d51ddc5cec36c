// Automatically generated mod.rs
pub mod trace;
