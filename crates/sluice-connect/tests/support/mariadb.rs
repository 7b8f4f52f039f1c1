//! A throwaway MariaDB server for integration tests: `mariadb-install-db` into a
//! temporary directory, `mariadbd` on a free loopback port with the binlog in ROW format
//! (what a CDC source needs), killed when dropped (a panicking test included). Root
//! reaches it through the unix socket in the temporary directory. Binaries are Debian's
//! (`mariadb-server`); without them the test fails and says how to install them. As
//! root (CI), the server runs as the `mysql` user, as mariadbd refuses root.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const MARIADBD: &str = "/usr/sbin/mariadbd";

static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub struct MariaDb {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
    as_mysql_user: bool,
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl MariaDb {
    pub fn start() -> MariaDb {
        assert!(
            std::path::Path::new(MARIADBD).exists(),
            "MariaDB not found at {MARIADBD} (install it: apt-get update -qq && \
             DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server)"
        );
        let dir = tempfile::tempdir().expect("a temporary directory");
        // Each server's temporary files in a directory of its own: a mariadbd starting
        // removes every `#sql*` file in its tmpdir, and with the shared /tmp it removed
        // those of a mariadb-install-db bootstrapping beside it (a test binary running
        // in parallel), which then failed ("Could not remove temporary table ... error:
        // 2", "Unknown table 'mysql.tmp_user_sys'").
        let tmpdir = dir.path().join("tmp");
        std::fs::create_dir(&tmpdir).expect("a tmpdir");
        let as_mysql_user = is_root();
        let mut install = Command::new("mariadb-install-db");
        install
            .args([
                "--no-defaults",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ])
            .arg(format!("--datadir={}", dir.path().join("data").display()))
            .arg(format!("--tmpdir={}", tmpdir.display()))
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if as_mysql_user {
            let status = Command::new("chown")
                .args(["-R", "mysql:mysql"])
                .arg(dir.path())
                .status()
                .expect("chown runs");
            assert!(status.success());
            install.arg("--user=mysql");
        }
        // One install at a time: concurrent mariadb-install-db runs (the tests of a
        // binary run in parallel) were seen to fail now and then.
        let out = {
            let _one = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
            install.output().expect("mariadb-install-db runs")
        };
        assert!(
            out.status.success(),
            "mariadb-install-db failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut server = MariaDb {
            port,
            dir,
            child: None,
            as_mysql_user,
        };
        server.launch();
        server.sql(
            "CREATE USER 'cdc'@'%' IDENTIFIED BY 'secret';
             GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT, LOCK TABLES ON *.* TO 'cdc'@'%';",
        );
        server
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("mysqld.sock")
    }

    fn launch(&mut self) {
        let data = self.dir.path().join("data");
        let mut command = Command::new(MARIADBD);
        command.arg("--no-defaults");
        if self.as_mysql_user {
            command.arg("--user=mysql");
        }
        command
            .arg(format!("--datadir={}", data.display()))
            .arg(format!(
                "--tmpdir={}",
                self.dir.path().join("tmp").display()
            ))
            .arg(format!("--port={}", self.port))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!(
                "--pid-file={}",
                self.dir.path().join("mysqld.pid").display()
            ))
            .arg(format!("--log-bin={}", data.join("binlog").display()))
            .args([
                "--binlog-format=ROW",
                "--binlog-row-image=FULL",
                "--server-id=1",
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_general_ci",
                "--default-time-zone=+00:00",
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=32M",
                "--innodb-log-file-size=16M",
                "--innodb-flush-log-at-trx-commit=2",
            ])
            .arg(format!(
                "--log-error={}",
                self.dir.path().join("error.log").display()
            ))
            .current_dir(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        self.child = Some(command.spawn().expect("mariadbd starts"));
        let deadline = Instant::now() + Duration::from_secs(60);
        while !self.try_sql("SELECT 1") {
            assert!(
                Instant::now() < deadline,
                "mariadbd did not come up: {}",
                std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn client(&self) -> Command {
        let mut c = Command::new("mariadb");
        c.arg("--no-defaults")
            .arg(format!("--socket={}", self.socket().display()))
            .args(["-uroot", "--batch", "--skip-column-names"]);
        c
    }

    fn try_sql(&self, sql: &str) -> bool {
        self.client()
            .args(["-e", sql])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Runs `sql` as root; panics with the server's error if it fails.
    pub fn sql(&self, sql: &str) -> String {
        let out = self
            .client()
            .args(["-e", sql])
            .output()
            .expect("mariadb runs");
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Kills the server (SIGKILL) for an outage.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again after [`MariaDb::kill`], on the same port and data.
    pub fn restart(&mut self) {
        self.launch();
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        self.kill();
    }
}
