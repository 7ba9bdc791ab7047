//! The judge: tests/kueue/oracle (a Kueue release's scheduler in-process), built
//! by hack/build-oracle.sh and spoken to over stdin/stdout, one JSON line each way.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde::Deserialize;
use serde_json::{Value, json};

/// Kueue's answer for one scenario (the oracle's `verdict`).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct KueueVerdict {
    pub admissible: bool,
    pub stage: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub exposed: Option<bool>,
    #[serde(default)]
    pub preemptor: Option<String>,
    #[serde(default)]
    pub eviction_reason: Option<String>,
    #[serde(default, skip_serializing)]
    pub probes: u64,
    #[serde(default, skip_serializing)]
    pub error: Option<String>,
}

/// Builds (or finds, cached) the oracle of `release` (`v0.18.2`; `None`: the
/// release tests/kueue/go.mod pins) and returns its path. Builds need Go,
/// which the project machines have; the build is skipped when nothing changed.
pub fn build(release: Option<&str>) -> PathBuf {
    let repo = testkit::repo("");
    let output = Command::new(repo.join("hack/build-oracle.sh"))
        .args(release)
        .stderr(Stdio::inherit())
        .output()
        .expect("run hack/build-oracle.sh");
    assert!(output.status.success(), "hack/build-oracle.sh failed");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 path");
    PathBuf::from(stdout.lines().last().expect("the oracle's path on the last line").trim())
}

pub struct Oracle {
    child: Child,
    /// `None` once closed: the oracle's end of input, after which it exits
    /// (flushing an `ORACLE_CPUPROFILE` profile).
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Oracle {
    pub fn start(binary: &Path) -> Self {
        let mut child = Command::new(binary)
            // A sixth of its CPU was garbage collection at Go's default
            // (GOGC=100); at 400, 60 set-ups took 15 s of CPU instead of 19 s.
            .env("GOGC", std::env::var("GOGC").unwrap_or_else(|_| "400".into()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", binary.display()));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self { child, stdin: Some(stdin), stdout }
    }

    pub fn judge(&mut self, id: &str, objects: &[Value], workload: &Value) -> KueueVerdict {
        let line = json!({"id": id, "objects": objects, "workload": workload});
        let stdin = self.stdin.as_mut().expect("the oracle's input is open until drop");
        serde_json::to_writer(&mut *stdin, &line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        let read = self.stdout.read_line(&mut answer).expect("read the oracle's answer");
        assert!(read > 0, "the oracle exited on scenario {id}");
        let verdict: KueueVerdict =
            serde_json::from_str(&answer).unwrap_or_else(|e| panic!("oracle answer {answer:?}: {e}"));
        if let Some(error) = &verdict.error {
            panic!("the oracle failed on scenario {id}: {error}");
        }
        verdict
    }
}

impl Drop for Oracle {
    /// End of input first, so the oracle returns from main (and writes its
    /// CPU profile when asked); killed if it has not exited in a few seconds.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::time::Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_)) | Err(_)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
