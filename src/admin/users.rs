//! The accounts list (admins only). Accounts are created and changed with
//! `emotionbench admin …` so that passwords never travel through a web form of ours.

use actix_web::{HttpResponse, web};
use askama::Template;

use super::{Admin, Nav};
use crate::store::users::{self, User};
use crate::web::error::AppError;
use crate::web::render::render;
use crate::web::state::AppState;

#[derive(Template)]
#[template(path = "admin/users.html")]
struct UsersPage {
    nav: Nav,
    users: Vec<User>,
}

pub async fn list(state: web::Data<AppState>, admin: Admin) -> Result<HttpResponse, AppError> {
    let users = state.db(|conn| Ok(users::list(conn)?)).await?;
    render(UsersPage {
        nav: Nav::of(admin.session()),
        users,
    })
}
