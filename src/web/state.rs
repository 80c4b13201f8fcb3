//! The application state every handler shares: the pools, the settings, the SQLite writer and
//! the per-process caches of the survey's hot path.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use actix_web::web;

use crate::auth::password;
use crate::config::Settings;
use crate::domain::instrument::Instrument;
use crate::domain::rate::RateWindow;
use crate::store::studies::Study;
use crate::store::{DbConnection, InstrumentId, Pool, StoreError, StudyId};
use crate::web::error::AppError;

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    pub settings: Settings,
    /// Instruments by id. The items of an instrument that a study uses never change (the store
    /// refuses), so pages can keep them in memory.
    instruments: Arc<Cache<InstrumentId, Arc<Instrument>>>,
    /// Instruments as shown in a language (#20), by id and tag, with when they were read. A
    /// translation may be imported again while a server runs (by the CLI, another process), so
    /// unlike the instrument's own texts it is read again after [`STUDY_FRESH`].
    translated: Arc<Cache<(InstrumentId, String), Arc<Instrument>>>,
    /// Whether a study was full, per study, with when it was checked. The entry page only
    /// uses it to turn newcomers away politely; the assignment at consent decides for real
    /// inside its transaction, so a value a second old is good enough and spares a count of
    /// every participant per arrival.
    full: Arc<Cache<StudyId, bool>>,
    /// Study rows by slug, with when they were read. Every survey request needs its study;
    /// reading it at most once per [`STUDY_FRESH`] per process spares a query per request.
    /// Several `serve` processes may share one database, so an admin's edit made in another
    /// process reaches this one within that time (a study closed there stops taking new
    /// participants here within a second); edits made through this process's admin pages
    /// take effect at once ([`AppState::forget_study`]). Unknown slugs are not cached.
    studies: Arc<Cache<String, Arc<Study>>>,
    /// Door settings per study (#15), with when they were read: like the study row, a setting
    /// of the study that the entry page and the consent both need, so read at most once per
    /// [`STUDY_FRESH`] per process (two statements each time on Postgres, four per participant;
    /// issue #19). Forgotten with the study ([`AppState::forget_study`]).
    doors: Arc<Cache<StudyId, crate::domain::door::DoorSettings>>,
    /// On SQLite, the survey's own connection and thread, committing concurrent page requests
    /// together ([`crate::store::writer`]); `None` on Postgres.
    writer: Option<crate::store::writer::Writer>,
    /// A hash no password matches: a login for an unknown or disabled account verifies against
    /// it, so it costs what a wrong password costs. Made at start-up, which fails without it.
    dummy_hash: Arc<str>,
    /// The key that signs double-submit CSRF tokens (`web::csrf`), the same in every process
    /// on this database (`app::accounts::form_key`). Read once at start-up: the survey's page
    /// requests stay one trip to the database each.
    form_key: Arc<[u8]>,
    /// New participants per study and client address in the configured window (issue #14,
    /// point 6; the limit is the study's own when its door sets one, #15 point 2). Per
    /// process: behind several `serve` processes each counts its own share.
    new_participants: Arc<std::sync::Mutex<RateWindow<(StudyId, String)>>>,
    /// Prolific's token-signing keys (`web::jwks`).
    pub jwks: Arc<crate::web::jwks::JwksCache>,
    /// The participant pages' message catalogues, every bundle built once at start-up
    /// (`web::i18n`): a page's lookups never build one.
    pub catalogues: Arc<crate::web::i18n::Catalogues>,
    /// The finished participants' answers and page times the monitor's evidence block has
    /// read (`app::evidence::MonitorInputs`): a load reads only what is new.
    pub monitor_inputs: Arc<crate::app::evidence::MonitorInputs>,
}

/// How long a cached study row is used before it is read again.
pub const STUDY_FRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a study's "full" verdict is used before it is counted again.
const FULL_FRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// Values by key, each with when it was stored; per process. A poisoned lock only costs a
/// cache miss.
struct Cache<K, V>(RwLock<HashMap<K, (std::time::Instant, V)>>);

impl<K: Eq + std::hash::Hash, V: Clone> Default for Cache<K, V> {
    fn default() -> Self {
        Self(RwLock::new(HashMap::new()))
    }
}

