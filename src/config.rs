//! Settings: built-in defaults < config file (TOML) < environment < command-line flags.
//!
//! Settings are a value passed to whoever needs them (no global), so tests can run many apps
//! side by side, each on port 0 with its own database.

use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `sqlite://path` (the embedded default) or `postgres://…`.
    pub database_url: String,
    /// Address the web server listens on; port 0 picks a free port.
    pub bind: String,
    /// Public base URL used in printed links (e.g. behind a proxy); derived from `bind` if unset.
    pub public_url: Option<String>,
    /// Database connections per process.
    pub pool_size: u32,
    /// HTTP worker threads; 0 = one per core.
    pub http_workers: usize,
    /// Apply pending migrations when `serve` starts.
    pub auto_migrate: bool,
    /// tracing filter, e.g. `info` or `emotionbench=debug,actix_web=info`.
    pub log: String,
    /// Largest form body accepted (bytes); larger requests get 413. A PANAS page is < 1 KiB.
    pub max_body_bytes: usize,
    /// Seconds a client may take to send a request's head, and again its body; slower
    /// requests get 408 and their connection is closed.
    pub request_timeout_seconds: u64,
    /// Model-run worker slots inside `serve` (0: none; runs then need `emotionbench worker`).
    /// Unset: the sum of the providers' concurrency.
    pub worker_slots: Option<usize>,
    /// Reverse proxies whose `X-Forwarded-For` / `Forwarded` headers name the client (addresses
    /// or CIDR ranges). Empty: the TCP peer is the client and those headers are ignored, since
    /// anyone can send them. Sign-in throttling and the audit log use the client's address.
    pub trusted_proxies: Vec<IpRange>,
    /// How many new participants one client address may start per
    /// [`Settings::new_participants_window_seconds`] (0: no limit). Per server process.
    pub new_participants_per_address: u32,
    pub new_participants_window_seconds: u64,
    /// Where Prolific publishes the keys that sign its participant tokens (studies that require
    /// `prolific_token`, #15 point 2); tests serve their own.
    pub prolific_jwks_url: String,
    /// A folder of extra participant-page catalogues, `<language tag>.ftl` (Fluent), read once
    /// at start-up: a language the binary does not ship, or a lab's wording of one it does
    /// (its messages win; the rest comes from the shipped file). See docs/languages.md.
    pub catalogue_dir: Option<std::path::PathBuf>,
    /// LLM providers (`[[providers]]` tables in the config file). API keys are not here: each
    /// provider names the environment variable that holds its key.
    pub providers: Vec<ProviderConfig>,
    /// Scorers of free-text answers (`[[scorers]]` tables, #18); keys as for providers.
    pub scorers: Vec<ScorerConfig>,
    /// The Prolific API (`[prolific]` in the config file; issue #15).
    pub prolific: ProlificSettings,
}

/// A secret read from the environment: kept in memory only, never printed (`Debug` shows
/// whether it is set, not its value), never serialised.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(set)")
    }
}

/// The Prolific API and its webhooks. The token and the webhook secret are read from the
/// environment variables named here, at start-up; neither is ever stored or logged.
#[derive(Debug, Clone, PartialEq)]
pub struct ProlificSettings {
    /// `https://api.prolific.com` (a test points it at the fake).
    pub base_url: String,
    /// The variable holding the API token (sent as `Authorization: Token <token>`).
    pub token_env: String,
    /// The variable holding the webhook secret (`POST /api/v1/hooks/secrets/` returns it).
    pub webhook_secret_env: String,
    pub token: Option<Secret>,
    pub webhook_secret: Option<Secret>,
    /// Attempts per request when Prolific answers 429 or 5xx (or the connection fails).
    pub max_attempts: u32,
    /// The first backoff delay; each retry doubles it (with jitter), as for model providers.
    pub backoff_base_ms: u64,
    /// The longest Retry-After waited out; a longer one fails the request with its delay.
    pub max_retry_after_seconds: u64,
    pub timeout_seconds: u64,
}

