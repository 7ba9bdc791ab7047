//! The builders in hack/ (Go binaries and the clients' venv, cached by
//! version), and the environment's own directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, anyhow, ensure};

use super::repo;

/// Runs a builder from hack/ (it skips what its cache already has) and returns
/// the `key=value` lines it prints on stdout.
pub fn build(script: &str) -> Result<Vec<(String, PathBuf)>> {
    build_with(script, &[])
}

/// [`build`] with arguments (e.g. which release).
pub fn build_with(script: &str, args: &[&str]) -> Result<Vec<(String, PathBuf)>> {
    let output =
        Command::new(repo(script)).args(args).stderr(Stdio::inherit()).output().with_context(|| script.to_string())?;
    ensure!(output.status.success(), "{script} failed ({})", output.status);
    let stdout = String::from_utf8(output.stdout)?;
    Ok(stdout
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.to_string(), PathBuf::from(value)))
        .collect())
}

/// The venv with the real clients (EvalHub's server, the AIPerf operator),
/// installed by hack/build-clients.sh from tests/clients/.
pub fn clients_venv() -> Result<PathBuf> {
    built(&build("hack/build-clients.sh")?, "venv")
}

pub fn built(outputs: &[(String, PathBuf)], key: &str) -> Result<PathBuf> {
    outputs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .ok_or_else(|| anyhow!("the builder printed no {key}="))
}

/// A fresh directory for one environment, after removing those of test
/// processes that are gone.
pub(super) fn environment_dir() -> Result<PathBuf> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let root = std::env::temp_dir().join("eval-admission-test-env");
    std::fs::create_dir_all(&root)?;
    for entry in std::fs::read_dir(&root)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let owner = name.split('-').next().unwrap_or_default();
        if !owner.is_empty() && !Path::new("/proc").join(owner).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let dir = root.join(format!("{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("logs"))?;
    Ok(dir)
}
