//! The web edge. The kernel every handler uses lives in [`state`] (`AppState`), [`render`],
//! [`csrf`] and [`error`] (`AppError`); the route table, the only file naming handlers, in
//! [`routes`]; this file builds the [`Application`]. Handlers stay thin: parse input, call the
//! layers below, render.

pub mod assets;
pub mod csrf;
pub mod error;
pub mod home;
pub mod i18n;
pub mod jwks;
pub mod prolific_hook;
pub mod render;
pub mod request;
pub mod request_log;
pub mod routes;
pub mod state;
pub mod timeouts;

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use actix_web::dev::{Server, Service};
use actix_web::middleware::DefaultHeaders;
use actix_web::{App, HttpServer, web};

use crate::config::Settings;
use crate::store::Pool;
use error::AppError;
pub use routes::{Access, ROUTES};
use state::AppState;

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
        let timeout = std::time::Duration::from_secs(settings.request_timeout_seconds.max(1));
        // Database work runs on the blocking pool; more threads than connections would only
        // queue on the pool (and cost context switches).
        let blocking = (settings.pool_size as usize).div_ceil(workers).max(2);
        let writer = crate::store::writer::Writer::start(&settings.database_url)
            .map_err(std::io::Error::other)?;
        let catalogues = std::sync::Arc::new(
            i18n::Catalogues::load(settings.catalogue_dir.as_deref())
                .map_err(std::io::Error::other)?,
        );
        let state = web::Data::new(
            AppState::new(pool, settings, writer, catalogues).map_err(std::io::Error::other)?,
        );
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
                // Innermost, so the request log and the security headers see the 408.
                .wrap_fn(move |mut req, srv| {
                    let expired = timeouts::limit_body(&mut req, timeout);
                    let call = srv.call(req);
                    async move {
                        Ok::<_, actix_web::Error>(timeouts::answer(call.await?, expired.as_deref()))
                    }
                })
                .wrap(request_log::RequestLog)
                .wrap(security_headers())
                .configure(routes::routes)
                .default_service(web::to(error::not_found))
        })
        .workers(workers)
        .worker_max_blocking_threads(blocking)
        // The head of a request must arrive within the timeout (actix answers 408 and closes);
        // its body has the same deadline (`timeouts`). Without nginx in front these are what
        // stop a client that trickles bytes from holding connections open.
        .client_request_timeout(timeout)
        // A connection being closed gets this long to finish before it is dropped.
        .client_disconnect_timeout(std::time::Duration::from_secs(2))
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