impl Default for ProlificSettings {
    fn default() -> Self {
        Self {
            base_url: "https://api.prolific.com".into(),
            token_env: "PROLIFIC_TOKEN".into(),
            webhook_secret_env: "PROLIFIC_WEBHOOK_SECRET".into(),
            token: None,
            webhook_secret: None,
            max_attempts: 5,
            backoff_base_ms: 500,
            max_retry_after_seconds: 120,
            timeout_seconds: 30,
        }
    }
}

/// `[prolific]` in the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileProlific {
    base_url: Option<String>,
    token_env: Option<String>,
    webhook_secret_env: Option<String>,
    max_attempts: Option<u32>,
    backoff_base_ms: Option<u64>,
    max_retry_after_seconds: Option<u64>,
    timeout_seconds: Option<u64>,
}

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Any OpenAI-compatible chat-completions server (OpenAI, vLLM, Ollama, llama.cpp, ...).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
    /// Google's Gemini `generateContent`.
    Gemini,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
        }
    }
}

/// One `[[providers]]` table of the config file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub name: String,
    pub kind: ProviderKind,
    /// e.g. `https://api.openai.com/v1`, `https://api.anthropic.com/v1`,
    /// `https://generativelanguage.googleapis.com/v1beta`.
    pub base_url: String,
    /// The name of the environment variable holding the API key (None: send no key, e.g. a
    /// local llama.cpp server).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Requests in flight at most (the adaptive limit starts here and never exceeds it).
    #[serde(default = "default_concurrency")]
    pub concurrency: u32,
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    #[serde(default)]
    pub tokens_per_minute: Option<u32>,
    /// USD per million input tokens.
    #[serde(default)]
    pub price_input_per_mtok: Option<f64>,
    /// USD per million output tokens.
    #[serde(default)]
    pub price_output_per_mtok: Option<f64>,
    /// Seconds one HTTP request may take in all.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: f64,
    /// Attempts per trial for transient errors (429, 5xx, timeouts, broken connections).
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Replies per trial that may fail to parse before the trial fails.
    #[serde(default = "default_parse_attempts")]
    pub max_parse_attempts: u32,
    /// The first backoff delay; each retry doubles it (with jitter), up to 60 s.
    #[serde(default = "default_backoff")]
    pub backoff_base_ms: u64,
    /// Ask again after a reply cut off at the token cap (`truncated`); off by default because
    /// the same cap cuts the same reply again, and a thinking model pays for its thinking
    /// each time.
    #[serde(default)]
    pub retry_truncated: bool,
    /// Ask again after a refusal or a safety block (`refused`, `blocked`); off by default: the
    /// refusal is the model's answer to this situation and is what the record should keep.
    #[serde(default)]
    pub retry_refused: bool,
    /// Per-model parameter capabilities that replace the built-in profile's
    /// (`[[providers.models]]` tables; the first whose pattern matches the model wins).
    #[serde(default)]
    pub models: Vec<ModelOverride>,
}

pub use crate::domain::run::TokenField;

/// One `[[providers.models]]` table: what to send to the models whose id matches `pattern`
/// (`*` matches any run of characters, e.g. `o3*` or `*-thinking`). Unset keys keep the
/// built-in profile's value.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelOverride {
    pub pattern: String,
    /// Send the run's temperature.
    #[serde(default)]
    pub temperature: Option<bool>,
    /// Send the run's top_p.
    #[serde(default)]
    pub top_p: Option<bool>,
    /// The highest temperature the API accepts.
    #[serde(default)]
    pub max_temperature: Option<f64>,
    #[serde(default)]
    pub token_field: Option<TokenField>,
    /// The output cap sent is at least this (thinking counts against the cap).
    #[serde(default)]
    pub min_output_tokens: Option<u32>,
    /// The name of the seed field (`seed`, `random_seed`), or "" to send no seed.
    #[serde(default)]
    pub seed_field: Option<String>,
    /// The model takes a system message (false: it is put before the first user turn).
    #[serde(default)]
    pub system_message: Option<bool>,
}

