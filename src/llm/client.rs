//! One provider: its HTTP client, its error taxonomy, and its limits (concurrency that adapts to
//! 429s, requests per minute, tokens per minute).
//!
//! Worker slots are threads and the client is blocking (ureq): diesel is blocking too, a slot
//! holds one request at a time, and a few dozen threads cost nothing next to a model's latency.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::config::ProviderConfig;

use super::wire::{self, Completion, NoAnswer, ReplyProblem};

pub use crate::domain::run::ErrorClass;

/// A failed request.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {message}", class.as_str())]
pub struct CallError {
    pub class: ErrorClass,
    pub http_status: Option<u16>,
    pub message: String,
    /// The reply body, when there was one (recorded with the attempt).
    pub body: Option<String>,
    /// From `retry-after-ms`, `Retry-After`, or Gemini's `RetryInfo.retryDelay` in the body.
    pub retry_after: Option<Duration>,
    /// The provider's `x-should-retry` header, which overrides the class's own answer.
    pub should_retry: Option<bool>,
    /// What a 2xx reply that held no answer said about itself.
    pub reply: Option<Box<ReplyProblem>>,
}

impl CallError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Self {
            class,
            http_status: None,
            message: message.into(),
            body: None,
            retry_after: None,
            should_retry: None,
            reply: None,
        }
    }

    /// Worth another attempt after a pause: the class says so unless the provider said
    /// otherwise in `x-should-retry` (as the official OpenAI and Anthropic SDKs read it; a
    /// run-level stop is never retried).
    pub fn is_transient(&self) -> bool {
        if self.class.stops_the_run() {
            return false;
        }
        self.should_retry.unwrap_or(self.class.is_transient())
    }
}

/// A successful request.
#[derive(Debug, Clone)]
pub struct CallOk {
    pub http_status: u16,
    pub body: String,
    pub completion: Completion,
}

/// `retry-after-ms` (milliseconds, as the OpenAI and Anthropic APIs send it), else
/// `Retry-After`.
pub fn header_delay(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Duration> {
    let ms = retry_after_ms
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| Duration::from_secs_f64((v / 1000.0).min(3600.0)));
    ms.or_else(|| retry_after.and_then(|v| parse_retry_after(v, now)))
}

/// The delay a reply's headers ask for ([`header_delay`] over `retry-after-ms` and
/// `Retry-After`): what both the model providers' and the scorers' clients honour.
pub fn reply_delay(headers: &ureq::http::HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    header_delay(
        get("retry-after-ms"),
        get("retry-after"),
        chrono::Utc::now(),
    )
}

/// A `google.protobuf.Duration` in its JSON form (`"26s"`, `"1.5s"`).
fn proto_duration(v: &str) -> Option<Duration> {
    let secs: f64 = v.trim().strip_suffix('s')?.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)))
}

/// What an error body says, beyond its status.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorBody {
    /// OpenAI `error.code` / `error.type`, Anthropic `error.type`, Gemini `error.status` and
    /// the `reason` of its `google.rpc.ErrorInfo` detail.
    pub codes: Vec<String>,
    pub message: Option<String>,
    /// Gemini `google.rpc.RetryInfo.retryDelay`.
    pub retry_delay: Option<Duration>,
    /// Gemini `google.rpc.QuotaFailure` violations' `quotaId`s.
    pub quota_ids: Vec<String>,
}

