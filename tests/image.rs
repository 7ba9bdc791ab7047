//! The eval-admission image hack/build-images.sh writes without Docker (for
//! the single-node Kubernetes test) against the Dockerfile it stands in for:
//! the same user, entrypoint, cmd, exposed ports and binary path as the
//! Dockerfile's final stage (parsed here, independently of the script), the
//! binary under test byte for byte, the shared libraries it loads, a
//! distroless-like /etc/passwd, and nothing else (no shell). A change to the
//! Dockerfile the builder does not follow fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

const BINARY: &str = env!("CARGO_BIN_EXE_eval-admission");
const REF: &str = "registry.local/eval-admission:test";
/// The base the builder's layer stands in for (glibc, no shell, nonroot).
const DISTROLESS_BASE: &str = "gcr.io/distroless/cc-debian12";

fn repo(path: &str) -> PathBuf {
    testkit::repo(path)
}

/// What the Dockerfile's final stage says the image is.
#[derive(Debug, Default)]
struct FinalStage {
    base: String,
    user: String,
    entrypoint: Vec<String>,
    cmd: Option<Vec<String>>,
    exposed_ports: BTreeSet<String>,
    /// Where COPY puts the eval-admission binary.
    binary: String,
}

/// Parses the instructions after the last FROM (comment lines dropped,
/// continuation lines joined, as Docker reads them).
fn final_stage(dockerfile: &str) -> FinalStage {
    let mut instructions = Vec::new();
    let mut current = String::new();
    for line in dockerfile.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                instructions.push(std::mem::take(&mut current));
            }
        }
    }
    let split = |line: &str| -> (String, String) {
        let (keyword, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        (keyword.to_ascii_uppercase(), rest.trim().to_string())
    };
    let from = instructions.iter().rposition(|line| split(line).0 == "FROM").expect("Dockerfile has no FROM");

    let exec_form = |keyword: &str, rest: &str| -> Vec<String> {
        serde_json::from_str(rest).unwrap_or_else(|e| panic!("{keyword} {rest}: not the exec (JSON) form: {e}"))
    };
    let mut stage = FinalStage::default();
    for line in &instructions[from..] {
        let (keyword, rest) = split(line);
        match keyword.as_str() {
            "FROM" => {
                stage.base = rest.split_whitespace().find(|w| !w.starts_with("--")).unwrap_or_default().to_string();
            }
            "USER" => stage.user = rest,
            "EXPOSE" => {
                for port in rest.split_whitespace() {
                    let with_protocol = if port.contains('/') { port.to_string() } else { format!("{port}/tcp") };
                    stage.exposed_ports.insert(with_protocol);
                }
            }
            "ENTRYPOINT" => stage.entrypoint = exec_form("ENTRYPOINT", &rest),
            "CMD" => stage.cmd = Some(exec_form("CMD", &rest)),
            "COPY" => {
                let words: Vec<&str> = rest.split_whitespace().filter(|w| !w.starts_with("--")).collect();
                let (dest, sources) = words.split_last().expect("COPY without arguments");
                if let Some(source) = sources.iter().find(|s| s.rsplit('/').next() == Some("eval-admission")) {
                    stage.binary = match dest.strip_suffix('/') {
                        Some(dir) => format!("{dir}/{}", source.rsplit('/').next().unwrap_or_default()),
                        None => dest.to_string(),
                    };
                }
            }
            _ => {}
        }
    }
    assert!(!stage.user.is_empty(), "the Dockerfile's final stage has no USER");
    assert!(!stage.binary.is_empty(), "the Dockerfile's final stage copies no eval-admission binary");
    stage
}

