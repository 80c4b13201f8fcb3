//! One id per request: returned as `X-Request-Id`, shown on 5xx pages ("quote this id") and
//! written in the line that logs the failure (`web::request_log`), so a participant's report
//! finds the cause. Cheap on the survey's hot path: a per-process random prefix and a counter.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};

use actix_web::http::header::HeaderName;

/// The response header carrying the request id.
pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// A request's id: 16 hex digits, the first 8 random per process (several `serve` processes
/// may share one log), the last 8 a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestId(u64);

static PREFIX: LazyLock<u32> = LazyLock::new(rand::random);
static COUNTER: AtomicU32 = AtomicU32::new(0);

impl RequestId {
    pub(crate) fn next() -> RequestId {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        RequestId((u64::from(*PREFIX) << 32) | u64::from(n))
    }

    /// The id as 16 ASCII hex digits (for the header, without allocating a string).
    pub(crate) fn hex(self) -> [u8; 16] {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 16];
        for (i, b) in out.iter_mut().enumerate() {
            *b = DIGITS[((self.0 >> (60 - 4 * i)) & 0xf) as usize];
        }
        out
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

tokio::task_local! {
    /// Set by `web::request_log` around the handling of each request.
    pub(crate) static CURRENT: RequestId;
}

/// The id of the request being handled on this task (`None` outside a request).
pub fn current() -> Option<RequestId> {
    CURRENT.try_with(|id| *id).ok()
}