/// Reads the error shapes of the three APIs (all put an `error` object at the top):
/// OpenAI `{"error": {"message", "type", "param", "code"}}`; Anthropic `{"type": "error",
/// "error": {"type", "message"}}`; Gemini `{"error": {"code", "message", "status", "details":
/// [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason"}, {"@type":
/// "…google.rpc.QuotaFailure", "violations": [{"quotaId"}]}, {"@type":
/// "…google.rpc.RetryInfo", "retryDelay": "26s"}]}}`.
pub fn read_error_body(body: &str) -> ErrorBody {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(body) else {
        return ErrorBody::default();
    };
    let e = &v["error"];
    let mut out = ErrorBody {
        message: e["message"].as_str().map(str::to_owned),
        ..ErrorBody::default()
    };
    for key in ["code", "type", "status"] {
        if let Some(c) = e[key].as_str() {
            out.codes.push(c.to_owned());
        }
    }
    for d in e["details"].as_array().into_iter().flatten() {
        let kind = d["@type"].as_str().unwrap_or("");
        if let Some(r) = d["reason"].as_str() {
            out.codes.push(r.to_owned());
        }
        if kind.ends_with("google.rpc.RetryInfo") {
            out.retry_delay = d["retryDelay"].as_str().and_then(proto_duration);
        }
        if kind.ends_with("google.rpc.QuotaFailure") {
            for q in d["violations"].as_array().into_iter().flatten() {
                if let Some(id) = q["quotaId"].as_str() {
                    out.quota_ids.push(id.to_owned());
                }
            }
        }
    }
    out
}

/// The class of a non-2xx reply, from its status and body.
pub fn classify_status(status: u16, body: &ErrorBody) -> ErrorClass {
    let has = |c: &str| body.codes.iter().any(|x| x == c);
    let message = body.message.as_deref().unwrap_or("");
    // Anthropic's spend limit is a 400 invalid_request_error whose message begins "You have
    // reached your specified API usage limits" (or "…workspace API usage limits"); a used-up
    // credit balance says "Your credit balance is too low".
    let spend_limit = message.starts_with("You have reached your specified")
        || message.contains("credit balance is too low");
    // Gemini's per-day quotas (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`) reset at
    // midnight Pacific: waiting out a retryDelay of seconds only spins.
    let per_day = body.quota_ids.iter().any(|q| q.contains("PerDay"));
    match status {
        _ if has("insufficient_quota") || has("billing_error") || spend_limit => ErrorClass::Quota,
        429 if per_day => ErrorClass::Quota,
        429 => ErrorClass::RateLimited,
        401 | 403 => ErrorClass::Auth,
        400 if has("API_KEY_INVALID") => ErrorClass::Auth,
        402 => ErrorClass::Quota,
        404 => ErrorClass::UnknownModel,
        408 => ErrorClass::Timeout,
        500..=599 => ErrorClass::Server,
        _ => ErrorClass::BadRequest,
    }
}

/// `Retry-After`: delay-seconds or an HTTP date.
pub fn parse_retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0)
            .then(|| Duration::from_secs_f64(secs.min(3600.0)));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let delta = at.with_timezone(&chrono::Utc) - now;
    Some(
        delta
            .to_std()
            .unwrap_or(Duration::ZERO)
            .min(Duration::from_secs(3600)),
    )
}

/// The limits state of one provider, shared by every slot of a process.
#[derive(Debug)]
struct LimitState {
    /// Adaptive concurrency: halves on 429, grows by one per `limit` successes.
    limit: f64,
    in_flight: u32,
    /// No request starts before this (a Retry-After applies to the whole provider).
    hold_until: Option<Instant>,
    /// The earliest start of the next request under requests/min (a paced schedule).
    next_request: Instant,
    /// The same for tokens/min: when the tokens reserved so far are paid for.
    next_tokens: Instant,
}

/// A provider ready to be called.
#[derive(Debug)]
pub struct Provider {
    pub config: ProviderConfig,
    pub(super) key: Option<String>,
    pub(super) agent: ureq::Agent,
    state: Mutex<LimitState>,
    freed: Condvar,
}

/// Holding one of the provider's concurrency slots.
#[derive(Debug)]
pub struct Permit<'a> {
    provider: &'a Provider,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut s = self.provider.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        drop(s);
        self.provider.freed.notify_all();
    }
}