impl<K: Eq + std::hash::Hash, V: Clone> Cache<K, V> {
    /// The value stored under `key`, if it is younger than `max_age` (`None`: any age).
    fn get<Q>(&self, key: &Q, max_age: Option<std::time::Duration>) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Eq + std::hash::Hash + ?Sized,
    {
        let m = self.0.read().ok()?;
        let (at, v) = m.get(key)?;
        max_age
            .is_none_or(|age| at.elapsed() < age)
            .then(|| v.clone())
    }

    fn put(&self, key: K, value: V) {
        if let Ok(mut m) = self.0.write() {
            m.insert(key, (std::time::Instant::now(), value));
        }
    }

    fn remove<Q>(&self, key: &Q)
    where
        K: std::borrow::Borrow<Q>,
        Q: Eq + std::hash::Hash + ?Sized,
    {
        if let Ok(mut m) = self.0.write() {
            m.remove(key);
        }
    }

    fn clear(&self) {
        if let Ok(mut m) = self.0.write() {
            m.clear();
        }
    }
}

impl AppState {
    pub fn new(
        pool: Pool,
        settings: Settings,
        writer: Option<crate::store::writer::Writer>,
        catalogues: Arc<crate::web::i18n::Catalogues>,
    ) -> Result<Self, crate::app::Error> {
        let dummy_hash = password::hash(&password::random_secret(32))?.into();
        let mut conn = pool.get().map_err(StoreError::from)?;
        let form_key = crate::app::accounts::form_key(&mut conn)?
            .into_bytes()
            .into();
        drop(conn);
        let new_participants = RateWindow::new(
            settings.new_participants_per_address,
            std::time::Duration::from_secs(settings.new_participants_window_seconds),
        );
        Ok(Self {
            catalogues,
            new_participants: Arc::new(std::sync::Mutex::new(new_participants)),
            jwks: Arc::new(crate::web::jwks::JwksCache::new(
                settings.prolific_jwks_url.clone(),
            )),
            monitor_inputs: Arc::default(),
            pool,
            settings,
            instruments: Arc::default(),
            translated: Arc::default(),
            full: Arc::default(),
            studies: Arc::default(),
            doors: Arc::default(),
            writer,
            dummy_hash,
            form_key,
        })
    }

    /// The hash a login verifies against when there is no account to verify (see the field).
    pub fn dummy_hash(&self) -> Arc<str> {
        self.dummy_hash.clone()
    }

    /// The key that signs CSRF tokens (see the field).
    pub fn form_key(&self) -> &[u8] {
        &self.form_key
    }

    /// Counts a new participant of `study` from client address `addr` under `limit` (the
    /// study's, or the server's `new_participants_per_address`; 0: none): `Err(wait)` when
    /// that address has started its limit of participants in the window (nothing is counted
    /// then).
    pub fn admit_new_participant(
        &self,
        study: StudyId,
        limit: u32,
        addr: &str,
    ) -> Result<(), std::time::Duration> {
        let now = std::time::Instant::now();
        // A poisoned lock (a panic while holding it) must not turn every newcomer away, nor
        // let every one in: the window itself is still consistent, so keep using it.
        let mut window = self
            .new_participants
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = (study, addr.to_owned());
        if window.admit_up_to(&key, now, limit) {
            Ok(())
        } else {
            Err(window
                .retry_after_up_to(&key, now, limit)
                .unwrap_or_default())
        }
    }

    /// [`crate::auth::keyed_mac`] under the installation's key: the same in every process
    /// on this database.
    pub fn keyed(&self, label: &[u8], text: &str) -> String {
        crate::auth::keyed_mac(self.form_key(), label, text)
    }

    /// The token of a study's pilot link (`/s/{study}/pilot/{token}`): whoever has it can walk
    /// the survey as a pilot, also while the study is a draft; researchers see it on the study
    /// page. Derived from the study's id, so it survives restarts and is the same in every
    /// replica; a new installation key changes it.
    pub fn pilot_token(&self, study: StudyId) -> String {
        self.keyed(b"emotionbench pilot v1", &study.0.to_string())
    }

    /// Whether `token` is the pilot token of `study` (compared in constant time).
    pub fn is_pilot_token(&self, study: StudyId, token: &str) -> bool {
        crate::auth::constant_time_eq(self.pilot_token(study).as_bytes(), token.as_bytes())
    }

