//! Starting a child process the one way: it dies with the test process (a
//! parent-death signal), writes its output to a log, and is stopped on drop;
//! and waiting for it to be ready while noticing when it died.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};

use crate::poll::{http_ok, poll};

/// How long a process gets to exit on SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(10);

type SpawnRequest = (Command, mpsc::Sender<std::io::Result<Child>>);

/// A command to start: program, arguments, environment, where its output
/// goes, and optionally a CPU to pin it to and an open-descriptor limit.
pub struct Launch {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    log: Option<PathBuf>,
    cpu: Option<usize>,
    descriptors: Option<u64>,
}

impl Launch {
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Self { program: program.as_ref().into(), args: vec![], env: vec![], log: None, cpu: None, descriptors: None }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().into());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(|arg| arg.as_ref().into()));
        self
    }

    /// Sets a variable; later settings of the same name win.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().into(), Some(value.as_ref().into())));
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().into(), None));
        self
    }

    /// Stdout and stderr appended to this file (created when missing); without
    /// one they go nowhere.
    pub fn log(mut self, path: impl Into<PathBuf>) -> Self {
        self.log = Some(path.into());
        self
    }

    /// Pinned to `cpu` (`taskset -c`, which execs: the pid stays the program's).
    pub fn cpu(mut self, cpu: Option<usize>) -> Self {
        self.cpu = cpu;
        self
    }

    /// Its open-descriptor limit, soft and hard.
    pub fn descriptors(mut self, limit: Option<u64>) -> Self {
        self.descriptors = limit;
        self
    }

    /// Starts it with SIGKILL as its parent-death signal (`setpriv
    /// --pdeathsig`, which then execs the command, so the pid is the command's).
    ///
    /// Linux sends that signal when the *thread* that forked the child ends,
    /// and a test's thread ends with the test while a shared environment lives
    /// on; so every child is forked by one thread, which lives exactly as
    /// long as the process.
    pub fn spawn(self) -> Result<Child> {
        static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
        let spawner = SPAWNER.get_or_init(|| {
            let (requests, received) = mpsc::channel::<SpawnRequest>();
            std::thread::Builder::new()
                .name("test-env-spawner".into())
                .spawn(move || {
                    for (mut command, reply) in received {
                        let _ = reply.send(command.spawn());
                    }
                })
                .expect("starts the spawner thread");
            Mutex::new(requests)
        });
        let mut command = Command::new("setpriv");
        command.args(["--pdeathsig", "KILL", "--"]);
        if let Some(cpu) = self.cpu {
            command.args(["taskset", "-c", &cpu.to_string()]);
        }
        command.arg(&self.program).args(&self.args).stdin(Stdio::null());
        match &self.log {
            Some(log) => {
                let output = std::fs::File::options()
                    .create(true)
                    .append(true)
                    .open(log)
                    .with_context(|| format!("opening {}", log.display()))?;
                command.stdout(output.try_clone()?).stderr(output);
            }
            None => {
                command.stdout(Stdio::null()).stderr(Stdio::null());
            }
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        if let Some(descriptors) = self.descriptors {
            use std::os::unix::process::CommandExt;
            let limit = libc::rlimit { rlim_cur: descriptors, rlim_max: descriptors };
            // SAFETY: setrlimit is async-signal-safe and touches only this struct.
            unsafe {
                command.pre_exec(move || {
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let (reply, answer) = mpsc::channel();
        spawner.lock().unwrap_or_else(|p| p.into_inner()).send((command, reply))?;
        answer.recv()?.with_context(|| format!("starting {}", Path::new(&self.program).display()))
    }

    /// [`Launch::spawn`] as a named [`Process`], its output in `logs/NAME.log`.
    pub fn start(self, name: &str, logs: &Path) -> Result<Process> {
        self.log(logs.join(format!("{name}.log"))).start_as(name)
    }

    /// [`Launch::spawn`] as a named [`Process`], its output where
    /// [`Launch::log`] said (or nowhere).
    pub fn start_as(self, name: &str) -> Result<Process> {
        let log = self.log.clone().unwrap_or_else(|| PathBuf::from("/dev/null"));
        let child = self.spawn()?;
        Ok(Process { name: name.to_string(), child, log })
    }
}

/// A child process and its log; stopped (TERM, then KILL) on drop.
pub struct Process {
    pub name: String,
    child: Child,
    pub log: PathBuf,
}

impl Process {
    /// Starts `program` (see [`Launch::spawn`]), its output in `logs/NAME.log`.
    pub fn start(name: &str, logs: &Path, program: &Path, args: &[OsString], env: &[(&str, OsString)]) -> Result<Self> {
        let launch = env.iter().fold(Launch::new(program).args(args), |launch, (key, value)| launch.env(key, value));
        launch.start(name, logs)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails with the log's tail when the process has exited.
    pub fn check_running(&mut self) -> Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => Err(self.died(status)),
        }
    }

    fn died(&self, status: ExitStatus) -> anyhow::Error {
        anyhow!("{} exited ({status}); {}:\n{}", self.name, self.log.display(), tail(&self.log, 20))
    }

    /// Polls `check` every `every` until it yields, failing at `timeout` or as
    /// soon as this process has exited.
    pub fn wait_until<T>(
        &mut self,
        what: &str,
        timeout: Duration,
        every: Duration,
        check: impl FnMut() -> Option<T>,
    ) -> Result<T> {
        poll(what, timeout, every, || self.check_running(), check)
    }

    /// [`Process::wait_until`] `GET http://127.0.0.1:PORT/PATH` answers 200.
    pub fn wait_http_ok(&mut self, port: u16, path: &str, timeout: Duration, every: Duration) -> Result<()> {
        let what = format!("{} {path}", self.name);
        self.wait_until(&what, timeout, every, || http_ok(port, path).then_some(()))
    }

    /// Waits for it to exit.
    pub fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait()
    }

    /// SIGKILL, at once.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then SIGKILL when it has not exited after a grace period.
    pub fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
            let deadline = Instant::now() + GRACE;
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The last `lines` lines of a file ("" when it cannot be read).
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let last: Vec<&str> = text.lines().rev().take(lines).collect();
    last.into_iter().rev().collect::<Vec<_>>().join("\n")
}
