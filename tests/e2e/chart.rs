//! The Helm chart (charts/eval-admission): its files are copies of the
//! manifests it is rendered from, `helm lint` passes for every certificate
//! source, and `helm template` renders, for each install the kustomize tree
//! offers, the objects that install has, field for field. Helm is built from
//! its Go module (hack/build-helm.sh).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize as _;
use serde_json::Value;

use crate::common::control_plane::{build, built, static_certificates};
use crate::common::repo;

fn helm() -> PathBuf {
    built(&build("hack/build-helm.sh").unwrap(), "helm_bin").unwrap()
}

fn kubectl() -> PathBuf {
    built(&build("hack/build-tools.sh").unwrap(), "bin").unwrap().join("kubectl")
}

fn run(program: &Path, args: &[&str]) -> String {
    let output = Command::new(program).args(args).current_dir(repo(".")).output().unwrap();
    assert!(output.status.success(), "{} {args:?}: {}", program.display(), String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// The chart rendered as release `eval-admission` in `namespace`, with `values` (`helm template` flags).
fn chart(namespace: &str, values: &[&str]) -> String {
    let args =
        [&["template", "eval-admission", "charts/eval-admission", "--namespace", namespace][..], values].concat();
    run(&helm(), &args)
}

fn kustomize(folder: &str) -> String {
    run(&kubectl(), &["kustomize", folder])
}

/// The objects of a rendering by (kind, name), less what only one of the two
/// tools writes: the Namespace (Helm installs into one), Helm's own labels,
/// the config's checksum annotation (Helm's way to roll the pods on a config
/// change), the hash suffix of the ConfigMap's name (kustomize's way) and the
/// line breaks in a Secret's base64.
fn objects(yaml: &str) -> BTreeMap<(String, String), Value> {
    let mut objects = BTreeMap::new();
    for document in serde_yaml::Deserializer::from_str(yaml) {
        let mut object = Value::deserialize(document).unwrap();
        if object.is_null() || object["kind"] == "Namespace" {
            continue;
        }
        let object_is_secret = object["kind"] == "Secret";
        if let Some(labels) = object.pointer_mut("/metadata/labels").and_then(Value::as_object_mut) {
            for helm_only in [
                "helm.sh/chart",
                "app.kubernetes.io/managed-by",
                "app.kubernetes.io/instance",
                "app.kubernetes.io/version",
            ] {
                labels.remove(helm_only);
            }
        }
        if let Some(template) = object.pointer_mut("/spec/template/metadata").and_then(Value::as_object_mut) {
            let annotations = template.get_mut("annotations").and_then(Value::as_object_mut);
            if annotations.is_some_and(|annotations| {
                annotations.remove("checksum/config");
                annotations.is_empty()
            }) {
                template.remove("annotations");
            }
        }
        unhash_config_map(&mut object);
        // kustomize wraps a Secret's base64 in lines; the API server reads both alike.
        if let Some(data) = object.get_mut("data").filter(|_| object_is_secret).and_then(Value::as_object_mut) {
            for value in data.values_mut() {
                *value = value.as_str().unwrap_or_default().split_whitespace().collect::<String>().into();
            }
        }
        let key = (object["kind"].as_str().unwrap().to_string(), object["metadata"]["name"].as_str().unwrap().into());
        assert!(objects.insert(key.clone(), object).is_none(), "{key:?} twice");
    }
    objects
}

fn unhash_config_map(object: &mut Value) {
    let unhash = |name: &mut Value| {
        if name.as_str().is_some_and(|n| n.starts_with("eval-admission-config-")) {
            *name = "eval-admission-config".into();
        }
    };
    if object["kind"] == "ConfigMap" {
        unhash(&mut object["metadata"]["name"]);
    }
    if let Some(volumes) = object.pointer_mut("/spec/template/spec/volumes").and_then(Value::as_array_mut) {
        for volume in volumes {
            if let Some(config_map) = volume.get_mut("configMap") {
                unhash(&mut config_map["name"]);
            }
        }
    }
}

fn assert_same(what: &str, kustomized: &str, helm_rendered: &str) {
    let (kustomized, helm_rendered) = (objects(kustomized), objects(helm_rendered));
    let names = |objects: &BTreeMap<(String, String), Value>| objects.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&helm_rendered), names(&kustomized), "{what}: the objects");
    for (key, object) in &kustomized {
        assert_eq!(&helm_rendered[key], object, "{what}: {key:?} differs");
    }
}

