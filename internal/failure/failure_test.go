package failure

import (
	"strings"
	"testing"
)

// railsLogin is a Rails-like login page refused: its flash sits after more
// than 2 KiB of head.
func railsLogin() string {
	return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Shop · Sign in</title>
  <meta name="csrf-token" content="c5rfT0kenValue0123456789">
  <style>` + strings.Repeat(".nav a { color: #333; padding: 0 1em; }\n", 60) + `</style>
  <script>window.dataLayer = window.dataLayer || [];</script>
</head>
<body class="sessions new">
  <nav><a href="/">Shop</a> <a href="/products">Products</a></nav>
  <div class="flash alert">Invalid user or password</div>
  <form action="/users/sign_in" method="post">
    <input type="hidden" name="authenticity_token" value="c5rfT0kenValue0123456789">
    <input name="user[email]"> <input name="user[password]" type="password">
  </form>
</body>
</html>`
}

func TestNear(t *testing.T) {
	page := railsLogin()
	if strings.Index(page, "flash alert") < 2048 {
		t.Fatal("the test page's flash must sit after 2 KiB")
	}
	for _, tt := range []struct {
		name, body, contentType string
		sought                  Sought
		want, where             string
	}{
		{"html flash", page, "text/html; charset=utf-8", Sought{}, `<div class="flash alert">Invalid user or password</div>`, "the page's flash or error element"},
		{"html flash for a contains check not found", page, "text/html", Sought{Contains: "Signed in successfully"}, `<div class="flash alert">Invalid user or password</div>`, "the page's flash or error element"},
		{"contains, its start found", "<p>your order-num is missing</p>", "text/plain", Sought{Contains: "order-number"}, "<p>your order-num is missing</p>", `around "order-num", the longest start of "order-number" the body holds`},
		{"contains found (another check failed)", strings.Repeat("x", 600) + " Welcome back " + strings.Repeat("y", 600), "text/plain", Sought{Contains: "Welcome"}, "…" + strings.Repeat("x", 27) + " Welcome back " + strings.Repeat("y", 22) + "…", `around "Welcome"`},
		{"visible text without a flash", `<!DOCTYPE html><html><head><title>t</title><style>p{}</style></head><body><h1>Not found</h1><p>The page is gone.</p></body></html>`, "text/html", Sought{}, "Not found The page is gone.", "the start of the page's visible text"},
		{"json path missing", `{"error":"unauthorized","detail":{"reason":"expired"}}`, "application/json", Sought{JSONPath: "$.user.name"}, `{"detail":{"reason":"expired"},"error":"unauthorized"}`, "the JSON at $, which has no .user"},
		{"json path found", `{"items":[{"id":1},{"id":2,"name":"pen"}]}`, "application/json", Sought{JSONPath: "$.items[1]"}, `{"id":2,"name":"pen"}`, "the value at $.items[1]"},
		{"json path deep", `{"items":[{"id":1}]}`, "application/json", Sought{JSONPath: "$.items[3].id"}, `[{"id":1}]`, "the JSON at $.items, which has no [3]"},
		{"plain", "  too   many\nrequests  ", "text/plain", Sought{}, "too many requests", "the start of the body"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, where := Near(tt.body, tt.contentType, tt.sought, 64)
			if got != tt.want || where != tt.where {
				t.Errorf("Near = %q (%s), want %q (%s)", got, where, tt.want, tt.where)
			}
		})
	}
}

func TestMask(t *testing.T) {
	header := "Content-Type: text/html\r\nSet-Cookie: _shop_session=S3SSIONvalue; path=/; HttpOnly\r\nX-Csrf-Token: CSRFheader99\r\nLocation: /next?token=QUERYsecret&page=2\r\n"
	body := []byte("<p>hello PLANsecret, your token CAPTUREDtok, session S3SSIONvalue, <a href=\"/x?api_key=LINKkey1\">x</a></p>")
	r := Keep(422, []byte(header), body, []string{"CAPTUREDtok"})
	body[0] = 'X' // Keep copied it
	m := r.Mask([]string{"PLANsecret"})
	for _, leak := range []string{"PLANsecret", "CAPTUREDtok", "S3SSIONvalue", "CSRFheader99", "QUERYsecret", "LINKkey1"} {
		if strings.Contains(m.Message, leak) {
			t.Errorf("%s is in the message:\n%s", leak, m.Message)
		}
	}
	want := "HTTP/1.1 422 Unprocessable Entity\r\nContent-Type: text/html\r\nSet-Cookie: _shop_session=***; path=/; HttpOnly\r\nX-Csrf-Token: ***\r\nLocation: /next?token=***&page=2\r\n\r\n" +
		`<p>hello ***, your token ***, session ***, <a href="/x?api_key=***">x</a></p>`
	if m.Message != want || m.ContentType != "text/html" || !strings.HasPrefix(m.Body, "<p>hello") {
		t.Errorf("message\n%q\nwant\n%q", m.Message, want)
	}

	// A body over MaxBody is cut, and the message says so; a secret
	// across the cut is masked whole.
	big := []byte(strings.Repeat("a", MaxBody-4) + "BIGsecret" + strings.Repeat("b", 1000))
	m = Keep(200, nil, big, nil).Mask([]string{"BIGsecret"})
	if strings.Contains(m.Message, "BIGs") || len(m.Body) != MaxBody || !strings.Contains(m.Message, "X-Loadlab-Kept: the first 262144 of 263149 bytes of the body\r\n") {
		t.Errorf("cut body: %d bytes, head %q", len(m.Body), m.Message[:120])
	}
}

// TestMaskKeepsTheReasonPhrase: the kept response's status line is the
// server's, not Go's wording for the code.
func TestMaskKeepsTheReasonPhrase(t *testing.T) {
	r := Keep(413, []byte("Content-Length: 0\r\n"), nil, nil)
	r.Reason = "Payload Too Large"
	if m := r.Mask(nil); !strings.HasPrefix(m.Message, "HTTP/1.1 413 Payload Too Large\r\n") {
		t.Errorf("message %q", m.Message)
	}
}

func TestFileName(t *testing.T) {
	taken := map[string]bool{}
	for _, tt := range []struct{ scenario, step, want string }{
		{"default", "login", "login.http"},
		{"default", "POST /users/sign_in", "POST-users-sign_in.http"},
		{"checkout", "GET /products/{{ id }}", "checkout-GET-products-id.http"},
		{"default", "login", "login-2.http"},
		{"default", "../../etc/passwd", "etc-passwd.http"},
		{"default", "???", "step.http"},
		{"default", strings.Repeat("x", 200), strings.Repeat("x", 80) + ".http"},
		{"default", "con", "step-con.http"},
		{"default", "NUL.txt", "step-NUL.txt.http"},
		{"default", "com1", "step-com1.http"},
		{"default", "console", "console.http"},
	} {
		if got := FileName(tt.scenario, tt.step, taken); got != tt.want {
			t.Errorf("FileName(%q, %q) = %q, want %q", tt.scenario, tt.step, got, tt.want)
		}
	}
}