fn default_concurrency() -> u32 {
    4
}
fn default_timeout() -> f64 {
    120.0
}
fn default_max_attempts() -> u32 {
    6
}
fn default_parse_attempts() -> u32 {
    3
}
fn default_backoff() -> u64 {
    1000
}

/// Which kind of scorer a `[[scorers]]` table is (#18).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScorerKind {
    /// `scripts/local_scorer.py`: a trained classifier on this machine, no key, no network.
    Local,
    /// Perspective's `comments:analyze`, attribute TOXICITY (key as the `key` query parameter).
    Perspective,
    /// An OpenAI-compatible `/moderations` endpoint (Bearer key).
    Moderation,
    /// A model of a configured provider, asked with a stated rubric for a score and a reason.
    Judge,
    /// The refusal detector's transparent phrase list (`domain::freetext::REFUSAL_PHRASES`).
    RefusalPhrases,
}

impl ScorerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ScorerKind::Local => "local",
            ScorerKind::Perspective => "perspective",
            ScorerKind::Moderation => "moderation",
            ScorerKind::Judge => "judge",
            ScorerKind::RefusalPhrases => "refusal-phrases",
        }
    }
}

/// What a judge scorer asks its model to rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rubric {
    Toxicity,
    Refusal,
}

/// One `[[scorers]]` table: like a provider's, with the limits the scoring job keeps to.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScorerConfig {
    pub name: String,
    pub kind: ScorerKind,
    /// The service's base URL (not used by `refusal-phrases` and `judge`).
    #[serde(default)]
    pub base_url: String,
    /// The environment variable holding the key (Perspective, moderation).
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default = "default_concurrency")]
    pub concurrency: u32,
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    #[serde(default = "default_scorer_timeout")]
    pub timeout_seconds: f64,
    /// Attempts per answer for transient errors (429, 5xx, timeouts, broken connections).
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    #[serde(default = "default_backoff")]
    pub backoff_base_ms: u64,
    /// moderation: the model sent (default `omni-moderation-latest`); judge: the model asked.
    #[serde(default)]
    pub model: Option<String>,
    /// judge: the `[[providers]]` entry that asks the model.
    #[serde(default)]
    pub provider: Option<String>,
    /// judge: what the model rates (default toxicity).
    #[serde(default)]
    pub rubric: Option<Rubric>,
}

fn default_scorer_timeout() -> f64 {
    30.0
}

impl ScorerConfig {
    fn validate(&self, providers: &[ProviderConfig]) -> Result<(), String> {
        let name = &self.name;
        if name.trim().is_empty() {
            return Err("a scorer has an empty name".into());
        }
        let needs_url = matches!(
            self.kind,
            ScorerKind::Local | ScorerKind::Perspective | ScorerKind::Moderation
        );
        if needs_url
            && !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://"))
        {
            return Err(format!(
                "scorer {name}: base_url must start with http:// or https://"
            ));
        }
        if self.concurrency == 0 || self.max_attempts == 0 || self.requests_per_minute == Some(0) {
            return Err(format!(
                "scorer {name}: concurrency, max_attempts and requests_per_minute must be at least 1"
            ));
        }
        if !(self.timeout_seconds.is_finite() && self.timeout_seconds > 0.0) {
            return Err(format!("scorer {name}: timeout_seconds must be positive"));
        }
        if self.kind == ScorerKind::Judge {
            let Some(p) = &self.provider else {
                return Err(format!("scorer {name}: a judge names its provider"));
            };
            if !providers.iter().any(|x| &x.name == p) {
                return Err(format!(
                    "scorer {name}: provider {p:?} is not among the [[providers]] (define it first)"
                ));
            }
            if self.model.as_deref().is_none_or(|m| m.trim().is_empty()) {
                return Err(format!("scorer {name}: a judge names its model"));
            }
        }
        Ok(())
    }
}

