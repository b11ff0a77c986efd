//! The warm runner's client: one `[rerun] serve` process (the Python front-end: `flip.py
//! --serve`) starts the test session once and answers every run of a `localize` call, each in
//! a child it forks (docs/frontend-python.md "Warm runner").
//!
//! Protocol: the server's first stdout line is a handshake (`{"ready": true, ...}`, or `{"ready":
//! false, "error": ...}`); then each request, one JSON line on its stdin (`{"id", "test",
//! "stmt", "occurrence", "timeout_s"}`), gets one JSON line back (`{"id", "outcome", "flipped",
//! "detail", "duration_ms"}`), in any order. Any failure of the server itself — it does not
//! start, does not shake hands in time, exits, or leaves a request unanswered past its limit
//! plus a margin (a watchdog: a wedged server never hangs `localize`) — is an `Err` with the
//! reason; the caller then runs that experiment, and every later one, cold.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;

use super::{lock, Experiment};

/// One answer of the server.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Reply {
    #[serde(default)]
    id: Option<u64>,
    pub outcome: String,
    #[serde(default)]
    pub flipped: bool,
    #[serde(default)]
    pub detail: String,
    #[serde(default)]
    pub duration_ms: u64,
    /// `"cold"` when the server ran this request in a new process itself (a flip in import-time
    /// code, which the warm session has already run).
    #[serde(default)]
    pub runner: Option<String>,
    /// The forced set's report, when the request forced a set.
    #[serde(default)]
    pub forced: Option<serde_json::Value>,
    /// The steps patched, when the request asked for a patch.
    #[serde(default)]
    pub patched: Option<Vec<u64>>,
    /// The call that held the flip threw into the test ([`super::ExperimentResult::thrown`]).
    #[serde(default)]
    pub thrown: bool,
}

#[derive(Default)]
struct Pending {
    waiting: HashMap<u64, mpsc::Sender<Reply>>,
    /// Why the server is unusable (set once; then nothing waits any more).
    failed: Option<String>,
}

type Tail = Arc<Mutex<VecDeque<String>>>;

pub(super) struct Server {
    child: Mutex<Child>,
    stdin: Mutex<Option<ChildStdin>>,
    pending: Arc<Mutex<Pending>>,
    tail: Tail,
    next_id: AtomicU64,
}

impl Server {
    /// Starts `argv` in `cwd` with `env` added and waits up to `handshake` for it to be ready.
    pub fn start(
        argv: &[String],
        cwd: &Path,
        env: &BTreeMap<String, String>,
        handshake: Duration,
    ) -> Result<Server, String> {
        Server::spawn(argv, cwd, env)?.ready(handshake)
    }

    /// Starts `argv` in `cwd` with `env` added; [`Spawned::ready`] then waits for its handshake.
    pub fn spawn(
        argv: &[String],
        cwd: &Path,
        env: &BTreeMap<String, String>,
    ) -> Result<Spawned, String> {
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(cwd)
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", argv[0]))?;
        let (hello_tx, hello_rx) = mpsc::channel();
        let pending = Arc::new(Mutex::new(Pending::default()));
        let tail: Tail = Arc::default();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        // (not joined: a process the session started may keep a pipe open after it ends)
        spawn_reader(stdout, hello_tx, pending.clone(), tail.clone());
        spawn_tail(stderr, tail.clone());
        let server = Server {
            stdin: Mutex::new(child.stdin.take()),
            child: Mutex::new(child),
            pending,
            tail,
            next_id: AtomicU64::new(1),
        };
        Ok(Spawned { server, hello_rx })
    }

