// Package failure keeps the response a check failed on and explains it: a
// copy of the first failing response of each step (status, headers, and
// the body up to MaxBody), masked by internal/secret's rule before anything
// shows or stores it, written as an HTTP message (failures/STEP.http in the
// run's directory), and the part of it a reader needs first: the text
// around what the check looked for, not the document's first bytes.
//
// The engine's recorders own the copies (Keep is called once per step and
// worker, on the step's first failure, so that no request pays for it); the
// runner masks and explains them (Mask, Near) when it builds the result.
package failure

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/loadlab/loadlab/internal/secret"
)

// MaxBody is how much of a failing response's body is kept: 256 KiB, enough
// for a whole HTML page with its flash message, bounded whatever the server
// sends.
const MaxBody = 256 << 10

// overlap is kept past MaxBody so that a secret across the cut is masked
// whole before the body is cut to MaxBody.
const overlap = 256

// Sought is what a failed check looked for, to find its neighbourhood.
type Sought struct {
	Contains string // the text a contains check expected, as rendered
	JSONPath string // the JSONPath a json check read, as written
}

// Response is a kept copy of a failing response, not yet masked.
type Response struct {
	Status int
	Header []byte // the header lines, each ending in CRLF
	Body   []byte // the first MaxBody (and overlap) bytes
	Size   int    // the body's whole length
	// Secrets are values known only while the VU ran (captured tokens), to
	// mask with the plan's own.
	Secrets []string
	// Reason is the status line's reason phrase as the server wrote it;
	// empty: Go's wording for the status.
	Reason string
}

// Keep copies a response: header and body may be the engine's buffers.
func Keep(status int, header, body []byte, secrets []string) *Response {
	n := min(len(body), MaxBody+overlap)
	return &Response{
		Status:  status,
		Header:  bytes.Clone(header),
		Body:    bytes.Clone(body[:n]),
		Size:    len(body),
		Secrets: secrets,
	}
}

// Masked is a kept response with every secret masked: Message is the whole
// HTTP message as a file holds it, Body its body alone, ContentType its
// Content-Type.
type Masked struct {
	Message     string
	Body        string
	ContentType string
}

// Mask masks a kept response by secret's rule: credential headers,
// Set-Cookie and Cookie values (and those values wherever else they
// appear), the given secrets (the plan's) and the response's own
// (captured values), and credentials in URL query strings.
func (r *Response) Mask(secrets []string) Masked {
	all := append(append([]string(nil), secrets...), r.Secrets...)
	var head strings.Builder
	var contentType string
	for _, line := range strings.Split(string(r.Header), "\r\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		all = append(all, secret.CookieValues(name, value)...)
		if strings.EqualFold(name, "Content-Type") {
			contentType = value
		}
	}
	for _, line := range strings.Split(string(r.Header), "\r\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fmt.Fprintf(&head, "%s: %s\r\n", name, secret.Replace(secret.ResponseHeader(name, strings.TrimSpace(value)), all))
	}
	body := secret.URL(secret.Replace(string(r.Body), all))
	cut := len(r.Body) > MaxBody || r.Size > len(r.Body)
	if len(body) > MaxBody {
		body = clip(body, MaxBody)
	}
	body = strings.ToValidUTF8(body, "\uFFFD")
	if cut {
		fmt.Fprintf(&head, "X-Loadlab-Kept: the first %d of %d bytes of the body\r\n", MaxBody, r.Size)
	}
	reason := r.Reason
	if reason == "" {
		reason = http.StatusText(r.Status)
	}
	msg := "HTTP/1.1 " + strconv.Itoa(r.Status) + " " + reason + "\r\n" + head.String() + "\r\n" + body
	return Masked{Message: msg, Body: body, ContentType: contentType}
}

// clip cuts s to at most n bytes at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// FileName is a safe file name for a step's kept response: the step's name
// (its scenario's before it, unless default) with anything but letters,
// digits, dot, dash and underscore made a dash, at most 80 characters, and
// a number after it when taken already has the name, and step- before a
// name Windows keeps for devices (con, nul, com1). It adds the name to
// taken.
func FileName(scenario, step string, taken map[string]bool) string {
	name := step
	if scenario != "" && scenario != "default" {
		name = scenario + "-" + step
	}
	var b strings.Builder
	dash := false
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		b.WriteRune(c)
		dash = false
	}
	base := strings.Trim(b.String(), "-.")
	if len(base) > 80 {
		base = strings.TrimRight(base[:80], "-.")
	}
	if base == "" {
		base = "step"
	}
	if reserved(base) {
		base = "step-" + base // con.http is a device on Windows, not a file
	}
	file := base + ".http"
	for i := 2; taken[file]; i++ {
		file = base + "-" + strconv.Itoa(i) + ".http"
	}
	taken[file] = true
	return file
}

// reserved reports whether Windows keeps a base name for a device, whatever
// its extension: CON, PRN, AUX, NUL, COM1 to COM9, LPT1 to LPT9.
func reserved(base string) bool {
	name, _, _ := strings.Cut(strings.ToUpper(base), ".")
	switch name {
	case "CON", "PRN", "AUX", "NUL":
		return true
	}
	return len(name) == 4 && (strings.HasPrefix(name, "COM") || strings.HasPrefix(name, "LPT")) && name[3] >= '1' && name[3] <= '9'
}
