//! Start-up only: parse the command line, then run `serve` or one of the management commands.
//!
//! `serve`: config -> price table -> data directory (lock, spool recovery) -> ClickHouse schema,
//! keys, plans and this month's usage -> flush thread (and write-ahead thread) -> control
//! thread -> workers -> wait for a signal -> drain -> flush or spool -> exit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use traceingest::admission::Accounts;
use traceingest::auth::KeyStore;
use traceingest::cli::deadletter::DeadLetterCommand;
use traceingest::cli::keys::KeysCommand;
use traceingest::cli::orgs::OrgsCommand;
use traceingest::cli::price::PriceArgs;
use traceingest::cli::reprice::RepriceArgs;
use traceingest::clock::Clock;
use traceingest::config::{
    Durability, LogArgs, LogFormat, MigrateArgs, PlanArgs, ServeArgs, StoreArgs, DEFAULT_LOG_FILTER,
};
use traceingest::control::Refresher;
use traceingest::metrics::Metrics;
use traceingest::pricing::SharedPrices;
use traceingest::server::{admin, runtime, Shared};
use traceingest::sink::clickhouse::Store;
use traceingest::sink::flush::{self, FlushConfig, Input};
use traceingest::sink::segment::Writer;
use traceingest::sink::spool::{self, Spool, SpoolConfig};
use traceingest::sink::wal;
use traceingest::sink::{FlushStats, Handoff, MemoryBudget};
use traceingest::{cli, control};

#[derive(Debug, Parser)]
#[command(
    name = "traceingest",
    version,
    about = "Ingest AI model-call traces into ClickHouse"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    log: LogArgs,
}

// Parsed once at start-up and matched once: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Run the ingest server (the default command).
    Serve(Box<ServeArgs>),
    /// Create the database and tables if missing, add the columns a newer release adds, and
    /// rebuild a `spans` table an older release made with another engine or keys; prints what
    /// it did, then exits (exit status 3: a cluster's migration that did not reach every node;
    /// run it again).
    Migrate(MigrateArgs),
    /// Manage API keys.
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Manage organisations and their plans.
    Orgs {
        #[command(subcommand)]
        command: OrgsCommand,
        #[command(flatten)]
        plans: PlanArgs,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Price a model call by hand, or list the price table.
    Price(PriceArgs),
    /// Recompute the costs of stored spans with the prices in force now and write corrected
    /// rows (see README, "Re-pricing").
    Reprice(RepriceArgs),
    /// Insert the rows of a dead-letter file again once their refusal is mended, or write
    /// the records a cut spool segment still holds as one (see README, "Guarantees").
    Deadletter {
        #[command(subcommand)]
        command: DeadLetterCommand,
    },
}

/// Parses the command line, or exits as clap does (status 2). A value clap cannot parse that
/// came from an `INGEST_*` variable gets a line naming it: clap's message names only the flag.
fn parse(args: &[std::ffi::OsString]) -> Cli {
    use clap::CommandFactory as _;
    Cli::try_parse_from(args).unwrap_or_else(|mut e| {
        use clap::error::{ContextKind, ContextValue, ErrorKind};
        if matches!(
            e.kind(),
            ErrorKind::InvalidValue | ErrorKind::ValueValidation
        ) {
            let arg = e.get(ContextKind::InvalidArg).map(ToString::to_string);
            let value = e.get(ContextKind::InvalidValue).map(ToString::to_string);
            if let (Some(arg), Some(value)) = (arg, value) {
                if let Some(var) = env_of(&Cli::command(), &arg, &value) {
                    let note = format!("the value comes from the environment: {var}={value}");
                    e.insert(
                        ContextKind::Suggested,
                        ContextValue::StyledStrs(vec![note.into()]),
                    );
                }
            }
        }
        e.exit()
    })
}

