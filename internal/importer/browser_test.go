package importer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loadlab/loadlab/internal/browsertest"
	"github.com/loadlab/loadlab/internal/importer/hartest"
	"github.com/loadlab/loadlab/internal/plan"
	"github.com/loadlab/loadlab/internal/runner"
)

// record runs a journey in Debian's Chromium with Playwright, in a browser
// context that records a HAR (newContext({recordHar})), and returns the HAR
// Playwright wrote. journey is the body of an async function of page and
// base, the server's URL.
func record(t *testing.T, base, journey string) []byte {
	t.Helper()
	harPath := filepath.Join(t.TempDir(), "recorded.har")
	script := `
const { chromium } = require('playwright-core');
(async () => {
  const [base, harPath] = [process.argv[1], process.argv[2]];
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: JSON.parse(process.env.CHROMIUM_ARGS) });
  const context = await browser.newContext({ recordHar: { path: harPath } });
  context.setDefaultTimeout(20000);
  const page = await context.newPage();
  await (async (page, base) => {` + journey + `})(page, base);
  await context.close(); // writes the HAR
  await browser.close();
})().catch(e => { console.error(e); process.exit(1); });`
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	out, err := browsertest.Command(ctx, t, script, base, harPath).CombinedOutput()
	if err != nil {
		t.Fatalf("the Playwright journey failed: %v\n%s", err, out)
	}
	har, err := os.ReadFile(harPath)
	if err != nil {
		t.Fatalf("Playwright wrote no HAR: %v\n%s", err, out)
	}
	if os.Getenv("LOADLAB_KEEP_HAR") != "" {
		os.WriteFile(filepath.Join(os.Getenv("LOADLAB_KEEP_HAR"), t.Name()+".har"), har, 0o644)
	}
	return har
}

// notes is the Rack app of testdata/notes run by Puma.
type notes struct{ url string }

// startNotes starts testdata/notes/config.ru in Puma on a free loopback
// port, its IDs starting at firstID; its session secret (and so every
// CSRF token) is its own.
func startNotes(t *testing.T, firstID int) *notes {
	t.Helper()
	return startRack(t, "notes", firstID)
}

// startRack starts testdata/DIR/config.ru in Puma on a free loopback
// port, with FIRST_ID=firstID.
func startRack(t *testing.T, dir string, firstID int) *notes {
	t.Helper()
	puma, err := exec.LookPath("puma")
	if err != nil {
		t.Fatal("puma is not installed: run scripts/test-deps")
	}
	cmd := exec.Command(puma, "-b", "tcp://127.0.0.1:0", "-t", "1:4", "config.ru")
	cmd.Dir = filepath.Join("testdata", dir)
	cmd.Env = append(os.Environ(), fmt.Sprintf("FIRST_ID=%d", firstID))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`Listening on (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case u := <-found:
		return &notes{url: u}
	case <-time.After(30 * time.Second):
		t.Fatalf("puma did not say where it listens within 30s: %s", log.String())
	}
	return nil
}

// count is how many notes the server made, by its /count endpoint.
func (n *notes) count(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(n.url + "/count")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct{ Notes int }
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("/count: %v: %s", err, b)
	}
	return c.Notes
}

// replay loads an imported plan against a fresh server and runs it.
func replay(t *testing.T, res *Result, target string, iterations int) {
	t.Helper()
	p, err := plan.Parse(filepath.Join(t.TempDir(), "imported.yaml"), res.Plan, plan.Options{Set: []string{"target=" + target, fmt.Sprintf("load.closed.iterations=%d", iterations)}, Env: res.SecretValues})
	if err != nil {
		t.Fatalf("the imported plan does not load: %v\n%s", err, res.Plan)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := runner.Plan(ctx, p, runner.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Summary
	if s.Checks.Failed != 0 || s.Checks.Passed == 0 || s.Iterations != int64(iterations) || s.Aborted != 0 {
		for _, st := range r.Steps {
			if st.FailedCheck != nil {
				t.Logf("%s: %+v", st.Name, *st.FailedCheck)
			}
		}
		t.Errorf("replayed on a fresh server: checks %+v, iterations %d, aborted %d (%v)", s.Checks, s.Iterations, s.Aborted, r.Aborts)
	}
}

// TestBrowserRecordingOfTheShop: a session in Chromium driven by
// Playwright on the demo shop (a product, add to cart by its CSRF form,
// checkout), recorded by Playwright's recordHar, imports into a plan that
// passes on a fresh shop.
func TestBrowserRecordingOfTheShop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	recorded := startShop(t)
	har := record(t, recorded.URL, `
  await page.goto(base + '/');
  await Promise.all([page.waitForURL(/\/products\/\d+$/), page.click('a[href^="/products/"]')]);
  await Promise.all([page.waitForNavigation(), page.click('#add-to-cart button')]);
  await page.fill('#checkout input[name=email]', 'ada@example.com');
  await Promise.all([page.waitForNavigation(), page.click('#checkout button')]);
  await page.waitForSelector('#order-number');`)
	res, err := HAR("shop.har", har, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", res.Plan)
	for _, l := range res.Inferred {
		t.Logf("inferred: %s", l)
	}
	out := string(res.Plan)
	for _, want := range []string{`- post: "/cart"`, `"authenticity_token": "{{ authenticity_token }}"`, `- post: "/checkout"`, `expect: { status: 303 }`} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan has no %s", want)
		}
	}
	if strings.Contains(strings.ToLower(out), "user-agent") || strings.Contains(out, "_shop_session") {
		t.Errorf("browser headers or the session cookie pasted into the plan")
	}
	replay(t, res, startShop(t).URL, 2)
}

// TestBrowserRecordingOfARackApp: in Chromium driven by Playwright, log in
// to a Rack app (Puma) through a form with its CSRF token in a hidden field,
// add a note (its ID only in the redirect's Location), log out; the HAR
// Playwright recorded imports into a plan that passes, three iterations, on
// a freshly started app with another session secret (so other tokens) and
// other IDs, and the app counts three notes: one per iteration.
func TestBrowserRecordingOfARackApp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium and Puma")
	}
	const password = "correct horse battery" // testdata/notes' NOTES_PASSWORD
	recorded := startNotes(t, 58)
	har := record(t, recorded.url, `
  await page.goto(base + '/login');
  await page.fill('input[name=email]', 'ada@example.com');
  await page.fill('input[name=password]', '`+password+`');
  await Promise.all([page.waitForURL('**/notes'), page.click('#login button')]);
  await page.fill('input[name="note[title]"]', 'Buy milk');
  await Promise.all([page.waitForURL(/\/notes\/\d+$/), page.click('#new-note button')]);
  await Promise.all([page.waitForURL('**/login'), page.click('#logout button')]);`)
	if n := recorded.count(t); n != 1 {
		t.Fatalf("the recorded session made %d notes, want 1", n)
	}
	res, err := HAR("notes.har", har, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", res.Plan)
	for _, l := range res.Inferred {
		t.Logf("inferred: %s", l)
	}
	out := string(res.Plan)
	for _, want := range []string{`- post: "/login"`, `"authenticity_token": "{{ authenticity_token }}"`, `{{ password }}`, `- post: "/notes"`, `{ header: "Location" }`, `- post: "/logout"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan has no %s", want)
		}
	}
	if strings.Contains(out, password) || strings.Contains(out, "/58") || strings.Contains(out, "_notes_session") {
		t.Errorf("the plan holds the password, the recorded note's ID or the session cookie")
	}
	fresh := startNotes(t, 300)
	replay(t, res, fresh.url, 3)
	if n := fresh.count(t); n != 3 {
		t.Errorf("the fresh app made %d notes, want 3: one per iteration", n)
	}

	// --assets keep: the stylesheet and the script each of the four pages
	// loaded are a parallel group after its page, and the plan still
	// passes, fetching them at once.
	res, err = HAR("notes.har", har, Options{KeepAssets: true})
	if err != nil {
		t.Fatal(err)
	}
	out = string(res.Plan)
	css, js, groups := strings.Count(out, `name: "asset GET /app.css"`), strings.Count(out, `name: "asset GET /app.js"`), strings.Count(out, "  - parallel:\n")
	if css != 4 || js != 4 || groups != 4 || len(res.Assets) != 8 {
		t.Errorf("--assets keep: %d stylesheet and %d script steps in %d groups, assets %q: want the 8 the browser fetched, in 4 groups\n%s", css, js, groups, res.Assets, res.Plan)
	}
	replay(t, res, fresh.url, 1)
	if n := fresh.count(t); n != 4 {
		t.Errorf("the fresh app made %d notes, want 4", n)
	}
}

