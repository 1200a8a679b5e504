package secret

import "testing"

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
