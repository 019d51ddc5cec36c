//! `traceingest orgs create|set-plan|list`: organisations and their plans in the `orgs` table.
//!
//! Plan names are checked against the plans this command knows (the built-ins plus
//! `INGEST_PLANS` in its environment), which should be the servers' configuration.

use clap::Subcommand;

use crate::admission::plan::Plans;
use crate::cli::keys::format_time;
use crate::config::{PlanArgs, StoreArgs};

#[derive(Debug, Subcommand)]
pub enum OrgsCommand {
    /// Create an organisation on a plan. Organisations without a record are on the default
    /// plan (INGEST_DEFAULT_PLAN).
    Create {
        org: String,
        /// One of the configured plans (built-in: free, pro, enterprise, self-hosted).
        #[arg(long)]
        plan: String,
    },
    /// Move an existing organisation to another plan; servers apply it within one key refresh.
    SetPlan { org: String, plan: String },
    /// List organisations with their plans, and the plans known to this command.
    List,
}

/// Runs an orgs command.
pub async fn run(
    cmd: &OrgsCommand,
    plan_args: &PlanArgs,
    store_args: &StoreArgs,
) -> anyhow::Result<()> {
    let plans = plan_args.resolve().map_err(anyhow::Error::msg)?;
    // The arguments first: a wrong one changes nothing, and is what is said also when
    // ClickHouse is down.
    if let OrgsCommand::Create { org, plan } | OrgsCommand::SetPlan { org, plan } = cmd {
        check_org(org)?;
        check_plan(&plans, plan)?;
    }
    let store = store_args.open()?;
    match cmd {
        OrgsCommand::Create { .. } => store.migrate().await.map(drop)?,
        OrgsCommand::SetPlan { .. } | OrgsCommand::List => super::migrate_existing(&store).await?,
    }
    match cmd {
        OrgsCommand::Create { org, plan } => {
            if let Some(existing) = store.get_org(org).await? {
                anyhow::bail!(
                    "organisation {org:?} already exists (plan {}); use `orgs set-plan`",
                    existing.plan
                );
            }
            store.put_org(org, plan).await?;
            outln!("created organisation {org} on plan {plan}");
        }
        OrgsCommand::SetPlan { org, plan } => {
            let Some(existing) = store.get_org(org).await? else {
                anyhow::bail!(
                    "no organisation {org:?}; create it with `orgs create {org} --plan {plan}`"
                );
            };
            store.put_org(org, plan).await?;
            outln!("organisation {org}: plan {} -> {plan}", existing.plan);
        }
        OrgsCommand::List => {
            outln!("{:<32} {:<16} {:<20} UPDATED", "ORG", "PLAN", "CREATED");
            for o in store.list_orgs().await? {
                let plan = if plans.get(&o.plan).is_some() {
                    o.plan.clone()
                } else {
                    format!("{} (unknown)", o.plan)
                };
                outln!(
                    "{:<32} {plan:<16} {:<20} {}",
                    o.org_id,
                    format_time(o.created_at),
                    format_time(o.updated_at)
                );
            }
            outln!();
            outln!(
                "plans (organisations without a record: {}):",
                plans.default_plan().name
            );
            for p in plans.iter() {
                outln!("  {p}");
            }
        }
    }
    Ok(())
}

fn check_org(org: &str) -> anyhow::Result<()> {
    if org.is_empty() || org.len() > 128 || org.chars().any(char::is_control) {
        anyhow::bail!("the organisation id must be 1 to 128 characters without control characters");
    }
    Ok(())
}

fn check_plan(plans: &Plans, plan: &str) -> anyhow::Result<()> {
    if plans.get(plan).is_none() {
        anyhow::bail!(
            "unknown plan {plan:?}; known plans: {} (add plans with INGEST_PLANS)",
            plans.names()
        );
    }
    Ok(())
}
