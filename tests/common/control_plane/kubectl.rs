//! kubectl against one environment.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use anyhow::{Result, ensure};
use serde_json::{Value, json};

use super::poll;

/// kubectl against one environment, as its administrator.
#[derive(Clone)]
pub struct Kubectl {
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
}

impl Kubectl {
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut child = Command::new(&self.bin)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            // A webhook that fails closed must not hang a test on a dead API server.
            .arg("--request-timeout=30s")
            .args(args)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runs kubectl");
        if let Some(input) = stdin {
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        }
        child.wait_with_output().unwrap()
    }

    /// Runs kubectl and returns stdout, or an error carrying its stderr.
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> Result<String> {
        let output = self.kubectl(args, stdin);
        ensure!(output.status.success(), "kubectl {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
        Ok(String::from_utf8(output.stdout)?)
    }

    /// Runs kubectl and returns stdout; panics with stderr when it fails.
    pub fn ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        self.run(args, stdin).unwrap_or_else(|error| panic!("{error:#}"))
    }

    /// Runs kubectl expecting a refusal; returns stderr.
    pub fn refused(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.kubectl(args, stdin);
        assert!(
            !output.status.success(),
            "kubectl {args:?} should have been refused; stdout: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        String::from_utf8(output.stderr).unwrap()
    }

    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Value {
        serde_json::from_str(&self.ok(&["get", resource, name, "-n", namespace, "-o", "json"], None)).unwrap()
    }

    /// `kubectl apply` of these objects as one List.
    pub fn apply(&self, objects: &[Value], extra: &[&str]) -> Result<String> {
        let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
        let mut args = vec!["apply", "-f", "-"];
        args.extend_from_slice(extra);
        self.run(&args, Some(&list.to_string()))
    }

    /// Polls until every CRD `which` names (`-f FOLDER`, `crd/NAME`) is
    /// Established. Not `kubectl wait`: a fresh CRD has no status yet, and
    /// kubectl then errors out instead of waiting.
    pub fn wait_established(&self, which: &[&str]) -> Result<()> {
        let mut args = vec!["get"];
        args.extend_from_slice(which);
        args.extend_from_slice(&["-o", "json"]);
        poll(
            &format!("{which:?} to be Established"),
            Duration::from_secs(120),
            Duration::from_millis(300),
            || Ok(()),
            || {
                let listed: Value = serde_json::from_str(&self.run(&args, None).ok()?).ok()?;
                let items = listed["items"].as_array().cloned().unwrap_or_else(|| vec![listed.clone()]);
                items.iter().all(|crd| condition_true(crd, "Established")).then_some(())
            },
        )
    }
}

/// True when the object's `status.conditions` has `kind` with status True.
pub fn condition_true(object: &Value, kind: &str) -> bool {
    object["status"]["conditions"]
        .as_array()
        .is_some_and(|conditions| conditions.iter().any(|c| c["type"] == kind && c["status"] == "True"))
}