impl ProviderConfig {
    /// A provider with the default limits.
    pub fn new(name: &str, kind: ProviderKind, base_url: &str) -> Self {
        Self {
            name: name.to_owned(),
            kind,
            base_url: base_url.to_owned(),
            api_key_env: None,
            concurrency: default_concurrency(),
            requests_per_minute: None,
            tokens_per_minute: None,
            price_input_per_mtok: None,
            price_output_per_mtok: None,
            timeout_seconds: default_timeout(),
            max_attempts: default_max_attempts(),
            max_parse_attempts: default_parse_attempts(),
            backoff_base_ms: default_backoff(),
            retry_truncated: false,
            retry_refused: false,
            models: Vec::new(),
        }
    }

    fn validate(&self) -> Result<(), String> {
        let name = &self.name;
        if name.trim().is_empty() {
            return Err("a provider has an empty name".into());
        }
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(format!(
                "provider {name}: base_url must start with http:// or https://"
            ));
        }
        if self.concurrency == 0 || self.max_attempts == 0 || self.max_parse_attempts == 0 {
            return Err(format!(
                "provider {name}: concurrency, max_attempts and max_parse_attempts must be at least 1"
            ));
        }
        if !(self.timeout_seconds.is_finite() && self.timeout_seconds > 0.0) {
            return Err(format!("provider {name}: timeout_seconds must be positive"));
        }
        if self.requests_per_minute == Some(0) || self.tokens_per_minute == Some(0) {
            return Err(format!(
                "provider {name}: a rate limit of 0 would never send anything"
            ));
        }
        for price in [self.price_input_per_mtok, self.price_output_per_mtok]
            .into_iter()
            .flatten()
        {
            if !(price.is_finite() && price >= 0.0) {
                return Err(format!(
                    "provider {name}: prices must be non-negative numbers"
                ));
            }
        }
        for m in &self.models {
            if m.pattern.trim().is_empty() {
                return Err(format!(
                    "provider {name}: a [[providers.models]] table has an empty pattern"
                ));
            }
            if m.max_temperature
                .is_some_and(|t| !(t.is_finite() && t >= 0.0))
            {
                return Err(format!(
                    "provider {name}: max_temperature must be a non-negative number"
                ));
            }
        }
        Ok(())
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            database_url: "sqlite://emotionbench-data/emotionbench.db".into(),
            bind: "127.0.0.1:8080".into(),
            public_url: None,
            pool_size: 8,
            http_workers: 0,
            auto_migrate: true,
            log: "info".into(),
            max_body_bytes: 32 * 1024,
            request_timeout_seconds: 10,
            worker_slots: None,
            trusted_proxies: Vec::new(),
            // A lab or a household behind one address still fits; a script filling a study's
            // places in a second does not (issue #14, point 6).
            new_participants_per_address: 30,
            new_participants_window_seconds: 600,
            // https://docs.prolific.com/api-reference/well-known-endpoints/get-study-jwks
            prolific_jwks_url: "https://api.prolific.com/.well-known/study/jwks.json".into(),
            catalogue_dir: None,
            providers: Vec::new(),
            scorers: Vec::new(),
            prolific: ProlificSettings::default(),
        }
    }
}

/// The config file's shape: every key optional, unknown keys rejected (a typo should not be
/// silently ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    database_url: Option<String>,
    bind: Option<String>,
    public_url: Option<String>,
    pool_size: Option<u32>,
    http_workers: Option<usize>,
    auto_migrate: Option<bool>,
    log: Option<String>,
    max_body_bytes: Option<usize>,
    request_timeout_seconds: Option<u64>,
    worker_slots: Option<usize>,
    trusted_proxies: Option<Vec<String>>,
    new_participants_per_address: Option<u32>,
    new_participants_window_seconds: Option<u64>,
    prolific_jwks_url: Option<String>,
    catalogue_dir: Option<std::path::PathBuf>,
    providers: Option<Vec<ProviderConfig>>,
    scorers: Option<Vec<ScorerConfig>>,
    prolific: Option<FileProlific>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("environment variable {name}={value:?}: {message}")]
    Env {
        name: &'static str,
        value: String,
        message: String,
    },
}

