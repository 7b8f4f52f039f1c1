//! A throwaway PostgreSQL server for integration tests: `initdb` into a temporary
//! directory, `pg_ctl start` on a free loopback port, `pg_ctl stop -m immediate` when
//! dropped (a panicking test included). Binaries come from `$SLUICE_POSTGRES_BIN` or
//! Debian's `/usr/lib/postgresql/15/bin`; without them the test fails and says how to
//! install them. As root (CI), the server runs as the `postgres` user, since `initdb`
//! refuses root.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

const DEFAULT_BIN: &str = "/usr/lib/postgresql/15/bin";

pub struct Postgres {
    pub port: u16,
    bin: PathBuf,
    data: PathBuf,
    as_postgres_user: bool,
    /// More `-c` settings for the server (`wal_level=logical` for CDC).
    settings: String,
    // Dropped after `drop` stopped the server.
    dir: tempfile::TempDir,
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl Postgres {
    pub fn start() -> Postgres {
        Postgres::start_with("")
    }

    /// A server configured for logical replication (`wal_level=logical`, a few slots
    /// and senders), as a CDC source needs it.
    pub fn start_logical() -> Postgres {
        Postgres::start_with("-c wal_level=logical -c max_replication_slots=8 -c max_wal_senders=8")
    }

    fn start_with(settings: &str) -> Postgres {
        let bin = std::env::var_os("SLUICE_POSTGRES_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_BIN));
        assert!(
            bin.join("initdb").exists() && bin.join("pg_ctl").exists(),
            "PostgreSQL server binaries not found in {} (set SLUICE_POSTGRES_BIN, or install them: \
             apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15)",
            bin.display()
        );
        let dir = tempfile::tempdir().expect("a temporary directory");
        let data = dir.path().join("data");
        let as_postgres_user = is_root();
        if as_postgres_user {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status()
                .expect("chown runs");
            assert!(
                status.success(),
                "chown of {} to postgres failed",
                dir.path().display()
            );
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let server = Postgres {
            port,
            bin,
            data,
            as_postgres_user,
            settings: settings.to_string(),
            dir,
        };
        server.run(
            "initdb",
            &[
                "-D",
                &server.data.display().to_string(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        server.pg_start();
        server
    }

    fn pg_start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off {}",
            self.port,
            self.dir.path().display(),
            self.settings
        );
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data.display().to_string(),
                "-l",
                &self.dir.path().join("postgres.log").display().to_string(),
                "-o",
                &options,
                "-w",
                "-t",
                "30",
                "start",
            ],
        );
    }

    /// Stops the server (fast shutdown: clients are disconnected), for an outage.
    pub fn stop(&self) {
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data.display().to_string(),
                "-m",
                "fast",
                "-w",
                "stop",
            ],
        );
    }

    /// Starts it again after [`Postgres::stop`], on the same port and data.
    pub fn restart(&self) {
        self.pg_start();
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_postgres_user {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        let output = self
            .command(program)
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        assert!(
            output.status.success(),
            "{program} failed: {}\n{}\n{}\nserver log:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
        );
    }

    /// `jdbc:postgresql://127.0.0.1:PORT/DATABASE` (the superuser needs no password).
    pub fn jdbc_url(&self, database: &str) -> String {
        format!("jdbc:postgresql://127.0.0.1:{}/{database}", self.port)
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// A client on `database` as the superuser; its connection runs on a spawned task.
    pub async fn client(&self, database: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::Config::new()
            .host("127.0.0.1")
            .port(self.port)
            .user("postgres")
            .dbname(database)
            .connect(tokio_postgres::NoTls)
            .await
            .expect("the test connects to its PostgreSQL");
        tokio::spawn(connection);
        client
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args(["-D"])
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}
