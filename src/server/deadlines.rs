//! The read deadlines of an HTTP/1.1 connection, kept apart as Go's net/http
//! server keeps them (`(*conn).serve`: `IdleTimeout` until the first byte of
//! the next request, then `ReadHeaderTimeout` for its head). hyper's
//! `header_read_timeout` cannot: it starts the clock whenever it waits for a
//! head (hyper 1.12 `Conn::poll_read_head`), so it also closes every idle
//! keep-alive connection after the head deadline. The API server keeps its
//! idle connections to a webhook for 90 s (`http.DefaultTransport`'s
//! `IdleConnTimeout`, set by apimachinery `utilnet.SetOldTransportDefaults`),
//! and a review it writes into a connection this side is closing is lost: a
//! POST is not retried.
//!
//! So hyper gets no head deadline, and this wrapper watches the bytes instead:
//! a new connection has `head` for its first request, as Go gives it; waiting
//! for a later request, it has `idle`; from the first byte of a head to the
//! blank line that ends it, `head`; after that the routes' review deadline
//! bounds the body and the answer. The answer's first bytes begin the next wait.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// How long a connection may wait between requests, and how long a head may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadDeadlines {
    pub idle: Duration,
    pub head: Duration,
}

/// Where a connection is in its request: what decides which deadline runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the first request or after an answer: waiting for a first byte.
    Idle,
    /// Inside a head. `content` once a byte other than a line end has come
    /// (leading empty lines do not end a head); `line_ends` counts the line
    /// ends since the last such byte, and the second one ends the head.
    Head { content: bool, line_ends: u8 },
    /// Past the head: no deadline here.
    Message,
}

impl Phase {
    const NEW_HEAD: Phase = Phase::Head { content: false, line_ends: 0 };

    /// The phase after `bytes` arrive. A head ends at an empty line, CRLF or a
    /// bare LF as httparse accepts; anything after it is body.
    fn after_reading(self, bytes: &[u8]) -> Phase {
        let mut phase = match self {
            Phase::Idle if !bytes.is_empty() => Phase::NEW_HEAD,
            other => other,
        };
        for &byte in bytes {
            let Phase::Head { content, line_ends } = phase else { break };
            phase = match byte {
                b'\r' => phase,
                b'\n' if !content => phase,
                b'\n' if line_ends == 1 => Phase::Message,
                b'\n' => Phase::Head { content, line_ends: line_ends + 1 },
                _ => Phase::Head { content: true, line_ends: 0 },
            };
        }
        phase
    }

    /// The phase after an answer's bytes are written: an informational answer
    /// (`100 Continue`) comes before the body, not after the request.
    fn after_writing(self, bytes: &[u8]) -> Phase {
        if bytes.is_empty() || bytes.starts_with(b"HTTP/1.1 1") { self } else { Phase::Idle }
    }
}

/// An HTTP/1.1 connection's transport with its read deadlines enforced: a
/// read that waits past the running deadline fails with `TimedOut`, which
/// ends the connection.
pub struct Deadlined<T> {
    io: T,
    deadlines: ReadDeadlines,
    phase: Phase,
    deadline: Pin<Box<Sleep>>,
}

impl<T> Deadlined<T> {
    pub fn new(io: T, deadlines: ReadDeadlines) -> Self {
        // Whoever connects means to send a request now: idling is for keep-alive.
        let deadline = Box::pin(tokio::time::sleep(deadlines.head));
        Self { io, deadlines, phase: Phase::Idle, deadline }
    }

