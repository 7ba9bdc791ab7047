//! etcd and kube-apiserver, with the Kueue and JobSet CRDs.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result};

use super::builders::{build, built, environment_dir};
use super::{Ca, Kubectl, Network, Process, Usage, free_port, poll};

/// etcd and kube-apiserver on loopback (no kubelet, no controller-manager),
/// with the Kueue and JobSet CRDs installed. What differs from a real cluster:
/// webhooks are registered by URL (nothing routes to a Service); Jobs are
/// stored but never run; deleted namespaces stay Terminating; a Pod needs its
/// namespace's `default` ServiceAccount created first.
pub struct ControlPlane {
    pub dir: PathBuf,
    pub url: String,
    pub kubeconfig: PathBuf,
    pub kubectl: Kubectl,
    pub ca: Ca,
    // Field order is drop order: the API server stops before etcd.
    apiserver: Mutex<Process>,
    etcd: Mutex<Process>,
}

impl std::ops::Deref for ControlPlane {
    type Target = Kubectl;
    fn deref(&self) -> &Kubectl {
        &self.kubectl
    }
}

impl ControlPlane {
    /// Builds (or finds cached) the binaries, starts etcd and the API server
    /// with `extra_apiserver_flags`, installs the CRDs and waits for them.
    pub fn start(extra_apiserver_flags: &[&str]) -> Result<Self> {
        Self::start_on(&Network::LOOPBACK, extra_apiserver_flags)
    }

    /// [`ControlPlane::start`] with the API server on `network`.
    pub fn start_on(network: &Network, extra_apiserver_flags: &[&str]) -> Result<Self> {
        let tools = build("hack/build-tools.sh")?;
        let bin = built(&tools, "bin")?;
        let dir = environment_dir()?;
        let logs = dir.join("logs");
        let pki = dir.join("pki");
        let ca = Ca::new()?;
        let mut names = vec![
            "127.0.0.1",
            "::1",
            network.advertise,
            network.service_ip,
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ];
        names.sort_unstable();
        names.dedup();
        let (apiserver_cert, apiserver_key) = ca.issue_files(&pki, "apiserver", Usage::Server(&names))?;
        std::fs::write(pki.join("ca.crt"), &ca.pem)?;
        // The service-account token signing key pair (ES256).
        let service_accounts = rcgen::KeyPair::generate()?;
        std::fs::write(pki.join("sa.key"), service_accounts.serialize_pem())?;
        std::fs::write(pki.join("sa.pub"), service_accounts.public_key_pem())?;

        let (apiserver_port, etcd_port, etcd_peer_port) = (free_port()?, free_port()?, free_port()?);
        let url = format!("https://127.0.0.1:{apiserver_port}");
        let kubeconfig = dir.join("kubeconfig");
        // O=system:masters is bound to cluster-admin by the bootstrap RBAC policy.
        ca.kubeconfig(&kubeconfig, &url, "kubernetes-admin", "system:masters")?;
        let kubectl = Kubectl { bin: bin.join("kubectl"), kubeconfig: kubeconfig.clone() };

        let etcd_url = |port: u16| format!("http://127.0.0.1:{port}");
        let etcd_args: Vec<OsString> = [
            "--name=eval-admission".to_string(),
            format!("--data-dir={}", dir.join("etcd").display()),
            // Plain HTTP on loopback only: nothing else can reach it.
            format!("--listen-client-urls={}", etcd_url(etcd_port)),
            format!("--advertise-client-urls={}", etcd_url(etcd_port)),
            format!("--listen-peer-urls={}", etcd_url(etcd_peer_port)),
            format!("--initial-advertise-peer-urls={}", etcd_url(etcd_peer_port)),
            format!("--initial-cluster=eval-admission={}", etcd_url(etcd_peer_port)),
            // Throwaway data: skip fsync, the slowest part on a busy disk.
            "--unsafe-no-fsync".to_string(),
            "--log-level=warn".to_string(),
        ]
        .map(OsString::from)
        .into();
        let mut etcd = Process::start("etcd", &logs, &bin.join("etcd"), &etcd_args, &[])?;
        etcd.wait_until("etcd to listen", Duration::from_secs(60), Duration::from_millis(100), || {
            testkit::poll::listening(etcd_port).then_some(())
        })?;

        let pki_file = |name: &str| pki.join(name).display().to_string();
        let mut apiserver_args: Vec<OsString> = [
            format!("--bind-address={}", network.bind),
            format!("--advertise-address={}", network.advertise),
            format!("--secure-port={apiserver_port}"),
            format!("--etcd-servers={}", etcd_url(etcd_port)),
            format!("--tls-cert-file={}", apiserver_cert.display()),
            format!("--tls-private-key-file={}", apiserver_key.display()),
            format!("--client-ca-file={}", pki_file("ca.crt")),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_string(),
            format!("--service-account-key-file={}", pki_file("sa.pub")),
            format!("--service-account-signing-key-file={}", pki_file("sa.key")),
            format!("--service-cluster-ip-range={}", network.service_cidr),
            "--authorization-mode=Node,RBAC".to_string(),
            // On by default already; listed because the tests depend on them.
            "--enable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook".to_string(),
            "--allow-privileged=true".to_string(),
            format!("--endpoint-reconciler-type={}", network.endpoint_reconciler),
            "--profiling=false".to_string(),
        ]
        .map(OsString::from)
        .into();
        apiserver_args.extend(extra_apiserver_flags.iter().map(OsString::from));
        let mut apiserver = Process::start("kube-apiserver", &logs, &bin.join("kube-apiserver"), &apiserver_args, &[])?;
        poll(
            &format!("kube-apiserver /readyz at {url}"),
            Duration::from_secs(180),
            Duration::from_millis(500),
            || {
                etcd.check_running()?;
                apiserver.check_running()
            },
            || kubectl.run(&["get", "--raw=/readyz"], None).ok(),
        )?;

        let plane =
            Self { dir, url, kubeconfig, kubectl, ca, apiserver: Mutex::new(apiserver), etcd: Mutex::new(etcd) };
        for crds in [built(&tools, "kueue_crds")?, built(&tools, "jobset_crds")?] {
            // Server-side: the Workload CRD is far over the 256 KiB limit of the
            // last-applied annotation client-side apply writes.
            let path = crds.to_str().context("CRD path")?;
            plane
                .run(&["apply", "--server-side", "--force-conflicts", "--field-manager=test-env", "-f", path], None)?;
            plane.wait_established(&["-f", path])?;
        }
        Ok(plane)
    }

    /// The pids of etcd and kube-apiserver (for CPU accounting).
    pub fn pids(&self) -> Vec<(&'static str, u32)> {
        let pid = |process: &Mutex<Process>| process.lock().unwrap_or_else(|p| p.into_inner()).pid();
        vec![("kube-apiserver", pid(&self.apiserver)), ("etcd", pid(&self.etcd))]
    }

    pub fn logs(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// Everything eval-admission reads, as `review --cluster` takes it (and
    /// the judge too), in kubectl's `output` format.
    pub fn state(&self, output: &str) -> Result<String> {
        self.run(
            &[
                "get",
                "namespaces,localqueues.kueue.x-k8s.io,clusterqueues.kueue.x-k8s.io,cohorts.kueue.x-k8s.io,\
                 resourceflavors.kueue.x-k8s.io,admissionchecks.kueue.x-k8s.io,\
                 workloadpriorityclasses.kueue.x-k8s.io,priorityclasses.scheduling.k8s.io,limitranges,\
                 runtimeclasses.node.k8s.io",
                "-A",
                "-o",
                output,
            ],
            None,
        )
    }
}
