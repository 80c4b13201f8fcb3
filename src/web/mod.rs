//! The web edge: the route table, the application factory, middleware and the error page.
//! Handlers stay thin: parse input, call domain/store, render.

pub mod assets;
pub mod error;
pub mod home;

use std::net::{SocketAddr, TcpListener};

use actix_web::dev::Server;
use actix_web::middleware::DefaultHeaders;
use actix_web::{App, HttpServer, web};

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use askama::Template;

use crate::config::Settings;
use crate::domain::instrument::Instrument;
use crate::store::studies::Study;
use crate::store::{DbConnection, InstrumentId, Pool, StoreError};
pub use error::AppError;

/// Shared by every handler.
#[derive(Clone)]
pub struct AppState {
    pub pool: Pool,
    pub settings: Settings,
    /// Instruments by id. The items of an instrument that a study uses never change (the store
    /// refuses), so pages can keep them in memory.
    instruments: Arc<Cache<i64, Arc<Instrument>>>,
    /// Whether a study was full, per study, with when it was checked. The entry page only
    /// uses it to turn newcomers away politely; the assignment at consent decides for real
    /// inside its transaction, so a value a second old is good enough and spares a count of
    /// every participant per arrival.
    full: Arc<Cache<i64, bool>>,
    /// Study rows by slug, with when they were read. Every survey request needs its study;
    /// reading it at most once per [`STUDY_FRESH`] per process spares a query per request.
    /// Several `serve` processes may share one database, so an admin's edit made in another
    /// process reaches this one within that time (a study closed there stops taking new
    /// participants here within a second); edits made through this process's admin pages
    /// take effect at once ([`AppState::forget_study`]). Unknown slugs are not cached.
    studies: Arc<Cache<String, Arc<Study>>>,
    /// On SQLite, the survey's own connection and thread, committing concurrent page requests
    /// together ([`crate::store::writer`]); `None` on Postgres.
    writer: Option<crate::store::writer::Writer>,
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
    ) -> Self {
        Self {
            pool,
            settings,
            instruments: Arc::default(),
            full: Arc::default(),
            studies: Arc::default(),
            writer,
        }
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
        // Whether it is full is re-counted too: its targets may have changed.
        self.full.clear();
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
    pub async fn instrument(&self, id: i64) -> Result<Arc<Instrument>, AppError> {
        if let Some(i) = self.instruments.get(&id, None) {
            return Ok(i);
        }
        let inst = Arc::new(
            self.db(move |conn| crate::store::instruments::get(conn, InstrumentId(id)))
                .await?,
        );
        self.instruments.put(id, inst.clone());
        Ok(inst)
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
        .map_err(|e| AppError::Internal(e.to_string()))?
        .map_err(AppError::from)
    }
}

/// Who may use a route. The route-matrix test checks every entry of [`ROUTES`] behaves so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone (start page, health, assets, login).
    Public,
    /// Participants (the survey; its own cookie and CSRF rules).
    Participant,
    /// Any signed-in account; anonymous visitors are sent to the login page.
    Researcher,
    /// A signed-in researcher download; anonymous visitors get 401.
    ResearcherDownload,
    /// Admins only: researchers get 403.
    Admin,
}

macro_rules! route_table {
    ($($method:ident $path:literal => $handler:path, $access:ident;)*) => {
        /// Every route of the application, in one table: method, path, access.
        pub const ROUTES: &[(&str, &str, Access)] = &[$((stringify!($method), $path, Access::$access),)*];

        /// Registers every route of [`ROUTES`]; order matters where paths overlap.
        pub fn routes(cfg: &mut web::ServiceConfig) {
            $(cfg.route($path, web::$method().to($handler));)*
        }
    };
}

route_table! {
    get  "/"                                        => home::index, Public;
    get  "/healthz"                                 => home::health, Public;
    get  "/assets/{file}"                           => assets::serve, Public;
    // Participants.
    get  "/s/{study}"                               => crate::survey::entry::get, Participant;
    get  "/s/{study}/withdraw"                      => crate::survey::pages::withdraw_form, Participant;
    post "/s/{study}/withdraw"                      => crate::survey::pages::withdraw, Participant;
    get  "/s/{study}/{page}"                        => crate::survey::pages::get, Participant;
    post "/s/{study}/{page}"                        => crate::survey::pages::post, Participant;
    // Researchers and admins.
    get  "/admin/login"                             => crate::admin::login::form, Public;
    post "/admin/login"                             => crate::admin::login::submit, Public;
    post "/admin/logout"                            => crate::admin::login::logout, Researcher;
    get  "/admin"                                   => crate::admin::studies::list, Researcher;
    get  "/admin/studies/new"                       => crate::admin::studies::new_form, Admin;
    post "/admin/studies"                           => crate::admin::studies::create, Admin;
    get  "/admin/studies/{study}"                   => crate::admin::studies::monitor, Researcher;
    get  "/admin/studies/{study}/report"            => crate::admin::report::show, Researcher;
    get  "/admin/studies/{study}/edit"              => crate::admin::studies::edit_form, Admin;
    post "/admin/studies/{study}"                   => crate::admin::studies::update, Admin;
    post "/admin/studies/{study}/status"            => crate::admin::studies::set_status, Admin;
    get  "/admin/studies/{study}/delete"            => crate::admin::studies::delete_form, Admin;
    post "/admin/studies/{study}/delete"            => crate::admin::studies::delete, Admin;
    post "/admin/studies/{study}/participants/delete" => crate::admin::studies::delete_participant, Admin;
    get  "/admin/studies/{study}/export/{file}"     => crate::admin::exports::download, ResearcherDownload;
    get  "/admin/providers"                         => crate::admin::runs::providers, Admin;
    get  "/admin/runs"                              => crate::admin::runs::list, Admin;
    get  "/admin/runs/new"                          => crate::admin::runs::new_form, Admin;
    post "/admin/runs"                              => crate::admin::runs::create, Admin;
    get  "/admin/runs/{run}"                        => crate::admin::runs::show, Admin;
    post "/admin/runs/{run}/{action}"               => crate::admin::runs::action, Admin;
    get  "/admin/users"                             => crate::admin::users::list, Admin;
    get  "/admin/audit"                             => crate::admin::audit::list, Admin;
}