impl Settings {
    /// Loads settings. `file`: an explicit config file (must exist); otherwise
    /// `./emotionbench.toml` is read when present. `env` is a lookup so tests need not touch the
    /// process environment.
    pub fn load(
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let mut s = Settings::default();
        let path = match file {
            Some(p) => Some(p.to_path_buf()),
            None => env("EMOTIONBENCH_CONFIG").map(PathBuf::from).or_else(|| {
                let p = PathBuf::from("emotionbench.toml");
                p.exists().then_some(p)
            }),
        };
        if let Some(path) = path {
            let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            s.apply_file(&text)
                .map_err(|message| ConfigError::Parse { path, message })?;
        }
        s.apply_env(env)?;
        Ok(s)
    }

    fn apply_file(&mut self, text: &str) -> Result<(), String> {
        let f: FileSettings = toml::from_str(text).map_err(|e| e.to_string())?;
        if let Some(v) = f.database_url {
            self.database_url = v;
        }
        if let Some(v) = f.bind {
            self.bind = v;
        }
        if let Some(v) = f.public_url {
            self.public_url = Some(v);
        }
        if let Some(v) = f.pool_size {
            self.pool_size = v;
        }
        if let Some(v) = f.http_workers {
            self.http_workers = v;
        }
        if let Some(v) = f.auto_migrate {
            self.auto_migrate = v;
        }
        if let Some(v) = f.log {
            self.log = v;
        }
        if let Some(v) = f.max_body_bytes {
            self.max_body_bytes = v;
        }
        if let Some(v) = f.request_timeout_seconds {
            self.request_timeout_seconds = v;
        }
        if let Some(v) = f.worker_slots {
            self.worker_slots = Some(v);
        }
        if let Some(v) = f.trusted_proxies {
            self.trusted_proxies = v
                .iter()
                .map(|r| r.parse())
                .collect::<Result<_, String>>()
                .map_err(|e| format!("trusted_proxies: {e}"))?;
        }
        if let Some(v) = f.new_participants_per_address {
            self.new_participants_per_address = v;
        }
        if let Some(v) = f.new_participants_window_seconds {
            self.new_participants_window_seconds = v;
        }
        if let Some(v) = f.prolific_jwks_url {
            self.prolific_jwks_url = v;
        }
        if let Some(v) = f.catalogue_dir {
            self.catalogue_dir = Some(v);
        }
        if let Some(providers) = f.providers {
            let mut names = std::collections::HashSet::new();
            for p in &providers {
                p.validate()?;
                if !names.insert(p.name.as_str()) {
                    return Err(format!("provider {} is defined twice", p.name));
                }
            }
            self.providers = providers;
        }
        if let Some(scorers) = f.scorers {
            let mut names = std::collections::HashSet::new();
            for sc in &scorers {
                sc.validate(&self.providers)?;
                if !names.insert(sc.name.as_str()) {
                    return Err(format!("scorer {} is defined twice", sc.name));
                }
            }
            self.scorers = scorers;
        }
        if let Some(p) = f.prolific {
            let s = &mut self.prolific;
            if let Some(v) = p.base_url {
                s.base_url = v;
            }
            if let Some(v) = p.token_env {
                s.token_env = v;
            }
            if let Some(v) = p.webhook_secret_env {
                s.webhook_secret_env = v;
            }
            if let Some(v) = p.max_attempts {
                s.max_attempts = v.max(1);
            }
            if let Some(v) = p.backoff_base_ms {
                s.backoff_base_ms = v;
            }
            if let Some(v) = p.max_retry_after_seconds {
                s.max_retry_after_seconds = v;
            }
            if let Some(v) = p.timeout_seconds {
                s.timeout_seconds = v;
            }
        }
        Ok(())
    }

