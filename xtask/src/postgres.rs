//! A throwaway PostgreSQL cluster for the test suites and the benchmarks:
//! PostgreSQL (and PgBouncer, which the multi-host suite puts in front of
//! it) from Debian when missing, `initdb` in a temporary
//! folder, a free port on 127.0.0.1, TLS with a certificate of its own
//! authority (made with `openssl`), stopped and removed when dropped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::{Result, fail};

/// Where Debian's package puts PgBouncer (the suite's default too).
const PGBOUNCER: &str = "/usr/sbin/pgbouncer";

/// The folder of PostgreSQL's server programs (`initdb`, `pg_ctl`): the
/// newest `/usr/lib/postgresql/<N>/bin`, installed from Debian (with
/// PgBouncer) when there is none or PgBouncer is missing.
pub fn ensure_installed() -> Result<PathBuf> {
    if let Some(bin) = find_bin()
        && Path::new(PGBOUNCER).exists()
    {
        return Ok(bin);
    }
    eprintln!("\n$ apt-get install postgresql pgbouncer");
    let _ = Command::new("apt-get")
        .args(["update", "-qq"])
        .stdout(Stdio::null())
        .status()?;
    for attempt in 1..=3 {
        // The image's apt clean hook can delete downloaded packages midway:
        // the first attempt may exit 100.
        let status = Command::new("apt-get")
            .args([
                "install",
                "-y",
                "-qq",
                "--no-install-recommends",
                "postgresql",
                "pgbouncer",
                "openssl",
            ])
            .stdout(Stdio::null())
            .status()?;
        if status.success() {
            break;
        }
        eprintln!("apt-get install postgresql failed ({status}), attempt {attempt} of 3");
    }
    match find_bin() {
        Some(bin) if Path::new(PGBOUNCER).exists() => Ok(bin),
        _ => fail("PostgreSQL and PgBouncer are not installed and apt-get could not install them"),
    }
}

fn find_bin() -> Option<PathBuf> {
    let versions = std::fs::read_dir("/usr/lib/postgresql").ok()?;
    versions
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").exists() && bin.join("pg_ctl").exists()).then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version)
        .map(|(_, bin)| bin)
}

/// Whether this process runs as root (PostgreSQL refuses to: its programs
/// then run as the `postgres` user).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// A running cluster, stopped and removed when dropped.
#[derive(Debug)]
pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres: bool,
}

impl Cluster {
    /// Creates and starts a cluster in a temporary folder.
    pub fn start(bin: &Path) -> Result<Cluster> {
        let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
        let dir = std::env::temp_dir().join(format!("mandate-pg-{}-{stamp}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let as_postgres = is_root();
        if as_postgres {
            quiet(Command::new("chown").arg("postgres:postgres").arg(&dir))?;
        }
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let cluster = Cluster {
            bin: bin.to_owned(),
            dir,
            port,
            as_postgres,
        };
        let data = cluster.dir.join("data");
        quiet(cluster.program("initdb").arg("-D").arg(&data).args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--locale=C",
        ]))?;
        cluster.make_certificates(&data)?;
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=300 \
             -c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key",
            cluster.dir.display()
        );
        quiet(
            cluster
                .program("pg_ctl")
                .arg("-D")
                .arg(&data)
                .args(["-w", "-l"])
                .arg(cluster.dir.join("log"))
                .args(["-o", &options, "start"]),
        )?;
        eprintln!("PostgreSQL test cluster on 127.0.0.1:{port}");
        Ok(cluster)
    }

    /// A PostgreSQL program of this cluster, run as its owner.
    fn program(&self, name: &str) -> Command {
        let path = self.bin.join(name);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }

    /// A certificate authority of the cluster's own (`ca.crt`, beside the
    /// data folder) and a server certificate it signed for 127.0.0.1.
    fn make_certificates(&self, data: &Path) -> Result<()> {
        let openssl =
            |args: &[&str]| quiet(Command::new("openssl").args(args).current_dir(&self.dir));
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            &[
                &["req", "-x509", "-days", "2", "-subj", "/CN=Mandate test CA"][..],
                &ec,
                &["-keyout", "ca.key", "-out", "ca.crt"],
            ]
            .concat(),
        )?;
        openssl(
            &[
                &["req", "-subj", "/CN=127.0.0.1"][..],
                &ec,
                &["-keyout", "server.key", "-out", "server.csr"],
            ]
            .concat(),
        )?;
        std::fs::write(
            self.dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
        )?;
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.crt",
        ])?;
        for file in ["server.crt", "server.key"] {
            std::fs::copy(self.dir.join(file), data.join(file))?;
        }
        if self.as_postgres {
            quiet(
                Command::new("chown")
                    .arg("postgres:postgres")
                    .arg(data.join("server.crt"))
                    .arg(data.join("server.key")),
            )?;
        }
        quiet(
            Command::new("chmod")
                .arg("600")
                .arg(data.join("server.key")),
        )
    }

    /// The URL of a database of the cluster; the suites' connections ask
    /// for no TLS, the TLS test for it.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/{database}?sslmode=disable",
            self.port
        )
    }

    /// The URL of a database of the cluster reached through `address`
    /// (a proxy in front of [`Cluster::address`]).
    pub fn url_through(&self, address: &str, database: &str) -> String {
        format!("postgres://postgres@{address}/{database}?sslmode=disable")
    }

    /// Where the server listens: `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The certificate authority that signed the server's certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// A shell command that restarts the server (fast shutdown: open
    /// connections are cut), for the restart test. The shutdown checkpoint
    /// follows the whole API suite's writes, so on a busy machine it may
    /// take longer than `pg_ctl`'s default minute: it is given five.
    pub fn restart_command(&self) -> String {
        let pg_ctl = self.bin.join("pg_ctl");
        let data = self.dir.join("data");
        let run_as = if self.as_postgres {
            "runuser -u postgres -- "
        } else {
            ""
        };
        format!(
            "{run_as}{} -D {} -w -t 300 -m fast restart >/dev/null",
            pg_ctl.display(),
            data.display()
        )
    }

    /// Creates a database.
    pub fn createdb(&self, name: &str) -> Result<()> {
        quiet(
            self.program("createdb")
                .args([
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    "postgres",
                ])
                .arg(name),
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let stopped = self
            .program("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !stopped.is_ok_and(|status| status.success()) {
            eprintln!("stopping the PostgreSQL test cluster failed");
        }
        if let Err(error) = std::fs::remove_dir_all(&self.dir) {
            eprintln!("removing {} failed: {error}", self.dir.display());
        }
    }
}

