//! The participant-facing survey: server-rendered pages driven by the state machine in
//! `domain::survey`. Every page works without JavaScript.

pub mod context;
pub mod door;
pub mod entry;
pub mod pages;

pub use context::SurveyContext;
