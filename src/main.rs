//! Wiring only: parse the command line, run the command, map the result to an exit status.

use std::io::Write;
use std::path::{Path, PathBuf};

use eval_admission::cli::{AuditReport, Reviewed, Source};
use eval_admission::config::Config;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "eval-admission", version, about = "Admission webhook in front of Kueue for evaluation workloads")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Review one request offline, as the API server's admission chain would.
    /// Exit status: 0 allowed, 1 denied, 2 unusable input.
    Review {
        /// Cluster state: multi-document YAML of Namespaces, Kueue objects, PriorityClasses, CRDs
        /// (and, for KIND/NAME, the Jobs and JobSets); repeatable; without it, the live cluster.
        #[arg(long, conflicts_with = "kubeconfig")]
        cluster: Vec<PathBuf>,
        /// The live cluster's kubeconfig; without it, kubectl's (`KUBECONFIG`, ~/.kube/config, in-cluster).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// The namespace of a KIND/NAME request; else the kubeconfig context's (`default` in a file).
        #[arg(long, short = 'n')]
        namespace: Option<String>,
        /// Policy configuration file (YAML); defaults apply without it.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Refuse (exit 2) a config field this version does not know, instead of warning of it and ignoring it.
        #[arg(long)]
        strict: bool,
        /// How to print what a KIND/NAME request finds (a file's review prints JSON).
        #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
        output: Output,
        /// A file: an AdmissionReview (JSON or YAML) or a bare Job or JobSet manifest to create.
        /// Or KIND/NAME (job/NAME, jobset/NAME) of a stored workload: why it waits, or what may preempt it.
        request: String,
    },
    /// Report the evaluations already in a cluster that Kueue would now never
    /// admit, could now preempt, or never saw, each with the message a create
    /// would be refused with. Exit status: 0 nothing found, 1 found, 2 unusable input.
    Audit {
        /// A file of cluster state and workloads (`kubectl get` output, as the
        /// review's cluster file plus Jobs and JobSets); repeatable; without it, the live cluster.
        #[arg(long, conflicts_with = "kubeconfig")]
        cluster: Vec<PathBuf>,
        /// The live cluster's kubeconfig; without it, kubectl's (`KUBECONFIG`, ~/.kube/config, in-cluster).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Policy configuration file (YAML); defaults apply without it.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Refuse (exit 2) a config field this version does not know, instead of warning of it and ignoring it.
        #[arg(long)]
        strict: bool,
        /// How to print the report.
        #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
        output: Output,
    },
    /// Render the two webhook configurations from the policy config: which
    /// workloads reach the server (rules, matchConditions) and whose writes skip it.
    /// A config field this version does not know is refused (exit 2).
    Manifests {
        /// Policy configuration file (YAML); defaults apply without it.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Write mutating.yaml and validating.yaml into this directory instead of printing them.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// The policy config on its own.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Run the HTTPS admission webhook server.
    Serve(Box<eval_admission::server::ServeArgs>),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Read a policy config as `serve` would: exit 0 when this version reads it
    /// (warning of each field it does not know and ignores), 2 when it does not.
    Check {
        /// Policy configuration file (YAML); defaults apply without it.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Refuse (exit 2) a config field this version does not know, instead of warning of it and ignoring it.
        #[arg(long)]
        strict: bool,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Output {
    Table,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Review { cluster, kubeconfig, namespace, config, strict, output, request } => {
            let config = match read_config(config.as_deref(), strict) {
                Ok(config) => config,
                Err(status) => return status,
            };
            let source = source(&cluster, kubeconfig.as_deref());
            match eval_admission::cli::review(source, &config, &request, namespace.as_deref()) {
                Ok(Reviewed::Chain(report)) => {
                    print_out(&format!("{}\n", serde_json::to_string_pretty(&report.output).unwrap_or_default()));
                    if report.allowed { ExitCode::SUCCESS } else { ExitCode::from(1) }
                }
                Ok(Reviewed::Stored(report)) => print_audit(&report, output),
                Err(error) => {
                    eprintln!("eval-admission: {error}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Audit { cluster, kubeconfig, config, strict, output } => {
            let config = match read_config(config.as_deref(), strict) {
                Ok(config) => config,
                Err(status) => return status,
            };
            match eval_admission::cli::audit(source(&cluster, kubeconfig.as_deref()), &config) {
                Ok(report) => print_audit(&report, output),
                Err(error) => {
                    eprintln!("eval-admission: {error}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Manifests { config, out } => match eval_admission::cli::manifests(config.as_deref(), out.as_deref()) {
            Ok(printed) => {
                print_out(&printed.unwrap_or_default());
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("eval-admission: {error}");
                ExitCode::from(2)
            }
        },
        Command::Config { command: ConfigCommand::Check { config, strict } } => {
            match eval_admission::cli::check_config(config.as_deref(), strict) {
                Ok((line, warnings)) => {
                    print_warnings(&warnings);
                    print_out(&format!("{line}\n"));
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    eprintln!("eval-admission: {error}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Serve(args) => {
            let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
                Ok(runtime) => runtime,
                Err(error) => {
                    eprintln!("eval-admission: cannot start the runtime: {error}");
                    return ExitCode::FAILURE;
                }
            };
            match runtime.block_on(eval_admission::server::serve(*args)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("eval-admission: {error}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// A command's policy config, its warnings printed to stderr; else the error
/// printed, and exit status 2.
fn read_config(path: Option<&Path>, strict: bool) -> Result<Config, ExitCode> {
    match eval_admission::cli::read_config(path, strict) {
        Ok((config, warnings)) => {
            print_warnings(&warnings);
            Ok(config)
        }
        Err(error) => {
            eprintln!("eval-admission: {error}");
            Err(ExitCode::from(2))
        }
    }
}

fn print_warnings(warnings: &[String]) {
    for warning in warnings {
        eprintln!("eval-admission: warning: {warning}");
    }
}

fn source<'a>(cluster: &'a [PathBuf], kubeconfig: Option<&'a Path>) -> Source<'a> {
    match cluster {
        [] => Source::Live { kubeconfig },
        paths => Source::Files(paths.iter().map(PathBuf::as_path).collect()),
    }
}

/// Prints an audit's report; exit status 1 when it found anything.
fn print_audit(report: &AuditReport, output: Output) -> ExitCode {
    print_out(&match output {
        Output::Table => report.table(),
        Output::Json => report.json(),
    });
    if report.is_clean() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// Writes to stdout; a reader that went away (`review ... | head`) is not an
/// error worth a panic, and the exit status still says what was decided.
fn print_out(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}
