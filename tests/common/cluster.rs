//! `make cluster` / `make cluster-kueue`: the test environment of
//! control_plane/, kept running until Ctrl-C for a person to poke at.
//!
//!   cargo run --release --example cluster -- --server BIN --config FILE [--kueue]

#[path = "control_plane/mod.rs"]
mod control_plane;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use control_plane::Environment;

fn main() -> Result<()> {
    let (mut server, mut config, mut with_kueue) = (None, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--server" => server = args.next().map(PathBuf::from),
            "--config" => config = args.next().map(PathBuf::from),
            "--kueue" => with_kueue = true,
            other => bail!("unknown argument {other}; usage: cluster --server BIN --config FILE [--kueue]"),
        }
    }
    let server = server.context("--server BIN is required")?;
    let config = config.context("--config FILE is required")?;

    let env = Environment::start(&[], &server, &config, with_kueue)?;
    println!("control plane at {} (logs in {})", env.url, env.logs().display());
    println!(
        "eval-admission on https://127.0.0.1:{} (admin http://127.0.0.1:{})",
        env.webhook.port, env.webhook.admin_port
    );
    if env.kueue.is_some() {
        println!("Kueue running as {}", control_plane::KUEUE_USER);
    }
    println!("export KUBECONFIG={}", env.kubeconfig.display());
    println!("Ctrl-C stops everything.");
    // Every process goes with this one (their parent-death signal).
    let (_stop, wait) = std::sync::mpsc::channel::<()>();
    let _ = wait.recv();
    Ok(())
}
