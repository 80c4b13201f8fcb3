//! `plan`: the repeats per condition a model run needs for the report's two-sample test
//! (`domain::power`). No database.

use emotionbench::domain::power;

#[derive(clap::Args)]
pub struct PlanArgs {
    /// The standardized effect to detect (Cohen's d between default and evoked trials).
    #[arg(long = "effect-size", value_name = "D", allow_negative_numbers = true)]
    effect_size: f64,
    /// Significance level of the two-sided test.
    #[arg(long, default_value_t = 0.01)]
    alpha: f64,
    /// Probability of detecting the effect.
    #[arg(long, default_value_t = 0.8)]
    power: f64,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: PlanArgs) -> anyhow::Result<()> {
    let plan = power::plan(args.effect_size, args.alpha, args.power)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&plan)?);
    } else {
        println!(
            "{} trials in each group compared (run --repeats {} --default-repeats {}): power {:.4} \
             for d = {} at α = {} ({}, df = {}, critical t = {:.4}).",
            plan.repeats,
            plan.repeats,
            plan.repeats,
            plan.achieved_power,
            plan.effect_size,
            plan.alpha,
            plan.test,
            plan.df,
            plan.critical_t
        );
    }
    Ok(())
}
