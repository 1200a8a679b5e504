// Package importer turns recordings into plans: a HAR 1.2 file (Chrome or
// Firefox DevTools, Playwright's recordHar) becomes a plan whose dynamic
// values (CSRF tokens, IDs, bearer tokens) are captured from the responses
// they first appeared in, so that it passes against a fresh server.
package importer

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInput marks input that is not a HAR loadlab can import: not JSON, a
// version other than 1.x, or no entries for the target.
var ErrInput = errors.New("bad recording")

// har is the part of HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/)
// the importer reads.
type har struct {
	Log *struct {
		Version string `json:"version"`
		Creator struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"creator"`
		Entries []entry `json:"entries"`
	} `json:"log"`
}

type nameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// param is a posted parameter: a multipart body's file part has a file
// name and a type.
type param struct {
	Name        string  `json:"name"`
	Value       string  `json:"value"`
	FileName    *string `json:"fileName"`
	ContentType string  `json:"contentType"`
}

type entry struct {
	StartedDateTime string  `json:"startedDateTime"`
	Time            float64 `json:"time"` // ms
	ResourceType    string  `json:"_resourceType"`
	Request         struct {
		Method      string      `json:"method"`
		URL         string      `json:"url"`
		Headers     []nameValue `json:"headers"`
		QueryString []nameValue `json:"queryString"`
		PostData    *struct {
			MimeType string  `json:"mimeType"`
			Text     string  `json:"text"`
			Params   []param `json:"params"`
		} `json:"postData"`
	} `json:"request"`
	Response struct {
		Status  int         `json:"status"`
		Headers []nameValue `json:"headers"`
		Content struct {
			MimeType string `json:"mimeType"`
			Text     string `json:"text"`
			Encoding string `json:"encoding"`
		} `json:"content"`
		RedirectURL string `json:"redirectURL"`
	} `json:"response"`

	start time.Time
}

// header is the first value of the named header, in any case.
func header(hs []nameValue, name string) string {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// body is the response's text, decoded from base64 when the HAR says so.
func (e *entry) body() string {
	c := e.Response.Content
	if c.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(c.Text)
		if err != nil {
			return ""
		}
		return string(b)
	}
	return c.Text
}

// end is when the entry's response was complete.
func (e *entry) end() time.Time {
	return e.start.Add(time.Duration(e.Time * float64(time.Millisecond)))
}

// parseHAR reads and checks a HAR file.
func parseHAR(file string, data []byte) (*har, error) {
	var h har
	if err := json.Unmarshal(data, &h); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(data, se.Offset)
			return nil, fmt.Errorf("%w: %s:%d:%d: not JSON (%v): a HAR file is the JSON that a browser's DevTools save (Network, \"Save all as HAR\")", ErrInput, file, line, col, err)
		}
		return nil, fmt.Errorf("%w: %s: not a HAR file: %v", ErrInput, file, err)
	}
	if h.Log == nil {
		return nil, fmt.Errorf("%w: %s: not a HAR file: no \"log\" object at the top", ErrInput, file)
	}
	if v := h.Log.Version; v != "1.2" && v != "1.1" {
		return nil, fmt.Errorf("%w: %s: HAR version %q, loadlab reads 1.2 (and 1.1)", ErrInput, file, v)
	}
	for i := range h.Log.Entries {
		e := &h.Log.Entries[i]
		t, err := time.Parse(time.RFC3339Nano, e.StartedDateTime)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: entry %d: startedDateTime %q is not an ISO 8601 time", ErrInput, file, i+1, e.StartedDateTime)
		}
		e.start = t
	}
	return &h, nil
}

func lineCol(data []byte, off int64) (int, int) {
	line, col := 1, 1
	for i := int64(0); i < off-1 && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
