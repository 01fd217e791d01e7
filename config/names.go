package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// globChars are the characters a selector's pattern may add to a name
// (path.Match: "*", "?", classes such as "[a-c]" and "[^x]").
const globChars = "*?[]^"

// selectorName is one field of a selector: what it may hold when it is a
// plain name, and the characters its patterns are made of.
type selectorName struct {
	field, what string
	charset     func(r rune) bool
	plain       func(string) []string
}

func lowerName(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' }

var selectorNames = []selectorName{
	{"group", "an API group (a DNS subdomain such as apps or example.com)", func(r rune) bool { return lowerName(r) || r == '.' }, validation.IsDNS1123Subdomain},
	{"version", "a version such as v1 or v1beta1", lowerName, validation.IsDNS1123Label},
	{"resource", "a plural resource name such as deployments", lowerName, validation.IsDNS1123Label},
	{"kind", "a kind such as Deployment", func(r rune) bool { return lowerName(r) && r != '-' || r >= 'A' && r <= 'Z' }, isKind},
}

func isKind(s string) []string {
	if c := s[0]; (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') {
		return []string{"must start with a letter"}
	}
	return nil
}

// validate checks that every name of the selector is one a cluster can
// serve, or a pattern of such names: these names reach discovery, the
// informers' URLs and the RBAC that `dynwatch rbac` prints.
func (s *Selector) validate(v *validator, p string) {
	values := []string{s.Group.Val, s.Version, s.Resource, s.Kind}
	for i, n := range selectorNames {
		val := values[i]
		if val == "" {
			continue
		}
		if err := n.check(val); err != "" {
			v.errf(p+"."+n.field, "invalid %s %q: want %s%s", n.field, val, n.what, err)
		}
	}
}

// check returns "" when val is a valid name or pattern, else what is wrong.
func (n selectorName) check(val string) string {
	for _, r := range val {
		if !n.charset(r) && !strings.ContainsRune(globChars, r) {
			return fmt.Sprintf(", or a pattern of one (%q is not allowed)", r)
		}
	}
	if strings.ContainsAny(val, globChars) {
		return ""
	}
	if errs := n.plain(val); len(errs) > 0 {
		return ": " + errs[0]
	}
	return ""
}