/// Runs hack/build-images.sh for the eval-admission image of the binary under
/// test, into `dir`; returns its stdout's key=value lines.
fn build_image(dir: &Path) -> BTreeMap<String, String> {
    let output = Command::new(repo("hack/build-images.sh"))
        .args(["--only", "eval-admission", BINARY])
        .env("EVAL_ADMISSION_IMAGES_DIR", dir)
        .stderr(Stdio::inherit())
        .output()
        .expect("run hack/build-images.sh");
    assert!(output.status.success(), "hack/build-images.sh failed ({})", output.status);
    String::from_utf8(output.stdout)
        .expect("UTF-8 stdout")
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

/// `tar ARGS...`, its stdout.
fn tar<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> String {
    let args: Vec<S> = args.into_iter().collect();
    let output = Command::new("tar").args(&args).output().expect("run tar");
    let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
    assert!(output.status.success(), "tar {shown:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("UTF-8 tar output")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An OCI image layout tar unpacked: its index, manifest, config and the
/// single layer, both listed and extracted.
struct Image {
    _dir: tempfile::TempDir,
    index: Value,
    config: Value,
    /// Layer entries, relative, without a trailing slash.
    entries: BTreeSet<String>,
    rootfs: PathBuf,
}

impl Image {
    fn open(archive: &Path) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let layout = dir.path().join("layout");
        let rootfs = dir.path().join("rootfs");
        std::fs::create_dir_all(&layout).unwrap();
        std::fs::create_dir_all(&rootfs).unwrap();
        tar([OsStr::new("-xf"), archive.as_os_str(), OsStr::new("-C"), layout.as_os_str()]);

        let blob = |descriptor: &Value| {
            let digest = descriptor["digest"].as_str().expect("descriptor digest");
            layout.join("blobs/sha256").join(digest.strip_prefix("sha256:").expect("sha256 digest"))
        };
        let index = read_json(&layout.join("index.json"));
        let manifests = index["manifests"].as_array().expect("index.json manifests");
        assert_eq!(manifests.len(), 1, "one manifest in index.json: {index}");
        let manifest = read_json(&blob(&manifests[0]));
        let config = read_json(&blob(&manifest["config"]));
        let layers = manifest["layers"].as_array().expect("manifest layers");
        assert_eq!(layers.len(), 1, "one layer: {manifest}");
        let layer = blob(&layers[0]);

        let entries = tar([OsStr::new("-tzf"), layer.as_os_str()])
            .lines()
            .map(|entry| entry.trim_start_matches("./").trim_end_matches('/').to_string())
            .filter(|entry| !entry.is_empty())
            .collect();
        tar([
            OsStr::new("--no-same-owner"),
            OsStr::new("-xzf"),
            layer.as_os_str(),
            OsStr::new("-C"),
            rootfs.as_os_str(),
        ]);
        Self { _dir: dir, index, config, entries, rootfs }
    }

    /// A path in the image ("/etc/passwd") on the host.
    fn path(&self, path: &str) -> PathBuf {
        self.rootfs.join(path.trim_start_matches('/'))
    }

    fn contains(&self, path: &str) -> bool {
        self.entries.contains(path.trim_start_matches('/'))
    }

    fn read(&self, path: &str) -> Vec<u8> {
        std::fs::read(self.path(path)).unwrap_or_else(|e| panic!("{path} in the image: {e}"))
    }
}

/// The absolute paths `ldd` names for `binary`: its shared libraries and the
/// dynamic loader.
fn shared_libraries(binary: &str) -> Vec<String> {
    let output = Command::new("ldd").arg(binary).output().expect("run ldd");
    assert!(output.status.success(), "ldd {binary}: {}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 ldd output");
    assert!(!stdout.contains("not found"), "ldd {binary}:\n{stdout}");
    stdout
        .lines()
        .filter_map(|line| {
            let path = match line.split_once("=>") {
                Some((_, resolved)) => resolved.split_whitespace().next()?,
                None => line.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| path.to_string())
        })
        .collect()
}

/// `name:x:id:...` lines of /etc/passwd or /etc/group as (name, id).
fn id_entries(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.len() >= 3).then(|| (fields[0].to_string(), fields[2].to_string()))
        })
        .collect()
}

