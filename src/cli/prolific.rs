//! `prolific …`: the study's Prolific draft, its submissions, bulk approval, rejection, return
//! requests and the reconciliation, through `app::prolific` (audited as `cli`). The API token is
//! read from the environment variable `[prolific] token_env` names (default `PROLIFIC_TOKEN`).

use emotionbench::prolific::ProlificClient;
use emotionbench::store::audit::Actor;
use emotionbench::store::prolific::DraftSettings;
use emotionbench::{Settings, app};

use super::db;

#[derive(clap::Subcommand)]
pub enum ProlificCommand {
    /// Create the study's Prolific draft, or update it: title, description, the link with
    /// Prolific's placeholders, completion codes with their actions, places, reward and the
    /// estimated time (our median completion time, or 10 minutes before any completion).
    Draft {
        #[arg(long, value_name = "SLUG")]
        study: String,
        /// What participants read on Prolific.
        #[arg(long)]
        description: String,
        /// The reward in cents (or pence), in the account's currency.
        #[arg(long, value_name = "CENTS")]
        reward: i32,
        /// Places (default: the target per situation × the situations).
        #[arg(long)]
        places: Option<i32>,
        /// Approve completed submissions automatically (the COMPLETED code's
        /// AUTOMATICALLY_APPROVE action); without it each waits for a review.
        #[arg(long)]
        auto_approve: bool,
        /// Pay screened-out participants this fixed amount (cents) automatically.
        #[arg(long, value_name = "CENTS")]
        screen_out_reward: Option<i32>,
    },
    /// List the study's submissions on Prolific.
    Submissions {
        #[arg(long, value_name = "SLUG")]
        study: String,
    },
    /// Approve submissions in bulk (at most 1,000 per request): the ids given, or with
    /// `--all-awaiting-review` every submission awaiting review.
    Approve {
        #[arg(long, value_name = "SLUG")]
        study: String,
        #[arg(long = "submission", value_name = "ID")]
        submissions: Vec<String>,
        #[arg(long, conflicts_with = "submissions")]
        all_awaiting_review: bool,
    },
    /// Reject one submission with one of Prolific's categories and a message to the
    /// participant of at least 100 characters.
    Reject {
        #[arg(long, value_name = "SLUG")]
        study: String,
        #[arg(long, value_name = "ID")]
        submission: String,
        /// TOO_QUICKLY, TOO_SLOWLY, FAILED_INSTRUCTIONS, INCOMP_LONGITUDINAL, FAILED_CHECK,
        /// LOW_EFFORT, MALINGERING, NO_CODE, BAD_CODE, NO_DATA, UNSUPP_DEVICE or OTHER.
        #[arg(long)]
        category: String,
        #[arg(long)]
        message: String,
    },
    /// Ask the participant of one submission to return it.
    Return {
        #[arg(long, value_name = "SLUG")]
        study: String,
        #[arg(long, value_name = "ID")]
        submission: String,
        /// A reason (repeatable), e.g. "Withdrew consent."
        #[arg(long = "reason", required = true)]
        reasons: Vec<String>,
    },
    /// Each participant's Prolific status next to ours and the action it suggests; with
    /// `--release`, release the reservations of those who returned or timed out there.
    Reconcile {
        #[arg(long, value_name = "SLUG")]
        study: String,
        #[arg(long)]
        release: bool,
    },
}

pub fn run(settings: &Settings, cmd: ProlificCommand) -> anyhow::Result<()> {
    let client = ProlificClient::new(&settings.prolific);
    let actor = Actor::Cli;
    match cmd {
        ProlificCommand::Draft {
            study,
            description,
            reward,
            places,
            auto_approve,
            screen_out_reward,
        } => {
            let Some(base) = settings.public_url.as_deref() else {
                anyhow::bail!(
                    "set public_url (or EMOTIONBENCH_PUBLIC_URL): Prolific sends participants \
                     to the study's public address"
                );
            };
            let pool = db::writing(settings)?;
            let mut conn = pool.get()?;
            let input = DraftSettings {
                description,
                reward_cents: reward,
                places,
                auto_approve,
                screen_out_reward_cents: screen_out_reward,
            };
            let d = app::prolific::draft(&mut conn, &client, base, &study, &input, &actor)?;
            println!(
                "{} Prolific draft {} for {study}: {} places, {} min estimated ({})",
                if d.created { "created" } else { "updated" },
                d.prolific_study_id,
                d.places,
                d.estimated_minutes,
                if d.estimated_from_data {
                    "our median completion time"
                } else {
                    "default: no completion yet"
                }
            );
            for (code, kind, actions) in &d.codes {
                println!("  {kind:<24} {code:<12} {}", actions.join(", "));
            }
        }
        ProlificCommand::Submissions { study } => {
            let pool = db::reading(settings)?;
            let mut conn = pool.get()?;
            let subs = app::prolific::submissions(&mut conn, &client, &study)?;
            println!("submission\tparticipant\tstatus\tcode");
            for s in &subs {
                println!(
                    "{}\t{}\t{}\t{}",
                    s.id,
                    s.participant_id,
                    s.status,
                    s.study_code.as_deref().unwrap_or("")
                );
            }
            eprintln!("{} submission(s)", subs.len());
        }
        ProlificCommand::Approve {
            study,
            submissions,
            all_awaiting_review,
        } => {
            if submissions.is_empty() && !all_awaiting_review {
                anyhow::bail!(
                    "name submissions with --submission ID, or pass --all-awaiting-review"
                );
            }
            let pool = db::writing(settings)?;
            let mut conn = pool.get()?;
            let ids = (!all_awaiting_review).then_some(submissions.as_slice());
            let a = app::prolific::approve(&mut conn, &client, &study, ids, &actor)?;
            println!(
                "approved {} submission(s) in {} request(s)",
                a.approved, a.requests
            );
        }
        ProlificCommand::Reject {
            study,
            submission,
            category,
            message,
        } => {
            let pool = db::writing(settings)?;
            let mut conn = pool.get()?;
            let status = app::prolific::reject(
                &mut conn,
                &client,
                &study,
                &submission,
                &category,
                &message,
                &actor,
            )?;
            println!("rejected {submission} ({status})");
        }
        ProlificCommand::Return {
            study,
            submission,
            reasons,
        } => {
            let pool = db::writing(settings)?;
            let mut conn = pool.get()?;
            app::prolific::request_return(
                &mut conn,
                &client,
                &study,
                &submission,
                &reasons,
                &actor,
            )?;
            println!("asked the participant of {submission} to return it");
        }
        ProlificCommand::Reconcile { study, release } => {
            let pool = if release {
                db::writing(settings)?
            } else {
                db::reading(settings)?
            };
            let mut conn = pool.get()?;
            let rows = app::prolific::reconcile(&mut conn, &client, &study)?;
            println!("prolific_pid\tsubmission\tours\ttheirs\taction\twhy");
            for r in &rows {
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    r.prolific_pid,
                    r.submission_id.as_deref().unwrap_or(""),
                    r.ours,
                    r.theirs.as_deref().unwrap_or(""),
                    r.suggestion.action.as_str(),
                    r.suggestion.why
                );
            }
            if release {
                let n = app::prolific::release_returned(&mut conn, &client, &study, &actor)?;
                println!("released {n} reservation(s)");
            }
        }
    }
    Ok(())
}
