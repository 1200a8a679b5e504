package secret

import (
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{
		// Every name of the two lists that disagreed (plan and quick mode).
		{"Authorization", true},
		{"proxy-authorization", true},
		{"Cookie", true},
		{"X-Api-Key", true},
		{"Api-Key", true},
		{"X-Auth-Token", true},
		{"X-CSRF-Token", true},
		{"X-Xsrf-Token", true},
		{"Private-Token", true},
		{"X-Amz-Security-Token", true},
		{"X-Hub-Signature-256", true},
		{"X-Jwt-Assertion", true},
		{"Cf-Access-Jwt-Assertion", true},
		{"X-Goog-Iap-Jwt-Assertion", true},
		{"X-CSRF", true},
		{"X-XSRF", true},
		{"X-Saml-Assertion", true},
		{"password", true},
		{"API_KEY", true},
		{"SESSION_ID", true},
		{"Content-Type", false},
		{"Accept", false},
		{"User-Agent", false},
		{"X-Request-Id", false},
		{"Host", false},
		{"Cache-Control", false},
		{"product", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Name(tt.name); got != tt.want {
				t.Errorf("Name(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestHeader(t *testing.T) {
	if got := Header("X-Auth-Token", "s3cret"); got != Mask {
		t.Errorf("X-Auth-Token shown as %q", got)
	}
	if got := Header("Accept", "text/html"); got != "text/html" {
		t.Errorf("Accept shown as %q", got)
	}
}

func TestReplace(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		secrets  []string
		want     string
	}{
		{"every occurrence", "token abcd and abcd", []string{"abcd"}, "token *** and ***"},
		{"short secrets are left", "a b ab", []string{"ab"}, "a b ab"},
		{"several", "k=longsecret p=hunter2", []string{"longsecret", "hunter2"}, "k=*** p=***"},
		{"none", "plain", nil, "plain"},
		{"shorter first in the list", "Bearer s3cretABCDEF-tail", []string{"s3cret", "s3cretABCDEF"}, "Bearer ***-tail"},
		{"shorter inside the longer", "k=xxs3cretyy", []string{"s3cret", "xxs3cretyy"}, "k=***"},
		{"duplicates", "a=abcd b=abcd", []string{"abcd", "abcd"}, "a=*** b=***"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Replace(tt.in, tt.secrets); got != tt.want {
				t.Errorf("Replace(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://h/x?api_key=abc123&page=2", "http://h/x?api_key=***&page=2"},
		{"/a?token=t1&password=p2&access_token=a3&q=1", "/a?token=***&password=***&access_token=***&q=1"},
		{"/a?page=2&client_secret=zz#frag", "/a?page=2&client_secret=***#frag"},
		{"/s?X-Amz-Signature=abcd&X-Amz-Date=1", "/s?X-Amz-Signature=***&X-Amz-Date=1"},
		{"/cb?code=oauth1&sig=s2", "/cb?code=***&sig=***"},
		{"/a?token={{ token }}", "/a?token={{ token }}"},
		{"/a?token=", "/a?token="},
		{"/plain/path", "/plain/path"},
		{"get: /a?apikey=abc x", "get: /a?apikey=*** x"},
	} {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestQueryEnv(t *testing.T) {
	t.Setenv(QueryEnv, "sid, Ticket")
	if got := URL("/a?sid=1234&ticket=5678&page=2"); got != "/a?sid=***&ticket=***&page=2" {
		t.Errorf("with %s: %q", QueryEnv, got)
	}
	t.Setenv(QueryEnv, "")
	if got := URL("/a?sid=1234&page=2"); got != "/a?sid=1234&page=2" {
		t.Errorf("without %s: %q", QueryEnv, got)
	}
}

func TestResponseHeader(t *testing.T) {
	for _, tt := range []struct{ name, value, want string }{
		{"Set-Cookie", "_shop_session=abc123XYZ; path=/; HttpOnly; SameSite=Lax", "_shop_session=***; path=/; HttpOnly; SameSite=Lax"},
		{"set-cookie", "remember_token=t0k", "remember_token=***"},
		{"Cookie", "a=1; b=2", "a=***; b=***"},
		{"X-Csrf-Token", "s3cretcsrf", Mask},
		{"Location", "/welcome?token=abcdef&page=2", "/welcome?token=***&page=2"},
		{"Content-Type", "text/html; charset=utf-8", "text/html; charset=utf-8"},
	} {
		if got := ResponseHeader(tt.name, tt.value); got != tt.want {
			t.Errorf("ResponseHeader(%q, %q) = %q, want %q", tt.name, tt.value, got, tt.want)
		}
	}
	if got := CookieValues("Set-Cookie", `_s="abc123"; path=/`); len(got) != 1 || got[0] != "abc123" {
		t.Errorf("CookieValues = %q", got)
	}
	if got := CookieValues("Content-Type", "a=b"); got != nil {
		t.Errorf("CookieValues of Content-Type = %q", got)
	}
}

// TestReplaceForms: a secret is masked as written, URL-escaped (query and
// path), JSON-escaped (with and without HTML escapes), HTML-escaped and in
// base64 (both alphabets, padded or not), in Replace and in Writer alike.
func TestReplaceForms(t *testing.T) {
	t.Parallel()
	const pw = `Pw9+sec/ret&"<x>?`
	forms := map[string]string{
		"raw":        pw,
		"query":      `Pw9%2Bsec%2Fret%26%22%3Cx%3E%3F`,
		"path":       `Pw9+sec%2Fret&%22%3Cx%3E%3F`,
		"json":       `Pw9+sec/ret\u0026\"\u003cx\u003e?`,
		"json plain": `Pw9+sec/ret&\"<x>?`,
		"html":       `Pw9+sec/ret&amp;&#34;&lt;x&gt;?`,
		"base64":     "UHc5K3NlYy9yZXQmIjx4Pj8=",
		"base64 url": "UHc5K3NlYy9yZXQmIjx4Pj8",
		"base64 raw": "UHc5K3NlYy9yZXQmIjx4Pj8",
	}
	for name, f := range forms {
		text := "before " + f + " after"
		got := Replace(text, []string{pw})
		if strings.Contains(got, f) || !strings.HasPrefix(got, "before ***") || !strings.Contains(got, " after") {
			t.Errorf("%s form %q: Replace gives %q", name, f, got)
		}
		var b strings.Builder
		w := NewWriter(&b, []string{pw})
		w.Write([]byte(text))
		w.Close()
		if b.String() != got {
			t.Errorf("%s form %q: Writer gives %q, Replace %q", name, f, b.String(), got)
		}
	}
	if n := len(Forms("s3cretpw1")); n != 2 {
		t.Errorf("Forms of a password of letters and digits: %d, want 2 (itself and its base64): %q", n, Forms("s3cretpw1"))
	}
}
