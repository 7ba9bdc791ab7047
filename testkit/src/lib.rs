//! eval-admission's test kit, shared by the tests, the benches and the
//! fidelity generator (the fuzz targets build no workloads and start
//! nothing, so they need none of it):
//!
//! - [`workload`]: Jobs and JobSets as `serde_json::Value`, in the manner of
//!   Kueue's `pkg/util/testingjobs` (`JobBuilder::evalhub("ns").queue("q").gpus(4).build()`);
//! - [`process`]: one way to start a child (dies with the test) and to wait for it;
//! - [`poll`]: polling until a deadline, and the tiny HTTP probes polls use;
//! - [`free_port`]: the port picker;
//! - [`pki`]: the test certificate authority;
//! - [`serve`]: `eval-admission serve` launched, waited for, killed on drop.
//!
//! It does not depend on the eval-admission crate: it knows the binary only by
//! the path a caller passes.

pub mod pki;
pub mod poll;
pub mod process;
pub mod serve;
pub mod workload;

use std::net::TcpListener;
use std::path::{Path, PathBuf};

pub use pki::{Ca, TestPki, Usage};
pub use poll::{http_get, http_ok, poll, wait_for};
pub use process::{Process, tail};
pub use serve::{Ready, Serve, Served};
pub use workload::{JobBuilder, JobSetBuilder};

/// A path in the repository (this crate sits in its `testkit/` folder),
/// found at run time from the package cargo runs (`CARGO_MANIFEST_DIR` of the
/// test or bench, else the working directory): builds are shared between
/// clones through one `CARGO_TARGET_DIR`, and cargo reuses a build made in
/// another clone, whose compile-time path would name that clone's files.
pub fn repo(path: &str) -> PathBuf {
    let running = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).or_else(|| std::env::current_dir().ok());
    let root = running
        .and_then(|dir| dir.ancestors().find(|dir| dir.join("testkit/Cargo.toml").is_file()).map(Path::to_path_buf));
    root.unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("testkit sits in the repository").to_path_buf()
    })
    .join(path)
}

/// The `[package]` table's `key = "value"` in a Cargo manifest's text.
pub fn package_field(manifest: &str, key: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if let Some((k, v)) = line.split_once('=')
            && in_package
            && k.trim() == key
        {
            let value = v.split('#').next().unwrap_or_default().trim();
            return Some(value.trim_matches('"').to_string());
        }
    }
    None
}

/// The eval-admission crate's version, from Cargo.toml as the tree has it now
/// (the image's tag, the chart's version and the CHANGELOG follow it).
pub fn crate_version() -> String {
    let manifest = std::fs::read_to_string(repo("Cargo.toml")).expect("read Cargo.toml");
    package_field(&manifest, "version").expect("Cargo.toml has no [package] version")
}

/// A port nothing listens on now (the kernel's pick; the tiny window before
/// the process binds it is the only race, and no two picks here collide).
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
