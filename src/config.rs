//! Settings: built-in defaults < config file (TOML) < environment < command-line flags.
//!
//! Settings are a value passed to whoever needs them (no global), so tests can run many apps
//! side by side, each on port 0 with its own database.

use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Eq)]
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
        Ok(())
    }

    fn apply_env(&mut self, env: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if let Some(v) = env("DATABASE_URL") {
            self.database_url = v;
        }
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
        if let Some(v) = env("EMOTIONBENCH_MAX_BODY_BYTES") {
            self.max_body_bytes = parse_env("EMOTIONBENCH_MAX_BODY_BYTES", v)?;
        }
        Ok(())
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
    fn links_use_the_public_url_or_the_bound_address() {
        let mut s = Settings::default();
        let addr: std::net::SocketAddr = "0.0.0.0:8080".parse().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.link_base(addr), "http://localhost:8080");
        s.public_url = Some("https://eb.example.org/".into());
        assert_eq!(s.link_base(addr), "https://eb.example.org");
    }
}
