//! CSV downloads from the monitor, streamed: a blocking export writes into a bounded channel
//! and the response body reads from it, so memory stays flat and a slow client slows only the
//! export (participants keep answering: the export reads in short keyset pages).

use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use tokio::sync::mpsc;

use super::{Researcher, actor};
use crate::app::exports::{self, ExportKind};
use crate::export::Cells;
use crate::store::{cohorts::StatusFilter, studies};
use crate::web::error::AppError;
use crate::web::state::AppState;

const CHUNK: usize = 64 * 1024;

/// Sends the CSV in chunks; fails with BrokenPipe when the client has gone away.
struct ChannelWriter {
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
    buf: Vec<u8>,
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "download cancelled"))
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

struct Body(mpsc::Receiver<Result<Bytes, std::io::Error>>);

impl futures_core::Stream for Body {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

#[derive(serde::Deserialize)]
pub struct ExportQuery {
    status: Option<String>,
    /// `1`: text cells as stored, without formula neutralisation (for scripts).
    raw: Option<String>,
    /// `1`: pilot participants too (left out by default).
    pilot: Option<String>,
    /// Only the participants who took the study in this language (#20), one of the study's.
    language: Option<String>,
}

/// `GET /admin/studies/{study}/export/{long|wide|codebook}.csv[?status=completed|all][&raw=1][&pilot=1][&language=TAG]`
pub async fn download(
    req: HttpRequest,
    state: web::Data<AppState>,
    user: Researcher,
    path: web::Path<(String, String)>,
    query: web::Query<ExportQuery>,
) -> Result<HttpResponse, AppError> {
    let (slug, file) = path.into_inner();
    let kind = match file.as_str() {
        "long.csv" => ExportKind::Long,
        "wide.csv" => ExportKind::Wide,
        "codebook.csv" => ExportKind::Codebook,
        _ => return Err(AppError::NotFound),
    };
    let filter = match query.status.as_deref() {
        None => StatusFilter::Completed,
        Some(s) => match <StatusFilter as clap::ValueEnum>::from_str(s, false) {
            Ok(f) => f,
            Err(_) => {
                return Err(AppError::BadRequest(
                    "status must be completed or all".into(),
                ));
            }
        },
    };
    let pilots = match query.pilot.as_deref() {
        None | Some("" | "0" | "false") => false,
        Some("1" | "true") => true,
        Some(_) => return Err(AppError::BadRequest("pilot must be 1 or 0".into())),
    };
    let status = filter;
    let language = query.language.clone().filter(|l| !l.trim().is_empty());
    let cells = match query.raw.as_deref() {
        None | Some("" | "0" | "false") => Cells::Neutralised,
        Some("1" | "true") => Cells::Raw,
        Some(_) => return Err(AppError::BadRequest("raw must be 1 or 0".into())),
    };
    let s2 = slug.clone();
    if state
        .db(move |conn| Ok(studies::find(conn, &s2)?))
        .await?
        .is_none()
    {
        return Err(AppError::NotFound);
    }
    // A language the study lacks is refused here, before the response starts streaming.
    let (s2, l2) = (slug.clone(), language.clone());
    let checked = state
        .db(move |conn| {
            let filter = exports::Filter {
                status,
                pilots,
                language: l2.as_deref(),
            };
            Ok(exports::selection(conn, &s2, filter).map(|_| ()))
        })
        .await?;
    // An invalid language is a 400 naming the study's languages (`AppError::from`).
    checked?;
    let mut head = HttpResponse::Ok()
        .content_type("text/csv; charset=utf-8")
        .insert_header((
            "Content-Disposition",
            format!("attachment; filename=\"{slug}-{}.csv\"", kind.as_str()),
        ))
        .insert_header(("Cache-Control", "no-store"))
        .take();
    // HEAD asks for the headers only: running (and auditing) the whole export for them would
    // let a link checker or a prefetching proxy export the study.
    if req.method() == Method::HEAD {
        return Ok(head.finish());
    }
    let (tx, rx) = mpsc::channel(8);
    let pool = state.pool.clone();
    let who = actor(user.session());
    let s2 = slug.clone();
    actix_web::rt::task::spawn_blocking(move || {
        let mut writer = ChannelWriter {
            tx: tx.clone(),
            buf: Vec::with_capacity(CHUNK),
        };
        let result = pool
            .get()
            .map_err(|e| e.to_string())
            .and_then(|mut conn| {
                let filter = exports::Filter {
                    status,
                    pilots,
                    language: language.as_deref(),
                };
                exports::export(&mut conn, &s2, kind, filter, cells, &who, &mut writer)
                    .map_err(|e| e.to_string())
            })
            .and_then(|_| writer.flush().map_err(|e| e.to_string()));
        if let Err(e) = result {
            // Ends the body with an error: the client sees an aborted, clearly incomplete file.
            tracing::error!(study = %s2, error = %e, "export failed");
            let _ = tx.blocking_send(Err(std::io::Error::other(e)));
        }
    });
    Ok(head.streaming(Body(rx)))
}
