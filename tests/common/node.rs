//! A real single node beside the control plane: containerd with runc and the
//! CNI bridge, kubelet, kube-proxy, kube-scheduler and kube-controller-manager,
//! so the shipped Deployment, Service and webhooks serve for real and
//! evaluation pods run after Kueue admits them.
//!
//! - Binaries come from hack/build-node.sh (kubelet and friends from the same
//!   k8s.io/kubernetes module as kube-apiserver, containerd from its Go module;
//!   runc and the CNI plugins from Debian), images from hack/build-images.sh
//!   (no image is pulled: pause, busybox and eval-admission's own, built here).
//! - It runs only inside the network namespace hack/in-node-netns.sh makes
//!   (`make e2e-node`): the API server listens on every address of that
//!   namespace, so pods reach it through the `kubernetes` Service, and
//!   kube-proxy's and the kubelet's iptables rules, the bridges and the pod
//!   network stay in it. The script also owns the clean-up that outlives the
//!   test process (containerd's shims, the pods' cgroups).
//! - How this machine differs from a usual node, each found by running it:
//!   cgroup v1 (`failCgroupV1: false`); no CAP_SYS_RESOURCE, so runc cannot
//!   lower oom_score_adj (containerd's `restrict_oom_score_adj`); no `dummy`
//!   link type, so the node's address sits on an empty bridge the script makes.

#![allow(dead_code)]

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail, ensure};
use serde_json::{Value, json};

use super::control_plane::{
    ControlPlane, Kubectl, Network, Process, Usage, build, built, condition_true, free_port, poll, repo, tail,
    webhooks_by_url,
};

/// The node's name and address (on the bridge hack/in-node-netns.sh makes).
pub const NODE_NAME: &str = "eval-node";
pub const NODE_IP: &str = "10.250.0.1";
/// The pods' addresses, on the CNI bridge.
pub const POD_CIDR: &str = "10.244.0.0/24";

/// The API server for a node: reachable from pods at the node's address, with
/// a `kubernetes` Service kube-proxy can route (its Endpoints kept by lease).
pub const NODE_NETWORK: Network = Network {
    bind: "0.0.0.0",
    advertise: NODE_IP,
    service_cidr: "10.96.0.0/24",
    service_ip: "10.96.0.1",
    endpoint_reconciler: "lease",
};

/// The flags the API server needs beside [`NODE_NETWORK`]: webhook Services
/// resolved to their endpoints (no kube-proxy in the API server's path), and
/// the kubelet dialled at its address.
pub const NODE_APISERVER_FLAGS: [&str; 2] =
    ["--enable-aggregator-routing=true", "--kubelet-preferred-address-types=InternalIP"];

/// Set by hack/in-node-netns.sh, whose namespaces a node needs around it.
const NETNS_MARKER: &str = "EVAL_ADMISSION_NODE_NETNS";

/// The images hack/build-images.sh wrote, as OCI archives, and their names.
pub struct Images {
    pub pause: String,
    pub busybox: String,
    pub eval_admission: String,
}

/// The node's processes; field order is drop order (the controllers first,
/// containerd last).
pub struct Node {
    pub images: Images,
    ctr: PathBuf,
    socket: PathBuf,
    pub pod_logs: PathBuf,
    scheduler: Process,
    controller_manager: Process,
    proxy: Process,
    kubelet: Process,
    containerd: Process,
}

