package journey

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/loadlab/loadlab/internal/expr"
)

// Part is a part of a multipart/form-data body: a text field, or a file
// with its file name and type. Name, Filename and ContentType are sent as
// written; Value is rendered per request.
type Part struct {
	Name  string
	Value *expr.Template
	// File: a file part, sent with Filename (which may be empty, as a
	// browser sends a file input left empty) and ContentType.
	File                  bool
	Filename, ContentType string

	head []byte // the part's delimiter and headers, made by Request
}

// Boundary is the boundary of a step's multipart body, made from key (the
// step's name and place): 24 characters of RFC 2046's, the same from run
// to run, so that the same seed sends the same bodies. A rendered part that
// holds it is not sent (ErrBoundary).
func Boundary(key string) string {
	h := fnv.New64a()
	h.Write([]byte(key))
	return fmt.Sprintf("loadlab-%016x", h.Sum64())
}

// ErrBoundary is a multipart part whose rendered value holds the body's
// boundary: sent, it would cut the body short.
var ErrBoundary = errors.New("holds the multipart boundary")

// dispositionEscaper escapes a name or file name in a Content-Disposition
// as browsers do (the HTML standard's multipart/form-data encoding).
var dispositionEscaper = strings.NewReplacer(`"`, "%22", "\r", "%0D", "\n", "%0A")

// partHead is a part's delimiter line and headers, up to its content.
func partHead(boundary string, p *Part) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"%s\"", boundary, dispositionEscaper.Replace(p.Name))
	if p.File {
		fmt.Fprintf(&b, "; filename=\"%s\"\r\nContent-Type: %s", dispositionEscaper.Replace(p.Filename), p.ContentType)
	}
	b.WriteString("\r\n\r\n")
	return b.Bytes()
}

// appendMultipart appends the step's multipart body to dst.
func (st *Step) appendMultipart(dst []byte, vars *expr.State) ([]byte, error) {
	var err error
	for i := range st.Multipart {
		p := &st.Multipart[i]
		dst = append(dst, p.head...)
		start := len(dst)
		if dst, err = p.Value.Append(dst, vars); err != nil {
			return dst, tooLarge("multipart "+p.Name, err)
		}
		if bytes.Contains(dst[start:], []byte(st.Boundary)) {
			return dst, fmt.Errorf("multipart %s %w %s", p.Name, ErrBoundary, st.Boundary)
		}
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, "--"...)
	dst = append(dst, st.Boundary...)
	return append(dst, "--\r\n"...), nil
}
