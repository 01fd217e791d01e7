package testenv

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// extraArgs appends to args the kube-apiserver flags of Options.FeatureGates
// and Options.AuditLog.
func (e *Env) extraArgs(opts Options, args []string) ([]string, error) {
	if len(opts.FeatureGates) > 0 {
		gates := make([]string, len(opts.FeatureGates))
		for i, g := range opts.FeatureGates {
			gates[i] = g + "=true"
		}
		args = append(args, "--feature-gates="+strings.Join(gates, ","))
	}
	if opts.AuditLog {
		policy := filepath.Join(e.Dir, "audit-policy.yaml")
		const p = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n"
		if err := os.WriteFile(policy, []byte(p), 0o600); err != nil {
			return nil, err
		}
		e.AuditLog = filepath.Join(e.Dir, "audit.log")
		args = append(args, "--audit-policy-file="+policy, "--audit-log-path="+e.AuditLog)
	}
	return args, nil
}

// AuditEvent is what a test reads of one audit log line.
type AuditEvent struct {
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	Stage      string `json:"stage"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
}

// AuditEvents reads the audit log (Options.AuditLog) as it is now.
func (e *Env) AuditEvents() ([]AuditEvent, error) {
	f, err := os.Open(e.AuditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev AuditEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			out = append(out, ev)
		}
	}
	return out, sc.Err()
}