/// Renders a page with 200. Pages may hold answers: never cached.
pub fn render<T: Template>(page: T) -> Result<HttpResponse, AppError> {
    render_status(page, StatusCode::OK)
}

pub fn render_status<T: Template>(page: T, status: StatusCode) -> Result<HttpResponse, AppError> {
    let body = page
        .render()
        .map_err(|e| AppError::Internal(format!("template: {e}")))?;
    Ok(HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .body(body))
}

/// Headers on every response. The CSP allows no inline script or style: pages work without JS.
///
/// `form-action` also governs the redirects that follow a form submission: the last survey
/// page answers its POST with a 303 to Prolific's completion URL, which browsers block unless
/// that origin is listed (found by the real-browser test in `tests/api/browser.rs`).
fn security_headers() -> DefaultHeaders {
    DefaultHeaders::new()
        .add((
            "Content-Security-Policy",
            "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; \
             form-action 'self' https://app.prolific.com; frame-ancestors 'none'; \
             base-uri 'none'",
        ))
        .add(("X-Frame-Options", "DENY"))
        .add(("X-Content-Type-Options", "nosniff"))
        .add(("Referrer-Policy", "no-referrer"))
        .add((
            "Permissions-Policy",
            "camera=(), microphone=(), geolocation=()",
        ))
}

/// A bound, not yet running web server. Tests build it exactly as `serve` does, on port 0.
pub struct Application {
    addr: SocketAddr,
    server: Server,
    /// Model-run worker slots running inside this process, if any.
    worker: Option<(
        Arc<crate::llm::runner::Worker>,
        Arc<std::sync::atomic::AtomicBool>,
    )>,
}

impl Application {
    pub fn build(settings: Settings, pool: Pool) -> std::io::Result<Self> {
        let listener = TcpListener::bind(&settings.bind)?;
        let worker = Self::start_worker(&settings)?;
        let addr = listener.local_addr()?;
        let workers = match settings.http_workers {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        };
        let limit = settings.max_body_bytes;
        // Database work runs on the blocking pool; more threads than connections would only
        // queue on the pool (and cost context switches).
        let blocking = (settings.pool_size as usize).div_ceil(workers).max(2);
        let writer = crate::store::writer::Writer::start(&settings.database_url)
            .map_err(std::io::Error::other)?;
        let state = web::Data::new(AppState::new(pool, settings, writer));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .app_data(
                    web::FormConfig::default()
                        .limit(limit)
                        .error_handler(|err, _req| match err {
                            actix_web::error::UrlencodedError::Overflow { .. } => {
                                AppError::PayloadTooLarge.into()
                            }
                            other => AppError::BadRequest(format!(
                                "The form could not be read: {other}."
                            ))
                            .into(),
                        }),
                )
                .app_data(web::PayloadConfig::default().limit(limit))
                .wrap(security_headers())
                .configure(routes)
                .default_service(web::to(error::not_found))
        })
        .workers(workers)
        .worker_max_blocking_threads(blocking)
        .listen(listener)?
        .run();
        Ok(Self {
            addr,
            server,
            worker,
        })
    }

    /// Starts model-run worker slots in this process, on a pool of their own so a slow provider
    /// never takes connections from participants.
    fn start_worker(
        settings: &Settings,
    ) -> std::io::Result<
        Option<(
            Arc<crate::llm::runner::Worker>,
            Arc<std::sync::atomic::AtomicBool>,
        )>,
    > {
        use crate::llm::runner::{Worker, WorkerOptions};
        let slots = settings.serve_worker_slots();
        if slots == 0 || settings.providers.is_empty() {
            return Ok(None);
        }
        let pool = crate::store::db::connect(&settings.database_url, (slots + 2).min(64) as u32)
            .map_err(std::io::Error::other)?;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let worker = Worker::new(
            pool,
            settings,
            WorkerOptions::new(slots),
            stop.clone(),
            |k| std::env::var(k).ok(),
        );
        let _threads = worker.spawn();
        tracing::info!(slots, "model-run worker started inside serve");
        Ok(Some((worker, stop)))
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        if let Some((worker, stop)) = self.worker {
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            // Trials in flight go back to the queue for any other worker.
            let _ = worker.release_all();
        }
        result
    }
}
