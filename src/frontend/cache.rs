//! The content-addressed cache the front-ends install their embedded code into.
//!
//! A front-end's code is embedded in the binary (`include_str!`) and written once per content
//! hash into `$XDG_CACHE_HOME/prosecutor/<front-end>/<hash>/` (else `~/.cache/prosecutor/...`,
//! else the temp dir). A directory there is built in a fresh temporary directory beside it and
//! renamed into place, so a process sees either no directory or a whole one: two processes (or
//! threads) installing at once both succeed, one rename wins and the other's copy is dropped.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// `prosecutor/<frontend>` under the user's cache directory.
pub fn root(frontend: &str) -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|s| !s.is_empty()) {
        return PathBuf::from(x).join("prosecutor").join(frontend);
    }
    if let Some(h) = std::env::var_os("HOME").filter(|s| !s.is_empty()) {
        return PathBuf::from(h)
            .join(".cache")
            .join("prosecutor")
            .join(frontend);
    }
    std::env::temp_dir().join("prosecutor-cache").join(frontend)
}

/// 64-bit FNV-1a: the cache key of embedded files (not cryptographic; it only has to change
/// when they do).
#[derive(Debug, Clone, Copy)]
pub struct Hash(u64);

impl Default for Hash {
    fn default() -> Self {
        Hash(0xcbf29ce484222325)
    }
}

impl Hash {
    pub fn bytes(mut self, bytes: &[u8]) -> Self {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x100000001b3);
        }
        self
    }

    /// Every (name, contents) pair, each field followed by a NUL.
    pub fn files(self, files: &[(&str, &str)]) -> Self {
        files.iter().fold(self, |h, (name, text)| {
            h.bytes(name.as_bytes())
                .bytes(&[0])
                .bytes(text.as_bytes())
                .bytes(&[0])
        })
    }

    /// The directory name: 16 hex digits.
    pub fn hex(self) -> String {
        format!("{:016x}", self.0)
    }
}

/// Whether `dir` holds exactly the files `files` (names relative to `dir`).
pub fn has_files(dir: &Path, files: &[(&str, &str)]) -> bool {
    files.iter().all(|(name, text)| {
        std::fs::read_to_string(dir.join(name))
            .map(|t| t == *text)
            .unwrap_or(false)
    })
}

/// Writes `files` (names relative to `dir`, parent directories created).
pub fn write_files(dir: &Path, files: &[(&str, &str)]) -> Result<(), (PathBuf, io::Error)> {
    for (name, text) in files {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| (parent.to_path_buf(), e))?;
        }
        std::fs::write(&p, text).map_err(|e| (p.clone(), e))?;
    }
    Ok(())
}

/// One install at a time in this process: `eval`'s parallel cases build a directory once
/// instead of once per thread (other processes are kept apart by the rename).
static INSTALLING: Mutex<()> = Mutex::new(());

/// The directory `root/key`, built by `build` unless `complete` says it is there already.
/// `build` fills a fresh empty directory (a temporary one beside the target, renamed into
/// place when `build` succeeds, removed when it fails); an incomplete directory left at the
/// target (an older copy someone half deleted) is replaced. `io_err` turns a file-system error
/// on a path into the caller's error.
pub fn install<E>(
    root: &Path,
    key: &str,
    complete: impl Fn(&Path) -> bool,
    build: impl FnOnce(&Path) -> Result<(), E>,
    io_err: impl Fn(&Path, io::Error) -> E,
) -> Result<PathBuf, E> {
    let dir = root.join(key);
    if complete(&dir) {
        return Ok(dir);
    }
    let _guard = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if complete(&dir) {
        return Ok(dir);
    }
    std::fs::create_dir_all(root).map_err(|e| io_err(root, e))?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".tmp-{key}-"))
        .tempdir_in(root)
        .map_err(|e| io_err(root, e))?;
    // (dropping `tmp` removes what is left of it: everything when `build` or the rename fails)
    build(tmp.path())?;
    let mut rename = std::fs::rename(tmp.path(), &dir);
    if rename.is_err() && !complete(&dir) && dir.exists() {
        // an incomplete copy is in the way: replace it
        let _ = std::fs::remove_dir_all(&dir);
        rename = std::fs::rename(tmp.path(), &dir);
    }
    match rename {
        Ok(()) => Ok(dir),
        // another process installed it meanwhile
        Err(_) if complete(&dir) => Ok(dir),
        Err(e) => Err(io_err(&dir, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILES: &[(&str, &str)] = &[("a/x.txt", "x"), ("y.txt", "y")];

    fn err(p: &Path, e: io::Error) -> String {
        format!("{}: {e}", p.display())
    }

    #[test]
    fn hash_depends_on_names_and_contents() {
        let h = |f: &[(&str, &str)]| Hash::default().files(f).hex();
        assert_eq!(h(FILES), h(FILES));
        assert_ne!(h(FILES), h(&[("a/x.txt", "x"), ("y.txt", "z")]));
        assert_ne!(h(FILES), h(&[("a/x.txt", "xy.txt"), ("", "y")]));
        assert_eq!(h(FILES).len(), 16);
        assert_eq!(Hash::default().hex(), "cbf29ce484222325");
    }

    #[test]
    fn installs_once_and_replaces_an_incomplete_copy() {
        let root = tempfile::tempdir().unwrap();
        let key = Hash::default().files(FILES).hex();
        let build = |d: &Path| write_files(d, FILES).map_err(|(p, e)| err(&p, e));
        let complete = |d: &Path| has_files(d, FILES);
        let dir = install(root.path(), &key, complete, build, err).unwrap();
        assert_eq!(dir, root.path().join(&key));
        assert!(has_files(&dir, FILES));
        // a second install does not build
        let again = install(
            root.path(),
            &key,
            complete,
            |_| Err("built twice".to_owned()),
            err,
        );
        assert_eq!(again.unwrap(), dir);
        // a half-deleted copy is rebuilt
        std::fs::remove_file(dir.join("y.txt")).unwrap();
        assert_eq!(
            install(root.path(), &key, complete, build, err).unwrap(),
            dir
        );
        assert!(has_files(&dir, FILES));
        // a failed build leaves nothing behind
        let e = install(
            root.path(),
            "other",
            complete,
            |_| Err("no".to_owned()),
            err,
        );
        assert_eq!(e.unwrap_err(), "no");
        let left: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from(&key)]);
    }

    #[test]
    fn concurrent_installs_agree() {
        let root = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        install(
                            root.path(),
                            "k",
                            |d| has_files(d, FILES),
                            |d| write_files(d, FILES).map_err(|(p, e)| err(&p, e)),
                            err,
                        )
                        .unwrap()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(dirs.iter().all(|d| *d == root.path().join("k")));
        assert!(has_files(&dirs[0], FILES));
    }
}
