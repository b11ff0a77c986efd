//! The warm runner started while the traced run runs (`localize --src SRC -- TEST COMMAND` with
//! experiments to follow): its session's start-up (interpreter, pytest, imports through the
//! instrumenting hook, collection) then overlaps the traced run instead of following it.
//!
//! The traced run as it forks the plain pass (`PROSECUTOR_SERVE_PREVIEW=fork`), or a plain run
//! of its own as its session ends, or without a plain run before it the traced run at configure
//! time (`PROSECUTOR_SERVE_PREVIEW=1`) writes [`PREVIEW`] into the dump
//! directory: the serve command, cwd and environment the traced run's manifest's `[rerun]`
//! section will give, and `rerun.json` without its per-test entries (docs/frontend-python.md
//! "Warm runner"). [`watch`] starts the server from it as soon as it appears. The runner of the
//! experiments takes that server only if the dump's final `[rerun]` section asks for the very
//! same command, cwd and environment ([`Slot::take`]) and the server shakes hands; otherwise,
//! or when no experiment runs, the early server is stopped and the runner starts its own as
//! without it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;

use super::{lock, warm};

/// The preview file the traced run writes into the dump directory (removed once read).
pub const PREVIEW: &str = ".prosecutor-serve.json";

/// How often [`watch`] looks for the preview.
const POLL: Duration = Duration::from_millis(20);

#[derive(Deserialize)]
struct Preview {
    serve: Vec<String>,
    cwd: String,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

/// A server started early, and what it was started as.
pub(super) struct Early {
    argv: Vec<String>,
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    pub(super) spawned: warm::Spawned,
}

/// Where the early server waits for the runner (shared: `RunOptions` is cloned).
#[derive(Clone, Default)]
pub struct Slot(Arc<Mutex<Option<Early>>>);

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let started = lock(&self.0).is_some();
        write!(f, "Slot({})", if started { "started" } else { "empty" })
    }
}

impl Slot {
    /// The early server, if it was started as `argv` in `cwd` with `env`; a server started
    /// differently is stopped (dropped) here.
    pub(super) fn take(
        &self,
        argv: &[String],
        cwd: &Path,
        env: &BTreeMap<String, String>,
    ) -> Option<Early> {
        let early = lock(&self.0).take()?;
        (early.argv == argv && early.cwd == cwd && &early.env == env).then_some(early)
    }
}

/// Waits for the traced run's preview in `dump` until `done()` (the traced run has ended), then
/// starts the warm runner it describes (`{jobs}` → `jobs`, `{dump}` → the dump directory) into
/// `slot`. Starts nothing when no preview appears or the server cannot be started (the runner
/// then starts one itself, as without an early start).
pub fn watch(dump: &Path, jobs: usize, slot: &Slot, done: impl Fn() -> bool) {
    let path = dump.join(PREVIEW);
    let preview = loop {
        let finished = done();
        if let Some(p) = read(&path) {
            break p;
        }
        if finished {
            return;
        }
        std::thread::sleep(POLL);
    };
    let _ = std::fs::remove_file(&path);
    let Ok(dir) = std::fs::canonicalize(dump) else {
        return;
    };
    let argv = super::serve_command(&preview.serve, jobs, &dir);
    let cwd = PathBuf::from(&preview.cwd);
    if argv.is_empty() {
        return;
    }
    if let Ok(spawned) = warm::Server::spawn(&argv, &cwd, &preview.env) {
        *lock(&slot.0) = Some(Early {
            argv,
            cwd,
            env: preview.env,
            spawned,
        });
    }
}

fn read(path: &Path) -> Option<Preview> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}
