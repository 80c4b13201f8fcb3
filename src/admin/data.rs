//! The data pages: admins upload situation sets, instruments, the published human data and
//! released model results; everyone signed in browses a set's texts and downloads it as a tidy
//! CSV. The uploads run the CLI's import use cases (`app::imports::*_from`) on the bytes.

use std::path::Path;
use std::pin::pin;

use actix_web::http::StatusCode;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use askama::Template;
use futures_core::Stream;

use super::{Admin, Nav, Researcher, actor, field};
use crate::app::{self, imports};
use crate::domain::situation::Situation;
use crate::export::cells::Cells;
use crate::store::StoreError;
use crate::store::situations::SetSummary;
use crate::web::csrf;
use crate::web::error::AppError;
use crate::web::render::render_status;
use crate::web::state::AppState;

/// The largest upload: a whole multipart body, file and fields. The largest upstream file,
/// a `<model>-PANAS-testing.csv`, is 0.6 MiB; `crowd.xlsx` 0.25 MiB.
pub const UPLOAD_LIMIT: usize = 8 * 1024 * 1024;
/// The largest text field of an upload form (names, slugs, the CSRF token).
const FIELD_LIMIT: usize = 1024;

/// What an upload form sends: its text fields and the file.
pub(super) struct Received {
    pub(super) fields: Vec<(String, String)>,
    pub(super) file: Option<(String, Vec<u8>)>,
}

/// Why an upload body was not taken.
pub(super) enum Refused {
    TooLarge,
    Unreadable(String),
}

/// Polls a stream for its next item.
async fn next<S: Stream>(stream: std::pin::Pin<&mut S>) -> Option<S::Item> {
    let mut stream = stream;
    std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await
}

/// Reads a multipart upload into memory, stopping as soon as it passes [`UPLOAD_LIMIT`] (the
/// rest is never read). A plain URL-encoded form is read too: it carries the token but no
/// file, so a form without its file is answered on the page, not as a broken request.
pub(super) async fn receive(req: &HttpRequest, payload: web::Payload) -> Result<Received, Refused> {
    let is_multipart = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    if !is_multipart {
        let mut payload = payload.into_inner();
        let form = web::Form::<Vec<(String, String)>>::from_request(req, &mut payload)
            .await
            .map_err(|e| Refused::Unreadable(e.to_string()))?;
        return Ok(Received {
            fields: form.into_inner(),
            file: None,
        });
    }
    let mut multipart = pin!(actix_multipart::Multipart::new(req.headers(), payload));
    let mut received = Received {
        fields: Vec::new(),
        file: None,
    };
    let mut total = 0usize;
    while let Some(part) = next(multipart.as_mut()).await {
        let part = part.map_err(|e| Refused::Unreadable(e.to_string()))?;
        let name = part.name().unwrap_or_default().to_owned();
        let file_name = part
            .content_disposition()
            .and_then(|d| d.get_filename())
            .map(str::to_owned);
        let mut part = pin!(part);
        let mut bytes = Vec::new();
        while let Some(chunk) = next(part.as_mut()).await {
            let chunk = chunk.map_err(|e| Refused::Unreadable(e.to_string()))?;
            total += chunk.len();
            if total > UPLOAD_LIMIT {
                return Err(Refused::TooLarge);
            }
            bytes.extend_from_slice(&chunk);
        }
        match file_name {
            Some(file_name) if name == "file" => {
                if !bytes.is_empty() {
                    received.file = Some((file_name, bytes));
                }
            }
            _ => {
                if bytes.len() > FIELD_LIMIT {
                    return Err(Refused::Unreadable(format!(
                        "the field {name:?} is too long"
                    )));
                }
                let value = String::from_utf8(bytes)
                    .map_err(|_| Refused::Unreadable(format!("the field {name:?} is not text")))?;
                received.fields.push((name, value));
            }
        }
    }
    Ok(received)
}

#[derive(Template)]
#[template(path = "admin/data_index.html")]
struct DataPage {
    nav: Nav,
    sets: Vec<SetSummary>,
    studies: Vec<String>,
    instruments: Vec<String>,
    /// What the last upload did, or why it was refused (with nothing stored).
    done: Option<String>,
    refused: Option<String>,
    limit_mib: usize,
}

/// The four kinds of upload, one form each.
#[derive(Clone, Copy)]
enum Kind {
    Situations,
    Instruments,
    Humans,
    ModelResults,
}

async fn page(
    state: &web::Data<AppState>,
    nav: Nav,
    outcome: Result<Option<String>, String>,
    status: StatusCode,
) -> Result<HttpResponse, AppError> {
    let overview = state.db(|conn| Ok(imports::data_overview(conn))).await??;
    let (done, refused) = match outcome {
        Ok(done) => (done, None),
        Err(refused) => (None, Some(refused)),
    };
    render_status(
        DataPage {
            nav,
            sets: overview.sets,
            studies: overview.studies,
            instruments: overview.instruments,
            done,
            refused,
            limit_mib: UPLOAD_LIMIT / (1024 * 1024),
        },
        status,
    )
}