/// The environment variable of the flag clap names as `arg` (`--port <PORT>`), in `cmd` or
/// any of its subcommands, when it is set to `value`.
fn env_of(cmd: &clap::Command, arg: &str, value: &str) -> Option<String> {
    let flag = arg.split(' ').next()?.strip_prefix("--")?;
    cmd.get_arguments()
        .filter(|a| a.get_long() == Some(flag))
        .filter_map(|a| a.get_env())
        .find(|var| std::env::var_os(var).is_some_and(|v| v == value))
        .map(|var| var.to_string_lossy().into_owned())
        .or_else(|| {
            cmd.get_subcommands()
                .find_map(|sub| env_of(sub, arg, value))
        })
}

fn main() {
    let cli = parse(&std::env::args_os().collect::<Vec<_>>());
    // A fatal error is one line on stderr in the log's format (text when the format itself
    // is refused), written directly: the log's filter must not hide it.
    let format = cli.log.resolve();
    let fatal = |message: &str, status: i32| -> ! {
        let line = format
            .clone()
            .unwrap_or(LogFormat::Text)
            .fatal_line(message, std::time::SystemTime::now());
        eprintln!("{line}");
        std::process::exit(status);
    };
    if let Err(e) = format.clone().and_then(init_logging) {
        fatal(&e, 1);
    }
    if let Ok(format) = &format {
        cli::set_log_format(*format);
    }
    let command = match cli.command {
        Some(c) => c,
        None => match parse(&["traceingest".into(), "serve".into()]).command {
            Some(c) => c,
            None => unreachable!("serve parses"),
        },
    };
    let result = match command {
        Command::Serve(args) => serve(&args),
        Command::Migrate(args) => block_on(async {
            let done = args
                .store
                .open()?
                .migrate_waiting(args.replication_wait())
                .await?;
            cli::out(format_args!("{}\n", done.to_string().trim_end()));
            if !done.is_complete() {
                // Not an error (what could be done was), but not a success either: a
                // script running `migrate` before an upgrade must not take it for done.
                cli::note(
                    "WARN",
                    format_args!(
                        "traceingest: migrate did not finish on every node of the cluster (see \
                         above); exit status 3"
                    ),
                );
                std::process::exit(3);
            }
            Ok(())
        }),
        Command::Keys { command, store } => block_on(cli::keys::run(&command, &store)),
        Command::Orgs {
            command,
            plans,
            store,
        } => block_on(cli::orgs::run(&command, &plans, &store)),
        Command::Price(args) => cli::price::run(&args),
        Command::Reprice(args) => block_on(cli::reprice::run(&args)),
        Command::Deadletter { command } => block_on(cli::deadletter::run(&command)),
    };
    if let Err(e) = result {
        // `deadletter replay` through its whole file with rows left: 3, as `migrate` that did
        // what it could; anything else: 1.
        let status = if e.downcast_ref::<cli::deadletter::PartlyDone>().is_some() {
            3
        } else {
            1
        };
        fatal(&format!("{e:#}"), status);
    }
}

/// Logs go to stderr: text for people, with colours only when stderr is a terminal (and
/// `NO_COLOR` is not set), or JSON for log shippers: one object per line with `timestamp`,
/// `level`, `target`, `message` and the event's fields at the top level. A filter in
/// `INGEST_LOG` that does not parse is an error naming it, not a silent fall back to the default.
fn init_logging(format: LogFormat) -> Result<(), String> {
    use std::io::IsTerminal as _;
    let filter = match std::env::var_os("INGEST_LOG") {
        None => tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER),
        Some(raw) => {
            let text = raw.to_string_lossy();
            tracing_subscriber::EnvFilter::try_new(&*text).map_err(|e| {
                format!(
                    "INGEST_LOG must be a log filter in tracing's syntax (e.g. info or \
                     info,traceingest=debug), got {text:?}: {e}"
                )
            })?
        }
    };
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    match format {
        LogFormat::Text => {
            let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            logs.with_ansi(colour).init();
        }
        LogFormat::Json => logs
            .json()
            .flatten_event(true)
            .with_target(true)
            .with_ansi(false)
            .init(),
    }
    Ok(())
}

