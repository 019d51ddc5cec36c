// Automatically generated mod.rs
pub mod collector;
pub mod common;
pub mod resource;
pub mod trace;
