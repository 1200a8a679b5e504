package importer

import (
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/plan"
)

// issueCounts are what testdata/issues' server was sent, by its /count.
type issueCounts struct{ Issues, Attachments, Notes, Bytes int }

func (n *notes) issueCounts(t *testing.T) issueCounts {
	t.Helper()
	resp, err := http.Get(n.url + "/count")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c issueCounts
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("/count: %v: %s", err, b)
	}
	return c
}

// stepsFile is the file the recorded journey attaches to the new issue.
const stepsFile = "1. add a line to the cart\n2. reload the page\n"

// TestBrowserRecordingOfAMultipartForm: in Chromium driven by Playwright,
// open a Rails-shaped tracker's new-issue form (testdata/issues, in Puma),
// which is multipart/form-data because it has a file input, fill it, attach
// a file (the page uploads it at once, as Redmine's does, and puts the
// upload's token in the form) and submit it, then add a note through the
// issue's edit form, multipart too, which carries the issue's id in a
// hidden field. The HAR Playwright recorded imports into a plan whose two
// form POSTs are multipart: steps with the session's authenticity_token,
// the upload's token and the issue's id captured (the id from the
// Location), not the recorded bodies with their stale tokens and fixed
// boundaries; it passes, three iterations, on a fresh server with another
// session secret and other ids, which then holds three issues, each with
// its file, and three notes.
func TestBrowserRecordingOfAMultipartForm(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Chromium and Puma")
	}
	recorded := startRack(t, "issues", 58)
	har := record(t, recorded.url, `
  await page.goto(base + '/projects/demo/issues/new');
  await page.fill('input[name="issue[subject]"]', 'The cart forgets its lines');
  await page.fill('textarea[name="issue[description]"]', 'Seen on Firefox too');
  await page.setInputFiles('input[name="attachments[dummy][file]"]', { name: 'steps.txt', mimeType: 'text/plain', buffer: Buffer.from(`+"`"+stepsFile+"`"+`) });
  await page.waitForSelector('form[data-uploading=done]');
  await Promise.all([page.waitForURL(/\/issues\/\d+$/), page.click('#issue-form button')]);
  await page.fill('textarea[name="issue[notes]"]', 'Reproduced on Chromium');
  await Promise.all([page.waitForNavigation(), page.click('#issue-form button')]);
  await page.waitForSelector('.notes li');`)
	if c := recorded.issueCounts(t); c != (issueCounts{1, 1, 1, len(stepsFile)}) {
		t.Fatalf("the recorded session made %+v, want 1 issue with its file and 1 note", c)
	}
	if dir := os.Getenv("LOADLAB_KEEP_HAR"); dir != "" {
		os.WriteFile(filepath.Join(dir, "issues.har"), har, 0o644)
	}
	checkMultipartImport(t, har)
}

