package config

import (
	"net/url"
	"strings"
)

// RedactURL shows a URL as messages and logs may: scheme and host only, since
// its user, path or query often hold a token (Slack, Teams, a NATS password);
// "/…" marks that something was left out. A URL that does not parse, or has
// no host, is shown up to its first "/" or "?", and without what comes before
// its last "@".
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		if u.User == nil && (u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery {
			return u.Scheme + "://" + u.Host
		}
		return u.Scheme + "://" + u.Host + "/…"
	}
	if i := strings.LastIndex(raw, "@"); i >= 0 {
		raw = "…" + raw[i:] // what comes before an @ may be a user and password
	}
	if i := strings.IndexAny(raw, "/?"); i >= 0 {
		return raw[:i] + "…"
	}
	return raw
}
