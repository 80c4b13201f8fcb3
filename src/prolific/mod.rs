//! Prolific: the API client (drafts, submissions, approvals, rejections, return requests), the
//! webhook signature check, and a fake of the API for tests (issue #15). The rules (which codes,
//! which checks, the reconciliation table) are in `domain::prolific`; the use cases that tie
//! them to a study are in `app::prolific`.

pub mod client;
pub mod fake;
pub mod signature;

pub use client::{ProlificClient, ProlificError, StudyDraft, Submission};