    fn enter(&mut self, phase: Phase) {
        let limit = match (self.phase, phase) {
            (Phase::Idle, Phase::Head { .. } | Phase::Message) => Some(self.deadlines.head),
            (Phase::Head { .. } | Phase::Message, Phase::Idle) => Some(self.deadlines.idle),
            _ => None,
        };
        if let Some(limit) = limit {
            self.deadline.as_mut().reset(Instant::now() + limit);
        }
        self.phase = phase;
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Deadlined<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let phase = this.phase.after_reading(&buf.filled()[before..]);
                this.enter(phase);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending if this.phase == Phase::Message => Poll::Pending,
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let waited = if this.phase == Phase::Idle { "for a request" } else { "for the rest of a head" };
                    Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, format!("waited too long {waited}"))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Deadlined<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(count)) = written {
            let phase = this.phase.after_writing(&buf[..count]);
            this.enter(phase);
        }
        written
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(count)) = written {
            let first = bufs.iter().find(|slice| !slice.is_empty()).map_or(&[][..], |slice| &slice[..]);
            let phase = this.phase.after_writing(&first[..count.min(first.len())]);
            this.enter(phase);
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(chunks: &[&[u8]]) -> Phase {
        chunks.iter().fold(Phase::Idle, |phase, chunk| phase.after_reading(chunk))
    }

    #[test]
    fn a_head_ends_at_its_empty_line_whatever_the_chunks() {
        let head = b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(read_all(&[head]), Phase::Message);
        let bytewise: Vec<&[u8]> = head.chunks(1).collect();
        assert_eq!(read_all(&bytewise), Phase::Message);
        assert_eq!(read_all(&[b"GET / HTTP/1.1\n\n"]), Phase::Message, "bare line feeds, as httparse allows");
    }

    #[test]
    fn a_head_cut_short_is_still_a_head() {
        assert_eq!(read_all(&[]), Phase::Idle);
        assert_eq!(read_all(&[b""]), Phase::Idle, "end of stream starts nothing");
        assert!(matches!(read_all(&[b"POST /validate HTTP/1.1\r\nHost: x\r\n"]), Phase::Head { .. }));
        assert!(matches!(read_all(&[b"POST /validate HTTP/1.1\r\n\r"]), Phase::Head { .. }));
        // Empty lines before the request line end nothing: a client cannot
        // send a blank line and then trickle its head with no deadline.
        assert!(matches!(read_all(&[b"\r\n\r\n\r\nGET / HTTP/1.1\r\n"]), Phase::Head { content: true, .. }));
        assert!(matches!(read_all(&[b"GET / HTTP/1.1\r\nA: b\r\nC: d\r\n"]), Phase::Head { .. }));
    }

    #[test]
    fn an_answer_starts_the_next_wait_but_a_continue_does_not() {
        let reading = Phase::Message;
        assert_eq!(reading.after_writing(b"HTTP/1.1 200 OK\r\n"), Phase::Idle);
        assert_eq!(reading.after_writing(b"HTTP/1.1 100 Continue\r\n\r\n"), Phase::Message);
        assert_eq!(reading.after_writing(b""), Phase::Message);
        // A head cut off by an error answer (431, 400) waits again too.
        assert_eq!(Phase::NEW_HEAD.after_writing(b"HTTP/1.1 431 "), Phase::Idle);
    }

    /// How long a read waited before it failed; a read that would wait for
    /// ever (no deadline running) fails the test instead of hanging it.
    async fn waited_to_fail(server: &mut Deadlined<tokio::io::DuplexStream>) -> (String, Duration) {
        use tokio::io::AsyncReadExt;
        let started = Instant::now();
        let read = tokio::time::timeout(Duration::from_secs(1000), server.read(&mut [0u8; 64])).await;
        let error = read.expect("a deadline ends the wait").unwrap_err();
        (format!("{:?}: {error}", error.kind()), started.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn each_wait_has_its_own_deadline() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let deadlines = ReadDeadlines { idle: Duration::from_secs(120), head: Duration::from_secs(10) };
        let timed_out = |waiting: &str, after: u64| {
            (format!("TimedOut: waited too long for {waiting}"), Duration::from_secs(after))
        };
        let mut buf = [0u8; 64];
        // A new connection that sends nothing has the head deadline.
        let (_client, server) = tokio::io::duplex(1024);
        assert_eq!(waited_to_fail(&mut Deadlined::new(server, deadlines)).await, timed_out("a request", 10));
        // A head begun and left unfinished fails at the head deadline, counted from its first byte.
        let (mut client, server) = tokio::io::duplex(1024);
        let mut server = Deadlined::new(server, deadlines);
        tokio::time::sleep(Duration::from_secs(5)).await;
        client.write_all(b"POST /validate HTTP/1.1\r\n").await.unwrap();
        assert!(server.read(&mut buf).await.unwrap() > 0);
        assert_eq!(waited_to_fail(&mut server).await, timed_out("the rest of a head", 10));
        // After an answer, a connection waits the idle deadline, not the head's;
        // a whole head has no deadline while its answer is being decided.
        let (mut client, server) = tokio::io::duplex(1024);
        let mut server = Deadlined::new(server, deadlines);
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        assert!(server.read(&mut buf).await.unwrap() > 0);
        let deciding = tokio::time::timeout(Duration::from_secs(60), server.read(&mut buf)).await;
        assert!(deciding.is_err(), "no deadline between a whole head and its answer");
        server.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await.unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(1), client.read(&mut buf)).await;
        assert!(answer.expect("the answer arrives").unwrap() > 0);
        assert_eq!(waited_to_fail(&mut server).await, timed_out("a request", 120));
    }

    #[tokio::test]
    async fn writes_pass_through_and_a_vectored_answer_starts_the_wait() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
        let deadlines = ReadDeadlines { idle: Duration::from_secs(120), head: Duration::from_secs(10) };
        assert!(Deadlined::new(Vec::<u8>::new(), deadlines).is_write_vectored(), "as the transport says");
        /// A transport without vectored writes (the trait's default).
        struct Plain;
        impl AsyncWrite for Plain {
            fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                Poll::Ready(Ok(buf.len()))
            }
            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }
            fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }
        }
        assert!(!Deadlined::new(Plain, deadlines).is_write_vectored());
        async fn within<T>(read: impl std::future::Future<Output = io::Result<T>>) -> T {
            tokio::time::timeout(Duration::from_secs(5), read).await.expect("in time").unwrap()
        }
        let (mut client, server) = tokio::io::duplex(1024);
        let mut server = Deadlined::new(BufWriter::new(server), deadlines);
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        assert!(server.read(&mut [0u8; 64]).await.unwrap() > 0);
        assert_eq!(server.phase, Phase::Message);
        // hyper writes an answer's head and body as slices; the first may be empty.
        let answer = b"HTTP/1.1 200 OK\r\n\r\n";
        let slices = [io::IoSlice::new(b""), io::IoSlice::new(answer)];
        assert_eq!(server.write_vectored(&slices).await.unwrap(), answer.len());
        assert_eq!(server.phase, Phase::Idle);
        server.flush().await.unwrap();
        let mut received = [0u8; 64];
        let count = within(client.read(&mut received)).await;
        assert_eq!(&received[..count], answer);
        server.shutdown().await.unwrap();
        assert_eq!(within(client.read(&mut received)).await, 0, "the shutdown reaches the client");
    }
}
