//! The registry's database server for tests and fleet runs, as the site is
//! mosquitto: Debian's PostgreSQL (`postgresql`), a throwaway cluster in a
//! temporary directory on a free loopback port with trust authentication,
//! stopped and removed when dropped. As root, the server runs as the
//! `postgres` user (PostgreSQL refuses to run as root).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian puts the server's programs.
fn bin(name: &str) -> PathBuf {
    let dir = std::fs::read_dir("/usr/lib/postgresql")
        .ok()
        .and_then(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("bin").join(name).exists())
                .max()
        })
        .unwrap_or_else(|| panic!("no PostgreSQL server: install Debian's postgresql (apt-get install postgresql)"));
    dir.join("bin").join(name)
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// The `postgres` user's uid and gid (`/etc/passwd`).
fn server_user() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&"postgres")).then(|| (f[2].parse().unwrap(), f[3].parse().unwrap()))
        })
        .expect("no postgres user: install Debian's postgresql (apt-get install postgresql)")
}

/// `program`, as the `postgres` user when this runs as root.
fn as_server_user(program: &Path) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(program);
    if is_root() {
        let (uid, gid) = server_user();
        c.uid(uid).gid(gid);
    }
    c
}

/// A running server.
pub struct Postgres {
    dir: PathBuf,
    child: Child,
    port: u16,
}

impl Postgres {
    /// Starts one and waits until it accepts connections (`name` tells
    /// concurrent servers' directories apart).
    pub fn start(name: &str) -> Postgres {
        let dir = std::env::temp_dir().join(format!("kem-mqtt-pg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        if is_root() {
            let (uid, gid) = server_user();
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
        }
        let data = dir.join("data");
        let out = as_server_user(&bin("initdb"))
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
            .arg(&data)
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Postgres::spawn(&dir, port);
        let mut pg = Postgres { dir, child, port };
        pg.wait_ready();
        pg
    }

    fn spawn(dir: &Path, port: u16) -> Child {
        as_server_user(&bin("postgres"))
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-p", &port.to_string(), "-k"])
            .arg(dir)
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// Waits until it accepts connections; after a kill, starts it again
    /// until the old server's processes are gone.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.accepts_connections() {
            assert!(
                Instant::now() < deadline,
                "PostgreSQL did not start on port {}",
                self.port
            );
            if let Ok(Some(_)) = self.child.try_wait() {
                self.child = Postgres::spawn(&self.dir, self.port);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn accepts_connections(&self) -> bool {
        Command::new(bin("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres"])
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Starts it again (same data, same port) after [`Postgres::kill`].
    pub fn restart(&mut self) {
        self.child = Postgres::spawn(&self.dir, self.port);
        self.wait_ready();
    }

    /// The connection string of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops the server abruptly (SIGKILL), as a lost database looks to
    /// its clients.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGINT: a fast shutdown (the server's children go with it).
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
