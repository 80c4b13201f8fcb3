//! `admin …` (accounts) and `retention run`.

use emotionbench::store::audit::Actor;
use emotionbench::store::users::{self, Role};
use emotionbench::{Settings, app};

use super::db;

#[derive(clap::Subcommand)]
pub enum AdminCommand {
    /// Create an account. The password is read from a prompt, or from the first line of
    /// standard input when that is not a terminal; never from an argument.
    CreateUser {
        email: String,
        #[arg(long, value_enum)]
        role: Role,
    },
    /// List the accounts.
    ListUsers,
    /// Set a new password (read like create-user); ends the account's sessions.
    SetPassword { email: String },
    /// Disable an account; ends its sessions.
    DisableUser { email: String },
}

#[derive(clap::Subcommand)]
pub enum RetentionCommand {
    /// Delete the participant data of every study whose retention date has passed.
    Run,
}

pub fn run(settings: &Settings, cmd: AdminCommand) -> anyhow::Result<()> {
    if let AdminCommand::ListUsers = cmd {
        let pool = db::reading(settings)?;
        println!("{:<40} {:<11} STATUS", "EMAIL", "ROLE");
        for u in users::list(&mut *pool.get()?)? {
            println!(
                "{:<40} {:<11} {}",
                u.email,
                u.role.as_str(),
                if u.disabled { "disabled" } else { "enabled" }
            );
        }
        return Ok(());
    }
    let pool = db::writing(settings)?;
    let mut conn = pool.get()?;
    match cmd {
        AdminCommand::CreateUser { email, role } => {
            // Before the password prompt: a typo in the address should not cost a password.
            app::accounts::check_email(&email)?;
            app::accounts::create(&mut conn, &email, role, &read_password()?, &Actor::Cli)?;
            println!("created {} account {email}", role.as_str());
        }
        AdminCommand::SetPassword { email } => {
            app::accounts::set_password(&mut conn, &email, &read_password()?, &Actor::Cli)?;
            println!("password changed for {email}; its sessions have ended");
        }
        AdminCommand::DisableUser { email } => {
            app::accounts::disable(&mut conn, &email, &Actor::Cli)?;
            println!("disabled {email}; its sessions have ended");
        }
        AdminCommand::ListUsers => {}
    }
    Ok(())
}

pub fn retention(settings: &Settings, cmd: RetentionCommand) -> anyhow::Result<()> {
    let RetentionCommand::Run = cmd;
    let pool = db::writing(settings)?;
    let done = app::studies::apply_retention(&mut *pool.get()?, &Actor::Cli)?;
    if done.is_empty() {
        println!("no study is past its retention date");
    }
    for (slug, n) in done {
        println!("{slug}: deleted {n} participants");
    }
    Ok(())
}

/// Reads a new password: twice from the terminal, or one line of piped standard input.
fn read_password() -> anyhow::Result<String> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        let a = rpassword::prompt_password("New password: ")?;
        let b = rpassword::prompt_password("Repeat it: ")?;
        anyhow::ensure!(a == b, "the two passwords differ");
        Ok(a)
    } else {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        Ok(line.trim_end_matches(['\r', '\n']).to_owned())
    }
}
