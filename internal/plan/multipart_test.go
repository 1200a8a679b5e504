package plan

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadlab/loadlab/internal/journey"
)

// TestMultipartBody: a multipart: step's request is a multipart/form-data
// body that Go's own parser (mime/multipart, as net/http's servers read
// it) reads back into the fields, in order and repeated names kept, and
// the files with their names, types and rendered content; a file: part is
// sent as the file holds it. A quote in a name is sent as %22, as browsers
// send it (the HTML standard's encoding), which Go's parser leaves as it is.
func TestMultipartBody(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "logo.bin"), []byte("\x00{{ raw }}\r\n--x"), 0o644)
	path := filepath.Join(dir, "plan.yaml")
	os.WriteFile(path, []byte(renderedPlan(`post: /issues
    multipart:
      fields:
        - authenticity_token: "tok/{{ vu }}=="
        - "tags[]": a
        - "tags[]": b
      files:
        - { name: "attachments[1][file]", filename: "a \"b\".txt", content_type: text/plain, content: "line 1\r\nline 2 of VU {{ vu }}" }
        - { name: logo, filename: logo.bin, file: logo.bin }
        - { name: "attachments[2][file]" }
        - { name: "attachments[3][file]", filename: "", content_type: application/octet-stream }`, "")), 0o644)
	p, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw := build(t, p)
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("not an HTTP request: %v\n%s", err, raw)
	}
	mt, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		t.Fatalf("Content-Type %q: %v", req.Header.Get("Content-Type"), err)
	}
	type part struct{ name, filename, ctype, body string }
	var got []part
	mr := multipart.NewReader(req.Body, params["boundary"])
	for {
		pt, err := mr.NextRawPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("part %d: %v\n%s", len(got)+1, err, raw)
		}
		b, _ := io.ReadAll(pt)
		got = append(got, part{pt.FormName(), pt.FileName(), pt.Header.Get("Content-Type"), string(b)})
	}
	want := []part{
		{"authenticity_token", "", "", "tok/0=="},
		{"tags[]", "", "", "a"},
		{"tags[]", "", "", "b"},
		{"attachments[1][file]", "a %22b%22.txt", "text/plain", "line 1\r\nline 2 of VU 0"},
		{"logo", "logo.bin", "application/octet-stream", "\x00{{ raw }}\r\n--x"},
		{"attachments[2][file]", "", "application/octet-stream", ""},
		{"attachments[3][file]", "", "application/octet-stream", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d parts, want %d: %q\n%s", len(got), len(want), got, raw)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("part %d: %q, want %q", i+1, got[i], want[i])
		}
	}
	if req.ContentLength != int64(len(raw)-strings.Index(raw, "\r\n\r\n")-4) {
		t.Errorf("Content-Length %d does not fit the body", req.ContentLength)
	}
}

// TestMultipartErrors: what is wrong in a multipart: body is said where it
// is written.
func TestMultipartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct{ step, want string }{
		{"post: /\n    multipart: {}", ":4:16: multipart: has no parts"},
		{"post: /\n    multipart: { field: { a: b } }", `:4:18: unknown key "field" in multipart; did you mean "fields"?`},
		{"post: /\n    multipart: { fields: [ { a: b, c: d } ] }", ":4:28: multipart.fields: each item of the list is one name: value"},
		{"post: /\n    multipart: { files: { name: a } }", ":4:25: multipart.files must be a list"},
		{"post: /\n    multipart: { files: [ { filename: a.txt } ] }", ":4:27: a multipart file needs name:"},
		{"post: /\n    multipart: { files: [ { name: a, file: nope.bin } ] }", ":4:44: multipart file a: cannot open "},
		{"post: /\n    multipart: { files: [ { name: a, content: x, file: b } ] }", ":4:56: a multipart file has content: or file:, not both"},
		{"post: /\n    multipart: { files: [ { name: a, content_type: \"\" } ] }", ":4:52: content_type must not be empty"},
		{"post: /\n    multipart: { fields: { t: \"{{ nope }}\" } }", `:4:35: undefined variable "nope"`},
		{"post: /\n    form: { a: b }\n    multipart: { fields: { a: b } }", ":3:9: a step has one body: give json:, form:, multipart:, body: or body_file:, not several"},
	} {
		path := filepath.Join(dir, "plan.yaml")
		os.WriteFile(path, []byte(renderedPlan(tt.step, "")), 0o644)
		_, err := Load(path, Options{})
		if err == nil || !strings.Contains(err.Error(), path+tt.want) {
			t.Errorf("%s:\n got %v\nwant %s%s", tt.step, err, path, tt.want)
		}
	}
}

// TestMultipartBoundary: a part's text that holds the body's boundary
// would end its part early: one fixed when the plan loads is refused where
// it is written, and one rendered per request (a capture's) is not sent.
func TestMultipartBoundary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	load := func(value string) (*Plan, error) {
		path := filepath.Join(dir, "plan.yaml")
		os.WriteFile(path, []byte(renderedPlan("post: /\n    multipart:\n      fields: { a: "+q(value)+" }", "")), 0o644)
		return Load(path, Options{})
	}
	p, err := load("x")
	if err != nil {
		t.Fatal(err)
	}
	req := build(t, p)
	_, boundary, ok := strings.Cut(req, "boundary=")
	boundary, _, _ = strings.Cut(boundary, "\r\n")
	if !ok || boundary == "" {
		t.Fatalf("no boundary in %q", req)
	}
	_, err = load("a --" + boundary)
	if want := filepath.Join(dir, "plan.yaml") + ":5:20: POST /: the multipart field a holds the multipart boundary " + boundary; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a field holding the boundary: %v, want %s", err, want)
	}
	// A data column is rendered per request.
	os.WriteFile(filepath.Join(dir, "d.csv"), []byte("v\nb --"+boundary+"\n"), 0o644)
	path := filepath.Join(dir, "plan.yaml")
	os.WriteFile(path, []byte(renderedPlan("post: /\n    multipart:\n      fields: { a: \"{{ d.v }}\" }", "data: { d: { csv: d.csv } }\n")), 0o644)
	p, err = Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buildErr(p); !errors.Is(err, journey.ErrBoundary) || !strings.Contains(err.Error(), "multipart a holds the multipart boundary "+boundary) {
		t.Errorf("a rendered field holding the boundary: %v", err)
	}
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }
