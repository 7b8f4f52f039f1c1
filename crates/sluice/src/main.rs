//! `sluice`: every Sluice service and tool behind one command.
//!
//! Today it carries the operator tools of the partition log; the broker (`sluice
//! server`) joins with the single-node broker issue.

mod dump_log;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "sluice",
    version,
    about = "Sluice: a Kafka-compatible event streaming platform"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the batches, records and index entries of segment files, in the format of
    /// Kafka's `kafka-dump-log.sh` (DumpLogSegments).
    DumpLog {
        /// `.log`, `.index` or `.timeindex` files.
        #[arg(long, required = true, num_args = 1.., value_delimiter = ',')]
        files: Vec<PathBuf>,
        /// Print every record, not only batch headers.
        #[arg(long)]
        deep_iteration: bool,
        /// Print keys and values (implies --deep-iteration).
        #[arg(long)]
        print_data_log: bool,
    },
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::DumpLog {
            files,
            deep_iteration,
            print_data_log,
        } => {
            let options = dump_log::Options {
                deep_iteration: deep_iteration || print_data_log,
                print_data: print_data_log,
            };
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let mut failed = false;
            for file in &files {
                if let Err(error) = dump_log::dump(file, &options, &mut out) {
                    eprintln!("{}: {error:#}", file.display());
                    failed = true;
                }
            }
            std::io::Write::flush(&mut out)?;
            if failed {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}
