package httpx

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// wsServer is a scripted WebSocket server on loopback: it answers the
// upgrade (with extra header lines, or as answer says) and hands the socket
// to script.
func wsServer(t testing.TB, answer func(key string) string, script func(c net.Conn, br *bufio.Reader)) *Origin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				key := ""
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Sec-WebSocket-Key") {
						key = strings.TrimSpace(v)
					}
					if line == "\r\n" {
						break
					}
				}
				if answer != nil {
					if _, err := io.WriteString(c, answer(key)); err != nil {
						return
					}
				} else {
					_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "+wsAccept(key)+"\r\nSet-Cookie: ws=1\r\n\r\n")
				}
				if script != nil {
					script(c, br)
				}
			}()
		}
	}()
	ap := netip.MustParseAddrPort(ln.Addr().String())
	return &Origin{Scheme: "http", Host: ap.String(), Addr: ap}
}

// serverFrame is an unmasked frame as a server sends it.
func serverFrame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	b := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n <= 0xFFFF:
		b = append(b, 126, byte(n>>8), byte(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

// readClientFrame reads one masked client frame.
func readClientFrame(br *bufio.Reader) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var l [2]byte
		_, _ = io.ReadFull(br, l[:])
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		_, _ = io.ReadFull(br, l[:])
		n = binary.BigEndian.Uint64(l[:])
	}
	if h[1]&0x80 == 0 {
		return 0, nil, errors.New("client frame not masked")
	}
	var m [4]byte
	_, _ = io.ReadFull(br, m[:])
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		return 0, nil, err
	}
	for i := range p {
		p[i] ^= m[i&3]
	}
	return h[0] & 0x0F, p, nil
}

// echo answers every text message with "echo: " and it, in two fragments.
func echo(c net.Conn, br *bufio.Reader) {
	for {
		op, p, err := readClientFrame(br)
		if err != nil || op == WSClose {
			if op == WSClose {
				_, _ = c.Write(serverFrame(true, WSClose, p))
			}
			return
		}
		if op == WSPong {
			continue
		}
		_, _ = c.Write(serverFrame(false, WSText, []byte("echo: ")))
		_, _ = c.Write(serverFrame(true, WSPing, []byte("hi")))
		_, _ = c.Write(serverFrame(true, WSContinuation, p))
	}
}

