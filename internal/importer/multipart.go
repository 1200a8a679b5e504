package importer

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"
	"unicode/utf8"

	"github.com/loadlab/loadlab/internal/secret"
)

// multipartBody is a recorded multipart/form-data body as the plan's
// multipart: writes it: its text fields, templated as a urlencoded form's
// are, and its files.
type multipartBody struct {
	fields []kv
	files  []filePart
}

type filePart struct {
	name, filename, contentType string
	content                     string
	omitted                     string // why the content is not written, or ""
}

// maxFileShown is the most of a recorded file's content written into the
// plan; a longer file is left out, for the user to name with file:.
const maxFileShown = 64 << 10

// multipart reads entry i's multipart body (its text, by the boundary of
// its type, or its params when a browser recorded no text) into fields and
// files, correlating the fields' values; nil when it cannot be read.
func (im *importer) multipart(i int, mimeType, contentType, text string, params []param) *multipartBody {
	var parts []param
	_, mtParams, err := mime.ParseMediaType(mimeType)
	if err != nil || mtParams["boundary"] == "" {
		_, mtParams, err = mime.ParseMediaType(contentType)
	}
	if text != "" && err == nil && mtParams["boundary"] != "" {
		parts, err = readMultipart(text, mtParams["boundary"])
		if err != nil {
			parts = nil
		}
	}
	if parts == nil {
		if len(params) == 0 {
			return nil
		}
		parts = params
	}
	mp := &multipartBody{}
	for _, p := range parts {
		if p.FileName == nil {
			mp.fields = append(mp.fields, kv{p.Name, im.template(i, candidate{value: p.Value, field: p.Name, secret: secret.Name(p.Name)})})
			continue
		}
		f := filePart{name: p.Name, filename: *p.FileName, contentType: p.ContentType, content: p.Value}
		if f.contentType == "" {
			f.contentType = "application/octet-stream"
		}
		switch {
		case !utf8.ValidString(f.content) || strings.ContainsRune(f.content, utf8.RuneError):
			// A HAR is JSON, UTF-8: a recorder writes a binary file's
			// bytes that are not as U+FFFD, and they are lost.
			f.omitted = "binary"
		case len(f.content) > maxFileShown:
			f.omitted = fmt.Sprintf("%d bytes", len(f.content))
		}
		if f.omitted != "" {
			im.res.Notes = append(im.res.Notes, fmt.Sprintf("%s: the file %q of field %s (%s) is not written into the plan: put it beside the plan and send it with file: NAME", im.steps[i].name, f.filename, f.name, f.omitted))
			f.content = ""
		}
		mp.files = append(mp.files, f)
	}
	return mp
}

// readMultipart splits a recorded multipart body into its parts, as sent:
// a part with a filename parameter (even an empty one) is a file.
func readMultipart(text, boundary string) ([]param, error) {
	r := multipart.NewReader(strings.NewReader(text), boundary)
	var out []param
	for {
		p, err := r.NextRawPart()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, err
		}
		_, disp, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
		if err != nil {
			return nil, err
		}
		x := param{Name: disp["name"], Value: string(b), ContentType: textproto.MIMEHeader(p.Header).Get("Content-Type")}
		if fn, ok := disp["filename"]; ok {
			x.FileName = &fn
		}
		out = append(out, x)
	}
}
