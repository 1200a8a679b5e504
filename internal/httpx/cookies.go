package httpx

import (
	"net/http"
	"strings"
	"time"
)

// Jar keeps one VU's cookies, as a browser would for the hosts it visits:
// host-only and domain cookies, paths, Secure, expiry and deletion. It is
// small and allocation-light because every VU has one; it does not consult
// the public suffix list, which matters little for load tests of one site.
type Jar struct {
	cookies []jarCookie
}

type jarCookie struct {
	name, value  string
	domain, path string
	hostOnly     bool
	secure       bool
	expires      time.Time // zero: until the VU ends
}

// Reset forgets every cookie.
func (j *Jar) Reset() { j.cookies = j.cookies[:0] }

// Len is the number of cookies kept.
func (j *Jar) Len() int { return len(j.cookies) }

// Store keeps the cookies of Set-Cookie header values received from host for
// a request to path.
func (j *Jar) Store(host, path string, setCookies []string, now time.Time) {
	host = hostOnly(host)
	for _, line := range setCookies {
		c, err := http.ParseSetCookie(line)
		if err != nil {
			continue
		}
		jc := jarCookie{name: c.Name, value: c.Value, path: c.Path, secure: c.Secure}
		if c.Quoted {
			// The quotes are part of the value (RFC 6265 §4.1.1), as a
			// browser keeps and sends them back.
			jc.value = `"` + c.Value + `"`
		}
		if jc.path == "" || jc.path[0] != '/' {
			jc.path = defaultPath(path)
		}
		if c.Domain == "" {
			jc.domain, jc.hostOnly = host, true
		} else {
			d := strings.ToLower(strings.TrimPrefix(c.Domain, "."))
			if !domainMatch(host, d) {
				continue // a server may not set cookies for another domain
			}
			jc.domain = d
		}
		switch {
		case c.MaxAge < 0:
			jc.expires = now.Add(-time.Second)
		case c.MaxAge > 0:
			jc.expires = now.Add(time.Duration(c.MaxAge) * time.Second)
		case !c.Expires.IsZero():
			jc.expires = c.Expires
		}
		j.put(jc, now)
	}
}

func (j *Jar) put(c jarCookie, now time.Time) {
	expired := !c.expires.IsZero() && !c.expires.After(now)
	for i := range j.cookies {
		o := &j.cookies[i]
		if o.name == c.name && o.domain == c.domain && o.path == c.path {
			if expired {
				j.cookies = append(j.cookies[:i], j.cookies[i+1:]...)
			} else {
				*o = c
			}
			return
		}
	}
	if !expired {
		j.cookies = append(j.cookies, c)
	}
}

// AppendHeader appends a Cookie header line with the cookies for a request to
// host and path, or nothing if none applies.
func (j *Jar) AppendHeader(dst []byte, host, path string, secure bool, now time.Time) []byte {
	host = hostOnly(host)
	first := true
	for i := 0; i < len(j.cookies); i++ {
		c := &j.cookies[i]
		if !c.expires.IsZero() && !c.expires.After(now) {
			j.cookies = append(j.cookies[:i], j.cookies[i+1:]...)
			i--
			continue
		}
		if c.secure && !secure {
			continue
		}
		if c.hostOnly && c.domain != host || !c.hostOnly && !domainMatch(host, c.domain) {
			continue
		}
		if !pathMatch(path, c.path) {
			continue
		}
		if first {
			dst = append(dst, "Cookie: "...)
			first = false
		} else {
			dst = append(dst, "; "...)
		}
		dst = append(dst, c.name...)
		dst = append(dst, '=')
		dst = append(dst, c.value...)
	}
	if !first {
		dst = append(dst, "\r\n"...)
	}
	return dst
}

// Value returns the value of a cookie kept for host, if any.
func (j *Jar) Value(host, name string) (string, bool) {
	host = hostOnly(host)
	for _, c := range j.cookies {
		if c.name == name && (c.domain == host || !c.hostOnly && domainMatch(host, c.domain)) {
			return c.value, true
		}
	}
	return "", false
}

func hostOnly(host string) string {
	if strings.HasPrefix(host, "[") {
		if i := strings.IndexByte(host, ']'); i > 0 {
			return strings.ToLower(host[1:i])
		}
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.Count(host, ":") == 1 {
		host = host[:i]
	}
	return strings.ToLower(host)
}

func domainMatch(host, domain string) bool {
	return host == domain || strings.HasSuffix(host, "."+domain)
}

func pathMatch(reqPath, cookiePath string) bool {
	if reqPath == "" {
		reqPath = "/"
	}
	if !strings.HasPrefix(reqPath, cookiePath) {
		return false
	}
	return len(reqPath) == len(cookiePath) || cookiePath[len(cookiePath)-1] == '/' || reqPath[len(cookiePath)] == '/'
}

// defaultPath is RFC 6265's default cookie path: the request path up to its last slash.
func defaultPath(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}
