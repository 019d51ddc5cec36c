// Automatically generated mod.rs
pub mod opentelemetry;
