package httpx

import (
	"fmt"
	"os"
	"time"
)

// Engine is the socket layer under a Loop: how it opens connections, reads,
// writes and waits. Everything above it (the connection state machine, the
// parser, TLS settings, timers, timeouts, error classes and timing phases) is
// the same code whatever the engine.
type Engine uint8

const (
	// EngineAuto takes the engine from the environment variable EngineEnv,
	// and without it the platform's best: epoll on Linux, portable elsewhere.
	EngineAuto Engine = iota
	// EngineEpoll is Linux's fast path: one epoll instance per loop and raw
	// non-blocking sockets, as wrk does.
	EngineEpoll
	// EnginePortable runs on every platform Go does: a net.Conn per
	// connection whose blocking reads and writes happen on goroutines of
	// their own and are posted to the loop.
	EnginePortable
)

// EngineEnv is the environment variable that chooses the engine of loops
// whose Options leave it at EngineAuto: "epoll" or "portable".
const EngineEnv = "LOADLAB_ENGINE"

var engineNames = [...]string{"auto", "epoll", "portable"}

func (e Engine) String() string {
	if int(e) < len(engineNames) {
		return engineNames[e]
	}
	return fmt.Sprintf("Engine(%d)", int(e))
}

// ParseEngine reads an engine's name; the empty string is EngineAuto.
func ParseEngine(s string) (Engine, error) {
	switch s {
	case "", "auto":
		return EngineAuto, nil
	case "epoll":
		return EngineEpoll, nil
	case "portable":
		return EnginePortable, nil
	}
	return EngineAuto, fmt.Errorf("unknown engine %q: use epoll (Linux only) or portable", s)
}

// EngineFromEnv is the engine that loops leaving Options.Engine at
// EngineAuto run on: EngineEnv's, or the platform's best. Its error (an
// unknown name, epoll outside Linux) is the one NewLoop would return, for a
// command to refuse before it starts anything.
func EngineFromEnv() (Engine, error) { return resolveEngine(EngineAuto) }

// resolveEngine turns EngineAuto into the engine a loop runs on.
func resolveEngine(e Engine) (Engine, error) {
	if e == EngineAuto {
		v := os.Getenv(EngineEnv)
		parsed, err := ParseEngine(v)
		if err != nil {
			return EngineAuto, fmt.Errorf("%s=%s: %w", EngineEnv, v, err)
		}
		e = parsed
	}
	if e == EngineAuto {
		e = platformEngine
	}
	if e != EngineEpoll && e != EnginePortable {
		return EngineAuto, fmt.Errorf("unknown engine %v", e)
	}
	return e, nil
}

// poller is a Loop's half of an engine. Its methods run on the loop's
// goroutine, except wake, which any goroutine may call.
type poller interface {
	// start prepares the goroutine that runs the loop; the function it
	// returns undoes that when Run returns.
	start() (release func())
	// wait waits for events until timeout (negative: no limit) and handles
	// what arrived: socket events, and the inbox once woken.
	wait(timeout time.Duration) error
	// wake makes a wait in progress, or the next one, return.
	wake()
	// socket makes the socket layer of a new connection.
	socket(c *Conn) socket
	// close frees the poller once every connection is closed.
	close()
}

// socket is a Conn's half of an engine: one connection at a time, reopened
// after a close.
type socket interface {
	// connect opens the connection to c's origin (with its TLS handshake).
	// It ends in c.opened, or in c.fail with FailureConnect or FailureTLS, and
	// registers c with the loop (c.loop.register) once there is something
	// to time out or close.
	connect()
	// write sends an encoded request. A failure ends in c.fail with FailureReset.
	write(request []byte)
	// holdForWrite reports whether the request is still being written when
	// its response is complete; the socket then calls c.finish when the
	// write ends, so the request's bytes stay unchanged until then.
	holdForWrite() bool
	// close closes the connection, if open, and forgets its events.
	close()
}
