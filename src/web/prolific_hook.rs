//! `POST /prolific/webhook`: Prolific's `submission.status.change` calls. Not a form: no
//! cookie and no CSRF token; the HMAC-SHA256 signature over timestamp + body is what
//! authenticates it (`app::prolific::webhook` checks it, records the X-Event-ID, releases a
//! returned or timed-out participant's place). Answers: 200 done or a repeated event (Prolific
//! recommends acknowledging duplicates), 401 unsigned or wrongly signed, 400 signed but not the
//! documented shape, 503 when no secret is configured. A plain-text body, nothing echoed.

use actix_web::{HttpRequest, HttpResponse, web};

use super::error::AppError;
use super::state::AppState;
use crate::app::prolific::{HookCall, HookOutcome, HookRefusal, webhook};
use crate::prolific::signature::{EVENT_ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER};

fn text(status: actix_web::http::StatusCode, body: &'static str) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/plain; charset=utf-8")
        .insert_header(("Cache-Control", "no-store"))
        .body(body)
}

pub async fn receive(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: web::Bytes,
) -> Result<HttpResponse, AppError> {
    use actix_web::http::StatusCode as S;
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (sig, ts, event) = (
        header(SIGNATURE_HEADER),
        header(TIMESTAMP_HEADER),
        header(EVENT_ID_HEADER),
    );
    let secret = state.settings.prolific.webhook_secret.clone();
    let outcome = state
        .db(move |conn| {
            Ok(webhook(
                conn,
                secret.as_ref(),
                &HookCall {
                    signature: sig.as_deref(),
                    timestamp: ts.as_deref(),
                    event_id: event.as_deref(),
                    body: &body,
                },
            ))
        })
        .await??;
    Ok(match outcome {
        Ok(HookOutcome::Released) => text(S::OK, "released\n"),
        Ok(HookOutcome::Duplicate) => text(S::OK, "duplicate event: ignored\n"),
        Ok(HookOutcome::Recorded(_)) => text(S::OK, "recorded\n"),
        Err(HookRefusal::BadSignature) => {
            tracing::warn!("Prolific webhook call with a missing or wrong signature refused");
            text(S::UNAUTHORIZED, "invalid signature\n")
        }
        Err(HookRefusal::Malformed(why)) => {
            tracing::warn!(why = %why, "signed Prolific webhook call not in the documented shape");
            text(S::BAD_REQUEST, "malformed event\n")
        }
        Err(HookRefusal::NotConfigured) => {
            tracing::error!(
                "Prolific webhook call, but no webhook secret is configured: set {}",
                state.settings.prolific.webhook_secret_env
            );
            text(S::SERVICE_UNAVAILABLE, "webhook secret not configured\n")
        }
    })
}
