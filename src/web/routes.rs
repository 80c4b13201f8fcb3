//! The route table: every path of the application, its handler and who may use it. This is the
//! only file that names handlers; handlers import the kernel (`web::state`, `web::render`,
//! `web::csrf`, `web::error`), never this.

use actix_web::{guard, web};

use crate::web::{assets, home, prolific_hook};
use crate::{admin, survey};

/// Who may use a route. The route-matrix test checks every entry of [`ROUTES`] behaves so.
///
/// Handlers enforce it with their extractors (`admin::Researcher`, `admin::Admin`); the table
/// states it so a reader sees every route's policy in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone (start page, health, assets, login, an invitation's link).
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
    (
        $($method:ident $path:literal => $handler:path, $access:ident;)*
        $scope:literal => {
            $($s_method:ident $s_path:literal => $s_handler:path, $s_access:ident;)*
        }
    ) => {
        /// Every route of the application, in one table: method, full path, access.
        pub const ROUTES: &[(&str, &str, Access)] = &[
            $((stringify!($method), $path, Access::$access),)*
            $((stringify!($s_method), concat!($scope, $s_path), Access::$s_access),)*
        ];

        /// Registers every route of [`ROUTES`]; order matters where paths overlap.
        pub fn routes(cfg: &mut web::ServiceConfig) {
            $(cfg.route($path, $method().to($handler));)*
            cfg.service(web::scope($scope)$(.route($s_path, $s_method().to($s_handler)))*);
        }
    };
}

/// A `get` route answers HEAD as well, as HTTP asks (RFC 9110 §9.3.2): `web::get()` matches
/// GET only, and HEAD got 404. The handler runs as for GET; actix sends the head with its
/// Content-Length and no body.
fn get() -> actix_web::Route {
    web::route().guard(guard::Any(guard::Get()).or(guard::Head()))
}

fn post() -> actix_web::Route {
    web::post()
}

