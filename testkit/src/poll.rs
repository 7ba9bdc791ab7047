//! Waiting for a condition until a deadline. Whatever a check reads (a socket,
//! a file, kubectl) is retried until the deadline: a check answers `None`
//! (not yet), never panics on a failed read.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};

/// Polls `check` every `every` until it yields a value, `timeout` passes, or
/// `alive` reports that a process it depends on has died.
pub fn poll<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut alive: impl FnMut() -> Result<()>,
    mut check: impl FnMut() -> Option<T>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return Ok(value);
        }
        alive().with_context(|| format!("while waiting for {what}"))?;
        ensure!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(every);
    }
}

/// [`poll`] every 200 ms with nothing to watch die; panics at the deadline
/// (for a test's own waits).
pub fn wait_for<T>(what: &str, timeout: Duration, check: impl FnMut() -> Option<T>) -> T {
    poll(what, timeout, Duration::from_millis(200), || Ok(()), check).unwrap_or_else(|error| panic!("{error:#}"))
}

/// `GET http://127.0.0.1:PORT/PATH` (HTTP/1.0, 2 s read timeout): the status
/// and the body, or None when the connection or the read fails.
pub fn http_status(port: u16, path: &str) -> Option<(u16, String)> {
    let attempt = || -> std::io::Result<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        Ok(response)
    };
    let response = attempt().ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.") {
        return None;
    }
    let status = head.get(9..12)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// True when `GET http://127.0.0.1:PORT/PATH` answers 200 (reads the status
/// line only: a server that keeps the connection open does not hold it up).
pub fn http_ok(port: u16, path: &str) -> bool {
    let attempt = || -> std::io::Result<bool> {
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head)?;
        Ok(head.starts_with(b"HTTP/1.") && &head[9..12] == b"200")
    };
    attempt().unwrap_or(false)
}

/// The body of `GET http://127.0.0.1:PORT/PATH` when it answers 200.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    http_status(port, path).and_then(|(status, body)| (status == 200).then_some(body))
}

/// True when something accepts connections on 127.0.0.1:PORT.
pub fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}