    fn handshake(&self, rx: &mpsc::Receiver<String>, limit: Duration) -> Result<(), String> {
        let line = match rx.recv_timeout(limit) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => {
                return Err(self.refuse(format!("no handshake within {} ms", limit.as_millis())))
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(self.refuse("it exited before its handshake".to_owned()))
            }
        };
        #[derive(Deserialize)]
        struct Hello {
            ready: bool,
            #[serde(default)]
            error: String,
        }
        match serde_json::from_str::<Hello>(&line) {
            Ok(h) if h.ready => Ok(()),
            Ok(h) => Err(self.refuse(format!("not ready: {}", h.error))),
            Err(_) => Err(self.refuse(format!("bad handshake: {}", clip(&line)))),
        }
    }

    /// Runs one experiment (a control run when `e.stmt` is empty) with time limit `limit`.
    pub fn request(&self, e: &Experiment, limit: Duration) -> Result<Reply, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        {
            let mut p = lock(&self.pending);
            if let Some(why) = &p.failed {
                return Err(why.clone());
            }
            p.waiting.insert(id, tx);
        }
        let mut line = serde_json::json!({
            "id": id,
            "test": e.test,
            "stmt": e.stmt,
            "occurrence": e.occurrence,
            "timeout_s": limit.as_secs_f64(),
        });
        if !e.force.is_empty() {
            line["force"] = serde_json::json!(e.force);
        }
        if let Some(dir) = &e.events {
            line["events"] = serde_json::json!(dir);
        }
        if let Some(v) = &e.values {
            line["values"] = v.clone();
        }
        if let Err(err) = self.send(&line.to_string()) {
            return Err(self.fail(format!("cannot send a request: {err}")));
        }
        let watchdog = limit + (limit / 4).max(Duration::from_secs(5));
        match rx.recv_timeout(watchdog) {
            Ok(r) => Ok(r),
            Err(RecvTimeoutError::Timeout) => Err(self.fail(format!(
                "no answer within {} ms to a run limited to {} ms",
                watchdog.as_millis(),
                limit.as_millis()
            ))),
            Err(RecvTimeoutError::Disconnected) => Err(self.reason()),
        }
    }

    fn send(&self, line: &str) -> std::io::Result<()> {
        let mut stdin = lock(&self.stdin);
        let w = stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("stdin closed"))?;
        w.write_all(line.as_bytes())?;
        w.write_all(b"\n")?;
        w.flush()
    }

    /// Marks the server unusable with `why` (unless it already is), kills it, and returns the
    /// reason every caller is given.
    fn fail(&self, why: String) -> String {
        self.stop(why, false)
    }

    /// [`Server::fail`] for a server that never got ready: `why` is the reason even when the
    /// end of its output (it exited after saying why) was seen first.
    fn refuse(&self, why: String) -> String {
        self.stop(why, true)
    }

    fn stop(&self, why: String, overwrite: bool) -> String {
        {
            let mut p = lock(&self.pending);
            if overwrite || p.failed.is_none() {
                p.failed = Some(why);
            }
            p.waiting.clear();
        }
        let mut child = lock(&self.child);
        let _ = child.kill();
        let _ = child.wait();
        self.reason()
    }

    fn reason(&self) -> String {
        let why = lock(&self.pending)
            .failed
            .clone()
            .unwrap_or_else(|| "it stopped".to_owned());
        let tail: Vec<String> = lock(&self.tail).iter().cloned().collect();
        if tail.is_empty() {
            why
        } else {
            format!("{why} (its last output: {})", tail.join(" | "))
        }
    }
}

/// A server started but not yet known to be ready (dropped: stopped, as a [`Server`] is).
pub(super) struct Spawned {
    server: Server,
    hello_rx: mpsc::Receiver<String>,
}

impl Spawned {
    /// Waits up to `limit` for the server's handshake.
    pub fn ready(self, limit: Duration) -> Result<Server, String> {
        self.server.handshake(&self.hello_rx, limit)?;
        Ok(self.server)
    }
}

impl Drop for Server {
    /// Closing its stdin ends the server (after the runs in progress); a server that does not
    /// end within 5 s is killed.
    fn drop(&mut self) {
        drop(lock(&self.stdin).take());
        use wait_timeout::ChildExt;
        let mut child = lock(&self.child);
        if !matches!(child.wait_timeout(Duration::from_secs(5)), Ok(Some(_))) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Reads the server's stdout: the handshake line to `hello`, then each reply to the request
/// waiting for it. At the end of the stream the server is marked failed (nothing can be
/// answered any more) and every waiting request is released.
fn spawn_reader(
    out: impl std::io::Read + Send + 'static,
    hello: mpsc::Sender<String>,
    pending: Arc<Mutex<Pending>>,
    tail: Tail,
) {
    std::thread::spawn(move || {
        let mut lines = BufReader::new(out).lines();
        if let Some(Ok(first)) = lines.next() {
            let _ = hello.send(first);
        }
        drop(hello);
        for line in lines.map_while(Result::ok) {
            dispatch(&line, &pending, &tail);
        }
        let mut p = lock(&pending);
        if p.failed.is_none() {
            p.failed = Some("it exited".to_owned());
        }
        p.waiting.clear();
    });
}

fn dispatch(line: &str, pending: &Mutex<Pending>, tail: &Tail) {
    match serde_json::from_str::<Reply>(line) {
        Ok(r) => {
            let tx = r.id.and_then(|id| lock(pending).waiting.remove(&id));
            if let Some(tx) = tx {
                let _ = tx.send(r);
            }
        }
        Err(_) => push_tail(tail, format!("(not a reply) {}", clip(line))),
    }
}

fn spawn_tail(err: impl std::io::Read + Send + 'static, tail: Tail) {
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if !line.trim().is_empty() {
                push_tail(&tail, clip(&line));
            }
        }
    });
}

fn push_tail(tail: &Tail, line: String) {
    let mut t = lock(tail);
    t.push_back(line);
    while t.len() > 3 {
        t.pop_front();
    }
}