func TestWSEcho(t *testing.T) {
	o := wsServer(t, nil, echo)
	w, hs, err := DialWS(context.Background(), o, "/chat?x=1", []byte("Cookie: a=b\r\n"), 2*time.Second, WSLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if hs.Status != 101 || !bytes.Contains(hs.Header, []byte("Set-Cookie: ws=1")) {
		t.Fatalf("handshake %+v", hs)
	}
	for _, m := range []string{"hello", strings.Repeat("x", 300), strings.Repeat("y", 70000)} {
		if err := w.WriteMessage(WSText, []byte(m), time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		op, got, err := w.ReadMessage(time.Now().Add(2 * time.Second))
		if err != nil || op != WSText || string(got) != "echo: "+m {
			t.Fatalf("got %d %.40q %v", op, got, err)
		}
	}
	if err := w.Close(time.Second); err != nil {
		t.Fatal(err)
	}
}

func wsClass(t *testing.T, err error) *WSError {
	t.Helper()
	var we *WSError
	if !errors.As(err, &we) {
		t.Fatalf("error %v is not a *WSError", err)
	}
	return we
}

// A hostile server ends each read in a counted error under the caps, never
// a hang or an unbounded buffer.
func TestWSHostile(t *testing.T) {
	lim := WSLimits{MaxHeaderBytes: 8 << 10, MaxMessage: 64 << 10, MaxControl: 100, MaxFragments: 1000}
	cases := []struct {
		name   string
		answer func(string) string
		script func(net.Conn, *bufio.Reader)
		class  Failure
		status int
		code   int
		want   string
	}{
		{name: "refused", answer: func(string) string { return "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n" }, class: FailureConnect, status: 403, want: "handshake refused"},
		{name: "huge handshake header", answer: func(k string) string {
			return "HTTP/1.1 101 Switching Protocols\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\n\r\n"
		}, class: FailureProtocol, want: "header over"},
		{name: "endless header lines", answer: func(k string) string {
			return "HTTP/1.1 101 Switching Protocols\r\n" + strings.Repeat("X-A: b\r\n", 1<<16)
		}, class: FailureProtocol, want: "header over"},
		{name: "bad accept", answer: func(k string) string {
			return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: nope\r\n\r\n"
		}, class: FailureProtocol, want: "Sec-WebSocket-Accept"},
		{name: "frame larger than allowed", script: func(c net.Conn, _ *bufio.Reader) {
			_, _ = c.Write(serverFrame(true, WSBinary, make([]byte, 1<<20)))
		}, class: FailureProtocol, want: "larger than allowed"},
		{name: "claims 2^63 bytes", script: func(c net.Conn, _ *bufio.Reader) {
			_, _ = c.Write([]byte{0x82, 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		}, class: FailureProtocol, want: "larger than allowed"},
		{name: "endless fragments", script: func(c net.Conn, _ *bufio.Reader) {
			_, _ = c.Write(serverFrame(false, WSText, []byte("a")))
			f := serverFrame(false, WSContinuation, nil)
			for range 1 << 16 {
				if _, err := c.Write(f); err != nil {
					return
				}
			}
		}, class: FailureProtocol, want: "over 1000 frames"},
		{name: "endless frames of one message", script: func(c net.Conn, _ *bufio.Reader) {
			_, _ = c.Write(serverFrame(false, WSText, []byte("a")))
			f := serverFrame(false, WSContinuation, make([]byte, 1000))
			for range 1 << 12 {
				if _, err := c.Write(f); err != nil {
					return
				}
			}
		}, class: FailureProtocol, want: "larger than allowed"},
		{name: "ping flood", script: func(c net.Conn, br *bufio.Reader) {
			// The connection stays open until the client ends it: closing
			// with its pongs unread would reset it, and the client could
			// meet the reset before its cap on control frames (seen in CI).
			read := make(chan struct{})
			go func() { _, _ = io.Copy(io.Discard, br); close(read) }()
			f := serverFrame(true, WSPing, []byte("p"))
			for range 1 << 14 {
				if _, err := c.Write(f); err != nil {
					break
				}
			}
			select {
			case <-read:
			case <-time.After(2 * time.Second):
			}
		}, class: FailureProtocol, want: "control frames"},
		{name: "silence", script: func(c net.Conn, _ *bufio.Reader) { time.Sleep(2 * time.Second) }, class: FailureTimeout, want: "timeout"},
		{name: "close with code", script: func(c net.Conn, _ *bufio.Reader) {
			_, _ = c.Write(serverFrame(true, WSClose, append([]byte{0x0f, 0xa3}, "bye"...))) // 4003
		}, class: FailureReset, code: 4003, want: "code 4003"},
		{name: "close without frame", script: func(c net.Conn, _ *bufio.Reader) {}, class: FailureReset, code: 1006, want: "1006"},
		{name: "masked server frame", script: func(c net.Conn, _ *bufio.Reader) {
			_, _ = c.Write(AppendWSFrame(nil, WSText, []byte("x"), [4]byte{1, 2, 3, 4}))
		}, class: FailureProtocol, want: "masked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := wsServer(t, tc.answer, tc.script)
			start := time.Now()
			w, hs, err := DialWS(context.Background(), o, "/", nil, 2*time.Second, lim)
			if err == nil {
				_, _, err = w.ReadMessage(time.Now().Add(300 * time.Millisecond))
				_ = w.Close(100 * time.Millisecond)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("took %v", took)
			}
			if err == nil {
				t.Fatal("no error")
			}
			we := wsClass(t, err)
			if we.Class != tc.class || we.Status != tc.status && tc.status != 0 || tc.code != 0 && we.Code != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v: class %v status %d code %d; want %v %d %d %q (handshake %d)", err, we.Class, we.Status, we.Code, tc.class, tc.status, tc.code, tc.want, hs.Status)
			}
			if tc.status != 0 && hs.Status != tc.status {
				t.Fatalf("handshake status %d", hs.Status)
			}
		})
	}
}

func TestWSConnectRefused(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ap := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close()
	_, _, err := DialWS(context.Background(), &Origin{Scheme: "http", Host: ap.String(), Addr: ap}, "/", nil, time.Second, WSLimits{})
	if we := wsClass(t, err); we.Class != FailureConnect {
		t.Fatalf("%v: class %v", err, we.Class)
	}
}

// BenchmarkWSRoundTrip is the codec's cost per message: a 64-byte text
// message sent and its echo read back over loopback.
func BenchmarkWSRoundTrip(b *testing.B) {
	o := wsServer(b, nil, func(c net.Conn, br *bufio.Reader) {
		for {
			op, p, err := readClientFrame(br)
			if err != nil || op == WSClose {
				return
			}
			_, _ = c.Write(serverFrame(true, WSText, p))
		}
	})
	w, _, err := DialWS(context.Background(), o, "/", nil, 2*time.Second, WSLimits{})
	if err != nil {
		b.Fatal(err)
	}
	msg := bytes.Repeat([]byte("m"), 64)
	b.ReportAllocs()
	for b.Loop() {
		d := time.Now().Add(time.Second)
		if err := w.WriteMessage(WSText, msg, d); err != nil {
			b.Fatal(err)
		}
		if _, _, err := w.ReadMessage(d); err != nil {
			b.Fatal(err)
		}
	}
	_ = w.Close(100 * time.Millisecond)
}
