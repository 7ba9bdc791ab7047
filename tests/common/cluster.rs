//! `make cluster` / `make cluster-kueue`: the test environment of
//! control_plane.rs, kept running until Ctrl-C for a person to poke at.
//!
//!   cargo run --release --example cluster -- --server BIN --config FILE [--kueue]

#[path = "control_plane.rs"]
mod control_plane;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use control_plane::{ControlPlane, EvalAdmission, Kueue};

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

    let plane = ControlPlane::start(&[])?;
    let webhook = EvalAdmission::start(&plane, &server, &config)?;
    let kueue = if with_kueue { Some(Kueue::start(&plane)?) } else { None };
    println!("control plane at {} (logs in {})", plane.url, plane.logs().display());
    println!("eval-admission on https://127.0.0.1:{} (admin http://127.0.0.1:{})", webhook.port, webhook.admin_port);
    if kueue.is_some() {
        println!("Kueue running as {}", control_plane::KUEUE_USER);
    }
    println!("export KUBECONFIG={}", plane.kubeconfig.display());
    println!("Ctrl-C stops everything.");
    // Every process goes with this one (their parent-death signal).
    let (_stop, wait) = std::sync::mpsc::channel::<()>();
    let _ = wait.recv();
    Ok(())
}