#[test]
fn image_is_what_the_dockerfile_says() {
    let stage = final_stage(&std::fs::read_to_string(repo("Dockerfile")).expect("read Dockerfile"));
    assert!(
        stage.base.starts_with(DISTROLESS_BASE),
        "the Dockerfile's base is {}: the layer hack/build-images.sh writes stands in for {DISTROLESS_BASE}",
        stage.base
    );
    let out = tempfile::tempdir().expect("tempdir");
    let outputs = build_image(out.path());
    assert_eq!(outputs.get("eval_admission_ref").map(String::as_str), Some(REF), "{outputs:?}");
    let image = Image::open(Path::new(&outputs["eval_admission_image"]));

    // What containerd needs to import it under its name, for this platform.
    let descriptor = &image.index["manifests"][0];
    assert_eq!(descriptor["annotations"]["io.containerd.image.name"], REF, "{}", image.index);
    assert_eq!(descriptor["platform"]["os"], "linux");
    assert_eq!(descriptor["platform"]["architecture"], "amd64");
    assert_eq!(image.config["os"], "linux");
    assert_eq!(image.config["architecture"], "amd64");

    // The Dockerfile's facts.
    let config = &image.config["config"];
    assert_eq!(config["User"], stage.user.as_str(), "USER");
    assert_eq!(config["Entrypoint"], serde_json::json!(stage.entrypoint), "ENTRYPOINT");
    assert_eq!(config["Cmd"], serde_json::json!(stage.cmd), "CMD");
    let exposed: BTreeSet<String> =
        config["ExposedPorts"].as_object().map(|ports| ports.keys().cloned().collect()).unwrap_or_default();
    assert_eq!(exposed, stage.exposed_ports, "EXPOSE");

    // The binary under test, where COPY puts it, and what it loads.
    let binary = std::fs::read(BINARY).expect("read the binary under test");
    assert!(image.read(&stage.binary) == binary, "{} in the image is not {BINARY}", stage.binary);
    let libraries = shared_libraries(BINARY);
    assert!(libraries.iter().any(|lib| lib.contains("libc.so")), "ldd names no libc: {libraries:?}");
    for lib in &libraries {
        assert!(image.contains(lib), "{lib} (from ldd) is not in the image: {:?}", image.entries);
        assert!(std::fs::symlink_metadata(image.path(lib)).unwrap().is_file(), "{lib} is not a regular file");
        assert!(image.read(lib) == std::fs::read(lib).unwrap(), "{lib} in the image is not the host's");
    }

    // Nothing else: no shell, no tools; only the binary, its libraries and
    // the files distroless has in /etc.
    for shell in ["bin/sh", "usr/bin/sh", "bin/bash", "bin/busybox"] {
        assert!(!image.contains(shell), "{shell} in the image");
    }
    let expected_files: BTreeSet<String> = [stage.binary.as_str(), "/etc/passwd", "/etc/group", "/etc/nsswitch.conf"]
        .into_iter()
        .map(str::to_string)
        .chain(libraries.iter().cloned())
        .map(|path| path.trim_start_matches('/').to_string())
        .collect();
    let files: BTreeSet<String> = image.entries.iter().filter(|entry| !image.path(entry).is_dir()).cloned().collect();
    assert_eq!(files, expected_files, "files in the image");

    // distroless's nonroot user, and the user (and group) USER names exist.
    let passwd = id_entries(&String::from_utf8(image.read("/etc/passwd")).unwrap());
    let group = id_entries(&String::from_utf8(image.read("/etc/group")).unwrap());
    assert!(passwd.contains(&("nonroot".to_string(), "65532".to_string())), "/etc/passwd: {passwd:?}");
    assert!(passwd.contains(&("root".to_string(), "0".to_string())), "/etc/passwd: {passwd:?}");
    let (user, user_group) = stage.user.split_once(':').map_or((stage.user.as_str(), None), |(u, g)| (u, Some(g)));
    assert!(
        passwd.iter().any(|(name, id)| name == user || id == user),
        "USER {}: {user} is not in the image's /etc/passwd {passwd:?}",
        stage.user
    );
    if let Some(user_group) = user_group {
        assert!(
            group.iter().any(|(name, id)| name == user_group || id == user_group),
            "USER {}: group {user_group} is not in the image's /etc/group {group:?}",
            stage.user
        );
    }
}

/// The digest of the manifest an image layout tar's index.json names.
fn manifest_digest(archive: &Path) -> String {
    let index: Value = serde_json::from_str(&tar([OsStr::new("-xOf"), archive.as_os_str(), OsStr::new("index.json")]))
        .expect("index.json");
    index["manifests"][0]["digest"].as_str().expect("manifest digest").to_string()
}

#[test]
fn image_build_is_deterministic() {
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let [a, b] = [first.path(), second.path()].map(|dir| PathBuf::from(&build_image(dir)["eval_admission_image"]));
    assert_eq!(manifest_digest(&a), manifest_digest(&b), "two builds of the same inputs, two manifest digests");
    assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(), "two builds of the same inputs, two archives");
}
