package config

import (
	"strings"
	"testing"
)

// A URL that does not parse, or parses without a host, is still shown without
// its credentials: a config error quotes it as RedactURL shows it.
func TestRedactURLHidesCredentialsOfHostlessURLs(t *testing.T) {
	for _, in := range []string{
		"user:s3cret@nats:4222",       // no scheme: parses as scheme "user", opaque
		"nats:user:s3cret@nats:4222",  // "//" forgotten
		`http:\\user:s3cret@hook`,     // backslashes
		"user:pa s3cret@nats",         // space
		"https://user:pa s3cret@hook", // does not parse
	} {
		if got := RedactURL(in); strings.Contains(got, "s3cret") {
			t.Errorf("RedactURL(%q) = %q: shows the password", in, got)
		}
	}
}
