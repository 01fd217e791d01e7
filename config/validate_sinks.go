package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// checkBroker reports a seed broker the client cannot dial: not host:port
// with a port from 1 to 65535 (a host alone gets 9092), or several in one item.
func checkBroker(b string) error {
	if strings.Contains(b, ",") {
		return fmt.Errorf("one broker per list item, got %q", b)
	}
	if b == "" || strings.Contains(b, "://") {
		return fmt.Errorf("want host:port, got %q", b)
	}
	host, port, err := net.SplitHostPort(b)
	if err != nil {
		if strings.Count(b, ":") == 0 {
			return nil // a host alone: the client uses port 9092
		}
		return fmt.Errorf("want host:port, got %q", b)
	}
	if n, err := strconv.Atoi(port); host == "" || err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("want host:port with a port from 1 to 65535, got %q", b)
	}
	return nil
}

// CheckKafkaTopic reports a name Kafka refuses as a topic: empty, "." or
// "..", over 249 characters, or with a character other than ASCII letters,
// digits, '.', '_' and '-'.
func CheckKafkaTopic(t string) error {
	if t == "" || t == "." || t == ".." || len(t) > 249 {
		return fmt.Errorf("%.40q is not a Kafka topic name (1 to 249 characters, not . or ..)", t)
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%.40q is not a Kafka topic name: %q is not a letter, digit, '.', '_' or '-'", t, c)
		}
	}
	return nil
}

// CheckNATSSubject reports a subject no message can be published to: empty,
// with white space or a wildcard, or with an empty token (a leading,
// trailing or doubled '.').
func CheckNATSSubject(s string) error {
	if s == "" || strings.ContainsAny(s, " \t\r\n*>") {
		return fmt.Errorf("a subject to publish to has no spaces or wildcards, got %q", s)
	}
	if strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return fmt.Errorf("a subject has no empty token (a leading, trailing or doubled '.'), got %q", s)
	}
	return nil
}

func (k *KafkaSpec) validate(v *validator, p string) {
	if len(k.Brokers) == 0 {
		v.errf(p+".brokers", "required: list at least one broker as host:port")
	}
	for i := range k.Brokers {
		bp := fmt.Sprintf("%s.brokers[%d]", p, i)
		v.reportEnv(bp)
		if err := checkBroker(k.Brokers[i]); err != nil {
			v.errf(bp, "%v", err)
		}
	}
	if k.Topic == "" {
		v.errf(p+".topic", "required: a topic or a template")
	} else if !strings.Contains(k.Topic, "{{") {
		if err := CheckKafkaTopic(k.Topic); err != nil {
			v.errf(p+".topic", "%v", err)
		}
	}
	checkFormat(v, p+".format", k.Format, FormatJSON, FormatCloudEvents)
	if k.Acks != "all" && k.Acks != "leader" {
		v.errf(p+".acks", "unknown acks %q (want all or leader)", k.Acks)
	}
	validateTLS(v, p+".tls", k.TLS)
	if s := k.SASL; s != nil {
		if !slices.Contains(SASLMechanisms, s.Mechanism) {
			v.errf(p+".sasl.mechanism", "unknown SASL mechanism %q (want one of %s)", s.Mechanism, strings.Join(SASLMechanisms, ", "))
		}
		v.reportEnv(p + ".sasl.username")
		v.reportEnv(p + ".sasl.password")
		if s.Username == "" {
			v.errf(p+".sasl.username", "required")
		}
	}
	if k.Timeout.Std() < time.Second {
		v.errf(p+".timeout", "must be at least 1s (the client's shortest record timeout)")
	}
	k.Retry.validate(v, p+".retry")
}

func (n *NATSSpec) validate(v *validator, p string) {
	v.reportEnv(p + ".url")
	if n.URL == "" {
		v.errf(p+".url", "required: a nats:// URL, or several comma-separated")
	}
	for _, one := range strings.Split(n.URL, ",") {
		if n.URL == "" {
			break
		}
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Host == "" || !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme) {
			v.errf(p+".url", "want a nats://, tls://, ws:// or wss:// URL, got %q", RedactURL(strings.TrimSpace(one)))
		}
	}
	if n.Subject == "" {
		v.errf(p+".subject", "required: a subject or a template")
	} else if !strings.Contains(n.Subject, "{{") {
		if err := CheckNATSSubject(n.Subject); err != nil {
			v.errf(p+".subject", "%v", err)
		}
	}
	checkFormat(v, p+".format", n.Format, FormatJSON, FormatCloudEvents)
	v.reportEnv(p + ".token")
	if n.CredsFile != "" {
		if _, err := os.Stat(n.CredsFile); err != nil {
			v.errf(p+".credsFile", "%v", err)
		}
		if n.Token != "" {
			v.errf(p+".token", "set token or credsFile, not both")
		}
	}
	validateTLS(v, p+".tls", n.TLS)
	validatePositive(v, p+".timeout", n.Timeout)
	n.Retry.validate(v, p+".retry")
}
