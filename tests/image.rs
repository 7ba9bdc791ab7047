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

/// The Dockerfile's instructions in order, one string each: comment and
/// empty lines dropped, continuation lines joined, as Docker reads them.
fn instructions(dockerfile: &str) -> Vec<String> {
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
    instructions
}

/// An instruction's keyword, upper case, and the rest of it.
fn split(line: &str) -> (String, String) {
    let (keyword, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    (keyword.to_ascii_uppercase(), rest.trim().to_string())
}

/// Parses the instructions after the last FROM.
fn final_stage(dockerfile: &str) -> FinalStage {
    let instructions = instructions(dockerfile);
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

/// The Dockerfile's build stage run the way `docker build` runs it, without
/// Docker: the context is assembled from the stage's COPY lines by
/// .dockerignore's rules in a directory standing in for the image's
/// filesystem, then its RUN runs with `sh -c` in its WORKDIR with the real
/// cargo, and the binary the final stage copies must come out of it. Cargo
/// loads the whole workspace (every member, and the file of every target
/// whose path it infers) even to build one binary, so a file no COPY brings
/// in fails here as it fails `docker build`.
///
/// `target/` is a link to the release builds' target dir (`CARGO_TARGET_DIR`,
/// else `$EVAL_ADMISSION_CACHE/target`), so a warm run builds only what changed. As Docker's COPY does, the copies keep their
/// modification times; but a context unlike the one the cache was last built
/// from (another clone's, say: cargo's fingerprints are relative to the
/// workspace) gets fresh ones, so cargo rebuilds this tree's crates.
mod build_stage {
    use std::collections::BTreeMap;
    use std::fs::{self, File};
    use std::hash::Hasher;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::SystemTime;

    use testkit::{crate_version, package_field};

    use super::{instructions, repo, split};

    /// A stage: the image FROM names, its name (`AS name`), and the
    /// instructions after FROM as (keyword, rest).
    struct Stage {
        from: String,
        name: Option<String>,
        body: Vec<(String, String)>,
    }

    fn stages(dockerfile: &str) -> Vec<Stage> {
        let mut stages: Vec<Stage> = Vec::new();
        for line in instructions(dockerfile) {
            let (keyword, rest) = split(&line);
            if keyword == "FROM" {
                let words: Vec<&str> = rest.split_whitespace().filter(|w| !w.starts_with("--")).collect();
                let name = match words.as_slice() {
                    [_] => None,
                    [_, as_, name] if as_.eq_ignore_ascii_case("as") => Some(name.to_string()),
                    _ => panic!("FROM {rest}: not understood"),
                };
                stages.push(Stage { from: words[0].to_string(), name, body: Vec::new() });
            } else {
                let stage = stages.last_mut().unwrap_or_else(|| panic!("Dockerfile: {keyword} before the first FROM"));
                stage.body.push((keyword, rest));
            }
        }
        stages
    }

    /// A COPY's flags (`--from=build` as ("from", "build")), sources and destination.
    fn copy_args(rest: &str) -> (BTreeMap<String, String>, Vec<String>, String) {
        assert!(
            !rest.trim_start().starts_with('['),
            "COPY {rest}: the JSON form is not reproduced here; teach the test"
        );
        let (flags, mut words): (Vec<&str>, Vec<&str>) = rest.split_whitespace().partition(|w| w.starts_with("--"));
        let flags = flags
            .iter()
            .map(|flag| {
                let flag = flag.trim_start_matches("--");
                let (key, value) = flag.split_once('=').unwrap_or((flag, ""));
                (key.to_string(), value.to_string())
            })
            .collect();
        let dest = words.pop().unwrap_or_else(|| panic!("COPY {rest}: no destination"));
        assert!(!words.is_empty(), "COPY {rest}: no source");
        (flags, words.into_iter().map(str::to_string).collect(), dest.to_string())
    }

    /// The final stage's copy of the binary from another stage: that stage's
    /// name and the path there.
    fn copied_binary(stage: &Stage) -> (String, String) {
        let copies: Vec<(String, String)> = stage
            .body
            .iter()
            .filter(|(keyword, _)| keyword == "COPY")
            .filter_map(|(_, rest)| {
                let (flags, sources, _) = copy_args(rest);
                let from = flags.get("from")?.clone();
                let source = sources.into_iter().find(|s| s.rsplit('/').next() == Some("eval-admission"))?;
                Some((from, source))
            })
            .collect();
        assert_eq!(copies.len(), 1, "the final stage copies the binary from a build stage once: {copies:?}");
        copies.into_iter().next().unwrap()
    }

    /// A path cleaned as Go's path.Clean does (Docker cleans COPY sources and
    /// .dockerignore patterns so): no empty or `.` parts, `..` resolved.
    fn clean(path: &str) -> String {
        let absolute = path.starts_with('/');
        let mut parts: Vec<&str> = Vec::new();
        for part in path.split('/') {
            match part {
                "" | "." => {}
                ".." if parts.last().is_some_and(|last| *last != "..") => {
                    parts.pop();
                }
                ".." if absolute => {}
                _ => parts.push(part),
            }
        }
        let joined = parts.join("/");
        match (absolute, joined.is_empty()) {
            (true, _) => format!("/{joined}"),
            (false, true) => ".".to_string(),
            (false, false) => joined,
        }
    }

    /// Whether `path` matches a .dockerignore pattern as moby/patternmatcher
    /// matches one: `*` any run of characters but `/`, `?` one such
    /// character, `[...]` a class, `\` escapes the next character, and `**`
    /// (with its `/` if one follows) any number of whole directories, or
    /// anything at all at the pattern's end.
    fn glob(pattern: &[char], path: &[char]) -> bool {
        match pattern {
            [] => path.is_empty(),
            ['*', '*', rest @ ..] => {
                let rest = rest.strip_prefix(&['/']).unwrap_or(rest);
                if rest.is_empty() {
                    return true;
                }
                // `(.*/)?` then the rest.
                glob(rest, path) || (0..path.len()).any(|i| path[i] == '/' && glob(rest, &path[i + 1..]))
            }
            ['*', rest @ ..] => {
                let run = path.iter().position(|c| *c == '/').unwrap_or(path.len());
                (0..=run).any(|i| glob(rest, &path[i..]))
            }
            ['?', rest @ ..] => path.first().is_some_and(|c| *c != '/') && glob(rest, &path[1..]),
            ['[', rest @ ..] => {
                let Some(c) = path.first() else { return false };
                let (negated, mut class) = match rest {
                    ['^', class @ ..] => (true, class),
                    class => (false, class),
                };
                let mut matched = false;
                let mut first = true;
                loop {
                    let (low, after) = match class {
                        [']', after @ ..] if !first => {
                            class = after;
                            break;
                        }
                        ['\\', low, after @ ..] | [low, after @ ..] => (*low, after),
                        [] => panic!(".dockerignore: a pattern's [ is not closed"),
                    };
                    first = false;
                    let (high, after) = match after {
                        ['-', high, after @ ..] if *high != ']' => (*high, after),
                        after => (low, after),
                    };
                    matched |= (low..=high).contains(c);
                    class = after;
                }
                matched != negated && glob(class, &path[1..])
            }
            ['\\', c, rest @ ..] | [c, rest @ ..] => path.first() == Some(c) && glob(rest, &path[1..]),
        }
    }

    /// .dockerignore as Docker reads it (moby/patternmatcher): a pattern a
    /// line, `#` at the start a comment, `!` an exception, each cleaned and
    /// relative to the context's root. A path is left out when the last
    /// pattern that matches it, or one of its parent directories, is not an
    /// exception.
    struct DockerIgnore(Vec<(bool, Vec<char>)>);

    impl DockerIgnore {
        fn read(path: &Path) -> Self {
            let text = match fs::read_to_string(path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => panic!("{}: {e}", path.display()),
            };
            let patterns = text
                .lines()
                .filter(|line| !line.starts_with('#'))
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .map(|line| {
                    let (exception, pattern) =
                        line.strip_prefix('!').map_or((false, line), |pattern| (true, pattern.trim()));
                    let pattern = clean(pattern);
                    let pattern = if pattern.len() > 1 { pattern.trim_start_matches('/') } else { &pattern };
                    (exception, pattern.chars().collect())
                })
                .collect();
            Self(patterns)
        }

        /// Whether the context leaves `path` (relative, cleaned) out.
        fn excludes(&self, path: &str) -> bool {
            let path: Vec<char> = path.chars().collect();
            let parents: Vec<&[char]> =
                path.iter().enumerate().filter(|(_, c)| **c == '/').map(|(i, _)| &path[..i]).collect();
            let mut excluded = false;
            for (exception, pattern) in &self.0 {
                if glob(pattern, &path) || parents.iter().any(|parent| glob(pattern, parent)) {
                    excluded = !exception;
                }
            }
            excluded
        }
    }

    /// The files and links under `rel` in the context directory (`rel`
    /// itself if it is one) that .dockerignore lets in, relative to the
    /// context, sorted.
    fn context_files(context: &Path, rel: &str, ignore: &DockerIgnore, out: &mut Vec<String>) {
        let path = context.join(rel);
        let meta = fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if meta.is_dir() {
            let mut names: Vec<String> = fs::read_dir(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
                .map(|entry| entry.unwrap().file_name().into_string().expect("UTF-8 file name"))
                .collect();
            names.sort();
            for name in names {
                let child = if rel == "." { name } else { format!("{rel}/{name}") };
                context_files(context, &child, ignore, out);
            }
        } else if !ignore.excludes(rel) {
            out.push(rel.to_string());
        }
    }

    /// The image's filesystem as the stage builds it, under a directory of
    /// the host: the stage's WORKDIR, and what COPY and RUN put in it.
    struct Filesystem {
        root: PathBuf,
        workdir: String,
        /// Every file COPY put there (links aside), and the digest of all
        /// it put there: paths, contents, modes.
        copied: Vec<PathBuf>,
        digest: std::collections::hash_map::DefaultHasher,
    }

    impl Filesystem {
        /// A path in the image, absolute (relative ones are from WORKDIR).
        fn image_path(&self, path: &str) -> String {
            clean(&if path.starts_with('/') { path.to_string() } else { format!("{}/{path}", self.workdir) })
        }

        /// The host path of a path in the image.
        fn host(&self, path: &str) -> PathBuf {
            self.root.join(self.image_path(path).trim_start_matches('/'))
        }

        /// `COPY SOURCES... DEST` from the context, as Docker copies: a
        /// directory's contents into DEST, a file into DEST if DEST ends in
        /// `/`, is a directory or there is more than one source, else as DEST;
        /// modification times and modes kept.
        fn copy(&mut self, context: &Path, ignore: &DockerIgnore, sources: &[String], dest: &str) {
            let mut matched = Vec::new();
            for source in sources {
                let source = clean(source.trim_start_matches('/'));
                if source.contains(['*', '?', '[']) {
                    let pattern: Vec<char> = source.chars().collect();
                    let mut all = Vec::new();
                    context_files(context, ".", ignore, &mut all);
                    let hits: std::collections::BTreeSet<String> = all
                        .iter()
                        .flat_map(|file| {
                            let parts: Vec<&str> = file.split('/').collect();
                            (1..=parts.len()).map(move |n| parts[..n].join("/"))
                        })
                        .filter(|path| glob(&pattern, &path.chars().collect::<Vec<_>>()))
                        .collect();
                    assert!(!hits.is_empty(), "COPY {source}: no file in the context matches");
                    matched.extend(hits);
                } else {
                    matched.push(source);
                }
            }
            let into_dir = dest.ends_with('/') || matched.len() > 1 || self.host(dest).is_dir();
            for source in matched {
                let path = context.join(&source);
                let mut files = Vec::new();
                if path.exists() {
                    context_files(context, &source, ignore, &mut files);
                }
                assert!(
                    !files.is_empty(),
                    "COPY {source}: not found in the build context (missing, or left out by .dockerignore), \
                     as `docker build` would say"
                );
                let is_dir = fs::symlink_metadata(&path).unwrap().is_dir();
                for file in files {
                    let target = match (is_dir, into_dir) {
                        (true, _) if source == "." => self.host(dest).join(&file),
                        (true, _) => self.host(dest).join(file.strip_prefix(&format!("{source}/")).unwrap()),
                        (false, true) => self.host(dest).join(file.rsplit('/').next().unwrap()),
                        (false, false) => self.host(dest),
                    };
                    self.copy_file(&context.join(&file), &target);
                }
            }
        }

        fn copy_file(&mut self, from: &Path, to: &Path) {
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            let meta = fs::symlink_metadata(from).unwrap();
            self.digest.write(to.strip_prefix(&self.root).unwrap().as_os_str().as_encoded_bytes());
            if meta.is_symlink() {
                let link = fs::read_link(from).unwrap();
                self.digest.write(link.as_os_str().as_encoded_bytes());
                std::os::unix::fs::symlink(link, to).unwrap();
                return;
            }
            fs::copy(from, to).unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
            File::open(to).unwrap().set_modified(meta.modified().unwrap()).unwrap();
            self.digest.write(&fs::read(from).unwrap());
            self.digest.write_u32(meta.permissions().mode());
            self.copied.push(to.to_path_buf());
        }
    }

    /// `cmd` with every absolute path under one of `dirs` (top-level
    /// directories of the image, `/out`) moved under `root`.
    fn map_paths(cmd: &str, dirs: &[String], root: &Path) -> String {
        let boundary_before = |c: Option<char>| c.is_none_or(|c| c.is_whitespace() || "=:'\"(".contains(c));
        let boundary_after = |c: Option<char>| c.is_none_or(|c| c.is_whitespace() || "/'\";&|)".contains(c));
        let mut mapped = String::new();
        let mut rest = cmd;
        let mut prev = None;
        while let Some(c) = rest.chars().next() {
            let dir = dirs.iter().find(|dir| {
                rest.starts_with(dir.as_str())
                    && boundary_before(prev)
                    && boundary_after(rest[dir.len()..].chars().next())
            });
            match dir {
                Some(dir) => {
                    mapped.push_str(&root.join(dir.trim_start_matches('/')).display().to_string());
                    rest = &rest[dir.len()..];
                    prev = dir.chars().next_back();
                }
                None => {
                    mapped.push(c);
                    rest = &rest[c.len_utf8()..];
                    prev = Some(c);
                }
            }
        }
        mapped
    }

    /// `cargo`'s environment as the image gives it: none of what the cargo
    /// running this test set or was told (the target directory above all,
    /// flags, the jobserver), but where it downloads crates from.
    fn image_like_env(cmd: &mut Command) {
        let keep = |key: &str| {
            ["CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN"].contains(&key)
                || ["CARGO_NET_", "CARGO_HTTP_", "CARGO_REGISTRIES_", "CARGO_REGISTRY_"]
                    .iter()
                    .any(|p| key.starts_with(p))
        };
        for (key, _) in std::env::vars_os() {
            let Some(key) = key.to_str() else { continue };
            let cargo_or_rust = key.starts_with("CARGO") || key.starts_with("RUST");
            if (cargo_or_rust && !keep(key)) || ["MAKEFLAGS", "MFLAGS", "MAKELEVEL"].contains(&key) {
                cmd.env_remove(key);
            }
        }
    }

    /// The release builds' target dir (the Makefile's `CARGO_TARGET_DIR`):
    /// cargo keys a workspace's own crates by their paths relative to the
    /// workspace, so the copy and the tree it was copied from share every
    /// artifact, and a cold run builds the dependencies once for both.
    fn target_dir() -> PathBuf {
        std::env::var_os("CARGO_TARGET_DIR")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| cache_dir().join("target"))
    }

    fn cache_dir() -> PathBuf {
        std::env::var_os("EVAL_ADMISSION_CACHE")
            .filter(|dir| !dir.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/eval-admission"))
    }

    fn tail(text: &[u8], lines: usize) -> String {
        let text = String::from_utf8_lossy(text);
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// The build stage, and the binary the final stage copies from it.
    fn build_stage() -> (Stage, String) {
        let dockerfile = fs::read_to_string(repo("Dockerfile")).expect("read Dockerfile");
        let mut stages = stages(&dockerfile);
        let last = stages.pop().expect("Dockerfile has no FROM");
        let (name, binary) = copied_binary(&last);
        let build = stages
            .into_iter()
            .find(|stage| stage.name.as_deref() == Some(name.as_str()))
            .unwrap_or_else(|| panic!("COPY --from={name}: no stage named {name}"));
        (build, binary)
    }

    #[test]
    fn build_stage_builds_the_binary_the_image_ships() {
        let (stage, binary) = build_stage();
        let context = repo("");
        let ignore = DockerIgnore::read(&context.join(".dockerignore"));
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut image = Filesystem {
            root: tmp.path().join("root"),
            workdir: "/".to_string(),
            copied: Vec::new(),
            digest: Default::default(),
        };
        // The image's top-level directories the stage names: RUN's paths
        // under them are moved under the stand-in root.
        let mut dirs = vec![format!("/{}", binary.trim_start_matches('/').split('/').next().unwrap())];
        let mut env = BTreeMap::new();
        let mut runs = Vec::new();
        for (keyword, rest) in &stage.body {
            assert!(
                !(keyword == "WORKDIR" || keyword == "COPY") || !rest.contains('$'),
                "{keyword} {rest}: variables are not expanded here; teach the test"
            );
            match keyword.as_str() {
                "WORKDIR" => {
                    image.workdir = image.image_path(rest);
                    fs::create_dir_all(image.host(&image.workdir)).unwrap();
                }
                "COPY" => {
                    let (flags, sources, dest) = copy_args(rest);
                    assert!(
                        flags.keys().all(|flag| flag == "link" || flag == "chown" || flag == "chmod"),
                        "COPY {rest}: its flags are not reproduced here; teach the test"
                    );
                    image.copy(&context, &ignore, &sources, &dest);
                }
                "ENV" | "ARG" => {
                    for pair in rest.split_whitespace() {
                        assert!(
                            !pair.contains(['"', '\'', '$']),
                            "{keyword} {rest}: quoting or variables; teach the test"
                        );
                        match pair.split_once('=') {
                            Some((key, value)) => {
                                env.insert(key.to_string(), value.to_string());
                            }
                            None if keyword == "ARG" => {}
                            None => panic!("ENV {rest}: only the KEY=value form is reproduced here; teach the test"),
                        }
                    }
                }
                "RUN" => runs.push((image.workdir.clone(), rest.clone())),
                _ => panic!("the build stage's {keyword} is not reproduced by this test; teach it"),
            }
            if keyword == "WORKDIR" {
                let top = format!("/{}", image.workdir.trim_start_matches('/').split('/').next().unwrap());
                if top != "/" && !dirs.contains(&top) {
                    dirs.push(top);
                }
            }
        }
        assert!(!runs.is_empty(), "the build stage runs nothing");

        // The workspace's target/ is the persistent cache; one run at a time
        // uses it with the stamp of the context it was last built from.
        let cache = target_dir();
        fs::create_dir_all(&cache).unwrap();
        let lock = File::create(cache.join(".image-test.lock")).unwrap();
        lock.lock().expect("lock the image build cache");
        let stamp = cache.join(".image-test-context");
        let digest = format!("{:016x}\n", image.digest.finish());
        if fs::read_to_string(&stamp).ok().as_deref() != Some(digest.as_str()) {
            let now = SystemTime::now();
            for file in &image.copied {
                File::open(file).unwrap().set_modified(now).unwrap();
            }
        }
        let _ = fs::remove_file(&stamp);
        let target = image.host(&format!("{}/target", image.workdir));
        assert!(fs::symlink_metadata(&target).is_err(), "COPY put a target/ in the workspace");
        std::os::unix::fs::symlink(&cache, &target).unwrap();

        for (workdir, rest) in &runs {
            assert!(!rest.starts_with("--"), "RUN {rest}: its flags are not reproduced here; teach the test");
            assert!(!rest.contains("<<"), "RUN {rest}: heredocs are not reproduced here; teach the test");
            let mut cmd = if rest.starts_with('[') {
                let argv: Vec<String> =
                    serde_json::from_str(rest).unwrap_or_else(|e| panic!("RUN {rest}: not JSON: {e}"));
                let mut cmd = Command::new(map_paths(&argv[0], &dirs, &image.root));
                cmd.args(argv[1..].iter().map(|arg| map_paths(arg, &dirs, &image.root)));
                cmd
            } else {
                let mut cmd = Command::new("sh");
                cmd.arg("-c").arg(map_paths(rest, &dirs, &image.root));
                cmd
            };
            image_like_env(&mut cmd);
            let output = cmd.current_dir(image.host(workdir)).envs(&env).output().expect("run the build stage's RUN");
            assert!(
                output.status.success(),
                "the build stage's RUN {rest} failed ({}), as `docker build` would:\n{}\n{}",
                output.status,
                tail(&output.stdout, 20),
                tail(&output.stderr, 60)
            );
        }
        fs::write(&stamp, &digest).unwrap();
        drop(lock);

        // The binary the final stage copies, where it copies it from, runs
        // as this crate's.
        let built = image.host(&binary);
        let meta = fs::metadata(&built).unwrap_or_else(|e| {
            panic!("the build stage made no {binary} for the final stage's COPY --from ({}): {e}", built.display())
        });
        assert!(meta.is_file() && meta.permissions().mode() & 0o111 != 0, "{binary} is not an executable file");
        let output = Command::new(&built).arg("--version").output().expect("run the built binary");
        assert!(output.status.success(), "{binary} --version: {}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(String::from_utf8_lossy(&output.stdout), format!("eval-admission {}\n", crate_version()));
    }

    /// `[1, 95]` of `1.95-bookworm` or `1.95.0`.
    fn version_numbers(version: &str) -> Vec<u32> {
        let numeric = version.split(|c: char| !(c.is_ascii_digit() || c == '.')).next().unwrap_or_default();
        numeric.split('.').filter(|part| !part.is_empty()).map(|part| part.parse().unwrap()).collect()
    }

    /// The workspace's manifests: the root's and each member's.
    fn workspace_manifests() -> Vec<(String, String)> {
        let root = fs::read_to_string(repo("Cargo.toml")).expect("read Cargo.toml");
        let members = root
            .split_once("members")
            .and_then(|(_, rest)| rest.split_once('[')?.1.split_once(']'))
            .map(|(list, _)| list.split('"').skip(1).step_by(2).map(str::to_string).collect::<Vec<_>>())
            .unwrap_or_default();
        let mut manifests = vec![("Cargo.toml".to_string(), root)];
        for member in members.into_iter().filter(|m| m != ".") {
            assert!(!member.contains('*'), "workspace member {member}: globs are not read here; teach the test");
            let path = format!("{member}/Cargo.toml");
            let text = fs::read_to_string(repo(&path)).unwrap_or_else(|e| panic!("{path}: {e}"));
            manifests.push((path, text));
        }
        manifests
    }

    /// The build stage's Rust is at least every manifest's `rust-version`.
    #[test]
    fn build_stage_rust_is_not_older_than_rust_version() {
        let (stage, _) = build_stage();
        let image = stage.from.rsplit('/').next().unwrap();
        let (name, tag) = image.split_once(':').unwrap_or_else(|| panic!("FROM {}: no tag", stage.from));
        assert_eq!(name, "rust", "the build stage is FROM {}, not the rust image", stage.from);
        let image_rust = version_numbers(tag);
        assert!(image_rust.len() >= 2, "FROM {}: the tag names no Rust release", stage.from);
        let mut checked = 0;
        for (path, manifest) in workspace_manifests() {
            let Some(required) = package_field(&manifest, "rust-version") else { continue };
            let required_numbers = version_numbers(&required);
            // A tag without a patch release is the newest patch of its minor.
            let n = image_rust.len().min(required_numbers.len());
            assert!(
                image_rust[..n] >= required_numbers[..n],
                "FROM {}: Rust {tag} is older than {path}'s rust-version {required}",
                stage.from
            );
            checked += 1;
        }
        assert!(checked > 0, "no manifest states a rust-version");
    }

    #[test]
    fn dockerignore_patterns_match_as_docker_matches() {
        let ignore = |text: &str| {
            let dir = tempfile::tempdir().unwrap();
            fs::write(dir.path().join(".dockerignore"), text).unwrap();
            DockerIgnore::read(&dir.path().join(".dockerignore"))
        };
        let allow = ignore("*\n!src\n!tests/common/cluster.rs\n**/target\n# !target\n/certs/dev/\n*.md\n!README*.md\n");
        for (path, excluded) in [
            ("Cargo.toml", true),
            ("src", false),
            ("src/main.rs", false),
            ("src/target/x", true),
            ("tests/e2e.rs", true),
            ("tests/common/cluster.rs", false),
            ("tests/common/mod.rs", true),
            ("target/release/eval-admission", true),
            ("certs/dev/tls.key", true),
            ("README.md", false),
            ("NOTES.md", true),
        ] {
            assert_eq!(allow.excludes(path), excluded, "{path}");
        }
        let classes = ignore("a?c\n[b-d]x\n[^x]y\nz\\*\n**/deep/**\n");
        for (path, excluded) in [
            ("abc", true),
            ("a/c", false),
            ("cx", true),
            ("ex", false),
            ("ay", true),
            ("xy", false),
            ("z*", true),
            ("zz", false),
            ("a/b/deep/c", true),
            ("deep/c", true),
            ("deeper/c", false),
        ] {
            assert_eq!(classes.excludes(path), excluded, "{path}");
        }
    }

    #[test]
    fn run_paths_outside_the_workspace_are_mapped() {
        let root = Path::new("/tmp/x/root");
        let dirs = ["/out".to_string(), "/src".to_string()];
        assert_eq!(
            map_paths("cargo build && install -D target/release/a /out/a && cp /outside /src", &dirs, root),
            "cargo build && install -D target/release/a /tmp/x/root/out/a && cp /outside /tmp/x/root/src"
        );
        assert_eq!(map_paths("x=/out; ls src/out /out", &dirs, root), "x=/tmp/x/root/out; ls src/out /tmp/x/root/out");
    }
}

/// The release workflow (docs/release.md) as far as it runs without a
/// container engine: what `make image` and `make image-push` would run, and
/// the CHANGELOG's entry for the version they tag.
mod release {
    use std::process::Command;

    use testkit::crate_version;

    use super::repo;

    /// The commands `make -n ARGS` prints (nothing runs), one a line
    /// (continuation lines joined).
    fn make_dry_run(args: &[&str]) -> Vec<String> {
        let mut make = Command::new("make");
        make.args(["-n", "--no-print-directory", "-C"]).arg(repo("")).args(args);
        // The defaults, whatever the environment running the tests sets.
        for var in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL", "REGISTRY", "IMAGE", "CONTAINER_TOOL", "IMAGE_PLATFORM"] {
            make.env_remove(var);
        }
        let output = make.output().expect("run make");
        assert!(output.status.success(), "make -n {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        let printed = String::from_utf8(output.stdout).expect("UTF-8 make output");
        printed.replace("\\\n", " ").lines().map(str::to_string).collect()
    }

    /// The words of the one printed command that runs `tool verb`.
    fn command(lines: &[String], tool: &str, verb: &str) -> Vec<String> {
        let commands: Vec<Vec<String>> = lines
            .iter()
            .map(|line| line.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .filter(|words| words.len() >= 2 && words[0] == tool && words[1] == verb)
            .collect();
        assert_eq!(commands.len(), 1, "one `{tool} {verb}` among {lines:#?}");
        commands.into_iter().next().unwrap()
    }

    /// The value of `flag` (`-t X` or `-t=X`) in a command's words.
    fn flag(words: &[String], flag: &str) -> Option<String> {
        words.iter().enumerate().find_map(|(i, word)| {
            if word == flag {
                words.get(i + 1).cloned()
            } else {
                word.strip_prefix(&format!("{flag}=")).map(str::to_string)
            }
        })
    }

    #[test]
    fn make_image_tags_the_crate_version() {
        let version = crate_version();
        let build = command(&make_dry_run(&["image"]), "docker", "build");
        assert_eq!(
            flag(&build, "-t"),
            Some(format!("ghcr.io/eval-admission/eval-admission:{version}")),
            "make image: {build:?}"
        );
        assert_eq!(flag(&build, "-f").as_deref(), Some("Dockerfile"), "{build:?}");
        assert_eq!(build.last().map(String::as_str), Some("."), "the context is the repository: {build:?}");

        // A platform team's registry, with podman.
        let own = ["CONTAINER_TOOL=podman", "REGISTRY=registry.example.com/platform"];
        let build = command(&make_dry_run(&[&["image"], &own[..]].concat()), "podman", "build");
        assert_eq!(flag(&build, "-t"), Some(format!("registry.example.com/platform/eval-admission:{version}")));
    }

    #[test]
    fn make_image_push_pushes_the_tag_it_builds() {
        let version = crate_version();
        let own = ["image-push", "CONTAINER_TOOL=podman", "IMAGE=registry.example.com/team/admission"];
        let lines = make_dry_run(&own);
        let reference = format!("registry.example.com/team/admission:{version}");
        assert_eq!(flag(&command(&lines, "podman", "build"), "-t"), Some(reference.clone()));
        assert_eq!(command(&lines, "podman", "push")[2..], [reference], "{lines:#?}");
    }

    /// CHANGELOG.md (Keep a Changelog) has an Unreleased section, then one
    /// for the crate's version.
    #[test]
    fn changelog_has_the_crate_version() {
        let version = crate_version();
        let changelog = std::fs::read_to_string(repo("CHANGELOG.md")).expect("read CHANGELOG.md");
        let sections: Vec<&str> = changelog
            .lines()
            .filter_map(|line| line.strip_prefix("## [")?.split_once(']'))
            .map(|(name, _)| name)
            .collect();
        assert_eq!(sections.first(), Some(&"Unreleased"), "CHANGELOG.md's first section: {sections:?}");
        assert!(sections.contains(&version.as_str()), "CHANGELOG.md has no `## [{version}]` section: {sections:?}");
    }
}