#[test]
fn the_charts_files_are_copies_of_the_manifests_and_its_version_the_crates() {
    let listed = std::fs::read_to_string(repo("charts/eval-admission/files.txt")).unwrap();
    let mut copies = 0;
    for line in listed.lines().map(|line| line.split('#').next().unwrap().trim()).filter(|line| !line.is_empty()) {
        let (source, target) = line.split_once(' ').unwrap();
        let source_text = std::fs::read_to_string(repo(&format!("manifests/{source}"))).unwrap();
        let copy = std::fs::read_to_string(repo(&format!("charts/eval-admission/files/{target}"))).unwrap();
        assert!(
            copy == source_text,
            "charts/eval-admission/files/{target} is not manifests/{source}: run `make chart`"
        );
        copies += 1;
    }
    assert!(copies >= 10, "{copies}");
    let version = testkit::crate_version();
    let chart: Value =
        serde_yaml::from_str(&std::fs::read_to_string(repo("charts/eval-admission/Chart.yaml")).unwrap()).unwrap();
    assert_eq!(chart["version"], version.as_str());
    assert_eq!(chart["appVersion"], version.as_str());
}

/// Each kustomize install, and the namespace and chart values that choose
/// the same objects.
fn installs() -> Vec<(&'static str, &'static str, Vec<String>)> {
    let set = |values: &[&str]| values.iter().flat_map(|value| ["--set".to_string(), value.to_string()]).collect();
    let pair = static_certificates();
    let file = |value: &str, name: &str| {
        ["--set-file".into(), format!("certificates.static.{value}={}", pair.join(name).display())]
    };
    let ns = "eval-admission-system";
    vec![
        ("manifests", ns, vec![]),
        ("manifests/cert-manager", ns, set(&["certificates.source=cert-manager"])),
        (
            "manifests/openshift",
            ns,
            set(&["certificates.source=openshift-service-ca", "openshift=true", "kueue.profile=redhat"]),
        ),
        (
            "manifests/static-certs",
            ns,
            [
                set(&["certificates.source=static"]),
                file("tlsCrt", "tls.crt").into(),
                file("tlsKey", "tls.key").into(),
                file("caBundle", "ca.crt").into(),
            ]
            .concat(),
        ),
        ("examples/another-namespace", "evals", vec![]),
    ]
}

#[test]
fn helm_lint_passes_for_every_install() {
    for (_, namespace, values) in installs() {
        let args = [
            &["lint", "--strict", "charts/eval-admission", "--namespace", namespace][..],
            &values.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat();
        run(&helm(), &args);
    }
    // A source the chart does not know is refused, naming the ones it does.
    let output =
        Command::new(helm()).args(["template", "charts/eval-admission", "--set", "certificates.source=vault"]).output();
    let stderr = String::from_utf8_lossy(&output.as_ref().unwrap().stderr).to_string();
    assert!(!output.unwrap().status.success() && stderr.contains("self-managed, cert-manager, static"), "{stderr}");
}

#[test]
fn helm_template_renders_each_kustomize_install() {
    for (folder, namespace, values) in installs() {
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        assert_same(folder, &kustomize(folder), &chart(namespace, &values));
    }
    let monitoring = ["serviceMonitor.enabled=true", "prometheusRule.enabled=true", "grafanaDashboard.enabled=true"];
    let monitored = kustomize("manifests") + "\n---\n" + &kustomize("manifests/monitoring");
    let values: Vec<&str> = monitoring.iter().flat_map(|value| ["--set", value]).collect();
    assert_same("with monitoring", &monitored, &chart("eval-admission-system", &values));
}
