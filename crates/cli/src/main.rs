//! `kairos`: the one binary. Parses the command line, runs a command and turns every
//! library error into one sentence with the fix and a non-zero exit status.

mod args;
mod cmd_agent;
mod cmd_cache;
mod cmd_collect;
mod cmd_compare;
mod cmd_export;
mod cmd_import;
mod cmd_info;
mod cmd_lab;
mod cmd_measure;
mod cmd_publish;
mod cmd_query;
mod cmd_report;
mod cmd_run;
mod cmd_run_cache;
mod cmd_selftest;
mod cmd_view;
mod collect_cache;
mod collect_hugepages;
mod error;
mod knobs;
mod mmap_pages;
mod own_env;
mod perf_options;
mod run_args;
mod run_output;
mod terminal;

use crate::args::Command;

fn main() {
    own_env::keep_tunables_for_the_target();
    // Reports are often piped into `head`; a closed pipe is not an error worth a panic.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match args::parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout with exit 0 and usage errors with exit 2.
            let _ = e.print();
            std::process::exit(e.exit_code());
        }
    };
    kairos_report::set_text_layout(terminal::line_width(), cli.wide);
    let result = match cli.command {
        Command::Collect(a) => cmd_collect::run(a),
        Command::Import(a) => cmd_import::run(a),
        Command::Report(a) => cmd_report::run(a),
        Command::Info(a) => cmd_info::run(a),
        Command::Lab(a) => cmd_lab::run(a),
        Command::Export(a) => cmd_export::run(a),
        Command::Run(a) => cmd_run::run(a),
        Command::Compare(a) => cmd_compare::run(a),
        Command::View(a) => cmd_view::run(a),
        Command::Cache(a) => cmd_cache::run(a),
        Command::Measure(a) => cmd_measure::run(a),
        Command::Selftest(a) => cmd_selftest::run(a),
        Command::Agent(a) => cmd_agent::run(a),
        Command::Publish(a) => cmd_publish::run(a),
        Command::Query(a) => cmd_query::run(a),
    };
    if let Err(e) = result {
        eprintln!("kairos: {e}");
        std::process::exit(e.exit_code());
    }
}
