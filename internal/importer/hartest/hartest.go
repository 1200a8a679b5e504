// Package hartest records HTTP traffic as HAR 1.2 and drives the demo shop
// through a shopper's journey, for the importer's tests.
package hartest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/loadlab/loadlab/internal/demo/shop"
)

// Recorder is an http.RoundTripper that writes what passes through it as
// HAR 1.2 entries, as a browser's DevTools do.
type Recorder struct {
	next    http.RoundTripper
	entries []map[string]any
}

func pairs(h http.Header) []map[string]string {
	var out []map[string]string
	for k, vs := range h {
		for _, v := range vs {
			out = append(out, map[string]string{"name": k, "value": v})
		}
	}
	return out
}

func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	start := time.Now()
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	hdr := req.Header.Clone()
	if c := hdr.Get("Cookie"); c == "" {
		for _, ck := range req.Cookies() {
			hdr.Add("Cookie", ck.String())
		}
	}
	e := map[string]any{
		"startedDateTime": start.UTC().Format(time.RFC3339Nano),
		"time":            float64(time.Since(start).Microseconds()) / 1000,
		"request": map[string]any{
			"method": req.Method, "url": req.URL.String(), "httpVersion": "HTTP/1.1",
			"headers": pairs(hdr), "queryString": []any{}, "cookies": []any{}, "headersSize": -1, "bodySize": len(reqBody),
		},
		"response": map[string]any{
			"status": resp.StatusCode, "statusText": http.StatusText(resp.StatusCode), "httpVersion": "HTTP/1.1",
			"headers": pairs(resp.Header), "cookies": []any{},
			"content":     map[string]any{"size": len(body), "mimeType": resp.Header.Get("Content-Type"), "text": string(body)},
			"redirectURL": resp.Header.Get("Location"), "headersSize": -1, "bodySize": len(body),
		},
		"cache": map[string]any{}, "timings": map[string]any{"send": 0, "wait": 0, "receive": 0},
	}
	if reqBody != nil {
		e["request"].(map[string]any)["postData"] = map[string]any{"mimeType": req.Header.Get("Content-Type"), "text": string(reqBody)}
	}
	r.entries = append(r.entries, e)
	return resp, nil
}

// HAR is what the recorder saw, as a HAR 1.2 file.
func (r *Recorder) HAR() []byte {
	b, _ := json.MarshalIndent(map[string]any{"log": map[string]any{
		"version": "1.2", "creator": map[string]string{"name": "loadlab-test", "version": "1"},
		"pages": []any{}, "entries": r.entries,
	}}, "", "  ")
	return b
}

// Shop is the demo shop on loopback for a test: Close stops it.
func Shop() (*httptest.Server, func(), error) {
	s, err := shop.New(shop.Options{Workers: 4, BcryptCost: bcrypt.MinCost, CPUWork: -1, DBLatency: -1, Products: 20})
	if err != nil {
		return nil, nil, err
	}
	srv := httptest.NewServer(s.Handler())
	return srv, func() { srv.Close(); s.Close() }, nil
}

// RecordShop drives the real shop at base as a shopper does (home page, a
// product, add to cart, the cart, checkout; sign up, log in, who am I) and
// returns the HAR of it, with a stylesheet from another host as a browser
// would fetch it.
func RecordShop(base string) (har []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("record the shop: %v", r)
		}
	}()
	jar, _ := cookiejar.New(nil)
	rec := &Recorder{next: http.DefaultTransport}
	c := &http.Client{Jar: jar, Transport: rec, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	asset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		io.WriteString(w, "body{}")
	}))
	defer asset.Close()
	do := func(method, u, ctype, body string, hdr ...string) string {
		req, _ := http.NewRequest(method, u, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		req.Header.Set("User-Agent", "Mozilla/5.0 (test)")
		resp, err := c.Do(req)
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			panic(fmt.Sprintf("%s %s: %d %s", method, u, resp.StatusCode, b))
		}
		return string(b)
	}
	token := func(page string) string {
		const m = `name="csrf-token" content="`
		i := strings.Index(page, m)
		if i < 0 {
			panic(fmt.Sprintf("no csrf-token in %q", page))
		}
		rest := page[i+len(m):]
		return rest[:strings.IndexByte(rest, '"')]
	}
	home := do("GET", base+"/", "", "")
	do("GET", asset.URL+"/theme.css", "", "")
	do("GET", base+"/products/3", "", "")
	tok := token(home)
	form := url.Values{"authenticity_token": {tok}, "product_id": {"3"}, "quantity": {"2"}}
	do("POST", base+"/cart", "application/x-www-form-urlencoded", form.Encode())
	do("GET", base+"/cart", "", "")
	form = url.Values{"authenticity_token": {tok}, "email": {"ada@example.com"}}
	do("POST", base+"/checkout", "application/x-www-form-urlencoded", form.Encode())
	do("POST", base+"/users", "application/json", `{"email":"ada@example.com","password":"correct horse"}`)
	login := do("POST", base+"/session", "application/json", `{"email":"ada@example.com","password":"correct horse"}`)
	var lr struct{ Token string }
	json.Unmarshal([]byte(login), &lr)
	do("GET", base+"/api/me", "", "", "Authorization", "Bearer "+lr.Token, "Accept", "application/json")
	return rec.HAR(), nil
}

// RecordTracker drives a Tracker at base as a person in a browser does: the
// login page and its stylesheet, log in (redirected to the project), open
// an issue (redirected to it), comment on it through the JSON API with the
// page's CSRF token in a header, log out.
func RecordTracker(base string) (har []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("record the tracker: %v", r)
		}
	}()
	jar, _ := cookiejar.New(nil)
	rec := &Recorder{next: http.DefaultTransport}
	c := &http.Client{Jar: jar, Transport: rec, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, u, ctype, body string, hdr ...string) *http.Response {
		req, _ := http.NewRequest(method, base+u, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			panic(fmt.Sprintf("%s %s: %d %s", method, u, resp.StatusCode, b))
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		return resp
	}
	text := func(r *http.Response) string { b, _ := io.ReadAll(r.Body); return string(b) }
	token := func(page string) string {
		const m = `name="csrf-token" content="`
		i := strings.Index(page, m)
		if i < 0 {
			panic(fmt.Sprintf("no csrf-token in %q", page))
		}
		rest := page[i+len(m):]
		return rest[:strings.IndexByte(rest, '"')]
	}
	tok := token(text(do("GET", "/login", "", "")))
	do("GET", "/app.css", "", "")
	time.Sleep(30 * time.Millisecond) // typing
	form := url.Values{"authenticity_token": {tok}, "email": {"ada@example.com"}, "password": {Password}}
	issues := do("POST", "/login", "application/x-www-form-urlencoded", form.Encode()).Header.Get("Location")
	tok = token(text(do("GET", issues, "", "")))
	form = url.Values{"authenticity_token": {tok}, "title": {"The cart forgets its lines"}}
	issue := do("POST", issues, "application/x-www-form-urlencoded", form.Encode()).Header.Get("Location")
	tok = token(text(do("GET", issue, "", "")))
	do("POST", issue+"/comments", "application/json", `{"body": "Seen on Firefox too"}`, "X-CSRF-Token", tok, "Accept", "application/json")
	do("POST", "/logout", "application/x-www-form-urlencoded", url.Values{"authenticity_token": {tok}}.Encode())
	return rec.HAR(), nil
}