pub async fn index(state: web::Data<AppState>, who: Researcher) -> Result<HttpResponse, AppError> {
    page(&state, Nav::of(who.session()), Ok(None), StatusCode::OK).await
}

pub async fn upload_situations(
    state: web::Data<AppState>,
    admin: Admin,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, AppError> {
    upload(state, admin, req, payload, Kind::Situations).await
}

pub async fn upload_instruments(
    state: web::Data<AppState>,
    admin: Admin,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, AppError> {
    upload(state, admin, req, payload, Kind::Instruments).await
}

pub async fn upload_humans(
    state: web::Data<AppState>,
    admin: Admin,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, AppError> {
    upload(state, admin, req, payload, Kind::Humans).await
}

pub async fn upload_model_results(
    state: web::Data<AppState>,
    admin: Admin,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, AppError> {
    upload(state, admin, req, payload, Kind::ModelResults).await
}

/// An optional text field: absent or blank is `None`.
fn optional(fields: &[(String, String)], name: &str) -> Option<String> {
    field(fields, name)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// Reads the form, checks its token, runs the kind's import use case (one transaction) and
/// shows the data page with what was imported, or with the file, place and reason of the
/// refusal and nothing stored.
async fn upload(
    state: web::Data<AppState>,
    admin: Admin,
    req: HttpRequest,
    payload: web::Payload,
    kind: Kind,
) -> Result<HttpResponse, AppError> {
    let nav = Nav::of(admin.session());
    let form = match receive(&req, payload).await {
        Ok(form) => form,
        Err(Refused::TooLarge) => {
            let message = format!(
                "The upload is larger than the limit of {} MiB, so nothing was imported.",
                UPLOAD_LIMIT / (1024 * 1024)
            );
            return page(&state, nav, Err(message), StatusCode::PAYLOAD_TOO_LARGE).await;
        }
        Err(Refused::Unreadable(why)) => {
            return Err(AppError::BadRequest(format!(
                "The upload could not be read: {why}."
            )));
        }
    };
    csrf::check_session(&admin.session().csrf_token, &form.fields)?;
    let Some((file_name, bytes)) = form.file else {
        let message = "Choose a file to upload: nothing was imported.".to_owned();
        return page(&state, nav, Err(message), StatusCode::BAD_REQUEST).await;
    };
    let fields = form.fields;
    let required = |name: &str, label: &str| {
        optional(&fields, name).ok_or_else(|| format!("Give the {label}: nothing was imported."))
    };
    let input = match kind {
        Kind::Situations | Kind::Instruments => Ok((None, None)),
        Kind::Humans => required("study", "study (its slug)").map(|s| (Some(s), None)),
        Kind::ModelResults => required("study", "study (its slug)")
            .and_then(|s| Ok((Some(s), Some(required("model", "model's name")?)))),
    };
    let (study, model) = match input {
        Ok(x) => x,
        Err(message) => return page(&state, nav, Err(message), StatusCode::BAD_REQUEST).await,
    };
    let set = optional(&fields, "set");
    let instrument = optional(&fields, "instrument");
    let who = actor(admin.session());
    let outcome = state
        .db(move |conn| {
            let file = imports::Upload {
                name: Path::new(&file_name),
                bytes: &bytes,
            };
            let study = study.as_deref().unwrap_or_default();
            Ok(match kind {
                Kind::Situations => {
                    imports::import_situations_from(conn, &file, set.as_deref(), &who).map(
                        |(format, s)| {
                            format!(
                                "Imported {} ({format}) into the set {}{}: situations {}.",
                                file.name.display(),
                                s.set,
                                if s.set_created { " (new)" } else { "" },
                                s.situations
                            )
                        },
                    )
                }
                Kind::Instruments => imports::import_instruments_from(conn, &file, &who).map(|o| {
                    let keys: Vec<&str> = o.iter().map(|(k, _)| k.as_str()).collect();
                    format!(
                        "Imported {}: {} instruments ({}).",
                        file.name.display(),
                        o.len(),
                        keys.join(", ")
                    )
                }),
                Kind::Humans => {
                    imports::import_humans_from(conn, &file, study, set.as_deref(), &who).map(|r| {
                        format!(
                            "Imported {} into the study {}{}: {} participants in the file, {} \
                             created, {} already present.",
                            file.name.display(),
                            r.study,
                            if r.study_created {
                                " (new, closed)"
                            } else {
                                ""
                            },
                            r.in_file,
                            r.created,
                            r.already_present
                        )
                    })
                }
                Kind::ModelResults => {
                    let target = imports::ModelResultsTarget {
                        study,
                        model: model.as_deref().unwrap_or_default(),
                        instrument: instrument.as_deref(),
                    };
                    imports::import_model_results_from(conn, &file, &target, &who).map(|r| {
                        format!(
                            "Imported {} as run {} of {} on {}{}: default trials {} parsed, {} \
                             failed; evoked trials {} parsed, {} failed.",
                            file.name.display(),
                            r.run_id,
                            r.model,
                            r.instrument,
                            if r.replaced > 0 {
                                " (replacing the earlier import)"
                            } else {
                                ""
                            },
                            r.default_done,
                            r.default_failed,
                            r.evoked_done,
                            r.evoked_failed
                        )
                    })
                }
            })
        })
        .await?;
    match outcome {
        Ok(done) => page(&state, nav, Ok(Some(done)), StatusCode::OK).await,
        Err(e) => match refusal(&e) {
            Some(message) => {
                let message = format!("Nothing was imported. {message}");
                page(&state, nav, Err(message), StatusCode::UNPROCESSABLE_ENTITY).await
            }
            None => Err(e.into()),
        },
    }
}

/// The message of an import refused for its content (the file, the place and the reason);
/// `None` for a failure of the server, which is an error page and a log line instead.
fn refusal(e: &app::Error) -> Option<String> {
    use app::Error as E;
    match e {
        E::Import { .. }
        | E::Rejected {
            error: StoreError::Conflict(_),
            ..
        }
        | E::Invalid(_)
        | E::NoStudy(_)
        | E::NoInstrument(_) => Some(e.to_string()),
        _ => None,
    }
}

#[derive(Template)]
#[template(path = "admin/data_set.html")]
struct SetPage {
    nav: Nav,
    name: String,
    count: usize,
    emotions: Vec<EmotionGroup>,
}

struct EmotionGroup {
    name: String,
    factors: Vec<FactorGroup>,
}

struct FactorGroup {
    index: u32,
    name: String,
    situations: Vec<Listed>,
}

/// A situation on the set's page with its valence variants (#18) below it.
struct Listed {
    situation: Situation,
    variants: Vec<Situation>,
}

/// Groups situations by emotion and factor, in the order they first appear; a variant goes
/// below its original (the importer guarantees the same emotion and factor), or on its own
/// when its original is missing.
fn grouped(situations: Vec<Situation>) -> Vec<EmotionGroup> {
    let (variants, originals): (Vec<Situation>, Vec<Situation>) =
        situations.into_iter().partition(|s| s.variant_of.is_some());
    let mut out: Vec<EmotionGroup> = Vec::new();
    for s in originals {
        place(&mut out, s);
    }
    for v in variants {
        let original = out
            .iter_mut()
            .flat_map(|e| e.factors.iter_mut())
            .flat_map(|f| f.situations.iter_mut())
            .find(|l| Some(&l.situation.key) == v.variant_of.as_ref());
        match original {
            Some(l) => l.variants.push(v),
            None => place(&mut out, v),
        }
    }
    out
}

fn place(out: &mut Vec<EmotionGroup>, s: Situation) {
    let emotion = match out.iter().position(|e| e.name == s.emotion) {
        Some(i) => &mut out[i],
        None => {
            out.push(EmotionGroup {
                name: s.emotion.clone(),
                factors: Vec::new(),
            });
            let last = out.len() - 1;
            &mut out[last]
        }
    };
    let index = s.factor_index;
    let name = s.factor_name.clone();
    let listed = Listed {
        situation: s,
        variants: Vec::new(),
    };
    match emotion.factors.iter_mut().find(|f| f.index == index) {
        Some(f) => f.situations.push(listed),
        None => emotion.factors.push(FactorGroup {
            index,
            name,
            situations: vec![listed],
        }),
    }
}

async fn load_set(state: &web::Data<AppState>, name: String) -> Result<Vec<Situation>, AppError> {
    let situations = state
        .db(move |conn| Ok(imports::set_situations(conn, &name)))
        .await?;
    situations.map_err(|e| match e {
        app::Error::Invalid(_) => AppError::NotFound,
        other => other.into(),
    })
}

/// A set's texts, grouped by emotion and factor.
pub async fn browse_set(
    state: web::Data<AppState>,
    who: Researcher,
    set: web::Path<String>,
) -> Result<HttpResponse, AppError> {
    let name = set.into_inner();
    let situations = load_set(&state, name.clone()).await?;
    render_status(
        SetPage {
            nav: Nav::of(who.session()),
            name,
            count: situations.len(),
            emotions: grouped(situations),
        },
        StatusCode::OK,
    )
}

/// A set as tidy CSV; `?raw=1` writes text cells as stored (see `export::cells`).
pub async fn download_set(
    state: web::Data<AppState>,
    _who: Researcher,
    set: web::Path<String>,
    query: web::Query<Vec<(String, String)>>,
) -> Result<HttpResponse, AppError> {
    let name = set.into_inner();
    let raw = field(&query, "raw") == Some("1");
    let situations = load_set(&state, name.clone()).await?;
    let body = imports::tidy_csv(&situations, Cells::raw_if(raw))?;
    // The set name is checked on import (letters, digits, '-', '_', '.'), so it is safe here.
    Ok(HttpResponse::Ok()
        .content_type("text/csv; charset=utf-8")
        .insert_header((
            "Content-Disposition",
            format!("attachment; filename=\"{name}.csv\""),
        ))
        .insert_header(("Cache-Control", "no-store"))
        .body(body))
}
