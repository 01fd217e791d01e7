package config

// kindSpec is what an action kind's spec type answers for. It is the whole
// of what config asks of a kind: a new kind is its spec type with these
// methods, a field in ActionSpec and a row in ActionSpec.kinds().
type kindSpec interface {
	// expandEnv replaces ${VAR} in the fields that take it (expand.go).
	expandEnv(v *validator, p string)
	// applyDefaults fills in what the file leaves out (defaults.go).
	applyDefaults()
	// validate checks the spec, after its defaults, and changes nothing.
	validate(v *validator, p string)
	// retryPolicy is the kind's retry key, or nil for a kind without one
	// (the action then retries with the defaults).
	retryPolicy() *RetrySpec
	// insecure returns what the spec sends in clear or to a receiver it does
	// not verify (insecure.go).
	insecure(f *File, p string) []exposure
}

// kind is one action kind's key, whether it is set, and its spec: the one
// list of kinds the schema has.
type kind struct {
	name string
	set  bool
	spec kindSpec
}

// kinds is the table of action kinds, in the order ActionSpec declares them:
// decoding, "exactly one kind", the expansion, defaults and checks of each
// kind and its retry policy all follow from its row.
func (a *ActionSpec) kinds() []kind {
	return []kind{
		{"log", a.Log != nil, a.Log},
		{"webhook", a.Webhook != nil, a.Webhook},
		{"exec", a.Exec != nil, a.Exec},
		{"kafka", a.Kafka != nil, a.Kafka},
		{"nats", a.NATS != nil, a.NATS},
	}
}

// Kinds returns the names of the action kinds set on a (exactly one is valid),
// in the order ActionSpec declares them.
func (a *ActionSpec) Kinds() []string {
	var out []string
	for _, k := range a.kinds() {
		if k.set {
			out = append(out, k.name)
		}
	}
	return out
}

// Kind returns the name of the action's kind ("" unless exactly one is set).
func (a *ActionSpec) Kind() string {
	if ks := a.Kinds(); len(ks) == 1 {
		return ks[0]
	}
	return ""
}

// RetryPolicy returns the action's retry policy, as its kind answers it, with
// its defaults applied; the log action, which has no retry key, gets the
// defaults.
func (a *ActionSpec) RetryPolicy() RetrySpec {
	var r RetrySpec
	for _, k := range a.kinds() {
		if k.set && k.spec.retryPolicy() != nil {
			r = *k.spec.retryPolicy()
			break
		}
	}
	r.applyDefaults()
	return r
}

func (l *LogSpec) retryPolicy() *RetrySpec     { return nil }
func (w *WebhookSpec) retryPolicy() *RetrySpec { return w.Retry }
func (e *ExecSpec) retryPolicy() *RetrySpec    { return e.Retry }
func (k *KafkaSpec) retryPolicy() *RetrySpec   { return k.Retry }
func (n *NATSSpec) retryPolicy() *RetrySpec    { return n.Retry }