    fn apply_env(&mut self, env: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if let Some(v) = env("DATABASE_URL") {
            self.database_url = v;
        }
        if let Some(v) = env("EMOTIONBENCH_PROLIFIC_BASE_URL") {
            self.prolific.base_url = v;
        }
        let secret = |name: &str| env(name).filter(|v| !v.trim().is_empty()).map(Secret::new);
        self.prolific.token = secret(&self.prolific.token_env);
        self.prolific.webhook_secret = secret(&self.prolific.webhook_secret_env);
        if let Some(v) = env("EMOTIONBENCH_BIND") {
            self.bind = v;
        }
        if let Some(v) = env("EMOTIONBENCH_PUBLIC_URL") {
            self.public_url = Some(v);
        }
        if let Some(v) = env("EMOTIONBENCH_POOL_SIZE") {
            self.pool_size = parse_env("EMOTIONBENCH_POOL_SIZE", v)?;
        }
        if let Some(v) = env("EMOTIONBENCH_HTTP_WORKERS") {
            self.http_workers = parse_env("EMOTIONBENCH_HTTP_WORKERS", v)?;
        }
        if let Some(v) = env("EMOTIONBENCH_AUTO_MIGRATE") {
            self.auto_migrate = parse_env("EMOTIONBENCH_AUTO_MIGRATE", v)?;
        }
        if let Some(v) = env("EMOTIONBENCH_LOG") {
            self.log = v;
        }
        if let Some(v) = env("EMOTIONBENCH_WORKER_SLOTS") {
            self.worker_slots = Some(parse_env("EMOTIONBENCH_WORKER_SLOTS", v)?);
        }
        if let Some(v) = env("EMOTIONBENCH_TRUSTED_PROXIES") {
            self.trusted_proxies = IpRange::parse_list(&v).map_err(|message| ConfigError::Env {
                name: "EMOTIONBENCH_TRUSTED_PROXIES",
                value: v.clone(),
                message,
            })?;
        }
        if let Some(v) = env("EMOTIONBENCH_NEW_PARTICIPANTS_PER_ADDRESS") {
            self.new_participants_per_address =
                parse_env("EMOTIONBENCH_NEW_PARTICIPANTS_PER_ADDRESS", v)?;
        }
        if let Some(v) = env("EMOTIONBENCH_PROLIFIC_JWKS_URL") {
            self.prolific_jwks_url = v;
        }
        if let Some(v) = env("EMOTIONBENCH_CATALOGUE_DIR") {
            self.catalogue_dir = Some(v.into());
        }
        if let Some(v) = env("EMOTIONBENCH_MAX_BODY_BYTES") {
            self.max_body_bytes = parse_env("EMOTIONBENCH_MAX_BODY_BYTES", v)?;
        }
        if let Some(v) = env("EMOTIONBENCH_REQUEST_TIMEOUT_SECONDS") {
            self.request_timeout_seconds = parse_env("EMOTIONBENCH_REQUEST_TIMEOUT_SECONDS", v)?;
        }
        Ok(())
    }

    /// The provider of that name, or an error listing the configured ones.
    pub fn provider(&self, name: &str) -> Result<&ProviderConfig, String> {
        self.providers
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                let known: Vec<&str> = self.providers.iter().map(|p| p.name.as_str()).collect();
                if known.is_empty() {
                    format!("no provider {name:?}: the config file defines no [[providers]]")
                } else {
                    format!("no provider {name:?}; configured: {}", known.join(", "))
                }
            })
    }

    /// The scorer of that name, or an error listing the configured ones.
    pub fn scorer(&self, name: &str) -> Result<&ScorerConfig, String> {
        self.scorers.iter().find(|s| s.name == name).ok_or_else(|| {
            let known: Vec<&str> = self.scorers.iter().map(|s| s.name.as_str()).collect();
            if known.is_empty() {
                format!("no scorer {name:?}: the config file defines no [[scorers]]")
            } else {
                format!("no scorer {name:?}; configured: {}", known.join(", "))
            }
        })
    }

    /// Worker slots to run inside `serve`.
    pub fn serve_worker_slots(&self) -> usize {
        self.worker_slots.unwrap_or_else(|| {
            self.providers
                .iter()
                .map(|p| p.concurrency as usize)
                .sum::<usize>()
                .min(64)
        })
    }

    /// The base of links printed for people: the public URL, or one built from the bound address.
    pub fn link_base(&self, bound: std::net::SocketAddr) -> String {
        match &self.public_url {
            Some(u) => u.trim_end_matches('/').to_owned(),
            None if bound.ip().is_unspecified() => format!("http://localhost:{}", bound.port()),
            None => format!("http://{bound}"),
        }
    }
}