route_table! {
    get  "/"                                  => home::index, Public;
    get  "/healthz"                           => home::health, Public;
    get  "/assets/{file}"                     => assets::serve, Public;
    // Participants.
    get  "/s/{study}"                         => survey::entry::get, Participant;
    get  "/s/{study}/consent"                 => survey::entry::consent_form, Participant;
    get  "/s/{study}/pilot/{token}"           => survey::entry::pilot, Participant;
    post "/s/{study}/consent"                 => survey::entry::consent, Participant;
    get  "/s/{study}/withdraw"                => survey::pages::withdraw_form, Participant;
    post "/s/{study}/withdraw"                => survey::pages::withdraw, Participant;
    get  "/s/{study}/{page}"                  => survey::pages::get, Participant;
    post "/s/{study}/{page}"                  => survey::pages::post, Participant;
    // An invitation's link: public (the invitee has no account yet).
    get  "/invite/{token}"                    => admin::invites::form, Public;
    post "/invite/{token}"                    => admin::invites::accept, Public;
    // Prolific's webhook calls: authenticated by their HMAC signature, not a session or CSRF.
    post "/prolific/webhook"                  => prolific_hook::receive, Public;
    // Researchers and admins: one scope; each route's access is enforced by its extractor.
    "/admin" => {
        get  "/login"                             => admin::login::form, Public;
        post "/login"                             => admin::login::submit, Public;
        post "/logout"                            => admin::login::logout, Researcher;
        get  ""                                   => admin::studies::list, Researcher;
        get  "/studies/new"                       => admin::studies::new_form, Admin;
        post "/studies"                           => admin::studies::create, Admin;
        get  "/studies/import"                    => admin::study_reuse::import_form, Admin;
        post "/studies/import"                    => admin::study_reuse::import, Admin;
        get  "/studies/{study}"                   => admin::studies::monitor, Researcher;
        get  "/studies/{study}/report"            => admin::report::show, Researcher;
        get  "/studies/{study}/report/export/{chart}" => admin::report::chart_svg, ResearcherDownload;
        get  "/studies/{study}/edit"              => admin::studies::edit_form, Admin;
        post "/studies/{study}"                   => admin::studies::update, Admin;
        post "/studies/{study}/status"            => admin::studies::set_status, Admin;
        get  "/studies/{study}/door"              => admin::doors::form, Admin;
        post "/studies/{study}/door"              => admin::doors::save, Admin;
        get  "/studies/{study}/delete"            => admin::studies::delete_form, Admin;
        post "/studies/{study}/delete"            => admin::studies::delete, Admin;
        get  "/studies/{study}/participants/delete" => admin::studies::confirm_delete_participant, Admin;
        post "/studies/{study}/participants/delete" => admin::studies::delete_participant, Admin;
        get  "/studies/{study}/participants/{participant}" => admin::evidence::participant, Researcher;
        get  "/studies/{study}/evidence"          => admin::evidence::show, Researcher;
        post "/studies/{study}/exclusions"        => admin::evidence::set_rules, Admin;
        post "/studies/{study}/pilots/delete"     => admin::studies::delete_pilots, Admin;
        get  "/studies/{study}/duplicate"         => admin::study_reuse::duplicate_form, Admin;
        post "/studies/{study}/duplicate"         => admin::study_reuse::duplicate, Admin;
        get  "/studies/{study}/definition.json"   => admin::study_reuse::definition, Researcher;
        get  "/studies/{study}/export/{file}"     => admin::exports::download, ResearcherDownload;
        get  "/studies/{study}/prolific"          => admin::prolific::show, Researcher;
        post "/studies/{study}/prolific/draft"    => admin::prolific::draft, Admin;
        post "/studies/{study}/prolific/approve"  => admin::prolific::approve, Admin;
        post "/studies/{study}/prolific/reject"   => admin::prolific::reject, Admin;
        post "/studies/{study}/prolific/return"   => admin::prolific::request_return, Admin;
        get  "/studies/{study}/prolific/reconcile" => admin::prolific::reconcile, Researcher;
        post "/studies/{study}/prolific/release"  => admin::prolific::release, Admin;
        get  "/providers"                         => admin::runs::providers, Admin;
        get  "/runs"                              => admin::runs::list, Admin;
        get  "/runs/new"                          => admin::runs::new_form, Admin;
        post "/runs"                              => admin::runs::create, Admin;
        get  "/runs/{run}"                        => admin::runs::show, Admin;
        post "/runs/{run}/{action}"               => admin::runs::action, Admin;
        get  "/users"                             => admin::users::list, Admin;
        post "/users/invite"                      => admin::users::invite, Admin;
        post "/users/{user}/status"               => admin::users::set_status, Admin;
        post "/users/{user}/role"                 => admin::users::set_role, Admin;
        get  "/audit"                             => admin::audit::list, Admin;
        get  "/data"                              => admin::data::index, Researcher;
        post "/data/situations"                   => admin::data::upload_situations, Admin;
        post "/data/instruments"                  => admin::data::upload_instruments, Admin;
        post "/data/humans"                       => admin::data::upload_humans, Admin;
        post "/data/model-results"                => admin::data::upload_model_results, Admin;
        get  "/data/sets/{set}"                   => admin::data::browse_set, Researcher;
        get  "/data/sets/{set}/export/situations.csv" => admin::data::download_set, ResearcherDownload;
    }
}

#[cfg(test)]
mod tests {
    use super::ROUTES;
    use crate::domain::study::RESERVED_SLUGS;

    /// A study's slug is the first segment under `/admin/studies/`: a literal route word there
    /// (`/admin/studies/new`) must be a slug no study can take.
    #[test]
    fn every_literal_segment_under_admin_studies_is_a_reserved_slug() {
        let mut literals = Vec::new();
        for (_, path, _) in ROUTES {
            let Some(rest) = path.strip_prefix("/admin/studies/") else {
                continue;
            };
            let first = rest.split('/').next().unwrap_or("");
            if !first.starts_with('{') {
                literals.push(first);
            }
        }
        assert!(
            literals.contains(&"new"),
            "the table has /admin/studies/new"
        );
        for word in literals {
            assert!(
                RESERVED_SLUGS.contains(&word),
                "/admin/studies/{word} is a route: add {word:?} to domain::study::RESERVED_SLUGS"
            );
        }
    }
}
