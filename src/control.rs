//! The control thread: keeps the key set fresh and reloads the pricing file, off the workers.
//!
//! It owns a small tokio runtime (ClickHouse queries are async) and loops until told to stop:
//! every `key_refresh` it loads the active keys and swaps the whole set in; every second (and at
//! once on SIGHUP) it checks the pricing file and swaps in a new table when it changed. A failed
//! load keeps what is in place and is logged.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::auth::{KeySet, KeyStore, Principal};
use crate::server::Shared;
use crate::sink::clickhouse::Store;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Loads the active keys once into `keys`.
pub async fn refresh_keys(store: &Store, keys: &KeyStore) -> Result<usize, String> {
    let active = store.load_active_keys().await.map_err(|e| e.to_string())?;
    let mut set = KeySet::default();
    set.reserve(active.len());
    for k in active {
        set.insert(
            k.hash,
            Principal {
                org_id: k.org_id.into(),
                project_id: k.project_id.into(),
            },
        );
    }
    let n = set.len();
    keys.replace(set, now_ms());
    Ok(n)
}

/// Starts the control thread.
pub fn spawn(
    store: Store,
    shared: Arc<Shared>,
    pricing_file: Option<PathBuf>,
    key_refresh: Duration,
    reload_prices: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("control".into())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, "control thread cannot start its runtime");
                    return;
                }
            };
            rt.block_on(async move {
                let mut next_price_check = Instant::now() + Duration::from_secs(1);
                let mut failing_since: Option<Instant> = None;
                while !stop.load(Ordering::Acquire) {
                    match refresh_keys(&store, &shared.keys).await {
                        Ok(_) => {
                            if failing_since.take().is_some() {
                                tracing::info!("key refresh recovered");
                            }
                        }
                        Err(e) => {
                            if failing_since.is_none() {
                                failing_since = Some(Instant::now());
                                tracing::warn!(error = %e, "key refresh failed; keeping the current key set");
                            }
                        }
                    }
                    if let Some(path) = &pricing_file {
                        let hup = reload_prices.swap(false, Ordering::AcqRel);
                        if hup || Instant::now() >= next_price_check {
                            next_price_check = Instant::now() + Duration::from_secs(1);
                            let result = if hup {
                                shared.prices.reload_from(path).map(|_| true)
                            } else {
                                shared.prices.reload_if_changed(path)
                            };
                            match result {
                                Ok(true) => tracing::info!(file = %path.display(), "pricing file reloaded"),
                                Ok(false) => {}
                                Err(e) => tracing::error!(error = %e, "pricing file not reloaded; keeping the current table"),
                            }
                        }
                    }
                    tokio::time::sleep(key_refresh).await;
                }
            });
        })
}