// checkMultipartImport imports a recording of testdata/issues' journey
// and replays it on a fresh server.
func checkMultipartImport(t *testing.T, har []byte) {
	t.Helper()
	if !strings.Contains(string(har), "multipart/form-data; boundary=") {
		t.Fatal("the recording has no multipart/form-data request")
	}
	res, err := HAR("issues.har", har, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", res.Plan)
	for _, l := range res.Inferred {
		t.Logf("inferred: %s", l)
	}
	out := string(res.Plan)
	for _, want := range []string{
		`- post: "/projects/demo/issues"`,
		"multipart:",
		`- "authenticity_token": "{{ x_csrf_token }}"`, // the new-issue form's, a list: a name repeats
		`"authenticity_token": "{{ x_csrf_token }}", "issue_id"`,
		`- post: "/uploads"`,
		`body: ` + q(stepsFile),
		`attachments_1_token: { json: "$.upload.token" }`,
		`- "attachments[1][token]": "{{ attachments_1_token }}"`,
		`- "issue[watcher_user_ids][]": "4"`,
		`{ name: "attachments[dummy][file]", filename: "", content_type: "application/octet-stream" }`,
		`issue_location: { header: "Location" }`,
		`"issue_id": "{{ split(issue_location, '/')[2] }}"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan has no %s", want)
		}
	}
	for _, bad := range []string{"WebKitFormBoundary", "boundary=", "/58", `"58"`, "_demo_session", "multipart/form-data"} {
		if strings.Contains(out, bad) {
			t.Errorf("the plan holds %s: the recorded body, id or cookie", bad)
		}
	}
	fresh := startRack(t, "issues", 300)
	replay(t, res, fresh.url, 3)
	if c := fresh.issueCounts(t); c != (issueCounts{3, 3, 3, 3 * len(stepsFile)}) {
		t.Errorf("the fresh server was sent %+v, want 3 issues, each with its file, and 3 notes: one of each per iteration", c)
	}
}

// TestRecordedMultipartForm: testdata/issues/recorded.har, the journey of
// TestBrowserRecordingOfAMultipartForm as Chromium sent it (recorded by
// Playwright 1.65 with Debian's Chromium; LOADLAB_KEEP_HAR=DIR keeps a new
// one), imports and replays on a fresh Puma without a browser.
func TestRecordedMultipartForm(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Puma")
	}
	har, err := os.ReadFile(filepath.Join("testdata", "issues", "recorded.har"))
	if err != nil {
		t.Fatal(err)
	}
	checkMultipartImport(t, har)
}

// TestMultipartParts: a multipart body's parts, as mime/multipart writes
// them, become the plan's: a password field is a secret variable, a token
// that the page gave is captured, a file keeps its name, type and text
// (braces escaped), a binary file is left out and said so, a recording
// with params but no text (as some browsers write one) is read from them,
// and a body the recording left out is said so. The plan loads.
func TestMultipartParts(t *testing.T) {
	t.Parallel()
	const token = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA=="
	var body strings.Builder
	w := multipart.NewWriter(&body)
	w.WriteField("authenticity_token", token)
	w.WriteField("user[password]", "correct horse")
	fw, _ := w.CreateFormFile("report", "a {{b}}.txt")
	fw.Write([]byte("line {{ 1 }}\n"))
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="logo"; filename="logo.png"`)
	h.Set("Content-Type", "image/png")
	pw, _ := w.CreatePart(h)
	pw.Write([]byte{0x89, 'P', 'N', 'G', 0xff, 0xfe})
	w.Close()
	page := `<html><body><form><input type="hidden" name="authenticity_token" value="` + token + `"></form></body></html>`
	entry := func(method, path, postData string, status int, respType, resp string, ms int) map[string]any {
		e := map[string]any{
			"startedDateTime": time.Date(2026, 12, 3, 12, 0, ms, 0, time.UTC).Format(time.RFC3339Nano), "time": 5,
			"request":  map[string]any{"method": method, "url": "http://127.0.0.1:3000" + path, "headers": []any{}},
			"response": map[string]any{"status": status, "headers": []any{}, "content": map[string]any{"mimeType": respType, "text": resp}},
		}
		if postData != "" {
			e["request"].(map[string]any)["postData"] = json.RawMessage(postData)
		}
		return e
	}
	// Chromium's fetch() of an application/octet-stream body, as
	// Playwright records it: the headers, no postData.
	noBody := func(e map[string]any) map[string]any {
		e["request"].(map[string]any)["headers"] = []any{map[string]string{"name": "Content-Length", "value": "45"}, map[string]string{"name": "Content-Type", "value": "application/octet-stream"}}
		return e
	}
	text, _ := json.Marshal(map[string]any{"mimeType": w.FormDataContentType(), "text": body.String()})
	params := `{"mimeType": "multipart/form-data; boundary=x", "params": [{"name": "authenticity_token", "value": "` + token + `"}, {"name": "doc", "fileName": "d.txt", "contentType": "text/plain", "value": "hi"}]}`
	har, _ := json.Marshal(map[string]any{"log": map[string]any{"version": "1.2", "entries": []any{
		entry("GET", "/signup", "", 200, "text/html", page, 0),
		entry("POST", "/signup", string(text), 302, "text/html", "", 1),
		entry("POST", "/docs", params, 201, "text/html", "", 2),
		noBody(entry("POST", "/uploads", "", 201, "text/html", "", 3)),
	}}})
	res, err := HAR("parts.har", har, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Plan)
	for _, want := range []string{
		`fields: { "authenticity_token": "{{ authenticity_token }}", "user[password]": "{{ user_password }}" }`,
		`{ name: "report", filename: "a {{b}}.txt", content_type: "application/octet-stream", content: "line {{ \"{{\" }} 1 }}\n" }`,
		"# the recorded file (binary) is not written",
		`{ name: "logo", filename: "logo.png", content_type: "image/png" }`,
		`fields: { "authenticity_token": "{{ authenticity_token }}" }`,
		`{ name: "doc", filename: "d.txt", content_type: "text/plain", content: "hi" }`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan has no %s\n%s", want, out)
		}
	}
	if len(res.Notes) != 2 || !strings.Contains(res.Notes[0], `the file "logo.png" of field logo (binary) is not written`) || !strings.HasPrefix(res.Notes[1], "POST /uploads: the recording has no body for this request (Content-Length 45)") {
		t.Errorf("notes %q: want the binary file's and the missing body's", res.Notes)
	}
	if !strings.Contains(out, "  # the recording has no body for this request (Content-Length 45)") || !strings.Contains(out, `headers: { "Content-Type": "application/octet-stream" }`) {
		t.Errorf("the step whose body the recording lacks does not say so\n%s", out)
	}
	if strings.Contains(out, "correct horse") || strings.Contains(out, token) {
		t.Errorf("the plan holds the password or the recorded token\n%s", out)
	}
	if _, err := plan.Parse("parts.yaml", res.Plan, plan.Options{Env: res.SecretValues}); err != nil {
		t.Errorf("the plan does not load: %v\n%s", err, out)
	}
}
