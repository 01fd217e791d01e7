// Package config is the config file's schema and its strict decoding: every
// type with its defaults and its own validation next to its definition, and
// Problems that name file, line and field path. Lines are mapped in one place
// (File.Problem), also for the steps above that compile the file.
//
// It knows nothing of compiled rules, payloads or senders: it imports no
// dynwatch package but fieldpath.
package config