fn block_on<F: std::future::Future<Output = anyhow::Result<()>>>(f: F) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start a runtime")?
        .block_on(f)
}

/// Retries `migrate` while ClickHouse is starting (or busy), up to `patience`; a schema it
/// refuses (`StoreError::worth_waiting`) ends start-up at once.
async fn migrate_when_up(store: &Store, patience: Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        match store.migrate().await {
            Ok(_) => return Ok(()),
            Err(e)
                if start.elapsed() < patience
                    && e.worth_waiting(e.code.is_none() && store.ping().await.is_ok()) =>
            {
                tracing::warn!(error = %e, "ClickHouse not ready; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => {
                return Err(anyhow::Error::new(e).context("cannot create the schema in ClickHouse"))
            }
        }
    }
}

/// `INGEST_DRAIN_DELAY_MS` after a stop was asked for: everything goes on (a SIGHUP still
/// reloads the prices) while `/ready` answers 503, until `delay` has passed or a second
/// SIGTERM/SIGINT asks for the drain at once.
fn wait_before_drain(
    signals: &mut signal_hook::iterator::Signals,
    delay: Duration,
    reload_prices: &control::PriceReload,
) {
    let until = Instant::now() + delay;
    loop {
        for signal in signals.pending() {
            if signal == SIGHUP {
                reload_prices.ask();
            } else {
                tracing::info!("a second stop signal: draining at once");
                return;
            }
        }
        let now = Instant::now();
        if now >= until {
            return;
        }
        // Only while a stop waits: a signal is seen within 50 ms.
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}

fn serve(args: &ServeArgs) -> anyhow::Result<()> {
    let mut config = args.resolve().map_err(anyhow::Error::msg)?;
    // SIGHUP asks for the pricing file again, and its default action ends the process: it is
    // caught from here, so one sent while the server starts (a migration or a key load may
    // take a while; a deploy may reload every replica) waits for the server to run. SIGTERM
    // and SIGINT are caught only once it runs: before, they end it at once, with nothing
    // accepted yet and the spool, if any, left for the next start.
    let signals =
        signal_hook::iterator::Signals::new([SIGHUP]).context("cannot install signal handlers")?;
    traceingest::server::keep_freed_memory();
    // Connections past the open-files limit would fail to be accepted and wait in the backlog
    // unanswered; under the cap they are closed at once instead. 256 descriptors are kept for
    // the spool, the log files and ClickHouse.
    match traceingest::server::raise_open_files_limit() {
        Some(limit) => {
            let room = (limit.saturating_sub(256) as usize / config.workers).max(1);
            if room < config.max_connections_per_worker {
                tracing::warn!(
                    open_files_limit = limit,
                    connections_per_worker = room,
                    configured = config.max_connections_per_worker,
                    "the open-files limit (RLIMIT_NOFILE) is below INGEST_WORKERS x \
                     INGEST_MAX_CONNECTIONS_PER_WORKER + 256; connections per worker capped \
                     to fit (raise LimitNOFILE= in a systemd unit, or ulimit -n)"
                );
                config.max_connections_per_worker = room;
            }
        }
        None => tracing::warn!("cannot read the open-files limit (RLIMIT_NOFILE)"),
    }
    match traceingest::server::memory::memory_limit() {
        Some(limit)
            if traceingest::server::memory::buffer_too_large(config.buffer_max_bytes, limit) =>
        {
            tracing::warn!(
                buffer_max_bytes = config.buffer_max_bytes,
                memory_limit = limit,
                "INGEST_BUFFER_MAX_BYTES is more than half the memory this process may use (the \
                 machine's, or its cgroup's limit if lower): under load the process may be killed \
                 for memory, losing the batches it holds in memory, accepted ones included in \
                 buffer durability mode; lower INGEST_BUFFER_MAX_BYTES or raise the limit"
            );
        }
        Some(_) => {}
        None => tracing::warn!("cannot read this process's memory limit (/proc/meminfo, cgroup)"),
    }
    let batch_limit = config.batch_limit();
    if let Some((setting, cap)) = config.body_cap_past_batch_limit() {
        tracing::warn!(
            buffer_max_bytes = config.buffer_max_bytes,
            spool_max_bytes = config.spool_max_bytes,
            batch_limit = batch_limit.bytes,
            setting,
            body_cap = cap,
            "one batch's rows may take a quarter of INGEST_BUFFER_MAX_BYTES (and in wal mode of \
             INGEST_SPOOL_MAX_BYTES), less than twice the body cap named here: bodies near it \
             may be refused with 413 batch_too_large; set INGEST_BUFFER_MAX_BYTES (in wal \
             mode INGEST_SPOOL_MAX_BYTES too) to at least 8 x the larger of INGEST_MAX_BODY_BYTES \
             and INGEST_OTLP_MAX_BODY_BYTES"
        );
    }
    // Informational: a small row bound is a choice (a small box), and batches within it are
    // served as before; but clients sending more spans in one batch are refused for good.
    let most_spans = traceingest::ingest::most_spans_in_a_body(
        config.limits.max_body_bytes,
        config.otlp_max_body_bytes,
    );
    if batch_limit.rows < most_spans {
        tracing::warn!(
            buffer_max_rows = config.buffer_max_rows,
            most_spans_in_a_body = most_spans,
            "INGEST_BUFFER_MAX_ROWS is below the spans one body within INGEST_MAX_BODY_BYTES or \
             INGEST_OTLP_MAX_BODY_BYTES can carry: a batch of more spans than it is refused \
             with 413 batch_too_large (gRPC: INVALID_ARGUMENT); raise it, or make sure clients \
             send fewer spans per batch"
        );
    }

    let prices = Arc::new(SharedPrices::builtin());
    if let Some(path) = &config.pricing_file {
        prices
            .reload_from(path)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }

    // The data directory first: a second server on it, or a disk problem, stops start-up
    // before anything is accepted; what a previous run spooled is found here.
    let _data_lock = spool::lock_data_dir(&config.data_dir)
        .with_context(|| format!("cannot use INGEST_DATA_DIR {}", config.data_dir.display()))?;
    let flush_stats = Arc::new(FlushStats::default());
    let spool_config = SpoolConfig::new(config.data_dir.join("spool"), config.spool_max_bytes);
    let mut spool = Spool::open(spool_config.clone(), flush_stats.clone())
        .with_context(|| format!("cannot open the spool in {}", spool_config.dir.display()))?;

    let store = Store::new(&config.clickhouse_url, &config.clickhouse_database)?
        .in_cluster(config.clickhouse_cluster.as_deref())?;
    let keys = KeyStore::new(&config.key_prefix);
    let accounts = Accounts::default();
    let clock = Clock::new(config.clock_offset_ms);
    if config.clock_offset_ms != 0 {
        tracing::warn!(
            offset_ms = config.clock_offset_ms,
            "INGEST_TEST_CLOCK_OFFSET_MS shifts the clock; this setting is for tests only"
        );
    }
    let mut refresher = Refresher::new(config.plans.clone());
    block_on(async {
        migrate_when_up(&store, Duration::from_secs(30)).await?;
        let n = refresher
            .refresh(&store, &keys, &accounts)
            .await
            .map_err(|e| anyhow::anyhow!("cannot load API keys and organisations: {e}"))?;
        let orgs = control::sync_usage(&store, &accounts.load(), clock.now_ms())
            .await
            .map_err(|e| anyhow::anyhow!("cannot count this month's usage: {e}"))?;
        // Every organisation was just counted: the first refresh's new ones need no count again.
        refresher.take_to_count();
        tracing::info!(
            keys = n,
            orgs_with_quota = orgs,
            default_plan = %config.plans.default_plan(),
            "key set and usage loaded"
        );
        Ok(())
    })?;

    let budget = Arc::new(MemoryBudget::new(
        config.buffer_max_rows,
        config.buffer_max_bytes,
    ));
    let mut flush_config = FlushConfig::new(&config.clickhouse_url, &config.clickhouse_database);
    flush_config.cluster = config.clickhouse_cluster.clone();
    flush_config.interval = config.flush_interval;
    flush_config.max_rows = config.flush_max_rows;
    flush_config.max_bytes = config.flush_max_bytes;
    flush_config.nice = config.flush_nice;
    flush_config.shutdown_timeout = config.shutdown_timeout;
    let stop_clock = flush_config.stop_began.clone();
    flush_config.budget = budget.clone();
    flush_config.dead_letter_dir = config.data_dir.join("deadletter");
    flush_config.dead_letter_max_bytes = config.dead_letter_max_bytes;
    flush_config.stats = flush_stats.clone();
    // buffer: workers -> flush thread. wal: workers -> write-ahead thread -> flush thread.
    let (sender, input, wal) = match config.durability {
        Durability::Buffer => {
            let (tx, input) = Input::buffer(&budget);
            let nudge = input.nudge();
            (
                Handoff::buffer(budget.clone(), tx).with_nudge(nudge),
                input,
                None,
            )
        }
        Durability::Wal => {
            let id = spool.take_next_id();
            let (tx, rx) = crossbeam_channel::unbounded();
            let (logged_tx, input) = Input::logged(&budget);
            let wal = match Writer::create(&spool_config.dir, id) {
                Ok(writer) => {
                    flush_stats
                        .spool_bytes
                        .fetch_add(writer.len(), Ordering::Relaxed);
                    flush_stats.spool_segments.fetch_add(1, Ordering::Relaxed);
                    wal::spawn(spool_config, writer, flush_stats.clone(), rx, logged_tx)
                }
                // A full disk (or quota) after a crash: start anyway, so that the spool is
                // replayed (which makes room), and refuse batches until a segment can be made.
                // Anything else (a read-only mount, no permission) is a setup to fix: stop.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) => {
                    tracing::error!(
                        error = %e,
                        dir = %spool_config.dir.display(),
                        "cannot create a write-ahead segment; batches are refused (503 \
                         storage_unavailable) until one can be, while the spool is replayed"
                    );
                    wal::spawn_without_segment(
                        spool_config,
                        id + 1,
                        flush_stats.clone(),
                        rx,
                        logged_tx,
                    )
                }
                Err(e) => return Err(e).context("cannot create a write-ahead segment"),
            }
            .context("cannot start the write-ahead thread")?;
            let nudge = input.nudge();
            (
                Handoff::wal(budget.clone(), tx).with_nudge(nudge),
                input,
                Some(wal),
            )
        }
    };
    let flusher =
        flush::spawn(flush_config, input, spool).context("cannot start the flush thread")?;

    let (listeners, addr) = runtime::bind(config.listen, config.workers)
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let (admin_listener, admin_addr) = admin::bind(config.admin)
        .with_context(|| format!("cannot listen on INGEST_ADMIN_ADDR {}", config.admin))?;
    let shared = Arc::new(Shared {
        keys,
        prices,
        draining: AtomicBool::new(false),
        stop_asked: AtomicBool::new(false),
        budget,
        flush_stats,
        metrics: Metrics::default(),
        clock,
        accounts,
        unpriced: Arc::default(),
        fleet: Arc::default(),
        config: config.clone(),
    });
    shared.metrics.add_usage(store.count_stats());

    let mut signals = signals;
    for signal in [SIGTERM, SIGINT] {
        signals
            .add_signal(signal)
            .context("cannot install signal handlers")?;
    }
    let reload_prices = Arc::new(control::PriceReload::default());
    let stop_control = Arc::new(AtomicBool::new(false));
    let control = control::spawn(
        refresher,
        store.take_kept_counts(),
        shared.clone(),
        reload_prices.clone(),
        stop_control.clone(),
    )?;
    let mut workers = runtime::spawn_workers(listeners, shared.clone(), sender)?;
    admin::spawn(admin_listener, shared.clone()).context("cannot start the admin listener")?;
    // Scripts and tests read these two lines: the public address first, then the admin one.
    // A reader gone (`serve | head -1`) must not stop the server: they are in the log too.
    let lines = format!(
        "traceingest listening on http://{addr}\ntraceingest admin on http://{admin_addr}\n"
    );
    let mut stdout = std::io::stdout().lock();
    let _ = std::io::Write::write_all(&mut stdout, lines.as_bytes())
        .and_then(|()| std::io::Write::flush(&mut stdout));
    drop(stdout);
    tracing::info!(%addr, %admin_addr, database = %config.clickhouse_database, "serving");

    for signal in signals.forever() {
        if signal == SIGHUP {
            reload_prices.ask();
            continue;
        }
        break;
    }
    shared.stop_asked.store(true, Ordering::Release);
    if !config.drain_delay.is_zero() {
        tracing::info!(
            drain_delay_ms = config.drain_delay.as_millis() as u64,
            "stop requested: /ready answers 503 from now; draining once INGEST_DRAIN_DELAY_MS \
             has passed (or at a second SIGTERM/SIGINT)"
        );
        wait_before_drain(&mut signals, config.drain_delay, &reload_prices);
    }
    tracing::info!("stop requested: draining");
    let stop_began = Instant::now();
    // The flush thread's inserts end two thirds of the timeout from here, however long the
    // workers then take: the watchdog's clock starts here too.
    let _ = stop_clock.set(stop_began);
    shared.draining.store(true, Ordering::Release);
    workers.drain();
    let timeout = config.shutdown_timeout;
    // Without its watchdog the stop still runs (the flush thread bounds its own inserts and
    // spools the rest): returning here instead would exit before the rows in memory are kept.
    if let Err(e) = std::thread::Builder::new()
        .name("stop-watchdog".into())
        .spawn(move || {
            std::thread::sleep(timeout + Duration::from_millis(500));
            tracing::error!("shutdown deadline passed; exiting with rows possibly unwritten");
            std::process::exit(2);
        })
    {
        tracing::error!(error = %e, "cannot start the stop's watchdog; stopping without it");
    }
    workers.join();
    if let Some(wal) = wal {
        wal.join()
            .map_err(|_| anyhow::anyhow!("the write-ahead thread panicked"))?;
    }
    let report = flusher
        .join()
        .map_err(|_| anyhow::anyhow!("the flush thread panicked"))?;
    // The control thread sees the flag within a second, unless it waits on ClickHouse (a key
    // load, up to its query timeout): it only reads, so the exit does not wait for that. With
    // Redis it then gives back the leases' unspent spans (one round trip of at most 1 s).
    stop_control.store(true, Ordering::Release);
    let control_wait = match config.redis_url {
        Some(_) => Duration::from_millis(2500),
        None => Duration::from_millis(1500),
    };
    let wait_until = (Instant::now() + control_wait).min(stop_began + timeout);
    while !control.is_finished() && Instant::now() < wait_until {
        std::thread::sleep(Duration::from_millis(10));
    }
    if control.is_finished() {
        let _ = control.join();
    }
    if report.rows_lost > 0 {
        anyhow::bail!(
            "{} accepted rows could be kept neither in ClickHouse nor in the spool nor in the dead-letter file (see the errors above)",
            report.rows_lost
        );
    }
    if report.spool_sync_failed && report.rows_spooled > 0 {
        anyhow::bail!(
            "{} accepted rows are in the spool ({}), but an fsync of it failed during the stop: \
             they survive a restart of the process, not necessarily a power cut or a restart of \
             the host (see the errors above)",
            report.rows_spooled,
            config.data_dir.join("spool").display()
        );
    }
    if report.rows_rejected > 0 {
        tracing::warn!(
            rows = report.rows_rejected,
            path = %config.data_dir.join("deadletter").display(),
            "rows ClickHouse refused are in the dead-letter file"
        );
    }
    tracing::info!(
        rows = report.rows_flushed,
        spooled = report.rows_spooled,
        "every accepted row is written or spooled; bye"
    );
    Ok(())
}
