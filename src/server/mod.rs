//! The network side: monoio workers (`runtime.rs`) serving connections (`conn/`, which
//! waits for an early key-set load through `keywait.rs` when a key is unknown), the operations
//! endpoints (`ops.rs`) and the admin listener that serves them off the public port
//! (`admin.rs`), and the state every worker shares.

pub mod admin;
pub mod conn;
pub mod drain;
pub mod keywait;
pub mod memory;
pub mod ops;
pub mod runtime;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::admission::fleet::FleetStatus;
use crate::admission::Accounts;
use crate::auth::KeyStore;
use crate::clock::Clock;
use crate::config::{Config, ServeArgs};
use crate::ingest::unpriced::UnpricedModels;
use crate::ingest::Parts;
use crate::metrics::Metrics;
use crate::pricing::SharedPrices;
use crate::sink::{FlushStats, Handoff, MemoryBudget};

/// glibc's malloc, left to itself, serves each request's row batch (about 2 MB for a 1 MB body)
/// with fresh pages: above its dynamic mmap threshold a block is mapped and unmapped, below it
/// the freed top of the worker's arena is trimmed, and either way the kernel faults the pages
/// back in on the next request (hundreds of faults per request). Batches are allocated on the
/// workers and freed on the flush thread, and blocks up to 32 MiB now stay in the arenas, whose
/// free memory is returned to the system only past 512 MiB.
///
/// `serve` calls it first thing; the benches and `perf/profile.rs` call it too, so they measure
/// the request path with the memory behaviour it has in the server.
pub fn keep_freed_memory() {
    // SAFETY: mallopt only changes malloc's parameters (under the arena lock); callers call it
    // once, at start-up, before their other threads.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
    }
}

/// Raises the soft limit on open files to the hard one and returns it (`None` if it cannot be
/// read). Every connection, spool segment and ClickHouse connection is a descriptor, and the
/// soft limit is often 1,024 (systemd's default) against 10,000 connections a worker may take:
/// past it accepts fail, and so would opening a spool segment to read it back.
pub fn raise_open_files_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed by reference.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    Some(lim.rlim_cur)
}

/// State shared by all workers. Everything in it is read lock-free on the request path.
pub struct Shared {
    pub config: Config,
    pub keys: KeyStore,
    pub prices: Arc<SharedPrices>,
    /// Set once by the signal handler: from then on `/ingest` answers 503.
    pub draining: AtomicBool,
    /// Set by the signal handler before the drain: from then on `/ready` answers 503
    /// (`INGEST_DRAIN_DELAY_MS` lets the rest go on that long, for load balancers to notice).
    pub stop_asked: AtomicBool,
    /// Rows and bytes held in memory (workers reserve, the flush thread releases).
    pub budget: Arc<MemoryBudget>,
    /// The storage side's counters and gauges (spool, inserts, write-ahead log).
    pub flush_stats: Arc<FlushStats>,
    pub metrics: Metrics,
    /// Wall clock for rows and quota months, monotonic clock for rate limits.
    pub clock: Clock,
    /// Every organisation's plan and usage (the control thread publishes the list; workers
    /// reach an account through the key's `Principal`).
    pub accounts: Accounts,
    /// Accepted spans whose model has no price, by provider (workers add, `/metrics` reads).
    pub unpriced: Arc<UnpricedModels>,
    /// Fleet-wide rate limits (`INGEST_REDIS_URL`): configured, falling back, leased.
    pub fleet: Arc<FleetStatus>,
}

impl Shared {
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// A stop was asked for (`stop_asked`) or the drain runs: `/ready` is false.
    pub fn is_stopping(&self) -> bool {
        self.stop_asked.load(Ordering::Acquire) || self.is_draining()
    }

    /// Rows accepted and not yet written: in memory and in the spool.
    pub fn buffered(&self) -> u64 {
        self.budget.rows() + self.flush_stats.spool_rows.load(Ordering::Relaxed)
    }

    /// Memory and spool are both full: `/ingest` refuses batches and `/ready` is false.
    pub fn is_buffer_full(&self) -> bool {
        self.flush_stats.full.load(Ordering::Relaxed)
    }

    /// What a worker's `ingest::Pipeline` needs, sending to `handoff`.
    pub fn pipeline_parts(&self, handoff: Handoff) -> Parts {
        Parts {
            prices: self.prices.clone(),
            handoff,
            clock: self.clock,
            batch_limit: self.config.batch_limit(),
            unpriced: self.unpriced.clone(),
        }
    }

    /// State for benches and tests that run `ingest::Pipeline` without a server: the settings
    /// `serve` would resolve from its defaults and the `INGEST_*` environment, the built-in
    /// price table, no API keys, and no flush thread (whoever drains the channel releases
    /// what it takes from `budget`, as the flush thread does). Does no I/O.
    ///
    /// # Panics
    /// If an `INGEST_*` variable in the environment is invalid.
    pub fn for_bench() -> Shared {
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            serve: ServeArgs,
        }
        let config = <Defaults as clap::Parser>::try_parse_from(["bench"])
            .map_err(|e| e.to_string())
            .and_then(|d| d.serve.resolve())
            .unwrap_or_else(|e| panic!("default settings do not resolve: {e}"));
        Shared {
            keys: KeyStore::new(&config.key_prefix),
            prices: Arc::new(SharedPrices::builtin()),
            draining: AtomicBool::new(false),
            stop_asked: AtomicBool::new(false),
            budget: Arc::new(MemoryBudget::new(
                config.buffer_max_rows,
                config.buffer_max_bytes,
            )),
            flush_stats: Arc::default(),
            metrics: Metrics::default(),
            clock: Clock::new(config.clock_offset_ms),
            accounts: Accounts::default(),
            unpriced: Arc::default(),
            fleet: Arc::default(),
            config,
        }
    }
}

#[cfg(test)]
mod limit_tests {
    fn limit() -> libc::rlimit {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct passed by reference.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        lim
    }

    /// A soft open-files limit below the hard one is raised to it (no privilege needed).
    #[test]
    fn the_open_files_limit_is_raised_to_the_hard_one() {
        let hard = limit().rlim_max;
        // Lowered first (still far above what the other tests of this process open), so the
        // raise has something to do whatever the machine's own soft limit is.
        let lowered = libc::rlimit {
            rlim_cur: (hard / 2).max(4096).min(hard),
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads the struct passed by reference.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);
        let got = super::raise_open_files_limit().expect("readable");
        assert_eq!(got, hard);
        assert_eq!(limit().rlim_cur, hard);
    }
}