    /// The study with this slug, read from the database at most once per [`STUDY_FRESH`].
    pub async fn study(&self, slug: &str) -> Result<Option<Arc<Study>>, AppError> {
        if let Some(study) = self.studies.get(slug, Some(STUDY_FRESH)) {
            return Ok(Some(study));
        }
        let key = slug.to_owned();
        let Some(study) = self
            .db(move |conn| Ok(crate::store::studies::load(conn, &key)?))
            .await?
            .map(Arc::new)
        else {
            self.forget_study(slug);
            return Ok(None);
        };
        self.studies.put(slug.to_owned(), study.clone());
        Ok(Some(study))
    }

    /// Drops a study from the cache (after this process changed or deleted it).
    pub fn forget_study(&self, slug: &str) {
        self.studies.remove(slug);
        // Whether it is full is re-counted too: its targets may have changed; and its door.
        self.full.clear();
        self.doors.clear();
    }

    /// A study's door settings, read from the database at most once per [`STUDY_FRESH`].
    pub async fn door(
        &self,
        study: StudyId,
    ) -> Result<crate::domain::door::DoorSettings, AppError> {
        if let Some(door) = self.doors.get(&study, Some(STUDY_FRESH)) {
            return Ok(door);
        }
        let door = self
            .db(move |conn| crate::store::doors::load(conn, study))
            .await?;
        self.doors.put(study, door.clone());
        Ok(door)
    }

    /// Whether a study is full, re-counted at most once per second per process.
    pub async fn study_is_full(&self, study: &Study) -> Result<bool, AppError> {
        if let Some(full) = self.full.get(&study.id, Some(FULL_FRESH)) {
            return Ok(full);
        }
        let s = study.clone();
        let full = self
            .db(move |conn| Ok(crate::store::participants::study_is_full(conn, &s)?))
            .await?;
        self.full.put(study.id, full);
        Ok(full)
    }

    /// An instrument, from memory after the first load.
    pub async fn instrument(&self, id: InstrumentId) -> Result<Arc<Instrument>, AppError> {
        if let Some(i) = self.instruments.get(&id, None) {
            return Ok(i);
        }
        let inst = Arc::new(
            self.db(move |conn| crate::store::instruments::get(conn, id))
                .await?,
        );
        self.instruments.put(id, inst.clone());
        Ok(inst)
    }

    /// An instrument as shown in `lang` (#20): with its item texts and labels in that language
    /// when it has a translation there, else as imported.
    pub async fn instrument_in(
        &self,
        id: InstrumentId,
        lang: &crate::domain::language::Lang,
    ) -> Result<Arc<Instrument>, AppError> {
        let key = (id, lang.as_str().to_owned());
        if let Some(i) = self.translated.get(&key, Some(STUDY_FRESH)) {
            return Ok(i);
        }
        let own = self.instrument(id).await?;
        let tag = key.1.clone();
        let translation = self
            .db(move |conn| {
                crate::store::instrument_texts::translation(conn, id, &own, &tag)
                    .map(|t| t.map(|t| t.apply(&own)).map(Arc::new).unwrap_or(own))
            })
            .await?;
        self.translated.put(key, translation.clone());
        Ok(translation)
    }

    /// Database work of a survey page request: on SQLite through the writer (batched with the
    /// other page requests, answered after the commit), on Postgres as [`AppState::db`].
    /// Only for short work: a batch waits for all its jobs.
    pub async fn survey_db<T, F>(&self, f: F) -> Result<T, AppError>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConnection) -> Result<T, StoreError> + Send + 'static,
    {
        match &self.writer {
            Some(writer) => Ok(writer.run(f).await?),
            None => self.db(f).await,
        }
    }

    /// Runs blocking database work on the blocking thread pool with a pooled connection.
    pub async fn db<T, F>(&self, f: F) -> Result<T, AppError>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConnection) -> Result<T, StoreError> + Send + 'static,
    {
        let pool = self.pool.clone();
        web::block(move || {
            let mut conn = pool.get().map_err(StoreError::from)?;
            f(&mut conn)
        })
        .await
        .map_err(AppError::internal)?
        .map_err(AppError::from)
    }
}
