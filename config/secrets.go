package config

import (
	"cmp"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// MinSecretLen is the shortest ${VAR} value Secrets masks. A shorter one (a
// port, "on", "1") is no secret worth the name, and masking it would blank
// those bytes wherever they happen to occur in a line of output.
const MinSecretLen = 4

// SecretMask is what a masked value reads: the text a redacted payload value
// reads.
const SecretMask = "<redacted>"

// Secrets are the values the expansion step put into a config from the
// environment: every ${VAR} of the file, at least MinSecretLen bytes long.
// Text that comes from outside dynwatch's own code (a command's output, a
// receiver's answer) passes through Mask before it reaches a log line or an
// error: it may echo a credential the config gave. The zero value and nil
// mask nothing.
type Secrets struct {
	values   []string
	replacer *strings.Replacer
}

// newSecrets masks values (and their JSON and URL-escaped forms, as a
// receiver or a command may echo them), the longest first, so that a value
// holding another is masked whole.
func newSecrets(values []string) *Secrets {
	s := &Secrets{}
	seen := map[string]bool{}
	for _, v := range values {
		if len(v) < MinSecretLen {
			continue
		}
		j, _ := json.Marshal(v)
		for _, form := range []string{v, string(j[1 : len(j)-1]), url.QueryEscape(v), url.PathEscape(v)} {
			if !seen[form] {
				seen[form] = true
				s.values = append(s.values, form)
			}
		}
	}
	if len(s.values) == 0 {
		return s
	}
	slices.SortStableFunc(s.values, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	pairs := make([]string, 0, 2*len(s.values))
	for _, v := range s.values {
		pairs = append(pairs, v, SecretMask)
	}
	s.replacer = strings.NewReplacer(pairs...)
	return s
}

// Mask returns text with every secret value replaced by SecretMask.
func (s *Secrets) Mask(text string) string {
	if s == nil || s.replacer == nil {
		return text
	}
	return s.replacer.Replace(text)
}

// MaskTail is Mask for the tail of a longer text, cut at its start: a
// proper suffix of a secret value that the text begins with (what the cut
// left of a value it went through) is dropped too, or masking would miss it.
func (s *Secrets) MaskTail(tail string) string {
	if s == nil || s.replacer == nil {
		return tail
	}
	cut := 0
	for _, v := range s.values {
		for k := min(len(v)-1, len(tail)); k > cut; k-- {
			if strings.HasPrefix(tail, v[len(v)-k:]) {
				cut = k
				break
			}
		}
	}
	return s.replacer.Replace(tail[cut:])
}

// MaskHead is Mask for the head of a longer text, cut at its end: a proper
// prefix of a secret value that the text ends with is dropped too.
func (s *Secrets) MaskHead(head string) string {
	if s == nil || s.replacer == nil {
		return head
	}
	cut := 0
	for _, v := range s.values {
		for k := min(len(v)-1, len(head)); k > cut; k-- {
			if strings.HasSuffix(head, v[:k]) {
				cut = k
				break
			}
		}
	}
	return s.replacer.Replace(head[:len(head)-cut])
}

// Longest is the length of the longest value (or form of one) s masks: a
// tail kept that much longer than it shows can be masked whole.
func (s *Secrets) Longest() int {
	if s == nil || len(s.values) == 0 {
		return 0
	}
	return len(s.values[0])
}

// Len is how many values (forms included) s masks.
func (s *Secrets) Len() int {
	if s == nil {
		return 0
	}
	return len(s.values)
}

// Secrets returns the values the expansion step put into f from the
// environment, to mask in what dynwatch did not write itself.
func (f *File) Secrets() *Secrets { return f.secrets }