impl Node {
    /// Builds (or finds cached) what a node runs and starts it against
    /// `plane`, which must have been started on [`NODE_NETWORK`] with
    /// [`NODE_APISERVER_FLAGS`]; `server` is the eval-admission binary its
    /// image is made from. Returns once the node is Ready and takes pods.
    pub fn start(plane: &ControlPlane, server: &Path) -> Result<Self> {
        ensure!(
            std::env::var_os(NETNS_MARKER).is_some(),
            "a node runs only inside hack/in-node-netns.sh's network namespace (make e2e-node)"
        );
        let outputs = build("hack/build-node.sh")?;
        let bin = built(&outputs, "node_bin")?;
        let runc = built(&outputs, "runc")?;
        let cni_bin = built(&outputs, "cni_bin")?;
        let image_outputs = build_images(server)?;

        let dir = plane.dir.join("node");
        let logs = plane.logs();
        std::fs::create_dir_all(&dir)?;

        // containerd, with runc and the CNI bridge.
        let cni_conf = dir.join("cni");
        std::fs::create_dir_all(&cni_conf)?;
        std::fs::write(
            cni_conf.join("10-pods.conflist"),
            serde_json::to_string_pretty(&json!({
                "cniVersion": "1.0.0",
                "name": "pods",
                "plugins": [
                    {"type": "bridge", "bridge": "evalpods0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
                     "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_CIDR}]],
                              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": dir.join("cni-ipam")}},
                    {"type": "loopback"},
                ],
            }))?,
        )?;
        let containerd_dir = dir.join("containerd");
        let socket = containerd_dir.join("containerd.sock");
        let containerd_config = containerd_dir.join("config.toml");
        std::fs::create_dir_all(&containerd_dir)?;
        let pause = image_name(&image_outputs, "pause_ref")?;
        std::fs::write(
            &containerd_config,
            containerd_config_toml(&containerd_dir, &pause, &runc, &cni_bin, &cni_conf),
        )?;
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let mut containerd = Process::start(
            "containerd",
            &logs,
            &bin.join("containerd"),
            &["--config".into(), containerd_config.into_os_string()],
            &[("PATH", path.clone().into())],
        )?;
        poll(
            "containerd's socket",
            Duration::from_secs(60),
            Duration::from_millis(100),
            || containerd.check_running(),
            || socket.exists().then_some(()),
        )?;
        let ctr = bin.join("ctr");
        let images = Images {
            pause,
            busybox: image_name(&image_outputs, "busybox_ref")?,
            eval_admission: image_name(&image_outputs, "eval_admission_ref")?,
        };
        for key in ["pause_image", "busybox_image", "eval_admission_image"] {
            let archive = built(&image_outputs, key)?;
            ctr_run(&ctr, &socket, &["images", "import", "--all-platforms", path_str(&archive)?])?;
        }

        // kubelet.
        let pki = dir.join("pki");
        let (serving_cert, serving_key) = plane.ca.issue_files(&pki, "kubelet", Usage::Server(&[NODE_IP]))?;
        let kubelet_kubeconfig = dir.join("kubelet.kubeconfig");
        // The Node authorizer's identity (the API server runs --authorization-mode=Node,RBAC).
        plane.ca.kubeconfig(&kubelet_kubeconfig, &plane.url, &format!("system:node:{NODE_NAME}"), "system:nodes")?;
        let pod_logs = dir.join("pod-logs");
        let (kubelet_port, kubelet_healthz) = (free_port()?, free_port()?);
        let kubelet_config = dir.join("kubelet.yaml");
        std::fs::write(
            &kubelet_config,
            serde_json::to_string_pretty(&json!({
                "apiVersion": "kubelet.config.k8s.io/v1beta1",
                "kind": "KubeletConfiguration",
                "failCgroupV1": false,
                "failSwapOn": false,
                "cgroupDriver": "cgroupfs",
                // One tree hack/in-node-netns.sh removes afterwards.
                "cgroupRoot": "/eval-admission-node",
                "containerRuntimeEndpoint": format!("unix://{}", socket.display()),
                "address": NODE_IP,
                "port": kubelet_port,
                "healthzBindAddress": "127.0.0.1",
                "healthzPort": kubelet_healthz,
                "readOnlyPort": 0,
                "tlsCertFile": serving_cert,
                "tlsPrivateKeyFile": serving_key,
                "authentication": {"anonymous": {"enabled": false}, "webhook": {"enabled": true},
                                   "x509": {"clientCAFile": plane.dir.join("pki/ca.crt")}},
                "authorization": {"mode": "Webhook"},
                "podLogsDir": pod_logs,
                "clusterDomain": "cluster.local",
                // A shared machine's disk can be nearly full: evict only when it really is.
                "evictionHard": {"nodefs.available": "1%", "imagefs.available": "1%", "memory.available": "100Mi"},
                "imageGCHighThresholdPercent": 100,
                "imageGCLowThresholdPercent": 99,
                "serializeImagePulls": false,
                // Secret volumes follow their Secret within this (1m upstream): a
                // renewed serving certificate reaches the pods in seconds.
                "syncFrequency": "10s",
            }))?,
        )?;
        let kubelet_root = dir.join("kubelet");
        std::fs::create_dir_all(&kubelet_root)?;
        let mut kubelet = Process::start(
            "kubelet",
            &logs,
            &bin.join("kubelet"),
            &[
                format!("--config={}", kubelet_config.display()),
                format!("--kubeconfig={}", kubelet_kubeconfig.display()),
                format!("--root-dir={}", kubelet_root.display()),
                format!("--hostname-override={NODE_NAME}"),
                format!("--node-ip={NODE_IP}"),
                "--v=1".into(),
            ]
            .map(OsString::from),
            &[("PATH", path.clone().into())],
        )?;

        // kube-proxy, the scheduler and the controller manager, each as the
        // user the bootstrap RBAC policy binds its role to.
        let component_kubeconfig = |name: &str, user: &str| -> Result<PathBuf> {
            let path = dir.join(format!("{name}.kubeconfig"));
            plane.ca.kubeconfig(&path, &plane.url, user, "eval-admission-test")?;
            Ok(path)
        };
        let proxy_kubeconfig = component_kubeconfig("kube-proxy", "system:kube-proxy")?;
        let mut proxy = Process::start(
            "kube-proxy",
            &logs,
            &bin.join("kube-proxy"),
            &[
                format!("--kubeconfig={}", proxy_kubeconfig.display()),
                format!("--hostname-override={NODE_NAME}"),
                "--proxy-mode=iptables".into(),
                format!("--cluster-cidr={POD_CIDR}"),
                format!("--healthz-bind-address=127.0.0.1:{}", free_port()?),
                format!("--metrics-bind-address=127.0.0.1:{}", free_port()?),
                // Leave the conntrack table's size alone (a namespace cannot set it).
                "--conntrack-max-per-core=0".into(),
                "--v=1".into(),
            ]
            .map(OsString::from),
            &[("PATH", path.into())],
        )?;
        // The two controllers, on loopback, each its own delegated authn/authz.
        let controller = |name: &str, extra: &[String]| -> Result<Process> {
            let kubeconfig = component_kubeconfig(name, &format!("system:{name}"))?;
            let mut args: Vec<OsString> = ["kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig"]
                .iter()
                .map(|flag| format!("--{flag}={}", kubeconfig.display()).into())
                .collect();
            args.extend(
                [
                    "--bind-address=127.0.0.1".into(),
                    format!("--secure-port={}", free_port()?),
                    "--leader-elect=false".into(),
                    "--v=1".into(),
                ]
                .map(OsString::from),
            );
            args.extend(extra.iter().map(OsString::from));
            Process::start(name, &logs, &bin.join(name), &args, &[])
        };
        let mut controller_manager = controller(
            "kube-controller-manager",
            &[
                "--use-service-account-credentials=true".into(),
                format!("--service-account-private-key-file={}", plane.dir.join("pki/sa.key").display()),
                format!("--root-ca-file={}", plane.dir.join("pki/ca.crt").display()),
            ],
        )?;
        let mut scheduler = controller("kube-scheduler", &[])?;

        let mut alive = || -> Result<()> {
            containerd.check_running()?;
            kubelet.check_running()?;
            proxy.check_running()?;
            controller_manager.check_running()?;
            scheduler.check_running()
        };
        poll_retrying(
            "the kubelet's /healthz",
            Duration::from_secs(120),
            Duration::from_millis(250),
            &mut alive,
            || http_body("127.0.0.1", kubelet_healthz, "/healthz").map(drop),
        )?;
        // Ready, untainted (the node lifecycle controller lifts not-ready), and
        // the default ServiceAccount made (pods are refused until it exists).
        poll_retrying(
            "the node to be Ready and take pods",
            Duration::from_secs(180),
            Duration::from_millis(500),
            &mut alive,
            || {
                let node: Value = serde_json::from_str(&plane.run(&["get", "node", NODE_NAME, "-o", "json"], None)?)?;
                let ready =
                    node["status"]["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == "Ready"));
                ensure!(condition_true(&node, "Ready"), "not Ready: {ready:?}");
                let taints = &node["spec"]["taints"];
                ensure!(taints.as_array().is_none_or(|taints| taints.is_empty()), "tainted: {taints}");
                plane.run(&["get", "serviceaccount", "default", "-n", "default"], None)?;
                Ok(())
            },
        )?;
        Ok(Self { images, ctr, socket, pod_logs, scheduler, controller_manager, proxy, kubelet, containerd })
    }

    /// Gives the image `source` (already imported) the name `target` too, as
    /// a registry push and a pull would.
    pub fn tag_image(&self, source: &str, target: &str) -> Result<()> {
        ctr_run(&self.ctr, &self.socket, &["images", "tag", "--force", source, target]).map(|_| ())
    }

    /// SIGKILL to a container's processes, as the kernel's OOM killer or a
    /// crash would end them (`containerd://ID`, from a pod's status).
    pub fn kill_container(&self, container_id: &str) -> Result<()> {
        let id = container_id.strip_prefix("containerd://").unwrap_or(container_id);
        ctr_run(&self.ctr, &self.socket, &["tasks", "kill", "--signal", "SIGKILL", "--all", id]).map(|_| ())
    }

    /// The container runtime's view, for a failure message.
    pub fn containers(&self) -> String {
        ctr_run(&self.ctr, &self.socket, &["containers", "list"]).unwrap_or_else(|error| format!("{error:#}"))
    }

    /// The kubelet's log, last `lines` lines.
    pub fn kubelet_log(&self, lines: usize) -> String {
        tail(&self.kubelet.log, lines)
    }
}

/// A pod that serves now, as [`serving_pods`] found it.
pub struct ServingPod {
    pub name: String,
    pub ip: String,
    /// The pod as listed.
    pub pod: Value,
}

impl ServingPod {
    /// The ID of its container `name` (`containerd://ID`) and how often the
    /// kubelet has restarted it.
    pub fn container(&self, name: &str) -> Result<(String, u64)> {
        let status = self.pod["status"]["containerStatuses"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|status| status["name"] == name)
            .with_context(|| format!("pod {} has no container {name}", self.name))?;
        ensure!(
            !status["state"]["running"].is_null(),
            "pod {}'s {name} is not running: {}",
            self.name,
            status["state"]
        );
        let id = status["containerID"].as_str().with_context(|| format!("pod {}'s {name} has no ID", self.name))?;
        Ok((id.to_string(), status["restartCount"].as_u64().unwrap_or_default()))
    }
}

/// The pods in `namespace` matching `selector` that serve: Running, Ready,
/// not being deleted, with an address. The only way the node tests pick a
/// pod to connect to or act on: a pod listed right after a rollout can be an
/// old one already terminating, whose address no longer routes ("No route to
/// host"), or a new one not ready yet.
pub fn serving_pods(kubectl: &Kubectl, namespace: &str, selector: &str) -> Result<Vec<ServingPod>> {
    let listed: Value =
        serde_json::from_str(&kubectl.run(&["get", "pods", "-n", namespace, "-l", selector, "-o", "json"], None)?)?;
    let Some(items) = listed["items"].as_array() else { bail!("no items in the pod list: {listed}") };
    Ok(items
        .iter()
        .filter(|pod| {
            pod["status"]["phase"] == "Running"
                && condition_true(pod, "Ready")
                && pod["metadata"]["deletionTimestamp"].is_null()
        })
        .filter_map(|pod| {
            let ip = pod["status"]["podIP"].as_str().filter(|ip| !ip.is_empty())?;
            let name = pod["metadata"]["name"].as_str()?;
            Some(ServingPod { name: name.to_string(), ip: ip.to_string(), pod: pod.clone() })
        })
        .collect())
}

/// [`poll`] for a check that reads over the network (kubectl, an HTTP GET to
/// a pod): every error is "not yet", retried until `timeout` (a read that
/// fails once, as a pod going away makes it, is not the test's answer), and
/// the timeout says what the last attempt found. A check that is not
/// satisfied yet says so as an error too, with what it saw.
pub fn poll_retrying<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    alive: impl FnMut() -> Result<()>,
    mut check: impl FnMut() -> Result<T>,
) -> Result<T> {
    let mut last = None;
    let (mut attempts, mut failed) = (0, 0);
    let result = poll(what, timeout, every, alive, || {
        attempts += 1;
        check()
            .map_err(|error| {
                failed += 1;
                last = Some(error);
            })
            .ok()
    });
    result.map_err(|error| match last {
        Some(last) => anyhow!("{error:#}; {failed} of {attempts} attempts failed, the last: {last:#}"),
        None => error,
    })
}

/// The body of `GET http://HOST:PORT/PATH` when it answers 200; anything
/// else (no route, refused, a timeout, another status) is an error naming
/// the address.
pub fn http_body(host: &str, port: u16, path: &str) -> Result<String> {
    let address: SocketAddr = format!("{host}:{port}").parse().with_context(|| format!("address {host}:{port}"))?;
    let attempt = || -> Result<String> {
        let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n")?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let (head, body) = response.split_once("\r\n\r\n").context("no end of the headers")?;
        let status = head.lines().next().unwrap_or_default();
        ensure!(status.starts_with("HTTP/1.") && status.get(9..12) == Some("200"), "answered {status:?}");
        Ok(body.to_string())
    };
    attempt().with_context(|| format!("GET http://{address}{path}"))
}

/// The images, built from `server` (hack/build-images.sh skips what is current).
fn build_images(server: &Path) -> Result<Vec<(String, PathBuf)>> {
    let output = std::process::Command::new(repo("hack/build-images.sh"))
        .arg(server)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("hack/build-images.sh")?;
    ensure!(output.status.success(), "hack/build-images.sh failed ({})", output.status);
    Ok(String::from_utf8(output.stdout)?
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.to_string(), PathBuf::from(value)))
        .collect())
}

