//! `os-placement`: the os-placement admission rules over manifest files,
//! Helm and Kustomize output, in CI pipelines and on a laptop. A thin
//! adapter: every input is read, and every object answered, by the door
//! (`os-placement-door`) over the rule core, as in the policy.

mod args;
mod engine;
mod error;
mod explain;
mod fix;
mod inputs;
mod lookup;
mod render;
mod report;
mod results;
mod sync;

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;

use args::{CheckArgs, Cli, ColorChoice, Command, FactsCommand, Format};
use engine::Policy;
use error::CliError;
use report::{Context, Style};
use results::{check_inputs, Summary};

/// Exit code for usage and input errors (clap uses it too).
const EXIT_INPUT_ERROR: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => check(&args),
        Command::Fix(args) => fix::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Facts(FactsCommand::Sync(args)) => sync::run(&args),
        Command::Facts(FactsCommand::Render(args)) => render::run(&args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        // The reader went away (`| head`): nothing left to say.
        Err(CliError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::from(1),
        Err(e) => {
            eprintln!("os-placement: {e}");
            ExitCode::from(EXIT_INPUT_ERROR)
        }
    }
}

fn check(args: &CheckArgs) -> Result<u8, CliError> {
    let mut policy = Policy::load(&args.policy)?;
    let inputs = inputs::discover(&args.paths);
    if inputs.is_empty() {
        eprintln!(
            "os-placement: no *.yaml, *.yml or *.json files found in {}",
            args.paths.join(", ")
        );
        return Ok(EXIT_INPUT_ERROR);
    }
    policy.look_up(&inputs, &args.policy)?;
    let entries = check_inputs(&inputs, &policy.options());
    let summary = Summary::of(&entries, inputs.len());
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let context = Context {
        settings: &policy.label,
        operation: policy.operation.as_str(),
    };
    match args.output {
        Format::Human => {
            let style = Style {
                color: use_color(args.color),
            };
            report::human(&mut out, &entries, &summary, style)?;
        }
        Format::Json => report::json(&mut out, &entries, &summary, &context)?,
        Format::Junit => report::junit(&mut out, &entries, &summary)?,
    }
    out.flush()?;
    if args.output != Format::Human {
        // Machine formats own stdout; the totals still reach a person.
        eprintln!("{}", summary.line());
    }
    Ok(summary.exit_code())
}

fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}
