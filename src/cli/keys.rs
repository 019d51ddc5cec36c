//! `traceingest keys create|list|revoke`: API key management against the `api_keys` table.

use clap::Subcommand;

use crate::auth::{self, DISPLAY_PREFIX_LEN};
use crate::calendar::civil_from_days;
use crate::clock;
use crate::config::StoreArgs;
use crate::sink::clickhouse::{revoke_target, KeyRecord, Revoked};

/// Fewest random characters a display prefix should show before `keys create` says that
/// prefixes may be shared.
const MIN_RANDOM_SHOWN: usize = 6;

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key; prints it once, alone on one line of stdout. Only its hash is stored.
    Create {
        /// Organisation the key belongs to.
        #[arg(long)]
        org: String,
        /// Project within the organisation, if the key is tied to one.
        #[arg(long, default_value = "")]
        project: String,
        /// Every key starts with this.
        #[arg(long, env = "INGEST_KEY_PREFIX", default_value = "ti_")]
        prefix: String,
    },
    /// List keys: display prefix, organisation, project, created, state. Never keys or hashes.
    List,
    /// Revoke a key: by its display prefix (first 12 characters, as `list` shows, or followed by
    /// the `...` of `create`'s message), or by the whole key. A prefix several active keys share
    /// revokes nothing unless `--all`.
    Revoke {
        /// The display prefix, or the whole key.
        prefix: String,
        /// Revoke every active key with this display prefix, however many.
        #[arg(long)]
        all: bool,
    },
}