fn clip(s: &str) -> String {
    s.trim().chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn experiment(test: &str) -> Experiment {
        Experiment {
            id: 0,
            test: test.into(),
            trace: "t".into(),
            step: 0,
            stmt: "a.py:1:0".into(),
            occurrence: 1,
            file: "a.py".into(),
            line: 1,
            text: "if x:".into(),
            score: 0.5,
            force: Vec::new(),
            events: None,
            values: None,
        }
    }

    /// A server that is the POSIX shell running `script`.
    fn sh(script: &str, handshake: Duration) -> Result<Server, String> {
        let argv = ["sh", "-c", script].map(str::to_owned);
        Server::start(&argv, Path::new("."), &BTreeMap::new(), handshake)
    }

    const READY: &str = r#"echo '{"ready": true}'"#;

    #[test]
    fn a_server_that_does_not_start_says_why() {
        let long = Duration::from_secs(30);
        let e = sh(r#"echo '{"ready": false, "error": "no os.fork"}'"#, long).err();
        assert_eq!(e.as_deref(), Some("not ready: no os.fork"));
        let e = sh("echo oops >&2; exit 3", long).err().unwrap();
        assert!(e.starts_with("it exited before its handshake"), "{e}");
        let e = sh("echo hello", long).err().unwrap();
        assert!(e.starts_with("bad handshake: hello"), "{e}");
        let e = sh("exec sleep 30", Duration::from_millis(300)).err();
        assert_eq!(e.as_deref(), Some("no handshake within 300 ms"));
        let argv = ["/nonexistent/prosecutor-server".to_owned()];
        let e = Server::start(&argv, Path::new("."), &BTreeMap::new(), long).err();
        assert!(e.unwrap().starts_with("cannot start"));
    }

    /// Answers come in any order and go to the request with their id.
    #[test]
    fn answers_reach_their_requests_in_any_order() {
        // read two requests, answer the second first
        let script = format!(
            "{READY}; read a; read b; \
             ib=$(echo \"$b\" | sed 's/.*\"id\": *\\([0-9]*\\).*/\\1/'); \
             ia=$(echo \"$a\" | sed 's/.*\"id\": *\\([0-9]*\\).*/\\1/'); \
             echo \"{{\\\"id\\\": $ib, \\\"outcome\\\": \\\"fail\\\", \\\"detail\\\": \\\"b\\\"}}\"; \
             echo 'not a reply'; \
             echo \"{{\\\"id\\\": $ia, \\\"outcome\\\": \\\"pass\\\", \\\"flipped\\\": true, \\\"detail\\\": \\\"a\\\"}}\"; \
             read c"
        );
        let s = sh(&script, Duration::from_secs(30)).unwrap();
        let limit = Duration::from_secs(30);
        let (a, b) = std::thread::scope(|sc| {
            let a = sc.spawn(|| s.request(&experiment("A"), limit));
            std::thread::sleep(Duration::from_millis(200));
            let b = sc.spawn(|| s.request(&experiment("B"), limit));
            (a.join().unwrap(), b.join().unwrap())
        });
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(
            (a.outcome.as_str(), a.flipped, a.detail.as_str()),
            ("pass", true, "a")
        );
        assert_eq!(
            (b.outcome.as_str(), b.flipped, b.detail.as_str()),
            ("fail", false, "b")
        );
    }

    /// A server that dies fails the request it was answering and every later one, with the
    /// reason and its last output.
    #[test]
    fn a_server_that_exits_fails_its_requests() {
        let s = sh(
            &format!("{READY}; read x; echo 'Fatal error' >&2; exit 1"),
            Duration::from_secs(30),
        )
        .unwrap();
        let e = s
            .request(&experiment("A"), Duration::from_secs(30))
            .unwrap_err();
        assert!(e.starts_with("it exited"), "{e}");
        let again = s
            .request(&experiment("B"), Duration::from_secs(30))
            .unwrap_err();
        assert!(again.starts_with("it exited"), "{again}");
        // (stderr is read by another thread: its line arrives soon after the exit)
        std::thread::sleep(Duration::from_millis(300));
        assert!(s.reason().contains("Fatal error"), "{}", s.reason());
    }

    /// The watchdog: a server that never answers is given up after the run's limit plus a
    /// margin (at least 5 s) and killed; `localize` does not hang on it.
    #[test]
    fn a_wedged_server_is_given_up_after_the_watchdog() {
        let s = sh(&format!("{READY}; exec sleep 120"), Duration::from_secs(30)).unwrap();
        let t0 = Instant::now();
        let e = s
            .request(&experiment("A"), Duration::from_millis(100))
            .unwrap_err();
        let took = t0.elapsed();
        assert!(
            e.starts_with("no answer within 5100 ms to a run limited to 100 ms"),
            "{e}"
        );
        assert!(
            took >= Duration::from_secs(5) && took < Duration::from_secs(60),
            "{took:?}"
        );
        let t1 = Instant::now();
        assert!(s
            .request(&experiment("B"), Duration::from_secs(60))
            .is_err());
        assert!(t1.elapsed() < Duration::from_secs(1));
        assert!(matches!(lock(&s.child).try_wait(), Ok(Some(_))), "killed");
    }
}