// TestBrowserRecordingOfTheTracker: log in through a CSRF form, open an
// issue (its id in the redirect), comment through fetch() with the page's
// CSRF token in a header, log out, in Chromium driven by Playwright; the
// plan passes on a tracker with other ids, one issue and one comment per
// iteration.
func TestBrowserRecordingOfTheTracker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	recorded := httptest.NewServer(hartest.NewTracker(7, 58))
	defer recorded.Close()
	har := record(t, recorded.URL, `
  await page.goto(base + '/login');
  await page.fill('input[name=email]', 'ada@example.com');
  await page.fill('input[name=password]', '`+hartest.Password+`');
  await Promise.all([page.waitForURL(/\/issues$/), page.click('button')]);
  await page.fill('input[name=title]', 'The cart forgets its lines');
  await Promise.all([page.waitForURL(/\/issues\/\d+$/), page.click('button')]);
  const status = await page.evaluate(() => fetch(location.pathname + '/comments', {method: 'POST', headers: {'Content-Type': 'application/json', 'Accept': 'application/json', 'X-CSRF-Token': document.querySelector('meta[name=csrf-token]').content}, body: JSON.stringify({body: 'Seen on Firefox too'})}).then(r => r.status));
  if (status != 201) throw new Error('comment: ' + status);
  await Promise.all([page.waitForURL('**/login'), page.evaluate(() => { const f = document.createElement('form'); f.method = 'post'; f.action = '/logout'; const i = document.createElement('input'); i.type = 'hidden'; i.name = 'authenticity_token'; i.value = document.querySelector('meta[name=csrf-token]').content; f.appendChild(i); document.body.appendChild(f); f.submit() })]);`)
	res, err := HAR("tracker.har", har, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("plan:\n%s", res.Plan)
	for _, l := range res.Inferred {
		t.Logf("inferred: %s", l)
	}
	out := string(res.Plan)
	for _, want := range []string{`issue_location: { header: "Location" }`, `{{ split(issue_location, '/')[4] }}/comments`, `"{{ password }}"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan has no %s", want)
		}
	}
	if strings.Contains(out, hartest.Password) || strings.Contains(out, "/58") {
		t.Errorf("the plan holds the password or the recorded issue id")
	}
	tr := hartest.NewTracker(12, 300)
	fresh := httptest.NewServer(tr)
	defer fresh.Close()
	replay(t, res, fresh.URL, 3)
	if issues, comments := tr.Created(); issues != 3 || comments != 3 {
		t.Errorf("the fresh tracker has %d issues and %d comments, want 3 and 3: one per iteration", issues, comments)
	}
}