/// Runs a keys command.
pub async fn run(cmd: &KeysCommand, store_args: &StoreArgs) -> anyhow::Result<()> {
    // The arguments first: a wrong one changes nothing, and is what is said also when
    // ClickHouse is down.
    if let KeysCommand::Create {
        org,
        project,
        prefix,
    } = cmd
    {
        check_id("--org", org, false)?;
        check_id("--project", project, true)?;
        crate::config::check_key_prefix(prefix)
            .map_err(|e| anyhow::anyhow!("--prefix (INGEST_KEY_PREFIX) {e}"))?;
    }
    let store = store_args.open()?;
    match cmd {
        KeysCommand::Create { .. } => store.migrate().await.map(drop)?,
        KeysCommand::List | KeysCommand::Revoke { .. } => super::migrate_existing(&store).await?,
    }
    match cmd {
        KeysCommand::Create {
            org,
            project,
            prefix,
        } => {
            if prefix.len() + MIN_RANDOM_SHOWN > DISPLAY_PREFIX_LEN {
                super::note(
                    "WARN",
                    format_args!(
                        "note: with a {}-character prefix, display prefixes carry {} random \
                     characters and may be shared by several keys; `keys revoke` then needs \
                     the whole key or --all",
                        prefix.len(),
                        DISPLAY_PREFIX_LEN.saturating_sub(prefix.len())
                    ),
                );
            }
            let key = auth::generate_key(prefix)
                .map_err(|e| anyhow::anyhow!("no randomness available: {e}"))?;
            let record = KeyRecord {
                key_hash: auth::hex(&auth::hash_key(key.as_bytes())),
                display_prefix: key[..DISPLAY_PREFIX_LEN].to_string(),
                org_id: org.clone(),
                project_id: project.clone(),
                created_at: clock::now_s(),
                revoked_at: None,
            };
            store.insert_key(&record).await?;
            outln!("{key}");
            if super::stdout_gone() {
                // Nobody has the key, so nobody can use it: revoked at once (by its whole
                // value, so no other key with the same display prefix is touched).
                let prefix = &record.display_prefix;
                match store.revoke_key(&key, false).await {
                    Ok(Revoked::Keys(1)) => anyhow::bail!(
                        "standard output was closed before the new key could be shown; key \
                         {prefix}... for org {org} was revoked again, so no active key is left \
                         unseen: create another with standard output open"
                    ),
                    Ok(_) => anyhow::bail!(
                        "standard output was closed before the new key could be shown, and key \
                         {prefix}... for org {org} is no longer there to revoke; check \
                         `keys list` and create another"
                    ),
                    Err(e) => anyhow::bail!(
                        "standard output was closed before the new key could be shown, and \
                         revoking key {prefix}... for org {org} failed ({e}): revoke it \
                         (keys revoke {prefix}) and create another"
                    ),
                }
            }
            super::note(
                "INFO",
                format_args!(
                    "created key {}... for org {org}{}; it is shown only once",
                    record.display_prefix,
                    if project.is_empty() {
                        String::new()
                    } else {
                        format!(" project {project}")
                    }
                ),
            );
        }
        KeysCommand::List => {
            let keys = store.list_keys().await?;
            outln!(
                "{:<14} {:<24} {:<24} {:<20} STATE",
                "PREFIX",
                "ORG",
                "PROJECT",
                "CREATED"
            );
            for k in keys {
                let state = if k.revoked_at.is_some() {
                    "revoked"
                } else {
                    "active"
                };
                outln!(
                    "{:<14} {:<24} {:<24} {:<20} {state}",
                    k.display_prefix,
                    k.org_id,
                    if k.project_id.is_empty() {
                        "-"
                    } else {
                        &k.project_id
                    },
                    format_time(k.created_at)
                );
            }
        }
        KeysCommand::Revoke { prefix, all } => {
            // As `revoke_key` reads it: a display prefix without the dots printed after it.
            let prefix = revoke_target(prefix);
            match store.revoke_key(prefix, *all).await? {
                Revoked::Keys(0) if prefix.len() > DISPLAY_PREFIX_LEN => {
                    anyhow::bail!(
                        "no active key is {}...",
                        // Not a byte slice: the argument is whatever was typed.
                        prefix.chars().take(DISPLAY_PREFIX_LEN).collect::<String>()
                    );
                }
                Revoked::Keys(0) => {
                    anyhow::bail!("no active key has the display prefix {prefix:?}")
                }
                // A whole key is never shown again, not even back to the one who typed it.
                Revoked::Keys(n) if prefix.len() > DISPLAY_PREFIX_LEN => outln!(
                    "revoked {n} key(s): {}...",
                    prefix.chars().take(DISPLAY_PREFIX_LEN).collect::<String>()
                ),
                Revoked::Keys(n) => outln!("revoked {n} key(s) with prefix {prefix}"),
                Revoked::Ambiguous(keys) => {
                    let owners: Vec<String> = keys
                        .iter()
                        .map(|k| {
                            format!(
                                "org {}{} created {}",
                                k.org_id,
                                if k.project_id.is_empty() {
                                    String::new()
                                } else {
                                    format!(" project {}", k.project_id)
                                },
                                format_time(k.created_at)
                            )
                        })
                        .collect();
                    anyhow::bail!(
                        "{} active keys have the display prefix {prefix:?} ({}); nothing revoked: \
                     give the whole key to revoke one, or --all to revoke them all",
                        keys.len(),
                        owners.join("; ")
                    );
                }
            }
        }
    }
    Ok(())
}

fn check_id(flag: &str, v: &str, may_be_empty: bool) -> anyhow::Result<()> {
    if v.is_empty() && may_be_empty {
        return Ok(());
    }
    if v.is_empty() || v.len() > 128 || v.chars().any(|c| c.is_control()) {
        anyhow::bail!("{flag} must be 1 to 128 characters without control characters");
    }
    Ok(())
}

/// `YYYY-MM-DD HH:MM:SS` in UTC.
pub fn format_time(epoch_s: u32) -> String {
    let secs = i64::from(epoch_s);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(format_time(0), "1970-01-01 00:00:00");
        assert_eq!(format_time(1_700_000_000), "2023-11-14 22:13:20");
        assert_eq!(format_time(951_782_400), "2000-02-29 00:00:00");
    }
}
