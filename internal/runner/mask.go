package runner

import "github.com/loadlab/loadlab/internal/secret"

// maskAborts masks the plan's secrets, and credentials in URL query
// strings, in the reasons journeys were aborted: a reason quotes an error,
// and an error can quote a value (a template that could not be evaluated
// on a secret data column, a Location header with a token). Reasons that
// become the same once masked are counted together.
func maskAborts(aborts map[string]int64, secrets []string) map[string]int64 {
	if len(aborts) == 0 {
		return aborts
	}
	out := make(map[string]int64, len(aborts))
	for reason, n := range aborts {
		out[secret.URL(secret.Replace(reason, secrets))] += n
	}
	return out
}
