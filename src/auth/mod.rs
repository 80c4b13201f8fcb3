//! Authentication helpers (accounts, sessions and CSRF build on these).

pub mod password;
