//! Symbols from a real debuginfod server (elfutils' `debuginfod`, started here on
//! 127.0.0.1 over a directory holding a sample's stripped binary and its debug file): a
//! recording of the stripped binary, imported with `DEBUGINFOD_URLS` set, gets its
//! functions and source lines back; with the binary gone too, the executable comes from
//! the server as well. The test says so and fails when debuginfod cannot be started.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// The server process, ended when the test ends however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// HTTP status of a GET on 127.0.0.1:port (0 when nothing answers).
fn status(port: u16, path: &str) -> u32 {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return 0;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let req = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return 0;
    }
    let mut head = [0u8; 12];
    match s.read_exact(&mut head) {
        Ok(()) => String::from_utf8_lossy(&head[9..12]).parse().unwrap_or(0),
        Err(_) => 0,
    }
}

/// (function, source file, line) of every frame of the result, through DuckDB.
fn frames(result: &Path) -> String {
    let q = format!(
        "import duckdb; print(duckdb.sql(\"select distinct function, file, line from '{}/tables/frames.parquet'\").fetchall())",
        result.display()
    );
    let out = Command::new("python3").arg("-c").arg(q).output().unwrap();
    assert!(
        out.status.success(),
        "duckdb (scripts/install-deps.sh installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_stripped_binary_gets_functions_and_lines_from_debuginfod() {
    let dir = tempdir();
    let (idx, run_dir, cache) = (
        dir.path().join("idx"),
        dir.path().join("run"),
        dir.path().join("cache"),
    );
    for d in [&idx, &run_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    // The sample as built (with -g), a stripped copy that runs, its split debug info.
    let full = dir.path().join("full");
    std::fs::copy(sample("transitions"), &full).unwrap();
    let prog = run_dir.join("prog");
    run(Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(&prog)
        .arg(&full));
    run(Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&full)
        .arg(idx.join("prog.debug")));
    std::fs::copy(&prog, idx.join("prog")).unwrap();
    let id = kairos_symbolize::ElfInfo::open(&full)
        .unwrap()
        .build_id
        .unwrap();
    std::fs::remove_file(&full).unwrap();

    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("debuginfod")
        .arg("-F")
        .arg(&idx)
        .args(["-p", &port.to_string(), "-d"])
        .arg(dir.path().join("db.sqlite"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let server = match child {
        Ok(c) => Server(c),
        Err(e) => panic!("DEBUGINFOD NOT STARTED: cannot run `debuginfod` ({e}); scripts/install-deps.sh installs it (Debian package debuginfod)"),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while status(port, &format!("/buildid/{id}/debuginfo")) != 200 {
        assert!(
            Instant::now() < deadline,
            "DEBUGINFOD NOT READY: the server on port {port} did not serve build id {id} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("debuginfod serves build id {id} on 127.0.0.1:{port}");

    // Recorded without symbols: the binary is stripped and nothing else is asked.
    let rec = dir.path().join("rec");
    kairos(&[
        "collect",
        "hotspots",
        "-r",
        path_str(&rec),
        "--",
        path_str(&prog),
        "300",
    ])
    .ok();
    let no_cache = dir.path().join("empty-buildid-cache");
    let import = |out: &Path| {
        let o = Command::new(kairos_bin())
            .args([
                "import",
                path_str(&rec.join("perf.data")),
                "-r",
                path_str(out),
            ])
            .env("DEBUGINFOD_URLS", format!("http://127.0.0.1:{port}"))
            .env("DEBUGINFOD_CACHE_PATH", &cache)
            .env("DEBUGINFOD_TIMEOUT", "20")
            // perf record (other tests, the user) caches binaries by build id in ~/.debug,
            // where they would be found before the server is asked.
            .env("PERF_BUILDID_DIR", &no_cache)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        frames(out)
    };
    let with_binary = import(&dir.path().join("r1"));
    for f in ["('p3_C', ", "('F2', "] {
        assert!(with_binary.contains(f), "{f} missing: {with_binary}");
    }
    assert!(
        with_binary.contains("transitions.c"),
        "no source lines: {with_binary}"
    );
    assert!(
        cache.join(&id).join("debuginfo").is_file(),
        "not in elfutils' cache layout"
    );

    // The binary gone as well, and a fresh cache: both files come from the server.
    std::fs::remove_file(&prog).unwrap();
    std::fs::remove_dir_all(&cache).unwrap();
    let without = import(&dir.path().join("r2"));
    assert!(
        without.contains("('p3_C', ") && without.contains("transitions.c"),
        "{without}"
    );
    assert!(cache.join(&id).join("executable").is_file());
    drop(server);
}