fn image_name(outputs: &[(String, PathBuf)], key: &str) -> Result<String> {
    Ok(built(outputs, key)?.to_string_lossy().into_owned())
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str().with_context(|| format!("{} is not UTF-8", path.display()))
}

/// `ctr` in the namespace the kubelet's images and containers live in.
fn ctr_run(ctr: &Path, socket: &Path, args: &[&str]) -> Result<String> {
    let output = std::process::Command::new(ctr)
        .arg("--address")
        .arg(socket)
        .args(["--namespace", "k8s.io"])
        .args(args)
        .output()
        .with_context(|| format!("ctr {args:?}"))?;
    ensure!(
        output.status.success(),
        "ctr {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// containerd 2's configuration (version 3): every path under `dir`, the pause
/// image pinned to the one built here, runc from Debian, the CNI bridge.
fn containerd_config_toml(dir: &Path, pause: &str, runc: &Path, cni_bin: &Path, cni_conf: &Path) -> String {
    let d = |name: &str| dir.join(name).display().to_string();
    format!(
        r#"version = 3
root = "{root}"
state = "{state}"
[grpc]
  address = "{socket}"
[ttrpc]
  address = "{socket}.ttrpc"
[plugins.'io.containerd.internal.v1.opt']
  path = "{opt}"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '{pause}'
[plugins.'io.containerd.cri.v1.runtime']
  # No CAP_SYS_RESOURCE here: runc may not lower oom_score_adj.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = '{runc}'
        Root = '{runc_root}'
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['{cni_bin}']
    conf_dir = '{cni_conf}'
"#,
        root = d("root"),
        state = d("state"),
        socket = d("containerd.sock"),
        opt = d("opt"),
        runc = runc.display(),
        runc_root = d("runc"),
        cni_bin = cni_bin.display(),
        cni_conf = cni_conf.display(),
    )
}

/// The real JobSet controller (hack/build-jobset.sh builds it from its Go
/// module), out of the cluster as Kueue is: leader election and its own
/// certificate rotation off, a certificate from the environment's CA, and its
/// webhook configurations as its release installs them (config/components/webhook,
/// names prefixed `jobset-` as config/default does) pointed at loopback. Its
/// mutating webhook is not optional: it fills `spec.network`, without which
/// the controller cannot reconcile a JobSet.
pub struct JobSetController {
    kubectl: Kubectl,
    configurations: Vec<(String, String)>,
    process: Process,
}

impl JobSetController {
    pub fn start(plane: &ControlPlane) -> Result<Self> {
        let outputs = build("hack/build-jobset.sh")?;
        let bin = built(&outputs, "jobset_bin")?.join("jobset-manager");
        let webhooks = built(&outputs, "jobset_webhooks")?;
        let dir = plane.dir.join("jobset");
        let certs = dir.join("certs");
        plane.ca.issue_files(&certs, "tls", Usage::Server(&["127.0.0.1"]))?;
        let kubeconfig = dir.join("kubeconfig");
        // O=system:masters: its release ClusterRole covers Jobs, Services, Pods and Events.
        plane.ca.kubeconfig(&kubeconfig, &plane.url, "jobset-controller", "system:masters")?;
        let (webhook_port, metrics_port, health_port) = (free_port()?, free_port()?, free_port()?);
        let config = dir.join("config.yaml");
        std::fs::write(
            &config,
            serde_json::to_string_pretty(&json!({
                "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
                "kind": "Configuration",
                "leaderElection": {"leaderElect": false},
                "internalCertManagement": {"enable": false},
                "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": certs},
                "metrics": {"bindAddress": format!("127.0.0.1:{metrics_port}")},
                "health": {"healthProbeBindAddress": format!("127.0.0.1:{health_port}")},
            }))?,
        )?;
        let mut process = Process::start(
            "jobset",
            &plane.logs(),
            &bin,
            &["--config".into(), config.into_os_string(), "--zap-log-level=2".into()],
            &[("KUBECONFIG", kubeconfig.into_os_string())],
        )?;
        poll_retrying(
            "the JobSet controller's /readyz",
            Duration::from_secs(120),
            Duration::from_millis(250),
            || process.check_running(),
            || http_body("127.0.0.1", health_port, "/readyz").map(drop),
        )?;
        let objects = webhooks_by_url(
            plane,
            &webhooks,
            "jobset-",
            &format!("https://127.0.0.1:{webhook_port}"),
            &plane.ca.bundle(),
        )?;
        let configurations = objects
            .iter()
            .map(|object| -> Result<(String, String)> {
                let kind = object["kind"].as_str().context("kind")?.to_ascii_lowercase();
                Ok((kind, object["metadata"]["name"].as_str().context("name")?.to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        ensure!(objects.len() == 2, "expected JobSet's two webhook configurations, got {}", objects.len());
        plane.apply(&objects, &["--server-side", "--force-conflicts", "--field-manager=test-env"])?;
        Ok(Self { kubectl: plane.kubectl.clone(), configurations, process })
    }
}

impl Drop for JobSetController {
    /// Its webhooks fail closed: they go before the controller does.
    fn drop(&mut self) {
        for (kind, name) in &self.configurations {
            let _ = self.kubectl.run(&["delete", kind, name, "--ignore-not-found"], None);
        }
        self.process.stop();
    }
}

/// cert-manager's controller and cainjector (hack/build-cert-manager.sh builds
/// v1.11.5, the last release whose commands its Go module still ships), out
/// of the cluster, with its CRDs; no cert-manager webhook, so nothing enforces
/// its minimum durations (the renewal test relies on that).
pub struct CertManager {
    controller: Process,
    cainjector: Process,
}

impl CertManager {
    pub fn start(plane: &ControlPlane) -> Result<Self> {
        let outputs = build("hack/build-cert-manager.sh")?;
        let bin = built(&outputs, "cert_manager_bin")?;
        let crds = built(&outputs, "cert_manager_crds")?;
        let crds = path_str(&crds)?;
        plane.run(&["apply", "--server-side", "--force-conflicts", "--field-manager=test-env", "-f", crds], None)?;
        plane.wait_established(&["-f", crds])?;
        let kubeconfig = plane.dir.join("cert-manager.kubeconfig");
        plane.ca.kubeconfig(&kubeconfig, &plane.url, "cert-manager", "system:masters")?;
        let flag = format!("--kubeconfig={}", kubeconfig.display());
        let controller = Process::start(
            "cert-manager-controller",
            &plane.logs(),
            &bin.join("controller"),
            &[flag.clone(), "--leader-elect=false".into(), "--metrics-listen-address=127.0.0.1:0".into()]
                .map(OsString::from),
            &[],
        )?;
        let cainjector = Process::start(
            "cert-manager-cainjector",
            &plane.logs(),
            &bin.join("cainjector"),
            &[flag, "--leader-elect=false".into()].map(OsString::from),
            &[],
        )?;
        Ok(Self { controller, cainjector })
    }

    pub fn check_running(&mut self) -> Result<()> {
        self.controller.check_running()?;
        self.cainjector.check_running()
    }
}
