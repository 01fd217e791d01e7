package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// The insecure shapes: what a valid file has an action send where anyone on
// the network path can read it (a credential in clear), or to a receiver it
// does not verify (tls.insecureSkipVerify). Each is a warning (Warnings), or a
// problem when the file says security.allowInsecure: false or is loaded with
// Options.Strict. SCRAM never sends the password and a NATS credsFile signs
// the server's nonce with its NKey, so neither is a shape. A loopback host is
// judged as any other: the name may not resolve there where dynwatch runs,
// and whatever shares the host's or the pod's network reads its traffic.

// exposure is one insecure shape: the field that makes it, and what it
// exposes to whom.
type exposure struct {
	path, msg string
}

const skipVerifyMsg = "true turns certificate checks off: anyone on the path can pose as the receiver and read what is sent, credentials included; trust its CA with caFile instead"

// insecure returns every insecure shape of the file's actions, in file order.
func (f *File) insecure() []exposure {
	var out []exposure
	for i := range f.Config.Actions {
		for _, k := range f.Config.Actions[i].kinds() {
			if k.set {
				out = append(out, k.spec.insecure(f, fmt.Sprintf("actions[%d].%s", i, k.name))...)
			}
		}
	}
	return out
}

// insecureRefusal says why the insecure shapes are problems, and is "" when
// they are warnings: the file's own word first, then Options.Strict.
func (f *File) insecureRefusal() string {
	if s := f.Config.Security; s != nil && s.AllowInsecure != nil && !*s.AllowInsecure {
		return "security.allowInsecure is false"
	}
	if f.opts.Strict {
		return "--strict"
	}
	return ""
}

// refuseInsecure reports each insecure shape as a problem when the file or
// its load options refuse them.
func (v *validator) refuseInsecure() {
	why := v.file.insecureRefusal()
	if why == "" {
		return
	}
	for _, e := range v.file.insecure() {
		v.problems = append(v.problems, v.file.Problem(e.path, "%s (refused: %s)", e.msg, why))
	}
}

// insecureWarnings returns the insecure shapes as warnings, or none when
// they are problems.
func (f *File) insecureWarnings() []Problem {
	if f.insecureRefusal() != "" {
		return nil
	}
	var out []Problem
	for _, e := range f.insecure() {
		out = append(out, f.Problem(e.path, "warning: %s (--strict or security.allowInsecure: false makes this an error)", e.msg))
	}
	return out
}

func (l *LogSpec) insecure(*File, string) []exposure { return nil }

// insecure: the command's env reaches a local process, not the network.
func (e *ExecSpec) insecure(*File, string) []exposure { return nil }

func (w *WebhookSpec) insecure(f *File, p string) []exposure {
	var out []exposure
	u, err := url.Parse(w.URL)
	if err == nil && u.Scheme == "http" && u.Host != "" && !f.EnvUnset(p+".url") {
		to := "http://" + u.Host
		if u.User != nil {
			out = append(out, exposure{p + ".url", "the credentials in the URL cross the network in clear to " + to + ": use an https:// URL"})
		}
		for _, name := range slices.Sorted(maps.Keys(u.Query())) {
			if CredentialName(name) {
				out = append(out, exposure{p + ".url", fmt.Sprintf("the query parameter %q crosses the network in clear to %s: use an https:// URL", name, to)})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(w.Headers)) {
			if !reservedHeader(k) && CredentialName(k) {
				out = append(out, exposure{p + ".headers." + k, fmt.Sprintf("the %s header crosses the network in clear to %s: use an https:// URL", k, to)})
			}
		}
	}
	return append(out, skipVerify(p, w.TLS)...)
}

func (k *KafkaSpec) insecure(_ *File, p string) []exposure {
	var out []exposure
	if k.SASL != nil && k.SASL.Mechanism == "PLAIN" && k.TLS == nil {
		out = append(out, exposure{p + ".sasl.mechanism", "SASL PLAIN without tls sends the password to the brokers in clear: set tls, or use SCRAM-SHA-256 or SCRAM-SHA-512, which never send it"})
	}
	return append(out, skipVerify(p, k.TLS)...)
}

// insecure judges each URL of the list on its own: the client happens to
// turn TLS on for all when one is tls://, but a list that mixes both says
// plaintext for some.
func (n *NATSSpec) insecure(f *File, p string) []exposure {
	if n.TLS != nil || f.EnvUnset(p+".url") {
		return skipVerify(p, n.TLS)
	}
	const fix = " (no tls): set tls, or use tls:// or wss:// URLs"
	var plain, withUser string
	for _, one := range strings.Split(n.URL, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "ws") {
			continue
		}
		to := u.Scheme + "://" + u.Host
		if plain == "" {
			plain = to
		}
		if u.User != nil && withUser == "" {
			withUser = to
		}
	}
	var out []exposure
	if withUser != "" {
		out = append(out, exposure{p + ".url", "the credentials in the URL cross the network in clear to " + withUser + fix})
	}
	if plain != "" && (n.Token != "" || f.EnvUnset(p+".token")) {
		out = append(out, exposure{p + ".token", "the token crosses the network in clear to " + plain + fix})
	}
	return out
}

// skipVerify is the shape of a tls block at p+".tls" that turns certificate
// checks off.
func skipVerify(p string, t *TLSSpec) []exposure {
	if t != nil && t.InsecureSkipVerify {
		return []exposure{{p + ".tls.insecureSkipVerify", skipVerifyMsg}}
	}
	return nil
}

// CredentialName reports whether a header or query parameter of this name
// carries a credential: Authorization, Proxy-Authorization, Cookie, an API
// key, a token, a secret or a password, as such names are written. The
// insecure checks and what `dynwatch test --render` masks share it.
func CredentialName(name string) bool {
	n := strings.ToLower(name)
	if n == "key" {
		return true
	}
	for _, w := range []string{"auth", "token", "secret", "password", "passwd", "apikey", "api-key", "api_key", "cookie", "session"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
