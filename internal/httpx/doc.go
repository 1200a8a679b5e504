// Package httpx is loadlab's HTTP/1.1 client engine: event loops that each
// run many connections on one goroutine, an incremental response parser, the
// request writer, TLS, cookies and the timing phases of every exchange
// (connect, send, first byte, end). It owns the connections and their
// buffers; callers own the Exchanges they hand to Conn.Do and get them back
// in their Handler, on the loop's goroutine.
//
// # Engines
//
// A Loop runs on one of two engines, the socket layer under the same Loop and
// Conn: the connection state machine, parser, TLS settings, timers, timeouts,
// error classes (connect, timeout, reset, protocol, tls) and timing phases
// are one code whatever the engine.
//
//   - epoll, Linux's fast path and its default: one epoll instance per loop,
//     non-blocking sockets read and written with raw system calls, no
//     goroutine or buffer per connection, the loop locked to its OS thread
//     with a 1 ns timer slack.
//   - portable, the only engine on macOS, Windows and the BSDs, and on Linux
//     when asked for: each connection is a net.Conn (crypto/tls over it for
//     HTTPS) with a goroutine that dials, handshakes and writes and one that
//     reads; both post what happened to a channel that the loop's wait
//     selects on, with a timer for its next timer or sweep. Handlers and
//     Timers still run on the loop's goroutine, and a server that stops
//     reading blocks only its own connection's writer, never the loop.
//
// Options.Engine chooses; left at EngineAuto it is read from the
// LOADLAB_ENGINE environment variable ("epoll" or "portable"; anything else
// is an error from NewLoop), and without it the platform's default. CI runs
// the whole test suite a second time with LOADLAB_ENGINE=portable, so the
// fallback is tested on Linux, not only built.
//
// Why goroutines and not kqueue or IOCP for the portable engine: one
// implementation that Go's runtime makes work on every platform (its netpoller
// is kqueue on macOS and IOCP on Windows underneath), testable here on Linux,
// at a cost measured side by side with bench/engines.sh (nginx on CPU 0,
// loadlab on CPU 1, 50 keep-alive connections, 5 s per engine, three rounds
// alternating, 2026-12-01 on this project's 2-core VM shared with other
// work): CPU per request 20.7 / 19.4 / 21.7 µs on epoll against
// 26.3 / 27.0 / 26.1 µs on portable, a ratio of 1.27 / 1.39 / 1.20 (1.24 at
// the median over HTTPS, bench/engines.sh --tls); peak RSS 23 MB against 27 MB. That is still below hey's and vegeta's CPU per
// request (docs/benchmarks.md). Its memory per open connection is higher
// (one goroutine blocked in its read, and a read buffer of 4 KiB, growing
// to 64 KiB while reads fill it; a writer goroutine lives only while a request
// is written), and its timers fire on Go's runtime timers, which on Linux
// are late by up to about a millisecond where the epoll wait is late by
// microseconds.
//
// # HTTP/2
//
// An Origin made HTTP/2 (UseHTTP2) speaks h2 by ALPN over TLS and h2c with
// prior knowledge over TCP. Its Conns are stream slots: each carries one
// exchange at a time, as any Conn, and the slots of a group (the streams a
// connection carries) share one HTTP/2 connection, each exchange on a
// stream of its own. Frames and HPACK are golang.org/x/net/http2's Framer
// and hpack, run on the loop's goroutine with the streams, flow control and
// SETTINGS; a response's head and DATA go to the slot's parser as an
// HTTP/1.1 head and chunks, so limits, content decoding, timeouts and
// timing phases are HTTP/1.1's code (see h2.go).
//
// Engine: whatever the loop's, an HTTP/2 connection does its I/O the
// portable engine's way: a goroutine reads the net.Conn (crypto/tls over it
// for h2) and one writes, posting to the loop. Chosen for a correct,
// bounded implementation first: one code on every platform, crypto/tls's
// ALPN as it is, and two goroutines per connection, not per request, since a
// connection multiplexes many exchanges. Its cost, measured side by side
// with h2load against nginx (bench/h2.sh, docs/benchmarks.md, 10
// connections × 10 streams): 1.17 × h2load's CPU per request over TLS and
// 1.03 × over h2c at the median of three rounds, within ±0.3 from run to run
// on a shared machine; 48 MB peak RSS at 5,000 streams. What made it so: the reader gathers what it reads while the loop
// is busy, and the loop takes it all at once, because a TLS read returns
// one record, often one small response, and a post to the loop for each had
// cost 2.1 × h2load per request. Putting the socket on the loop's epoll
// instead would save the reader's hand-offs, and is the next step if that
// ever matters more than one implementation everywhere.
package httpx