/// One address (`10.0.0.5`, `::1`) or a CIDR range of addresses (`10.0.0.0/8`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    addr: std::net::IpAddr,
    prefix: u8,
}

impl IpRange {
    /// Whether `ip` is in the range. An IPv4 address seen as IPv6 (`::ffff:10.0.0.5`, how a
    /// dual-stack socket reports it) counts as the IPv4 one.
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        use std::net::IpAddr::{V4, V6};
        let bits = |a: u128, width: u32| {
            let p = u32::from(self.prefix);
            if p == 0 { 0 } else { a >> (width - p) }
        };
        match (self.addr, ip.to_canonical()) {
            (V4(net), V4(ip)) => {
                bits(u128::from(u32::from(net)), 32) == bits(u128::from(u32::from(ip)), 32)
            }
            (V6(net), V6(ip)) => bits(u128::from(net), 128) == bits(u128::from(ip), 128),
            _ => false,
        }
    }

    /// A comma- or space-separated list (the environment variable's form).
    pub fn parse_list(text: &str) -> Result<Vec<IpRange>, String> {
        text.split(|c: char| c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .map(str::parse)
            .collect()
    }
}

impl std::str::FromStr for IpRange {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?} is not an IP address or a CIDR range such as 10.0.0.0/8");
        let (addr, prefix) = match s.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s.trim(), None),
        };
        let addr: std::net::IpAddr = addr.parse().map_err(|_| bad())?;
        let addr = addr.to_canonical();
        let width = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= width)
                .ok_or_else(bad)?,
            None => width,
        };
        Ok(IpRange { addr, prefix })
    }
}

impl std::fmt::Display for IpRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

