//! Pure domain logic: no I/O, no diesel, no actix. Everything here is unit-tested.

pub mod demo;
pub mod error;
pub mod instrument;
pub mod situation;
pub mod study;

pub use error::ImportError;
