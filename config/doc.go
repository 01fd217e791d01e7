// Package config is the config file's schema and its strict decoding. Parse
// reads a file in five steps, each in a file of its own: decode (decode.go:
// unknown keys, duplicates and wrong types are problems), expand ${VAR}
// (expand.go), apply the defaults (defaults.go: every Default… value, where the
// file leaves a key out), check (validate.go, validate_sinks.go: checks that
// only check), and give rules what the file's defaults: section says. The
// schema is schema.go and sinks.go; each field's comment names its default.
// The action kinds are one table (kinds.go). Problems name file, line and
// field path; lines are mapped in one place (File.Problem), also for the
// steps above that compile the file.
//
// It knows nothing of compiled rules, payloads or senders: it imports no
// dynwatch package but fieldpath.
package config