fn parse_env<T: std::str::FromStr>(name: &'static str, value: String) -> Result<T, ConfigError>
where
    T::Err: std::fmt::Display,
{
    value.trim().parse().map_err(|e: T::Err| ConfigError::Env {
        name,
        message: e.to_string(),
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn environment_overrides_the_file_which_overrides_defaults() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("eb.toml");
        std::fs::write(
            &path,
            "bind = \"0.0.0.0:9000\"\npool_size = 3\nlog = \"debug\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let s = Settings::load(
            Some(&path),
            env_of(&[
                ("EMOTIONBENCH_POOL_SIZE", "5"),
                ("DATABASE_URL", "postgres://x/y"),
            ]),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.bind, "0.0.0.0:9000"); // file
        assert_eq!(s.pool_size, 5); // env beats file
        assert_eq!(s.log, "debug"); // file
        assert_eq!(s.database_url, "postgres://x/y"); // env
        assert!(s.auto_migrate); // default
    }

    #[test]
    fn the_prolific_token_comes_from_the_variable_named_and_never_prints() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("eb.toml");
        std::fs::write(
            &path,
            "[prolific]\ntoken_env = \"LAB_PROLIFIC\"\nmax_attempts = 0\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let s = Settings::load(
            Some(&path),
            env_of(&[
                ("LAB_PROLIFIC", "tok-secret-1"),
                ("PROLIFIC_TOKEN", "not-this-one"),
                ("PROLIFIC_WEBHOOK_SECRET", "  "),
                ("EMOTIONBENCH_PROLIFIC_BASE_URL", "http://127.0.0.1:9"),
            ]),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let p = &s.prolific;
        assert_eq!(p.token.as_ref().map(Secret::expose), Some("tok-secret-1"));
        // A blank secret is no secret; at least one attempt is made.
        assert_eq!(p.webhook_secret, None);
        assert_eq!(p.max_attempts, 1);
        assert_eq!(p.base_url, "http://127.0.0.1:9");
        let shown = format!("{s:?}");
        assert!(!shown.contains("tok-secret-1"), "{shown}");
        // `[prolific]` keys are checked like the others.
        std::fs::write(&path, "[prolific]\ntoken = \"inline\"\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(Settings::load(Some(&path), env_of(&[])).is_err());
    }

    #[test]
    fn unknown_keys_and_bad_values_are_errors_not_silence() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("eb.toml");
        std::fs::write(&path, "bnid = \"x\"\n").unwrap_or_else(|e| panic!("{e}"));
        let err = Settings::load(Some(&path), env_of(&[])).err();
        assert!(matches!(err, Some(ConfigError::Parse { .. })), "{err:?}");
        let err = Settings::load(None, env_of(&[("EMOTIONBENCH_POOL_SIZE", "many")])).err();
        assert!(matches!(err, Some(ConfigError::Env { .. })), "{err:?}");
    }

    #[test]
    fn providers_are_read_from_tables_with_defaults_and_checked() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("eb.toml");
        std::fs::write(
            &path,
            "[[providers]]\nname = \"oa\"\nkind = \"openai\"\nbase_url = \"https://api.openai.com/v1\"\n\
             api_key_env = \"OPENAI_API_KEY\"\nrequests_per_minute = 500\nprice_input_per_mtok = 0.15\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let s = Settings::load(Some(&path), env_of(&[])).unwrap_or_else(|e| panic!("{e}"));
        let p = s.provider("oa").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.kind, ProviderKind::Openai);
        assert_eq!(p.concurrency, 4);
        assert_eq!(p.max_attempts, 6);
        assert_eq!(p.requests_per_minute, Some(500));
        assert!(s.provider("other").is_err());
        std::fs::write(
            &path,
            "[[providers]]\nname = \"x\"\nkind = \"mistral\"\nbase_url = \"http://h\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(Settings::load(Some(&path), env_of(&[])).is_err());
        std::fs::write(
            &path,
            "[[providers]]\nname = \"x\"\nkind = \"openai\"\nbase_url = \"ftp://h\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(Settings::load(Some(&path), env_of(&[])).is_err());
    }

    #[test]
    fn trusted_proxies_are_addresses_or_ranges_from_file_or_environment() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("eb.toml");
        std::fs::write(&path, "trusted_proxies = [\"10.0.0.0/8\", \"::1\"]\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let s = Settings::load(Some(&path), env_of(&[])).unwrap_or_else(|e| panic!("{e}"));
        let ip = |a: &str| {
            a.parse::<std::net::IpAddr>()
                .unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(s.trusted_proxies.len(), 2);
        assert!(s.trusted_proxies[0].contains(ip("10.1.2.3")));
        assert!(s.trusted_proxies[0].contains(ip("::ffff:10.1.2.3")));
        assert!(!s.trusted_proxies[0].contains(ip("11.0.0.1")));
        assert!(s.trusted_proxies[1].contains(ip("::1")));
        assert!(!s.trusted_proxies[1].contains(ip("127.0.0.1")));
        let s = Settings::load(
            None,
            env_of(&[("EMOTIONBENCH_TRUSTED_PROXIES", "127.0.0.1, 172.16.0.0/12")]),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(s.trusted_proxies[0].contains(ip("127.0.0.1")));
        assert!(!s.trusted_proxies[0].contains(ip("127.0.0.2")));
        assert!(s.trusted_proxies[1].contains(ip("172.31.255.1")));
        let all: IpRange = "0.0.0.0/0"
            .parse()
            .unwrap_or_else(|e: String| panic!("{e}"));
        assert!(all.contains(ip("8.8.8.8")));
        for bad in ["nginx", "10.0.0.0/33", "10.0.0.1/x", "::1/129"] {
            assert!(bad.parse::<IpRange>().is_err(), "{bad}");
        }
        assert!(
            Settings::load(None, env_of(&[("EMOTIONBENCH_TRUSTED_PROXIES", "proxy")])).is_err()
        );
    }

    #[test]
    fn links_use_the_public_url_or_the_bound_address() {
        let mut s = Settings::default();
        let addr: std::net::SocketAddr = "0.0.0.0:8080".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.link_base(addr), "http://localhost:8080");
        s.public_url = Some("https://eb.example.org/".into());
        assert_eq!(s.link_base(addr), "https://eb.example.org");
    }
}