impl Provider {
    /// Builds the client. The key is read from the environment variable the config names; its
    /// absence is reported when a request is about to be sent (an Auth error), not here.
    pub fn new(config: ProviderConfig, env: impl Fn(&str) -> Option<String>) -> Self {
        let key = config
            .api_key_env
            .as_deref()
            .and_then(env)
            .filter(|k| !k.trim().is_empty());
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs_f64(config.timeout_seconds)))
            .max_idle_connections_per_host(config.concurrency as usize)
            .max_idle_connections(config.concurrency as usize)
            .user_agent(concat!("emotionbench/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let now = Instant::now();
        Self {
            state: Mutex::new(LimitState {
                limit: f64::from(config.concurrency),
                in_flight: 0,
                hold_until: None,
                next_request: now,
                next_tokens: now,
            }),
            config,
            key,
            agent,
            freed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LimitState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current adaptive concurrency limit.
    pub fn concurrency_limit(&self) -> u32 {
        self.lock().limit.floor() as u32
    }

    /// Waits up to `wait` for a concurrency slot.
    pub fn try_acquire(&self, wait: Duration) -> Option<Permit<'_>> {
        let deadline = Instant::now() + wait;
        let mut s = self.lock();
        loop {
            if f64::from(s.in_flight) < s.limit.floor().max(1.0) {
                s.in_flight += 1;
                return Some(Permit { provider: self });
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            s = self
                .freed
                .wait_timeout(s, deadline - now)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// How long to wait before sending a request of about `tokens` tokens, reserving its place
    /// in the requests/min and tokens/min schedules. The caller sleeps (interruptibly).
    pub fn reserve(&self, tokens: u32) -> Duration {
        let now = Instant::now();
        let mut s = self.lock();
        let mut start = now;
        if let Some(h) = s.hold_until {
            if h > start {
                start = h;
            } else {
                s.hold_until = None;
            }
        }
        if let Some(rpm) = self.config.requests_per_minute {
            let interval = Duration::from_secs_f64(60.0 / f64::from(rpm));
            // A paced schedule with no burst beyond one request: a server counting per
            // second or per minute then never sees more than the limit.
            let slot = s.next_request.max(now);
            start = start.max(slot);
            s.next_request = start + interval;
        }
        if let Some(tpm) = self.config.tokens_per_minute {
            let per_token = 60.0 / f64::from(tpm);
            // Up to a tenth of a minute's tokens may go at once.
            let burst = Duration::from_secs_f64(6.0);
            let floor = now.checked_sub(burst).unwrap_or(now);
            let paid = s.next_tokens.max(floor);
            let after = paid + Duration::from_secs_f64(per_token * f64::from(tokens));
            if after > now + burst {
                start = start.max(after - burst);
            }
            s.next_tokens = after;
        }
        start.saturating_duration_since(now)
    }

    /// Corrects the tokens/min schedule once the real count is known.
    pub fn settle_tokens(&self, estimated: u32, actual: i64) {
        if let Some(tpm) = self.config.tokens_per_minute {
            let per_token = 60.0 / f64::from(tpm);
            let diff = actual - i64::from(estimated);
            let mut s = self.lock();
            let d = Duration::from_secs_f64(per_token * diff.unsigned_abs() as f64);
            s.next_tokens = if diff >= 0 {
                s.next_tokens + d
            } else {
                s.next_tokens.checked_sub(d).unwrap_or(s.next_tokens)
            };
        }
    }

    /// A 429: halve the concurrency, and hold every request until Retry-After.
    pub fn on_rate_limited(&self, retry_after: Option<Duration>) {
        let mut s = self.lock();
        s.limit = (s.limit / 2.0).max(1.0);
        if let Some(d) = retry_after {
            let until = Instant::now() + d;
            s.hold_until = Some(s.hold_until.map_or(until, |h| h.max(until)));
        }
    }

    /// A provider-wide pause (a `Retry-After` on a 503, say): no request starts before it ends.
    pub fn hold(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut s = self.lock();
        s.hold_until = Some(s.hold_until.map_or(until, |h| h.max(until)));
    }

    /// A success: grow the concurrency back, one slot per `limit` successes (AIMD).
    pub fn on_success(&self) {
        let max = f64::from(self.config.concurrency);
        let mut s = self.lock();
        if s.limit < max {
            s.limit = (s.limit + 1.0 / s.limit.max(1.0)).min(max);
            drop(s);
            self.freed.notify_all();
        }
    }

    /// Sends one request body; classifies what went wrong.
    pub fn send(&self, model: &str, body: &str) -> Result<CallOk, CallError> {
        let kind = self.config.kind;
        if let (Some(var), None) = (&self.config.api_key_env, &self.key) {
            return Err(CallError::new(
                ErrorClass::Auth,
                format!(
                    "the environment variable {var} (the API key of provider {}) is not set",
                    self.config.name
                ),
            ));
        }
        let url = wire::endpoint(kind, &self.config.base_url, model);
        let mut req = self
            .agent
            .post(&url)
            .header("content-type", "application/json");
        for (name, value) in wire::auth_headers(kind, self.key.as_deref()) {
            req = req.header(name, value);
        }
        let mut resp = req.send(body).map_err(classify_transport)?;
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let retry_after = reply_delay(resp.headers());
        let should_retry = match header("x-should-retry").as_deref() {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        };
        let text = resp
            .body_mut()
            .with_config()
            .limit(16 * 1024 * 1024)
            .read_to_string()
            .map_err(classify_transport)?;
        if (200..300).contains(&status) {
            return match wire::parse_completion(kind, &text) {
                Ok(completion) => Ok(CallOk {
                    http_status: status,
                    body: text,
                    completion,
                }),
                Err(problem) => Err(CallError {
                    class: match problem.kind {
                        NoAnswer::Unreadable => ErrorClass::Parse,
                        NoAnswer::Truncated => ErrorClass::Truncated,
                        NoAnswer::Refused => ErrorClass::Refused,
                        NoAnswer::Blocked => ErrorClass::Blocked,
                    },
                    http_status: Some(status),
                    message: problem.message.clone(),
                    body: Some(text),
                    retry_after: None,
                    should_retry: None,
                    reply: Some(Box::new(problem)),
                }),
            };
        }
        let parsed = read_error_body(&text);
        let class = classify_status(status, &parsed);
        let excerpt: String = text.chars().take(300).collect();
        let detail = parsed.message.clone().unwrap_or(excerpt);
        let name = &self.config.name;
        let message = match class {
            ErrorClass::Auth => format!(
                "provider {name} refused the request with HTTP {status} (check the key in {}): {detail}",
                self.config
                    .api_key_env
                    .as_deref()
                    .unwrap_or("no key variable configured"),
            ),
            ErrorClass::Quota => format!(
                "provider {name} says the account's quota, credit or spend limit is used up \
                 (HTTP {status}); the run stops until it is raised, then `emotionbench run resume`: \
                 {detail}"
            ),
            ErrorClass::UnknownModel => format!(
                "provider {name} does not know model {model:?} at {} (HTTP {status}): {detail}",
                self.config.base_url
            ),
            _ => format!("HTTP {status}: {detail}"),
        };
        Err(CallError {
            class,
            http_status: Some(status),
            message,
            body: Some(text),
            retry_after: retry_after.or(parsed.retry_delay),
            should_retry,
            reply: None,
        })
    }
}

pub fn classify_transport(e: ureq::Error) -> CallError {
    use std::io::ErrorKind;
    let class = match &e {
        ureq::Error::Timeout(_) => ErrorClass::Timeout,
        ureq::Error::Io(io) if matches!(io.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => {
            ErrorClass::Timeout
        }
        ureq::Error::BadUri(_) | ureq::Error::Http(_) => ErrorClass::BadRequest,
        _ => ErrorClass::Connection,
    };
    CallError::new(class, e.to_string())
}

/// A rough token count for the rate schedule (about four characters per token), corrected with
/// the real count after the reply.
pub fn estimate_tokens(request_body: &str, max_tokens: u32) -> u32 {
    let input = u32::try_from(request_body.len() / 4).unwrap_or(u32::MAX);
    input.saturating_add(max_tokens.min(300))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::config::ProviderKind;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("Thu, 01 Jan 2026 00:00:07 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after("Wed, 31 Dec 2025 23:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn concurrency_halves_on_429_and_recovers_gradually() {
        let mut c = ProviderConfig::new("p", ProviderKind::Openai, "http://127.0.0.1:1");
        c.concurrency = 16;
        let p = Provider::new(c, |_| None);
        assert_eq!(p.concurrency_limit(), 16);
        p.on_rate_limited(None);
        p.on_rate_limited(None);
        assert_eq!(p.concurrency_limit(), 4);
        // About one slot back per `limit` successes.
        for _ in 0..5 {
            p.on_success();
        }
        assert_eq!(p.concurrency_limit(), 5);
        for _ in 0..200 {
            p.on_success();
        }
        assert_eq!(p.concurrency_limit(), 16);
    }

    #[test]
    fn permits_stop_at_the_limit() {
        let mut c = ProviderConfig::new("p", ProviderKind::Openai, "http://127.0.0.1:1");
        c.concurrency = 2;
        let p = Provider::new(c, |_| None);
        let a = p.try_acquire(Duration::ZERO);
        let b = p.try_acquire(Duration::ZERO);
        assert!(a.is_some() && b.is_some());
        assert!(p.try_acquire(Duration::from_millis(10)).is_none());
        drop(a);
        assert!(p.try_acquire(Duration::ZERO).is_some());
    }

    #[test]
    fn requests_per_minute_are_paced() {
        let mut c = ProviderConfig::new("p", ProviderKind::Openai, "http://127.0.0.1:1");
        c.requests_per_minute = Some(600);
        let p = Provider::new(c, |_| None);
        let waits: Vec<Duration> = (0..5).map(|_| p.reserve(10)).collect();
        assert!(waits[0] < Duration::from_millis(5));
        assert!(waits[4] >= Duration::from_millis(390), "{waits:?}");
        assert!(waits[4] <= Duration::from_millis(410), "{waits:?}");
    }

    #[test]
    fn a_missing_key_is_an_auth_error_that_names_the_variable_not_a_value() {
        let mut c = ProviderConfig::new("oa", ProviderKind::Openai, "http://127.0.0.1:1");
        c.api_key_env = Some("EB_TEST_NO_SUCH_KEY".into());
        let p = Provider::new(c, |_| None);
        let e = p.send("m", "{}").err().unwrap();
        assert_eq!(e.class, ErrorClass::Auth);
        assert!(e.message.contains("EB_TEST_NO_SUCH_KEY"));
    }

    #[test]
    fn error_bodies_choose_the_class() {
        let gemini_key = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}"#;
        assert_eq!(
            classify_status(400, &read_error_body(gemini_key)),
            ErrorClass::Auth
        );
        let per_minute = r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}"#;
        let b = read_error_body(per_minute);
        assert_eq!(b.retry_delay, Some(Duration::from_secs(26)));
        assert_eq!(classify_status(429, &b), ErrorClass::RateLimited);
        let per_day = per_minute.replace("PerMinute", "PerDay");
        assert_eq!(
            classify_status(429, &read_error_body(&per_day)),
            ErrorClass::Quota
        );
        let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        assert_eq!(
            classify_status(429, &read_error_body(quota)),
            ErrorClass::Quota
        );
        let billing = r#"{"type":"error","error":{"type":"billing_error","message":"x"}}"#;
        assert_eq!(
            classify_status(402, &read_error_body(billing)),
            ErrorClass::Quota
        );
        assert_eq!(
            classify_status(404, &ErrorBody::default()),
            ErrorClass::UnknownModel
        );
        assert_eq!(
            classify_status(429, &read_error_body("<html>")),
            ErrorClass::RateLimited
        );
    }

    #[test]
    fn retry_after_ms_wins_over_retry_after() {
        let now = chrono::Utc::now();
        assert_eq!(
            header_delay(Some("1500"), Some("9"), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            header_delay(None, Some("2"), now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(header_delay(Some("soon"), None, now), None);
    }
}
