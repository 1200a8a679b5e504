package httpx

import (
	"testing"
	"time"
)

func TestJar(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var j Jar
	j.Store("shop.test:3000", "/login", []string{
		"session=abc; Path=/; HttpOnly",
		"cart=1; Path=/cart",
		"pref=dark", // default path: /
		"sub=x; Domain=shop.test",
		"evil=1; Domain=other.test",
		"tls=1; Secure",
		"short=1; Max-Age=60",
		`p="quoted"; Path=/q`,
	}, now)
	tests := []struct {
		name, host, path string
		secure           bool
		at               time.Time
		want             string
	}{
		{"root", "shop.test:3000", "/", false, now, "Cookie: session=abc; pref=dark; sub=x; short=1\r\n"},
		{"cart path", "shop.test", "/cart/items", false, now, "Cookie: session=abc; cart=1; pref=dark; sub=x; short=1\r\n"},
		{"not a path prefix", "shop.test", "/cartoon", false, now, "Cookie: session=abc; pref=dark; sub=x; short=1\r\n"},
		{"secure", "shop.test", "/", true, now, "Cookie: session=abc; pref=dark; sub=x; tls=1; short=1\r\n"},
		{"subdomain gets domain cookies only", "www.shop.test", "/", false, now, "Cookie: sub=x\r\n"},
		{"other host", "other.test", "/", false, now, ""},
		{"a quoted value keeps its quotes", "shop.test", "/q", false, now, `Cookie: session=abc; pref=dark; sub=x; short=1; p="quoted"` + "\r\n"},
		{"expired", "shop.test", "/", false, now.Add(2 * time.Minute), "Cookie: session=abc; pref=dark; sub=x\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(j.AppendHeader(nil, tt.host, tt.path, tt.secure, tt.at)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	j.Store("shop.test", "/", []string{"session=def; Path=/"}, now)
	if v, _ := j.Value("shop.test", "session"); v != "def" {
		t.Errorf("replaced session = %q", v)
	}
	j.Store("shop.test", "/", []string{"session=; Path=/; Max-Age=0"}, now)
	j.Store("shop.test", "/", []string{"session=gone; Path=/; Max-Age=-1"}, now)
	if _, ok := j.Value("shop.test", "session"); ok {
		t.Error("deleted cookie still sent")
	}
}
