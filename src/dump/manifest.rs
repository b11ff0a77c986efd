//! `manifest.toml`: format version, front-end, tests and the re-run recipe.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::DumpError;

/// The only dump format version this build understands.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub frontend: Frontend,
    #[serde(default)]
    pub rerun: Option<Rerun>,
    #[serde(default, rename = "test")]
    pub tests: Vec<TestCase>,
    /// Free-form extra information a front-end wants to keep (ignored by the core).
    #[serde(default)]
    pub notes: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Frontend {
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub language: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rerun {
    pub command: Vec<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Source files whose branches a re-run cannot flip (the Python front-end: app modules
    /// imported before the tracer, so not instrumented); no experiment is planned on them.
    #[serde(default)]
    pub not_flippable: Vec<String>,
    /// The warm runner (optional; same cwd and env as `command`): a server that starts the test
    /// session once and answers every run as JSON lines (`localize::cfx`'s `warm` module,
    /// docs/trace-format.md); placeholders `{dump}`, `{jobs}`. Without it every run is cold.
    #[serde(default)]
    pub serve: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Fail,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestCase {
    pub id: String,
    #[serde(default)]
    pub trace: Option<String>,
    pub outcome: Outcome,
    #[serde(default)]
    pub failure_step: Option<u32>,
    #[serde(default)]
    pub failure_kind: Option<String>,
    #[serde(default)]
    pub failure: Option<String>,
    #[serde(default)]
    pub duration_ms: Option<u64>,
    /// The trace's first `setup_steps` steps are set-up that the test shares with the others
    /// (the Python front-end: the import-time code of the modules under test). They are part of
    /// the model, but no counterfactual experiment flips them: a flip there changes what every
    /// test imports, not this test's run.
    #[serde(default)]
    pub setup_steps: Option<u32>,
}

impl Manifest {
    pub fn read(dir: &Path) -> Result<Manifest, DumpError> {
        let path = dir.join("manifest.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                DumpError::at(
                    &path,
                    0,
                    "missing manifest.toml: is this a prosecutor trace dump directory?".to_owned(),
                )
            } else {
                DumpError::at(&path, 0, format!("cannot read: {e}"))
            }
        })?;
        let manifest: Manifest = toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start].matches('\n').count() + 1)
                .unwrap_or(0);
            DumpError::at(&path, line, e.message().to_owned())
        })?;
        if manifest.format != "prosecutor-dump" {
            return Err(DumpError::at(
                &path,
                1,
                format!(
                    "format must be \"prosecutor-dump\", found {:?}",
                    manifest.format
                ),
            ));
        }
        if manifest.version != FORMAT_VERSION {
            return Err(DumpError::at(
                &path,
                line_of(&text, "version"),
                format!("unsupported dump format version {} (this build reads version {FORMAT_VERSION})", manifest.version),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for t in &manifest.tests {
            if !seen.insert(t.id.as_str()) {
                return Err(DumpError::at(
                    &path,
                    line_of(&text, &t.id),
                    format!("duplicate test id {:?}", t.id),
                ));
            }
        }
        if let Some(r) = &manifest.rerun {
            if r.command.is_empty() {
                return Err(DumpError::at(
                    &path,
                    line_of(&text, "command"),
                    "[rerun] command is empty".to_owned(),
                ));
            }
        }
        Ok(manifest)
    }
}

/// Best-effort line of the first occurrence of `needle` (for messages).
pub(crate) fn line_of(text: &str, needle: &str) -> usize {
    text.find(needle)
        .map(|p| text[..p].matches('\n').count() + 1)
        .unwrap_or(0)
}
