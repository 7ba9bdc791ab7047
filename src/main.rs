//! Wiring only: parse the command line, run the command, map the result to an exit status.

use std::io::Write;
use std::path::PathBuf;
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
        /// Cluster state: multi-document YAML of Namespaces, Kueue objects, PriorityClasses, CRDs.
        #[arg(long)]
        cluster: PathBuf,
        /// Policy configuration file (YAML); defaults apply without it.
        #[arg(long)]
        config: Option<PathBuf>,
        /// An AdmissionReview (JSON or YAML) or a bare Job or JobSet manifest.
        request: PathBuf,
    },
    /// Render the two webhook configurations from the policy config: which
    /// workloads reach the server (rules, matchConditions) and whose writes skip it.
    Manifests {
        /// Policy configuration file (YAML); defaults apply without it.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Write mutating.yaml and validating.yaml into this directory instead of printing them.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run the HTTPS admission webhook server.
    Serve(Box<eval_admission::server::ServeArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Review { cluster, config, request } => {
            match eval_admission::cli::review(&cluster, config.as_deref(), &request) {
                Ok(report) => {
                    print_out(&format!("{}\n", serde_json::to_string_pretty(&report.output).unwrap_or_default()));
                    if report.allowed { ExitCode::SUCCESS } else { ExitCode::from(1) }
                }
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

/// Writes to stdout; a reader that went away (`review ... | head`) is not an
/// error worth a panic, and the exit status still says what was decided.
fn print_out(text: &str) {
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}