/// Runs a command, showing its output only when it fails.
fn quiet(command: &mut Command) -> Result<()> {
    let output = command.output()?;
    if !output.status.success() {
        return fail(format!(
            "{command:?} failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

/// `cargo xtask postgres`: a cluster for trying `mandate serve --database`
/// by hand, until standard input closes (Ctrl-D).
pub fn serve() -> Result<()> {
    let cluster = Cluster::start(&ensure_installed()?)?;
    cluster.createdb("mandate")?;
    eprintln!(
        "MANDATE_DATABASE_URL={}\nMANDATE_DATABASE_CA_FILE={}\n(Ctrl-D stops and removes the cluster)",
        cluster.url("mandate"),
        cluster.ca_file().display()
    );
    std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asks the cluster one question with `psql`; its answer, trimmed.
    fn psql(url: &str, query: &str) -> String {
        let output = Command::new("psql")
            .args([url, "-X", "-tAc", query])
            .output()
            .expect("psql runs");
        assert!(
            output.status.success(),
            "psql {url} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// A cluster answers on its port, without TLS as the suites connect and
    /// with TLS verified against its own authority, and leaves neither a
    /// server nor its folder behind. Skipped (never installing anything)
    /// where PostgreSQL, psql or openssl is missing: `cargo xtask test`
    /// installs them only for its PostgreSQL pass.
    #[test]
    fn a_cluster_answers_plainly_and_over_tls_and_leaves_nothing_behind() {
        let tools = ["psql", "openssl"]
            .iter()
            .all(|tool| Command::new(tool).arg("--version").output().is_ok());
        let Some(bin) = find_bin().filter(|_| tools) else {
            eprintln!("skipped: PostgreSQL, psql or openssl is not installed");
            return;
        };
        let cluster = Cluster::start(&bin).expect("the cluster starts");
        let dir = cluster.dir.clone();
        assert_eq!(psql(&cluster.url("postgres"), "select 1"), "1");

        cluster.createdb("mandate_check").expect("createdb");
        let verified = format!(
            "postgres://postgres@127.0.0.1:{}/mandate_check?sslmode=verify-full&sslrootcert={}",
            cluster.port,
            cluster.ca_file().display()
        );
        assert_eq!(
            psql(
                &verified,
                "select ssl from pg_stat_ssl where pid = pg_backend_pid()"
            ),
            "t"
        );

        let port = cluster.port;
        drop(cluster);
        assert!(!dir.exists(), "{} is left behind", dir.display());
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "the server still listens on {port}"
        );
    }
}
