//! emotionbench: the EmotionBench protocol (Huang et al., NeurIPS 2024) for people and LLMs from
//! one definition. See ARCHITECTURE.md for the map.

pub mod admin;
pub mod app;
pub mod auth;
pub mod bench;
pub mod config;
pub mod domain;
pub mod export;
pub mod llm;
pub mod prolific;
pub mod scorer;
pub mod store;
pub mod survey;
pub mod web;

pub use config::Settings;
pub use web::Application;
