//! The scripted LLM server for browser tests: `llm_wiki::scripted::server::handle` served
//! over HTTP/1.1 on 127.0.0.1, with the standard library only (TcpListener, one thread per
//! connection, `Connection: close`).
//!
//! ```sh
//! cargo run --example scripted-llm-server -- --port 11435 --allow-origin http://allowed.example.test
//! ```
//!
//! Prints `listening on http://127.0.0.1:PORT` once it accepts connections (`--port 0` picks a
//! free port). Protocol, fault modes and control endpoints: see the `server` module docs
//! (`GET /__requests`, `POST /__reset`, path prefix `/fault/<spec>/`). Streamed bodies are written
//! in the chunks the handler chose (5 bytes by default, splitting frames and UTF-8 characters),
//! flushed one by one with TCP_NODELAY and a short pause, so the browser sees separate reads.
//! Stops on SIGTERM/SIGINT like any process (the test script kills it).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use llm_wiki::scripted::server::{handle, ServerRequest, ServerState};

struct Options {
    port: u16,
    allowed: Vec<String>,
    verbose: bool,
}

fn usage() -> ! {
    eprintln!("usage: scripted-llm-server [--port N] [--allow-origin ORIGIN]... [--verbose]");
    std::process::exit(2)
}

fn options() -> Options {
    let mut o = Options {
        port: 11435,
        allowed: vec![],
        verbose: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => {
                o.port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--allow-origin" => o.allowed.push(args.next().unwrap_or_else(|| usage())),
            "--verbose" => o.verbose = true,
            _ => usage(),
        }
    }
    o
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

/// Reads one request: request line, headers, and a `Content-Length` body.
fn read_request(stream: &TcpStream) -> std::io::Result<Option<ServerRequest>> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
        return Ok(None);
    };
    let (method, path) = (method.to_string(), path.to_string());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end_matches(['\r', '\n']);
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let len = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len.min(64 * 1024 * 1024)];
    reader.read_exact(&mut body)?;
    Ok(Some(ServerRequest {
        method,
        path,
        headers,
        body,
    }))
}

fn serve(mut stream: TcpStream, state: &ServerState, verbose: bool) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let Some(req) = read_request(&stream)? else {
        return Ok(());
    };
    let resp = handle(state, &req);
    if verbose {
        eprintln!("{} {} -> {}", req.method, req.path, resp.status);
    }
    if resp.delay_ms > 0 {
        std::thread::sleep(Duration::from_millis(resp.delay_ms));
    }
    let mut head = format!("HTTP/1.1 {} {}\r\n", resp.status, reason(resp.status));
    for (k, v) in &resp.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !resp.streamed {
        head.push_str(&format!("content-length: {}\r\n", resp.body().len()));
    }
    head.push_str("connection: close\r\n\r\n");
    stream.write_all(head.as_bytes())?;
    if resp.streamed {
        stream.flush()?;
        let pause = Duration::from_millis(resp.chunk_delay_ms.max(1));
        std::thread::sleep(Duration::from_millis(resp.first_chunk_delay_ms));
        for (i, chunk) in resp.chunks.iter().enumerate() {
            if resp.stall_after == Some(i) {
                // A stalled stream: nothing more, the connection open until the client gives up.
                let mut probe = [0u8; 1];
                let _ = stream.set_read_timeout(Some(Duration::from_secs(600)));
                let _ = (&stream).read(&mut probe);
                return Ok(());
            }
            stream.write_all(chunk)?;
            stream.flush()?;
            std::thread::sleep(pause);
        }
    } else if req.method != "HEAD" {
        stream.write_all(&resp.body())?;
    }
    stream.flush()?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(())
}

fn main() {
    let o = options();
    let listener = match TcpListener::bind(("127.0.0.1", o.port)) {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "scripted-llm-server: cannot listen on 127.0.0.1:{}: {e}",
                o.port
            );
            std::process::exit(1);
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(o.port);
    let state = Arc::new(ServerState::new(o.allowed));
    println!("listening on http://127.0.0.1:{port}");
    let _ = std::io::stdout().flush();
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let state = state.clone();
        let verbose = o.verbose;
        std::thread::spawn(move || {
            if let Err(e) = serve(stream, &state, verbose) {
                if verbose {
                    eprintln!("connection error: {e}");
                }
            }
        });
    }
}
