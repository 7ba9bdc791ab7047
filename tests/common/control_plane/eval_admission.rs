//! eval-admission serving the environment's API server, registered with the
//! shipped webhook configurations.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::{ControlPlane, Kubectl, Usage, free_port, repo};

/// eval-admission serving this environment's API server, registered with the
/// shipped webhook configurations (manifests/base/webhooks) changed only in
/// how the API server reaches it: a loopback URL and the environment's CA.
pub struct EvalAdmission {
    bin: PathBuf,
    /// The rendered webhook configurations it registers (a folder with
    /// mutating.yaml and validating.yaml).
    webhooks: PathBuf,
    config: Mutex<PathBuf>,
    kubectl: Kubectl,
    ca_bundle: String,
    pub port: u16,
    pub admin_port: u16,
    pub cert: PathBuf,
    pub key: PathBuf,
    logs: PathBuf,
    process: Mutex<Option<testkit::Served>>,
    /// Whether the server offers HTTP/2 (`--http2`, by its environment variable).
    http2: std::sync::atomic::AtomicBool,
    /// More `serve` flags, given at every (re)start.
    flags: Vec<String>,
}

impl EvalAdmission {
    /// Starts `bin serve` with the policy `config` and registers it.
    pub fn start(plane: &ControlPlane, bin: &Path, config: &Path) -> Result<Self> {
        Self::start_with(plane, bin, config, &repo("manifests/base/webhooks"))
    }

    /// [`Self::start`], registered with the configurations in `webhooks`
    /// (another profile's, e.g. manifests/redhat-kueue/webhooks).
    pub fn start_with(plane: &ControlPlane, bin: &Path, config: &Path, webhooks: &Path) -> Result<Self> {
        Self::start_with_flags(plane, bin, config, webhooks, &[])
    }

    /// [`Self::start_with`], `serve` given `flags` too (e.g. `--client-ca-file`).
    pub fn start_with_flags(
        plane: &ControlPlane,
        bin: &Path,
        config: &Path,
        webhooks: &Path,
        flags: &[&str],
    ) -> Result<Self> {
        let dir = plane.dir.join("eval-admission");
        let (cert, key) = plane.ca.issue_files(&dir, "tls", Usage::Server(&["127.0.0.1", "localhost"]))?;
        let server = Self {
            bin: bin.to_path_buf(),
            webhooks: webhooks.to_path_buf(),
            config: Mutex::new(config.to_path_buf()),
            kubectl: plane.kubectl.clone(),
            ca_bundle: plane.ca.bundle(),
            port: free_port()?,
            admin_port: free_port()?,
            cert,
            key,
            logs: plane.logs(),
            process: Mutex::new(None),
            http2: false.into(),
            flags: flags.iter().map(|flag| flag.to_string()).collect(),
        };
        server.up(None)?;
        Ok(server)
    }

    /// (Re)starts the server, with `config` from now on when given, waits for
    /// /readyz (its caches synced) and registers it.
    pub fn up(&self, config: Option<&Path>) -> Result<()> {
        self.down();
        let config = {
            let mut current = self.config.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(config) = config {
                *current = config.to_path_buf();
            }
            current.clone()
        };
        let server = testkit::Serve::new(&self.bin, &self.cert, &self.key)
            .ports(self.port, self.admin_port)
            .arg("--config")
            .arg(config)
            .args(["--shutdown-delay", "0s"])
            .args(&self.flags)
            .env("KUBECONFIG", &self.kubectl.kubeconfig)
            .env("RUST_LOG", std::env::var_os("RUST_LOG").unwrap_or_else(|| "info".into()))
            .env("EVAL_ADMISSION_HTTP2", self.http2.load(std::sync::atomic::Ordering::Relaxed).to_string())
            .log(self.log())
            .ready(testkit::Ready::Readyz, Duration::from_secs(60), Duration::from_millis(100))
            .start()?;
        *self.process.lock().unwrap_or_else(|p| p.into_inner()) = Some(server);
        self.register()
    }

    /// Restarts the server offering HTTP/2 beside HTTP/1.1, or not, when that
    /// changes. Returns whether it restarted (and so registered again).
    pub fn set_http2(&self, on: bool) -> Result<bool> {
        if self.http2.swap(on, std::sync::atomic::Ordering::Relaxed) == on {
            return Ok(false);
        }
        self.up(None).map(|()| true)
    }

    /// Stops the server (its registration stays: evaluations then fail closed).
    pub fn down(&self) {
        if let Some(mut server) = self.process.lock().unwrap_or_else(|p| p.into_inner()).take() {
            server.stop();
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.process.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(testkit::Served::pid)
    }

    /// The server's log (JSON lines), across restarts.
    pub fn log(&self) -> PathBuf {
        self.logs.join("eval-admission.log")
    }

    /// The server's log line for each review of an object named `name`, oldest first.
    pub fn reviews(&self, name: &str) -> Vec<Value> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|entry| entry["message"] == "review" && entry["name"] == name)
            .collect()
    }

    /// Its configurations (the shipped ones unless started with others), each
    /// webhook pointed at this server.
    pub fn registration(&self) -> Result<Vec<Value>> {
        ["mutating.yaml", "validating.yaml"]
            .iter()
            .map(|file| {
                let path = self.webhooks.join(file);
                let mut configuration: Value = serde_yaml::from_str(&std::fs::read_to_string(&path)?)?;
                for webhook in configuration["webhooks"].as_array_mut().context("webhooks")? {
                    let path = webhook["clientConfig"]["service"]["path"].as_str().context("service path")?.to_string();
                    webhook["clientConfig"] =
                        json!({"url": format!("https://127.0.0.1:{}{path}", self.port), "caBundle": self.ca_bundle});
                }
                Ok(configuration)
            })
            .collect()
    }

    pub fn register(&self) -> Result<()> {
        self.kubectl.apply(&self.registration()?, &[]).map(drop)
    }

    pub fn unregister(&self) -> Result<()> {
        for configuration in self.registration()? {
            let kind = configuration["kind"].as_str().context("kind")?.to_lowercase();
            let name = configuration["metadata"]["name"].as_str().context("name")?;
            self.kubectl.run(&["delete", &kind, name, "--ignore-not-found"], None)?;
        }
        Ok(())
    }
}

impl Drop for EvalAdmission {
    fn drop(&mut self) {
        self.down();
    }
}
