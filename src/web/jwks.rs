//! Prolific's token-signing keys, fetched with ureq and kept for a bounded time (#15 point 2).
//!
//! Prolific: "Clients should cache these keys and update them at least daily"
//! (<https://docs.prolific.com/api-reference/well-known-endpoints/get-study-jwks>). So a key set
//! is used for [`FRESH`]; after that it is fetched again, and while a fetch fails the old set is
//! still used up to [`STALE_AT_MOST`] (a day). A token naming a key we do not hold (a rotated
//! key) fetches again at once, but at most once per [`REFETCH_COOLDOWN`]: the `kid` comes from
//! the unverified header, so anyone can send an unknown one. With no usable set the door stays
//! shut: the caller shows a "try again" page.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::domain::prolific_token::Jwks;

pub const FRESH: Duration = Duration::from_secs(3600);
pub const STALE_AT_MOST: Duration = Duration::from_secs(24 * 3600);
pub const REFETCH_COOLDOWN: Duration = Duration::from_secs(30);
/// One fetch may take this long (the participant is waiting).
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// A key set is a few KiB; more is not one.
const MAX_BYTES: u64 = 256 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    #[error("fetching {url}: {cause}")]
    Fetch { url: String, cause: String },
    #[error("the key set at {url} does not parse: {cause}")]
    Parse { url: String, cause: String },
}

#[derive(Default)]
struct Held {
    keys: Option<(Instant, Arc<Jwks>)>,
    /// When the last fetch was tried (successful or not).
    tried: Option<Instant>,
}

/// The cache, one per process (in `AppState`).
pub struct JwksCache {
    url: String,
    held: Mutex<Held>,
}

impl JwksCache {
    pub fn new(url: String) -> Self {
        Self {
            url,
            held: Mutex::new(Held::default()),
        }
    }

    /// The key set to verify a token with. `missing_kid`: the token named a key the last set
    /// did not hold (fetch again if the cooldown allows).
    pub async fn keys(&self, missing_kid: bool) -> Result<Arc<Jwks>, JwksError> {
        let now = Instant::now();
        let held_keys = {
            let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            let cooled = held
                .tried
                .is_none_or(|t| now.duration_since(t) >= REFETCH_COOLDOWN);
            match &held.keys {
                Some((at, k)) if now.duration_since(*at) < FRESH && !(missing_kid && cooled) => {
                    return Ok(k.clone());
                }
                // Stale (or a kid is missing) but a fetch was tried a moment ago: keep it.
                Some((at, k)) if !cooled && now.duration_since(*at) < STALE_AT_MOST => {
                    return Ok(k.clone());
                }
                Some((at, k)) => Some((*at, k.clone())),
                None => None,
            }
        };
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .tried = Some(now);
        let url = self.url.clone();
        let fetched = actix_web::web::block(move || fetch(&url))
            .await
            .map_err(|e| JwksError::Fetch {
                url: self.url.clone(),
                cause: e.to_string(),
            })
            .and_then(|r| r);
        match fetched {
            Ok(keys) => {
                let keys = Arc::new(keys);
                self.held
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .keys = Some((Instant::now(), keys.clone()));
                Ok(keys)
            }
            Err(e) => match held_keys {
                // Prolific unreachable for a while: the keys it published within the day.
                Some((at, k)) if now.duration_since(at) < STALE_AT_MOST => {
                    tracing::warn!(error = %e, "using the cached Prolific key set");
                    Ok(k)
                }
                _ => Err(e),
            },
        }
    }
}

fn fetch(url: &str) -> Result<Jwks, JwksError> {
    let err = |cause: String| JwksError::Fetch {
        url: url.to_owned(),
        cause,
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(FETCH_TIMEOUT))
        .build()
        .into();
    let mut resp = agent
        .get(url)
        .header("Accept", "application/json")
        .call()
        .map_err(|e| err(e.to_string()))?;
    let body = resp
        .body_mut()
        .with_config()
        .limit(MAX_BYTES)
        .read_to_string()
        .map_err(|e| err(e.to_string()))?;
    Jwks::parse(&body).map_err(|cause| JwksError::Parse {
        url: url.to_owned(),
        cause,
    })
}
