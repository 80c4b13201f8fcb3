//! The one integration-test binary (each extra test file is one more large link).
//! Black-box tests through HTTP against a real server on a random port and through the real
//! `emotionbench` binary, on SQLite and Postgres.

// Tests fail loudly by design: unwrap is the assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod accounts_web;
mod admin;
mod assignment;
mod batch;
mod browser;
mod budget;
mod cli;
mod corrupt;
mod crash;
mod docs;
mod door;
mod evidence;
mod exports;
mod faults;
mod finetune;
mod freetext;
mod helpers;
mod humans;
mod imports;
mod languages;
mod model_results;
mod pilot;
mod prolific;
mod protocols;
mod providers;
mod psychometrics;
mod report;
mod runs;
mod scaleout;
mod security_accounts;
mod security_data;
mod security_participants;
mod study_setup;
mod survey;
mod survey_frictions;
mod uploads;
mod valence;
mod web;
